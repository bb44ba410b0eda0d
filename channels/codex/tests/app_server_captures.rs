//! Replays the recorded `codex app-server` transcripts (`tests/corpus/codex/<version>/
//! appserver-*.stdout`, both directions recorded, made by `scripts/record codex-app-server`)
//! through the app-server normalizer, as the engine feeds it (notifications, approval
//! requests), and snapshots what users would see in both wire formats.

use bridge_codex::app_server::AppServerNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, StopReason};
use bridge_core::jsonrpc::{Incoming, parse};

fn names() -> Vec<String> {
    let names: Vec<String> = captures::names("codex")
        .into_iter()
        .filter(|n| n.contains("-appserver-"))
        .collect();
    assert!(
        names.len() >= 15,
        "expected the app-server captures: {names:?}"
    );
    names
}

/// The events of capture `name`: the thread id from the `thread/start` (or `thread/resume`)
/// answer, then every notification and approval request of the turn.
fn normalize(name: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut turn: Option<AppServerNormalizer> = None;
    for line in captures::stdout(name).lines() {
        match parse(line) {
            Ok(Incoming::Response {
                outcome: Ok(result),
                ..
            }) => {
                if let Some(id) = result["thread"]["id"].as_str() {
                    events.push(Event::SessionId { id: id.to_string() });
                    turn = Some(AppServerNormalizer::new(id, "codex_replay"));
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                if let Some(turn) = turn.as_mut() {
                    turn.notification(&method, &params, &mut events);
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                if let Some(turn) = turn.as_mut() {
                    turn.permission_request(&id, &method, &params, &mut events);
                }
            }
            _ => {}
        }
    }
    events
}

fn named(scenario: &str) -> String {
    captures::name(
        "codex",
        &captures::pinned_version("codex"),
        &format!("appserver-{scenario}"),
    )
}

#[test]
fn every_app_server_capture_normalizes_to_a_stable_event_stream() {
    for name in names() {
        let events = normalize(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::THREAD);
    }
}

fn requests(events: &[Event]) -> Vec<&bridge_core::permission::PermissionRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PermissionRequest(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn text_streams_and_ends_with_the_last_agent_message() {
    let (events, end) = captures::with_turn_end("text", normalize(&named("text")));
    assert!(end.success, "{events:?}");
    assert_eq!(end.result.as_deref(), Some("Hello from the mock model."));
    assert_eq!(
        captures::streamed_text(&events),
        "Hello from the mock model."
    );
    let (events, _) = captures::with_turn_end("thinking", normalize(&named("thinking")));
    assert!(
        !captures::streamed_thinking(&events).is_empty(),
        "{events:?}"
    );
}

#[test]
fn an_escalation_is_a_bash_permission_request_with_its_reason() {
    for scenario in ["approval-allowed", "approval-denied", "approval-unanswered"] {
        let events = normalize(&named(scenario));
        let asked = requests(&events);
        assert_eq!(asked.len(), 1, "{scenario}: {events:?}");
        assert_eq!(asked[0].tool_name, "Bash");
        assert_eq!(
            asked[0].description.as_deref(),
            Some("Mock model wants to run outside the sandbox")
        );
        assert!(
            asked[0].input["command"]
                .as_str()
                .unwrap()
                .contains("mock_escalated.txt")
        );
    }
}

#[test]
fn a_patch_approval_carries_the_files_and_the_diff() {
    let events = normalize(&named("patch-approval"));
    let asked = requests(&events);
    assert_eq!(asked.len(), 1, "{events:?}");
    assert_eq!(asked[0].paths.len(), 2, "{:?}", asked[0]);
    let diff = asked[0].input["diff"].as_str().unwrap();
    assert!(diff.contains("hello, patched"), "{diff}");
}

#[test]
fn failures_carry_codexs_message_and_an_interrupt_is_an_interrupt() {
    for (scenario, message) in [
        ("err401", "401 Unauthorized"),
        ("err429", "429 Too Many Requests"),
        ("err500", "high demand"),
    ] {
        let name = named(scenario);
        let (events, end) = captures::with_turn_end(&name, normalize(&name));
        captures::assert_failed_with(&name, &events, &end, message);
    }
    let (_, end) = captures::with_turn_end("interrupt", normalize(&named("interrupt")));
    assert_eq!(end.stop_reason, StopReason::Interrupted);
}
