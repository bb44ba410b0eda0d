//! Replays the recorded real-CLI transcripts `tests/corpus/gemini/<version>/*.stdout` that are
//! stream-json (Gemini CLI 0.60.0 and 0.61.0 headless against the project's mock, made by
//! `scripts/record gemini`) through the JSON normalizer and snapshots what users would see, in
//! both wire formats. Each turn is finished with the exit code the CLI had, as the recorder filed
//! it (the API errors exit with the HTTP status mod 256, the mid-stream failure exits 0, an
//! unknown `--resume` id exits 42 with nothing on stdout), and with its recorded stderr, so the
//! snapshots pin down that the stream decides, not the exit.

use bridge_channel_gemini::json::GeminiJsonNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, ToolKind, TurnEnd};
use bridge_core::turn::Normalizer;

/// The session id the recorder's `resume-badid` scenario asks for.
const BAD_ID: &str = "00000000-0000-4000-8000-000000000000";

/// Captures in the stream-json format (or with an empty stdout: startup failures of a
/// stream-json run). The others are ACP transcripts, `--output-format json` and text output.
fn capture_names() -> Vec<String> {
    captures::names("gemini")
        .into_iter()
        .filter(|n| {
            let stdout = captures::read(n, "stdout");
            stdout.trim().is_empty() || stdout.starts_with(r#"{"type":"init""#)
        })
        .collect()
}

fn normalize(name: &str) -> Vec<Event> {
    let resumed = name.ends_with("-resume-badid").then(|| BAD_ID.to_string());
    let mut normalizer = GeminiJsonNormalizer::new(resumed);
    let mut events = vec![Event::TurnStart {
        provider: "gemini".into(),
    }];
    for line in captures::read(name, "stdout").lines() {
        normalizer.line(line, &mut events);
        if matches!(events.last(), Some(Event::TurnEnd(_))) {
            return events;
        }
    }
    for line in captures::read(name, "stderr").lines() {
        normalizer.stderr_line(line, &mut events);
    }
    let exit = captures::recorded_exit(name).unwrap_or_else(|| panic!("{name}: no recorded exit"));
    normalizer.finish(Some(&exit), &mut events);
    events
}

fn end_of(events: &[Event]) -> TurnEnd {
    match events.last() {
        Some(Event::TurnEnd(end)) => end.clone(),
        other => panic!("the last event is not a turn end: {other:?}"),
    }
}

#[test]
fn every_stream_json_capture_normalizes_to_a_stable_event_stream() {
    let names = capture_names();
    assert!(
        names.len() >= 20,
        "expected the gemini stream-json captures, found {names:?}"
    );
    for name in names {
        let events = normalize(&name);
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::TurnEnd(_)))
                .count(),
            1,
            "{name}"
        );
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn successful_turns_end_with_the_text_after_the_last_tool() {
    for (capture, result) in [
        ("gemini-text", "Hello from the mock model."),
        ("gemini-thinking", "After thinking: hello!"),
        (
            "gemini-resume-turn2",
            "I received 3 messages; user texts seen: [\"MOCK:text first turn\", \"MOCK:recall what did I say?\"]",
        ),
    ] {
        let end = end_of(&normalize(capture));
        assert!(end.success, "{capture}");
        assert_eq!(end.result.as_deref(), Some(result), "{capture}");
    }
    let end = end_of(&normalize("gemini-tool-allowed"));
    assert!(end.success);
    assert!(
        end.result
            .unwrap()
            .starts_with("Tool finished. Output was:")
    );
    // Same session id in both turns of the resume.
    let first = end_of(&normalize("gemini-resume-turn1")).session_id;
    assert_eq!(first, end_of(&normalize("gemini-resume-turn2")).session_id);
    assert!(first.is_some());
}

#[test]
fn api_errors_and_the_mid_stream_failure_are_never_success() {
    for (capture, needle) in [
        ("gemini-err401", "invalid x-api-key"),
        // Gemini CLI retries 429 and 500 until the recorder's deadline stops it: the stream has
        // no result, and a stream without one never succeeds.
        ("gemini-err429", "exited"),
        ("gemini-err500", "exited"),
        // exit 0
        (
            "gemini-midstream",
            "Model stream ended without a finish reason",
        ),
        ("gemini-resume-badid", "cannot resume session"),
        ("gemini@0.60.0-resume-badid", "cannot resume session"),
    ] {
        let end = end_of(&normalize(capture));
        assert!(!end.success, "{capture}");
        let error = end.error.unwrap_or_default();
        assert!(error.contains(needle), "{capture}: {error}");
    }
    assert_eq!(
        end_of(&normalize("gemini-resume-badid"))
            .session_id
            .as_deref(),
        Some(BAD_ID)
    );
}

#[test]
fn a_tool_the_mode_does_not_offer_is_a_failed_result_and_a_warning() {
    // plan: Gemini CLI registers no shell tool, the model's call fails and the turn goes on.
    for capture in ["gemini-tool-refused", "gemini@0.60.0-tool-refused"] {
        let events = normalize(capture);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ToolResult(r) if r.is_error)),
            "{capture}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Warning { code, .. } if code == "permission_denied")),
            "{capture}"
        );
    }
    let events = normalize("gemini-tool-allowed");
    let tool = events
        .iter()
        .find_map(|e| match e {
            Event::ToolUse(t) => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((tool.name.as_str(), tool.kind), ("Bash", ToolKind::Execute));
    assert_eq!(tool.input["command"], "echo hello");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult(r) if !r.is_error && r.tool_use_id == tool.id))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. })),
        "headless Gemini prints no thoughts"
    );
}
