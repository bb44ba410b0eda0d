//! `bridge acp <provider>` driven by real ACP clients nobody here wrote: acpx (a headless ACP
//! client, pinned in tests/install-clis.sh) and the official TypeScript SDK's
//! `ClientSideConnection` (tests/acp_conformance.mjs), against the real CLIs and the project's
//! mock model server, in the loopback-only namespace.

mod common;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::acp::processes_in;
use common::{CANARY_KEY, Mock, Sandbox, claude_command, cli_path};
use serde_json::{Value, json};

/// acpx driving `bridge acp <provider>` with the environment of a `bridge <provider> send`.
struct Acpx {
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    agent: String,
}

impl Acpx {
    /// acpx for the provider `cmd` (a `bridge <provider> send` command) runs.
    fn for_send(cmd: &Command, provider: &str) -> Acpx {
        let env = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_os_string(), v?.to_os_string())))
            .collect();
        Acpx {
            env,
            cwd: cmd
                .get_current_dir()
                .expect("the send runs in the sandbox")
                .to_path_buf(),
            agent: format!("{} acp {provider}", env!("CARGO_BIN_EXE_bridge")),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(cli_path("acpx"));
        cmd.env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .arg("--agent")
            .arg(&self.agent)
            .arg("--cwd")
            .arg(&self.cwd)
            .args(args);
        cmd
    }

    /// Runs acpx with `args` to its end (two minutes at most).
    fn run(&self, args: &[&str]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn acpx");
        let deadline = Instant::now() + Duration::from_secs(120);
        while child.try_wait().expect("wait acpx").is_none() {
            assert!(
                Instant::now() < deadline,
                "acpx {args:?} ran for two minutes"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let output = child.wait_with_output().expect("acpx output");
        let (stdout, stderr) = texts(&output);
        assert!(
            !stdout.contains(CANARY_KEY) && !stderr.contains(CANARY_KEY),
            "the API key leaked"
        );
        output
    }

    /// Runs acpx and expects success; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let (stdout, stderr) = texts(&output);
        assert!(
            output.status.success(),
            "acpx {args:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        );
        stdout
    }
}

fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The JSON-RPC messages of an `acpx --format json` run (its other lines skipped).
fn messages(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m.get("jsonrpc").is_some())
        .collect()
}

fn updates<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| {
            m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind
        })
        .map(|m| &m["params"]["update"])
        .collect()
}

/// The texts of the `kind` chunks among `messages`, in order.
fn chunk_texts<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a str> {
    updates(messages, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn stop_reasons(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m["result"]["stopReason"].as_str().map(str::to_string))
        .collect()
}

/// The agent's processes (the bridge and the CLI it runs) with a working directory in `dir`;
/// acpx's own processes are not counted.
fn agent_processes(dir: &Path) -> Vec<String> {
    processes_in(dir)
        .into_iter()
        .filter(|p| !p.contains("acpx"))
        .collect()
}

/// Waits up to `secs` for the agent's processes in `dir` to be gone; those still there.
fn left_after(dir: &Path, secs: u64) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = agent_processes(dir);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Fails with `what` unless the agent's processes in `dir` are gone within 20 s.
fn assert_none_left(dir: &Path, what: &str) {
    let left = left_after(dir, 20);
    assert!(left.is_empty(), "{what}: {left:?}");
}

/// Closes acpx's session: the agent and its CLI must be gone.
fn close_and_check(acpx: &Acpx, sandbox: &Sandbox) {
    acpx.ok(&["sessions", "close"]);
    assert_none_left(sandbox.root(), "no agent process after the session closed");
}

fn claude_acpx(sandbox: &Sandbox, mock: &Mock) -> Acpx {
    Acpx::for_send(&claude_command(sandbox, &mock.url(), &[]), "claude")
}

/// A session through acpx: a text turn (the exact text), a second turn whose model request
/// carries the first (the mock's `recall`), then `sessions close` leaves no agent process.
fn two_turns_with_history(acpx: &Acpx, sandbox: &Sandbox) {
    acpx.ok(&["--ttl", "30", "sessions", "new"]);
    let first = acpx.ok(&["--ttl", "30", "--format", "quiet", "MOCK:text hello"]);
    assert_eq!(first.trim(), mock_llm::scenario::HELLO_TEXT);
    let second = acpx.ok(&[
        "--ttl",
        "30",
        "--format",
        "quiet",
        "MOCK:recall what did I say",
    ]);
    assert!(
        second.contains("MOCK:text hello") && second.contains("MOCK:recall what did I say"),
        "the second turn's model request carries the first turn: {second}"
    );
    close_and_check(acpx, sandbox);
}

#[test]
fn acpx_claude_text_then_a_second_turn_with_history_then_close_leaves_nothing() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    two_turns_with_history(&claude_acpx(&sandbox, &mock), &sandbox);
}

/// After acpx's agent ended (its `--ttl 1`), the next prompt starts a new agent, which reopens
/// the session (`session/resume`, advertised with `session/load`) and carries the earlier
/// `MOCK:text hello` turn to the model; then the session is closed. The reopened ACP id.
fn reopened_by_a_new_agent(acpx: &Acpx, sandbox: &Sandbox) -> Value {
    assert_none_left(sandbox.root(), "the agent ends with acpx's queue owner");
    let out = acpx.ok(&[
        "--ttl",
        "1",
        "--format",
        "json",
        "MOCK:recall what did I say",
    ]);
    let all = messages(&out);
    let reopened = all
        .iter()
        .find(|m| m["method"] == "session/resume" || m["method"] == "session/load")
        .unwrap_or_else(|| panic!("acpx reopens the session: {out}"));
    let text: String = updates(&all, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(
        text.contains("MOCK:text hello") && text.contains("MOCK:recall what did I say"),
        "the resumed conversation carries the first turn: {text}"
    );
    close_and_check(acpx, sandbox);
    reopened["params"]["sessionId"].clone()
}

/// acpx with an agent that ends between prompts (`--ttl 1`): a session, `MOCK:text hello`,
/// the session reopened by a new agent ([`reopened_by_a_new_agent`]); then `session/load` of
/// it in the agent `cmd` starts. The session id and every message of that load.
fn loaded_after_a_reopen(acpx: &Acpx, sandbox: &Sandbox, cmd: Command) -> (Value, Vec<Value>) {
    acpx.ok(&["--ttl", "1", "sessions", "new"]);
    let first = acpx.ok(&["--ttl", "1", "--format", "quiet", "MOCK:text hello"]);
    assert_eq!(first.trim(), mock_llm::scenario::HELLO_TEXT);
    let id = reopened_by_a_new_agent(acpx, sandbox);
    let load = json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{
        "sessionId": id, "cwd": sandbox.work(), "mcpServers": []}});
    (id, raw_session_of(cmd, &[load]))
}

