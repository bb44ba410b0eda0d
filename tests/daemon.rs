//! `bridge daemon` end to end, driven the way the plugin's `DaemonBridge.java` drives
//! `daemon.js` (ai-bridge protocol §4.6): one process, `{"id","method","params"}` lines in,
//! `{"id","line"}` / `{"id","stderr"}` / `{"id","done"}` lines and `{"type":"daemon"}` events
//! out, heartbeats while turns run, `abort` and `shutdown` as the plugin sends them. Real CLIs
//! against the project's mock, in the loopback-only netns.

mod common;

use std::io::Write;
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::acp::{Provider, acp_command};
use common::*;
use serde_json::{Value, json};

/// `cmd` (a `bridge <provider> send` command of the harness) as `bridge daemon EXTRA…`, with
/// the same environment and working directory.
fn daemon_command(cmd: &Command, extra: &[&str]) -> Command {
    let mut daemon = Command::new(cmd.get_program());
    daemon.arg("daemon").args(extra).env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            daemon.env(key, value);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        daemon.current_dir(dir);
    }
    daemon
}

/// A running `bridge daemon` and what it wrote so far.
struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<Value>,
    next_id: u64,
}

/// What one request got: its `line`s, `stderr`s and its `done`.
#[derive(Debug)]
struct Reply {
    lines: Vec<String>,
    stderr: Vec<String>,
    done: Value,
}

impl Reply {
    /// The last line that is a JSON object (what the plugin takes as the result).
    fn result(&self) -> Value {
        self.lines
            .iter()
            .rev()
            .find_map(|l| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(Value::is_object)
            })
            .unwrap_or(Value::Null)
    }

    fn text(&self) -> String {
        content_text(&self.lines.join("\n"))
    }
}

impl Daemon {
    fn start(mut cmd: Command) -> Daemon {
        let (child, stdin, lines) = spawn_piped(&mut cmd);
        Daemon {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            next_id: 0,
        }
    }

    fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write a request line");
        stdin.flush().expect("flush");
    }

    /// Sends `method` with `params` under the next numeric id (as the plugin counts).
    fn request(&mut self, method: &str, params: Value) -> String {
        self.next_id += 1;
        let id = self.next_id.to_string();
        self.write(&json!({"id": id, "method": method, "params": params}).to_string());
        id
    }

    /// The next stdout line (JSON; panics after two minutes of silence).
    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no output for 120 s; so far:\n{:#?}", self.seen));
        assert!(!line.contains(CANARY_KEY), "the API key leaked: {line}");
        let value: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.seen.push(value.clone());
        value
    }

    /// Reads until `pred` holds for a line; returns that line.
    fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.seen.iter().find(|v| pred(v)) {
            return found.clone();
        }
        loop {
            let value = self.next();
            if pred(&value) {
                return value;
            }
        }
    }

    /// Reads until request `id` is done; returns everything it got.
    fn reply(&mut self, id: &str) -> Reply {
        let done = self.until(|v| v["id"] == id && v["done"] == true);
        let of = |field: &str| -> Vec<String> {
            self.seen
                .iter()
                .filter(|v| v["id"] == id)
                .filter_map(|v| v[field].as_str().map(str::to_string))
                .collect()
        };
        let reply = Reply {
            lines: of("line"),
            stderr: of("stderr"),
            done,
        };
        let dones = self
            .seen
            .iter()
            .filter(|v| v["id"] == id && v["done"] == true)
            .count();
        assert_eq!(dones, 1, "exactly one done for {id}: {:#?}", self.seen);
        reply
    }

    /// `method` with `params`, waited for.
    fn call(&mut self, method: &str, params: Value) -> Reply {
        let id = self.request(method, params);
        self.reply(&id)
    }

    /// The `status` reply.
    fn status(&mut self) -> Value {
        let id = self.request("status", json!({}));
        let status = self.until(|v| v["id"] == id.as_str() && v["type"] == "status");
        self.reply(&id);
        status
    }

    /// The position of the first line that `pred` holds for.
    fn index_of(&self, pred: impl Fn(&Value) -> bool) -> Option<usize> {
        self.seen.iter().position(pred)
    }

    /// Closes stdin (as `DaemonBridge.stop()` does after `shutdown`) and waits for the exit.
    fn finish(mut self) -> (Option<i32>, Vec<Value>) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit after stdin EOF"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            if let Ok(value) = serde_json::from_str(&line) {
                self.seen.push(value);
            }
        }
        (status.code(), self.seen)
    }
}

