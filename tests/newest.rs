//! The second tested version of each CLI (tests/install-clis.sh) passes the core end-to-end
//! scenarios against the project's mock: a text turn, a tool that runs, a resumed turn that sees
//! the first one, and an HTTP 401 reported as a failure. The second version is the newest where
//! it is newer than the pinned (`newest` rows: Claude Code 2.1.332, Qwen Code 0.24.4), else the
//! release before the pinned one, which is the newest in the registry (`previous` rows: Codex
//! 0.169.1, Gemini CLI 0.60.0, Copilot CLI 1.0.92, opencode 1.18.32, pi 0.73.0), so both ends of
//! each provider's declared tested range run. The rest of the e2e suite runs on the pinned
//! versions; the replay snapshots cover both (`tests/corpus`).
//!
//! The CLI's bin dir (`BRIDGE_NEWEST_<BIN>` or `BRIDGE_PREVIOUS_<BIN>` in the installer's
//! path.env, which scripts/test sources) goes first on PATH, so the bridge finds it as a user's
//! install. Each test is a process of its own (nextest runs them in parallel).

mod common;

use std::process::Command;

use common::acp::{Provider, acp_command};
use common::*;
use serde_json::{Value, json};

/// Which second version a test runs: the installer row's word.
#[derive(Clone, Copy)]
enum Second {
    Newest,
    Previous,
}

/// Puts the second version of `bin`'s directory first on PATH for this test process (nextest
/// runs each test in a process of its own).
fn use_second(bin: &str, which: Second) {
    require_loopback_only_network();
    let kind = match which {
        Second::Newest => "NEWEST",
        Second::Previous => "PREVIOUS",
    };
    let var = format!(
        "BRIDGE_{kind}_{}",
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

fn use_newest(bin: &str) {
    use_second(bin, Second::Newest);
}

fn use_previous(bin: &str) {
    use_second(bin, Second::Previous);
}

/// One provider's core scenarios; `command` builds `bridge <provider> send` for a sandbox.
fn core_scenarios(command: impl Fn(&Sandbox, &Mock) -> Command, tool_mode: &str) {
    core_scenarios_with(command, tool_mode, |_, _| json!({}));
}

/// [`core_scenarios`] with `fields` (model, endpoint, cwd: what the provider's requests carry)
/// added to every request.
fn core_scenarios_with(
    command: impl Fn(&Sandbox, &Mock) -> Command,
    tool_mode: &str,
    fields: impl Fn(&Sandbox, &Mock) -> Value,
) {
    let mock = Mock::start();
    let run = |sandbox: &Sandbox, request: Value| -> String {
        let request = request_with(request, fields(sandbox, &mock));
        let out = run_with_stdin(command(sandbox, &mock), &request);
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
    // Codex names its session a thread (`threadId`, in the result and in the request).
    let key = match last.get("threadId") {
        Some(_) => "threadId",
        None => "sessionId",
    };
    let session = last[key]
        .as_str()
        .unwrap_or_else(|| panic!("text: no session id in {text}"))
        .to_string();

    let resumed = run(
        &sandbox,
        json!({"message": "MOCK:recall what did I say?", "permissionMode": "default", key: session}),
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

#[test]
fn codex_previous_passes_the_core_scenarios() {
    use_previous("codex");
    core_scenarios_with(
        |sandbox, _| codex_command(sandbox, &[]),
        "bypassPermissions",
        |sandbox, mock| json!({"cwd": sandbox.work(), "model": "gpt-5.5", "baseUrl": mock.api_base(), "apiKey": CANARY_KEY}),
    );
}

/// In its json transport: over ACP Gemini CLI reports a shell call's output only in the text
/// (the tool result is empty), and resumed turns run on the json transport anyway.
#[test]
fn gemini_previous_passes_the_core_scenarios_in_its_json_mode() {
    use_previous("gemini");
    core_scenarios(
        |sandbox, mock| acp_command(Provider::Gemini.json(), sandbox, &mock.url(), &[]),
        "yolo",
    );
}

#[test]
fn copilot_previous_passes_the_core_scenarios_in_its_json_mode() {
    use_previous("copilot");
    core_scenarios(
        |sandbox, mock| acp_command(Provider::Copilot.json(), sandbox, &mock.url(), &[]),
        "bypassPermissions",
    );
}

#[test]
fn opencode_previous_passes_the_core_scenarios_in_its_json_mode() {
    use_previous("opencode");
    core_scenarios(
        |sandbox, mock| acp_command(Provider::Opencode.json(), sandbox, &mock.url(), &[]),
        "bypassPermissions",
    );
}

#[test]
fn pi_previous_passes_the_core_scenarios() {
    use_previous("pi");
    core_scenarios_with(
        |sandbox, mock| {
            write_pi_models(sandbox, &mock.api_base());
            pi_command(sandbox, &[])
        },
        "bypassPermissions",
        |sandbox, _| json!({"cwd": sandbox.work(), "model": common::pi_family::PI_FAMILY_MODEL}),
    );
}
