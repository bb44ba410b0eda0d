//! Normalizer throughput on a large Claude transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real tool turn (`tests/corpus/claude/<version>/tool-allowed.stdout`)
//! repeated until it has at least 100 000 lines.

use bridge_channel_claude::ClaudeNormalizer;
use captures::bench::{Transcript, group, normalizer, serde_json_parse};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let transcript = Transcript::one_turn(&["claude-tool-allowed"], 100_000);
    let lines = Throughput::Elements(transcript.line_count() as u64);
    let mut group = group(c, "claude_transcript", lines);
    serde_json_parse(&mut group, &transcript);
    normalizer(
        &mut group,
        "claude_normalizer",
        &transcript,
        ClaudeNormalizer::new,
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