/// acpx's agent process ends between two prompts (its queue owner's TTL): the next prompt
/// starts a new `bridge acp claude`, which resumes the session and its conversation; by hand,
/// `session/load` replays the earlier turns as updates and `session/resume` does not.
#[test]
fn acpx_claude_session_loaded_by_a_new_agent_process_resumes_the_conversation() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = claude_acpx(&sandbox, &mock);
    // session/load replays the history as updates.
    let (id, replay) = loaded_after_a_reopen(&acpx, &sandbox, bridge_acp_claude(&sandbox, &mock));
    let user = chunk_texts(&replay, "user_message_chunk");
    assert_eq!(
        user,
        ["MOCK:text hello", "MOCK:recall what did I say"],
        "{replay:#?}"
    );
    assert!(
        !updates(&replay, "agent_message_chunk").is_empty(),
        "{replay:#?}"
    );
    let answer = replay
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the load's answer");
    assert_eq!(
        answer["result"]["modes"]["currentModeId"], "default",
        "{answer}"
    );
    let init = replay.iter().find(|m| m["id"] == 0).expect("initialize");
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["resume"],
        json!({}),
        "{init}"
    );
    // session/resume: no replay, and the next turn continues the conversation.
    let resume = json!({"jsonrpc":"2.0","id":1,"method":"session/resume","params":{
        "sessionId": id, "cwd": sandbox.work(), "mcpServers": []}});
    let prompt = json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{
        "sessionId": id, "prompt": [{"type": "text", "text": "MOCK:recall and now?"}]}});
    let resumed = raw_session(&sandbox, &mock, &[resume, prompt]);
    assert!(
        updates(&resumed, "user_message_chunk").is_empty(),
        "{resumed:#?}"
    );
    let text: String = updates(&resumed, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(
        text.contains("MOCK:text hello") && text.contains("MOCK:recall and now?"),
        "{text}"
    );
    assert_none_left(sandbox.root(), "no agent process after the raw sessions");
}

/// `bridge acp claude` with the environment of a `bridge claude send` against `mock`.
fn bridge_acp_claude(sandbox: &Sandbox, mock: &Mock) -> Command {
    let send = claude_command(sandbox, &mock.url(), &[]);
    let mut cmd = common::bridge();
    cmd.env_clear()
        .envs(send.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(sandbox.work())
        .args(["acp", "claude"]);
    cmd
}

/// `bridge acp claude` fed `initialize` and then `requests` (ids from 1), read until the answer
/// to the last one; every message it sent.
fn raw_session(sandbox: &Sandbox, mock: &Mock, requests: &[Value]) -> Vec<Value> {
    raw_session_of(bridge_acp_claude(sandbox, mock), requests)
}

/// [`raw_session`] of the agent `cmd` starts.
fn raw_session_of(mut cmd: Command, requests: &[Value]) -> Vec<Value> {
    let (mut child, stdin, lines) = common::spawn_piped(&mut cmd);
    let mut stdin = stdin.unwrap();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}});
    for request in std::iter::once(&init).chain(requests) {
        writeln!(stdin, "{request}").unwrap();
    }
    let last = requests.last().map_or(json!(0), |r| r["id"].clone());
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) {
        assert!(!line.contains(CANARY_KEY), "the API key leaked");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        let done = message["id"] == last && message.get("method").is_none();
        seen.push(message);
        if done {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    seen
}

/// Gemini's own ACP agent behind the bridge's ACP agent (warm, one `gemini --acp`).
#[test]
fn acpx_gemini_text_then_a_second_turn_with_history() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = common::acp::acp_command(common::acp::Provider::Gemini, &sandbox, &mock.url(), &[]);
    two_turns_with_history(&Acpx::for_send(&send, "gemini"), &sandbox);
}

/// acpx for Codex through its app-server: the mock's Responses API through the bridge's
/// provider variables (no request fields over ACP), model `gpt-5.5`.
fn codex_acpx(sandbox: &Sandbox, mock: &Mock) -> Acpx {
    let mut send = common::codex_command(sandbox, &[]);
    send.env("BRIDGE_CODEX_BASE_URL", mock.api_base())
        .env("BRIDGE_CODEX_API_KEY", CANARY_KEY);
    let mut acpx = Acpx::for_send(&send, "codex");
    acpx.agent.push_str(" --model gpt-5.5");
    acpx
}

/// `bridge acp codex` with the environment acpx gives it (the mock behind the bridge's
/// provider variables).
fn bridge_acp_codex(acpx: &Acpx) -> Command {
    let mut cmd = common::bridge();
    cmd.env_clear()
        .envs(acpx.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&acpx.cwd)
        .args(["acp", "codex", "--model", "gpt-5.5"]);
    cmd
}

/// Codex threads are loadable (`getSession` reads the rollout): acpx's agent ends between two
/// prompts, the next one resumes the thread in a new `bridge acp codex`; by hand,
/// `session/list` lists the thread under its ACP id with its first prompt and `session/load`
/// replays the prompts, the command and the answers.
#[test]
fn acpx_codex_thread_loaded_by_a_new_agent_process_resumes_and_replays() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = codex_acpx(&sandbox, &mock);
    acpx.ok(&["--ttl", "1", "sessions", "new"]);
    let first = acpx.ok(&["--ttl", "1", "--format", "quiet", "MOCK:text hello"]);
    assert_eq!(first.trim(), mock_llm::scenario::HELLO_TEXT);
    let tool = acpx.ok(&[
        "--ttl",
        "1",
        "--approve-all",
        "--format",
        "quiet",
        "MOCK:tool run it",
    ]);
    assert!(tool.contains("Output was: hello"), "{tool}");
    let id = reopened_by_a_new_agent(&acpx, &sandbox);

    let list =
        json!({"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd": sandbox.work()}});
    let load = json!({"jsonrpc":"2.0","id":2,"method":"session/load","params":{
        "sessionId": id, "cwd": sandbox.work(), "mcpServers": []}});
    let seen = raw_session_of(bridge_acp_codex(&acpx), &[list, load]);
    let init = seen.iter().find(|m| m["id"] == 0).expect("initialize");
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    let listed = seen.iter().find(|m| m["id"] == 1).expect("the list");
    let sessions = listed["result"]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], id, "{listed}");
    assert_eq!(sessions[0]["title"], "MOCK:text hello", "{listed}");
    let user: Vec<&str> = updates(&seen, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(
        user,
        [
            "MOCK:text hello",
            "MOCK:tool run it",
            "MOCK:recall what did I say"
        ],
        "{seen:#?}"
    );
    let calls = updates(&seen, "tool_call");
    assert_eq!(calls.len(), 1, "{seen:#?}");
    assert_eq!(
        calls[0]["rawInput"]["command"],
        mock_llm::scenario::TOOL_COMMAND,
        "{seen:#?}"
    );
    let outputs = updates(&seen, "tool_call_update");
    assert!(
        outputs
            .iter()
            .any(|u| u["status"] == "completed" && u["rawOutput"] == "hello\n"),
        "{seen:#?}"
    );
    let said: String = updates(&seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(
        said.contains(mock_llm::scenario::HELLO_TEXT) && said.contains("Output was: hello"),
        "{said}"
    );
    assert_none_left(sandbox.root(), "no agent process after the raw session");
}

/// Codex through the app-server (one warm process): two turns in one session.
#[test]
fn acpx_codex_text_then_a_second_turn_with_history() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    two_turns_with_history(&codex_acpx(&sandbox, &mock), &sandbox);
}

