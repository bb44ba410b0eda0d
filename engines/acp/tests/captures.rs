//! The ACP normalizer replayed over every recorded real-CLI ACP transcript
//! (`tests/corpus/gemini/0.61.0/acp-*.stdout`: Gemini CLI 0.61.0, an approval allowed, rejected, and
//! a turn cancelled mid-stream), snapshotted in both wire formats.

use bridge_acp::normalize::replay;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::Event;
use captures::streamed_text;

fn check(name: &str) -> Vec<Event> {
    let events = replay(captures::stdout(name).lines());
    captures::assert_wire_snapshots!(name, &events, MarkerDialect::SESSION);
    events
}

#[test]
fn allow_capture() {
    let events = check("gemini-acp-allow");
    let request = events
        .iter()
        .find_map(|e| match e {
            Event::PermissionRequest(r) => Some(r),
            _ => None,
        })
        .expect("the approval request");
    assert_eq!(request.tool_name, "Bash");
    assert_eq!(
        request.input["command"],
        "touch mock-created.txt && echo created"
    );
    let tool_use = events
        .iter()
        .position(|e| matches!(e, Event::ToolUse(_)))
        .unwrap();
    let asked = events
        .iter()
        .position(|e| matches!(e, Event::PermissionRequest(_)))
        .unwrap();
    let result = events
        .iter()
        .position(|e| matches!(e, Event::ToolResult(r) if !r.is_error))
        .unwrap();
    assert!(tool_use < asked && asked < result);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TurnEnd(t) if t.success))
            .count(),
        2,
        "two prompts, two successful turn ends"
    );
    assert!(streamed_text(&events).contains("I received 5 contents"));
}

#[test]
fn reject_capture() {
    let events = check("gemini-acp-reject");
    // Gemini sends no tool_call_update for a rejected call: the call is announced, never
    // completed (the engine adds the refusal result when it applies the denial).
    assert!(events.iter().any(|e| matches!(e, Event::ToolUse(_))));
    assert!(!events.iter().any(|e| matches!(e, Event::ToolResult(_))));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }))
    );
}

#[test]
fn cancel_capture() {
    let events = check("gemini-acp-cancel");
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::TurnEnd(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(!ends[0].success, "a cancelled prompt is not a success");
    assert!(ends[1].success);
}

/// Every ACP transcript the recorder made (`acp-*` scenarios of every provider recorded over
/// ACP; gemini so far) replays to one turn end, and the successful text turn streams its answer.
#[test]
fn every_recorded_acp_transcript_replays_to_one_turn_end() {
    let names: Vec<String> = captures::names("gemini")
        .into_iter()
        .filter(|n| {
            n.starts_with("gemini-acp-")
                && !n.ends_with("allow")
                && !n.ends_with("reject")
                && !n.ends_with("cancel")
        })
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    for name in &names {
        let events = check(name);
        let ends = events
            .iter()
            .filter(|e| matches!(e, Event::TurnEnd(_)))
            .count();
        assert!(ends <= 1, "{name}: {ends} turn ends");
    }
    let events = check("gemini-acp-text");
    assert_eq!(streamed_text(&events), "Hello from the mock model.");
}
