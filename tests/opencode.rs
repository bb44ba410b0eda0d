//! `bridge opencode send` end to end: the real opencode CLI (`opencode acp`) against the project's mock OpenAI Chat Completions API, inside a loopback-only network namespace. The
//! scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Opencode;

acp_scenarios!(P, http_401: "invalid x-api-key");

// The same provider through `opencode run --format json` (`--transport json`).
json_scenarios!(P, http_401: "invalid x-api-key", thinking, tool_runs_in: "bypassPermissions");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

#[test]
fn json_unknown_session_is_an_error() {
    unknown_session_is_an_error(P.json());
}

#[test]
fn json_tool_is_refused_by_policy_when_the_mode_needs_an_approval() {
    let out = one_shot_tool_refused(P.json(), "default");
    assert!(
        out.lines()
            .any(|l| l.contains(r#""type":"warning""#) && l.contains(r#""code":"permission_mode""#)),
        "the mode's effect is announced up front: {out}"
    );
    let decision = out
        .lines()
        .find(|l| l.contains(r#""type":"permission_decision""#))
        .unwrap_or_else(|| panic!("the refusal is reported as a decision: {out}"));
    assert!(decision.contains(r#""source":"policy""#), "{decision}");
}

#[test]
fn json_read_only_mode_offers_no_shell() {
    let out = one_shot_tool_refused(P.json(), "sandbox");
    assert!(out.contains("unavailable tool"), "{out}");
}
