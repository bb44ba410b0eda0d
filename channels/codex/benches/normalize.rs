//! Normalizer throughput on a large Codex transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real tool turn (`shared/captures/codex-tool-bypass.stdout`)
//! plus the plan and web-search turns, repeated until it has at least 100 000 lines. Each
//! repetition's `turn.completed` would end the turn, so every turn gets a fresh normalizer, as
//! every `codex exec` process does.

use std::hint::black_box;
use std::path::PathBuf;

use bridge_channel_codex::CodexNormalizer;
use bridge_core::turn::Normalizer;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn turns() -> Vec<Vec<String>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    let mut turns: Vec<Vec<String>> = Vec::new();
    for name in [
        "codex-tool-bypass",
        "codex-plan",
        "codex-websearch",
        "codex-reasoning",
    ] {
        let text =
            std::fs::read_to_string(dir.join(format!("{name}.stdout"))).expect("capture present");
        turns.push(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
    let mut out = Vec::new();
    let mut lines = 0;
    while lines < 100_000 {
        for turn in &turns {
            lines += turn.len();
            out.push(turn.clone());
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let turns = turns();
    let lines: u64 = turns.iter().map(|t| t.len() as u64).sum();
    let mut group = c.benchmark_group("codex_transcript");
    group.throughput(Throughput::Elements(lines));
    group.sample_size(10);
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| {
            for turn in &turns {
                for line in turn {
                    black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
                }
            }
        })
    });
    group.bench_function("codex_normalizer", |b| {
        let mut out = Vec::with_capacity(16);
        b.iter(|| {
            for turn in &turns {
                let mut normalizer = CodexNormalizer::new();
                for line in turn {
                    normalizer.line(line, &mut out);
                    black_box(&out);
                    out.clear();
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
