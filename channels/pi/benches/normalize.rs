//! Normalizer throughput on pi's token-level stream, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real pi 0.73.1 turns `shared/captures/pi-text.stdout`,
//! `pi-reasoning.stdout` and `pi-tool.stdout` (one `message_update` line per token, each
//! repeating the whole partial message), repeated until it has at least 100 000 lines.

use std::hint::black_box;
use std::path::PathBuf;

use bridge_channel_pi::PiNormalizer;
use bridge_core::turn::Normalizer;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn transcript() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    let mut turn = Vec::new();
    for name in ["pi-text.stdout", "pi-reasoning.stdout", "pi-tool.stdout"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("capture present");
        turn.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        );
    }
    let mut lines = Vec::new();
    while lines.len() < 100_000 {
        lines.extend(turn.iter().cloned());
    }
    lines
}

fn bench(c: &mut Criterion) {
    let lines = transcript();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut group = c.benchmark_group("pi_transcript");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
            }
        })
    });
    group.bench_function("pi_normalizer", |b| {
        let mut out = Vec::with_capacity(16);
        b.iter(|| {
            let mut normalizer = PiNormalizer::new("pi");
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
