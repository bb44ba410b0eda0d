//! Interactive approvals with the real Claude Code CLI against the mock, in the loopback
//! namespace: over the bridge's stdin, over the ai-bridge file IPC, and with nobody to answer.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

fn mock() -> mock_llm::MockServer {
    require_loopback_only_network();
    mock_llm::MockServer::start_in_thread(mock_llm::Config::default()).expect("mock")
}

/// Starts `bridge claude send` with stdin kept open after the request.
fn start(sandbox: &Sandbox, url: &str, request: Value, extra: &[&str]) -> Child {
    let mut cmd = claude_command(sandbox, url, extra);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn bridge");
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(request.to_string().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    child
}

/// Reads the bridge's stdout to EOF; for every `[PERMISSION_REQUEST]` calls `answer` and writes
/// what it returns (a control line) to the bridge's stdin. Returns the whole output.
fn drive(
    mut child: Child,
    mut answer: impl FnMut(&Value) -> Option<Value>,
) -> (String, std::process::ExitStatus) {
    let mut stdin = child.stdin.take();
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut out = String::new();
    for line in reader.lines() {
        let line = line.unwrap();
        if let Some(payload) = line.strip_prefix("[PERMISSION_REQUEST] ") {
            let request: Value = serde_json::from_str(payload).unwrap();
            if let (Some(reply), Some(stdin)) = (answer(&request), stdin.as_mut()) {
                writeln!(stdin, "{reply}").unwrap();
            }
        }
        if line.starts_with('{') && line.contains("\"success\"") {
            // The final line: closing stdin now lets the bridge finish.
            stdin.take();
        }
        out.push_str(&line);
        out.push('\n');
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(!out.contains(CANARY_KEY));
    (out, status)
}

fn permission_decision(out: &str) -> Value {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("[PERMISSION_DECISION] "))
        .unwrap_or_else(|| panic!("no permission decision in:\n{out}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn allowed_over_stdin_the_command_runs() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let child = start(
        &sandbox,
        &mock.base_url(),
        json!({"message": "MOCK:danger make a file"}),
        &[],
    );
    let mut asked = 0;
    let (out, _) = drive(child, |request| {
        asked += 1;
        assert_eq!(request["kind"], "tool");
        assert_eq!(request["toolName"], "Bash");
        assert_eq!(request["toolKind"], "execute");
        Some(
            json!({"type": "permission_response", "requestId": request["requestId"], "decision": "allow"}),
        )
    });
    assert_eq!(asked, 1, "{out}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command did not run:\n{out}"
    );
    let decision = permission_decision(&out);
    assert_eq!(decision["applied"], "allow_once");
    assert_eq!(decision["source"], "client");
    assert!(
        out.lines()
            .any(|l| l.starts_with("[TOOL_RESULT]") && l.contains("created")),
        "{out}"
    );
    assert_eq!(final_line(&out)["success"], true);
}

#[test]
fn denied_over_stdin_nothing_runs_and_the_message_reaches_the_model() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let child = start(
        &sandbox,
        &mock.base_url(),
        json!({"message": "MOCK:danger make a file"}),
        &[],
    );
    let (out, _) = drive(child, |request| {
        Some(
            json!({"type": "permission_response", "requestId": request["requestId"],
                    "decision": {"behavior": "deny", "message": "not on my machine"}}),
        )
    });
    assert!(!sandbox.work().join("mock-created.txt").exists());
    let result = out
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT]"))
        .unwrap_or_else(|| panic!("no tool result:\n{out}"));
    assert!(
        result.contains("not on my machine") && result.contains(r#""is_error":true"#),
        "{result}"
    );
    assert_eq!(permission_decision(&out)["applied"], "deny");
}

#[test]
fn allowed_through_the_file_ipc_like_the_jetbrains_plugin() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let ipc_dir = sandbox.root().join("perm");
    let mut cmd = claude_command(&sandbox, &mock.base_url(), &[]);
    cmd.env("CLAUDE_PERMISSION_DIR", &ipc_dir)
        .env("CLAUDE_SESSION_ID", "win-1");
    let dir = ipc_dir.clone();
    let plugin = std::thread::spawn(move || {
        answer_ipc_file(
            &dir,
            "request-win-1-",
            "response-win-1-",
            json!({"allow": true}),
        )
    });
    // The plugin writes the request without a newline and closes stdin at once.
    let out = run_with_stdin(
        cmd,
        &json!({"message": "MOCK:danger make a file"}).to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let body = plugin.join().unwrap();
    assert_eq!(body["toolName"], "Bash");
    assert!(
        body["inputs"]["command"]
            .as_str()
            .unwrap()
            .contains("touch")
    );
    assert!(sandbox.work().join("mock-created.txt").exists(), "{stdout}");
    assert_eq!(permission_decision(&stdout)["source"], "file_ipc");
    let left: Vec<_> = std::fs::read_dir(&ipc_dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "answered files are cleaned up: {left:?}");
}

#[test]
fn nobody_answering_is_a_prompt_denial_not_a_hang() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let out = run_with_stdin(
        claude_command(&sandbox, &mock.base_url(), &[]),
        &json!({"message": "MOCK:danger make a file"}).to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(!sandbox.work().join("mock-created.txt").exists());
    let decision = permission_decision(&stdout);
    assert_eq!(decision["source"], "no_client");
    assert!(decision["note"].as_str().unwrap().contains("no client"));
    assert_eq!(
        final_line(&stdout)["success"],
        true,
        "the turn goes on after the denial"
    );
}

#[test]
fn an_unanswered_request_times_out_into_a_denial() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let child = start(
        &sandbox,
        &mock.base_url(),
        json!({"message": "MOCK:danger make a file"}),
        &["--approval-timeout", "2"],
    );
    let (out, _) = drive(child, |_| None);
    assert!(!sandbox.work().join("mock-created.txt").exists());
    assert_eq!(permission_decision(&out)["source"], "timeout");
    assert_eq!(final_line(&out)["success"], true);
}

