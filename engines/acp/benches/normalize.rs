//! ACP normalization throughput on a large transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real Gemini ACP approval turn
//! (`tests/corpus/gemini/<version>/acp-approval-allowed.stdout`) repeated until it has at least
//! 100 000 lines.

use std::hint::black_box;

use captures::bench::{Transcript, group, serde_json_parse};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let transcript = Transcript::one_turn(&["gemini-acp-approval-allowed"], 100_000);
    let lines = Throughput::Elements(transcript.line_count() as u64);
    let mut group = group(c, "acp_transcript", lines);
    serde_json_parse(&mut group, &transcript);
    group.bench_function("acp_replay", |b| {
        b.iter(|| black_box(bridge_acp::normalize::replay(transcript.lines())))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
