//! The Claude normalizer reading relay deltas ([`DeltaMode`]). A model text (a thinking block
//! and one or two text blocks, from a small alphabet so that repetitions are common) is sent
//! the way a relay might: as increments cut anywhere, as cumulative snapshots (some of them
//! corrective, later fixed), or as arbitrary strings; Claude Code's own concatenation follows
//! in the `assistant` lines and the `result`. Whatever the deltas and the mode:
//!
//! * the answer a client assembles (text deltas, a `block_reset` starting a new segment) equals
//!   the turn's final result;
//! * increments read in `incremental` mode, and snapshots read in `cumulative` mode, give
//!   exactly the model's text and thinking;
//! * increments are never changed in `incremental` mode (every delta passes through as is).
#![no_main]

use arbitrary::{Result, Unstructured};
use bridge_channel_claude::ClaudeNormalizer;
use bridge_channel_claude::deltas::DeltaMode;
use bridge_core::event::Event;
use bridge_core::turn::Normalizer;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// Text from a small alphabet: repeated characters and phrases are the interesting case.
fn text(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(1..=40)?;
    (0..len)
        .map(|_| Ok(*u.choose(&['a', 'h', ' ', 'b', '!', 'é'])?))
        .collect()
}

/// Byte offsets of `text`'s char boundaries after 0, increasing, ending at its length.
fn cuts(u: &mut Unstructured, text: &str) -> Result<Vec<usize>> {
    let mut cuts = Vec::new();
    for (i, _) in text.char_indices().skip(1) {
        if u.ratio(1, 3)? {
            cuts.push(i);
        }
    }
    cuts.push(text.len());
    Ok(cuts)
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Increments,
    Snapshots,
    Arbitrary,
}

/// The deltas of one block of `text` in `shape`.
fn deltas(u: &mut Unstructured, text: &str, shape: Shape) -> Result<Vec<String>> {
    let cuts = cuts(u, text)?;
    Ok(match shape {
        Shape::Increments => {
            let mut from = 0;
            cuts.iter()
                .map(|&to| {
                    let piece = text[from..to].to_string();
                    from = to;
                    piece
                })
                .collect()
        }
        Shape::Snapshots => {
            let mut out = Vec::new();
            for &to in &cuts {
                // Now and then a wrong snapshot that the next one corrects.
                if to < text.len() && u.ratio(1, 8)? {
                    out.push(format!("{}{}", &text[..to], u.choose(&["x", "zz", "é!"])?));
                }
                out.push(text[..to].to_string());
            }
            out
        }
        Shape::Arbitrary => {
            let n = u.int_in_range(1..=8)?;
            (0..n).map(|_| u.arbitrary()).collect::<Result<_>>()?
        }
    })
}

fn stream(event: serde_json::Value) -> String {
    json!({"type": "stream_event", "event": event, "session_id": "s",
           "parent_tool_use_id": null})
    .to_string()
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mode = *u.choose(&[
        DeltaMode::Incremental,
        DeltaMode::Cumulative,
        DeltaMode::Auto,
    ])?;
    let shape = *u.choose(&[Shape::Increments, Shape::Snapshots, Shape::Arbitrary])?;
    let thinking = text(u)?;
    let texts: Vec<String> = (0..u.int_in_range(1..=2)?)
        .map(|_| text(u))
        .collect::<Result<_>>()?;

    let mut lines = vec![stream(
        json!({"type": "message_start", "message": {"id": "m1", "usage": {}}}),
    )];
    let mut sent: Vec<String> = Vec::new();
    // Claude Code concatenates whatever deltas it got: its `assistant` lines and `result`.
    let mut concatenated = Vec::new();
    let blocks = std::iter::once(("thinking", &thinking)).chain(texts.iter().map(|t| ("text", t)));
    for (index, (kind, model_text)) in blocks.enumerate() {
        let ds = deltas(u, model_text, shape)?;
        let (ty, field) = if kind == "thinking" {
            ("thinking_delta", "thinking")
        } else {
            ("text_delta", "text")
        };
        for d in &ds {
            lines.push(stream(
                json!({"type": "content_block_delta", "index": index,
                                     "delta": {"type": ty, field: d}}),
            ));
            if kind == "text" && !d.is_empty() {
                sent.push(d.clone());
            }
        }
        concatenated.push((kind, ds.concat()));
    }
    for (kind, text) in &concatenated {
        let block = if *kind == "thinking" {
            json!({"type": "thinking", "thinking": text})
        } else {
            json!({"type": "text", "text": text})
        };
        lines.push(
            json!({"type": "assistant", "message": {"id": "m1", "content": [block]},
                   "session_id": "s", "parent_tool_use_id": null})
            .to_string(),
        );
    }
    let cli_result: String = concatenated
        .iter()
        .filter(|(kind, _)| *kind == "text")
        .map(|(_, t)| t.as_str())
        .collect();
    lines.push(
        json!({"type": "result", "subtype": "success", "is_error": false, "result": cli_result,
               "session_id": "s"})
        .to_string(),
    );

    let mut normalizer = ClaudeNormalizer::new().with_delta_mode(mode);
    let mut out = Vec::new();
    for line in &lines {
        normalizer.line(line, &mut out);
    }

    let (mut answer, mut reasoning, mut result) = (String::new(), String::new(), None);
    let mut text_deltas = Vec::new();
    for event in &out {
        match event {
            Event::BlockReset => {
                answer.clear();
                reasoning.clear();
            }
            Event::TextDelta { text } => {
                answer.push_str(text);
                text_deltas.push(text.clone());
            }
            Event::ThinkingDelta { text } => reasoning.push_str(text),
            Event::TurnEnd(end) => {
                assert!(end.success, "{out:?}");
                result = Some(end.result.clone().unwrap_or_default());
            }
            _ => {}
        }
    }
    let result = result.expect("a turn end");
    assert_eq!(answer, result, "mode {mode:?}: {lines:#?}\n-> {out:#?}");
    let model_text: String = texts.concat();
    let exact = matches!(
        (mode, shape),
        (DeltaMode::Incremental, Shape::Increments) | (DeltaMode::Cumulative, Shape::Snapshots)
    );
    if exact {
        assert_eq!(answer, model_text, "{lines:#?}\n-> {out:#?}");
        assert_eq!(reasoning, thinking, "{lines:#?}\n-> {out:#?}");
    }
    if mode == DeltaMode::Incremental {
        assert_eq!(text_deltas, sent, "increments pass through untouched");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
