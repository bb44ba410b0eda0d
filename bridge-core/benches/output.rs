//! The cost of redaction on the output path: a streamed answer (token-sized text deltas, as
//! Claude and the ACP agents send them) encoded as markers and written through the redacting
//! `LineWriter`, with and without the `SplitSecretGuard` in front (as `run_send` does), and with
//! no secrets at all. Report the ratios, not absolute times.

use std::hint::black_box;

use bridge_core::encode::{Format, MarkerDialect};
use bridge_core::event::Event;
use bridge_core::output::LineWriter;
use bridge_core::redact::{Redactor, SplitSecretGuard};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// 100 000 deltas of English-like text (many pieces end in `s`, the first byte of the keys).
fn deltas() -> Vec<Event> {
    let words = [
        "The", " tests", " pass", " and", " the", " build", " is", " green", ".", " Next",
        " steps", ":", " merge", " this", " and", " ship", " it", "s", "k", "-",
    ];
    (0..100_000)
        .map(|i| Event::TextDelta {
            text: words[i % words.len()].to_string(),
        })
        .collect()
}

fn redactor(with_secrets: bool) -> Redactor {
    let mut r = Redactor::new();
    if with_secrets {
        r.add("sk-ant-api03-canary-0123456789abcdef");
        r.add("sk-proj-another-canary-key-value");
        r.add("ghp_tokencanary0123456789");
    }
    r
}

fn write_all(events: &[Event], redactor: Redactor, guard: bool) -> usize {
    let mut encoder = Format::Markers.encoder(MarkerDialect::SESSION, false);
    let mut writer = LineWriter::new(Vec::with_capacity(2 << 20), redactor);
    let mut guard = guard.then(SplitSecretGuard::default);
    let (mut guarded, mut lines) = (Vec::new(), Vec::new());
    for event in events {
        guarded.clear();
        match &mut guard {
            Some(guard) => guard.pass(event.clone(), writer.redactor(), &mut guarded),
            None => guarded.push(event.clone()),
        }
        for event in &guarded {
            lines.clear();
            encoder.encode(event, &mut lines);
            for line in &lines {
                writer.write_line(line).unwrap();
            }
        }
    }
    writer.into_inner().len()
}

fn bench(c: &mut Criterion) {
    let events = deltas();
    let mut group = c.benchmark_group("output_path");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(20);
    group.bench_function("no_secrets", |b| {
        b.iter(|| write_all(black_box(&events), redactor(false), true))
    });
    group.bench_function("per_line_redaction", |b| {
        b.iter(|| write_all(black_box(&events), redactor(true), false))
    });
    group.bench_function("per_line_and_split_guard", |b| {
        b.iter(|| write_all(black_box(&events), redactor(true), true))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
