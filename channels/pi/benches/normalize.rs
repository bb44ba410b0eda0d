//! Normalizer throughput on pi's token-level stream, against bare `serde_json` parsing of the
//! same lines (the floor any normalizer pays). Report the ratio, not absolute times.
//!
//! The transcript is the recorded real pi 0.73.1 turns `tests/corpus/pi/<version>/text.stdout`,
//! `thinking.stdout` and `tool-allowed.stdout` (one `message_update` line per token, each
//! repeating the whole partial message), repeated until it has at least 100 000 lines.

use bridge_channel_pi::PiNormalizer;
use captures::bench::{Transcript, group, normalizer, serde_json_parse};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let transcript = Transcript::one_turn(&["pi-text", "pi-thinking", "pi-tool-allowed"], 100_000);
    let bytes = Throughput::Bytes(transcript.byte_count() as u64);
    let mut group = group(c, "pi_transcript", bytes);
    serde_json_parse(&mut group, &transcript);
    normalizer(&mut group, "pi_normalizer", &transcript, || {
        PiNormalizer::new("pi")
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
