//! `bridge pi send` end to end: the real pi coding agent (0.73.1, pinned by
//! tests/install-clis.sh) against the project's mock model server (Chat Completions, and the
//! Responses API for one scenario), inside a loopback-only network namespace. pi's model config
//! (`~/.pi/agent/models.json` in a scratch HOME) points at the mock; the model is picked with
//! the request's `model` (`mock/mock-model`).
//!
//! Plus fake CLIs (shell scripts named by `PI_BIN`) for what the real one will not do on demand:
//! lying with exit 0 after a failure, ending without `agent_end`, exiting non-zero after a
//! complete stream.

mod common;

use common::pi_family::{PI, PI_FAMILY_MODEL};
use common::*;
use serde_json::{Value, json};

#[test]
fn text_streams_deltas_and_ends_with_the_session_and_result() {
    let (markers, jsonl) = PI.text_scenario();
    let last = final_line(&markers);
    assert!(
        last["sessionId"].as_str().is_some_and(|s| s.len() == 36),
        "{last}"
    );
    assert!(markers.contains("[USAGE] "), "{markers}");
    let events = jsonl_events(&jsonl);
    assert_eq!(of_type(&events, "usage").len(), 2, "message and turn usage");
}

#[test]
fn thinking_streams_before_the_text_and_reasoning_effort_becomes_the_thinking_level() {
    PI.thinking_scenario();
}

