//! Replays the recorded real-CLI transcripts in `../shared/captures/qwen-*.stdout` (Qwen Code
//! 0.15.10 `--output-format stream-json` against the reference mock) through the `json`
//! transport's normalizer (the Claude normalizer with Qwen's dialect) and snapshots what users
//! would see, in both wire formats.

use bridge_channel_claude::ClaudeNormalizer;
use bridge_channel_qwen::json::DIALECT;
use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::{Event, TurnEnd};
use bridge_core::turn::Normalizer;

fn normalize(name: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(captures::dir().join(format!("{name}.stdout"))).unwrap();
    let mut normalizer = ClaudeNormalizer::with_dialect(&DIALECT);
    let mut events = vec![Event::TurnStart {
        provider: "qwen".into(),
    }];
    for line in text.lines() {
        normalizer.line(line, &mut events);
    }
    events
}

/// `[MESSAGE]` payloads of `init` carry tool lists and paths: cut long ones (the typed JSONL
/// snapshot is complete).
fn shorten(markers: &str) -> String {
    markers
        .lines()
        .map(|line| match line.char_indices().nth(160) {
            Some((cut, _)) if line.starts_with("[MESSAGE] ") => format!("{}…", &line[..cut]),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn turn_end(events: &[Event]) -> Option<&TurnEnd> {
    events.iter().find_map(|e| match e {
        Event::TurnEnd(end) => Some(end),
        _ => None,
    })
}

fn text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_qwen_capture_normalizes_to_a_stable_event_stream() {
    let names = captures::names("qwen-");
    assert!(
        names.len() >= 13,
        "expected the qwen captures, found {names:?}"
    );
    for name in names {
        let events = normalize(&name);
        let jsonl = encode_all(&events, &mut JsonlEncoder::new(false));
        let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::SESSION));
        insta::assert_snapshot!(format!("{name}.jsonl"), jsonl);
        insta::assert_snapshot!(format!("{name}.markers"), shorten(&markers));
    }
}

/// Qwen Code reports API errors as assistant text with `is_error:false` and exit 0: the turn
/// fails with the error, which is not shown as text.
#[test]
fn api_errors_reported_as_text_fail_the_turn() {
    for (capture, error, shown) in [
        ("qwen-err401", "API Error: 401 mock err401", ""),
        ("qwen-err500", "API Error: 500 mock err500", ""),
        (
            "qwen-midstream",
            "API Error: mock mid-stream overload",
            "Hello from",
        ),
    ] {
        let events = normalize(capture);
        let end = turn_end(&events).unwrap_or_else(|| panic!("{capture}: no turn end"));
        assert!(!end.success, "{capture}");
        assert_eq!(end.error.as_deref(), Some(error), "{capture}");
        assert_eq!(text(&events), shown, "{capture}");
        assert!(
            events.iter().any(|e| matches!(e, Event::Error(_))),
            "{capture}"
        );
    }
}

/// Still retrying when the recording stopped (429, 529): no `result`, so no turn end; the
/// engine reports the early exit.
#[test]
fn a_stream_without_result_does_not_end_the_turn() {
    for capture in ["qwen-err429", "qwen-err529"] {
        let events = normalize(capture);
        assert!(turn_end(&events).is_none(), "{capture}");
    }
}

/// Partial messages: every block's `assistant` line has its own id; the text streamed once is
/// not repeated from the block snapshots.
#[test]
fn streamed_blocks_are_not_repeated() {
    let events = normalize("qwen-thinking");
    assert_eq!(text(&events), "After thinking: hello!");
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking,
        "Let me think about this. The user wants a greeting."
    );
    let end = turn_end(&events).unwrap();
    assert!(end.success);
    assert_eq!(end.result.as_deref(), Some("After thinking: hello!"));
}

/// The default mode refuses the shell tool headless: an error tool result and a warning.
#[test]
fn a_refused_tool_is_visible() {
    let events = normalize("qwen-danger-default");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ToolResult(r) if r.is_error && r.content.as_str().is_some_and(|c| c.contains("declined"))
    )));
    assert!(events.iter().any(
        |e| matches!(e, Event::Warning { code, message } if code == "permission_denied" && message.contains("run_shell_command"))
    ));
    assert!(turn_end(&events).unwrap().success);
}
