//! Building blocks of the channels' normalizer benches: a large transcript made of recorded
//! captures, and the bare `serde_json` parse of its lines as the baseline every normalizer is
//! measured against (report the ratio, not absolute times).
//!
//! ```no_run
//! use criterion::{Criterion, Throughput};
//!
//! fn bench(c: &mut Criterion) {
//!     let transcript = captures::bench::Transcript::one_turn(&["pi-text"], 100_000);
//!     let elements = Throughput::Elements(transcript.line_count() as u64);
//!     let mut group = captures::bench::group(c, "pi_transcript", elements);
//!     captures::bench::serde_json_parse(&mut group, &transcript);
//!     group.finish();
//! }
//! ```

use std::hint::black_box;

use bridge_core::turn::Normalizer;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};

/// Recorded CLI output lines (blank lines dropped), split into turns: what one CLI process
/// prints, and so what one normalizer sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// The turns, in order.
    pub turns: Vec<Vec<String>>,
}

impl Transcript {
    /// The captures' stdout lines one after the other, repeated until there are at least
    /// `min_lines`, as one long turn.
    ///
    /// # Panics
    /// When a capture is missing.
    pub fn one_turn(names: &[&str], min_lines: usize) -> Self {
        Self {
            turns: vec![Self::turn_per_capture(names, min_lines).turns.concat()],
        }
    }

    /// The captures' stdout lines, the list repeated until there are at least `min_lines`, each
    /// capture of each repetition a turn of its own (a fresh process, as when its output ends
    /// the turn).
    ///
    /// # Panics
    /// When a capture is missing.
    pub fn turn_per_capture(names: &[&str], min_lines: usize) -> Self {
        let captures: Vec<Vec<String>> = names
            .iter()
            .map(|name| {
                crate::stdout(name)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        let mut turns = Vec::new();
        let mut lines = 0;
        while lines < min_lines {
            for turn in &captures {
                lines += turn.len();
                turns.push(turn.clone());
            }
        }
        Self { turns }
    }

    /// Every line of every turn, in order.
    pub fn lines(&self) -> impl Iterator<Item = &str> + Clone {
        self.turns.iter().flatten().map(String::as_str)
    }

    /// How many lines the transcript has.
    pub fn line_count(&self) -> usize {
        self.turns.iter().map(Vec::len).sum()
    }

    /// How many bytes the transcript has, each line with its newline.
    pub fn byte_count(&self) -> usize {
        self.lines().map(|l| l.len() + 1).sum()
    }
}

/// A benchmark group over a whole transcript: `throughput` per iteration, and only 10 samples
/// (one iteration already handles 100 000 lines or so).
pub fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    throughput: Throughput,
) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.throughput(throughput);
    group.sample_size(10);
    group
}

/// `serde_json_value_parse`: every line parsed into a `serde_json::Value`, the floor any
/// normalizer pays.
pub fn serde_json_parse(group: &mut BenchmarkGroup<'_, WallTime>, transcript: &Transcript) {
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| {
            for turn in &transcript.turns {
                for line in turn {
                    black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
                }
            }
        })
    });
}

/// `id`: every turn of `transcript` through a fresh normalizer from `new`, line by line, as the
/// engine feeds it.
pub fn normalizer<N: Normalizer>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    transcript: &Transcript,
    new: impl Fn() -> N,
) {
    group.bench_function(id, |b| {
        let mut out = Vec::with_capacity(16);
        b.iter(|| {
            for turn in &transcript.turns {
                let mut normalizer = new();
                for line in turn {
                    normalizer.line(line, &mut out);
                    black_box(&out);
                    out.clear();
                }
            }
        })
    });
}
