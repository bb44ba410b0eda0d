//! `bridge <provider> session` end to end: many turns in one bridge process, against the real
//! CLIs and the project's mock model server, inside a loopback-only network namespace.
//!
//! Warm providers (Claude Code, the ACP agents) keep one CLI process for the conversation: the
//! tests read the bridge's process tree and check the pid stays the same; pi (one process per
//! turn) resumes by its session id. Every test checks that the mock's answers show the earlier
//! turns (the `recall` scenario quotes the first user message it was sent).

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use common::acp::{Provider, acp_command};
use common::chat::Chat;
use common::*;
use serde_json::{Value, json};

fn end(events: &[Value]) -> &Value {
    events.last().expect("a turn end")
}

fn result(events: &[Value]) -> String {
    end(events)["result"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The turn's own cost, where the provider reports one.
fn turn_cost(events: &[Value]) -> Option<f64> {
    events
        .iter()
        .find(|e| e["type"] == "usage" && e["scope"] == "turn")
        .and_then(|e| e["cost_usd"].as_f64())
}

/// Whether `events` hold an event of `kind` with `code`.
fn has(events: &[Value], kind: &str, code: &str) -> bool {
    events
        .iter()
        .any(|e| e["type"] == kind && e["code"] == code)
}

fn statuses(chat: &Chat) -> Vec<String> {
    chat.seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "status")
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

/// Three turns in one conversation: the answers of turns 2 and 3 show turn 1, the CLI process
/// is `warm` (the same pid in every turn) or respawned per turn, and the session says which,
/// once.
fn three_turns(cmd: &Command, continuity: &str) {
    let mut chat = Chat::start(cmd);
    let mut pids = Vec::new();
    let mut costs = Vec::new();
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    costs.push(turn_cost(&first));
    assert_eq!(end(&first)["success"], true, "{first:?}");
    let session = end(&first)["session_id"].as_str().unwrap().to_string();
    pids.push(chat.cli_pids());
    for n in [2, 3] {
        let turn = chat.turn(json!({"message": format!("MOCK:recall turn {n}")}));
        assert_eq!(end(&turn)["success"], true, "turn {n}: {turn:?}");
        assert_eq!(end(&turn)["session_id"], session.as_str(), "turn {n}");
        assert!(
            result(&turn).contains("first turn"),
            "turn {n} did not see turn 1: {turn:?}"
        );
        pids.push(chat.cli_pids());
        costs.push(turn_cost(&turn));
    }
    // The mock charges every turn alike: a turn's cost is its own, not the process's running
    // total (Claude Code's `total_cost_usd` is one).
    if let Some(Some(one)) = costs.first() {
        for cost in costs.iter().flatten() {
            assert!(*cost < one * 1.5, "costs per turn: {costs:?}");
        }
    }
    let said: Vec<String> = statuses(&chat)
        .into_iter()
        .filter(|m| m.starts_with("conversation: "))
        .collect();
    assert_eq!(said, [format!("conversation: {continuity}")]);
    if continuity == "warm process" {
        assert_eq!(pids[0].len(), 1, "one CLI process: {pids:?}");
        assert!(pids.iter().all(|p| *p == pids[0]), "{pids:?}");
    } else {
        assert!(
            pids.iter().all(Vec::is_empty),
            "nothing left between turns: {pids:?}"
        );
    }
    assert_eq!(chat.finish(), Some(0));
}

fn claude(sandbox: &Sandbox, mock: &Mock) -> Command {
    claude_command(sandbox, &mock.url(), &[])
}

#[test]
fn claude_keeps_one_process_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    three_turns(&claude(&sandbox, &mock), "warm process");
}

#[test]
fn gemini_keeps_one_acp_agent_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    three_turns(
        &acp_command(Provider::Gemini, &sandbox, &mock.url(), &[]),
        "warm process",
    );
}

#[test]
fn qwen_keeps_one_acp_agent_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    three_turns(
        &acp_command(Provider::Qwen, &sandbox, &mock.url(), &[]),
        "warm process",
    );
}

