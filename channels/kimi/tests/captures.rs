//! Replays the recorded real-CLI transcripts in `tests/corpus/kimi/<version>/*.stdout` and their
//! `.stderr` (`kimi --print --output-format stream-json`, kimi-cli 1.51.0 against the project's
//! mock, made by `scripts/record kimi`) through the normalizer and snapshots what users would see,
//! in both wire formats. Each turn is finished with the exit code the CLI had, as the recorder
//! filed it.

use bridge_channel_kimi::KimiNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, TurnEnd};
use bridge_core::normalize::replay;
use captures::streamed_text;

fn normalize(name: &str) -> Vec<Event> {
    let stdout = captures::stdout(name);
    // An interrupted kimi is stopped before it prints anything on stderr (no file).
    let stderr = captures::read(name, "stderr");
    let mut normalizer = KimiNormalizer::new(None);
    // kimi prints the session id on stderr when it exits, after its stdout.
    let exit = captures::recorded_exit(name).unwrap_or_else(|| panic!("{name}: no recorded exit"));
    replay("kimi", &mut normalizer, &stdout, &stderr, exit)
}

fn end_of(name: &str) -> (Vec<Event>, TurnEnd) {
    captures::with_turn_end(name, normalize(name))
}

#[test]
fn every_kimi_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("kimi", 8) {
        let (events, _) = end_of(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn plain_text_errors_fail_with_their_unwrapped_text() {
    for (capture, message) in [
        (
            "kimi-err401",
            "Error code: 401 - {'error': {'message': 'invalid x-api-key'",
        ),
        (
            "kimi-err429",
            "Number of requests has exceeded your rate limit",
        ),
        ("kimi-err500", "Internal server error"),
        ("kimi-midstream", "Error: Overloaded (mid-stream)"),
    ] {
        let (events, end) = end_of(capture);
        captures::assert_failed_with(capture, &events, &end, message);
        assert!(
            end.session_id.is_some(),
            "{capture}: the session is still reported"
        );
    }
}

#[test]
fn successful_turns_stream_deltas_and_take_the_session_from_stderr() {
    for capture in [
        "kimi-text",
        "kimi-thinking",
        "kimi-tool-allowed",
        "kimi-resume-turn2",
    ] {
        // The id kimi printed last on stderr ("To resume this session: kimi -r <id>").
        let stderr = captures::read_required(capture, "stderr");
        let session = stderr
            .lines()
            .rev()
            .find_map(|l| l.split("kimi -r ").nth(1))
            .map(str::trim)
            .unwrap_or_else(|| panic!("{capture}: no session on stderr"));
        let (events, end) = end_of(capture);
        assert!(end.success, "{capture}: {:?}", end.error);
        assert_eq!(end.session_id.as_deref(), Some(session), "{capture}");
        let streamed = streamed_text(&events);
        let result = end.result.clone().unwrap();
        assert!(
            streamed.ends_with(&result),
            "{capture}: {streamed:?} vs {result:?}"
        );
    }
    let (events, _) = end_of("kimi-thinking");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }))
    );
    let (events, _) = end_of("kimi-tool-allowed");
    assert!(events.iter().any(|e| matches!(e, Event::ToolUse(_))));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult(r) if !r.is_error))
    );
}