/// A Codex turn ends with a `usage_update`: the context of its last model call and the
/// model's context window, from the app-server's token usage.
#[test]
fn acpx_codex_turn_reports_its_context_usage() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = codex_acpx(&sandbox, &mock);
    let out = acpx.ok(&["--format", "json", "exec", "MOCK:text hi"]);
    let all = messages(&out);
    assert_eq!(stop_reasons(&all), vec!["end_turn"], "{out}");
    let usage = updates(&all, "usage_update");
    assert_eq!(usage.len(), 1, "{out}");
    assert!(usage[0]["used"].as_u64().unwrap() > 0, "{}", usage[0]);
    assert!(usage[0]["size"].as_u64().unwrap() > 0, "{}", usage[0]);
    assert_none_left(sandbox.root(), "no agent process after a one-shot exec");
}

/// Codex asks to leave its sandbox (`MOCK:escalate`): acpx allows it (the command runs) or
/// denies it (nothing runs, the turn goes on).
#[test]
fn acpx_codex_escalation_allowed_and_denied_through_the_client() {
    for (policy, code, runs) in [("--approve-all", 0, true), ("--deny-all", 5, false)] {
        let mock = Mock::start();
        let sandbox = Sandbox::new();
        let acpx = codex_acpx(&sandbox, &mock);
        let output = acpx.run(&[policy, "--format", "json", "exec", "MOCK:escalate write it"]);
        let (out, err) = texts(&output);
        assert_eq!(output.status.code(), Some(code), "{policy}: {out}\n{err}");
        let all = messages(&out);
        assert_eq!(
            all.iter()
                .filter(|m| m["method"] == "session/request_permission")
                .count(),
            1,
            "{policy}: {out}"
        );
        assert_eq!(
            sandbox.work().join("mock_escalated.txt").exists(),
            runs,
            "{policy}: {out}"
        );
        assert_eq!(stop_reasons(&all), vec!["end_turn"], "{policy}: {out}");
        assert_none_left(sandbox.root(), "no agent process after the exec");
    }
}

/// pi runs a process per turn: the second turn respawns it and resumes the conversation.
#[test]
fn acpx_pi_text_then_a_second_turn_with_history() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    common::write_pi_models(&sandbox, &mock.api_base());
    let mut acpx = Acpx::for_send(&common::pi_command(&sandbox, &[]), "pi");
    acpx.agent.push_str(" --model mock/mock-model");
    two_turns_with_history(&acpx, &sandbox);
}

#[test]
fn acpx_claude_one_shot_streams_chunks_and_leaves_no_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = claude_acpx(&sandbox, &mock);
    let out = acpx.ok(&["--format", "json", "exec", "MOCK:text hi"]);
    let all = messages(&out);
    let text: String = updates(&all, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock model.");
    assert_eq!(stop_reasons(&all), vec!["end_turn"]);
    let init = all
        .iter()
        .find(|m| m["id"] == 0 && m.get("result").is_some())
        .expect("the initialize answer");
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert!(
        !init["result"]["authMethods"].as_array().unwrap().is_empty(),
        "at least one auth method (the ACP registry requires one)"
    );
    assert_none_left(sandbox.root(), "no agent process after a one-shot exec");
}

/// Runs `MOCK:danger` (a shell command Claude asks approval for in its default mode) through
/// acpx with `policy` (`--approve-all` or `--deny-all`), which exits with `code` (acpx says
/// 5, "permission denied", when it refused one); acpx's JSON messages, and whether the command
/// ran.
fn danger_with(policy: &str, code: i32) -> (Vec<Value>, bool) {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = claude_acpx(&sandbox, &mock);
    let output = acpx.run(&[
        policy,
        "--format",
        "json",
        "exec",
        "MOCK:danger make a file",
    ]);
    let (out, err) = texts(&output);
    assert_eq!(output.status.code(), Some(code), "{out}\n{err}");
    let created = sandbox.work().join("mock-created.txt").exists();
    assert_none_left(sandbox.root(), "no agent process after the exec");
    (messages(&out), created)
}

#[test]
fn acpx_claude_approval_allowed_through_the_client_runs_the_command() {
    let (all, created) = danger_with("--approve-all", 0);
    let asks: Vec<&Value> = all
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(asks.len(), 1, "one approval asked: {all:#?}");
    let kinds: Vec<&str> = asks[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{kinds:?}"
    );
    assert_eq!(asks[0]["params"]["toolCall"]["kind"], "execute");
    let call = updates(&all, "tool_call");
    assert_eq!(call.len(), 1, "{all:#?}");
    assert_eq!(call[0]["kind"], "execute");
    assert!(
        call[0]["title"]
            .as_str()
            .unwrap()
            .contains("touch mock-created.txt")
    );
    let done = updates(&all, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .count();
    assert_eq!(done, 1, "the call completed: {all:#?}");
    assert!(created, "the allowed command ran");
    assert_eq!(stop_reasons(&all), vec!["end_turn"]);
}

#[test]
fn acpx_claude_approval_denied_through_the_client_does_not_run_and_the_turn_goes_on() {
    let (all, created) = danger_with("--deny-all", 5);
    assert!(!created, "the denied command did not run");
    let failed: Vec<&Value> = updates(&all, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "failed")
        .collect();
    assert!(!failed.is_empty(), "the refused call failed: {all:#?}");
    // A denial is a rejection the model sees, never `cancelled`: the turn ends normally.
    assert_eq!(stop_reasons(&all), vec!["end_turn"]);
}

#[test]
fn acpx_claude_cancel_mid_turn_answers_cancelled_and_the_session_goes_on() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = claude_acpx(&sandbox, &mock);
    acpx.ok(&["--ttl", "30", "sessions", "new"]);
    let mut prompt = acpx
        .command(&["--ttl", "30", "--format", "json", "MOCK:slow count"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the prompt");
    let mut lines = BufReader::new(prompt.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Cancel once the answer streams.
    for line in lines.by_ref() {
        let line = line.expect("read acpx");
        let chunk = line.contains("agent_message_chunk");
        seen.push(line);
        if chunk {
            break;
        }
    }
    acpx.ok(&["cancel"]);
    seen.extend(lines.map_while(Result::ok));
    let status = prompt.wait().expect("the prompt ends");
    let all = messages(&seen.join("\n"));
    assert_eq!(
        stop_reasons(&all),
        vec!["cancelled"],
        "status {status}:\n{}",
        seen.join("\n")
    );
    let chunks = updates(&all, "agent_message_chunk").len();
    assert!(
        chunks < 40,
        "the stream stopped early ({chunks} of 40 chunks)"
    );
    // The session is still usable.
    let next = acpx.ok(&["--ttl", "30", "--format", "quiet", "MOCK:text again"]);
    assert_eq!(next.trim(), "Hello from the mock model.");
    close_and_check(&acpx, &sandbox);
}

/// `bridge acp claude` under a `sh` that the test kills: the bridge's stdin stays open (the
/// test holds it), so only the parent's death can end it.
#[test]
fn parent_killed_mid_turn_leaves_no_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let mut cmd = Command::new("sh");
    cmd.env_clear()
        .envs(send.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(sandbox.work())
        .arg("-c")
        // Through fd 3: a background job's stdin is /dev/null otherwise (dash applies that
        // before a `<&0`).
        .arg("exec 3<&0; \"$0\" acp claude <&3 3<&- & echo \"pid $!\"; wait")
        .arg(env!("CARGO_BIN_EXE_bridge"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut parent = cmd.spawn().expect("spawn sh");
    let mut stdin = parent.stdin.take().unwrap();
    let mut lines = BufReader::new(parent.stdout.take().unwrap()).lines();
    let mut send_line = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let cwd = sandbox.work().to_string_lossy().into_owned();
    send_line(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
    send_line(
        json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":cwd,"mcpServers":[]}}),
    );
    let mut session = None;
    let mut bridge_pid = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(pid) = line.strip_prefix("pid ") {
            bridge_pid = Some(pid.to_string());
            continue;
        }
        let m: Value = serde_json::from_str(&line).unwrap();
        if m["id"] == 1 {
            session = m["result"]["sessionId"].as_str().map(str::to_string);
            break;
        }
    }
    let session = session.expect("a session");
    send_line(
        json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":session,"prompt":[{"type":"text","text":"MOCK:slow count"}]}}),
    );
    for line in lines.by_ref() {
        if line.unwrap().contains("agent_message_chunk") {
            break;
        }
    }
    assert!(
        agent_processes(sandbox.root()).len() >= 2,
        "the bridge and its CLI run"
    );
    parent.kill().expect("kill the parent");
    let _ = parent.wait();
    assert_none_left(
        sandbox.root(),
        &format!("the bridge ({bridge_pid:?}) and its CLI end with their parent"),
    );
    drop(stdin);
}

/// Raw protocol faults: a line that is not JSON, an unknown method, a prompt before
/// `initialize`, a prompt for an unknown session: JSON-RPC errors, and the connection goes on.
#[test]
fn protocol_faults_are_json_rpc_errors_and_the_agent_goes_on() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (mut child, stdin, lines) = common::spawn_piped(&mut bridge_acp_claude(&sandbox, &mock));
    let mut stdin = stdin.unwrap();
    let next = || -> Value {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer");
        serde_json::from_str(&line).expect("JSON")
    };
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"/"}}}}"#
    )
    .unwrap();
    assert_eq!(next()["error"]["code"], -32600, "before initialize");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"initialize","params":{{"protocolVersion":1}}}}"#
    )
    .unwrap();
    assert_eq!(next()["result"]["protocolVersion"], 1);
    writeln!(stdin, "this is not json").unwrap();
    let bad = next();
    assert_eq!(
        (bad["id"].clone(), bad["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":3,"method":"no/such","params":{{}}}}"#
    )
    .unwrap();
    let unknown = next();
    assert_eq!(
        (unknown["id"].clone(), unknown["error"]["code"].clone()),
        (json!(3), json!(-32601))
    );
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{{"sessionId":"nope","prompt":[]}}}}"#).unwrap();
    let unknown_session = next();
    assert_eq!(unknown_session["id"], 4);
    assert!(
        unknown_session["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session")
    );
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":5,"method":"session/new","params":{{"cwd":"relative"}}}}"#
    )
    .unwrap();
    assert_eq!(next()["error"]["code"], -32602, "a relative cwd");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":6,"method":"authenticate","params":{{"methodId":"cli-login"}}}}"#
    )
    .unwrap();
    assert_eq!(next()["id"], 6);
    drop(stdin);
    let status = child.wait().expect("the agent exits on stdin EOF");
    assert!(status.success(), "{status}");
}

