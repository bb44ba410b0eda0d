//! `bridge grok-cli send` end to end: the real community Grok CLI (`@vibe-kit/grok-cli` 0.0.34,
//! installed as `grok-cli` by tests/install-clis.sh) against the project's mock model server
//! (Chat Completions, non-streaming: the CLI prints everything at exit), inside a loopback-only
//! network namespace. The mock's URL, the model and the canary key travel in the request
//! (`baseUrl`, `model`, `apiKey`), as a plugin sends them.
//!
//! What the CLI cannot do (no sessions, no read-only mode, no reasoning, no images) is tested
//! as what the channel does about it.

mod common;

use std::sync::LazyLock;

use common::*;
use regex::Regex;
use serde_json::{Value, json};

fn request(mock: &Mock, sandbox: &Sandbox, message: &str, extra: Value) -> String {
    let base = json!({
        "message": message,
        "cwd": sandbox.work(),
        "model": "mock-model",
        "baseUrl": format!("{}/v1", mock.server.base_url()),
        "apiKey": CANARY_KEY,
        "permissionMode": "bypassPermissions",
    });
    request_with(base, extra)
}

fn run(sandbox: &Sandbox, args: &[&str], req: &str) -> String {
    let out = run_with_stdin(grok_cli_command(sandbox, args), req);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

static CALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"call_[0-9a-f]{24}").unwrap());

fn stable(text: String) -> String {
    CALL.replace_all(&text, "call_[id]").into_owned()
}

fn scenario_both_formats(name: &str, mock: &Mock, prompt: &str, extra: Value) -> (String, String) {
    let run_once = |args: &[&str]| {
        let sandbox = Sandbox::new();
        let out = run(
            &sandbox,
            args,
            &request(mock, &sandbox, prompt, extra.clone()),
        );
        (out, sandbox)
    };
    snapshot_both_formats(name, run_once, stable)
}

#[test]
fn text_arrives_whole_and_ends_with_the_result() {
    let mock = Mock::start();
    let (markers, jsonl) = scenario_both_formats("text", &mock, "MOCK:text say hello", json!({}));
    assert_eq!(content_text(&markers), "Hello from the mock model.");
    let last = final_line(&markers);
    assert_eq!(last["success"], true, "{markers}");
    assert_eq!(last["result"], "Hello from the mock model.");
    assert!(last.get("sessionId").is_none(), "grok-cli has no sessions");
    let events = jsonl_events(&jsonl);
    assert_eq!(of_type(&events, "text").len(), 1);
    assert!(of_type(&events, "text_delta").is_empty());
    // The request's baseUrl and model reached the CLI.
    let requests = mock.model_requests();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.body["model"] == "mock-model"));
}

#[test]
fn a_tool_call_runs_and_its_result_comes_before_the_final_text() {
    let mock = Mock::start();
    let (markers, jsonl) = scenario_both_formats("tool", &mock, "MOCK:tool run it", json!({}));
    let tool_use = markers
        .lines()
        .position(|l| l.starts_with("[MESSAGE] ") && l.contains(r#""type":"tool_use""#))
        .expect("a Claude-shaped tool_use message");
    let result = markers
        .lines()
        .position(|l| l.starts_with("[TOOL_RESULT] "))
        .expect("a tool result");
    assert!(tool_use < result);
    assert_eq!(
        final_line(&markers)["result"],
        "Tool finished. Output was: hello"
    );
    let events = jsonl_events(&jsonl);
    let tool = of_type(&events, "tool_use");
    assert_eq!(tool[0]["name"], "bash");
    assert_eq!(tool[0]["input"]["command"], "echo hello");
    assert_eq!(of_type(&events, "tool_result")[0]["content"], "hello");
}

#[test]
fn an_http_error_is_a_failure_although_the_cli_exits_zero() {
    let mock = Mock::start();
    let (markers, jsonl) = scenario_both_formats("err401", &mock, "MOCK:err401 hi", json!({}));
    let last = final_line(&markers);
    assert_eq!(last["success"], false, "{markers}");
    assert_eq!(last["error"], "Grok API error: 401 invalid x-api-key");
    let events = jsonl_events(&jsonl);
    assert_eq!(of_type(&events, "error")[0]["code"], "provider");

    // The CLI itself, run the same way, exits 0 on it.
    let sandbox = Sandbox::new();
    let mut direct = std::process::Command::new(cli_path("grok-cli"));
    direct
        .arg("--prompt=MOCK:err401 hi")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("GROK_BASE_URL", format!("{}/v1", mock.server.base_url()))
        .env("GROK_API_KEY", CANARY_KEY)
        .env("GROK_MODEL", "mock-model")
        .current_dir(sandbox.work());
    let out = run_with_stdin(direct, "");
    assert!(
        out.status.success(),
        "grok-cli exits 0 after an API error: {:?}",
        out.status
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Sorry, I encountered an error"));
}

#[test]
fn reasoning_is_dropped_by_the_cli_and_reported() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &mock,
            &sandbox,
            "MOCK:thinking think first",
            json!({"reasoningEffort": "high"}),
        ),
    );
    let events = jsonl_events(&out);
    assert!(of_type(&events, "thinking_delta").is_empty());
    assert!(
        of_type(&events, "warning")
            .iter()
            .any(|w| w["code"] == "reasoning_effort"),
        "{out}"
    );
    assert_eq!(events.last().unwrap()["result"], "After thinking: hello!");
}

#[test]
fn default_mode_runs_and_says_everything_is_auto_approved() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &mock,
            &sandbox,
            "MOCK:text hi",
            json!({"permissionMode": "default"}),
        ),
    );
    let events = jsonl_events(&out);
    let warning = of_type(&events, "warning")
        .into_iter()
        .find(|w| w["code"] == "permission_mode")
        .expect("a permission_mode warning");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("auto-approves every operation")
    );
    assert_eq!(events.last().unwrap()["success"], true);
}

#[test]
fn resume_and_read_only_modes_are_refused_before_anything_runs() {
    let mock = Mock::start();
    for (extra, needle) in [
        (json!({"sessionId": "abc-123"}), "cannot resume"),
        (json!({"permissionMode": "sandbox"}), "no read-only mode"),
        (json!({"permissionMode": "plan"}), "no read-only mode"),
    ] {
        let sandbox = Sandbox::new();
        let out = run(
            &sandbox,
            &[],
            &request(&mock, &sandbox, "MOCK:text hi", extra.clone()),
        );
        let error = out
            .lines()
            .find(|l| l.starts_with("[SEND_ERROR] "))
            .unwrap_or_else(|| panic!("{extra}: no send error in {out}"));
        assert!(error.contains(needle), "{extra}: {error}");
        assert_eq!(final_line(&out)["success"], false);
    }
    assert!(
        mock.model_requests().is_empty(),
        "nothing reached the model"
    );
}
