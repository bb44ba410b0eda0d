//! Replays the recorded real-CLI transcripts in `tests/corpus/copilot/<version>/*.stdout` (Copilot
//! CLI 1.0.92 and 1.0.102 `--output-format json`, BYOK against the project's mock) through the
//! `json` transport's normalizer and snapshots what users would see, in both wire formats. The
//! turn is finished with the exit code the CLI had, as the recorder filed it (1 for the API
//! errors).

use bridge_channel_copilot::normalize::CopilotNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, StatusKind, ToolKind, TurnEnd};
use bridge_core::normalize::replay;
use captures::{streamed_text, streamed_thinking};

fn normalize(name: &str) -> Vec<Event> {
    let stdout = captures::stdout(name);
    let exit = captures::recorded_exit(name).unwrap_or_else(|| panic!("{name}: no recorded exit"));
    replay("copilot", &mut CopilotNormalizer::new(), &stdout, "", exit)
}

fn end_of(events: &[Event]) -> &TurnEnd {
    match events.last() {
        Some(Event::TurnEnd(end)) => end,
        other => panic!("the last event is not a turn end: {other:?}"),
    }
}

#[test]
fn every_copilot_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("copilot", 12) {
        let events = normalize(&name);
        let turn_ends = events
            .iter()
            .filter(|e| matches!(e, Event::TurnEnd(_)))
            .count();
        assert_eq!(turn_ends, 1, "{name}");
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn the_session_id_from_the_last_line_ends_the_turn() {
    let events = normalize("copilot-text");
    let end = end_of(&events);
    assert!(end.success);
    // Copilot names the session only in its last line (`{"type":"result","sessionId":…}`).
    let last: serde_json::Value =
        serde_json::from_str(captures::stdout("copilot-text").lines().last().unwrap()).unwrap();
    assert_eq!(end.session_id.as_deref(), last["sessionId"].as_str());
    assert!(end.session_id.is_some());
    assert_eq!(end.result.as_deref(), Some("Hello from the mock model."));
    assert_eq!(streamed_text(&events), "Hello from the mock model.");
}

#[test]
fn api_errors_fail_with_the_cli_message_after_retry_statuses() {
    for (capture, needle, retries) in [
        ("copilot-err401", "HTTP 401", 2),
        ("copilot-err500", "500 Internal server error", 5),
        ("copilot-midstream", "Overloaded (mid-stream)", 5),
    ] {
        let events = normalize(capture);
        let end = end_of(&events);
        assert!(!end.success, "{capture}");
        assert!(
            end.error.as_deref().unwrap_or_default().contains(needle),
            "{capture}: {:?}",
            end.error
        );
        let statuses = events
            .iter()
            .filter(|e| matches!(e, Event::Status(s) if s.kind == StatusKind::Retry))
            .count();
        assert_eq!(statuses, retries, "{capture}");
    }
}

#[test]
fn reasoning_streams_once_before_the_text() {
    for capture in ["copilot-thinking", "copilot@1.0.92-thinking"] {
        let events = normalize(capture);
        let thinking = streamed_thinking(&events);
        assert!(thinking.starts_with("Let me think about this"), "{capture}");
        assert!(
            thinking.ends_with("The user wants a greeting."),
            "{capture}"
        );
        assert_eq!(
            streamed_text(&events),
            "After thinking: hello!",
            "{capture}"
        );
    }
}

#[test]
fn tools_run_or_are_denied_visibly() {
    let events = normalize("copilot-tool-allowed");
    assert!(events.iter().any(
        |e| matches!(e, Event::ToolUse(t) if t.name == "bash" && t.kind == ToolKind::Execute)
    ));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ToolResult(r) if !r.is_error && r.content.as_str().is_some_and(|c| c.starts_with("hello"))
    )));
    // plan: `--deny-tool shell`; the model's shell call is refused and the turn goes on.
    let events = normalize("copilot-tool-refused");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult(r) if r.is_error))
    );
    assert!(events.iter().any(
        |e| matches!(e, Event::Warning { code, message } if code == "permission_denied" && message.contains("bash"))
    ));
    assert!(end_of(&events).success);
}
