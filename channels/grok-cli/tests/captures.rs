//! Replays the recorded real-CLI transcripts in `tests/corpus/grok-cli/<version>/*.stdout`
//! (`@vibe-kit/grok-cli` 0.0.34 against the project's mock, made by `scripts/record grok-cli`;
//! every run exited 0) through the normalizer and snapshots what users would see, in both wire
//! formats.

use bridge_channel_grok_cli::GrokCliNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, TurnEnd};
use bridge_core::normalize::replay;

fn run(name: &str) -> (Vec<Event>, TurnEnd) {
    let stdout = captures::stdout(name);
    let mut normalizer = GrokCliNormalizer::new();
    let events = replay(
        "grok-cli",
        &mut normalizer,
        &stdout,
        "",
        captures::exited(0),
    );
    captures::with_turn_end(name, events)
}

#[test]
fn every_grok_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("grok-cli", 8) {
        let (events, _) = run(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn api_errors_fail_although_the_cli_exited_zero() {
    for (capture, message) in [
        ("grok-cli-err401", "401 invalid x-api-key"),
        (
            "grok-cli-err429",
            "429 Number of requests has exceeded your rate limit",
        ),
        ("grok-cli-err500", "500 Internal server error"),
    ] {
        let (_, end) = run(capture);
        assert!(!end.success, "{capture}");
        assert!(
            end.error.as_deref().unwrap().contains(message),
            "{capture}: {:?}",
            end.error
        );
    }
}

#[test]
fn successful_captures_end_with_the_last_assistant_text() {
    for (capture, result) in [
        ("grok-cli-text", "Hello from the mock model."),
        ("grok-cli-thinking", "After thinking: hello!"),
        // The stream cut mid-answer: the CLI retried and the second answer is the result.
        ("grok-cli-midstream", "Hello from the mock model."),
        ("grok-cli-tool-allowed", "Tool finished. Output was: hello"),
    ] {
        let (events, end) = run(capture);
        assert!(end.success, "{capture}");
        assert_eq!(end.result.as_deref(), Some(result));
        assert_eq!(end.session_id, None);
        let thinking = events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }));
        assert!(!thinking, "the CLI drops reasoning");
    }
    let (events, _) = run("grok-cli-tool-allowed");
    let ids: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolUse(t) => Some(("use".into(), t.id.clone())),
            Event::ToolResult(t) => Some(("result".into(), t.tool_use_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0].1, ids[1].1);
}