/// The environment the plugin's `ClaudeBridgeUtils.buildDaemonEnv` puts in `params.env`.
fn plugin_env(sandbox: &Sandbox) -> Value {
    let cwd = sandbox.work().display().to_string();
    json!({"CLAUDE_USE_STDIN": "true", "IDEA_PROJECT_PATH": cwd, "PROJECT_PATH": cwd})
}

fn send_params(sandbox: &Sandbox, message: &str, extra: Value) -> Value {
    let mut params = json!({
        "message": message,
        "cwd": sandbox.work(),
        "env": plugin_env(sandbox),
    });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    params
}

fn claude_daemon(sandbox: &Sandbox, mock: &Mock, extra: &[&str]) -> Command {
    daemon_command(&claude_command(sandbox, &mock.url(), &[]), extra)
}

/// Waits (up to 20 s) until no process of group `pgid` is left.
fn gone(pgid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !group_alive(pgid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn claude_conversation_like_the_plugin_drives_it() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    // Lifecycle first: `starting`, then `ready`, before any request.
    let first = daemon.next();
    assert_eq!(
        (&first["type"], &first["event"]),
        (&json!("daemon"), &json!("starting"))
    );
    let ready = daemon.next();
    assert_eq!(ready["event"], "ready", "{ready}");
    assert_eq!(ready["pid"], daemon.child.id());

    let one = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text first turn", json!({})),
    );
    assert_eq!(one.done["success"], true, "{one:?}");
    let session = one.result()["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let pid = children_of(daemon.child.id());
    assert_eq!(pid.len(), 1, "one warm CLI: {pid:?}");

    let two = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:recall turn 2",
            json!({"sessionId": session}),
        ),
    );
    assert_eq!(two.done["success"], true, "{two:?}");
    assert!(
        two.text().contains("first turn"),
        "turn 2 did not see turn 1: {two:?}"
    );

    // A heartbeat sent while turn 3 streams is answered before the turn ends.
    let three = daemon.request(
        "claude.send",
        send_params(&sandbox, "MOCK:slow turn 3", json!({"sessionId": session})),
    );
    daemon.until(|v| {
        v["id"] == three.as_str()
            && v["line"]
                .as_str()
                .is_some_and(|l| l.starts_with("[CONTENT_DELTA]"))
    });
    daemon.write(r#"{"id":"hb-1","method":"heartbeat"}"#);
    daemon.until(|v| v["id"] == "hb-1" && v["type"] == "heartbeat");
    let three_reply = daemon.reply(&three);
    assert_eq!(three_reply.done["success"], true, "{three_reply:?}");
    let heartbeat = daemon
        .index_of(|v| v["id"] == "hb-1" && v["type"] == "heartbeat")
        .unwrap();
    let three_done = daemon
        .index_of(|v| v["id"] == three.as_str() && v["done"] == true)
        .unwrap();
    assert!(heartbeat < three_done, "the heartbeat waited for the turn");
    assert_eq!(
        children_of(daemon.child.id()),
        pid,
        "the same CLI served all three turns"
    );

    // The mock saw one conversation growing: turn 3's request carried turns 1 and 2.
    let last = mock.model_requests().pop().expect("model requests");
    assert!(
        last.body.to_string().contains("first turn"),
        "{:?}",
        last.body
    );

    let status = daemon.status();
    let sessions = status["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{status}");
    assert_eq!(sessions[0]["provider"], "claude");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert_eq!(sessions[0]["pid"], pid[0]);
    assert_eq!(sessions[0]["turns"], 3);
    assert!(
        sessions[0]["rssBytes"].as_u64().unwrap() > 1_000_000,
        "{status}"
    );

    // stdin EOF: the session is closed and nothing is left.
    let (code, seen) = daemon.finish();
    assert_eq!(code, Some(0));
    let shutdown = seen
        .iter()
        .find(|v| v["event"] == "shutdown")
        .expect("shutdown event");
    assert_eq!(shutdown["reason"], "stdin_closed");
    assert!(gone(pid[0]), "the CLI outlived the daemon");
}