#[test]
fn copilot_keeps_one_acp_agent_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    three_turns(
        &acp_command(Provider::Copilot, &sandbox, &mock.url(), &[]),
        "warm process",
    );
}

#[test]
fn pi_respawns_and_resumes_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    write_pi_models(&sandbox, &mock.api_base());
    let mut cmd = pi_command(&sandbox, &[]);
    cmd.arg("--model").arg(format!("mock/{PI_MOCK_MODEL}"));
    three_turns(&cmd, "respawn + native resume");
}

#[test]
fn claude_mode_change_between_turns_takes_effect_live() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    let written = sandbox.work().join("mock-written.txt");
    let plan =
        chat.turn(json!({"message": "MOCK:write create the file", "permissionMode": "plan"}));
    assert!(
        !written.exists(),
        "plan mode let the write through: {plan:?}"
    );
    let pid = chat.cli_pids();
    chat.send(&json!({"type": "set_permission_mode", "mode": "acceptEdits"}));
    let edits = chat.turn(json!({"message": "MOCK:write create the file"}));
    assert_eq!(end(&edits)["success"], true, "{edits:?}");
    assert!(
        written.exists(),
        "acceptEdits did not let the write through: {edits:?}"
    );
    assert!(
        statuses(&chat)
            .iter()
            .any(|m| m.contains("permission mode is now acceptEdits")),
        "{:?}",
        chat.seen
    );
    assert_eq!(chat.cli_pids(), pid, "changed live, in the same process");
    // Back to plan, live: a command is refused by the plan policy, as when plan is the launch
    // flag (Claude Code would otherwise let its auto-mode classifier approve it unasked).
    chat.send(&json!({"type": "set_permission_mode", "mode": "plan"}));
    let command = chat.turn(json!({"message": "MOCK:danger make a file"}));
    assert!(
        !sandbox.work().join("mock-created.txt").exists(),
        "plan mode entered live ran the command: {command:?}"
    );
    assert!(
        command
            .iter()
            .any(|e| e["type"] == "permission_decision" && e["source"] == "policy"),
        "{command:?}"
    );
    assert_eq!(chat.cli_pids(), pid, "still the same process");
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn claude_approval_in_turn_two_round_trips() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    let first = chat.turn(json!({"message": "MOCK:text first turn", "permissionMode": "default"}));
    assert_eq!(end(&first)["success"], true);
    let mut asked = 0;
    let second = chat.turn_with(json!({"message": "MOCK:danger make a file"}), |event| {
        (event["type"] == "permission_request").then(|| {
            asked += 1;
            json!({"type": "permission_response", "requestId": event["requestId"], "decision": "allow"})
        })
    });
    assert_eq!(asked, 1, "{second:?}");
    assert_eq!(end(&second)["success"], true, "{second:?}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "{second:?}"
    );
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn qwen_approval_in_turn_two_round_trips() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&acp_command(Provider::Qwen, &sandbox, &mock.url(), &[]));
    let first = chat.turn(json!({"message": "MOCK:text first turn", "permissionMode": "default"}));
    assert_eq!(end(&first)["success"], true);
    let mut asked = 0;
    let second = chat.turn_with(json!({"message": "MOCK:danger make a file"}), |event| {
        (event["type"] == "permission_request").then(|| {
            asked += 1;
            json!({"type": "permission_response", "requestId": event["requestId"], "decision": "allow"})
        })
    });
    assert_eq!(asked, 1, "{second:?}");
    assert_eq!(end(&second)["success"], true, "{second:?}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "{second:?}"
    );
    assert_eq!(chat.finish(), Some(0));
}

