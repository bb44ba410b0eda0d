//! The ACP normalizer replayed over every recorded real-CLI ACP transcript
//! (`tests/corpus/gemini/<version>/acp-*.stdout`: Gemini CLI 0.60.0 and 0.61.0 over ACP against
//! the project's mock, made by `scripts/record gemini-acp`), snapshotted in both wire formats.

use bridge_acp::normalize::replay;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, StopReason};
use captures::streamed_text;

fn check(name: &str) -> Vec<Event> {
    let events = replay(captures::stdout(name).lines());
    captures::assert_wire_snapshots!(name, &events, MarkerDialect::SESSION);
    events
}

fn turn_ends(events: &[Event]) -> Vec<&bridge_core::event::TurnEnd> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TurnEnd(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[test]
fn an_allowed_approval_is_asked_between_the_call_and_its_result() {
    for name in captures::in_every_version("gemini", "acp-approval-allowed") {
        let events = check(&name);
        let request = events
            .iter()
            .find_map(|e| match e {
                Event::PermissionRequest(r) => Some(r),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{name}: the approval request"));
        assert_eq!(request.tool_name, "Bash", "{name}");
        assert_eq!(
            request.input["command"], "touch mock-created.txt && echo created",
            "{name}"
        );
        let position = |f: &dyn Fn(&Event) -> bool| events.iter().position(f);
        let tool_use = position(&|e| matches!(e, Event::ToolUse(_))).unwrap();
        let asked = position(&|e| matches!(e, Event::PermissionRequest(_))).unwrap();
        let result = position(&|e| matches!(e, Event::ToolResult(r) if !r.is_error)).unwrap();
        assert!(tool_use < asked && asked < result, "{name}");
        let ends = turn_ends(&events);
        assert!(ends.len() == 1 && ends[0].success, "{name}");
        assert!(streamed_text(&events).contains("Output: created"), "{name}");
    }
}

#[test]
fn a_rejected_call_is_announced_and_never_completed() {
    for name in captures::in_every_version("gemini", "acp-approval-denied") {
        let events = check(&name);
        // Gemini sends no tool_call_update for a rejected call: the call is announced, never
        // completed (the engine adds the refusal result when it applies the denial).
        assert!(
            events.iter().any(|e| matches!(e, Event::ToolUse(_))),
            "{name}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::PermissionRequest(_))),
            "{name}"
        );
        assert!(
            !events.iter().any(|e| matches!(e, Event::ToolResult(_))),
            "{name}"
        );
        assert!(
            streamed_text(&events).contains("canceled by the user"),
            "{name}"
        );
    }
}

#[test]
fn a_cancelled_prompt_ends_interrupted() {
    for name in captures::in_every_version("gemini", "acp-interrupt") {
        let events = check(&name);
        let ends = turn_ends(&events);
        assert_eq!(ends.len(), 1, "{name}");
        assert!(
            !ends[0].success,
            "{name}: a cancelled prompt is not a success"
        );
        assert_eq!(ends[0].stop_reason, StopReason::Interrupted, "{name}");
    }
}

/// Every ACP transcript the recorder made (`acp-*` scenarios of every recorded version; gemini
/// so far) replays to at most one turn end, and the successful text turn streams its answer.
#[test]
fn every_recorded_acp_transcript_replays_to_one_turn_end() {
    let names: Vec<String> = captures::names("gemini")
        .into_iter()
        .filter(|n| n.contains("-acp-"))
        .collect();
    assert!(names.len() >= 20, "{names:?}");
    for name in &names {
        let events = check(name);
        assert!(turn_ends(&events).len() <= 1, "{name}");
    }
    for name in captures::in_every_version("gemini", "acp-text") {
        assert_eq!(
            streamed_text(&check(&name)),
            "Hello from the mock model.",
            "{name}"
        );
    }
}