#[test]
fn permission_mode_abort_and_shutdown() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    let written = sandbox.work().join("mock-written.txt");
    let plan = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:write create the file",
            json!({"permissionMode": "plan"}),
        ),
    );
    assert!(
        !written.exists(),
        "plan mode let the write through: {plan:?}"
    );
    let session = plan.result()["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let pid = children_of(daemon.child.id());

    let set = daemon.call(
        "claude.setPermissionMode",
        json!({"mode": "acceptEdits", "sessionId": session}),
    );
    assert_eq!(set.done["success"], true, "{set:?}");
    let edits = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:write create the file",
            json!({"sessionId": session}),
        ),
    );
    assert_eq!(edits.done["success"], true, "{edits:?}");
    assert!(
        written.exists(),
        "acceptEdits did not take effect: {edits:?}"
    );
    assert_eq!(
        children_of(daemon.child.id()),
        pid,
        "changed live, same CLI"
    );

    // `abort` mid-turn, as DaemonBridge.sendAbort sends it.
    let slow = daemon.request(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:slow a long answer",
            json!({"sessionId": session}),
        ),
    );
    daemon.until(|v| {
        v["id"] == slow.as_str()
            && v["line"]
                .as_str()
                .is_some_and(|l| l.starts_with("[CONTENT_DELTA]"))
    });
    daemon.write(&format!(r#"{{"id":"abort-{}","method":"abort"}}"#, 1));
    let aborted = daemon.reply(&slow);
    // The outcome is in-band, as per process (the plugin counts a failed `done` as a second
    // error): the final line says "User interrupted".
    assert_eq!(aborted.done["success"], true, "{aborted:?}");
    assert_eq!(aborted.result()["success"], false, "{aborted:?}");
    assert_eq!(aborted.result()["error"], "User interrupted", "{aborted:?}");
    let abort = daemon.reply("abort-1");
    assert_eq!(abort.done["success"], true);

    // The conversation goes on after the interrupt.
    let after = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:recall after the abort",
            json!({"sessionId": session}),
        ),
    );
    assert_eq!(after.done["success"], true, "{after:?}");
    assert!(after.text().contains("create the file"), "{after:?}");
    let cli = children_of(daemon.child.id());

    // `shutdown` as DaemonBridge.stop sends it: done, then the daemon exits by itself.
    daemon.write(r#"{"id":"shutdown","method":"shutdown"}"#);
    let done = daemon.reply("shutdown");
    assert_eq!(done.done["success"], true);
    let (code, seen) = daemon.finish();
    assert_eq!(code, Some(0));
    assert!(
        seen.iter()
            .any(|v| v["event"] == "shutdown" && v["reason"] == "requested")
    );
    for pid in cli {
        assert!(gone(pid), "CLI {pid} outlived the shutdown");
    }
}

#[test]
fn an_approval_answered_through_the_file_ipc() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let ipc_dir = sandbox.root().join("perm");
    let mut cmd = claude_daemon(&sandbox, &mock, &[]);
    cmd.env("CLAUDE_PERMISSION_DIR", &ipc_dir)
        .env("CLAUDE_SESSION_ID", "win-7");
    let mut daemon = Daemon::start(cmd);
    let dir = ipc_dir.clone();
    let plugin = std::thread::spawn(move || {
        answer_ipc_file(
            &dir,
            "request-win-7-",
            "response-win-7-",
            json!({"allow": true}),
        )
    });
    let reply = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:danger make a file", json!({})),
    );
    let asked = plugin.join().unwrap();
    assert_eq!(asked["toolName"], "Bash");
    assert_eq!(reply.done["success"], true, "{reply:?}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "{reply:?}"
    );
    daemon.finish();
}

#[test]
fn two_sessions_stream_at_once_and_stay_apart() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // One environment for both providers, as one plugin would have.
    let gemini = acp_command(Provider::Gemini, &sandbox, &mock.url(), &[]);
    let mut cmd = claude_daemon(&sandbox, &mock, &[]);
    for (key, value) in gemini.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    let mut daemon = Daemon::start(cmd);
    let claude = daemon.request(
        "claude.send",
        send_params(&sandbox, "MOCK:slow from claude", json!({})),
    );
    let gemini = daemon.request(
        "gemini.send",
        send_params(&sandbox, "MOCK:slow from gemini", json!({})),
    );
    let a = daemon.reply(&claude);
    let b = daemon.reply(&gemini);
    assert_eq!(a.done["success"], true, "{a:?}");
    assert_eq!(b.done["success"], true, "{b:?}");
    // Both streamed at the same time: each one's lines came before the other's done.
    let first_b = daemon
        .index_of(|v| v["id"] == gemini.as_str() && v.get("line").is_some())
        .unwrap();
    let done_a = daemon
        .index_of(|v| v["id"] == claude.as_str() && v["done"] == true)
        .unwrap();
    let first_a = daemon
        .index_of(|v| v["id"] == claude.as_str() && v.get("line").is_some())
        .unwrap();
    let done_b = daemon
        .index_of(|v| v["id"] == gemini.as_str() && v["done"] == true)
        .unwrap();
    assert!(
        first_b < done_a && first_a < done_b,
        "the turns ran one after the other"
    );
    // Each got its own answer and its own session.
    assert_eq!(a.text(), b.text(), "the same scenario answers both");
    assert!(!a.text().is_empty());
    let status = daemon.status();
    let providers: Vec<&str> = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers.len(), 2, "{status}");
    assert!(
        providers.contains(&"claude") && providers.contains(&"gemini"),
        "{status}"
    );
    daemon.finish();
}

