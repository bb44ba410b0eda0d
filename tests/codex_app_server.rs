//! `bridge codex send` through its default transport, `codex app-server`, end to end: the real
//! Codex CLI (0.171.0) against the project's mock model server (OpenAI Responses dialect),
//! inside a loopback-only network namespace. Sessions over it (three warm turns, a live mode
//! change, interrupt, a restart after a kill) are in tests/sessions.rs; `codex exec` has
//! tests/codex.rs.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::LazyLock;

use common::*;
use regex::Regex;
use serde_json::{Value, json};

/// Runs one request with stdin closed after it (nobody can answer an approval).
fn run(sandbox: &Sandbox, args: &[&str], req: &str) -> String {
    let out = run_with_stdin(codex_command(sandbox, args), req);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains(CANARY_KEY), "the key leaked: {stdout}");
    stdout
}

/// Starts `bridge codex send --format jsonl` with stdin kept open after the request, answers
/// every `permission_request` with what `answer` returns, and returns the events.
fn interactive(
    sandbox: &Sandbox,
    req: &str,
    mut answer: impl FnMut(&Value) -> Option<Value>,
) -> Vec<Value> {
    let mut cmd = codex_command(sandbox, &["--format", "jsonl"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child: Child = cmd.spawn().expect("spawn bridge");
    let mut stdin = child.stdin.take();
    if let Some(stdin) = stdin.as_mut() {
        writeln!(stdin, "{req}").unwrap();
    }
    let mut events = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        assert!(!line.contains(CANARY_KEY), "the key leaked: {line}");
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "permission_request"
            && let (Some(reply), Some(stdin)) = (answer(&event), stdin.as_mut())
        {
            writeln!(stdin, "{reply}").unwrap();
        }
        if event["type"] == "turn_end" {
            stdin.take();
        }
        events.push(event);
    }
    drop(stdin);
    child.wait().unwrap();
    events
}

fn of(events: &[Value], ty: &str) -> Vec<Value> {
    events.iter().filter(|e| e["type"] == ty).cloned().collect()
}

fn end(events: &[Value]) -> Value {
    events.last().cloned().expect("events")
}

fn reply(request: &Value, decision: &str) -> Option<Value> {
    Some(
        json!({"type": "permission_response", "requestId": request["requestId"], "decision": decision}),
    )
}

/// The model request after the tool ran (its last input item is the tool's output).
fn tool_output_seen_by_the_model(mock: &Mock) -> String {
    mock.model_requests()
        .iter()
        .rev()
        .find_map(|r| {
            let input = r.body["input"].as_array()?;
            input
                .iter()
                .rev()
                .find(|i| i["type"] == "function_call_output")
                .map(|i| i["output"].to_string())
        })
        .unwrap_or_default()
}

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
});
static CALL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"codex_[0-9a-f]{8}_(call|msg|rs)_[0-9a-zA-Z_]+").unwrap());
static PORT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"127\.0\.0\.1:\d+").unwrap());

fn stable(text: String) -> String {
    let text = UUID.replace_all(&text, "[uuid]");
    let text = CALL.replace_all(&text, "[tool]");
    PORT.replace_all(&text, "[mock]").into_owned()
}

/// What the plugin and an integrator see of a text turn: streamed deltas (unlike `codex exec`),
/// the Claude-shaped message, the turn's usage with the context window, the thread id.
#[test]
fn text_streams_deltas_in_both_formats() {
    let mock = Mock::start();
    let (markers, jsonl) = snapshot_both_formats(
        "app_server_text",
        |args| {
            let sandbox = Sandbox::new();
            let out = run(
                &sandbox,
                args,
                &codex_request(&mock, &sandbox, "MOCK:text say hello", json!({})),
            );
            (out, sandbox)
        },
        stable,
    );
    assert!(markers.contains("[CONTENT_DELTA]"), "{markers}");
    assert!(jsonl.contains("text_delta"), "{jsonl}");
}

#[test]
fn reasoning_streams_as_thinking_before_the_text() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &codex_request(&mock, &sandbox, "MOCK:thinking think first", json!({})),
    );
    let events = jsonl_events(&out);
    let thinking = events
        .iter()
        .position(|e| e["type"] == "thinking_delta")
        .unwrap_or_else(|| panic!("no thinking: {out}"));
    let text = events
        .iter()
        .position(|e| e["type"] == "text_delta")
        .unwrap_or_else(|| panic!("no text: {out}"));
    assert!(thinking < text, "{out}");
    assert_eq!(end(&events)["success"], true, "{out}");
}

