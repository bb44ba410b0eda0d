//! Replays the recorded real-CLI transcripts in `tests/corpus/qwen/<version>/*.stdout` (Qwen Code
//! 0.15.10 and 0.24.4 `--output-format stream-json` against the project's mock) through the `json`
//! transport's normalizer (the Claude normalizer with Qwen's dialect) and snapshots what users
//! would see, in both wire formats.

use bridge_channel_qwen::json::DIALECT;
use bridge_claude_stream::ClaudeNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, TurnEnd};
use captures::{WireSnapshots, streamed_text, streamed_thinking};

fn normalize(name: &str) -> Vec<Event> {
    let mut normalizer = ClaudeNormalizer::with_dialect(&DIALECT);
    captures::normalize_lines("qwen", &mut normalizer, &captures::stdout(name))
}

fn turn_end(events: &[Event]) -> Option<&TurnEnd> {
    events.iter().find_map(|e| match e {
        Event::TurnEnd(end) => Some(end),
        _ => None,
    })
}

#[test]
fn every_qwen_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("qwen", 13) {
        let events = normalize(&name);
        // `[MESSAGE]` payloads of `init` carry tool lists and paths: cut long ones (the typed
        // JSONL snapshot is complete).
        let snapshots = WireSnapshots::of(&events, MarkerDialect::SESSION).with_short_messages();
        captures::assert_wire_snapshots!(&name, snapshots);
    }
}

/// Qwen Code reports API errors as assistant text with `is_error:false` and exit 0: the turn
/// fails with the error, which is not shown as text.
#[test]
fn api_errors_reported_as_text_fail_the_turn() {
    for (capture, error, shown) in [
        ("qwen-err401", "API Error: 401 invalid x-api-key", ""),
        (
            "qwen-midstream",
            "API Error: Overloaded (mid-stream)",
            "Hello ",
        ),
    ] {
        let events = normalize(capture);
        let end = turn_end(&events).unwrap_or_else(|| panic!("{capture}: no turn end"));
        assert!(!end.success, "{capture}");
        assert_eq!(end.error.as_deref(), Some(error), "{capture}");
        assert_eq!(streamed_text(&events), shown, "{capture}");
        assert!(
            events.iter().any(|e| matches!(e, Event::Error(_))),
            "{capture}"
        );
    }
}

/// Still retrying when the recording stopped (429 and 500: the recorder's idle deadline stops
/// Qwen Code's retries): no `result`, so no turn end; the engine reports the early exit.
#[test]
fn a_stream_without_result_does_not_end_the_turn() {
    for capture in ["qwen-err429", "qwen-err500"] {
        let events = normalize(capture);
        assert!(turn_end(&events).is_none(), "{capture}");
    }
}

/// Partial messages: every block's `assistant` line has its own id; the text streamed once is
/// not repeated from the block snapshots.
#[test]
fn streamed_blocks_are_not_repeated() {
    let events = normalize("qwen-thinking");
    assert_eq!(streamed_text(&events), "After thinking: hello!");
    let thinking = streamed_thinking(&events);
    assert_eq!(
        thinking,
        "Let me think about this step by step. The user wants a greeting."
    );
    let end = turn_end(&events).unwrap();
    assert!(end.success);
    assert_eq!(end.result.as_deref(), Some("After thinking: hello!"));
}

/// Plan mode refuses the shell tool headless: an error tool result and a warning, in both
/// versions.
#[test]
fn a_refused_tool_is_visible() {
    for capture in ["qwen-tool-refused", "qwen@0.24.4-tool-refused"] {
        let events = normalize(capture);
        assert!(
            events.iter().any(|e| matches!(
                e,
                Event::ToolResult(r) if r.is_error && r.content.as_str().is_some_and(|c| c.contains("declined"))
            )),
            "{capture}"
        );
        assert!(
            events.iter().any(
                |e| matches!(e, Event::Warning { code, message } if code == "permission_denied" && message.contains("Bash"))
            ),
            "{capture}"
        );
        assert!(turn_end(&events).unwrap().success, "{capture}");
    }
}