/// No `initialize` in time: the agent gives up (a bounded handshake).
#[test]
fn no_initialize_in_time_ends_the_agent() {
    let sandbox = Sandbox::new();
    let mut cmd = common::bridge();
    cmd.current_dir(sandbox.work())
        .env("BRIDGE_ACP_HANDSHAKE_TIMEOUT", "1")
        .args(["acp", "claude"]);
    let (mut child, _stdin, _lines) = common::spawn_piped(&mut cmd);
    let started = Instant::now();
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(1));
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The official TypeScript SDK's `ClientSideConnection` (tests/acp_conformance.mjs) against
/// `bridge acp claude`: every message the agent sends passes the SDK's schemas; the handshake,
/// a text turn, mode changes, an approval and a cancel behave.
#[test]
fn the_official_sdk_client_validates_every_message_of_a_session() {
    let sdk = std::env::var("BRIDGE_LIB_ACP_SDK").expect(
        "BRIDGE_LIB_ACP_SDK names the pinned @agentclientprotocol/sdk: run tests/install-clis.sh and source its path.env",
    );
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_conformance.mjs");
    let output = Command::new("node")
        .env_clear()
        .envs(send.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(sandbox.work())
        .arg(script)
        .arg(sdk)
        .arg(sandbox.work())
        .args([env!("CARGO_BIN_EXE_bridge"), "acp", "claude"])
        .stderr(Stdio::inherit())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains(CANARY_KEY), "the API key leaked");
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}):\n{stdout}"));
    eprintln!(
        "sdk conformance: {} messages checked, session/new answered {} ms after spawn, exit {} ms after stdin EOF",
        report["checked"], report["newSessionMs"], report["exitMs"]
    );
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert!(report["checked"].as_u64().unwrap() > 20, "{report:#}");
    assert_eq!(report["initialize"]["protocolVersion"], 1);
    assert_eq!(
        report["modes"],
        json!(["default", "acceptEdits", "plan", "bypassPermissions"])
    );
    assert_eq!(report["unknownModeError"], -32602);
    assert_eq!(report["closedSessionError"], -32602, "{report:#}");
    assert_eq!(
        report["stopReasons"],
        json!(["end_turn", "end_turn", "cancelled"]),
        "{report:#}"
    );
    assert_eq!(report["texts"][0], "Hello from the mock model.");
    assert_eq!(
        report["permissions"],
        json!([{"kinds": ["allow_once", "allow_always", "reject_once"], "toolKind": "execute"}]),
        "{report:#}"
    );
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command ran"
    );
    let kinds: Vec<&str> = report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in ["agent_message_chunk", "tool_call", "tool_call_update"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert!(
        report["cancelledChunks"].as_u64().unwrap() < 40,
        "{report:#}"
    );
    // A usage_update after each completed turn (the cancelled one reports none): the context
    // used, Claude's context window (its result's `modelUsage`), the session's cost so far.
    let usage = report["usage"].as_array().expect("usage updates");
    assert!(usage.len() >= 2, "{report:#}");
    for update in usage {
        assert!(update["used"].as_u64().unwrap() > 0, "{update}");
        assert!(update["size"].as_u64().unwrap() >= 100_000, "{update}");
        assert_eq!(update["cost"]["currency"], "USD", "{update}");
    }
    assert!(
        usage[1]["cost"]["amount"].as_f64() >= usage[0]["cost"]["amount"].as_f64(),
        "the cost is the session's, cumulative: {usage:?}"
    );
    assert_eq!(
        report["exit"]["code"], 0,
        "the agent ends on stdin EOF: {report:#}"
    );
    assert_none_left(sandbox.root(), "no agent process after stdin closed");
}

/// A `bridge acp claude` driven line by line.
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    session: Value,
}

impl Raw {
    /// The agent, initialized, with one session in the sandbox; `args` go after `acp claude`.
    fn start(sandbox: &Sandbox, mock: &Mock, args: &[&str]) -> Raw {
        Raw::start_with(sandbox, mock, args, json!([])).0
    }

    /// [`Raw::start`] with `mcp_servers` in `session/new`; the `initialize` answer too.
    fn start_with(
        sandbox: &Sandbox,
        mock: &Mock,
        args: &[&str],
        mcp_servers: Value,
    ) -> (Raw, Value) {
        let mut cmd = bridge_acp_claude(sandbox, mock);
        cmd.args(args);
        Raw::spawn(&mut cmd, sandbox, mcp_servers)
    }

