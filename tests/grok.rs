//! `bridge grok send` end to end: a `grok` executable that runs a real ACP agent (`qwen --acp`,
//! fed the key and endpoint the grok channel sets in `XAI_API_KEY` / `GROK_BASE_URL`; xAI's binary
//! is in no reachable registry) against the project's mock Chat Completions API, inside a
//! loopback-only network namespace. The scenarios are shared by every ACP provider
//! (tests/common/acp.rs).

mod common;

use common::acp::*;

const P: Provider = Provider::Grok;

acp_scenarios!(P, http_401: "invalid x-api-key");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

#[test]
fn an_unknown_session_is_a_clear_error() {
    common::acp::unknown_session_is_an_error(P);
}
