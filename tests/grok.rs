//! `bridge grok send` end to end: a `grok` executable that runs a real ACP agent (`qwen --acp`,
//! fed the key and endpoint the grok channel sets in `XAI_API_KEY` / `GROK_BASE_URL`; xAI's binary
//! is in no reachable registry) against the project's mock Chat Completions API, inside a
//! loopback-only network namespace. The scenarios are shared by every ACP provider
//! (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Grok;

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
fn an_unknown_session_is_a_clear_error() {
    common::acp::unknown_session_is_an_error(P);
}

#[test]
fn interrupt_during_a_slow_stream_leaves_no_process() {
    interrupt_during_slow_stream(P);
}

#[test]
fn http_401_is_surfaced() {
    http_error_is_surfaced(P, "err401", "invalid x-api-key");
}
