//! `bridge opencode send` end to end: the real opencode CLI (`opencode acp`) against the project's mock OpenAI Chat Completions API, inside a loopback-only network namespace. The
//! scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Opencode;

#[test]
fn text_streams_in_both_formats() {
    text_in_both_formats(P);
}

#[test]
fn thinking_streams_before_text() {
    thinking_before_text(P);
}

#[test]
fn approval_allowed_over_stdin_runs_the_command() {
    approval_allowed_runs(P);
}

#[test]
fn approval_denied_over_stdin_runs_nothing() {
    approval_denied_does_not_run(P);
}

#[test]
fn approval_without_a_client_is_denied_at_once() {
    approval_without_client_is_denied(P);
}

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

#[test]
fn interrupt_during_a_slow_stream_leaves_no_process() {
    interrupt_during_slow_stream(P);
}

#[test]
fn http_401_is_surfaced() {
    http_error_is_surfaced(P, "err401", "invalid x-api-key");
}

// The same provider through `opencode run --format json` (`--transport json`).

#[test]
fn json_text_in_both_formats() {
    text_in_both_formats(P.json());
}

#[test]
fn json_thinking_before_text() {
    thinking_before_text(P.json());
}

#[test]
fn json_resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P.json());
}

#[test]
fn json_unknown_session_is_an_error() {
    unknown_session_is_an_error(P.json());
}

#[test]
fn json_interrupt_while_the_model_answers_leaves_no_process() {
    interrupt_while_the_model_answers(P.json());
}

#[test]
fn json_http_401_is_surfaced() {
    http_error_is_surfaced(P.json(), "err401", "invalid x-api-key");
}

#[test]
fn json_tool_runs_when_the_mode_allows_it() {
    one_shot_tool_runs_when_the_mode_allows_it(P.json(), "bypassPermissions");
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