fn kill(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// A warm CLI killed between turns is restarted by the next turn, which resumes the session
/// (the model still sees turn 1) and says so.
fn killed_between_turns(cmd: &Command) {
    let mut chat = Chat::start(cmd);
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true, "{first:?}");
    let pids = chat.cli_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    // Claude Code writes its session file just after the `result` line: a SIGKILL within
    // milliseconds of it loses the turn (the resume then finds no conversation). A crash
    // "between turns" comes later than that.
    std::thread::sleep(Duration::from_millis(1500));
    kill(pids[0]);
    std::thread::sleep(Duration::from_millis(500));
    let second = chat.turn(json!({"message": "MOCK:recall after the crash"}));
    assert_eq!(end(&second)["success"], true, "{second:?}");
    assert!(result(&second).contains("first turn"), "{second:?}");
    assert!(
        statuses(&chat)
            .iter()
            .any(|m| m.contains("exited between turns")),
        "{:?}",
        chat.seen
    );
    let now = chat.cli_pids();
    assert_eq!(now.len(), 1);
    assert_ne!(now, pids, "a new process");
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn claude_killed_between_turns_restarts_and_resumes() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    killed_between_turns(&claude(&sandbox, &mock));
}

#[test]
fn qwen_killed_between_turns_restarts_and_resumes() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    killed_between_turns(&acp_command(Provider::Qwen, &sandbox, &mock.url(), &[]));
}

/// A CLI killed during a turn fails that turn (an error with what the CLI said, never a
/// success); the next turn restarts it and works. `persisted` waits until the CLI has saved
/// the first turn (session id given), so the kill tests the bridge, not the CLI's own
/// write-behind.
fn killed_during_a_turn(cmd: &Command, persisted: impl Fn(&str)) {
    let mut chat = Chat::start(cmd);
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true, "{first:?}");
    persisted(end(&first)["session_id"].as_str().unwrap_or_default());
    let pids = chat.cli_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let mut killed = false;
    let second = chat.turn_with(json!({"message": "MOCK:slow talk"}), |event| {
        if !killed && event["type"] == "text_delta" {
            killed = true;
            kill(pids[0]);
        }
        None
    });
    assert!(killed, "{second:?}");
    assert_eq!(end(&second)["success"], false, "{second:?}");
    assert!(has(&second, "error", "exited_early"), "{second:?}");
    let third = chat.turn(json!({"message": "MOCK:recall after the crash"}));
    assert_eq!(end(&third)["success"], true, "{third:?}");
    assert!(result(&third).contains("first turn"), "{third:?}");
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn claude_killed_during_a_turn_fails_it_and_the_next_works() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // Claude Code writes its session file a moment after `result`: a kill within that moment
    // loses the conversation in the CLI itself (its resume then says "No conversation found").
    let projects = sandbox.home().join(".claude/projects");
    killed_during_a_turn(&claude(&sandbox, &mock), |id| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let saved = || {
            std::fs::read_dir(&projects)
                .into_iter()
                .flatten()
                .flatten()
                .any(|dir| {
                    std::fs::read_to_string(dir.path().join(format!("{id}.jsonl"))).is_ok_and(
                        |text| text.contains("first turn") && text.contains("\"assistant\""),
                    )
                })
        };
        while !saved() {
            assert!(
                std::time::Instant::now() < deadline,
                "Claude Code never saved session {id}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// Claude Code killed before it flushed its transcript (it buffers writes for 100 ms; the
/// test removes the file to make that moment certain): the restart cannot `--resume` an id
/// the CLI never saved, so it starts the conversation again under the same id, says the
/// earlier turns are lost, and the turn succeeds instead of failing on every later turn.
#[test]
fn claude_killed_before_saving_starts_again_under_the_same_id() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true, "{first:?}");
    let id = end(&first)["session_id"].as_str().unwrap().to_string();
    let pids = chat.cli_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    kill(pids[0]);
    // Dead before the next turn starts: a zombie with no thread left (a multi-threaded
    // leader shows `Z` while its other threads still exit, and cannot be reaped until then).
    let status = format!("/proc/{}/status", pids[0]);
    let dead = |text: &str| {
        text.lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
            && text
                .lines()
                .any(|l| l.split_whitespace().eq(["Threads:", "1"]))
    };
    while std::fs::read_to_string(&status).is_ok_and(|text| !dead(&text)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let projects = sandbox.home().join(".claude/projects");
    let mut removed = 0;
    for dir in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
        if std::fs::remove_file(dir.path().join(format!("{id}.jsonl"))).is_ok() {
            removed += 1;
        }
    }
    assert!(removed <= 1, "one transcript per id");
    let second = chat.turn(json!({"message": "MOCK:recall after the crash"}));
    assert_eq!(end(&second)["success"], true, "{second:?}");
    assert_eq!(
        end(&second)["session_id"],
        id.as_str(),
        "the same id goes on"
    );
    assert!(
        !result(&second).contains("first turn"),
        "turn 1 is gone from the CLI: {second:?}"
    );
    assert!(has(&second, "warning", "history_lost"), "{second:?}");
    // The conversation goes on from the restart: turn 3 sees turn 2.
    let third = chat.turn(json!({"message": "MOCK:recall third"}));
    assert_eq!(end(&third)["success"], true, "{third:?}");
    assert!(
        result(&third).contains("recall after the crash"),
        "{third:?}"
    );
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn copilot_killed_during_a_turn_fails_it_and_the_next_works() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    killed_during_a_turn(
        &acp_command(Provider::Copilot, &sandbox, &mock.url(), &[]),
        |_| {},
    );
}

#[test]
fn claude_interrupt_in_turn_two_of_three_then_turn_three_works() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true);
    let mut sent = false;
    let second = chat.turn_with(json!({"message": "MOCK:slow talk"}), |event| {
        (!sent && event["type"] == "text_delta").then(|| {
            sent = true;
            json!({"type": "interrupt"})
        })
    });
    assert_eq!(end(&second)["stop_reason"], "interrupted", "{second:?}");
    let third = chat.turn(json!({"message": "MOCK:recall third"}));
    assert_eq!(end(&third)["success"], true, "{third:?}");
    assert!(result(&third).contains("first turn"), "{third:?}");
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn stdin_eof_mid_turn_finishes_it_and_leaves_no_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    chat.send(&json!({"message": "MOCK:slow talk"}));
    loop {
        let event = chat.next();
        if event["type"] == "text_delta" {
            break;
        }
    }
    let pids = chat.cli_pids();
    assert_eq!(pids.len(), 1);
    drop(chat.stdin.take());
    let mut ended = false;
    while let Ok(line) = chat.lines.recv_timeout(Duration::from_secs(60)) {
        if line.contains(r#""type":"turn_end""#) {
            ended = true;
        }
    }
    assert!(ended, "the turn in flight still ends");
    assert_eq!(chat.child.wait().unwrap().code(), Some(0));
    assert!(!group_alive(pids[0]), "the CLI's group is gone");
}