/// `echo hello` in the workspace needs no approval under `default` (workspace-write,
/// on-request): it runs and nobody is asked.
#[test]
fn a_command_the_mode_allows_runs_without_asking() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &codex_request(
            &mock,
            &sandbox,
            "MOCK:tool run it",
            json!({"permissionMode": "default"}),
        ),
    );
    let events = jsonl_events(&out);
    assert!(of(&events, "permission_request").is_empty(), "{out}");
    let results = of(&events, "tool_result");
    assert!(
        results
            .iter()
            .any(|r| r["content"].to_string().contains("hello")),
        "{out}"
    );
    assert_eq!(end(&events)["success"], true, "{out}");
}

/// A command asking to leave the sandbox is a `permission_request` with Codex's command, cwd and
/// reason; allowed over stdin, it runs and the model gets its output.
#[test]
fn an_escalation_allowed_over_stdin_runs_and_the_model_sees_its_output() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let req = codex_request(&mock, &sandbox, "MOCK:escalate write it", json!({}));
    let mut asked = Vec::new();
    let events = interactive(&sandbox, &req, |request| {
        asked.push(request.clone());
        reply(request, "allow")
    });
    assert_eq!(asked.len(), 1, "{events:?}");
    let request = &asked[0];
    assert_eq!(request["toolName"], "Bash", "{request}");
    assert_eq!(request["toolKind"], "execute", "{request}");
    assert!(
        request["input"]["command"]
            .as_str()
            .unwrap_or_default()
            .contains("mock_escalated.txt"),
        "{request}"
    );
    assert_eq!(
        request["description"],
        mock_llm::openai_responses::ESCALATE_REASON,
        "{request}"
    );
    assert_eq!(
        request["options"],
        json!(["allow_once", "allow_session", "deny", "cancel"])
    );
    let decision = &of(&events, "permission_decision")[0];
    assert_eq!(decision["applied"], "allow_once");
    assert_eq!(decision["source"], "client");
    assert!(
        sandbox.work().join("mock_escalated.txt").exists(),
        "{events:?}"
    );
    assert!(
        tool_output_seen_by_the_model(&mock).contains("escalated"),
        "{:?}",
        tool_output_seen_by_the_model(&mock)
    );
    assert_eq!(end(&events)["success"], true, "{events:?}");
}

/// Denied: nothing runs, the tool result says so, and the model is told the user rejected it.
#[test]
fn an_escalation_denied_over_stdin_does_not_run_and_the_model_is_told() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let req = codex_request(&mock, &sandbox, "MOCK:escalate write it", json!({}));
    let events = interactive(&sandbox, &req, |request| reply(request, "deny"));
    assert!(!sandbox.work().join("mock_escalated.txt").exists());
    let decision = &of(&events, "permission_decision")[0];
    assert_eq!(decision["applied"], "deny");
    let result = of(&events, "tool_result")
        .into_iter()
        .find(|r| r["is_error"] == true)
        .unwrap_or_else(|| panic!("no refused tool result: {events:?}"));
    assert!(
        result["content"].to_string().contains("declined"),
        "{result}"
    );
    assert!(
        tool_output_seen_by_the_model(&mock).contains("rejected"),
        "{:?}",
        tool_output_seen_by_the_model(&mock)
    );
    assert_eq!(end(&events)["success"], true, "{events:?}");
}

/// stdin closed after the request and no file IPC: the approval is denied at once by the
/// bridge (nobody can answer), never left hanging.
#[test]
fn nobody_answering_is_a_denial_at_once() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["--format", "jsonl"],
        &codex_request(&mock, &sandbox, "MOCK:escalate write it", json!({})),
    );
    let events = jsonl_events(&out);
    let decision = &of(&events, "permission_decision")[0];
    assert_eq!(decision["source"], "no_client", "{decision}");
    assert_eq!(decision["applied"], "deny", "{decision}");
    assert!(!sandbox.work().join("mock_escalated.txt").exists());
    assert_eq!(end(&events)["success"], true, "{out}");
}

/// The JetBrains plugin's file IPC answers a Codex approval like a Claude one.
#[test]
fn an_escalation_answered_through_the_file_ipc_runs() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let ipc_dir = sandbox.root().join("perm");
    let mut cmd = codex_command(&sandbox, &[]);
    cmd.env("CLAUDE_PERMISSION_DIR", &ipc_dir)
        .env("CLAUDE_SESSION_ID", "win-7");
    let dir = ipc_dir.clone();
    let plugin = std::thread::spawn(move || {
        answer_ipc_file(
            &dir,
            "request-win-7-",
            "response-win-7-",
            json!({"allow": true}),
        )
    });
    let out = run_with_stdin(
        cmd,
        &codex_request(&mock, &sandbox, "MOCK:escalate write it", json!({})),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let body = plugin.join().unwrap();
    assert_eq!(body["toolName"], "Bash", "{body}");
    assert!(
        sandbox.work().join("mock_escalated.txt").exists(),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("[PERMISSION_DECISION]") && l.contains("file_ipc")),
        "{stdout}"
    );
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
}

