//! The newest version of each CLI that has a newer one than the pinned (`newest` rows of
//! tests/install-clis.sh: Claude Code 2.1.332, Qwen Code 0.24.4) passes the core
//! end-to-end scenarios against the project's mock: a text turn, a tool that runs, a resumed
//! turn that sees the first one, and an HTTP 401 reported as a failure. The rest of the e2e
//! suite runs on the pinned versions; the replay snapshots cover both (`tests/corpus`).
//!
//! The newest CLI's bin dir (`BRIDGE_NEWEST_<BIN>` in the installer's path.env, which
//! scripts/test sources) goes first on PATH, so the bridge finds it as a user's install.

mod common;

use std::process::Command;

use common::acp::{Provider, acp_command};
use common::*;
use serde_json::{Value, json};

/// Puts the newest `bin`'s directory first on PATH for this test process (nextest runs each
/// test in a process of its own) and returns the version it reports.
fn use_newest(bin: &str) {
    require_loopback_only_network();
    let var = format!(
        "BRIDGE_NEWEST_{}",
        bin.to_ascii_uppercase().replace('-', "_")
    );
    let dir = std::env::var_os(&var).unwrap_or_else(|| {
        panic!("{var} is not set: run tests/install-clis.sh and source its path.env (scripts/test does)")
    });
    let mut path = dir.clone();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    // SAFETY: one test per process; no other thread reads the environment yet.
    unsafe { std::env::set_var("PATH", path) };
    assert!(
        cli_path(bin).starts_with(&dir),
        "{bin} resolves to {} instead of {}",
        cli_path(bin).display(),
        dir.to_string_lossy()
    );
}

/// One provider's core scenarios; `command` builds `bridge <provider> send` for a sandbox.
fn core_scenarios(command: impl Fn(&Sandbox, &Mock) -> Command, tool_mode: &str) {
    let mock = Mock::start();
    let run = |sandbox: &Sandbox, request: Value| -> String {
        let out = run_with_stdin(command(sandbox, &mock), &request.to_string());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let sandbox = Sandbox::new();
    let text = run(
        &sandbox,
        json!({"message": "MOCK:text first turn", "permissionMode": "default"}),
    );
    let last = final_line(&text);
    assert_eq!(last["success"], true, "text: {text}");
    assert_eq!(last["result"], "Hello from the mock model.", "text: {text}");
    assert_eq!(content_text(&text), "Hello from the mock model.", "{text}");
    let session = last["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();

    let resumed = run(
        &sandbox,
        json!({"message": "MOCK:recall what did I say?", "permissionMode": "default", "sessionId": session}),
    );
    let last = final_line(&resumed);
    assert_eq!(last["success"], true, "resume: {resumed}");
    assert!(
        last["result"]
            .as_str()
            .is_some_and(|r| r.contains("first turn")),
        "the resumed turn sees the first one: {resumed}"
    );

    let tool = run(
        &Sandbox::new(),
        json!({"message": "MOCK:tool run it", "permissionMode": tool_mode}),
    );
    let result = tool
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .unwrap_or_else(|| panic!("tool: no tool result in {tool}"));
    assert!(result.contains("hello"), "tool: {result}");
    // What the model gets back differs between versions (Qwen Code 0.24.4 sends
    // "Command: echo hello\nDirectory: …\nOutput: hello…", 0.15.10 just "hello"): the mock
    // echoes it after this prefix. ACP's result is the turn's whole text (the text before the
    // tool call too).
    let answer = final_line(&tool)["result"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let echoed = answer
        .split_once("Tool finished. Output was: ")
        .map(|(_, rest)| rest);
    assert!(
        echoed.is_some_and(|rest| rest.contains("hello")),
        "tool: {tool}"
    );

    let error = run(
        &Sandbox::new(),
        json!({"message": "MOCK:err401 hi", "permissionMode": "default"}),
    );
    assert!(
        error.lines().any(|l| l.starts_with("[SEND_ERROR] ")),
        "401: {error}"
    );
    assert_eq!(final_line(&error)["success"], false, "401: {error}");
}

#[test]
fn claude_newest_passes_the_core_scenarios() {
    use_newest("claude");
    core_scenarios(
        |sandbox, mock| claude_command(sandbox, &mock.url(), &[]),
        "bypassPermissions",
    );
}

#[test]
fn qwen_newest_passes_the_core_scenarios_over_acp() {
    use_newest("qwen");
    core_scenarios(
        |sandbox, mock| acp_command(Provider::Qwen, sandbox, &mock.url(), &[]),
        "bypassPermissions",
    );
}

#[test]
fn qwen_newest_passes_the_core_scenarios_in_its_json_mode() {
    use_newest("qwen");
    core_scenarios(
        |sandbox, mock| acp_command(Provider::Qwen.json(), sandbox, &mock.url(), &[]),
        "yolo",
    );
}
