//! Replays the recorded real-CLI transcripts in `tests/corpus/opencode/<version>/*.stdout`
//! (`opencode run --format json`, opencode 1.18.32 and 1.18.33 against the project's mock, made
//! by `scripts/record opencode`) through the normalizer and snapshots what users would see, in
//! both wire formats. Each turn is finished with the exit the CLI had, as the recorder filed it:
//! 1 for the API errors and the unknown session, a kill for the 500 it retries silently, 0 for
//! the rest.

use bridge_channel_opencode::OpencodeNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, TurnEnd};
use bridge_core::normalize::replay;

fn normalize(name: &str) -> Vec<Event> {
    let stdout = captures::stdout(name);
    let stderr = captures::read(name, "stderr");
    let mut normalizer = OpencodeNormalizer::new(None);
    let exit = captures::recorded_exit(name).unwrap_or_else(|| panic!("{name}: no recorded exit"));
    replay("opencode", &mut normalizer, &stdout, &stderr, exit)
}

fn end_of(name: &str) -> (Vec<Event>, TurnEnd) {
    captures::with_turn_end(name, normalize(name))
}

#[test]
fn every_opencode_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("opencode", 14) {
        let (events, _) = end_of(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn errors_and_unfinished_runs_are_failures() {
    for (capture, message) in [
        ("opencode-err401", "invalid x-api-key (HTTP 401)"),
        (
            "opencode-err429",
            "Number of requests has exceeded your rate limit (HTTP 429)",
        ),
        // opencode retries a 500 silently until the recorder's idle deadline stops it.
        ("opencode-err500", "signal 15"),
        ("opencode-midstream", "Overloaded (mid-stream)"),
        ("opencode-resume-badid", "exit code 1"),
    ] {
        let (events, end) = end_of(capture);
        captures::assert_failed_with(capture, &events, &end, message);
    }
}

#[test]
fn successful_runs_report_the_last_steps_text_and_their_session() {
    for (capture, result) in [
        ("opencode-text", "Hello from the mock model."),
        ("opencode-thinking", "After thinking: hello!"),
        ("opencode-tool-allowed", "Tool finished. Output was: hello"),
        (
            "opencode-resume-turn2",
            "I received 4 messages; user texts seen: [\"MOCK:text first turn\", \"MOCK:recall what did I say?\"]",
        ),
    ] {
        let (events, end) = end_of(capture);
        assert!(end.success, "{capture}: {:?}", end.error);
        assert_eq!(end.result.as_deref(), Some(result), "{capture}");
        let session = end.session_id.clone().unwrap();
        assert!(session.starts_with("ses_"), "{capture}");
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::SessionId { .. }))
                .count(),
            1,
            "{capture}"
        );
    }
    let (events, _) = end_of("opencode-thinking");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }))
    );
}

#[test]
fn an_auto_rejected_call_is_visible_and_ends_the_turn() {
    // default: opencode's permission config says `ask` for bash, and `opencode run` cannot ask.
    let (events, end) = end_of("opencode-approval-denied");
    assert!(end.success, "{:?}", end.error);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PermissionDecision(_)))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult(r) if r.is_error))
    );
}
