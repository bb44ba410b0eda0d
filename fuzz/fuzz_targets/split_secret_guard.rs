//! The guard that redacts secrets across streamed deltas. Arbitrary text, split into arbitrary
//! deltas of text and thinking with other events in between, and one or two secrets (often
//! planted in the text, across the splits) must give:
//!
//! * between two other events, no secret in the answer's text nor in the thinking's, even when
//!   the two kinds interleave;
//! * with one secret, each kind's text there equals its input text redacted as a whole; with
//!   two (which may overlap in the text and be cut either way), text holding no secret passes
//!   unchanged (nothing lost, nothing held back after the end);
//! * the other events unchanged and in their place.
#![no_main]

use arbitrary::{Result, Unstructured};
use bridge_core::event::Event;
use bridge_core::redact::{Redactor, SplitSecretGuard};
use libfuzzer_sys::fuzz_target;

/// A secret of 8 to 24 characters from a small alphabet (so text often shares its prefixes).
fn secret(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(8..=24)?;
    (0..len)
        .map(|_| Ok(*u.choose(&['s', 'k', '-', 'a', 'b', '1', 'é'])?))
        .collect()
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mut redactor = Redactor::new();
    let mut secrets = vec![secret(u)?];
    if u.arbitrary()? {
        secrets.push(secret(u)?);
    }
    // One secret must not contain another: then "the whole stream redacted" depends on the
    // order of replacement, which the guard does not promise.
    if secrets.len() == 2 && (secrets[0].contains(&secrets[1]) || secrets[1].contains(&secrets[0]))
    {
        secrets.pop();
    }
    for s in &secrets {
        redactor.add(s);
    }
    // Text made of pieces of the secrets and arbitrary characters.
    let mut text = String::new();
    for _ in 0..u.int_in_range(0..=12)? {
        match u.int_in_range(0..=2)? {
            0 => text.push_str(u.choose(&secrets)?),
            1 => {
                let s = u.choose(&secrets)?;
                let cut = s.char_indices().map(|(i, _)| i).nth(u.int_in_range(1..=4)?);
                text.push_str(&s[..cut.unwrap_or(s.len())]);
            }
            _ => text.push_str(&u.arbitrary::<String>()?),
        }
    }
    // Split it into deltas of either kind, with other events between some of them.
    let mut events = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let chars = rest.chars().count();
        let take = u.int_in_range(1..=chars.min(9))?;
        let at = rest.char_indices().nth(take).map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(at);
        rest = tail;
        let thinking = u.ratio(1, 4)?;
        events.push(if thinking {
            Event::ThinkingDelta { text: piece.into() }
        } else {
            Event::TextDelta { text: piece.into() }
        });
        if u.ratio(1, 6)? {
            events.push(Event::BlockReset);
        }
    }

    let mut guard = SplitSecretGuard::default();
    let mut out = Vec::new();
    for event in events.iter().cloned() {
        guard.pass(event, &redactor, &mut out);
    }
    guard.release(&mut out);

    // Other events keep their order; each kind's text between two of them is that kind's
    // input text between them, redacted as a whole.
    let segments = |events: &[Event]| {
        let mut segments: Vec<(String, String, usize)> = vec![(String::new(), String::new(), 0)];
        for event in events {
            let last = segments.last_mut().unwrap();
            match event {
                Event::TextDelta { text } => last.0.push_str(text),
                Event::ThinkingDelta { text } => last.1.push_str(text),
                _ => {
                    last.2 += 1;
                    segments.push((String::new(), String::new(), 0));
                }
            }
        }
        segments
    };
    let expected: Vec<(String, String, usize)> = segments(&events)
        .into_iter()
        .map(|(text, thinking, others)| {
            (
                redactor.redact(&text).into_owned(),
                redactor.redact(&thinking).into_owned(),
                others,
            )
        })
        .collect();
    let got = segments(&out);
    let input = segments(&events);
    assert_eq!(got.len(), expected.len(), "{events:?} -> {out:?}");
    for ((got, expected), input) in got.iter().zip(&expected).zip(&input) {
        assert_eq!(got.2, expected.2, "{events:?} -> {out:?}");
        for s in &secrets {
            assert!(
                !got.0.contains(s.as_str()) && !got.1.contains(s.as_str()),
                "{s:?} in {got:?}"
            );
        }
        // With one secret, redacting piece by piece is redacting the whole. Two secrets that
        // overlap in the text can be cut either way (both ways leave neither), so then only:
        // text without a secret passes unchanged.
        if secrets.len() == 1 || (input.0 == expected.0 && input.1 == expected.1) {
            assert_eq!(
                (&got.0, &got.1),
                (&expected.0, &expected.1),
                "{events:?} -> {out:?}"
            );
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
