//! Replays the recorded real-CLI transcripts in `../shared/captures/copilot-*.stdout` (Copilot
//! CLI 1.0.102 `--output-format json`, BYOK against the reference mock, OpenAI and Anthropic
//! provider types) through the `json` transport's normalizer and snapshots what users would
//! see, in both wire formats. The turn is finished with the exit code the CLI had (1 for the
//! API errors).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_copilot::normalize::CopilotNormalizer;
use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::{Event, StatusKind, ToolKind, TurnEnd};
use bridge_core::turn::Normalizer;

fn exit_code(name: &str) -> i32 {
    match name {
        "copilot-err401" | "copilot-err500" | "copilot-midstream" => 1,
        _ => 0,
    }
}

fn normalize(name: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(captures::dir().join(format!("{name}.stdout"))).unwrap();
    let mut normalizer = CopilotNormalizer::new();
    let mut events = vec![Event::TurnStart {
        provider: "copilot".into(),
    }];
    for line in text.lines() {
        normalizer.line(line, &mut events);
    }
    normalizer.finish(
        Some(&ExitStatus::from_raw(exit_code(name) << 8)),
        &mut events,
    );
    events
}

fn end_of(events: &[Event]) -> &TurnEnd {
    match events.last() {
        Some(Event::TurnEnd(end)) => end,
        other => panic!("the last event is not a turn end: {other:?}"),
    }
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
fn every_copilot_capture_normalizes_to_a_stable_event_stream() {
    let names = captures::names("copilot-");
    assert!(
        names.len() >= 12,
        "expected the copilot captures, found {names:?}"
    );
    for name in names {
        let events = normalize(&name);
        let turn_ends = events
            .iter()
            .filter(|e| matches!(e, Event::TurnEnd(_)))
            .count();
        assert_eq!(turn_ends, 1, "{name}");
        let jsonl = encode_all(&events, &mut JsonlEncoder::new(false));
        let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::SESSION));
        insta::assert_snapshot!(format!("{name}.jsonl"), jsonl);
        insta::assert_snapshot!(format!("{name}.markers"), markers);
    }
}

#[test]
fn the_session_id_from_the_last_line_ends_the_turn() {
    let events = normalize("copilot-text");
    let end = end_of(&events);
    assert!(end.success);
    assert_eq!(
        end.session_id.as_deref(),
        Some("8846f078-4014-4a01-99b6-c1603a6842a2")
    );
    assert_eq!(end.result.as_deref(), Some("Hello from the mock model."));
    assert_eq!(text(&events), "Hello from the mock model.");
}

#[test]
fn api_errors_fail_with_the_cli_message_after_retry_statuses() {
    for (capture, needle, retries) in [
        ("copilot-err401", "HTTP 401", 2),
        ("copilot-err500", "500 mock err500", 5),
        ("copilot-midstream", "mock mid-stream overload", 5),
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
    for capture in ["copilot-thinking", "copilot-anthropic-thinking"] {
        let events = normalize(capture);
        let thinking: String = events
            .iter()
            .filter_map(|e| match e {
                Event::ThinkingDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(thinking.starts_with("Let me think about this"), "{capture}");
        assert!(
            thinking.ends_with("The user wants a greeting."),
            "{capture}"
        );
        assert_eq!(text(&events), "After thinking: hello!", "{capture}");
    }
}

#[test]
fn tools_run_or_are_denied_visibly() {
    let events = normalize("copilot-tool-allowall");
    assert!(events.iter().any(
        |e| matches!(e, Event::ToolUse(t) if t.name == "bash" && t.kind == ToolKind::Execute)
    ));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ToolResult(r) if !r.is_error && r.content.as_str().is_some_and(|c| c.starts_with("hello"))
    )));
    let events = normalize("copilot-danger-default");
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