    /// The agent `cmd` runs, initialized, with one session in the sandbox with `mcp_servers`;
    /// the `initialize` answer too.
    fn spawn(cmd: &mut Command, sandbox: &Sandbox, mcp_servers: Value) -> (Raw, Value) {
        let (mut raw, init) = Raw::initialized(cmd);
        raw.open(&sandbox.work(), mcp_servers);
        (raw, init)
    }

    /// The agent `cmd` runs, initialized (no session yet); the `initialize` answer too.
    fn initialized(cmd: &mut Command) -> (Raw, Value) {
        let (child, stdin, lines) = common::spawn_piped(cmd);
        let mut raw = Raw {
            child,
            stdin,
            lines,
            session: Value::Null,
        };
        raw.send(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
        );
        let init = raw.until(|m| m["id"] == 0);
        (raw, init)
    }

    /// Prompts `text` as request `id` and checks that the permission mode refused its tool by
    /// itself: the client is never asked, the turn ends `end_turn`, and `file` (what the tool
    /// would have made in the sandbox's work directory) does not exist.
    fn prompt_refused_unasked(&mut self, id: u32, text: &str, sandbox: &Sandbox, file: &str) {
        self.prompt(id, text);
        let end = self.until(|m| {
            assert_ne!(
                m["method"], "session/request_permission",
                "the permission mode asked: {m}"
            );
            m["id"] == id
        });
        assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
        assert!(
            !sandbox.work().join(file).exists(),
            "the permission mode let {text:?} make {file}"
        );
    }

    /// `session/new` (request id 1) in `cwd` with `mcp_servers`: the session of later requests.
    fn open(&mut self, cwd: &Path, mcp_servers: Value) {
        let params = json!({"cwd": cwd, "mcpServers": mcp_servers});
        self.send(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":params}));
        self.session = self.until(|m| m["id"] == 1)["result"]["sessionId"].clone();
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message that `pred` accepts (the others are skipped).
    fn until(&self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the agent answers");
            assert!(!line.contains(CANARY_KEY), "the API key leaked");
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if pred(&message) {
                return message;
            }
        }
    }

    /// Sends a request of the session (`sessionId` added to `params`).
    fn request(&mut self, id: u32, method: &str, mut params: Value) {
        params["sessionId"] = self.session.clone();
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
    }

    fn prompt(&mut self, id: u32, text: &str) {
        self.request(
            id,
            "session/prompt",
            json!({"prompt": [{"type": "text", "text": text}]}),
        );
    }

    /// Reads up to the answer to request `id`: the answer, and the text streamed before it.
    fn answer(&self, id: u32) -> (Value, String) {
        let mut text = String::new();
        loop {
            let m = self.until(|m| {
                m["id"] == id || m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            });
            if m["id"] == id && m.get("method").is_none() {
                return (m, text);
            }
            text.push_str(
                m["params"]["update"]["content"]["text"]
                    .as_str()
                    .unwrap_or_default(),
            );
        }
    }

    /// Closes stdin: the agent exits 0 and leaves no process in the sandbox.
    fn close(mut self, sandbox: &Sandbox) {
        self.stdin = None;
        assert!(self.child.wait().expect("exits").success());
        assert_none_left(sandbox.root(), "no agent process after stdin closed");
    }
}

/// The Claude Code processes (stream-json CLIs) running in `dir`, by pid.
fn clis_in(dir: &Path) -> Vec<String> {
    processes_in(dir)
        .into_iter()
        .filter(|p| p.contains("--input-format stream-json"))
        .filter_map(|p| p.split(':').next().map(str::to_string))
        .collect()
}

/// Waits (20 s at most) until `check` holds.
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session's CLI starts at `initialize`, in the agent's directory: the first `session/new`
/// there takes it (the same process answers the prompt); one in another directory closes it
/// and gets a CLI of its own, there; an agent closed without a session leaves none.
#[test]
fn the_cli_started_at_initialize_serves_the_first_session_of_its_directory() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (mut raw, _) = Raw::initialized(&mut bridge_acp_claude(&sandbox, &mock));
    eventually("a CLI starts at initialize", || {
        clis_in(&sandbox.work()).len() == 1
    });
    let prestarted = clis_in(&sandbox.work()).remove(0);
    raw.open(&sandbox.work(), json!([]));
    raw.prompt(2, "MOCK:text hello");
    let (answer, text) = raw.answer(2);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(text, mock_llm::scenario::HELLO_TEXT);
    assert!(
        Path::new("/proc").join(&prestarted).exists(),
        "the prestarted CLI {prestarted} served the session"
    );
    assert_eq!(mock.model_requests().len(), 1, "one model request");
    raw.close(&sandbox);

    let other = sandbox.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (mut raw, _) = Raw::initialized(&mut bridge_acp_claude(&sandbox, &mock));
    eventually("a CLI starts at initialize", || {
        clis_in(&sandbox.work()).len() == 1
    });
    let spare = clis_in(&sandbox.work()).remove(0);
    raw.open(&other, json!([]));
    raw.prompt(2, "MOCK:text hello");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    eventually("the unused CLI is closed", || {
        !Path::new("/proc").join(&spare).exists()
    });
    assert_eq!(clis_in(&other).len(), 1, "{:?}", processes_in(&other));
    raw.close(&sandbox);

    let (raw, _) = Raw::initialized(&mut bridge_acp_claude(&sandbox, &mock));
    eventually("a CLI starts at initialize", || {
        clis_in(&sandbox.work()).len() == 1
    });
    raw.close(&sandbox);
}

/// The CLI crashes mid-prompt (the second of the session): the prompt ends with a JSON-RPC
/// error, and the next prompt of the same session works (the session restarts the CLI and
/// resumes).
#[test]
fn a_cli_crash_mid_prompt_fails_it_and_the_session_goes_on() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    // A whole first turn: the conversation exists on disk before the crash.
    raw.prompt(2, "MOCK:text first");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    raw.prompt(3, "MOCK:slow count");
    raw.until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    let clis: Vec<i32> = agent_processes(sandbox.root())
        .iter()
        .filter(|p| !p.contains(" acp claude"))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect();
    assert!(!clis.is_empty(), "the CLI runs");
    for pid in &clis {
        // SAFETY: kill has no memory effects; the pid is a process of this test's sandbox.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    let (failed, _) = raw.answer(3);
    assert_eq!(failed["error"]["code"], -32603, "killed {clis:?}: {failed}");
    raw.prompt(4, "MOCK:text again");
    let (answer, text) = raw.answer(4);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(text, mock_llm::scenario::HELLO_TEXT);
    raw.close(&sandbox);
}

