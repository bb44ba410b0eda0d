//! `bridge kimi send` end to end: the real Kimi CLI (`kimi acp`, PyPI kimi-cli 1.51.0) against the project's mock OpenAI Chat Completions API, inside a loopback-only network namespace. The
//! scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::Sandbox;
use common::acp::*;
use serde_json::json;

const P: Provider = Provider::Kimi;

acp_scenarios!(P, http_401: "invalid x-api-key");

// The same provider through `kimi --print --output-format stream-json` (`--transport json`),
// run WITHOUT the placeholder Kimi Code login: print mode works with the API-key provider in
// ~/.kimi/config.toml alone.
json_scenarios!(P, http_401: "invalid x-api-key", thinking, tool_runs_in: "yolo");

#[test]
fn resume_sees_the_earlier_turn() {
    common::acp::resume_sees_the_earlier_turn(P);
}

/// kimi would start a new, empty session under an id it does not have (exit 0): the bridge
/// looks for the session where kimi keeps it and refuses the resume instead.
#[test]
fn json_unknown_session_is_an_error() {
    unknown_session_is_an_error(P.json());
}

/// kimi exits 75 after its retries of a 500: a failure with the API's message.
#[test]
fn json_exit_75_after_an_api_error_is_never_success() {
    http_error_is_surfaced(P.json(), "err500", "Error code: 500");
}

#[test]
fn json_read_only_mode_runs_an_agent_without_the_shell() {
    let out = one_shot_tool_refused(P.json(), "sandbox");
    assert!(
        out.contains("not found"),
        "the shell was not offered: {out}"
    );
}

/// Without a Kimi Code login, a request that names no transport runs in print mode (and says
/// why) when its mode loses nothing there; a `default`-mode one stays on ACP, which fails with a
/// message that points at `--transport json`.
#[test]
fn without_a_login_print_mode_is_used_when_safe_and_acp_points_at_it() {
    let mock = Mock::start();
    let login = |sandbox: &Sandbox| sandbox.home().join(".kimi/credentials/kimi-code.json");
    let run = |mode: &str, format: &str| {
        let sandbox = Sandbox::new();
        let cmd = acp_command(P, &sandbox, &mock.url(), &["--format", format]);
        std::fs::remove_file(login(&sandbox)).unwrap();
        let request = json!({"message": "MOCK:text hi", "permissionMode": mode});
        let out = common::run_with_stdin(cmd, &request.to_string());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run("yolo", "jsonl");
    let warning = out
        .lines()
        .find(|l| l.contains(r#""code":"transport""#))
        .unwrap_or_else(|| panic!("the routing is reported: {out}"));
    assert!(warning.contains("--transport json"), "{warning}");
    assert!(
        out.lines().last().unwrap().contains(r#""success":true"#),
        "{out}"
    );

    let out = run("default", "markers");
    let error = out
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .unwrap_or_else(|| panic!("ACP without a login fails: {out}"));
    assert!(
        error.contains("requires authentication") && error.contains("--transport json"),
        "{error}"
    );
}
