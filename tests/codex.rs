//! `bridge codex send --transport exec` end to end: the real Codex CLI (0.171.0, pinned by
//! tests/install-clis.sh) against the project's mock model server (OpenAI Responses dialect),
//! inside a loopback-only network namespace. The default transport, `codex app-server`, has its
//! own tests (tests/codex_app_server.rs).
//!
//! The mock's URL and a canary key go in the request (`baseUrl`, `apiKey`), as the plugin sends
//! them; the channel turns them into a Codex model provider. The model is `gpt-5.5`, a slug Codex
//! bundles metadata for (an unknown slug adds a warning item and changes the tool set).

mod common;

use std::sync::LazyLock;

use common::*;
use regex::Regex;
use serde_json::{Value, json};

const MODEL: &str = "gpt-5.5";

/// The model requests Codex made (its Responses API calls).
fn responses(mock: &Mock) -> Vec<mock_llm::LoggedRequest> {
    mock.server
        .requests()
        .into_iter()
        .filter(|r| r.path_only() == "/v1/responses")
        .collect()
}

/// `bridge codex send --transport exec …`.
fn exec_command(sandbox: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut all = vec!["--transport", "exec"];
    all.extend_from_slice(args);
    codex_command(sandbox, &all)
}

fn request(mock: &Mock, sandbox: &Sandbox, message: &str, extra: Value) -> String {
    codex_request(mock, sandbox, message, extra)
}

fn run(sandbox: &Sandbox, args: &[&str], req: &str) -> (String, std::process::Output) {
    let out = run_with_stdin(exec_command(sandbox, args), req);
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

static TOOL_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"codex_[0-9a-f]{8}_((item|call|ws)_[0-9a-zA-Z_]+)").unwrap());
static CALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"call_[0-9a-f]{24}").unwrap());
static WS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"ws_[0-9a-f]{24}").unwrap());
static PORT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"127\.0\.0\.1:\d+").unwrap());

static SHELL_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[turn\]_(item_\d+|call_\[id\])").unwrap());

/// The common views plus Codex's ids: the per-turn tool-id prefix, call ids, the mock's port.
/// Tool ids become `[turn]_[tool]`: Codex 0.171 sometimes prints no `command_execution` item for
/// a command that fails at once, and the bridge then shows it from the rollout under the call id
/// instead of the item id.
fn stable(text: String) -> String {
    let text = TOOL_ID.replace_all(&text, "[turn]_$1");
    let text = CALL.replace_all(&text, "call_[id]");
    let text = WS.replace_all(&text, "ws_[id]");
    let text = SHELL_ID.replace_all(&text, "[turn]_[tool]");
    PORT.replace_all(&text, "[mock]").into_owned()
}

/// Runs one scenario in both formats and snapshots what a plugin / integrator would see.
fn scenario_both_formats(name: &str, prompt: &str, extra: Value) -> (String, String) {
    let mock = Mock::start();
    let run_once = |args: &[&str]| {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
        let (out, _) = run(
            &sandbox,
            args,
            &request(&mock, &sandbox, prompt, extra.clone()),
        );
        (out, sandbox)
    };
    snapshot_both_formats(name, run_once, stable)
}

