//! `bridge copilot send` end to end: the real GitHub Copilot CLI (BYOK offline) against the
//! project's mock OpenAI Chat Completions API, inside a loopback-only network namespace, over
//! both transports: ACP (`copilot --acp --stdio`, the default) and the one-shot JSONL mode
//! (`--transport json`). The scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Copilot;

acp_scenarios!(P, http_401: "HTTP 401");

// `--transport json`: `copilot --output-format json`.
json_scenarios!(P, http_401: "HTTP 401", thinking, tool_runs_in: "yolo");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

#[test]
fn json_unknown_session_is_an_error() {
    unknown_session_is_an_error(P.json());
}

#[test]
fn json_tool_is_denied_in_default_mode() {
    one_shot_tool_refused_in_default_mode(P.json());
}
