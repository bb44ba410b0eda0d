//! Normalizer throughput on a large Codex transcript, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real tool turn (`tests/corpus/codex/<version>/tool-allowed.stdout`)
//! plus the patch, web-search and thinking turns, repeated until it has at least 100 000 lines. Each
//! repetition's `turn.completed` would end the turn, so every turn gets a fresh normalizer, as
//! every `codex exec` process does.

use bridge_channel_codex::CodexNormalizer;
use captures::bench::{Transcript, group, normalizer, serde_json_parse};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let transcript = Transcript::turn_per_capture(
        &[
            "codex-tool-allowed",
            "codex-patch-allowed",
            "codex-websearch",
            "codex-thinking",
        ],
        100_000,
    );
    let lines = Throughput::Elements(transcript.line_count() as u64);
    let mut group = group(c, "codex_transcript", lines);
    serde_json_parse(&mut group, &transcript);
    normalizer(
        &mut group,
        "codex_normalizer",
        &transcript,
        CodexNormalizer::new,
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
