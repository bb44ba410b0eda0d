//! Replays the recorded real-CLI transcripts in `../shared/captures/kimi-*.stdout` and their
//! `.stderr` (`kimi --print --output-format stream-json`, kimi-cli 1.51.0 against the reference
//! mock) through the normalizer and snapshots what users would see, in both wire formats. Each
//! turn is finished with the exit code the CLI had: 1 for the 401, 75 for the retryable 429 and
//! 500, 0 for the rest (an unknown resume id silently starts a new session).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_kimi::KimiNormalizer;
use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::{Event, TurnEnd};
use bridge_core::normalize::replay;

fn exit_code(name: &str) -> i32 {
    match name {
        "kimi-err401" => 1,
        "kimi-err429" | "kimi-err500" => 75,
        _ => 0,
    }
}

fn normalize(name: &str) -> Vec<Event> {
    let dir = captures::dir();
    let stdout = std::fs::read_to_string(dir.join(format!("{name}.stdout"))).unwrap();
    let stderr = std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap();
    let resume = match name {
        "kimi-resume" => Some("c6535258-4763-4279-bcef-8868629e9e67".to_string()),
        "kimi-resume-badid" => Some("00000000-0000-0000-0000-000000000000".to_string()),
        _ => None,
    };
    let mut normalizer = KimiNormalizer::new(resume);
    // kimi prints the session id on stderr when it exits, after its stdout.
    let exit = ExitStatus::from_raw(exit_code(name) << 8);
    replay("kimi", &mut normalizer, &stdout, &stderr, exit)
}

fn end_of(name: &str) -> (Vec<Event>, TurnEnd) {
    let events = normalize(name);
    let Some(Event::TurnEnd(end)) = events.last().cloned() else {
        panic!("{name}: the last event is not a turn end");
    };
    (events, end)
}

#[test]
fn every_kimi_capture_normalizes_to_a_stable_event_stream() {
    let names = captures::names("kimi-");
    assert!(
        names.len() >= 8,
        "expected the kimi captures, found {names:?}"
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
fn plain_text_errors_fail_with_their_unwrapped_text() {
    for (capture, message) in [
        (
            "kimi-err401",
            "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-mock***.(mock)'",
        ),
        ("kimi-err429", "Please try again in 1s."),
        (
            "kimi-err500",
            "The server had an error while processing your request.",
        ),
    ] {
        let (events, end) = end_of(capture);
        assert!(!end.success, "{capture} must fail");
        let error = end.error.clone().unwrap_or_default();
        assert!(error.contains(message), "{capture}: {error}");
        assert!(
            end.session_id.is_some(),
            "{capture}: the session is still reported"
        );
        let errors = events
            .iter()
            .filter(|e| matches!(e, Event::Error(_)))
            .count();
        assert_eq!(errors, 1, "{capture}");
    }
}

#[test]
fn successful_turns_stream_deltas_and_take_the_session_from_stderr() {
    for (capture, session) in [
        ("kimi-text", "36a343e2-5389-4f9d-b59c-2bbb638bd4e3"),
        ("kimi-reasoning", "6a17bd66-f3e7-4791-aef8-f09344c9795e"),
        ("kimi-tool", "c6535258-4763-4279-bcef-8868629e9e67"),
        ("kimi-resume", "c6535258-4763-4279-bcef-8868629e9e67"),
    ] {
        let (events, end) = end_of(capture);
        assert!(end.success, "{capture}: {:?}", end.error);
        assert_eq!(end.session_id.as_deref(), Some(session), "{capture}");
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let result = end.result.clone().unwrap();
        assert!(
            streamed.ends_with(&result),
            "{capture}: {streamed:?} vs {result:?}"
        );
    }
    let (events, _) = end_of("kimi-reasoning");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }))
    );
    let (events, _) = end_of("kimi-tool");
    assert!(events.iter().any(|e| matches!(e, Event::ToolUse(_))));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult(r) if !r.is_error))
    );
}