#[test]
fn a_tool_call_runs_and_its_result_comes_back_before_the_final_text() {
    let (markers, _) = PI.tool_scenario();
    let result = markers
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .unwrap();
    assert!(result.contains(r#"hello\n"#), "{result}");
    assert_eq!(
        final_line(&markers)["result"],
        "Tool finished. Output was: hello"
    );
}

#[test]
fn the_responses_api_dialect_works_too() {
    let mock = Mock::start();
    let sandbox = PI.sandbox(&mock);
    let out = PI.run(
        &sandbox,
        &["--format", "jsonl"],
        &PI.request(
            &sandbox,
            "MOCK:tool run it",
            json!({"model": "mockresp/mock-model", "reasoningEffort": "low"}),
        ),
    );
    insta::assert_snapshot!(
        "responses-tool.jsonl",
        (PI.stable)(jsonl_view(&out, &sandbox))
    );
    let events = jsonl_events(&out);
    assert_eq!(events.last().unwrap()["success"], true, "{out}");
    let tool = of_type(&events, "tool_use");
    assert!(tool[0]["id"].as_str().unwrap().contains("|fc_"), "{out}");
    let requests = mock.model_requests();
    assert!(requests.iter().all(|r| r.path_only() == "/v1/responses"));
    assert_eq!(requests[0].body["reasoning"]["effort"], "low");
}

#[test]
fn permission_modes_map_to_the_tool_allowlist() {
    let mock = Mock::start();
    let sandbox = PI.tools_offered(&mock, "sandbox", "MOCK:text hi");
    assert_eq!(sandbox.tools, ["find", "grep", "ls", "read"]);
    assert!(sandbox.warnings.is_empty(), "{:?}", sandbox.warnings);
    let default = PI.tools_offered(&mock, "default", "MOCK:text hi");
    assert_eq!(default.tools, ["bash", "edit", "read", "write"]);
    assert_eq!(default.warnings.len(), 1);
    assert!(
        default.warnings[0].contains("runs without asking"),
        "{:?}",
        default.warnings
    );
    let bypass = PI.tools_offered(&mock, "bypassPermissions", "MOCK:text hi");
    assert_eq!(bypass.tools, ["bash", "edit", "read", "write"]);
    assert!(bypass.warnings.is_empty());
    for offered in [sandbox, default, bypass] {
        assert_eq!(offered.events.last().unwrap()["success"], true);
    }
}

#[test]
fn resume_keeps_the_session_and_the_model_sees_the_earlier_turn() {
    let text = PI.resume_scenario();
    assert!(
        text.starts_with("I received 4 messages"),
        "system, turn 1, its answer, turn 2: {text}"
    );
}

#[test]
fn an_unknown_session_is_a_failure_with_pi_s_message() {
    let error = PI.unknown_session_scenario("00000000-0000-4000-8000-000000000000");
    assert!(error.contains("pi exited with exit code 1"), "{error}");
    assert!(error.contains("No session found matching"), "{error}");
}

#[test]
fn an_http_error_is_a_failure_although_pi_exits_zero() {
    PI.http_error_scenario();

    // And pi itself, run the same way, exits 0 on it.
    let mock = Mock::start();
    let sandbox = PI.sandbox(&mock);
    let mut direct = std::process::Command::new(cli_path("pi"));
    direct
        .args(["--print", "--mode", "json", "--model", PI_FAMILY_MODEL])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("PI_OFFLINE", "1")
        .env(MOCK_KEY_ENV, CANARY_KEY)
        .current_dir(sandbox.work());
    let out = run_with_stdin(direct, "MOCK:err401 hi");
    assert!(
        out.status.success(),
        "pi exits 0 after an API error: {:?}",
        out.status
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""stopReason":"error""#));
}

#[test]
fn an_image_attachment_reaches_the_model_as_an_image_and_the_agent_prompt_as_system_text() {
    let mock = Mock::start();
    let sandbox = PI.sandbox(&mock);
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let out = PI.run(
        &sandbox,
        &[],
        &PI.request(
            &sandbox,
            "MOCK:text what is in the picture?",
            json!({
                "agentPrompt": "Always answer like a pirate.",
                "attachments": [{"fileName": "dot.png", "mediaType": "image/png", "data": png}],
            }),
        ),
    );
    assert_eq!(final_line(&out)["success"], true, "{out}");
    let body = &mock.model_requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Always answer like a pirate."), "{system}");
    let user = &messages.last().unwrap()["content"];
    let parts = user.as_array().expect("text and image parts");
    assert!(parts.iter().any(
        |p| p["type"] == "image_url" && p["image_url"]["url"].as_str().unwrap().ends_with(png)
    ));
    assert!(
        parts[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("MOCK:text what is in the picture?")
    );
    // The attachment files are gone after the turn.
    let leftovers: Vec<_> = std::fs::read_dir(sandbox.root().join("tmp"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("bridge-pi-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_interrupt_stops_pi_and_its_process_group_within_seconds() {
    use std::io::{BufRead, Write};
    let mock = Mock::start();
    let sandbox = PI.sandbox(&mock);
    let mut cmd = pi_command(&sandbox, &[]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The client keeps stdin open: later lines are control messages.
    writeln!(
        stdin,
        "{}",
        PI.request(&sandbox, "MOCK:slow talk", json!({}))
    )
    .unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut seen, mut line, mut deltas) = (String::new(), String::new(), 0);
    let mut groups = Vec::new();
    let mut stopped_at = None;
    while reader.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.starts_with("[CONTENT_DELTA]") {
            deltas += 1;
            if deltas == 3 {
                // pi runs as the leader of its own group: its pid is the group id.
                groups = children_of(child.id());
                assert!(!groups.is_empty(), "pi is a child of the bridge");
                stdin.write_all(b"{\"type\":\"interrupt\"}\n").unwrap();
                stopped_at = Some(std::time::Instant::now());
            }
        }
        line.clear();
    }
    let status = child.wait().unwrap();
    let stopped_at = stopped_at.unwrap_or_else(|| panic!("never reached 3 deltas: {seen}"));
    assert!(stopped_at.elapsed() < std::time::Duration::from_secs(15));
    assert!(deltas < 40, "the stream was not interrupted: {seen}");
    let last = final_line(&seen);
    assert_eq!(last["success"], false);
    assert_eq!(last["error"], "User interrupted");
    assert!(!seen.contains("[SEND_ERROR]"), "{seen}");
    assert_eq!(status.code(), Some(130));
    for pgid in groups {
        assert!(
            !group_alive(pgid),
            "process group {pgid} outlived the bridge"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Fake CLIs: exit codes that lie
// ---------------------------------------------------------------------------------------------

const FAKE_SESSION: &str = r#"{"type":"session","version":3,"id":"fake-0001","cwd":"/"}"#;
const FAKE_START: &str = r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#;
const FAKE_DELTA: &str =
    r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi"}}"#;
const FAKE_END_OK: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hi"}],"stopReason":"stop"}}"#;
const FAKE_END_ERR: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429 quota exhausted"}}"#;
const FAKE_AGENT_END: &str = r#"{"type":"agent_end","messages":[]}"#;

/// Runs `bridge pi send --format jsonl` against a fake `pi` that prints `lines`, writes
/// `stderr`, and exits with `code`.
fn fake(lines: &[&str], stderr: &str, code: i32) -> Vec<Value> {
    let sandbox = Sandbox::new();
    let mut body = String::from("cat > /dev/null\n");
    for line in lines {
        body.push_str(&format!("printf '%s\\n' '{line}'\n"));
    }
    if !stderr.is_empty() {
        body.push_str(&format!("echo '{stderr}' >&2\n"));
    }
    body.push_str(&format!("exit {code}\n"));
    let script = write_script(sandbox.root(), "pi", &body);
    let mut cmd = bridge();
    cmd.env_clear()
        .args(["pi", "send", "--format", "jsonl"])
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("PI_BIN", &script)
        .current_dir(sandbox.work());
    let out = run_with_stdin(
        cmd,
        &json!({"message": "hi", "permissionMode": "yolo"}).to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let events = jsonl_events(&stdout);
    assert_eq!(events.last().unwrap()["type"], "turn_end", "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(if events.last().unwrap()["success"] == true {
            0
        } else {
            1
        })
    );
    events
}

#[test]
fn a_fake_pi_that_reports_an_error_and_exits_zero_never_succeeds() {
    let events = fake(
        &[FAKE_SESSION, FAKE_START, FAKE_END_ERR, FAKE_AGENT_END],
        "",
        0,
    );
    let end = events.last().unwrap();
    assert_eq!(end["success"], false);
    assert_eq!(end["error"], "429 quota exhausted");
    assert_eq!(end["session_id"], "fake-0001");
}

#[test]
fn a_fake_pi_that_stops_without_agent_end_and_exits_zero_never_succeeds() {
    let events = fake(&[FAKE_SESSION, FAKE_START, FAKE_DELTA], "", 0);
    let end = events.last().unwrap();
    assert_eq!(end["success"], false);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("before finishing the turn"),
        "{end}"
    );
    // What was streamed is still delivered.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "text_delta" && e["text"] == "Hi")
    );
}

#[test]
fn a_fake_pi_that_completes_but_exits_non_zero_fails_with_its_stderr() {
    let events = fake(
        &[
            FAKE_SESSION,
            FAKE_START,
            FAKE_DELTA,
            FAKE_END_OK,
            FAKE_AGENT_END,
        ],
        "fatal: could not save the session",
        3,
    );
    let end = events.last().unwrap();
    assert_eq!(end["success"], false);
    let error = of_type(&events, "error")[0];
    assert_eq!(error["code"], "exited_early");
    assert!(
        error["message"].as_str().unwrap().contains("exit code 3"),
        "{error}"
    );
    assert_eq!(error["stderr_tail"], "fatal: could not save the session");
}

#[test]
fn a_fake_pi_that_completes_and_exits_zero_succeeds() {
    let events = fake(
        &[
            FAKE_SESSION,
            FAKE_START,
            FAKE_DELTA,
            FAKE_END_OK,
            FAKE_AGENT_END,
        ],
        "",
        0,
    );
    let end = events.last().unwrap();
    assert_eq!(end["success"], true, "{events:?}");
    assert_eq!(end["result"], "Hi");
}