/// In `sandbox` mode (Codex's read-only sandbox) a patch asks first; the request names the
/// files and carries the diff, and once allowed the files change.
#[test]
fn a_file_change_approval_carries_the_diff_and_the_change_is_applied() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
    let req = codex_request(
        &mock,
        &sandbox,
        "MOCK:patch change it",
        json!({"permissionMode": "sandbox"}),
    );
    let mut asked = Vec::new();
    let events = interactive(&sandbox, &req, |request| {
        asked.push(request.clone());
        reply(request, "allow")
    });
    assert_eq!(asked.len(), 1, "{events:?}");
    let request = &asked[0];
    assert_eq!(request["toolKind"], "edit", "{request}");
    let paths = request["paths"].to_string();
    assert!(
        paths.contains("hello.txt") && paths.contains("mock-patch.txt"),
        "{request}"
    );
    let diff = request["input"]["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("hello, patched"), "{request}");
    assert_eq!(
        std::fs::read_to_string(sandbox.work().join("hello.txt")).unwrap(),
        "hello, patched\n"
    );
    assert!(sandbox.work().join("mock-patch.txt").exists());
    assert_eq!(end(&events)["success"], true, "{events:?}");
}

/// A second `send` with the first one's `threadId` resumes the thread: the model sees the
/// first turn, and the usage is the second turn's own.
#[test]
fn resume_continues_the_thread() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run(
        &sandbox,
        &[],
        &codex_request(&mock, &sandbox, "MOCK:text first turn", json!({})),
    );
    let thread = final_line(&first)["threadId"]
        .as_str()
        .unwrap_or_else(|| panic!("no threadId: {first}"))
        .to_string();
    let second = run(
        &sandbox,
        &["--format", "jsonl"],
        &codex_request(
            &mock,
            &sandbox,
            "MOCK:recall what did I say?",
            json!({"threadId": thread}),
        ),
    );
    let events = jsonl_events(&second);
    let last = end(&events);
    assert_eq!(last["success"], true, "{second}");
    assert_eq!(last["session_id"], thread.as_str(), "{second}");
    assert!(
        last["result"]
            .as_str()
            .unwrap_or_default()
            .contains("first turn"),
        "{second}"
    );
}

#[test]
fn an_unknown_thread_id_is_a_clear_error() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[],
        &codex_request(
            &mock,
            &sandbox,
            "MOCK:text hi",
            json!({"threadId": "01a00000-0000-7000-8000-000000000000"}),
        ),
    );
    let last = final_line(&out);
    assert_eq!(last["success"], false, "{out}");
    let error = last["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("could not resume thread 01a00000-0000-7000-8000-000000000000"),
        "{error}"
    );
    assert!(
        mock.model_requests().is_empty(),
        "nothing reached the model"
    );
}

/// A 401 is a failed turn with Codex's own message; a stream that drops before it completes
/// is a failure too, never a success.
#[test]
fn http_401_and_a_dropped_stream_are_failures_with_codexs_message() {
    let mock = Mock::start();
    for (scenario, needle) in [("err401", "401"), ("drop", "stream")] {
        let sandbox = Sandbox::new();
        let out = run(
            &sandbox,
            &[],
            &codex_request(&mock, &sandbox, &format!("MOCK:{scenario} hi"), json!({})),
        );
        let last = final_line(&out);
        assert_eq!(last["success"], false, "{scenario}: {out}");
        let errors: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("[SEND_ERROR]"))
            .collect();
        assert_eq!(errors.len(), 1, "{scenario}: one error: {out}");
        assert!(
            errors[0].to_lowercase().contains(needle),
            "{scenario}: {}",
            errors[0]
        );
    }
}

/// An interrupt in the middle of the stream is `turn/interrupt`: the turn ends as interrupted,
/// and no process is left.
#[test]
fn interrupt_mid_stream_ends_the_turn_and_leaves_no_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = codex_command(&sandbox, &["--format", "jsonl"]);
    let (mut child, mut stdin, lines) = spawn_piped(&mut cmd);
    let pid = child.id();
    {
        let stdin = stdin.as_mut().unwrap();
        writeln!(
            stdin,
            "{}",
            codex_request(&mock, &sandbox, "MOCK:slow talk", json!({}))
        )
        .unwrap();
    }
    let mut events = Vec::new();
    let mut cli = Vec::new();
    while let Ok(line) = lines.recv_timeout(std::time::Duration::from_secs(60)) {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "text_delta" && cli.is_empty() {
            cli = children_of(pid);
            writeln!(stdin.as_mut().unwrap(), "{}", json!({"type": "interrupt"})).unwrap();
        }
        let done = event["type"] == "turn_end";
        events.push(event);
        if done {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    let last = end(&events);
    assert_eq!(last["stop_reason"], "interrupted", "{events:?}");
    assert_eq!(cli.len(), 1, "the app-server ran: {cli:?}");
    assert!(!group_alive(cli[0]), "the app-server's group is gone");
}
