//! `bridge qwen send` end to end: the real Qwen Code CLI against the project's mock OpenAI Chat
//! Completions API, inside a loopback-only network namespace, over both transports: ACP
//! (`qwen --acp`, the default) and the one-shot stream-json mode (`--transport json`). The
//! scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Qwen;

acp_scenarios!(P, http_401: "invalid x-api-key");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

/// Qwen Code answers `session/load` of an unknown id with a fresh session; the bridge must not.
#[test]
fn an_unknown_session_is_an_error() {
    unknown_session_is_an_error(P);
}

// `--transport json`: `qwen --output-format stream-json --include-partial-messages`.

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

/// Qwen Code prints API errors as assistant text, says `is_error:false` and exits 0: the turn
/// still fails, with the error.
#[test]
fn json_http_401_is_surfaced_although_qwen_exits_0() {
    http_error_is_surfaced(P.json(), "err401", "invalid x-api-key");
}

/// A stream cut by an API error mid-answer: the partial text stays text, the error fails the
/// turn (Qwen Code exits 0 here too).
#[test]
fn json_midstream_error_is_surfaced_although_qwen_exits_0() {
    http_error_is_surfaced(P.json(), "midstream", "mid-stream");
}

#[test]
fn json_tool_runs_in_yolo_mode() {
    one_shot_tool_runs_when_the_mode_allows_it(P.json(), "yolo");
}

#[test]
fn json_tool_is_refused_in_default_mode() {
    one_shot_tool_refused_in_default_mode(P.json());
}