#[test]
fn a_malformed_line_fails_alone_and_a_foreign_session_id_is_refused() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&claude(&sandbox, &mock));
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true);
    let stdin = chat.stdin.as_mut().unwrap();
    writeln!(stdin, "{{not json").unwrap();
    stdin.flush().unwrap();
    let mut bad = Vec::new();
    loop {
        let event = chat.next();
        let done = event["type"] == "turn_end";
        bad.push(event);
        if done {
            break;
        }
    }
    assert_eq!(end(&bad)["success"], false);
    assert!(
        bad.iter()
            .any(|e| e["type"] == "error" && e["code"] == "invalid_request"),
        "{bad:?}"
    );
    let foreign = chat.turn(
        json!({"message": "MOCK:text hi", "sessionId": "00000000-0000-4000-8000-000000000000"}),
    );
    assert_eq!(end(&foreign)["success"], false);
    assert!(
        foreign.iter().any(|e| e["type"] == "error"
            && e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("belongs in a session of its own")),
        "{foreign:?}"
    );
    let after = chat.turn(json!({"message": "MOCK:recall still there?"}));
    assert_eq!(end(&after)["success"], true, "{after:?}");
    assert!(result(&after).contains("first turn"));
    assert_eq!(chat.finish(), Some(0));
}

/// Markers: each turn of a session is a complete `send` transcript, the plugin's parser reads
/// them one after the other.
#[test]
fn claude_session_in_markers_is_one_send_transcript_per_turn() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let cmd = as_session_in(&claude(&sandbox, &mock), "markers");
    let input = format!(
        "{}\n{}\n",
        json!({"message": "MOCK:text first turn"}),
        json!({"message": "MOCK:recall what did I say?"})
    );
    let out = run_with_stdin(cmd, &input);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let finals: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with("{\"success\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(finals.len(), 2, "{stdout}");
    assert!(finals.iter().all(|f| f["success"] == true), "{stdout}");
    assert_eq!(finals[0]["sessionId"], finals[1]["sessionId"]);
    assert_eq!(
        stdout.matches("[MESSAGE_START]").count(),
        2,
        "one transcript per turn: {stdout}"
    );
    let second = stdout.split("[MESSAGE_START]").nth(2).unwrap_or_default();
    assert!(second.contains("first turn"), "turn 2 saw turn 1: {second}");
}

