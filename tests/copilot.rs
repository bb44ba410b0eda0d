//! `bridge copilot send` end to end: the real GitHub Copilot CLI (BYOK offline) against the
//! project's mock OpenAI Chat Completions API, inside a loopback-only network namespace, over
//! both transports: ACP (`copilot --acp --stdio`, the default) and the one-shot JSONL mode
//! (`--transport json`). The scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Copilot;

acp_scenarios!(P, http_401: "HTTP 401");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

// `--transport json`: `copilot --output-format json`.

#[test]
fn json_text_streams_in_both_formats() {
    text_in_both_formats(P.json());
}

#[test]
fn json_thinking_streams_before_text() {
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
fn json_interrupt_during_a_slow_stream_leaves_no_process() {
    interrupt_during_slow_stream(P.json());
}

#[test]
fn json_http_401_is_surfaced() {
    http_error_is_surfaced(P.json(), "err401", "HTTP 401");
}

#[test]
fn json_tool_runs_with_allow_all() {
    one_shot_tool_runs_when_the_mode_allows_it(P.json(), "yolo");
}

#[test]
fn json_tool_is_denied_in_default_mode() {
    one_shot_tool_refused_in_default_mode(P.json());
}