#[test]
fn request_env_reaches_that_request_only_and_dangerous_names_never() {
    let script = mock_llm::scenario::Script {
        turns: vec![
            mock_llm::scenario::Turn::tool_use(vec![mock_llm::scenario::Step::ToolCall {
                name: "Bash".into(),
                input: json!({"command": "echo \"mark=${BRIDGE_DAEMON_MARK:-none} node=${NODE_OPTIONS:-none}\""}),
            }]),
            mock_llm::scenario::Turn::end_turn(vec![mock_llm::scenario::Step::Text(vec![
                "saw {tool_result}".into(),
            ])]),
        ],
    };
    let mock = Mock::with(mock_llm::Config::default().script("env", script));
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    let mut env = plugin_env(&sandbox);
    env["BRIDGE_DAEMON_MARK"] = json!("m-1");
    env["NODE_OPTIONS"] = json!("--require /tmp/evil.js");
    let with = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:env show",
            json!({"env": env, "permissionMode": "bypassPermissions"}),
        ),
    );
    assert_eq!(with.done["success"], true, "{with:?}");
    assert!(with.text().contains("mark=m-1 node=none"), "{with:?}");
    // A later conversation without the variable does not see it: it never reached the
    // daemon's own environment.
    let without = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:env show",
            json!({"permissionMode": "bypassPermissions"}),
        ),
    );
    assert!(
        without.text().contains("mark=none node=none"),
        "{without:?}"
    );
    daemon.finish();
}

#[test]
fn idle_sessions_close_and_resume_on_their_next_turn() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(
        &sandbox,
        &mock,
        &["--session-idle-timeout", "2"],
    ));
    let one = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text remember me", json!({})),
    );
    let session = one.result()["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let pid = children_of(daemon.child.id());
    assert_eq!(pid.len(), 1);
    assert!(gone(pid[0]), "the idle session's CLI was not closed");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !daemon.status()["sessions"].as_array().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the idle session stayed listed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let two = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:recall again", json!({"sessionId": session})),
    );
    assert_eq!(two.done["success"], true, "{two:?}");
    assert!(two.text().contains("remember me"), "not resumed: {two:?}");
    assert_eq!(two.result()["sessionId"], session.as_str());
    daemon.finish();
}

#[test]
fn the_warm_cap_closes_the_least_recently_used_session() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &["--max-warm", "1"]));
    let a = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text conversation a", json!({})),
    );
    let a_id = a.result()["sessionId"].as_str().unwrap().to_string();
    let a_pid = children_of(daemon.child.id());
    let b = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text conversation b", json!({})),
    );
    assert_eq!(b.done["success"], true, "{b:?}");
    assert!(gone(a_pid[0]), "a's CLI stayed over the cap");
    let warm: Vec<Value> = daemon.status()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["pid"].is_null())
        .cloned()
        .collect();
    assert_eq!(warm.len(), 1, "{warm:?}");
    assert_ne!(warm[0]["sessionId"], a_id.as_str());
    // a comes back transparently.
    let again = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:recall a again", json!({"sessionId": a_id})),
    );
    assert!(again.text().contains("conversation a"), "{again:?}");
    daemon.finish();
}

