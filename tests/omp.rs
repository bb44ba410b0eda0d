//! `bridge omp send` end to end: the real oh-my-pi CLI (18.2.3, on bun 1.3.14, pinned by
//! tests/install-clis.sh) against the project's mock model server (Chat Completions), inside a
//! loopback-only network namespace. omp's model config (`~/.omp/agent/models.yml` in a scratch
//! HOME) points at the mock; the model is picked with the request's `model` (`mock/mock-model`).

mod common;

use std::sync::LazyLock;

use common::*;
use regex::Regex;
use serde_json::{Value, json};

const MODEL: &str = "mock/mock-model";

fn sandbox(mock: &Mock) -> Sandbox {
    let sandbox = Sandbox::new();
    write_omp_models(&sandbox, &mock.api_base());
    sandbox
}

fn request(sandbox: &Sandbox, message: &str, extra: Value) -> String {
    let base = json!({
        "message": message,
        "cwd": sandbox.work(),
        "model": MODEL,
        "permissionMode": "bypassPermissions",
    });
    request_with(base, extra)
}

fn run(sandbox: &Sandbox, args: &[&str], req: &str) -> String {
    let out = run_with_stdin(omp_command(sandbox, args), req);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

static CALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"call_[0-9a-f]{24}").unwrap());
/// omp's bash tool appends the command's wall time to its output.
static WALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"Wall time: [0-9.]+ seconds").unwrap());

/// The same figure as a streamed delta of the final text (`"0.19 "`).
static SECONDS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""[0-9]+\.[0-9]+ ""#).unwrap());

fn stable(text: String) -> String {
    let text = CALL.replace_all(&text, "call_[id]");
    let text = WALL.replace_all(&text, "Wall time: [t] seconds");
    SECONDS.replace_all(&text, r#""[t] ""#).into_owned()
}

fn scenario_both_formats(name: &str, mock: &Mock, prompt: &str, extra: Value) -> (String, String) {
    let run_once = |args: &[&str]| {
        let sandbox = sandbox(mock);
        let out = run(&sandbox, args, &request(&sandbox, prompt, extra.clone()));
        (out, sandbox)
    };
    snapshot_both_formats(name, run_once, stable)
}

#[test]
fn text_streams_deltas_and_ends_with_the_session_and_result() {
    let mock = Mock::start();
    let (markers, jsonl) = scenario_both_formats("text", &mock, "MOCK:text say hello", json!({}));
    assert!(
        markers.starts_with("[MESSAGE_START]\n[STREAM_START]\n[SESSION_ID] "),
        "{markers}"
    );
    let last = final_line(&markers);
    assert_eq!(last["success"], true, "{markers}");
    assert_eq!(content_text(&markers), "Hello from the mock model.");
    assert_eq!(last["result"], "Hello from the mock model.");
    let events = jsonl_events(&jsonl);
    assert_eq!(events.last().unwrap()["success"], true);
}

#[test]
fn thinking_streams_before_the_text_and_reasoning_effort_becomes_the_thinking_level() {
    let mock = Mock::start();
    let (markers, _) = scenario_both_formats(
        "thinking",
        &mock,
        "MOCK:thinking think first",
        json!({"reasoningEffort": "high"}),
    );
    let first_thinking = markers.find("[THINKING_DELTA]").expect("thinking deltas");
    let first_text = markers.find("[CONTENT_DELTA]").expect("text deltas");
    assert!(first_thinking < first_text);
    assert_eq!(final_line(&markers)["success"], true);
    let requests = mock.model_requests();
    assert!(!requests.is_empty());
    for r in requests {
        assert_eq!(r.body["reasoning_effort"], "high", "{}", r.body);
    }
}

#[test]
fn a_tool_call_runs_and_its_result_comes_back_before_the_final_text() {
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
    assert!(markers.lines().nth(result).unwrap().contains("hello"));
    assert_eq!(final_line(&markers)["success"], true);
    let events = jsonl_events(&jsonl);
    let tool = of_type(&events, "tool_use");
    assert_eq!(tool[0]["name"], "bash");
    assert_eq!(tool[0]["kind"], "execute");
    let result = of_type(&events, "tool_result");
    assert_eq!(result[0]["tool_use_id"], tool[0]["id"]);
    assert_eq!(result[0]["is_error"], false);
}

#[test]
fn sandbox_mode_offers_read_only_tools_and_refuses_the_rest() {
    let mock = Mock::start();
    let sandbox = sandbox(&mock);
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &sandbox,
            "MOCK:tool run it",
            json!({"permissionMode": "sandbox"}),
        ),
    );
    let mut tools: Vec<String> = mock.model_requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["glob", "grep", "read"], "{out}");
    // The mock still asks for a shell; omp refuses a tool it does not offer.
    let events = jsonl_events(&out);
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 1, "{out}");
    assert_eq!(results[0]["is_error"], true, "{out}");
}