/// Approvals the client never answers are denied when `--approval-timeout` passes, and plan
/// mode's policy denies without asking: both are refusals the model sees (the call fails, the
/// turn ends `end_turn`), never `cancelled`.
#[test]
fn an_unanswered_approval_and_a_policy_denial_are_rejections_not_cancellations() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &["--approval-timeout", "2"]);
    raw.prompt(2, "MOCK:danger make a file");
    let asked = raw.until(|m| m["method"] == "session/request_permission");
    assert_eq!(asked["params"]["toolCall"]["kind"], "execute", "{asked}");
    // Not answered.
    let failed = raw.until(|m| {
        m["params"]["update"]["sessionUpdate"] == "tool_call_update"
            && m["params"]["update"]["status"] == "failed"
    });
    assert!(failed["params"]["update"]["toolCallId"].is_string());
    let (end, _) = raw.answer(2);
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert!(!sandbox.work().join("mock-created.txt").exists());

    raw.request(3, "session/set_mode", json!({"modeId": "plan"}));
    assert_eq!(raw.answer(3).0["result"], json!({}));
    // Plan mode decides: the client is never asked, the write does not happen.
    raw.prompt_refused_unasked(
        4,
        "MOCK:write create the file",
        &sandbox,
        "mock-written.txt",
    );
    // A command too: plan mode runs nothing.
    raw.prompt_refused_unasked(5, "MOCK:danger make a file", &sandbox, "mock-created.txt");
    raw.close(&sandbox);
}

/// Plan chosen before the first prompt is read-only too: the CLI started at `initialize` is
/// switched live before it has streamed anything (the bridge then turns off Claude Code's "auto
/// mode during plan" with a control request of its own before the switch).
#[test]
fn plan_chosen_before_the_first_prompt_runs_no_command() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    raw.request(2, "session/set_mode", json!({"modeId": "plan"}));
    assert_eq!(raw.answer(2).0["result"], json!({}));
    raw.prompt_refused_unasked(3, "MOCK:danger make a file", &sandbox, "mock-created.txt");
    raw.close(&sandbox);
}

/// `session/list` lists the conversations Claude keeps (its session files), under the ACP id
/// the client opened them with, filtered by `cwd`; a new agent process lists them too (with
/// `sessionCapabilities.list` advertised) and `session/load` opens a listed one.
#[test]
fn session_list_returns_the_session_of_an_earlier_prompt_filtered_by_cwd() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    raw.prompt(2, "MOCK:text hello");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    // Claude Code writes its session file 100 ms behind the turn: list once it has.
    let projects = sandbox.home().join(".claude/projects");
    let saved = || {
        std::fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|dir| std::fs::read_dir(dir.path()).ok())
            .flatten()
            .flatten()
            .any(|f| std::fs::read_to_string(f.path()).is_ok_and(|t| t.contains("\"assistant\"")))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !saved() {
        assert!(
            std::time::Instant::now() < deadline,
            "Claude Code saved no session"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = |raw: &mut Raw, id: u32, params: Value| {
        raw.send(json!({"jsonrpc":"2.0","id":id,"method":"session/list","params":params}));
        raw.answer(id).0
    };
    let here = list(&mut raw, 3, json!({"cwd": sandbox.work()}));
    let sessions = here["result"]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{here}");
    assert_eq!(sessions[0]["sessionId"], raw.session, "{here}");
    assert_eq!(sessions[0]["cwd"], json!(sandbox.work()), "{here}");
    assert_eq!(sessions[0]["title"], "MOCK:text hello", "{here}");
    assert!(
        sessions[0]["updatedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{here}"
    );
    assert!(here["result"].get("nextCursor").is_none(), "{here}");
    let elsewhere = list(&mut raw, 4, json!({"cwd": sandbox.root()}));
    assert_eq!(elsewhere["result"]["sessions"], json!([]), "{elsewhere}");
    let all = list(&mut raw, 5, json!({}));
    assert!(
        all["result"]["sessions"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["sessionId"] == raw.session)),
        "{all}"
    );
    let bad = list(&mut raw, 6, json!({"cursor": "nope"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let relative = list(&mut raw, 7, json!({"cwd": "work"}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let id = raw.session.clone();
    raw.close(&sandbox);

    let list =
        json!({"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd": sandbox.work()}});
    let load = json!({"jsonrpc":"2.0","id":2,"method":"session/load","params":{
        "sessionId": id, "cwd": sandbox.work(), "mcpServers": []}});
    let seen = raw_session(&sandbox, &mock, &[list, load]);
    let init = seen.iter().find(|m| m["id"] == 0).expect("initialize");
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["list"],
        json!({}),
        "{init}"
    );
    let listed = seen.iter().find(|m| m["id"] == 1).expect("the list");
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], id, "{listed}");
    let user: Vec<&str> = updates(&seen, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(user, ["MOCK:text hello"], "{seen:#?}");
    assert_none_left(sandbox.root(), "no agent process after the raw session");
}

/// A stdio MCP server given to `session/new` reaches Claude (`--mcp-config`): the CLI starts it
/// and offers its tool to the model; `initialize` advertises HTTP and SSE servers too. The
/// server's env (a token) is in a private file, on no process's command line, and the file is
/// gone with the session.
#[test]
fn an_mcp_server_of_session_new_reaches_claude_and_its_tool_the_model() {
    const TOKEN: &str = "probe-token-4711";
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_probe.mjs");
    let servers = json!([{"name": "probe", "command": cli_path("node"), "args": [probe],
        "env": [{"name": "MCP_PROBE_TOKEN", "value": TOKEN}]}]);
    let (mut raw, init) = Raw::start_with(&sandbox, &mock, &[], servers);
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": true}),
        "{init}"
    );
    raw.prompt(2, "MOCK:text hi");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    let request = mock.model_requests().pop().expect("a model request");
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"mcp__probe__echo"),
        "the MCP server's tool is offered: {tools:?}"
    );
    let running = processes_in(sandbox.root());
    assert!(
        running.iter().all(|p| !p.contains(TOKEN)),
        "a token on a command line: {running:#?}"
    );
    let config = running
        .iter()
        .find_map(|p| p.split_once("--mcp-config ")?.1.split(' ').next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("claude runs with --mcp-config: {running:#?}"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&config)
        .expect("the config file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", config.display());
    assert!(std::fs::read_to_string(&config).unwrap().contains(TOKEN));
    raw.close(&sandbox);
    assert!(!config.exists(), "{} is left", config.display());
}

/// The tiny stdio MCP server (tests/mcp_probe.mjs) as `session/new`'s `mcpServers`, and the
/// file it logs each request's method to.
fn mcp_probe(sandbox: &Sandbox) -> (Value, PathBuf) {
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_probe.mjs");
    let log = sandbox.root().join("mcp-probe.log");
    let servers = json!([{"name": "probe", "command": cli_path("node"), "args": [probe],
        "env": [{"name": "MCP_PROBE_LOG", "value": log}]}]);
    (servers, log)
}

/// Whether the probe was started and asked for its tools (the methods in its log).
fn probe_listed_tools(log: &Path) -> (bool, Vec<String>) {
    let asked: Vec<String> = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let listed = asked.first().map(String::as_str) == Some("initialize")
        && asked.iter().any(|m| m == "tools/list");
    (listed, asked)
}

/// The agent `cmd` runs, with [`mcp_probe`] in `session/new`: `initialize` advertises `mcp`
/// as its `mcpCapabilities`, and after a turn `who` (the CLI) has started the probe and listed
/// its tools.
fn probe_reaches(cmd: &mut Command, sandbox: &Sandbox, mcp: Value, who: &str) {
    let (servers, log) = mcp_probe(sandbox);
    let (mut raw, init) = Raw::spawn(cmd, sandbox, servers);
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"], mcp,
        "{init}"
    );
    raw.prompt(2, "MOCK:text hi");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    let (listed, asked) = probe_listed_tools(&log);
    assert!(
        listed,
        "{who} started the server and listed its tools: {asked:?}"
    );
    raw.close(sandbox);
}