/// The text format is a chat: each line typed is a turn, `/exit` ends it.
#[test]
fn claude_session_in_text_is_a_chat_that_exit_ends() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let cmd = as_session_in(&claude(&sandbox, &mock), "text");
    let out = run_with_stdin(
        cmd,
        "MOCK:text first turn\nMOCK:recall what did I say?\n/exit\nMOCK:text never sent\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("first turn"), "{stdout}");
    assert_eq!(
        stderr.matches("session ").count(),
        2,
        "two turns, each with its summary line, nothing after /exit: {stderr}"
    );
    assert_eq!(mock.model_requests().len(), 2, "{stderr}");
}

/// grok-cli has no sessions: a session says so once, and every turn runs afresh (no session id
/// is ever passed to it, so no turn fails for asking a resume it cannot do).
#[test]
fn grok_cli_session_says_no_resume_and_every_turn_runs() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&grok_cli_command(&sandbox, &[]));
    let base = json!({
        "cwd": sandbox.work(),
        "model": "mock-model",
        "baseUrl": format!("{}/v1", mock.server.base_url()),
        "apiKey": CANARY_KEY,
        "permissionMode": "bypassPermissions",
    });
    for n in 1..=2 {
        let mut request = base.clone();
        request["message"] = json!(format!("MOCK:text turn {n}"));
        let turn = chat.turn(request);
        assert_eq!(end(&turn)["success"], true, "turn {n}: {turn:?}");
    }
    let said: Vec<String> = statuses(&chat)
        .into_iter()
        .filter(|m| m.starts_with("conversation: "))
        .collect();
    assert_eq!(said, ["conversation: no resume"]);
    assert_eq!(chat.finish(), Some(0));
}

/// An ACP agent changes mode between turns through `session/set_mode`: a write refused in
/// `plan` goes through after `acceptEdits` (Qwen Code's `auto-edit`), in the same process.
#[test]
fn qwen_mode_change_between_turns_takes_effect_live() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&acp_command(Provider::Qwen, &sandbox, &mock.url(), &[]));
    let written = sandbox.work().join("mock-written.txt");
    let plan =
        chat.turn(json!({"message": "MOCK:write create the file", "permissionMode": "plan"}));
    assert!(
        !written.exists(),
        "plan mode let the write through: {plan:?}"
    );
    let pid = chat.cli_pids();
    chat.send(&json!({"type": "set_permission_mode", "mode": "acceptEdits"}));
    let edits = chat.turn(json!({"message": "MOCK:write create the file"}));
    assert_eq!(end(&edits)["success"], true, "{edits:?}");
    assert!(
        written.exists(),
        "acceptEdits did not let the write through: {edits:?}"
    );
    assert!(
        statuses(&chat)
            .iter()
            .any(|m| m.contains("permission mode is now acceptEdits")),
        "{:?}",
        chat.seen
    );
    assert_eq!(chat.cli_pids(), pid, "changed live, in the same process");
    assert_eq!(chat.finish(), Some(0));
}