#[test]
fn text_ends_with_the_thread_id_and_the_last_agent_message() {
    let (markers, jsonl) = scenario_both_formats("text", "MOCK:text say hello", json!({}));
    assert!(
        markers.starts_with("[MESSAGE_START]\n[STREAM_START]\n[THREAD_ID] "),
        "{markers}"
    );
    let last = final_line(&markers);
    assert_eq!(last["success"], true);
    assert_eq!(last["result"], "Hello from the mock model.");
    assert!(
        last["threadId"].as_str().is_some_and(|s| s.len() == 36),
        "{last}"
    );
    assert_eq!(content_text(&markers), "Hello from the mock model.");
    // The usage of the turn in Codex's convention, which the plugin's Codex handler expects:
    // `input_tokens` counts the cached tokens too (the handler subtracts them again).
    assert!(markers.contains(r#"[MESSAGE] {"type":"result","subtype":"usage","is_error":false,"usage":{"input_tokens":1200,"output_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000}}"#), "{markers}");
    let events = jsonl_events(&jsonl);
    let end = events.last().unwrap();
    assert_eq!(end["type"], "turn_end");
    assert_eq!(end["success"], true);
    assert_eq!(of_type(&events, "text").len(), 1);
}

#[test]
fn reasoning_summary_comes_before_the_text() {
    let (markers, _) = scenario_both_formats("thinking", "MOCK:thinking think first", json!({}));
    let thinking = markers.find("[THINKING_DELTA]").expect("thinking");
    let text = markers.find("[CONTENT_DELTA]").expect("text");
    assert!(thinking < text, "{markers}");
    assert!(markers.contains("Let me think about this step by step."));
    assert_eq!(final_line(&markers)["result"], "After thinking: hello!");
}

#[test]
fn shell_call_is_a_bash_tool_use_with_its_output_then_the_final_text() {
    let (markers, jsonl) = scenario_both_formats("tool", "MOCK:tool run it", json!({}));
    let tool_use = markers
        .lines()
        .find(|l| l.starts_with("[MESSAGE] ") && l.contains(r#""type":"tool_use""#))
        .expect("a Claude-shaped tool_use message");
    assert!(
        tool_use.contains(
            r#""name":"Bash","input":{"command":"echo hello","description":"echo hello"}"#
        ),
        "{tool_use}"
    );
    let result = markers
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .expect("a tool result");
    assert!(
        result.contains(r#""content":"hello\n","is_error":false"#),
        "{result}"
    );
    assert_eq!(
        final_line(&markers)["result"],
        "Tool finished. Output was: hello"
    );
    let events = jsonl_events(&jsonl);
    let uses = of_type(&events, "tool_use");
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0]["kind"], "execute");
    let results = of_type(&events, "tool_result");
    assert_eq!(results[0]["tool_use_id"], uses[0]["id"]);
}

#[test]
fn apply_patch_is_an_edit_and_a_write_with_the_diff() {
    let (markers, jsonl) = scenario_both_formats("patch", "MOCK:patch change it", json!({}));
    let events = jsonl_events(&jsonl);
    let uses = of_type(&events, "tool_use");
    assert_eq!(uses.len(), 2, "{jsonl}");
    let edit = uses.iter().find(|u| u["name"] == "Edit").expect("an Edit");
    assert_eq!(edit["input"]["old_string"], "hello");
    assert_eq!(edit["input"]["new_string"], "hello, patched");
    assert_eq!(edit["diff"]["new_text"], "hello, patched");
    let write = uses.iter().find(|u| u["name"] == "Write").expect("a Write");
    assert_eq!(write["input"]["content"], "patched by mock\n");
    assert!(
        write["input"]["file_path"]
            .as_str()
            .unwrap()
            .ends_with("/work/mock-patch.txt")
    );
    assert!(
        of_type(&events, "tool_result")
            .iter()
            .all(|r| r["is_error"] == false)
    );
    assert!(
        markers.contains(r#""name":"Edit","input":{"file_path":"#),
        "{markers}"
    );
}

#[test]
fn update_plan_is_rendered_as_a_todo_list() {
    let (markers, jsonl) = scenario_both_formats("plan", "MOCK:plan make a plan", json!({}));
    let events = jsonl_events(&jsonl);
    let todo = of_type(&events, "tool_use")
        .into_iter()
        .find(|u| u["name"] == "TodoWrite")
        .expect("a plan");
    assert_eq!(todo["kind"], "think");
    assert_eq!(
        todo["input"]["todos"][0]["content"],
        "Create mock-plan.txt containing 'planned'."
    );
    assert_eq!(todo["input"]["todos"][1]["content"], "Report the result.");
    assert_eq!(
        final_line(&markers)["result"],
        "Tool finished. Output was: Plan updated"
    );
}

#[test]
fn web_search_is_rendered() {
    let (markers, jsonl) =
        scenario_both_formats("websearch", "MOCK:websearch look it up", json!({}));
    let events = jsonl_events(&jsonl);
    let search = of_type(&events, "tool_use")
        .into_iter()
        .find(|u| u["name"] == "WebSearch")
        .expect("a web search");
    assert_eq!(search["input"]["query"], "rust async traits");
    assert_eq!(search["kind"], "fetch");
    assert_eq!(final_line(&markers)["success"], true);
}

#[test]
fn http_errors_surface_the_cli_message() {
    for (scenario, needle) in [
        ("err401", "401 Unauthorized"),
        ("err429", "429 Too Many Requests"),
        ("err500", "high demand"),
    ] {
        let (markers, jsonl) =
            scenario_both_formats(scenario, &format!("MOCK:{scenario} hi"), json!({}));
        let errors: Vec<&str> = markers
            .lines()
            .filter(|l| l.starts_with("[SEND_ERROR] "))
            .collect();
        assert_eq!(errors.len(), 1, "{scenario}: {markers}");
        assert!(errors[0].contains(needle), "{scenario}: {}", errors[0]);
        let last = final_line(&markers);
        assert_eq!(last["success"], false, "{scenario}");
        assert!(last["threadId"].is_string(), "{scenario}: {last}");
        assert!(markers.contains("[STREAM_END]\n[MESSAGE_END]\n"));
        let events = jsonl_events(&jsonl);
        assert_eq!(of_type(&events, "error").len(), 1, "{scenario}: {jsonl}");
        assert_eq!(events.last().unwrap()["success"], false);
    }
}

#[test]
fn http_errors_exit_codes() {
    // Markers with a stdin request: the failure was reported in-band (ai-bridge behaviour), exit
    // 0; JSONL: exit 1.
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (_, out) = run(
        &sandbox,
        &[],
        &request(&mock, &sandbox, "MOCK:err401 hi", json!({})),
    );
    assert_eq!(out.status.code(), Some(0));
    let (_, out) = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(&mock, &sandbox, "MOCK:err401 hi", json!({})),
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn response_failed_and_dropped_streams_are_errors_never_successes() {
    for (scenario, needle) in [
        ("midstream", "Overloaded (mid-stream)"),
        // Cut: the connection drops mid-item (a broken chunked body). Drop: the stream ends
        // cleanly, but without `response.completed`.
        ("cut", "error decoding response body"),
        ("drop", "stream closed before response.completed"),
    ] {
        let (markers, jsonl) =
            scenario_both_formats(scenario, &format!("MOCK:{scenario} go"), json!({}));
        let last = final_line(&markers);
        assert_eq!(last["success"], false, "{scenario}: {markers}");
        assert!(
            last["error"].as_str().unwrap().contains(needle),
            "{scenario}: {last}"
        );
        assert_eq!(markers.matches("[SEND_ERROR]").count(), 1, "{scenario}");
        assert_eq!(jsonl_events(&jsonl).last().unwrap()["success"], false);
        if scenario == "drop" {
            // Codex shows the message it got before the drop; the turn still failed.
            assert_eq!(content_text(&markers), "Hello from the mock model.");
        }
    }
}

#[test]
fn a_dropped_stream_that_codex_retries_reports_the_reconnect() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = exec_command(&sandbox, &["--format", "jsonl"]);
    cmd.env("BRIDGE_CODEX_MAX_RETRIES", "1");
    let out = run_with_stdin(cmd, &request(&mock, &sandbox, "MOCK:cut go", json!({})));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = jsonl_events(&stdout);
    let statuses = of_type(&events, "status");
    assert_eq!(statuses.len(), 1, "{stdout}");
    assert_eq!(statuses[0]["kind"], "reconnect");
    assert_eq!(statuses[0]["attempt"], 1);
    assert_eq!(statuses[0]["max_attempts"], 1);
    assert_eq!(events.last().unwrap()["success"], false);
    assert_eq!(responses(&mock).len(), 2, "one retry");
}

#[test]
fn resume_continues_the_thread_and_reports_only_this_turns_usage() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (first, _) = run(
        &sandbox,
        &[],
        &request(&mock, &sandbox, "MOCK:text first turn", json!({})),
    );
    let thread = final_line(&first)["threadId"]
        .as_str()
        .expect("first turn reports its thread")
        .to_string();
    // The plugin sends `threadId` on resume; the channel passes no `-C` then.
    let (second, _) = run(
        &sandbox,
        &[],
        &request(
            &mock,
            &sandbox,
            "MOCK:recall what did I say?",
            json!({"threadId": thread}),
        ),
    );
    let last = final_line(&second);
    assert_eq!(last["success"], true, "{second}");
    assert_eq!(last["threadId"], thread.as_str());
    assert!(second.contains(&format!("[THREAD_ID] {thread}\n")));
    let text = last["result"].as_str().unwrap();
    assert!(
        text.contains("first turn"),
        "the model did not see turn 1: {text}"
    );
    // Codex reports the thread's running total; the bridge reports this turn's (input with
    // the cached tokens, Codex's convention).
    assert!(second.contains(r#""usage":{"input_tokens":1200,"output_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000}"#), "{second}");
    insta::assert_snapshot!("resume.markers", stable(markers_view(&second, &sandbox)));

    let (third, _) = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &mock,
            &sandbox,
            "MOCK:recall and now?",
            json!({"threadId": thread}),
        ),
    );
    let events = jsonl_events(&third);
    let end = events.last().unwrap();
    assert_eq!(end["success"], true, "{third}");
    assert_eq!(end["session_id"], thread.as_str());
    assert_eq!(of_type(&events, "session_id")[0]["id"], thread.as_str());
    let usage = of_type(&events, "usage");
    assert_eq!(usage[0]["input_tokens"], 200, "{third}");
    assert_eq!(usage[0]["cache_read_input_tokens"], 1000);
    assert_eq!(usage[0]["output_tokens"], 40);
    let requests = responses(&mock);
    let last_input = requests.last().unwrap().body["input"].to_string();
    assert!(last_input.contains("first turn") && last_input.contains("what did I say?"));
    insta::assert_snapshot!("resume.jsonl", stable(jsonl_view(&third, &sandbox)));
}

#[test]
fn unknown_thread_id_is_a_clear_error() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (stdout, _) = run(
        &sandbox,
        &[],
        &request(
            &mock,
            &sandbox,
            "MOCK:text hi",
            json!({"threadId": "00000000-0000-0000-0000-000000000000"}),
        ),
    );
    let error = stdout
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(error.contains("no rollout found for thread id"), "{error}");
    assert!(!error.contains("Stack backtrace"), "{error}");
    assert_eq!(final_line(&stdout)["success"], false);
    assert!(responses(&mock).is_empty());
}

#[test]
fn read_only_sandbox_refuses_a_shell_write_and_says_so() {
    // The command runs and fails inside the sandbox.
    let (markers, jsonl) = scenario_both_formats(
        "readonly-shell",
        "MOCK:danger create a file",
        json!({"permissionMode": "sandbox"}),
    );
    for out in [&markers, &jsonl] {
        assert!(out.contains("Read-only file system"), "{out}");
    }
    let events = jsonl_events(&jsonl);
    let result = *of_type(&events, "tool_result")
        .first()
        .unwrap_or_else(|| panic!("no tool result: {jsonl}"));
    assert_eq!(result["is_error"], true, "{jsonl}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Exit code 1\n"),
        "{result}"
    );
    for code in ["sandbox_denied", "approvals_not_interactive"] {
        assert!(
            events
                .iter()
                .any(|e| e["type"] == "warning" && e["code"] == code),
            "{code}: {jsonl}"
        );
    }
    let refusal = markers
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .expect("the refusal is a tool result");
    assert!(refusal.contains(r#""is_error":true"#), "{refusal}");
}

#[test]
fn read_only_sandbox_refuses_a_patch_and_says_so() {
    // Codex refuses the patch before running it and prints no item; the rollout shows it.
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
    let (markers, _) = run(
        &sandbox,
        &[],
        &request(
            &mock,
            &sandbox,
            "MOCK:patch change it",
            json!({"permissionMode": "plan"}),
        ),
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.work().join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(!sandbox.work().join("mock-patch.txt").exists());
    let refusal = markers
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .expect("the refused patch is shown");
    assert!(refusal.contains("patch rejected"), "{refusal}");
    assert!(refusal.contains(r#""is_error":true"#), "{refusal}");
    insta::assert_snapshot!(
        "readonly-patch.markers",
        stable(markers_view(&markers, &sandbox))
    );
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
    let (jsonl, _) = run(
        &sandbox,
        &["--format", "jsonl"],
        &request(
            &mock,
            &sandbox,
            "MOCK:patch change it",
            json!({"permissionMode": "plan"}),
        ),
    );
    let events = jsonl_events(&jsonl);
    let edit = of_type(&events, "tool_use")
        .into_iter()
        .find(|u| u["name"] == "Edit")
        .expect("the refused edit, with its diff");
    assert_eq!(edit["diff"]["new_text"], "hello, patched");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "warning" && e["code"] == "permission_denied"),
        "{jsonl}"
    );
    insta::assert_snapshot!("readonly-patch.jsonl", stable(jsonl_view(&jsonl, &sandbox)));
}

#[test]
fn plugin_overrides_apply_and_never_reach_the_cli() {
    // The shell tool prints its environment: the override variables must not be in it.
    let script = mock_llm::scenario::Script {
        turns: vec![
            mock_llm::scenario::Turn::tool_use(vec![mock_llm::scenario::Step::ToolCall {
                name: "Bash".into(),
                input: json!({"command": "env; touch override-probe.txt"}),
            }]),
            mock_llm::scenario::Turn::end_turn(vec![mock_llm::scenario::Step::Text(vec![
                "env: {tool_result}".into(),
            ])]),
        ],
    };
    let mock = Mock::with(mock_llm::Config::default().script("env", script));
    let sandbox = Sandbox::new();
    let mut cmd = exec_command(&sandbox, &["--format", "jsonl"]);
    cmd.env("CODEX_SANDBOX_MODE", "read-only")
        .env("CODEX_APPROVAL_POLICY", "never")
        .env("CODEX_CI", "1");
    let out = run_with_stdin(
        cmd,
        &request(
            &mock,
            &sandbox,
            "MOCK:env show it",
            json!({"permissionMode": "bypassPermissions"}),
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = jsonl_events(&stdout);
    let end = events.last().unwrap();
    assert_eq!(end["success"], true, "{stdout}");
    let shown = end["result"].as_str().unwrap();
    assert!(shown.contains("PATH="), "the env was printed: {shown}");
    // (Codex sets CODEX_CI and CODEX_SANDBOX_NETWORK_DISABLED for its shells itself.)
    for name in ["CODEX_SANDBOX_MODE=", "CODEX_APPROVAL_POLICY="] {
        assert!(!shown.contains(name), "{name} leaked to the CLI: {shown}");
    }
    // The API key the bridge gave Codex is not handed on to the agent's commands.
    assert!(!shown.contains("BRIDGE_CODEX_API_KEY"), "{shown}");
    // CODEX_SANDBOX_MODE=read-only overrode the bypass mode's workspace-write sandbox.
    assert!(!sandbox.work().join("override-probe.txt").exists());
    assert!(
        events.iter().any(|e| e["type"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("CODEX_SANDBOX_MODE=read-only"))),
        "{stdout}"
    );
}

/// A 1×1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

#[test]
fn image_attachments_are_sent_with_the_prompt() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let local = sandbox.root().join("local.png");
    std::fs::write(&local, base64_decode(PNG)).unwrap();
    let (stdout, _) = run(
        &sandbox,
        &[],
        &request(
            &mock,
            &sandbox,
            "MOCK:text what is in the pictures?",
            json!({"attachments": [
                {"fileName": "dot.png", "mediaType": "image/png", "data": PNG},
                {"type": "local_image", "path": local},
            ]}),
        ),
    );
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
    let requests = responses(&mock);
    let input = &requests[0].body["input"];
    let images: Vec<&Value> = input
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|p| p["type"] == "input_image")
        .collect();
    assert_eq!(images.len(), 2, "{input}");
    assert!(
        images[0]["image_url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
    assert!(input.to_string().contains("what is in the pictures?"));
    // The inline image was written to a private temp file, gone after the turn.
    assert!(
        std::fs::read_dir(sandbox.root().join("tmp"))
            .unwrap()
            .all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("bridge-codex-images")),
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn request_fields_reach_the_model_request() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (stdout, _) = run(
        &sandbox,
        &[],
        &request(
            &mock,
            &sandbox,
            "MOCK:text hi",
            json!({"reasoningEffort": "high", "agentPrompt": "Answer like a pirate."}),
        ),
    );
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
    let requests = responses(&mock);
    let body = &requests[0].body;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["reasoning"]["effort"], "high");
    assert!(body["input"].to_string().contains("Answer like a pirate."));
    // The key reached the mock as a bearer token (the log redacts it), never any output.
    assert_eq!(
        requests[0].header("authorization"),
        Some(mock_llm::REDACTED)
    );
    assert!(
        body["input"]
            .to_string()
            .contains(&format!("<cwd>{}</cwd>", sandbox.work().display()))
    );
}

#[test]
fn a_prompt_too_long_for_argv_goes_over_stdin() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let long = format!("MOCK:text {}", "lorem ipsum ".repeat(20_000));
    let (stdout, _) = run(&sandbox, &[], &request(&mock, &sandbox, &long, json!({})));
    assert_eq!(
        final_line(&stdout)["success"],
        true,
        "{}",
        &stdout[..stdout.len().min(2000)]
    );
    let requests = responses(&mock);
    assert!(
        requests[0].body["input"]
            .to_string()
            .contains(&"lorem ipsum ".repeat(20_000))
    );
}

#[test]
fn interrupt_during_a_slow_turn_stops_codex_within_seconds() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = exec_command(&sandbox, &[]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::{BufRead, Write};
    stdin
        .write_all(request(&mock, &sandbox, "MOCK:slow talk", json!({})).as_bytes())
        .unwrap();
    stdin.write_all(b"\n").unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    let mut started = None;
    while reader.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.starts_with("[THREAD_ID]") {
            // Wait until the model is streaming (Codex shows the text only at the end).
            while responses(&mock).is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            stdin.write_all(b"{\"type\":\"interrupt\"}\n").unwrap();
            started = Some(std::time::Instant::now());
        }
        line.clear();
    }
    let status = child.wait().unwrap();
    let started = started.expect("a thread id was printed");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !seen.contains("word39"),
        "the turn was not interrupted: {seen}"
    );
    let last = final_line(&seen);
    assert_eq!(last["success"], false);
    assert_eq!(last["error"], "User interrupted");
    assert!(seen.contains("[STREAM_END]\n[MESSAGE_END]\n"), "{seen}");
    assert_eq!(status.code(), Some(130));
}

#[test]
fn prompt_argument_works_for_terminal_users() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = exec_command(&sandbox, &["--model", MODEL, "MOCK:text", "hello", "there"]);
    cmd.env("BRIDGE_CODEX_BASE_URL", mock.api_base())
        .env("BRIDGE_CODEX_API_KEY", CANARY_KEY)
        .stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(CANARY_KEY));
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
    assert!(out.status.success());
    assert_eq!(
        responses(&mock)[0].header("authorization"),
        Some(mock_llm::REDACTED)
    );
}
