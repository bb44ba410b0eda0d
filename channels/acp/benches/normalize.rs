//! ACP normalization throughput on a large transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real Gemini ACP approval turn
//! (`shared/captures/gemini-acp-allow.stdout`) repeated until it has at least 100 000 lines.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn transcript() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/gemini-acp-allow.stdout");
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
    let mut group = c.benchmark_group("acp_transcript");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.sample_size(10);
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
            }
        })
    });
    group.bench_function("acp_replay", |b| {
        b.iter(|| {
            black_box(bridge_acp::normalize::replay(
                lines.iter().map(String::as_str),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
