//! The ACP normalizer (`bridge_acp::normalize::AcpNormalizer`) fed arbitrary agent output, driven
//! the way the ACP engine drives it: every line parsed as JSON-RPC (`bridge_acp::rpc::parse`); a
//! `sessionId` result starts the session, `session/update` notifications go to `update`,
//! `session/request_permission` requests to `permission_request`, a `stopReason` result ends
//! the turn (`prompt_result`, then `begin_turn`). The first byte picks the agent's quirks:
//! bit 0 Copilot-style text notices (`Info:` status, `Error:` error), bit 1 tool kinds by name
//! (Kimi), bit 2 prompt results as interrupted by the bridge, bit 3 every permission request
//! refused. Properties: never panics; everything emitted encodes to valid wire lines
//! (`common.rs`); per turn, a tool call is announced once, its result comes after it and once,
//! and a permission request offers `cancel`; a successful turn's `result` is a prefix of its
//! text deltas, at most `RESULT_MAX_BYTES`, and all of them when they fit.
#![no_main]

use std::collections::HashSet;

use bridge_acp::normalize::{AcpNormalizer, RESULT_MAX_BYTES, TextNotices};
use bridge_acp::rpc::{Incoming, parse};
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{Event, ToolKind};
use bridge_core::permission::DecisionKind;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const KIMI_TOOLS: &[(&str, ToolKind)] = &[
    ("Shell", ToolKind::Execute),
    ("ReadFile", ToolKind::Read),
    ("WriteFile", ToolKind::Edit),
];

/// Checks one turn's events (everything up to and including its `TurnEnd`).
fn check_turn(events: &[Event]) {
    let mut announced = HashSet::new();
    let mut finished = HashSet::new();
    let mut text = String::new();
    for event in events {
        match event {
            Event::ToolUse(tool) => {
                assert!(
                    announced.insert(tool.id.clone()),
                    "tool {} announced twice",
                    tool.id
                );
            }
            Event::ToolResult(result) => {
                assert!(
                    announced.contains(&result.tool_use_id),
                    "result of {} before its call",
                    result.tool_use_id
                );
                assert!(
                    finished.insert(result.tool_use_id.clone()),
                    "two results for {}",
                    result.tool_use_id
                );
            }
            Event::PermissionRequest(request) => {
                assert!(
                    request.options.contains(&DecisionKind::Cancel),
                    "{request:?}"
                );
                assert!(!request.request_id.is_empty());
            }
            Event::TextDelta { text: delta } => {
                assert!(!delta.is_empty(), "empty text delta");
                text.push_str(delta);
            }
            Event::TurnEnd(end) if end.success => {
                let result = end
                    .result
                    .as_deref()
                    .expect("a successful turn has a result");
                assert!(
                    result.len() <= RESULT_MAX_BYTES,
                    "result of {} bytes",
                    result.len()
                );
                assert!(
                    text.starts_with(result),
                    "result is not a prefix of the deltas"
                );
                if text.len() <= RESULT_MAX_BYTES {
                    assert_eq!(result, text, "the result lost text");
                }
            }
            Event::TurnEnd(end) => {
                assert!(
                    end.error.as_deref().is_some_and(|e| !e.is_empty()),
                    "{end:?}"
                );
            }
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&quirks, rest)) = data.split_first() else {
        return;
    };
    let mut normalizer = if quirks & 1 != 0 {
        AcpNormalizer::with_notices(TextNotices {
            status_prefix: Some("Info:"),
            error_prefix: Some("Error:"),
        })
    } else {
        AcpNormalizer::new()
    };
    if quirks & 2 != 0 {
        normalizer = normalizer.with_tool_kinds(KIMI_TOOLS);
    }
    let interrupted = quirks & 4 != 0;
    let refuse = quirks & 8 != 0;

    let text = String::from_utf8_lossy(rest);
    let mut events = Vec::new();
    let mut turn_start = 0;
    for line in text.split('\n') {
        match parse(line) {
            Ok(Incoming::Response {
                outcome: Ok(result),
                ..
            }) => {
                if let Some(id) = result.get("sessionId").and_then(|v| v.as_str()) {
                    normalizer.session(id, &mut events);
                } else if result.get("stopReason").is_some() {
                    normalizer.prompt_result(&result, interrupted, &mut events);
                    assert!(
                        matches!(events.last(), Some(Event::TurnEnd(_))),
                        "prompt_result ends with the turn end"
                    );
                    check_turn(&events[turn_start..]);
                    turn_start = events.len();
                    normalizer.begin_turn();
                    assert!(!normalizer.output_seen());
                    assert!(normalizer.text().is_empty());
                }
            }
            Ok(Incoming::Notification { method, params }) if method == "session/update" => {
                normalizer.update(&params, &mut events);
            }
            Ok(Incoming::Request { id, method, params })
                if method == "session/request_permission" =>
            {
                let request = normalizer.permission_request(&id, &params, &mut events);
                if refuse && let Some(tool) = &request.tool_use_id {
                    normalizer.refused(tool, "refused by the user", &mut events);
                }
            }
            _ => {}
        }
    }
    // The agent went away mid-turn: what is pending is announced (the engine then reports
    // the early exit).
    normalizer.flush(&mut events);
    check_turn(&events[turn_start..]);
    let _ = normalizer.session_id();
    common::check_events(&events, MarkerDialect::SESSION);
});