#[test]
fn default_mode_keeps_omp_s_configuration_and_says_what_that_means() {
    let mock = Mock::start();
    let sandbox = sandbox(&mock);
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &sandbox,
            "MOCK:text hi",
            json!({"permissionMode": "default"}),
        ),
    );
    let events = jsonl_events(&out);
    let warnings: Vec<&Value> = of_type(&events, "warning")
        .into_iter()
        .filter(|w| w["code"] == "permission_mode")
        .collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot ask for approval")
    );
    assert_eq!(events.last().unwrap()["success"], true);
}

#[test]
fn resume_keeps_the_session_and_the_model_sees_the_earlier_turn() {
    let mock = Mock::start();
    let sandbox = sandbox(&mock);
    let first = run(
        &sandbox,
        &[],
        &request(&sandbox, "MOCK:text first turn", json!({})),
    );
    let session = final_line(&first)["sessionId"]
        .as_str()
        .expect("first turn reports its session")
        .to_string();
    let second = run(
        &sandbox,
        &[],
        &request(
            &sandbox,
            "MOCK:recall what did I say?",
            json!({"sessionId": session}),
        ),
    );
    let last = final_line(&second);
    assert_eq!(last["success"], true, "{second}");
    assert_eq!(last["sessionId"], session.as_str());
    let text = content_text(&second);
    assert!(
        text.contains("first turn"),
        "the model did not see turn 1: {text}"
    );
}

#[test]
fn an_unknown_session_is_a_failure_with_omp_s_message() {
    let mock = Mock::start();
    let sandbox = sandbox(&mock);
    let out = run(
        &sandbox,
        &[],
        &request(
            &sandbox,
            "MOCK:text hi",
            json!({"sessionId": "99999999-nope"}),
        ),
    );
    let error = out
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(
        error.contains(r#"Session \"99999999-nope\" not found"#),
        "{error}"
    );
    assert_eq!(final_line(&out)["success"], false);
}

#[test]
fn an_http_error_is_a_failure_with_the_provider_s_message() {
    let mock = Mock::start();
    let (markers, jsonl) = scenario_both_formats("err401", &mock, "MOCK:err401 hi", json!({}));
    let last = final_line(&markers);
    assert_eq!(last["success"], false, "{markers}");
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .starts_with("401 invalid x-api-key"),
        "{last}"
    );
    let events = jsonl_events(&jsonl);
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1);
    // omp exits 1 here; the stream's own message is what is reported.
    assert_eq!(errors[0]["code"], "provider");
}

#[test]
fn without_bun_the_turn_fails_saying_how_to_install_it() {
    let sandbox = Sandbox::new();
    // A PATH with the omp launcher but no bun, and a HOME without ~/.bun.
    let launcher_dir = sandbox.root().join("omp-only");
    std::fs::create_dir_all(&launcher_dir).unwrap();
    let omp = launcher_dir.join("omp");
    std::os::unix::fs::symlink(cli_path("omp"), &omp).unwrap();
    let mut cmd = bridge();
    cmd.env_clear()
        .args(["omp", "send"])
        .env("PATH", format!("{}:/usr/bin:/bin", launcher_dir.display()))
        .env("HOME", sandbox.home())
        .env("OMP_BIN", &omp)
        .current_dir(sandbox.work());
    let out = run_with_stdin(cmd, &json!({"message": "hi"}).to_string());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let error = stdout
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(error.contains("needs `bun` on PATH"), "{error}");
    assert!(error.contains("npm i -g bun@1.3.14"), "{error}");
}
