//! Replays the recorded real-CLI transcripts in `tests/corpus/pi/<version>/*.stdout` (pi 0.73.0
//! and 0.73.1 against the project's mock, Chat Completions and Responses) through the normalizer
//! and snapshots what users would see, in both wire formats. The turn is finished with the exit
//! code the CLI had, as the recorder filed it (0 for all of them but `pi-resume-badid`, which
//! exits 1, and an interrupted turn, 143): pi exits 0 after API errors, so these snapshots pin
//! down that the stream, not the exit code, decides.

use bridge_channel_pi::PiNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, TurnEnd};
use bridge_core::normalize::replay;
use captures::streamed_text;

/// How the CLI ended, as the recorder filed it.
fn exit_of(name: &str) -> std::process::ExitStatus {
    captures::recorded_exit(name).unwrap_or_else(|| panic!("{name}: no recorded exit"))
}

fn end_of(name: &str) -> (Vec<Event>, TurnEnd) {
    let stdout = captures::stdout(name);
    let exit = exit_of(name);
    let events = replay("pi", &mut PiNormalizer::new("pi"), &stdout, "", exit);
    captures::with_turn_end(name, events)
}

#[test]
fn every_pi_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("pi", 13) {
        let (events, _) = end_of(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn api_errors_fail_although_pi_exited_zero() {
    for (capture, message) in [
        ("pi-err401", "401 invalid x-api-key"),
        (
            "pi-err429",
            "429 Number of requests has exceeded your rate limit",
        ),
        ("pi-err500", "500 Internal server error"),
        ("pi-midstream", "Overloaded (mid-stream)"),
        ("pi-resume-badid", "pi exited with exit code 1"),
    ] {
        let (events, end) = end_of(capture);
        captures::assert_failed_with(capture, &events, &end, message);
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
        "pi-thinking",
        "pi-tool-allowed",
        "pi-responses-text",
        "pi-responses-tool-allowed",
        "pi-responses-thinking",
        "pi-resume-turn2",
        // plan: pi runs with read-only tools, the model's shell call fails, the turn goes on.
        "pi-tool-refused",
    ] {
        let (events, end) = end_of(capture);
        assert!(end.success, "{capture}: {:?}", end.error);
        let session = end.session_id.clone().expect("a session id");
        assert_eq!(session.len(), 36, "{capture}");
        let streamed = streamed_text(&events);
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
    for capture in ["pi-tool-allowed", "pi-responses-tool-allowed"] {
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
