//! Normalizer throughput on a large Claude transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real tool turn (`shared/captures/claude-tool-partial.stdout`)
//! repeated until it has at least 100 000 lines.

use std::hint::black_box;
use std::path::PathBuf;

use bridge_channel_claude::ClaudeNormalizer;
use bridge_core::turn::Normalizer;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn transcript() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/claude-tool-partial.stdout");
    let text = std::fs::read_to_string(&path).expect("capture present");
    let turn: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines = Vec::new();
    while lines.len() < 100_000 {
        lines.extend(turn.iter().map(|l| l.to_string()));
    }
    lines
}

fn bench(c: &mut Criterion) {
    let lines = transcript();
    let mut group = c.benchmark_group("claude_transcript");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.sample_size(10);
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
            }
        })
    });
    group.bench_function("claude_normalizer", |b| {
        let mut out = Vec::with_capacity(16);
        b.iter(|| {
            let mut normalizer = ClaudeNormalizer::new();
            for line in &lines {
                normalizer.line(line, &mut out);
                black_box(&out);
                out.clear();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