#[test]
fn ask_user_question_round_trip_over_stdin() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let child = start(
        &sandbox,
        &mock.base_url(),
        json!({"message": "MOCK:ask which one?"}),
        &[],
    );
    let mut seen = None;
    let (out, _) = drive(child, |request| {
        seen = Some(request.clone());
        let question = request["input"]["questions"][0]["question"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        Some(
            json!({"type": "permission_response", "requestId": request["requestId"],
                    "decision": {"answers": {question: "Blue"}}}),
        )
    });
    let request = seen.unwrap_or_else(|| panic!("no question surfaced:\n{out}"));
    assert_eq!(request["kind"], "question");
    assert!(
        content_text(&out).contains("Blue") || out.contains("Blue"),
        "the answer did not reach the model:\n{out}"
    );
}

#[test]
fn plan_approval_round_trip_through_the_file_ipc() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let ipc_dir = sandbox.root().join("perm");
    let mut cmd = claude_command(&sandbox, &mock.base_url(), &[]);
    cmd.env("CLAUDE_PERMISSION_DIR", &ipc_dir);
    let dir = ipc_dir.clone();
    let plugin = std::thread::spawn(move || {
        answer_ipc_file(
            &dir,
            "plan-approval-default-plan-",
            "plan-approval-response-default-",
            json!({"approved": true, "targetMode": "acceptEdits"}),
        )
    });
    let out = run_with_stdin(
        cmd,
        &json!({"message": "MOCK:plan make a plan", "permissionMode": "plan"}).to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let body = plugin.join().unwrap();
    assert_eq!(body["toolName"], "ExitPlanMode");
    assert!(!body["plan"].as_str().unwrap_or("").is_empty(), "{body}");
    let decision = permission_decision(&stdout);
    assert_eq!(decision["applied"], "allow_once");
    assert_eq!(decision["source"], "file_ipc");
}
