//! `bridge qwen send` end to end: the real Qwen Code CLI against the project's mock OpenAI Chat
//! Completions API, inside a loopback-only network namespace, over both transports: ACP
//! (`qwen --acp`, the default) and the one-shot stream-json mode (`--transport json`). The
//! scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Qwen;

acp_scenarios!(P, http_401: "invalid x-api-key");
// `--transport json`: `qwen --output-format stream-json --include-partial-messages`. Qwen Code
// prints API errors there as assistant text, says `is_error:false` and exits 0: the 401 turn
// still fails, with the error.
json_scenarios!(P, http_401: "invalid x-api-key", thinking, tool_runs_in: "yolo");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

/// Qwen Code answers `session/load` of an unknown id with a fresh session; the bridge must not.
#[test]
fn an_unknown_session_is_an_error() {
    unknown_session_is_an_error(P);
}

#[test]
fn json_unknown_session_is_an_error() {
    unknown_session_is_an_error(P.json());
}

/// A stream cut by an API error mid-answer: the partial text stays text, the error fails the
/// turn (Qwen Code exits 0 here too).
#[test]
fn json_midstream_error_is_surfaced_although_qwen_exits_0() {
    http_error_is_surfaced(P.json(), "midstream", "mid-stream");
}

#[test]
fn json_tool_is_refused_in_default_mode() {
    one_shot_tool_refused_in_default_mode(P.json());
}