#[test]
fn bad_lines_and_unknown_methods_get_their_done_and_the_daemon_goes_on() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    daemon.write("this is not json");
    let bad = daemon.until(|v| v["done"] == true && v["id"].is_null());
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("not valid JSON"),
        "{bad}"
    );
    daemon.write(r#"{"id":"m1"}"#);
    let no_method = daemon.reply("m1");
    assert!(no_method.done["error"].as_str().unwrap().contains("method"));
    let dotless = daemon.call("send", json!({}));
    assert!(
        dotless.done["error"]
            .as_str()
            .unwrap()
            .contains("Invalid method format")
    );
    // The same error texts as the per-process path.
    let provider = daemon.call("nope.send", json!({"message": "hi"}));
    assert_eq!(
        provider.done["error"], "Invalid provider: nope",
        "{provider:?}"
    );
    let command = daemon.call("claude.frobnicate", json!({}));
    assert_eq!(
        command.done["error"], "Unknown Claude Code command: frobnicate",
        "{command:?}"
    );
    assert!(
        command
            .stderr
            .iter()
            .any(|l| l.starts_with("[COMMAND_ERROR]")),
        "{command:?}"
    );
    let request = daemon.call("claude.send", json!({"message": 7}));
    assert_eq!(request.result()["success"], false, "{request:?}");
    assert!(
        request.lines.iter().any(|l| l.starts_with("[SEND_ERROR]")),
        "{request:?}"
    );
    // A system command runs as it does per process.
    let system = daemon.call("system.getSdkStatus", json!({}));
    assert_eq!(system.done["success"], true, "{system:?}");
    assert!(system.result().is_object(), "{system:?}");
    // And a real turn still works.
    let ok = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text still here", json!({})),
    );
    assert_eq!(ok.done["success"], true, "{ok:?}");
    daemon.finish();
}

#[test]
fn preconnect_starts_the_cli_before_the_first_message() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    let pre = daemon.call(
        "claude.preconnect",
        // As ClaudeSDKBridge prewarms: empty session id, mode and model, the chat's epoch.
        json!({"cwd": sandbox.work(), "sessionId": "", "runtimeSessionEpoch": "epoch-1",
               "permissionMode": "", "model": "", "streaming": true, "env": plugin_env(&sandbox)}),
    );
    assert_eq!(pre.done["success"], true, "{pre:?}");
    let warm = children_of(daemon.child.id());
    assert_eq!(warm.len(), 1, "preconnect started no CLI");
    assert!(
        mock.model_requests().is_empty(),
        "preconnect sent a message"
    );
    let turn = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:text hello",
            json!({"runtimeSessionEpoch": "epoch-1"}),
        ),
    );
    assert_eq!(turn.done["success"], true, "{turn:?}");
    assert_eq!(
        children_of(daemon.child.id()),
        warm,
        "the turn used the pre-started CLI"
    );
    // resetRuntime with the chat's epoch (all the plugin sends) closes it; the next turn
    // resumes the conversation in a new CLI.
    let session = turn.result()["sessionId"].as_str().unwrap().to_string();
    let reset = daemon.call(
        "claude.resetRuntime",
        json!({"runtimeSessionEpoch": "epoch-1"}),
    );
    assert_eq!(reset.done["success"], true);
    assert!(gone(warm[0]), "resetRuntime left the CLI running");
    let again = daemon.call(
        "claude.send",
        send_params(
            &sandbox,
            "MOCK:recall after the reset",
            json!({"sessionId": session, "runtimeSessionEpoch": "epoch-2"}),
        ),
    );
    assert!(again.text().contains("hello"), "{again:?}");
    daemon.finish();
}

