//! `bridge gemini send` end to end: the real Gemini CLI (`gemini --acp`, pinned by
//! tests/install-clis.sh) against the project's mock Gemini API, inside a loopback-only
//! network namespace. The scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Gemini;

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

/// Gemini CLI 0.61.0 cannot resume over ACP (see the gemini crate): refused, with the reason.
#[test]
fn resume_is_refused_with_the_reason() {
    resume_refused_with_reason(P, "No previous sessions found");
}

#[test]
fn interrupt_during_a_slow_stream_leaves_no_process() {
    interrupt_during_slow_stream(P);
}

#[test]
fn http_401_is_surfaced() {
    http_error_is_surfaced(P, "err401", "invalid x-api-key");
}