/// `bridge codex session`: the mock's URL and the canary key come from the bridge's own
/// variables (`BRIDGE_CODEX_BASE_URL`, `BRIDGE_CODEX_API_KEY`), so every line can be a bare
/// message, as for the other providers.
fn codex(sandbox: &Sandbox, mock: &Mock) -> Command {
    let mut cmd = codex_command(sandbox, &["--model", "gpt-5.5"]);
    cmd.env("BRIDGE_CODEX_BASE_URL", mock.api_base())
        .env("BRIDGE_CODEX_API_KEY", CANARY_KEY);
    cmd
}

#[test]
fn codex_keeps_one_app_server_for_three_turns() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    three_turns(&codex(&sandbox, &mock), "warm process");
}

/// The app-server takes the approval policy and sandbox with every `turn/start`: an escalation
/// refused in `plan` (the bridge's policy) is asked for and runs after `default`, in the same
/// process.
#[test]
fn codex_mode_change_between_turns_takes_effect_live() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&codex(&sandbox, &mock));
    let written = sandbox.work().join("mock_escalated.txt");
    let mut asked = 0;
    let plan = chat.turn_with(
        json!({"message": "MOCK:escalate write it", "permissionMode": "plan"}),
        |event| {
            if event["type"] == "permission_request" {
                asked += 1;
            }
            None
        },
    );
    assert_eq!(end(&plan)["success"], true, "{plan:?}");
    assert!(!written.exists(), "plan mode let it run: {plan:?}");
    let decision = plan
        .iter()
        .find(|e| e["type"] == "permission_decision")
        .unwrap_or_else(|| panic!("no decision: {plan:?}"));
    assert_eq!(decision["source"], "policy", "{decision}");
    assert_eq!(decision["applied"], "deny", "{decision}");
    let pid = chat.cli_pids();
    chat.send(&json!({"type": "set_permission_mode", "mode": "default"}));
    let default = chat.turn_with(json!({"message": "MOCK:escalate write it"}), |event| {
        (event["type"] == "permission_request").then(|| {
            asked += 1;
            json!({"type": "permission_response", "requestId": event["requestId"], "decision": "allow"})
        })
    });
    assert_eq!(end(&default)["success"], true, "{default:?}");
    assert!(
        written.exists(),
        "default + allow did not run it: {default:?}"
    );
    assert_eq!(
        asked, 2,
        "both turns asked (the first answered by the policy)"
    );
    assert!(
        statuses(&chat)
            .iter()
            .any(|m| m.contains("permission mode is now default")),
        "{:?}",
        chat.seen
    );
    assert_eq!(chat.cli_pids(), pid, "changed live, in the same process");
    assert_eq!(chat.finish(), Some(0));
}

/// `turn/interrupt` ends turn 2 as interrupted; turn 3 runs in the same app-server and still
/// sees turn 1.
#[test]
fn codex_interrupt_in_turn_two_of_three_then_turn_three_works() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut chat = Chat::start(&codex(&sandbox, &mock));
    let first = chat.turn(json!({"message": "MOCK:text first turn"}));
    assert_eq!(end(&first)["success"], true, "{first:?}");
    let pid = chat.cli_pids();
    let mut sent = false;
    let second = chat.turn_with(json!({"message": "MOCK:slow talk"}), |event| {
        (!sent && event["type"] == "text_delta").then(|| {
            sent = true;
            json!({"type": "interrupt"})
        })
    });
    assert_eq!(end(&second)["stop_reason"], "interrupted", "{second:?}");
    let third = chat.turn(json!({"message": "MOCK:recall third"}));
    assert_eq!(end(&third)["success"], true, "{third:?}");
    assert!(result(&third).contains("first turn"), "{third:?}");
    assert_eq!(
        chat.cli_pids(),
        pid,
        "the interrupt was graceful: same process"
    );
    assert_eq!(chat.finish(), Some(0));
}

#[test]
fn codex_killed_between_turns_restarts_and_resumes() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    killed_between_turns(&codex(&sandbox, &mock));
}