/// Codex in the daemon, as the plugin drives it (`codex.send` with the `threadId` of the turn
/// before): one app-server serves both turns of the thread, and an escalation in turn 2 is
/// answered through the plugin's file IPC.
#[test]
fn codex_turns_share_one_app_server_and_approvals_reach_the_plugin() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let ipc_dir = sandbox.root().join("perm");
    let mut cmd = daemon_command(&codex_command(&sandbox, &[]), &[]);
    cmd.env("CLAUDE_PERMISSION_DIR", &ipc_dir)
        .env("CLAUDE_SESSION_ID", "win-9");
    let mut daemon = Daemon::start(cmd);
    let params = |message: &str, extra: Value| {
        let mut params = send_params(&sandbox, message, extra);
        params["model"] = json!("gpt-5.5");
        params["baseUrl"] = json!(mock.api_base());
        params["apiKey"] = json!(CANARY_KEY);
        params
    };
    let one = daemon.call("codex.send", params("MOCK:text first turn", json!({})));
    assert_eq!(one.done["success"], true, "{one:?}");
    let thread = one.result()["threadId"]
        .as_str()
        .expect("threadId")
        .to_string();
    let pid = children_of(daemon.child.id());
    assert_eq!(pid.len(), 1, "one app-server: {pid:?}");

    let dir = ipc_dir.clone();
    let plugin = std::thread::spawn(move || {
        answer_ipc_file(
            &dir,
            "request-win-9-",
            "response-win-9-",
            json!({"allow": true}),
        )
    });
    let two = daemon.call(
        "codex.send",
        params("MOCK:escalate write it", json!({"threadId": thread})),
    );
    let asked = plugin.join().unwrap();
    assert_eq!(asked["toolName"], "Bash", "{asked}");
    assert_eq!(two.done["success"], true, "{two:?}");
    assert_eq!(two.result()["threadId"], thread.as_str(), "{two:?}");
    assert!(
        sandbox.work().join("mock_escalated.txt").exists(),
        "{two:?}"
    );
    assert_eq!(children_of(daemon.child.id()), pid, "the same app-server");
    // The context meter: Codex cannot be asked, its last turn said how full the context is.
    let context = daemon.call("codex.getContextUsage", json!({"sessionId": thread}));
    assert_eq!(context.done["success"], true, "{context:?}");
    let data = &context.result()["data"];
    let (used, max) = (
        data["totalTokens"].as_u64().unwrap_or_default(),
        data["maxTokens"].as_u64().unwrap_or_default(),
    );
    assert!(used > 0 && max > used, "{data}");
    assert_eq!(data["source"], "last_turn_usage", "{data}");
    assert_eq!(data["model"], "gpt-5.5", "{data}");
    assert_eq!(children_of(daemon.child.id()), pid, "asked nothing new");
    let (code, _) = daemon.finish();
    assert_eq!(code, Some(0));
    assert!(gone(pid[0]), "the app-server's group is gone after EOF");
}

#[test]
fn context_usage_and_usage_come_from_the_warm_session_and_per_process_otherwise() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut daemon = Daemon::start(claude_daemon(&sandbox, &mock, &[]));
    let turn = daemon.call(
        "claude.send",
        send_params(&sandbox, "MOCK:text first turn", json!({})),
    );
    assert_eq!(turn.done["success"], true, "{turn:?}");
    let session = turn.result()["sessionId"].as_str().unwrap().to_string();
    let warm = children_of(daemon.child.id());
    assert_eq!(warm.len(), 1, "{warm:?}");

    // As ClaudeSDKBridge asks: `{sessionId, cwd, model}`; one line `{"success":true,"data":…}`.
    let params = json!({"sessionId": session, "cwd": sandbox.work(), "model": ""});
    let context = daemon.call("claude.getContextUsage", params.clone());
    assert_eq!(context.done["success"], true, "{context:?}");
    assert_eq!(context.lines.len(), 1, "{context:?}");
    let data = &context.result()["data"];
    assert_eq!(context.result()["success"], true);
    let (used, max) = (
        data["totalTokens"].as_u64().unwrap(),
        data["maxTokens"].as_u64().unwrap(),
    );
    assert!(used > 0 && max >= 100_000 && used < max, "{data}");
    assert!(data["categories"].as_array().is_some_and(|c| !c.is_empty()));
    // What the warm process spent: only it can tell (per process this is an error).
    let usage = daemon.call("claude.getUsage", params);
    assert_eq!(usage.done["success"], true, "{usage:?}");
    let spent = usage.result()["data"]["session"]["total_cost_usd"].as_f64();
    assert!(spent.is_some_and(|c| c > 0.0), "{usage:?}");
    assert_eq!(
        children_of(daemon.child.id()),
        warm,
        "asked the warm CLI, started nothing"
    );

    // No warm session: the per-process command (a fresh CLI for the cwd, or a refusal).
    let fresh = daemon.call("claude.getContextUsage", json!({"cwd": sandbox.work()}));
    assert_eq!(fresh.done["success"], true, "{fresh:?}");
    assert!(
        fresh.result()["data"]["maxTokens"].as_u64().is_some(),
        "{fresh:?}"
    );
    let cold = daemon.call(
        "claude.getUsage",
        json!({"sessionId": "6f1c0f4e-0000-4000-8000-000000000000"}),
    );
    assert_eq!(cold.done["success"], false, "{cold:?}");
    assert!(
        cold.result()["error"]
            .as_str()
            .is_some_and(|e| e.contains("warm daemon session")),
        "{cold:?}"
    );
    daemon.finish();
}