/// Gemini's ACP agent behind the bridge's: a stdio MCP server of `session/new` is forwarded in
/// Gemini's own `session/new`, and Gemini (in a trusted folder) starts it and lists its tools.
#[test]
fn an_mcp_server_of_session_new_reaches_gemini_through_its_acp_session() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = common::acp::acp_command(common::acp::Provider::Gemini, &sandbox, &mock.url(), &[]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridge"));
    cmd.env_clear()
        .envs(send.get_envs().filter_map(|(k, v)| Some((k, v?))))
        // Gemini drops the MCP servers of a folder it does not trust.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .current_dir(sandbox.work())
        .args(["acp", "gemini"]);
    probe_reaches(
        &mut cmd,
        &sandbox,
        json!({"http": false, "sse": false}),
        "Gemini",
    );
}

/// A stdio MCP server given to `session/new` reaches Codex (the app-server thread's `config`,
/// `mcp_servers.<name>`): Codex starts it (with the `env` given) and lists its tools.
#[test]
fn an_mcp_server_of_session_new_reaches_codex_and_codex_lists_its_tools() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = codex_acpx(&sandbox, &mock);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridge"));
    cmd.env_clear()
        .envs(acpx.env.iter().map(|(k, v)| (k, v)))
        .current_dir(sandbox.work())
        .args(["acp", "codex", "--model", "gpt-5.5"]);
    // Codex 0.171 keeps MCP tools behind its `tool_search` tool (they are not in the model
    // request's list): what shows the server reached it is Codex starting it with the
    // environment given and listing its tools.
    probe_reaches(
        &mut cmd,
        &sandbox,
        json!({"http": true, "sse": false}),
        "Codex",
    );
}

/// An `image` block of a prompt reaches the model as an image block (Claude, which advertises
/// `promptCapabilities.image`).
/// A 1×1 PNG, base64.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[test]
fn an_image_prompt_reaches_the_model_as_an_image_block() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (mut raw, init) = Raw::start_with(&sandbox, &mock, &[], json!([]));
    let request = image_prompt_request(&mut raw, &init, &mock);
    let images: Vec<&Value> = user_blocks(&request.body, "messages", "content")
        .into_iter()
        .filter(|b| b["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{:#}", request.body["messages"]);
    assert_eq!(images[0]["source"]["media_type"], "image/png");
    assert_eq!(images[0]["source"]["data"], PNG_1X1);
    raw.close(&sandbox);
}

/// Prompts [`PNG_1X1`] with `MOCK:text what is this` in `raw`'s session, whose agent said in
/// `init` that it takes images: the turn ends `end_turn` with the mock's text. The prompt's
/// model request.
fn image_prompt_request(raw: &mut Raw, init: &Value, mock: &Mock) -> mock_llm::LoggedRequest {
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    raw.request(
        2,
        "session/prompt",
        json!({"prompt": [
            {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
            {"type": "text", "text": "MOCK:text what is this"}
        ]}),
    );
    let (answer, text) = raw.answer(2);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(text, mock_llm::scenario::HELLO_TEXT);
    mock.model_requests()
        .into_iter()
        .rfind(|r| r.body.to_string().contains("MOCK:text what is this"))
        .expect("the prompt's model request")
}

/// The content blocks of the user messages in a model request body: the entries of its `list`
/// (`messages`, `input`, `contents`) with role `user`, their `content` (or `parts`) flattened.
fn user_blocks<'a>(body: &'a Value, list: &str, content: &str) -> Vec<&'a Value> {
    body[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["role"] == "user")
        .flat_map(|entry| entry[content].as_array().into_iter().flatten())
        .collect()
}

/// The provider's models are the `model` session config option (offered once the list is read,
/// with a `config_option_update` to the sessions opened before); choosing one sets the model of
/// the next turn.
#[test]
fn the_model_is_a_session_config_option() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // The list comes from the session's own CLI: no second Claude Code runs until it came.
    let listed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (listed, work) = (std::sync::Arc::clone(&listed), sandbox.work());
        std::thread::spawn(move || {
            let mut most = 0;
            while !listed.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(clis_in(&work).len());
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        })
    };
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    let update = raw.until(|m| m["params"]["update"]["sessionUpdate"] == "config_option_update");
    listed.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(watcher.join().unwrap(), 1, "Claude Code processes at once");
    let option = &update["params"]["update"]["configOptions"][0];
    assert_eq!(
        (option["id"].as_str(), option["category"].as_str()),
        (Some("model"), Some("model")),
        "{update}"
    );
    let models: Vec<&str> = option["options"]
        .as_array()
        .expect("the models")
        .iter()
        .filter_map(|m| m["value"].as_str())
        .collect();
    // Claude Code's list names `haiku`; the mock sees the model it resolves to.
    let chosen = "haiku";
    assert!(models.contains(&chosen), "{models:?}");
    raw.request(
        2,
        "session/set_config_option",
        json!({"configId": "model", "value": chosen}),
    );
    let (set, _) = raw.answer(2);
    assert_eq!(
        set["result"]["configOptions"][0]["currentValue"], chosen,
        "{set}"
    );
    raw.prompt(3, "MOCK:text hi");
    assert_eq!(raw.answer(3).0["result"]["stopReason"], "end_turn");
    let asked: Vec<String> = mock
        .model_requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_string))
        .collect();
    assert!(
        asked.last().is_some_and(|m| m.contains("haiku")),
        "the turn ran on the chosen model: {asked:?}"
    );
    raw.request(
        4,
        "session/set_config_option",
        json!({"configId": "nope", "value": "x"}),
    );
    assert_eq!(raw.answer(4).0["error"]["code"], -32602);
    raw.close(&sandbox);

    // Without a prestarted CLI, the list is the `listModels` query's, read at a quiet moment
    // (here: 5 s without a prompt).
    let mut cmd = bridge_acp_claude(&sandbox, &mock);
    cmd.env("BRIDGE_ACP_PRESTART", "0");
    let (raw, _) = Raw::spawn(&mut cmd, &sandbox, json!([]));
    let update = raw.until(|m| m["params"]["update"]["sessionUpdate"] == "config_option_update");
    assert_eq!(
        update["params"]["update"]["configOptions"][0]["id"], "model",
        "{update}"
    );
    raw.close(&sandbox);
}

/// The client goes away mid-turn (stdin closes while the answer streams): the agent interrupts
/// the turn, closes its session and exits 0 with nothing left.
#[test]
fn the_client_closing_stdin_mid_turn_leaves_no_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    raw.prompt(2, "MOCK:slow count");
    raw.until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    let started = Instant::now();
    raw.close(&sandbox);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the agent took {:?} to end",
        started.elapsed()
    );
}

