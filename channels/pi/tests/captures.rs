//! Replays the recorded real-CLI transcripts in `../shared/captures/pi-*.stdout` (pi 0.73.1
//! against the reference mock, Chat Completions and Responses) through the normalizer and
//! snapshots what users would see, in both wire formats. The turn is finished with the exit code
//! the CLI had (0 for all of them but `pi-resume-badid`, which exits 1): pi exits 0 after API
//! errors, so these snapshots pin down that the stream, not the exit code, decides.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_pi::PiNormalizer;
use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::{Event, TurnEnd};
use bridge_core::turn::Normalizer;

fn exit_code(name: &str) -> i32 {
    if name == "pi-resume-badid" { 1 } else { 0 }
}

fn normalize(name: &str, text: &str) -> Vec<Event> {
    let mut normalizer = PiNormalizer::new("pi");
    let mut events = vec![Event::TurnStart {
        provider: "pi".into(),
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

fn end_of(name: &str) -> (Vec<Event>, TurnEnd) {
    let text = std::fs::read_to_string(captures::dir().join(format!("{name}.stdout"))).unwrap();
    let events = normalize(name, &text);
    let Some(Event::TurnEnd(end)) = events.last().cloned() else {
        panic!("{name}: the last event is not a turn end");
    };
    (events, end)
}

#[test]
fn every_pi_capture_normalizes_to_a_stable_event_stream() {
    let names = captures::names("pi-");
    assert!(
        names.len() >= 13,
        "expected the pi captures, found {names:?}"
    );
    for name in names {
        let (events, _) = end_of(&name);
        let jsonl = encode_all(&events, &mut JsonlEncoder::new(false));
        let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::SESSION));
        insta::assert_snapshot!(format!("{name}.jsonl"), jsonl);
        insta::assert_snapshot!(format!("{name}.markers"), markers);
    }
}

#[test]
fn api_errors_fail_although_pi_exited_zero() {
    for (capture, message) in [
        ("pi-err401", "401 Incorrect API key"),
        ("pi-err429", "429"),
        ("pi-err500", "500 The server had an error"),
        ("pi-failed", "The mock model failed mid-stream."),
        ("pi-resume-badid", "pi exited with exit code 1"),
    ] {
        let (events, end) = end_of(capture);
        assert!(!end.success, "{capture} must fail");
        assert!(
            end.error.as_deref().unwrap_or("").contains(message),
            "{capture}: {:?}",
            end.error
        );
        let errors = events
            .iter()
            .filter(|e| matches!(e, Event::Error(_)))
            .count();
        assert_eq!(errors, 1, "{capture}: exactly one error before the end");
    }
}

#[test]
fn retries_are_reported_as_status_and_the_last_attempt_decides() {
    let (events, end) = end_of("pi-err500");
    let retries = events
        .iter()
        .filter(
            |e| matches!(e, Event::Status(s) if s.kind == bridge_core::event::StatusKind::Retry),
        )
        .count();
    assert_eq!(retries, 3);
    assert!(!end.success);
}

#[test]
fn successful_captures_stream_the_result_and_keep_the_session() {
    for capture in [
        "pi-text",
        "pi-reasoning",
        "pi-tool",
        "pi-responses-tool",
        "pi-responses-reasoning",
        "pi-resume",
        "pi-tool-readonly-tools",
    ] {
        let (events, end) = end_of(capture);
        assert!(end.success, "{capture}: {:?}", end.error);
        let session = end.session_id.clone().expect("a session id");
        assert_eq!(session.len(), 36, "{capture}");
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let result = end.result.clone().unwrap_or_default();
        assert!(!result.is_empty(), "{capture}");
        assert!(
            streamed.ends_with(&result),
            "{capture}: {streamed:?} vs {result:?}"
        );
    }
}

#[test]
fn tool_calls_and_results_pair_up() {
    for capture in ["pi-tool", "pi-responses-tool"] {
        let (events, _) = end_of(capture);
        let uses: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolUse(t) => Some(t.id.clone()),
                _ => None,
            })
            .collect();
        let results: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolResult(t) => Some(t.tool_use_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(uses.len(), 1, "{capture}");
        assert_eq!(uses, results, "{capture}");
    }
}