/// A flood: a line over the 16 MiB cap and a burst of requests; each gets its JSON-RPC error,
/// and the session still works.
#[test]
fn a_flood_of_input_is_answered_line_by_line_and_the_agent_goes_on() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut raw = Raw::start(&sandbox, &mock, &[]);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"x","params":"{}"}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    {
        let stdin = raw.stdin.as_mut().unwrap();
        writeln!(stdin, "{huge}").unwrap();
    }
    let too_long = raw.until(|m| {
        m["error"]["message"]
            .as_str()
            .is_some_and(|t| t.contains("longer"))
    });
    assert_eq!(too_long["error"]["code"], -32600, "{too_long}");
    for id in 100..1100 {
        raw.send(json!({"jsonrpc":"2.0","id":id,"method":"no/such"}));
    }
    for id in 100..1100 {
        let answer = raw.until(|m| m.get("id").is_some_and(|i| i == id));
        assert_eq!(answer["error"]["code"], -32601);
    }
    raw.prompt(2, "MOCK:text after the flood");
    let (end, text) = raw.answer(2);
    assert_eq!(end["result"]["stopReason"], "end_turn");
    assert_eq!(text, mock_llm::scenario::HELLO_TEXT);
    raw.close(&sandbox);
}

/// An image block of a prompt reaches Codex's model as an `input_image` (the app-server's
/// `localImage` input), so `bridge acp codex` advertises `promptCapabilities.image` too.
#[test]
fn an_image_prompt_reaches_codex_as_an_input_image() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let acpx = codex_acpx(&sandbox, &mock);
    let (mut raw, init) = Raw::spawn(&mut bridge_acp_codex(&acpx), &sandbox, json!([]));
    let request = image_prompt_request(&mut raw, &init, &mock);
    let user_blocks = user_blocks(&request.body, "input", "content");
    let images: Vec<&str> = user_blocks
        .iter()
        .filter(|b| b["type"] == "input_image")
        .filter_map(|b| b["image_url"].as_str())
        .collect();
    assert_eq!(images.len(), 1, "{user_blocks:#?}");
    assert!(
        images[0].starts_with("data:image/png;base64,"),
        "{}",
        images[0]
    );
    assert!(
        user_blocks
            .iter()
            .any(|b| b["text"].as_str() == Some("MOCK:text what is this")),
        "the text goes with the image: {user_blocks:#?}"
    );
    raw.close(&sandbox);
}

/// `session/close` (advertised as `sessionCapabilities.close`) cancels the session's running
/// prompt (which answers `cancelled`) and answers once the session's CLI is gone; the session
/// is unknown afterwards, and the connection goes on with a new one.
#[test]
fn session_close_cancels_its_prompt_ends_its_cli_and_forgets_it() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (mut raw, init) = Raw::start_with(&sandbox, &mock, &[], json!([]));
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["close"],
        json!({}),
        "{init}"
    );
    raw.prompt(2, "MOCK:text hello");
    assert_eq!(raw.answer(2).0["result"]["stopReason"], "end_turn");
    let clis = clis_in(&sandbox.work());
    assert_eq!(clis.len(), 1, "{:?}", processes_in(&sandbox.work()));

    raw.prompt(3, "MOCK:slow");
    raw.until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    raw.request(4, "session/close", json!({}));
    let (mut cancelled, mut closed) = (None, None);
    while cancelled.is_none() || closed.is_none() {
        let m = raw.until(|m| m.get("method").is_none() && (m["id"] == 3 || m["id"] == 4));
        if m["id"] == 3 {
            cancelled = Some(m);
        } else {
            // The CLI is gone by the time the close is answered.
            assert!(
                !Path::new("/proc").join(&clis[0]).exists(),
                "the session's CLI {} still runs after session/close answered",
                clis[0]
            );
            closed = Some(m);
        }
    }
    let (cancelled, closed) = (cancelled.unwrap(), closed.unwrap());
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );
    assert_eq!(closed["result"], json!({}), "{closed}");
    assert!(clis_in(&sandbox.work()).is_empty());

    raw.prompt(5, "MOCK:text again");
    let refused = raw.until(|m| m["id"] == 5);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unknown session"), "{refused}");
    raw.request(6, "session/close", json!({}));
    let refused = raw.until(|m| m["id"] == 6);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    raw.open(&sandbox.work(), json!([]));
    raw.prompt(7, "MOCK:text hi");
    let (answer, text) = raw.answer(7);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(text, mock_llm::scenario::HELLO_TEXT);
    raw.close(&sandbox);
}

/// An image block reaches Gemini's model as an `inlineData` part: `bridge acp gemini` passes
/// it on in its own ACP prompt to `gemini --acp`, which advertises image prompts.
#[test]
fn an_image_prompt_reaches_gemini_through_its_acp_session() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (mut cmd, _) = bridge_acp_of(common::acp::Provider::Gemini, "gemini", &sandbox, &mock);
    let (mut raw, init) = Raw::spawn(&mut cmd, &sandbox, json!([]));
    let request = image_prompt_request(&mut raw, &init, &mock);
    let images: Vec<&Value> = user_blocks(&request.body, "contents", "parts")
        .into_iter()
        .filter_map(|part| part.get("inlineData"))
        .collect();
    assert_eq!(images.len(), 1, "{:#}", request.body["contents"]);
    assert_eq!(images[0]["mimeType"], "image/png");
    assert_eq!(images[0]["data"], PNG_1X1);
    raw.close(&sandbox);
}

/// `bridge acp <provider>` for an ACP provider, with the environment of its `send` against
/// `mock`, in the sandbox's work directory.
fn bridge_acp_of(
    provider: common::acp::Provider,
    name: &str,
    sandbox: &Sandbox,
    mock: &Mock,
) -> (Command, Acpx) {
    let send = common::acp::acp_command(provider, sandbox, &mock.url(), &[]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridge"));
    cmd.env_clear()
        .envs(send.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(sandbox.work())
        .args(["acp", name]);
    (cmd, Acpx::for_send(&send, name))
}

/// An ACP provider's conversation is loadable through its own agent's `session/load`
/// (`getSession` reads back what Qwen Code replays): acpx's agent ends between two prompts,
/// the next one reopens the session in a new `bridge acp qwen` and the model sees the first
/// turn; by hand, `session/load` replays both prompts and the answers, and `session/list` (the
/// agent's own list) finds the session under its ACP id.
#[test]
fn acpx_qwen_session_loaded_by_a_new_agent_process_replays_the_agents_history() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let (cmd, acpx) = bridge_acp_of(common::acp::Provider::Qwen, "qwen", &sandbox, &mock);
    let (id, replay) = loaded_after_a_reopen(&acpx, &sandbox, cmd);
    let init = replay.iter().find(|m| m["id"] == 0).expect("initialize");
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    let user = chunk_texts(&replay, "user_message_chunk");
    assert_eq!(
        user,
        ["MOCK:text hello", "MOCK:recall what did I say"],
        "{replay:#?}"
    );
    let said: String = chunk_texts(&replay, "agent_message_chunk").concat();
    assert!(
        said.contains(mock_llm::scenario::HELLO_TEXT),
        "the answers are replayed: {said}"
    );
    let answer = replay
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the load's answer");
    assert!(answer.get("result").is_some(), "{answer}");
    // session/list: the agent's own list, under the ACP id the client opened the session with.
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["list"],
        json!({}),
        "{init}"
    );
    let list =
        json!({"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd": sandbox.work()}});
    let (cmd, _) = bridge_acp_of(common::acp::Provider::Qwen, "qwen", &sandbox, &mock);
    let listed = raw_session_of(cmd, &[list]);
    let answer = listed
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the list's answer");
    let ids: Vec<&Value> = answer["result"]["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|s| &s["sessionId"])
        .collect();
    assert_eq!(ids, [&id], "{answer}");
    assert_none_left(sandbox.root(), "no agent process after the raw sessions");
}
