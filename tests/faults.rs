//! Fault injection through the real `bridge` binary (issue 8).
//!
//! Every test drives `bridge <provider> send` against a *fake* CLI (`tests/fakes/`) that
//! misbehaves on demand: crashes mid-stream, exits without its terminal event, hangs, retries
//! forever, floods, prints a 64 MiB line or invalid UTF-8, spawns grandchildren that ignore
//! SIGTERM, echoes secrets. Plus bad requests, env hygiene, and closed pipes. Each test asserts
//! exact observable facts (exit code, final line, markers, event order, stderr tail, process
//! counts, elapsed time bounded generously: these are not performance tests).
//!
//! Engines: every scenario runs for each entry of [`ENGINES`] (Claude stream-json, Codex exec,
//! ACP, and the one-shot engine through pi). A new engine adds its fake to
//! `tests/fakes/<engine>.sh` (the same `emit_*` functions, sourcing `lib.sh`) and one
//! [`Engine`] row here.
//!
//! Secrets: every run goes through [`Running`], which checks every byte of stdout and stderr
//! for the canaries ([`CANARIES`]) that every run puts in the request and the environment.
//!
//! Figures (peak RSS, elapsed) are printed with `FIGURE` on stderr: run with `--nocapture`
//! (or `cargo nextest run --test faults --no-capture`) to see them.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Engines
// ---------------------------------------------------------------------------------------------

/// One CLI engine the bridge drives, and the fake that impersonates it.
#[derive(Debug)]
struct Engine {
    /// Engine name (for messages).
    name: &'static str,
    /// Provider key passed to `bridge <provider> send`.
    provider: &'static str,
    /// Environment variable the channel reads the CLI path from.
    cli_env: &'static str,
    /// The fake CLI under `tests/fakes/`.
    fake: &'static str,
    /// Variable under which the request's `apiKey` (or the bridge's own key variable)
    /// reaches the CLI.
    api_key_env: &'static str,
    /// The request's `apiKey` is passed to the CLI (else the CLI keeps the key it inherits).
    request_key_to_cli: bool,
    /// Key of the conversation id in the final markers line.
    id_key: &'static str,
    /// Conversation id the fake reports.
    session_id: &'static str,
    /// How the CLI gets the prompt.
    prompt: Prompt,
    /// Where the turn's result text comes from.
    result: ResultFrom,
    /// The bridge asks the CLI to interrupt over stdin (else it interrupts with signals only).
    interrupt_message: bool,
    /// JSONL event type of a streamed text piece (`text_delta`; `text` for a whole message).
    text_event: &'static str,
    /// `kind` of the JSONL `status` a retry line of the CLI becomes.
    retry_kind: &'static str,
    /// Cases that do not apply to this engine, each with the reason (printed as `SKIP`).
    skip: &'static [(&'static str, &'static str)],
    /// Variables set for the bridge (the transport to use, for a provider that has several).
    bridge_env: &'static [(&'static str, &'static str)],
    /// One CLI process serves a whole session (else one per turn, resumed).
    warm: bool,
    /// What the error for an unknown transport says about the provider's transports.
    transports: &'static str,
}

/// How an engine's CLI receives the prompt, and how the test reads it back from the fake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prompt {
    /// A stream-json user message line on stdin (`message.content`).
    StreamJson,
    /// The last argument, or stdin verbatim when that argument is `-` (the fake records it).
    ArgOrStdin,
    /// stdin verbatim, closed after it.
    Stdin,
    /// The text block of the ACP `session/prompt` request.
    AcpSession,
    /// The text input of the app-server's `turn/start` request.
    AppServerTurn,
}

/// Where an engine's successful result text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResultFrom {
    /// The CLI's terminal event carries it (Claude `result.result`).
    Event,
    /// The last text piece (Codex: the last `agent_message`): the fake's `emit_result TEXT`
    /// prints TEXT as one more piece, so it is also the last delta.
    LastDelta,
    /// Everything the turn streamed (ACP: the prompt response carries no text).
    AllText,
}

impl Engine {
    /// Whether `case` is skipped for this engine (says so, with the reason, on stderr).
    fn skips(&self, case: &str) -> bool {
        match self.skip.iter().find(|(c, _)| *c == case) {
            Some((_, reason)) => {
                eprintln!("SKIP {} / {case}: {reason}", self.name);
                true
            }
            None => false,
        }
    }

    /// The deltas of a successful turn that streamed `streamed` and ended with `result`.
    fn deltas_with_result(&self, streamed: &[&str], result: &str) -> Vec<String> {
        let mut all: Vec<String> = streamed.iter().map(|s| s.to_string()).collect();
        if self.result == ResultFrom::LastDelta {
            all.push(result.to_string());
        }
        all
    }

    /// The result of a successful turn that streamed `streamed` and whose fake claimed
    /// `claimed` (`emit_result claimed`).
    fn expected_result(&self, streamed: &[&str], claimed: &str) -> String {
        match self.result {
            ResultFrom::Event | ResultFrom::LastDelta => claimed.to_string(),
            ResultFrom::AllText => streamed.concat(),
        }
    }
}

const ENGINES: &[Engine] = &[
    Engine {
        name: "claude stream-json",
        provider: "claude",
        cli_env: "CLAUDE_CODE_PATH",
        fake: "claude-stream-json.sh",
        api_key_env: "ANTHROPIC_API_KEY",
        request_key_to_cli: true,
        id_key: "sessionId",
        session_id: "fake-session-0001",
        prompt: Prompt::StreamJson,
        result: ResultFrom::Event,
        interrupt_message: true,
        text_event: "text_delta",
        retry_kind: "retry",
        skip: &[],
        bridge_env: &[],
        warm: true,
        transports: ONE_TRANSPORT,
    },
    Engine {
        name: "codex exec",
        provider: "codex",
        cli_env: "CODEX_PATH",
        fake: "codex-exec.sh",
        api_key_env: "CODEX_API_KEY",
        request_key_to_cli: true,
        id_key: "threadId",
        session_id: "fake-thread-0001",
        prompt: Prompt::ArgOrStdin,
        result: ResultFrom::LastDelta,
        // stdin is /dev/null: the bridge interrupts `codex exec` with signals.
        interrupt_message: false,
        // `codex exec` prints `Reconnecting... N/M (…)` as a top-level `error` line.
        // Codex has no text deltas: every agent message arrives whole, as a `text` event.
        text_event: "text",
        retry_kind: "reconnect",
        skip: &[(
            "split_secrets",
            "Codex prints each agent message whole; a secret is redacted within its message",
        )],
        bridge_env: &[("BRIDGE_CODEX_TRANSPORT", "exec")],
        warm: false,
        transports: CODEX_TRANSPORTS,
    },
    Engine {
        name: "codex app-server",
        provider: "codex",
        cli_env: "CODEX_PATH",
        fake: "codex-app-server.sh",
        api_key_env: "CODEX_API_KEY",
        request_key_to_cli: true,
        id_key: "threadId",
        session_id: "fake-thread-0002",
        prompt: Prompt::AppServerTurn,
        result: ResultFrom::LastDelta,
        // `turn/interrupt`, answered with a `turn/completed` `interrupted`.
        interrupt_message: true,
        text_event: "text_delta",
        // `error` notifications with `willRetry: true`.
        retry_kind: "retry",
        skip: &[],
        bridge_env: &[],
        warm: true,
        transports: CODEX_TRANSPORTS,
    },
    Engine {
        name: "acp (copilot)",
        provider: "copilot",
        cli_env: "COPILOT_CLI_PATH",
        fake: "acp-agent.sh",
        api_key_env: "COPILOT_PROVIDER_API_KEY",
        request_key_to_cli: true,
        id_key: "sessionId",
        session_id: "fake-acp-session-0001",
        prompt: Prompt::AcpSession,
        result: ResultFrom::AllText,
        // `session/cancel`, answered with `stopReason: cancelled`.
        interrupt_message: true,
        text_event: "text_delta",
        // Copilot reports retries as `Info: …` message chunks.
        retry_kind: "retry",
        skip: &[],
        bridge_env: &[],
        warm: true,
        transports: "available: acp, json",
    },
    Engine {
        name: "jsonl (pi)",
        provider: "pi",
        cli_env: "PI_CLI_PATH",
        fake: "pi-json.sh",
        api_key_env: "OPENAI_API_KEY",
        // pi takes keys from its own model config or provider variables (the request's
        // `apiKey` gets an `unsupported_field` warning).
        request_key_to_cli: false,
        id_key: "sessionId",
        session_id: "fake-pi-session-0001",
        prompt: Prompt::Stdin,
        // The text of the last assistant `message_end`.
        result: ResultFrom::Event,
        // stdin is closed after the prompt: the bridge interrupts pi with signals.
        interrupt_message: false,
        text_event: "text_delta",
        // `auto_retry_start` lines.
        retry_kind: "retry",
        skip: &[],
        bridge_env: &[],
        warm: false,
        transports: ONE_TRANSPORT,
    },
];

/// The unknown-transport error of a provider with one transport.
const ONE_TRANSPORT: &str = "it has one way to run its CLI";
/// … and of Codex.
const CODEX_TRANSPORTS: &str = "available: app-server, exec";

/// [`ENGINES`], or those whose provider is listed in `FAULTS_ENGINES` (comma-separated).
fn engines() -> impl Iterator<Item = &'static Engine> {
    let only = std::env::var("FAULTS_ENGINES").ok();
    ENGINES.iter().filter(move |e| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|p| p.trim() == e.provider))
    })
}

// ---------------------------------------------------------------------------------------------
// Canaries
// ---------------------------------------------------------------------------------------------

/// `apiKey` of every request the suite sends.
const CANARY_REQUEST_KEY: &str = "sk-ant-faults-canary-request-4b7d2e";
/// `ANTHROPIC_API_KEY` in the bridge's environment.
const CANARY_ENV_KEY: &str = "sk-ant-faults-canary-env-91c3f0";
/// `ANTHROPIC_AUTH_TOKEN` in the bridge's environment.
const CANARY_ENV_TOKEN: &str = "faults-canary-token-6a0e55c1";
const CANARIES: [&str; 3] = [CANARY_REQUEST_KEY, CANARY_ENV_KEY, CANARY_ENV_TOKEN];

fn leaked_canary(bytes: &[u8]) -> Option<&'static str> {
    CANARIES
        .into_iter()
        .find(|c| bytes.windows(c.len()).any(|w| w == c.as_bytes()))
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/// A request with the canary key, as the plugin sends it (no trailing newline).
fn request(message: &str) -> String {
    json!({"message": message, "apiKey": CANARY_REQUEST_KEY}).to_string()
}

/// A request with extra fields merged in.
fn request_with(message: &str, extra: Value) -> String {
    let mut value = json!({"message": message, "apiKey": CANARY_REQUEST_KEY});
    if let (Value::Object(base), Value::Object(extra)) = (&mut value, extra) {
        base.extend(extra);
    }
    value.to_string()
}

// ---------------------------------------------------------------------------------------------
// The fake CLI
// ---------------------------------------------------------------------------------------------

fn fakes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes")
}

/// Makes the fake scripts executable (a checkout without the mode bit must still work).
/// chmod only, never a rewrite: writing an executable that another thread is about to exec
/// gives ETXTBSY.
fn ensure_fakes_executable() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for engine in engines() {
            let path = fakes_dir().join(engine.fake);
            let meta = std::fs::metadata(&path)
                .unwrap_or_else(|e| panic!("fake CLI {} missing: {e}", path.display()));
            if meta.permissions().mode() & 0o111 != 0o111 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod fake CLI");
            }
        }
    });
}

/// One fake CLI run: a scenario, its parameters, and the directory it records into.
struct Fake {
    engine: &'static Engine,
    dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

impl Fake {
    fn new(engine: &'static Engine, scenario: &str) -> Fake {
        ensure_fakes_executable();
        let dir = tempfile::Builder::new()
            .prefix("bridge-faults-")
            .tempdir()
            .expect("tempdir");
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Fake {
            engine,
            dir,
            vars: vec![("FAKE_SCENARIO".into(), scenario.into())],
        }
    }

    fn var(mut self, key: &str, value: impl ToString) -> Fake {
        self.vars.push((key.into(), value.to_string()));
        self
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn work(&self) -> PathBuf {
        self.path("work")
    }

    /// Whether the bridge started the fake at all.
    fn started(&self) -> bool {
        self.path("started").exists()
    }

    /// Every process the fake started (leader first).
    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path("pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// The fake's environment (as the bridge passed it).
    fn env(&self) -> Vec<(String, String)> {
        let raw = std::fs::read(self.path("env")).expect("the fake recorded its environment");
        raw.split(|b| *b == 0)
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let kv = String::from_utf8_lossy(kv);
                let (k, v) = kv.split_once('=').unwrap_or((&kv, ""));
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn env_var(&self, key: &str) -> Option<String> {
        self.env()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The prompt text as the CLI received it.
    fn prompt(&self) -> String {
        let raw = std::fs::read(self.path("request")).expect("the fake recorded its prompt");
        let raw = String::from_utf8(raw).expect("the prompt is UTF-8");
        match self.engine.prompt {
            Prompt::ArgOrStdin | Prompt::Stdin => raw,
            Prompt::StreamJson => {
                let sent: Value =
                    serde_json::from_str(raw.trim_end()).expect("the CLI got one JSON line");
                sent["message"]["content"]
                    .as_str()
                    .expect("message.content is a string")
                    .to_string()
            }
            Prompt::AppServerTurn => {
                let sent: Value =
                    serde_json::from_str(raw.trim_end()).expect("turn/start is one JSON line");
                sent["params"]["input"]
                    .as_array()
                    .expect("params.input is an array")
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect()
            }
            Prompt::AcpSession => {
                let sent: Value =
                    serde_json::from_str(raw.trim_end()).expect("session/prompt is one JSON line");
                sent["params"]["prompt"]
                    .as_array()
                    .expect("params.prompt is an array")
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect()
            }
        }
    }

    fn argv(&self) -> String {
        std::fs::read_to_string(self.path("argv")).unwrap_or_default()
    }

    /// Processes started by this fake that are still alive (zombies do not count: they hold
    /// nothing but a pid, and reaping orphans is init's job).
    fn leftovers(&self) -> Vec<i32> {
        let marker = format!("FAKE_DIR={}", self.dir.path().display());
        self.pids()
            .into_iter()
            .filter(|&pid| alive_and_ours(pid, &marker))
            .collect()
    }

    /// The bridge's group watchdogs (`bridge-watchdog`, one per CLI process group) started
    /// for this fake that are still alive. Forked from the bridge, they show its environment,
    /// which names the fake's directory.
    fn watchdogs(&self) -> Vec<i32> {
        let marker = format!("FAKE_DIR={}", self.dir.path().display());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim_end() == bridge::core::process::WATCHDOG_NAME)
            })
            .filter(|&pid| alive_and_ours(pid, &marker))
            .collect()
    }

    /// Waits up to `timeout` for every process of the fake (and the watchdog of its group) to
    /// be gone; returns the survivors.
    fn await_no_leftovers(&self, timeout: Duration) -> Vec<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut left = self.leftovers();
            left.extend(self.watchdogs());
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits until the fake recorded `n` pids.
    fn await_pids(&self, n: usize, timeout: Duration) -> Vec<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            let pids = self.pids();
            if pids.len() >= n {
                return pids;
            }
            assert!(
                Instant::now() < deadline,
                "the fake recorded only {} of {n} pids: {pids:?}",
                pids.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `bridge <provider> send ARGS…` with a clean environment pointing the engine at this fake.
    fn command(&self, args: &[&str]) -> Command {
        let mut argv = vec![self.engine.provider, "send"];
        argv.extend_from_slice(args);
        self.bridge(&argv)
    }

    /// `bridge ARGV…` with the same environment.
    fn bridge(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridge"));
        cmd.env_clear()
            .args(argv)
            .current_dir(self.work())
            // Only system tools (the fakes need sh, head, seq, sed, tr, cat, wc, sleep): a real
            // CLI on the caller's PATH must never be picked up instead of the fake.
            .env("PATH", SYSTEM_PATH)
            .env("HOME", self.path("home"))
            .env("LANG", "C.UTF-8")
            .env("ANTHROPIC_API_KEY", CANARY_ENV_KEY)
            .env("ANTHROPIC_AUTH_TOKEN", CANARY_ENV_TOKEN)
            .env(self.engine.api_key_env, CANARY_ENV_KEY)
            .env(self.engine.cli_env, fakes_dir().join(self.engine.fake))
            .env("FAKE_DIR", self.dir.path());
        for (k, v) in self.engine.bridge_env {
            cmd.env(k, v);
        }
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd
    }
}

impl Drop for Fake {
    /// A failing test must not leave its fake's processes behind.
    fn drop(&mut self) {
        for pid in self.leftovers().into_iter().chain(self.watchdogs()) {
            // SAFETY: kill has no memory-safety preconditions; the pid was checked to be ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// PATH of every bridge run.
const SYSTEM_PATH: &str = "/usr/bin:/bin";

fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

/// Alive (kill(pid, 0) succeeds and not a zombie) and started for this fake (its environment
/// names the fake's directory: guards against pid reuse).
fn alive_and_ours(pid: i32, marker: &str) -> bool {
    // SAFETY: signal 0 only probes.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match proc_state(pid) {
        None | Some('Z') | Some('X') => return false,
        Some(_) => {}
    }
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()),
        // Unreadable but alive: count it (conservative).
        Err(_) => true,
    }
}

// ---------------------------------------------------------------------------------------------
// Running the bridge
// ---------------------------------------------------------------------------------------------

/// How the bridge's stdin is fed.
enum Input {
    /// Write these bytes, then close (what the JetBrains plugin does).
    Close(Vec<u8>),
    /// Write these bytes and keep stdin open (control messages may follow).
    KeepOpen(Vec<u8>),
    /// Write nothing and keep stdin open.
    OpenSilent,
}

/// A running bridge. Every line of its stdout and all of its stderr are checked for the
/// canaries; its peak RSS is sampled from `/proc/<pid>/status` (VmHWM).
struct Running {
    pid: i32,
    started: Instant,
    stdin: Option<ChildStdin>,
    lines: Option<mpsc::Receiver<String>>,
    manual_stdout: Option<BufReader<ChildStdout>>,
    reader: Option<JoinHandle<()>>,
    kept: Vec<String>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    problems: Arc<Mutex<Vec<String>>>,
    hwm_kib: Arc<AtomicU64>,
    // Held so std does not consider the child dropped before we reaped it.
    _child: std::process::Child,
}

/// The result of one bridge run.
struct Outcome {
    status: ExitStatus,
    /// stdout lines (those not consumed one by one with [`Running::next_line`]).
    lines: Vec<String>,
    stderr: String,
    elapsed: Duration,
    /// Peak RSS of the bridge process itself (VmHWM, sampled while it ran). Not wait4's
    /// `ru_maxrss`: that also counts the pre-exec fork of the (large) test process.
    hwm_kib: u64,
}

impl Running {
    fn spawn(mut cmd: Command, input: Input) -> Running {
        Running::spawn_with(&mut cmd, input, false)
    }

    /// Like [`Running::spawn`], but stdout is read only by [`Running::manual_line`] (so the
    /// test can close it).
    fn spawn_manual_stdout(mut cmd: Command, input: Input) -> Running {
        Running::spawn_with(&mut cmd, input, true)
    }

    fn spawn_with(cmd: &mut Command, input: Input, manual: bool) -> Running {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn bridge");
        let pid = child.id() as i32;
        let problems = Arc::new(Mutex::new(Vec::new()));

        let hwm_kib = Arc::new(AtomicU64::new(0));
        {
            let hwm = Arc::clone(&hwm_kib);
            std::thread::spawn(move || {
                let mut seen_bridge = false;
                loop {
                    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                        return;
                    };
                    if !status.starts_with("Name:\tbridge") {
                        if seen_bridge || started.elapsed() > Duration::from_secs(5) {
                            return; // reaped, and the pid reused
                        }
                        std::thread::sleep(Duration::from_millis(1)); // not exec'ed yet
                        continue;
                    }
                    seen_bridge = true;
                    let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    else {
                        return; // a zombie has no memory lines
                    };
                    hwm.fetch_max(kib, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        }

        let stderr = child.stderr.take().unwrap();
        let stderr_problems = Arc::clone(&problems);
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = BufReader::new(stderr).read_to_end(&mut buf);
            if let Some(canary) = leaked_canary(&buf) {
                stderr_problems
                    .lock()
                    .unwrap()
                    .push(format!("canary {canary} leaked on stderr"));
            }
            buf
        });

        let stdout = child.stdout.take().unwrap();
        let (lines, reader, manual_stdout) = if manual {
            (None, None, Some(BufReader::new(stdout)))
        } else {
            let (tx, rx) = mpsc::channel();
            let problems = Arc::clone(&problems);
            let reader = std::thread::spawn(move || {
                let mut stdout = BufReader::with_capacity(256 * 1024, stdout);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match stdout.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let line = check_stdout_line(&buf, &problems);
                    if tx.send(line).is_err() {
                        // Nobody listens any more: keep draining so the bridge is not blocked.
                    }
                }
            });
            (Some(rx), Some(reader), None)
        };

        let mut stdin = child.stdin.take();
        match input {
            Input::Close(bytes) => {
                let mut pipe = stdin.take().unwrap();
                std::thread::spawn(move || {
                    // The bridge may reject the request before reading all of it.
                    let _ = pipe.write_all(&bytes);
                });
            }
            Input::KeepOpen(bytes) => {
                stdin
                    .as_mut()
                    .unwrap()
                    .write_all(&bytes)
                    .expect("write request");
            }
            Input::OpenSilent => {}
        }

        Running {
            pid,
            started,
            stdin,
            lines,
            manual_stdout,
            reader,
            kept: Vec::new(),
            stderr: Some(stderr),
            problems,
            hwm_kib,
            _child: child,
        }
    }

    /// The next stdout line, not kept in the outcome (for floods).
    fn next_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines
            .as_ref()
            .expect("stdout is read by the reader thread")
            .recv_timeout(timeout)
            .ok()
    }

    /// Reads (and keeps) stdout lines until one satisfies `pred`.
    fn wait_for_line(&mut self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.as_ref().unwrap().recv_timeout(left) {
                Ok(line) => {
                    let hit = pred(&line);
                    self.kept.push(line);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!(
                    "no stdout line {what} within {timeout:?}; stdout so far:\n{}",
                    self.kept.join("\n")
                ),
            }
        }
    }

    /// Current resident memory of the bridge (VmRSS).
    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// Reads one line from a manually read stdout.
    fn manual_line(&mut self) -> Option<String> {
        let stdout = self.manual_stdout.as_mut().expect("manual stdout");
        let mut buf = Vec::new();
        match stdout.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => None,
            Ok(_) => {
                let line = check_stdout_line(&buf, &self.problems);
                self.kept.push(line.clone());
                Some(line)
            }
        }
    }

    /// Closes the read end of the bridge's stdout (as a plugin that went away does).
    fn close_stdout(&mut self) {
        self.manual_stdout = None;
    }

    fn write_stdin(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).expect("write to the bridge's stdin");
        stdin.flush().unwrap();
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory-safety preconditions; pid is our unreaped child.
        let rc = unsafe { libc::kill(self.pid, signal) };
        assert_eq!(rc, 0, "signal the bridge");
    }

    /// Waits for the bridge to exit (killing it after `timeout`, which fails the test).
    fn finish(mut self, timeout: Duration) -> Outcome {
        let deadline = self.started + timeout;
        let status = loop {
            let mut status = 0;
            // SAFETY: a valid pointer to a local; pid is our unreaped child.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if rc == self.pid {
                break ExitStatus::from_raw(status);
            }
            assert!(
                rc == 0,
                "waitpid failed: {}",
                std::io::Error::last_os_error()
            );
            if Instant::now() > deadline {
                self.signal(libc::SIGKILL);
                let mut kept = self.kept.clone();
                if let Some(rx) = &self.lines {
                    kept.extend(rx.try_iter());
                }
                panic!(
                    "the bridge did not exit within {timeout:?}; stdout so far:\n{}",
                    kept.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = self.started.elapsed();
        self.stdin = None;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let mut lines = std::mem::take(&mut self.kept);
        if let Some(rx) = self.lines.take() {
            lines.extend(rx.try_iter());
        }
        if let Some(mut stdout) = self.manual_stdout.take() {
            let mut rest = Vec::new();
            let _ = stdout.read_to_end(&mut rest);
            for line in rest.split_inclusive(|b| *b == b'\n') {
                lines.push(check_stdout_line(line, &self.problems));
            }
        }
        let stderr = self.stderr.take().unwrap().join().unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr).into_owned();
        let problems = self.problems.lock().unwrap().clone();
        assert!(
            problems.is_empty(),
            "{problems:?}\nstdout:\n{}\nstderr:\n{stderr}",
            lines.join("\n")
        );
        check_stderr(&stderr);
        Outcome {
            status,
            lines,
            stderr,
            elapsed,
            hwm_kib: self.hwm_kib.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that panicked before `finish` must not leave the bridge running.
        if self.stderr.is_some() {
            // SAFETY: as in `signal`.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                let mut status = 0;
                libc::waitpid(self.pid, &mut status, 0);
            }
        }
    }
}

/// Every stdout line: valid UTF-8, no canary, no raw CR inside (the LF is the terminator).
fn check_stdout_line(raw: &[u8], problems: &Mutex<Vec<String>>) -> String {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let problem = |p: String| problems.lock().unwrap().push(p);
    if let Some(canary) = leaked_canary(body) {
        problem(format!("canary {canary} leaked on stdout"));
    }
    if body.contains(&b'\r') {
        problem("a raw CR inside a stdout line".into());
    }
    match std::str::from_utf8(body) {
        Ok(text) => text.to_string(),
        Err(_) => {
            problem("stdout line is not valid UTF-8".into());
            String::from_utf8_lossy(body).into_owned()
        }
    }
}

/// Tags a plugin parses from the merged stdout+stderr stream as protocol lines.
const WIRE_TAGS: &[&str] = &[
    "[MESSAGE_START]",
    "[STREAM_START]",
    "[SESSION_ID]",
    "[THREAD_ID]",
    "[CONTENT_DELTA]",
    "[THINKING_DELTA]",
    "[MESSAGE]",
    "[TOOL_RESULT]",
    "[USAGE]",
    "[SEND_ERROR]",
    "[BLOCK_RESET]",
    "[STREAM_END]",
    "[MESSAGE_END]",
];

/// The JetBrains plugin merges stderr into stdout: diagnostics must never look like wire lines.
/// Nor may the bridge panic.
fn check_stderr(stderr: &str) {
    for line in stderr.lines() {
        assert!(
            !WIRE_TAGS.iter().any(|t| line.starts_with(t)),
            "a stderr line starts with a wire tag: {line}"
        );
    }
    assert!(
        !stderr.contains("panicked"),
        "the bridge panicked:\n{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Reading the output
// ---------------------------------------------------------------------------------------------

impl Outcome {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    fn stdout(&self) -> String {
        self.lines.join("\n")
    }

    fn final_json(&self) -> Value {
        let last = self
            .lines
            .last()
            .unwrap_or_else(|| panic!("no stdout at all; stderr:\n{}", self.stderr));
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("final line {last:?} is not JSON: {e}"))
    }

    /// `[CONTENT_DELTA]` payloads, decoded.
    fn deltas(&self) -> Vec<String> {
        self.payloads("[CONTENT_DELTA] ")
            .into_iter()
            .map(|v| {
                v.as_str()
                    .expect("delta payload is a JSON string")
                    .to_string()
            })
            .collect()
    }

    /// `error` of each `[SEND_ERROR]`.
    fn send_errors(&self) -> Vec<String> {
        self.payloads("[SEND_ERROR] ")
            .into_iter()
            .map(|v| {
                v["error"]
                    .as_str()
                    .expect("SEND_ERROR has an error")
                    .to_string()
            })
            .collect()
    }

    fn payloads(&self, tag: &str) -> Vec<Value> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix(tag))
            .map(|p| serde_json::from_str(p).unwrap_or_else(|e| panic!("{tag}payload {p:?}: {e}")))
            .collect()
    }

    fn jsonl(&self) -> Vec<Value> {
        self.lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("JSONL line {l:?}: {e}")))
            .collect()
    }

    fn jsonl_of_type(&self, kind: &str) -> Vec<Value> {
        self.jsonl()
            .into_iter()
            .filter(|v| v["type"] == kind)
            .collect()
    }

    /// The markers wire invariants every run must keep (README "Markers").
    fn check_markers(&self) -> &Self {
        let lines = &self.lines;
        let n = lines.len();
        let dump = || format!("stdout:\n{}\nstderr:\n{}", lines.join("\n"), self.stderr);
        assert!(n >= 5, "too few lines; {}", dump());
        assert_eq!(lines[0], "[MESSAGE_START]", "{}", dump());
        assert_eq!(lines[1], "[STREAM_START]", "{}", dump());
        assert_eq!(lines[n - 3], "[STREAM_END]", "{}", dump());
        assert_eq!(lines[n - 2], "[MESSAGE_END]", "{}", dump());
        for tag in [
            "[MESSAGE_START]",
            "[STREAM_START]",
            "[STREAM_END]",
            "[MESSAGE_END]",
        ] {
            assert_eq!(
                lines.iter().filter(|l| *l == tag).count(),
                1,
                "{tag} must appear once; {}",
                dump()
            );
        }
        for line in &lines[..n - 1] {
            let tag = WIRE_TAGS
                .iter()
                .find(|t| line.as_str() == **t || line.starts_with(&format!("{t} ")))
                .unwrap_or_else(|| panic!("not a wire line: {line:?}; {}", dump()));
            let payload = line[tag.len()..].trim_start();
            match *tag {
                "[CONTENT_DELTA]" | "[THINKING_DELTA]" => {
                    assert!(
                        serde_json::from_str::<String>(payload).is_ok(),
                        "{tag} payload is not a JSON string: {line}"
                    );
                }
                "[MESSAGE]" | "[TOOL_RESULT]" | "[USAGE]" | "[SEND_ERROR]" => {
                    assert!(
                        serde_json::from_str::<Value>(payload).is_ok_and(|v| v.is_object()),
                        "{tag} payload is not a JSON object: {line}"
                    );
                }
                _ => {}
            }
        }
        let last = self.final_json();
        let success = last["success"]
            .as_bool()
            .expect("final line has a boolean success");
        let send_errors = lines
            .iter()
            .filter(|l| l.starts_with("[SEND_ERROR] "))
            .count();
        if success {
            assert_eq!(
                send_errors,
                0,
                "a successful turn with a SEND_ERROR; {}",
                dump()
            );
        } else if last["error"] == "User interrupted" {
            assert_eq!(send_errors, 0, "an interrupt is not an error; {}", dump());
        } else {
            assert_eq!(
                send_errors,
                1,
                "a failed turn needs exactly one SEND_ERROR; {}",
                dump()
            );
            assert!(
                lines[n - 4].starts_with("[SEND_ERROR] "),
                "SEND_ERROR must come after everything streamed, right before STREAM_END; {}",
                dump()
            );
            assert!(
                last["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{}",
                dump()
            );
        }
        self
    }

    /// The JSONL wire invariants every run must keep (README "JSONL").
    fn check_jsonl(&self) -> &Self {
        let values = self.jsonl();
        let dump = || format!("stdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr);
        assert!(values.len() >= 2, "{}", dump());
        for (i, v) in values.iter().enumerate() {
            assert_eq!(v["v"], 1, "{}", dump());
            assert_eq!(v["seq"], i as u64, "seq must count 0, 1, 2, …; {}", dump());
            assert!(v["type"].is_string(), "{}", dump());
        }
        assert_eq!(values[0]["type"], "turn_start", "{}", dump());
        let last = values.last().unwrap();
        assert_eq!(
            last["type"],
            "turn_end",
            "turn_end must be last; {}",
            dump()
        );
        assert_eq!(
            values.iter().filter(|v| v["type"] == "turn_end").count(),
            1,
            "{}",
            dump()
        );
        if last["success"] == false && last["stop_reason"] != "interrupted" {
            assert!(
                values.iter().any(|v| v["type"] == "error"),
                "a failed turn needs an error event; {}",
                dump()
            );
        }
        self
    }
}

fn figure(what: &str, value: impl std::fmt::Display) {
    eprintln!("FIGURE {what}: {value}");
}

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// One run with the request written and stdin closed.
fn run(fake: &Fake, args: &[&str], stdin: &str) -> Outcome {
    Running::spawn(fake.command(args), Input::Close(stdin.as_bytes().to_vec())).finish(SECS(60))
}

// =============================================================================================
// 1. Faults of the CLI
// =============================================================================================

#[test]
fn baseline_turn_succeeds_and_the_cli_gets_eof_after_its_result() {
    for engine in engines() {
        let fake = Fake::new(engine, "ok");
        let out = run(&fake, &[], &request("say hello"));
        out.check_markers();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(
            out.deltas(),
            engine.deltas_with_result(&["Hello", " world"], "Hello world")
        );
        assert_eq!(
            out.final_json(),
            json!({"success": true, engine.id_key: engine.session_id, "result": "Hello world"})
        );
        assert!(
            fake.path("stdin-eof").exists(),
            "{}: the bridge must close the CLI's stdin after the terminal event (the CLI then exits)",
            engine.name
        );
        assert_eq!(fake.prompt(), "say hello");
        if engine.prompt != Prompt::ArgOrStdin {
            // The prompt goes over stdin, never through argv.
            assert!(!fake.argv().contains("say hello"), "{}", fake.argv());
        }
        assert_eq!(fake.await_no_leftovers(SECS(3)), Vec::<i32>::new());

        let fake = Fake::new(engine, "ok");
        let out = run(&fake, &["--format", "jsonl"], &request("say hello"));
        out.check_jsonl();
        assert_eq!(out.code(), Some(0));
        let end = out.jsonl_of_type("turn_end").pop().unwrap();
        assert_eq!(end["success"], true);
        assert_eq!(end["result"], "Hello world");
    }
}

/// The stderr tail is collected by a separate task; the error must not be reported before the
/// tail has caught up with what the CLI wrote before it exited. Repeated because the race is
/// timing-dependent.
#[test]
fn crash_mid_stream_reports_the_stderr_tail_after_everything_streamed() {
    for engine in engines() {
        let mut missing_tail = 0;
        const RUNS: usize = 10;
        for _ in 0..RUNS {
            let fake = Fake::new(engine, "crash").var("FAKE_EXIT", 3);
            let out = run(&fake, &[], &request("crash please"));
            out.check_markers();
            // Markers + stdin request: a failure reported in-band exits 0 (README "Exit codes").
            assert_eq!(out.code(), Some(0), "{}", out.stderr);
            assert_eq!(
                out.deltas(),
                ["one ", "two ", "three"],
                "streamed text is delivered"
            );
            let last = out.final_json();
            assert_eq!(last["success"], false);
            assert_eq!(last[engine.id_key], engine.session_id);
            let error = last["error"].as_str().unwrap();
            assert!(error.contains("exit code 3"), "{error}");
            // (ACP: "… during the turn, before answering session/prompt")
            assert!(
                error.contains("before finishing the turn")
                    || error.contains("before answering session/prompt"),
                "{error}"
            );
            let send_error = &out.send_errors()[0];
            assert!(send_error.contains("exit code 3"), "{send_error}");
            if !send_error.contains("fake-cli: fatal: upstream exploded (code 42)") {
                missing_tail += 1;
            }
        }
        if engine.skips("crash_stderr_tail") {
            figure(
                &format!("{}: crash reports without the stderr tail", engine.name),
                format!("{missing_tail} of {RUNS}"),
            );
        } else {
            assert_eq!(
                missing_tail, 0,
                "{}: {missing_tail} of {RUNS} crash reports lacked the CLI's last stderr lines",
                engine.name
            );
        }

        // JSONL: an error event carrying the tail, a failed turn_end, exit 1.
        let fake = Fake::new(engine, "crash");
        let out = run(&fake, &["--format", "jsonl"], &request("crash please"));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        let texts: Vec<Value> = out
            .jsonl_of_type(engine.text_event)
            .into_iter()
            .map(|v| v["text"].clone())
            .collect();
        assert_eq!(texts, [json!("one "), json!("two "), json!("three")]);
        let error = out.jsonl_of_type("error").pop().unwrap();
        assert_eq!(error["code"], "exited_early", "{error}");
        let end = out.jsonl_of_type("turn_end").pop().unwrap();
        assert_eq!(end["success"], false);
        assert_eq!(end["stop_reason"], "error");
        assert_eq!(fake.await_no_leftovers(SECS(3)), Vec::<i32>::new());
    }
}

#[test]
fn crash_stderr_tail_in_jsonl_error_event() {
    for engine in engines() {
        if !engine.skips("crash_stderr_tail") {
            crash_tail_case(engine);
        }
    }
}

fn crash_tail_case(engine: &'static Engine) {
    {
        let mut missing_tail = 0;
        const RUNS: usize = 10;
        for _ in 0..RUNS {
            let fake = Fake::new(engine, "crash");
            let out = run(&fake, &["--format", "jsonl"], &request("crash please"));
            out.check_jsonl();
            let error = out.jsonl_of_type("error").pop().unwrap();
            let tail = error["stderr_tail"].as_str().unwrap_or_default();
            if !tail.ends_with("fake-cli: fatal: upstream exploded (code 42)") {
                missing_tail += 1;
            }
        }
        assert_eq!(
            missing_tail, 0,
            "{}: {missing_tail} of {RUNS} JSONL error events lacked the stderr tail",
            engine.name
        );
    }
}

#[test]
fn crash_by_signal_names_the_signal() {
    for engine in engines() {
        for (signal, name) in [
            ("KILL", "signal 9 (SIGKILL)"),
            ("SEGV", "signal 11 (SIGSEGV)"),
        ] {
            let fake = Fake::new(engine, "signal").var("FAKE_SIGNAL", signal);
            let out = run(&fake, &[], &request("die"));
            out.check_markers();
            assert_eq!(out.code(), Some(0));
            assert_eq!(out.deltas(), ["before the signal"]);
            let last = out.final_json();
            assert_eq!(last["success"], false);
            let error = last["error"].as_str().unwrap();
            assert!(error.contains(name), "{signal}: {error}");
            assert!(out.send_errors()[0].contains(name));
        }
    }
}

/// The CLI reports that the model API failed for good, then exits 0 (pi does; the others
/// exit 1): the stream decides, so the turn fails with the provider's message, after what was
/// streamed, never with a fabricated success.
#[test]
fn api_error_then_exit_zero_is_a_failure_with_the_providers_message() {
    const MESSAGE: &str = "500 upstream failed for good (fake)";
    for engine in engines() {
        let fake = Fake::new(engine, "api_error");
        let out = run(&fake, &[], &request("fail upstream"));
        out.check_markers();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(out.deltas(), ["partial"], "{}", engine.name);
        let last = out.final_json();
        assert_eq!(last["success"], false, "{}: {last}", engine.name);
        assert!(last["result"].is_null(), "no fabricated result: {last}");
        let error = last["error"].as_str().unwrap();
        assert!(error.contains(MESSAGE), "{}: {error}", engine.name);
        assert!(out.send_errors()[0].contains(MESSAGE));
        assert_eq!(fake.await_no_leftovers(SECS(3)), Vec::<i32>::new());

        let fake = Fake::new(engine, "api_error");
        let out = run(&fake, &["--format", "jsonl"], &request("fail upstream"));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        let error = out.jsonl_of_type("error").pop().unwrap();
        assert!(
            error["message"].as_str().unwrap().contains(MESSAGE),
            "{}: {error}",
            engine.name
        );
        let end = out.jsonl_of_type("turn_end").pop().unwrap();
        assert_eq!(end["success"], false);
        assert_eq!(end["stop_reason"], "error");
    }
}

#[test]
fn exit_zero_without_terminal_event_is_an_error_never_success() {
    for engine in engines() {
        for (args, format, code) in [
            (&[][..], "markers", 0),
            (&["--format", "jsonl"][..], "jsonl", 1),
        ] {
            let fake = Fake::new(engine, "exit0");
            let out = run(&fake, args, &request("leave early"));
            if format == "markers" {
                out.check_markers();
                assert_eq!(out.deltas(), ["partial answer"]);
                let last = out.final_json();
                assert_eq!(last["success"], false);
                assert!(last["result"].is_null(), "no fabricated result: {last}");
                assert!(last["error"].as_str().unwrap().contains("exit code 0"));
            } else {
                out.check_jsonl();
                let end = out.jsonl_of_type("turn_end").pop().unwrap();
                assert_eq!(end["success"], false);
                assert_eq!(out.jsonl_of_type("error")[0]["code"], "exited_early");
            }
            assert_eq!(out.code(), Some(code), "{format}");
        }
        // A prompt argument (terminal use): the failed turn exits 1.
        let fake = Fake::new(engine, "exit0");
        let out = Running::spawn(fake.command(&["leave", "early"]), Input::Close(Vec::new()))
            .finish(SECS(30));
        out.check_markers();
        assert_eq!(out.code(), Some(1));
        assert_eq!(out.final_json()["success"], false);
    }
}

#[test]
fn silent_cli_hits_the_idle_deadline_and_its_group_is_killed() {
    for engine in engines() {
        let fake = Fake::new(engine, "hang");
        let out = Running::spawn(
            fake.command(&["--idle-timeout", "1"]),
            Input::Close(request("hang").into_bytes()),
        )
        .finish(SECS(30));
        out.check_markers();
        assert_eq!(out.code(), Some(0));
        assert_eq!(out.deltas(), ["partial"]);
        let error = out.final_json()["error"].as_str().unwrap().to_string();
        assert!(error.contains("idle deadline"), "{error}");
        assert!(error.contains("1 s"), "{error}");
        assert!(
            out.elapsed >= SECS(1) && out.elapsed < SECS(15),
            "elapsed {:?}",
            out.elapsed
        );
        figure(
            &format!("{}: idle deadline 1 s: bridge exited after", engine.name),
            format!("{:?}", out.elapsed),
        );
        assert_eq!(fake.pids().len(), 2, "leader and its sleep");
        assert_eq!(
            fake.await_no_leftovers(SECS(3)),
            Vec::<i32>::new(),
            "group killed"
        );

        let fake = Fake::new(engine, "hang");
        let out = Running::spawn(
            fake.command(&["--idle-timeout", "1", "--format", "jsonl"]),
            Input::Close(request("hang").into_bytes()),
        )
        .finish(SECS(30));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        assert_eq!(out.jsonl_of_type("error")[0]["code"], "idle_timeout");
    }
}

#[test]
fn endless_retries_hit_the_wall_clock_deadline() {
    for engine in engines() {
        let fake = Fake::new(engine, "retry_forever");
        // Status lines every 100 ms keep the idle deadline (1 s) from firing: only the wall
        // clock (2 s) can end this turn.
        let out = Running::spawn(
            fake.command(&["--timeout", "2", "--idle-timeout", "1", "--format", "jsonl"]),
            Input::Close(request("retry").into_bytes()),
        )
        .finish(SECS(30));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        // (other statuses, e.g. ACP's "started session …", may come before)
        let statuses = out.jsonl_of_type("status");
        let retries = statuses
            .iter()
            .filter(|s| s["kind"] == engine.retry_kind)
            .count();
        assert!(retries >= 5, "{retries} retry statuses: {statuses:?}");
        let error = out.jsonl_of_type("error").pop().unwrap();
        assert_eq!(error["code"], "wall_timeout", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("wall-clock deadline")
        );
        assert!(
            out.elapsed >= SECS(2) && out.elapsed < SECS(15),
            "elapsed {:?}",
            out.elapsed
        );
        figure(
            &format!("{}: wall deadline 2 s: bridge exited after", engine.name),
            format!("{:?}", out.elapsed),
        );
        assert_eq!(fake.await_no_leftovers(SECS(3)), Vec::<i32>::new());

        let fake = Fake::new(engine, "retry_forever");
        let out = Running::spawn(
            fake.command(&["--timeout", "2", "--idle-timeout", "1"]),
            Input::Close(request("retry").into_bytes()),
        )
        .finish(SECS(30));
        out.check_markers();
        assert!(
            out.final_json()["error"]
                .as_str()
                .unwrap()
                .contains("wall-clock deadline")
        );
    }
}

/// ≥ 1,000,000 delta lines in one assistant message (a runaway answer): all delivered, in
/// order, and the bridge's memory stays flat
/// (bounded channel, bounded line reader: a flood costs time, not memory).
#[test]
fn flood_of_a_million_deltas_is_delivered_in_order_with_flat_memory() {
    for engine in engines() {
        let flat = !engine.skips("flood_flat_memory");
        flood_case(engine, flat);
    }
}

fn flood_case(engine: &'static Engine, flat: bool) {
    const LINES: u64 = 1_000_000;
    {
        let fake = Fake::new(engine, "flood").var("FAKE_N", LINES);
        let mut running = Running::spawn(
            fake.command(&[]),
            Input::Close(request("flood").into_bytes()),
        );
        let mut expected = 1u64;
        let mut tail = Vec::new();
        let mut out_of_order = None;
        // Resident memory early in the flood and near its end: flat means no growth per line.
        let (mut rss_early, mut rss_late) = (None, None);
        while let Some(line) = running.next_line(SECS(120)) {
            if engine.result == ResultFrom::LastDelta
                && (line == "[BLOCK_RESET]" || line.starts_with("[MESSAGE] "))
                && expected <= LINES
            {
                // One whole message per piece (Codex): its separator and its [MESSAGE].
                continue;
            }
            match line.strip_prefix("[CONTENT_DELTA] ") {
                Some(payload) if expected <= LINES => {
                    let text: String = serde_json::from_str(payload).unwrap();
                    if out_of_order.is_none() && text != format!("d{expected};") {
                        out_of_order = Some(format!("expected d{expected}; got {text}"));
                    }
                    if expected == LINES / 10 {
                        rss_early = running.rss_kib();
                    } else if expected == LINES * 9 / 10 {
                        rss_late = running.rss_kib();
                    }
                    expected += 1;
                }
                _ => tail.push(line),
            }
        }
        let mut out = running.finish(SECS(600));
        assert_eq!(out_of_order, None, "deltas out of order");
        assert_eq!(expected - 1, LINES, "every delta delivered");
        out.lines = tail;
        out.check_markers();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(out.final_json()["success"], true);
        match engine.result {
            ResultFrom::AllText => {
                // The final line's `result` is the start of the text, capped so a flood cannot
                // grow memory (the deltas, checked above, carry all of it).
                let result = out.final_json()["result"].as_str().unwrap().to_string();
                let expected: String = (1..=LINES).map(|i| format!("d{i};")).collect();
                assert!(
                    !result.is_empty()
                        && expected.starts_with(&result)
                        && result.len() <= bridge::acp::normalize::RESULT_MAX_BYTES,
                    "the result is a capped prefix of the flood ({} bytes)",
                    result.len()
                );
            }
            _ => assert_eq!(out.final_json()["result"], "flood done"),
        }
        let mib = out.hwm_kib as f64 / 1024.0;
        let (early, late) = (
            rss_early.expect("RSS at 10 %"),
            rss_late.expect("RSS at 90 %"),
        );
        figure(
            &format!(
                "{}: flood 1,000,000 deltas: bridge peak RSS (VmHWM)",
                engine.name
            ),
            format!(
                "{mib:.1} MiB; RSS at 10 % {:.1} MiB, at 90 % {:.1} MiB; elapsed {:?}",
                early as f64 / 1024.0,
                late as f64 / 1024.0,
                out.elapsed
            ),
        );
        // Flat: a bridge that keeps nothing per line grows well under 1 MiB over 800,000
        // lines; keeping ~10 bytes per delta shows up as ~8 MiB.
        assert!(
            !flat || late <= early + 2 * 1024,
            "RSS grew from {early} KiB to {late} KiB during the flood: something is kept per line"
        );
        assert!(out.hwm_kib > 0, "RSS was sampled");
        assert!(mib < 64.0, "bridge peak RSS {mib:.1} MiB on a flood");
    }
}

#[test]
fn line_of_64_mib_is_skipped_with_a_warning_and_memory_stays_bounded() {
    const BYTES: u64 = 64 * 1024 * 1024;
    for engine in engines() {
        let fake = Fake::new(engine, "long_line").var("FAKE_BYTES", BYTES);
        let out = Running::spawn(
            fake.command(&["--format", "jsonl"]),
            Input::Close(request("long").into_bytes()),
        )
        .finish(SECS(120));
        out.check_jsonl();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        let kinds: Vec<String> = out
            .jsonl()
            .iter()
            .map(|v| v["type"].as_str().unwrap().to_string())
            .collect();
        let warning = out.jsonl_of_type("warning").pop().expect("a warning");
        assert_eq!(warning["code"], "line_too_long", "{warning}");
        assert!(
            warning["message"].as_str().unwrap().contains("16777216"),
            "{warning}"
        );
        let texts: Vec<String> = out
            .jsonl_of_type(engine.text_event)
            .iter()
            .map(|v| v["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            texts,
            engine.deltas_with_result(&["before ", "after"], "long line done"),
            "the turn continues past the long line"
        );
        let warn_at = kinds.iter().position(|k| k == "warning").unwrap();
        let after_at = kinds.iter().rposition(|k| k == engine.text_event).unwrap();
        // (with a result delta, the last text_delta is after the warning all the same)
        assert!(warn_at < after_at, "{kinds:?}");
        let end = out.jsonl_of_type("turn_end").pop().unwrap();
        assert_eq!(end["success"], true);
        let mib = out.hwm_kib as f64 / 1024.0;
        figure(
            &format!("{}: 64 MiB line: bridge peak RSS (VmHWM)", engine.name),
            format!("{mib:.1} MiB"),
        );
        assert!(out.hwm_kib > 0);
        // The line cap is 16 MiB: the bridge may buffer up to that, never the whole line.
        assert!(mib < 48.0, "bridge peak RSS {mib:.1} MiB on a 64 MiB line");

        // Markers: the warning has no marker; the turn just continues.
        let fake = Fake::new(engine, "long_line").var("FAKE_BYTES", BYTES);
        let out = Running::spawn(
            fake.command(&[]),
            Input::Close(request("long").into_bytes()),
        )
        .finish(SECS(120));
        out.check_markers();
        assert_eq!(
            out.deltas(),
            engine.deltas_with_result(&["before ", "after"], "long line done")
        );
        assert_eq!(out.final_json()["success"], true);

        // A smaller cap via --max-line-bytes: lines at the cap pass, longer ones are skipped.
        let fake = Fake::new(engine, "long_line").var("FAKE_BYTES", 5000);
        let out = Running::spawn(
            fake.command(&["--format", "jsonl", "--max-line-bytes", "4096"]),
            Input::Close(request("long").into_bytes()),
        )
        .finish(SECS(60));
        out.check_jsonl();
        let warning = out.jsonl_of_type("warning").pop().expect("a warning");
        assert_eq!(warning["code"], "line_too_long");
        assert!(
            warning["message"].as_str().unwrap().contains("4096"),
            "{warning}"
        );
        let fake = Fake::new(engine, "long_line").var("FAKE_BYTES", 3000);
        let out = Running::spawn(
            fake.command(&["--format", "jsonl", "--max-line-bytes", "4096"]),
            Input::Close(request("long").into_bytes()),
        )
        .finish(SECS(60));
        out.check_jsonl();
        // (other warnings, e.g. Codex's `approvals_not_interactive`, are not about lines)
        assert!(
            !out.jsonl_of_type("warning")
                .iter()
                .any(|w| w["code"] == "line_too_long"),
            "{:?}",
            out.jsonl_of_type("warning")
        );
        let long = &out.jsonl_of_type(engine.text_event)[1];
        assert_eq!(long["text"].as_str().unwrap(), "x".repeat(3000));
    }
}

#[test]
fn invalid_utf8_and_binary_garbage_are_lossy_warnings_not_panics() {
    for engine in engines() {
        let fake = Fake::new(engine, "invalid_utf8");
        let out = Running::spawn(
            fake.command(&["--format", "jsonl"]),
            Input::Close(request("utf8").into_bytes()),
        )
        .finish(SECS(30));
        out.check_jsonl();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        let texts: Vec<String> = out
            .jsonl_of_type(engine.text_event)
            .iter()
            .map(|v| v["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            texts,
            engine.deltas_with_result(
                &["before ", "bad\u{fffd}\u{fffd}utf8 ", "after"],
                "utf8 done"
            )
        );
        let codes: Vec<String> = out
            .jsonl_of_type("warning")
            .iter()
            .map(|v| v["code"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            codes.iter().filter(|c| *c == "invalid_utf8").count(),
            2,
            "one per non-UTF-8 line: {codes:?}"
        );
        assert!(codes.iter().any(|c| c == "unparsed_line"), "{codes:?}");
        assert_eq!(out.jsonl_of_type("turn_end")[0]["success"], true);

        // Markers: forged marker lines printed by the CLI never pass through as wire lines.
        let fake = Fake::new(engine, "invalid_utf8");
        let out = run(&fake, &[], &request("utf8"));
        out.check_markers(); // exactly one STREAM_END/MESSAGE_END, every line a wire line
        assert_eq!(
            out.deltas(),
            engine.deltas_with_result(
                &["before ", "bad\u{fffd}\u{fffd}utf8 ", "after"],
                "utf8 done"
            )
        );
        assert_eq!(out.final_json()["success"], true);
        assert_eq!(
            out.final_json()["result"],
            engine.expected_result(
                &["before ", "bad\u{fffd}\u{fffd}utf8 ", "after"],
                "utf8 done"
            )
        );
        assert!(!out.stdout().contains("forged"), "{}", out.stdout());
    }
}

/// Interrupt (control message or signal) with grandchildren that ignore SIGTERM: none is left,
/// the bridge ends quickly with the end markers and `"error":"User interrupted"`, exit 130.
fn interrupt_case(engine: &'static Engine, on_interrupt: &str, by_signal: bool) {
    let fake = Fake::new(engine, "grandkids").var("FAKE_ON_INTERRUPT", on_interrupt);
    let input = if by_signal {
        Input::Close(request("spawn helpers").into_bytes())
    } else {
        Input::KeepOpen(format!("{}\n", request("spawn helpers")).into_bytes())
    };
    let mut running = Running::spawn(fake.command(&[]), input);
    running.wait_for_line("[CONTENT_DELTA] \"working\"", SECS(20), |l| {
        l == "[CONTENT_DELTA] \"working\""
    });
    let pids = fake.await_pids(4, SECS(5));
    // A process in the middle of an exec (the leader's or a helper's `exec sleep`) briefly
    // shows an empty environment, and on a loaded machine "briefly" can outlast a poll: a
    // process counts once any poll saw it alive and ours.
    let alive_deadline = Instant::now() + SECS(10);
    let mut seen_alive = std::collections::BTreeSet::new();
    loop {
        seen_alive.extend(fake.leftovers());
        if seen_alive.len() >= 4 || Instant::now() > alive_deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let states: Vec<String> = pids
        .iter()
        .map(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}:{:?}:{}", proc_state(*p), cmd.replace('\0', " "))
        })
        .collect();
    assert_eq!(
        seen_alive.len(),
        4,
        "{}: leader + 3 helpers alive: {states:?}",
        engine.name
    );
    let interrupted_at = Instant::now();
    if by_signal {
        running.signal(libc::SIGTERM);
    } else {
        running.write_stdin(b"{\"type\":\"interrupt\"}\n");
    }
    let out = running.finish(SECS(60));
    let took = interrupted_at.elapsed();
    out.check_markers();
    assert_eq!(out.code(), Some(130), "{}", out.stderr);
    let last = out.final_json();
    assert_eq!(last["success"], false);
    assert_eq!(last["error"], "User interrupted", "{last}");
    assert_eq!(last[engine.id_key], engine.session_id);
    let left = fake.await_no_leftovers(SECS(2));
    let how = if by_signal {
        "SIGTERM"
    } else {
        "interrupt message"
    };
    figure(
        &format!(
            "{} / {how} / CLI {on_interrupt}s: bridge exit after",
            engine.name
        ),
        format!("{took:?}; processes left behind: {}", left.len()),
    );
    assert_eq!(left, Vec::<i32>::new(), "processes left behind after {how}");
    if on_interrupt == "respond" && engine.interrupt_message {
        // The graceful path: the CLI was asked to interrupt and ended the turn itself.
        let control = std::fs::read_to_string(fake.path("control")).unwrap_or_default();
        assert!(
            control.contains("interrupt"),
            "the CLI never got the interrupt request"
        );
        assert!(took < SECS(5), "graceful interrupt took {took:?}");
    } else if on_interrupt == "respond" {
        // No interrupt message for this engine: SIGTERM to the group, which the CLI obeys.
        assert!(took < SECS(5), "interrupt by signal took {took:?}");
    } else {
        // Interrupt grace (5 s) + SIGTERM grace (3 s) + slack.
        assert!(took < SECS(15), "interrupt of a stubborn CLI took {took:?}");
    }
}

#[test]
fn interrupt_message_leaves_no_process_when_the_cli_responds() {
    for engine in engines() {
        interrupt_case(engine, "respond", false);
    }
}

/// JSONL: an interrupted turn ends with `stop_reason: interrupted`, not as an error; exit 130.
#[test]
fn interrupt_in_jsonl_ends_the_turn_as_interrupted() {
    for engine in engines() {
        let fake = Fake::new(engine, "grandkids").var("FAKE_ON_INTERRUPT", "respond");
        let mut running = Running::spawn(
            fake.command(&["--format", "jsonl"]),
            Input::KeepOpen(request("spawn helpers").into_bytes()),
        );
        let text_type = format!("\"type\":\"{}\"", engine.text_event);
        running.wait_for_line("a text delta", SECS(20), |l| l.contains(&text_type));
        running.write_stdin(b"\n{\"type\":\"interrupt\"}\n");
        let out = running.finish(SECS(60));
        out.check_jsonl();
        assert_eq!(out.code(), Some(130));
        let end = out.jsonl_of_type("turn_end").pop().unwrap();
        assert_eq!(end["success"], false);
        assert_eq!(end["stop_reason"], "interrupted");
        assert_eq!(end["error"], "User interrupted");
        assert_eq!(
            out.jsonl_of_type("error"),
            Vec::<Value>::new(),
            "an interrupt is not an error"
        );
        assert_eq!(fake.await_no_leftovers(SECS(2)), Vec::<i32>::new());
    }
}

#[test]
fn interrupt_message_leaves_no_process_when_the_cli_ignores_it_and_sigterm() {
    for engine in engines() {
        interrupt_case(engine, "ignore", false);
    }
}

#[test]
fn sigterm_to_the_bridge_leaves_no_process_when_the_cli_responds() {
    for engine in engines() {
        interrupt_case(engine, "respond", true);
    }
}

#[test]
fn sigterm_to_the_bridge_leaves_no_process_when_the_cli_ignores_it() {
    for engine in engines() {
        interrupt_case(engine, "ignore", true);
    }
}

/// SIGINT and SIGHUP interrupt like SIGTERM (README "Exit codes": 130).
#[test]
fn sigint_and_sighup_interrupt_the_turn_too() {
    for engine in engines() {
        for signal in [libc::SIGINT, libc::SIGHUP] {
            let fake = Fake::new(engine, "grandkids").var("FAKE_ON_INTERRUPT", "respond");
            let mut running = Running::spawn(
                fake.command(&[]),
                Input::Close(request("spawn helpers").into_bytes()),
            );
            running.wait_for_line("a first delta", SECS(20), |l| {
                l.starts_with("[CONTENT_DELTA]")
            });
            fake.await_pids(4, SECS(5));
            running.signal(signal);
            let out = running.finish(SECS(60));
            assert_eq!(out.code(), Some(130), "signal {signal}: {}", out.stderr);
            let last = out.final_json();
            assert_eq!(last["error"], "User interrupted", "signal {signal}: {last}");
            assert_eq!(out.lines[out.lines.len() - 3], "[STREAM_END]");
            assert_eq!(out.lines[out.lines.len() - 2], "[MESSAGE_END]");
            assert_eq!(
                fake.await_no_leftovers(SECS(2)),
                Vec::<i32>::new(),
                "signal {signal}: processes left behind"
            );
        }
    }
}

/// The reader closes the bridge's stdout mid-turn: the bridge stops the CLI tree and exits 1,
/// whether the CLI keeps printing (EPIPE on the next write) or stays silent (the bridge must
/// notice without writing).
#[test]
fn closed_stdout_stops_the_bridge_and_the_cli() {
    for engine in engines() {
        for scenario in ["trickle", "hang"] {
            let fake = Fake::new(engine, scenario)
                .var("FAKE_N", 100_000)
                .var("FAKE_DELAY", "0.05");
            let mut running = Running::spawn_manual_stdout(
                fake.command(&[]),
                Input::Close(request("talk").into_bytes()),
            );
            while let Some(line) = running.manual_line() {
                if line.starts_with("[CONTENT_DELTA]") {
                    break;
                }
            }
            assert!(fake.started());
            let closed_at = Instant::now();
            running.close_stdout();
            let out = running.finish(SECS(60));
            let took = closed_at.elapsed();
            let left = fake.await_no_leftovers(SECS(2));
            figure(
                &format!(
                    "{} / stdout closed / CLI {scenario}: bridge exit after",
                    engine.name
                ),
                format!("{took:?}; processes left behind: {}", left.len()),
            );
            assert_eq!(out.code(), Some(1), "{scenario}: {}", out.stderr);
            // No interrupt grace for a reader that went away (5 s): the group is stopped at once.
            assert!(
                took < SECS(4),
                "{}: {scenario}: the bridge took {took:?} to exit",
                engine.name
            );
            assert_eq!(left, Vec::<i32>::new(), "{scenario}: processes left behind");
        }
    }
}

/// An IDE that force-kills the bridge (SIGKILL, e.g. a second "stop") gives it no chance to
/// clean up. The CLI dies by `PR_SET_PDEATHSIG`; its own children (three that ignore SIGTERM)
/// are stopped by the group's watchdog, which then exits too (README "Process hygiene").
#[test]
fn sigkill_to_the_bridge_leaves_no_cli_behind() {
    for engine in engines() {
        let fake = Fake::new(engine, "grandkids").var("FAKE_ON_INTERRUPT", "ignore");
        let mut running = Running::spawn(
            fake.command(&[]),
            Input::KeepOpen(format!("{}\n", request("spawn helpers")).into_bytes()),
        );
        running.wait_for_line("a first delta", SECS(20), |l| {
            l.starts_with("[CONTENT_DELTA]")
        });
        fake.await_pids(4, SECS(5));
        let alive_deadline = Instant::now() + SECS(5);
        while fake.leftovers().len() < 4 && Instant::now() < alive_deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            fake.leftovers().len(),
            4,
            "{}: leader + 3 helpers",
            engine.name
        );
        assert_eq!(
            fake.watchdogs().len(),
            1,
            "{}: one watchdog for the CLI's group",
            engine.name
        );
        let killed_at = Instant::now();
        running.signal(libc::SIGKILL);
        let out = running.finish(SECS(20));
        assert_eq!(out.status.signal(), Some(libc::SIGKILL));
        let left = fake.await_no_leftovers(SECS(5));
        figure(
            &format!(
                "{} / SIGKILL to the bridge: processes left behind",
                engine.name
            ),
            format!(
                "{} of 4 (+ watchdog), all gone after {:?}",
                left.len(),
                killed_at.elapsed()
            ),
        );
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "{}: the CLI, its children or the watchdog outlived a SIGKILLed bridge",
            engine.name
        );
    }
}

/// The plugin always closes stdin after the request: closing it mid-turn must not end the turn.
#[test]
fn closed_stdin_mid_turn_does_not_stop_the_turn() {
    for engine in engines() {
        let fake = Fake::new(engine, "trickle")
            .var("FAKE_N", 30)
            .var("FAKE_DELAY", "0.05");
        let mut running = Running::spawn(
            fake.command(&[]),
            Input::KeepOpen(request("talk").into_bytes()),
        );
        running.wait_for_line("a first delta", SECS(20), |l| {
            l.starts_with("[CONTENT_DELTA]")
        });
        running.close_stdin();
        let out = running.finish(SECS(60));
        out.check_markers();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        let streamed: Vec<String> = (1..=30).map(|i| format!("t{i};")).collect();
        let streamed: Vec<&str> = streamed.iter().map(String::as_str).collect();
        assert_eq!(
            out.deltas(),
            engine.deltas_with_result(&streamed, "trickle done")
        );
        assert_eq!(out.final_json()["success"], true);
        assert_eq!(
            out.final_json()["result"],
            engine.expected_result(&streamed, "trickle done")
        );
        assert!(fake.path("stdin-eof").exists());
        assert_eq!(fake.await_no_leftovers(SECS(3)), Vec::<i32>::new());
    }
}

#[test]
fn megabytes_of_stderr_do_not_block_the_turn() {
    for engine in engines() {
        let fake = Fake::new(engine, "stderr_flood");
        let out = run(&fake, &[], &request("chatty"));
        out.check_markers();
        assert_eq!(out.code(), Some(0));
        assert_eq!(
            out.deltas(),
            engine.deltas_with_result(&["before ", "after"], "stderr flood done")
        );
        assert_eq!(out.final_json()["success"], true);
        assert!(out.elapsed < SECS(30), "{:?}", out.elapsed);
    }
}

#[test]
fn helpers_left_behind_after_a_normal_exit_are_swept() {
    for engine in engines() {
        let fake = Fake::new(engine, "linger");
        let out = run(&fake, &[], &request("linger"));
        out.check_markers();
        assert_eq!(out.final_json()["success"], true);
        assert_eq!(fake.pids().len(), 2);
        assert_eq!(fake.await_no_leftovers(SECS(2)), Vec::<i32>::new());
    }
}

#[test]
fn cli_that_stays_after_its_result_is_stopped_and_the_turn_still_succeeds() {
    for engine in engines() {
        let fake = Fake::new(engine, "no_exit");
        let out = run(&fake, &[], &request("stay"));
        out.check_markers();
        assert_eq!(out.code(), Some(0));
        assert_eq!(out.final_json()["success"], true);
        assert_eq!(
            out.final_json()["result"],
            engine.expected_result(&["done but staying"], "no exit done")
        );
        assert!(out.elapsed < SECS(20), "{:?}", out.elapsed);
        assert_eq!(fake.await_no_leftovers(SECS(2)), Vec::<i32>::new());
    }
}

#[test]
fn missing_or_unusable_cli_is_a_clear_error() {
    for engine in engines() {
        // A CLI path that does not exist or is not executable is ignored (the channel then
        // searches PATH and the install dirs, which hold no such CLI here).
        let fake = Fake::new(engine, "ok");
        let not_exec = fake.path("not-executable");
        std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
        for cli in [fake.path("no-such-cli"), not_exec] {
            // The channel also searches the usual system install dirs.
            let system_dirs = [
                "/usr/local/bin",
                "/opt/homebrew/bin",
                "/home/linuxbrew/.linuxbrew/bin",
            ];
            if SYSTEM_PATH
                .split(':')
                .chain(system_dirs)
                .any(|d| Path::new(d).join(engine.provider).exists())
            {
                eprintln!(
                    "a system-wide `{}` exists: skipping the missing-CLI case",
                    engine.provider
                );
                break;
            }
            let mut cmd = fake.command(&[]);
            cmd.env(engine.cli_env, &cli);
            let out =
                Running::spawn(cmd, Input::Close(request("hi").into_bytes())).finish(SECS(30));
            out.check_markers();
            assert_eq!(out.code(), Some(0));
            let error = out.final_json()["error"].as_str().unwrap().to_string();
            assert!(error.contains("not found"), "{error}");
            assert!(
                error.contains(engine.cli_env),
                "say how to point at the CLI: {error}"
            );
        }
        assert!(!fake.started());

        // An executable that cannot be started (its interpreter is missing).
        let broken = fake.path("broken-cli");
        std::fs::write(&broken, "#!/nonexistent/interpreter\n").unwrap();
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut cmd = fake.command(&["--format", "jsonl"]);
        cmd.env(engine.cli_env, &broken);
        let out = Running::spawn(cmd, Input::Close(request("hi").into_bytes())).finish(SECS(30));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        let error = &out.jsonl_of_type("error")[0];
        assert_eq!(error["code"], "spawn_failed", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&broken.display().to_string())
        );
    }
}

// =============================================================================================
// 2. Bad requests
// =============================================================================================

/// An invalid request: `[SEND_ERROR]` naming the problem, end markers, failed final line,
/// exit 0 (markers with a stdin request: the failure is reported in-band, as ai-bridge does, and
/// the plugin's `BaseSDKBridge` would report a non-zero exit as a second error), and the CLI
/// never started.
fn assert_rejected(engine: &'static Engine, args: &[&str], stdin: &[u8], needle: &str) -> Outcome {
    let fake = Fake::new(engine, "ok");
    let out = Running::spawn(fake.command(args), Input::Close(stdin.to_vec())).finish(SECS(30));
    let shown = String::from_utf8_lossy(&stdin[..stdin.len().min(80)]).into_owned();
    out.check_markers();
    assert_eq!(out.code(), Some(0), "{shown:?}: {}", out.stdout());
    let last = out.final_json();
    assert_eq!(last["success"], false);
    let error = last["error"].as_str().unwrap();
    assert!(
        error.contains(needle),
        "{shown:?}: error {error:?} lacks {needle:?}"
    );
    assert!(out.send_errors()[0].contains(needle));
    assert!(
        !fake.started(),
        "{shown:?}: the CLI must not run for an invalid request"
    );
    out
}

#[test]
fn malformed_json_is_rejected_in_band() {
    for engine in engines() {
        for bad in [
            &b"{\"message\":"[..],
            b"{\"message\":\"hi\",}",
            b"not json at all",
            b"{\"message\":\"hi\" \"cwd\":\"/\"}",
            b"\xff\xfe{}",
        ] {
            assert_rejected(engine, &[], bad, "request is not valid JSON");
        }
        for (bad, needle) in [
            (&b"[1,2]"[..], "must be a JSON object, got an array"),
            (b"\"hi\"", "must be a JSON object, got a string"),
            (b"42", "must be a JSON object, got a number"),
        ] {
            assert_rejected(engine, &[], bad, needle);
        }
        // JSONL: an error event with code invalid_request, then turn_end; exit 1.
        let fake = Fake::new(engine, "ok");
        let out = Running::spawn(
            fake.command(&["--format", "jsonl"]),
            Input::Close(b"{\"message\":".to_vec()),
        )
        .finish(SECS(30));
        out.check_jsonl();
        assert_eq!(out.code(), Some(1));
        assert_eq!(out.jsonl_of_type("error")[0]["code"], "invalid_request");
        assert!(!fake.started());
    }
}

#[test]
fn empty_stdin_is_rejected_in_band() {
    for engine in engines() {
        for empty in [&b""[..], b"   \n\t\n"] {
            assert_rejected(engine, &[], empty, "no request on stdin");
        }
    }
}

#[test]
fn stdin_never_closed_times_out_in_band() {
    for engine in engines() {
        for partial in [&b""[..], b"{\"message\":\"never finis"] {
            let fake = Fake::new(engine, "ok");
            let running = Running::spawn(
                fake.command(&["--stdin-timeout", "1"]),
                if partial.is_empty() {
                    Input::OpenSilent
                } else {
                    Input::KeepOpen(partial.to_vec())
                },
            );
            // stdin stays open until `finish` returns: the bridge must exit on its own.
            let out = running.finish(SECS(20));
            out.check_markers();
            // Reported in-band with [SEND_ERROR]: exit 0, as for every markers failure.
            assert_eq!(out.code(), Some(0));
            let error = out.final_json()["error"].as_str().unwrap().to_string();
            assert!(
                error.contains("no complete request JSON on stdin after 1s"),
                "{error}"
            );
            assert!(
                out.elapsed >= SECS(1) && out.elapsed < SECS(10),
                "{:?}",
                out.elapsed
            );
            assert!(!fake.started());
        }
    }
}

/// A 10 MiB message (newlines, quotes, braces, non-ASCII) reaches the CLI intact, over stdin.
#[test]
fn ten_mib_message_reaches_the_cli_intact() {
    for engine in engines() {
        let unit = "fn main() { println!(\"héllo \\\"wörld\\\" ✓\"); }\n\t}}}\r\n";
        let mut message = String::with_capacity(10 * 1024 * 1024 + unit.len());
        while message.len() < 10 * 1024 * 1024 {
            message.push_str(unit);
        }
        let fake = Fake::new(engine, "ok");
        let out = Running::spawn(
            fake.command(&[]),
            Input::Close(request(&message).into_bytes()),
        )
        .finish(SECS(120));
        out.check_markers();
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(out.final_json()["success"], true);
        let sent = fake.prompt();
        assert_eq!(sent.len(), message.len(), "message length at the CLI");
        assert!(sent == message, "message altered on the way");
        assert!(
            fake.argv().len() < 4096,
            "the prompt must not go through argv"
        );
        figure(
            &format!("{}: 10 MiB request: bridge run took", engine.name),
            format!("{:?}", out.elapsed),
        );
    }
}

#[test]
fn wrong_field_types_are_rejected_naming_the_field() {
    for engine in engines() {
        for (extra, needle) in [
            (
                json!({"cwd": 5}),
                "request field `cwd` must be a string, got a number",
            ),
            (
                json!({"sessionId": 7}),
                "request field `sessionId` must be a string",
            ),
            (
                json!({"model": {"name": "x"}}),
                "request field `model` must be a string, got an object",
            ),
            (
                json!({"disableThinking": "yes"}),
                "request field `disableThinking` must be a boolean",
            ),
            (
                json!({"attachments": "a.png"}),
                "request field `attachments` must be an array",
            ),
            (json!({"attachments": [42]}), "request field `attachments`"),
            (
                json!({"permissionMode": true}),
                "request field `permissionMode` must be a string",
            ),
        ] {
            assert_rejected(engine, &[], request_with("hi", extra).as_bytes(), needle);
        }
        assert_rejected(
            engine,
            &[],
            json!({"message": ["hi"]}).to_string().as_bytes(),
            "request field `message` must be a string, got an array",
        );
        for missing in [
            json!({"cwd": "/"}),
            json!({"message": "   "}),
            json!({"message": null}),
        ] {
            assert_rejected(
                engine,
                &[],
                missing.to_string().as_bytes(),
                "request field `message` is required",
            );
        }
    }
}

#[test]
fn unknown_provider_is_rejected_listing_the_valid_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_bridge"))
        .args(["nosuchprovider", "send"])
        .env("ANTHROPIC_API_KEY", CANARY_ENV_KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout,
        "{\"success\":false,\"error\":\"Invalid provider: nosuchprovider\"}\n"
    );
    for engine in engines() {
        assert!(
            stderr.contains(engine.provider),
            "valid providers on stderr: {stderr}"
        );
    }
    check_stderr(&stderr);
    assert_eq!(leaked_canary(stdout.as_bytes()), None);
}

#[test]
fn unknown_command_is_rejected_listing_the_valid_ones() {
    for engine in engines() {
        let fake = Fake::new(engine, "ok");
        let cmd = fake.bridge(&[engine.provider, "frobnicate"]);
        let out = Running::spawn(cmd, Input::Close(request("hi").into_bytes())).finish(SECS(30));
        assert_eq!(out.code(), Some(1));
        assert_eq!(out.lines.len(), 1, "{:?}", out.lines);
        let last = out.final_json();
        assert_eq!(last["success"], false);
        assert!(
            last["error"]
                .as_str()
                .unwrap()
                .contains("command: frobnicate"),
            "{last}"
        );
        assert!(
            out.stderr.contains("send"),
            "valid commands on stderr: {}",
            out.stderr
        );
        assert!(!fake.started());
    }
}

#[test]
fn invalid_flags_exit_2() {
    for engine in engines() {
        for flags in [
            &["--timeout", "soon"][..],
            &["--format", "xml"],
            &["--max-line-bytes", "-1"],
            &["--no-such-flag"],
        ] {
            let fake = Fake::new(engine, "ok");
            let out = Running::spawn(
                fake.command(flags),
                Input::Close(request("hi").into_bytes()),
            )
            .finish(SECS(30));
            assert_eq!(out.code(), Some(2), "{flags:?}: {}", out.stderr);
            assert!(!out.stderr.is_empty(), "{flags:?}: say what is wrong");
            assert!(!fake.started());
        }
    }
}

#[test]
fn session_id_with_path_characters_is_rejected() {
    for engine in engines() {
        for bad in [
            "../etc/passwd",
            "a/b",
            "/abs",
            "..",
            "x\\..\\y",
            "id\nwith-newline",
            "..%2f",
        ] {
            assert_rejected(
                engine,
                &[],
                request_with("hi", json!({"sessionId": bad})).as_bytes(),
                "request field `sessionId` has invalid characters",
            );
            assert_rejected(
                engine,
                &[],
                request_with("hi", json!({"threadId": bad})).as_bytes(),
                "has invalid characters",
            );
        }
        // A valid id is passed on.
        let fake = Fake::new(engine, "ok");
        let out = run(
            &fake,
            &[],
            &request_with("hi", json!({"sessionId": "0199a-b_c.d:e"})),
        );
        assert_eq!(out.final_json()["success"], true);
        // On the command line (Claude `--resume`, Codex `resume`) or over the protocol (ACP
        // `session/load`, the app-server's `thread/resume`).
        let rpc = std::fs::read_to_string(fake.path("rpc")).unwrap_or_default();
        assert!(
            fake.argv().lines().any(|a| a == "0199a-b_c.d:e")
                || rpc.contains("\"sessionId\":\"0199a-b_c.d:e\"")
                || rpc.contains("\"threadId\":\"0199a-b_c.d:e\""),
            "{}\n{rpc}",
            fake.argv()
        );
    }
}

/// `--session` is the command-line default for `sessionId`: it must be held to the same rules.
#[test]
fn session_flag_with_path_characters_is_rejected() {
    for engine in engines() {
        for bad in ["../../etc/passwd", "a/b"] {
            // With a request on stdin …
            assert_rejected(
                engine,
                &["--session", bad],
                request("hi").as_bytes(),
                "sessionId",
            );
            // … and with a prompt argument.
            let fake = Fake::new(engine, "ok");
            let out = Running::spawn(
                fake.command(&["--session", bad, "hi"]),
                Input::Close(Vec::new()),
            )
            .finish(SECS(30));
            assert_eq!(out.code(), Some(1), "{}", out.stdout());
            assert_eq!(out.final_json()["success"], false);
            assert!(
                !fake.started(),
                "--session {bad:?} reached the CLI's argv: {}",
                fake.argv().replace('\n', " ")
            );
        }
    }
}

#[test]
fn missing_cwd_is_rejected() {
    for engine in engines() {
        let fake = Fake::new(engine, "ok");
        let gone = fake.path("does-not-exist").display().to_string();
        assert_rejected(
            engine,
            &[],
            request_with("hi", json!({"cwd": gone})).as_bytes(),
            "request field `cwd` is not an existing directory",
        );
        let file = fake.path("a-file");
        std::fs::write(&file, "x").unwrap();
        assert_rejected(
            engine,
            &[],
            request_with("hi", json!({"cwd": file.display().to_string()})).as_bytes(),
            "is not an existing directory",
        );
        assert_rejected(
            engine,
            &["--cwd", &gone],
            request("hi").as_bytes(),
            "is not an existing directory",
        );
        // An existing cwd is where the CLI runs.
        let fake = Fake::new(engine, "ok");
        let dir = fake.path("home").display().to_string();
        let out = run(&fake, &[], &request_with("hi", json!({"cwd": dir})));
        assert_eq!(out.final_json()["success"], true);
        let cwd = std::fs::read_to_string(fake.path("cwd")).unwrap();
        assert_eq!(cwd.trim_end(), dir);
    }
}

// =============================================================================================
// 3. Secrets
// =============================================================================================

/// The CLI echoes every credential it got, on stdout (deltas, tool input and result, a non-JSON
/// line, the result) and stderr (which ends up in the error): the bridge redacts them all.
/// Every other test checks its outputs for the same canaries through [`Running`].
#[test]
fn secrets_echoed_by_the_cli_are_redacted_everywhere() {
    for engine in engines() {
        for end in ["crash", "result"] {
            for args in [&[][..], &["--format", "jsonl", "--raw"]] {
                // With the request key (which becomes the CLI's key) and without it (the CLI
                // then inherits the env key).
                for with_request_key in [true, false] {
                    let fake = Fake::new(engine, "echo_secrets").var("FAKE_END", end);
                    let body = if with_request_key {
                        request("echo")
                    } else {
                        json!({"message": "echo"}).to_string()
                    };
                    // `finish` fails the test if any canary appears on stdout or stderr.
                    let out = Running::spawn(fake.command(args), Input::Close(body.into_bytes()))
                        .finish(SECS(30));
                    // The CLI really got (and printed) the secrets.
                    let key = fake.env_var(engine.api_key_env).unwrap();
                    let expected = if with_request_key && engine.request_key_to_cli {
                        CANARY_REQUEST_KEY
                    } else {
                        CANARY_ENV_KEY
                    };
                    assert_eq!(key, expected);
                    assert_eq!(
                        fake.env_var("ANTHROPIC_AUTH_TOKEN").as_deref(),
                        Some(CANARY_ENV_TOKEN)
                    );
                    assert!(
                        out.stdout().contains("[redacted]"),
                        "{end} {args:?}: expected redacted echoes:\n{}",
                        out.stdout()
                    );
                    if args.is_empty() {
                        out.check_markers();
                        if end == "crash" {
                            assert!(
                                out.send_errors()[0]
                                    .contains("fake-cli: key=[redacted] token=[redacted]")
                            );
                        } else {
                            let expected = engine.expected_result(
                                &["key=[redacted] token=[redacted]"],
                                "done with [redacted] and [redacted]",
                            );
                            assert_eq!(out.final_json()["result"], expected.as_str());
                        }
                    } else {
                        out.check_jsonl();
                    }
                }
            }
        }
    }
}

/// The CLI streams the key and the token in pieces across deltas (as a model repeating a key
/// it read would): the text the client puts together shows `[redacted]`, in both formats.
#[test]
fn secrets_split_across_streamed_deltas_are_redacted() {
    for engine in engines() {
        if engine.skips("split_secrets") {
            continue;
        }
        for format in ["markers", "jsonl"] {
            let fake = Fake::new(engine, "split_secrets");
            // `finish` fails the test if any canary appears whole on stdout or stderr.
            let out = Running::spawn(
                fake.command(&["--format", format]),
                Input::Close(request("split").into_bytes()),
            )
            .finish(SECS(30));
            let streamed: String = if format == "markers" {
                out.check_markers();
                out.deltas().concat()
            } else {
                out.check_jsonl();
                out.jsonl_of_type("text_delta")
                    .iter()
                    .map(|v| v["text"].as_str().unwrap().to_string())
                    .collect()
            };
            assert_eq!(
                streamed,
                engine
                    .deltas_with_result(&["key=[redacted] token=[redacted] end"], "done")
                    .concat(),
                "{} {format}:\n{}",
                engine.name,
                out.stdout()
            );
            for canary in CANARIES {
                assert!(!streamed.contains(canary), "{}: {canary}", engine.name);
            }
        }
    }
}

// =============================================================================================
// 4. Environment hygiene
// =============================================================================================

#[test]
fn inherited_variables_that_break_clis_do_not_reach_the_cli() {
    const SCRUBBED: &[(&str, &str)] = &[
        ("NODE_OPTIONS", "--inspect=127.0.0.1:9"),
        ("NODE_INSPECT", "1"),
        ("NODE_DEBUG", "net"),
        ("ELECTRON_RUN_AS_NODE", "1"),
        // An empty LD_PRELOAD is harmless for the bridge itself and must still not be passed.
        ("LD_PRELOAD", ""),
        ("LD_LIBRARY_PATH", "/nonexistent-bridge-faults"),
        ("LD_AUDIT", ""),
        ("DYLD_INSERT_LIBRARIES", "/nonexistent.dylib"),
        ("BASH_ENV", "/nonexistent-bash-env"),
        ("ENV", "/nonexistent-sh-env"),
        ("PROMPT_COMMAND", "echo hi"),
        ("npm_config_foo", "bar"),
        ("npm_lifecycle_event", "test"),
        ("npm_execpath", "/usr/lib/node_modules/npm/bin/npm-cli.js"),
        ("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9/"),
        ("CLAUDE_USE_STDIN", "1"),
        ("CODEX_USE_STDIN", "1"),
    ];
    for engine in engines() {
        let fake = Fake::new(engine, "ok");
        let mut cmd = fake.command(&[]);
        for (k, v) in SCRUBBED {
            cmd.env(k, v);
        }
        cmd.env("BRIDGE_FAULTS_KEEP_ME", "kept");
        let out = Running::spawn(cmd, Input::Close(request("env").into_bytes())).finish(SECS(30));
        out.check_markers();
        assert_eq!(out.final_json()["success"], true, "{}", out.stderr);
        let env = fake.env();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        let leaked: Vec<&str> = SCRUBBED
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| names.contains(k))
            .collect();
        assert_eq!(
            leaked,
            Vec::<&str>::new(),
            "{}: reached the CLI",
            engine.name
        );
        // What the CLI needs does reach it.
        assert_eq!(
            fake.env_var("BRIDGE_FAULTS_KEEP_ME").as_deref(),
            Some("kept")
        );
        assert_eq!(
            fake.env_var("HOME"),
            Some(fake.path("home").display().to_string())
        );
        assert!(fake.env_var("PATH").is_some());
        let key = if engine.request_key_to_cli {
            CANARY_REQUEST_KEY
        } else {
            CANARY_ENV_KEY
        };
        assert_eq!(fake.env_var(engine.api_key_env).as_deref(), Some(key));
    }
}

/// A CLI found on PATH (not named by an env override) whose version is outside the tested
/// range gets an `untested_version` warning, checked next to the turn, which still runs; one
/// named by its env override is the user's choice and is not checked. Every engine.
#[test]
fn an_untested_cli_version_found_on_path_is_warned_about() {
    for engine in engines() {
        let fake = Fake::new(engine, "trickle")
            .var("FAKE_N", 10)
            .var("FAKE_DELAY", "0.1");
        let bin = fake.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let script = bin.join(engine.provider);
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 0.0.1; exit 0; }}\nexec \"{}\" \"$@\"\n",
                fakes_dir().join(engine.fake).display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut on_path = fake.command(&["--format", "jsonl"]);
        on_path
            .env_remove(engine.cli_env)
            .env("PATH", format!("{}:{SYSTEM_PATH}", bin.display()));
        let out =
            Running::spawn(on_path, Input::Close(request("hi").into_bytes())).finish(SECS(60));
        out.check_jsonl();
        let untested: Vec<Value> = out
            .jsonl_of_type("warning")
            .into_iter()
            .filter(|w| w["code"] == "untested_version")
            .collect();
        assert_eq!(untested.len(), 1, "{}: {}", engine.name, out.stdout());
        let message = untested[0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("0.0.1"), "{}: {message}", engine.name);
        assert_eq!(
            out.jsonl_of_type("turn_end").pop().unwrap()["success"],
            true
        );
        assert!(
            !out.stderr.contains("[WARNING]"),
            "JSONL carries warnings in-band"
        );

        // In the markers format (which has no warning line) it goes to stderr; stdout stays
        // the ai-bridge wire.
        let mut markers = fake.command(&[]);
        markers
            .env_remove(engine.cli_env)
            .env("PATH", format!("{}:{SYSTEM_PATH}", bin.display()));
        let out =
            Running::spawn(markers, Input::Close(request("hi").into_bytes())).finish(SECS(60));
        out.check_markers();
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("[WARNING] untested_version: ") && l.contains("0.0.1")),
            "{}: {}",
            engine.name,
            out.stderr
        );
        assert!(!out.stdout().contains("[WARNING]"), "{}", out.stdout());

        // Named through the env override (as every other fault test does): no check at all.
        let fake = Fake::new(engine, "ok");
        let out = run(&fake, &["--format", "jsonl"], &request("hi"));
        assert!(
            !out.stdout().contains("untested_version"),
            "{}: {}",
            engine.name,
            out.stdout()
        );
    }
}

/// A `transport` the provider does not have (field or `--transport`) is an invalid request that
/// names the provider's transports; nothing runs.
#[test]
fn an_unknown_transport_is_rejected_naming_the_choices() {
    for engine in engines() {
        let needle = engine.transports;
        let out = assert_rejected(
            engine,
            &[],
            request_with("hi", json!({"transport": "pigeon"})).as_bytes(),
            needle,
        );
        assert!(
            out.final_json()["error"]
                .as_str()
                .unwrap()
                .contains("`pigeon`")
        );
        assert_rejected(
            engine,
            &["--transport", "pigeon"],
            request("hi").as_bytes(),
            needle,
        );
    }
}

// =============================================================================================
// Sessions: `bridge <provider> session`, many turns in one bridge process
// =============================================================================================

/// Whether the engine keeps one CLI process for a whole session (else one per turn, resumed).
fn warm(engine: &Engine) -> bool {
    engine.warm
}

/// A `bridge <provider> session --format jsonl` over a fake running the `session` scenario.
struct Chat {
    running: Running,
}

impl Chat {
    fn start(fake: &Fake) -> Chat {
        let cmd = fake.bridge(&[fake.engine.provider, "session", "--format", "jsonl"]);
        Chat {
            running: Running::spawn(cmd, Input::OpenSilent),
        }
    }

    fn send(&mut self, line: &str) {
        self.running.write_stdin(format!("{line}\n").as_bytes());
    }

    /// Reads the events of one turn up to its `turn_end`; `on_event` sees each one.
    fn read_turn(&mut self, mut on_event: impl FnMut(&Value, &mut Running)) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let line = self
                .running
                .next_line(SECS(120))
                .unwrap_or_else(|| panic!("the turn never ended; so far: {events:?}"));
            let event: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("JSONL {line:?}: {e}"));
            on_event(&event, &mut self.running);
            let end = event["type"] == "turn_end";
            events.push(event);
            if end {
                assert_eq!(events[0]["type"], "turn_start", "{events:?}");
                return events;
            }
        }
    }

    fn turn(&mut self, message: &str) -> Vec<Value> {
        self.send(&request(message));
        self.read_turn(|_, _| ())
    }
}

fn turn_end(events: &[Value]) -> &Value {
    events.last().expect("a turn end")
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The pids that ran each turn (the fake appends its pid per turn).
fn turn_pids(fake: &Fake) -> Vec<i32> {
    std::fs::read_to_string(fake.path("turns"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn a_flood_and_a_64_mib_line_in_a_session_keep_memory_bounded_and_the_next_turn_works() {
    const FLOOD: u64 = 200_000;
    for engine in engines() {
        let fake = Fake::new(engine, "session").var("FAKE_N", FLOOD);
        let mut chat = Chat::start(&fake);
        let first = chat.turn("TURN-OK first");
        assert_eq!(turn_end(&first)["success"], true, "{first:?}");
        let rss_after_one = chat.running.rss_kib().unwrap_or_default();

        let flood = chat.turn("TURN-FLOOD second");
        assert_eq!(turn_end(&flood)["success"], true, "{}", engine.name);
        let pieces: Vec<&str> = of_kind(&flood, engine.text_event)
            .iter()
            .filter_map(|e| e["text"].as_str())
            .filter(|t| t.starts_with('d'))
            .collect();
        assert_eq!(
            pieces.len() as u64,
            FLOOD,
            "{}: every delta arrives",
            engine.name
        );
        assert!(
            pieces
                .iter()
                .enumerate()
                .all(|(i, t)| *t == format!("d{};", i + 1)),
            "{}: in order",
            engine.name
        );
        let rss_after_flood = chat.running.rss_kib().unwrap_or_default();

        let long = chat.turn("TURN-LONG third");
        assert_eq!(turn_end(&long)["success"], true, "{long:?}");
        assert!(
            of_kind(&long, "warning")
                .iter()
                .any(|w| w["code"] == "line_too_long"),
            "{long:?}"
        );
        let after = chat.turn("TURN-OK fourth");
        assert_eq!(turn_end(&after)["success"], true, "{after:?}");
        let rss_end = chat.running.rss_kib().unwrap_or_default();
        let pids = turn_pids(&fake);
        assert_eq!(pids.len(), 4, "{}: {pids:?}", engine.name);
        if warm(engine) {
            assert!(
                pids.iter().all(|p| *p == pids[0]),
                "{}: one process {pids:?}",
                engine.name
            );
        }
        chat.running.close_stdin();
        let out = chat.running.finish(SECS(60));
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        figure(
            &format!(
                "{}: session RSS after turn 1 / the flood / the 64 MiB line turn",
                engine.name
            ),
            format!(
                "{rss_after_one} / {rss_after_flood} / {rss_end} KiB, peak {} KiB",
                out.hwm_kib
            ),
        );
        // The line cap is 16 MiB: the bridge may buffer up to that, never the whole line,
        // and a flood of 200,000 lines leaves nothing behind.
        assert!(
            out.hwm_kib < 48 * 1024,
            "{}: peak {} KiB",
            engine.name,
            out.hwm_kib
        );
        assert!(
            rss_after_flood < rss_after_one + 8 * 1024,
            "{}: {rss_after_one} → {rss_after_flood} KiB",
            engine.name
        );
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}",
            engine.name
        );
    }
}

#[test]
fn a_cli_that_dies_during_a_session_turn_fails_that_turn_and_the_next_resumes() {
    for engine in engines() {
        let fake = Fake::new(engine, "session");
        let mut chat = Chat::start(&fake);
        let first = chat.turn("TURN-OK first");
        assert_eq!(turn_end(&first)["success"], true, "{first:?}");
        let dead = chat.turn("TURN-DIE second");
        assert_eq!(
            turn_end(&dead)["success"],
            false,
            "{}: {dead:?}",
            engine.name
        );
        let error = of_kind(&dead, "error").pop().cloned().expect("an error");
        assert_eq!(error["code"], "exited_early", "{error}");
        assert!(
            error["stderr_tail"]
                .as_str()
                .unwrap_or_default()
                .contains("died during the turn"),
            "{}: {error}",
            engine.name
        );
        let third = chat.turn("TURN-OK third");
        assert_eq!(
            turn_end(&third)["success"],
            true,
            "{}: {third:?}",
            engine.name
        );
        // The restarted CLI resumes the session: in its argv, or (ACP) with session/load.
        let resumed_by = if matches!(engine.prompt, Prompt::AcpSession | Prompt::AppServerTurn) {
            std::fs::read_to_string(fake.path("rpc"))
                .unwrap_or_default()
                .lines()
                .filter(|l| {
                    [
                        "\"session/load\"",
                        "\"session/resume\"",
                        "\"thread/resume\"",
                    ]
                    .iter()
                    .any(|m| l.contains(m))
                })
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            fake.argv()
        };
        assert!(
            resumed_by.contains(engine.session_id),
            "{}: the restarted CLI does not resume the session: {resumed_by}",
            engine.name
        );
        chat.running.close_stdin();
        assert_eq!(chat.running.finish(SECS(60)).code(), Some(0));
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}",
            engine.name
        );
    }
}

#[test]
fn a_warm_cli_killed_between_turns_is_restarted_with_resume() {
    for engine in engines().filter(|e| warm(e)) {
        let fake = Fake::new(engine, "session");
        let mut chat = Chat::start(&fake);
        let first = chat.turn("TURN-OK first");
        assert_eq!(turn_end(&first)["success"], true, "{first:?}");
        let leader = turn_pids(&fake)[0];
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(leader, libc::SIGKILL) };
        std::thread::sleep(Duration::from_millis(300));
        let second = chat.turn("TURN-OK second");
        assert_eq!(
            turn_end(&second)["success"],
            true,
            "{}: {second:?}",
            engine.name
        );
        assert!(
            of_kind(&second, "status").iter().any(|s| s["message"]
                .as_str()
                .unwrap_or_default()
                .contains("exited between turns")),
            "{}: {second:?}",
            engine.name
        );
        let pids = turn_pids(&fake);
        assert_ne!(pids[1], leader, "{}: a new process", engine.name);
        chat.running.close_stdin();
        assert_eq!(chat.running.finish(SECS(60)).code(), Some(0));
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}",
            engine.name
        );
    }
}

#[test]
fn an_interrupt_in_turn_two_of_three_leaves_turn_three_working() {
    for engine in engines() {
        let fake = Fake::new(engine, "session");
        let mut chat = Chat::start(&fake);
        let first = chat.turn("TURN-OK first");
        assert_eq!(turn_end(&first)["success"], true, "{first:?}");
        chat.send(&request("TURN-WAIT second"));
        let text_event = engine.text_event;
        let mut sent = false;
        let second = chat.read_turn(|event, running| {
            if !sent && event["type"] == text_event {
                sent = true;
                running.write_stdin(b"{\"type\":\"interrupt\"}\n");
            }
        });
        assert_eq!(
            turn_end(&second)["stop_reason"],
            "interrupted",
            "{}: {second:?}",
            engine.name
        );
        let third = chat.turn("TURN-OK third");
        assert_eq!(
            turn_end(&third)["success"],
            true,
            "{}: {third:?}",
            engine.name
        );
        if warm(engine) {
            let pids = turn_pids(&fake);
            assert!(
                pids.iter().all(|p| *p == pids[0]),
                "{}: graceful, same process {pids:?}",
                engine.name
            );
        }
        chat.running.close_stdin();
        assert_eq!(chat.running.finish(SECS(60)).code(), Some(0));
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}",
            engine.name
        );
    }
}

#[test]
fn stdin_eof_mid_turn_ends_the_session_after_it_and_leaves_no_process() {
    for engine in engines() {
        let fake = Fake::new(engine, "session");
        let mut chat = Chat::start(&fake);
        chat.send(&request("TURN-SLOW first"));
        let text_event = engine.text_event;
        let mut closed = false;
        let turn = chat.read_turn(|event, running| {
            if !closed && event["type"] == text_event {
                closed = true;
                running.close_stdin();
            }
        });
        assert!(closed);
        assert_eq!(
            turn_end(&turn)["success"],
            true,
            "{}: {turn:?}",
            engine.name
        );
        let out = chat.running.finish(SECS(60));
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}: nothing left",
            engine.name
        );
    }
}

#[test]
fn the_key_of_a_later_request_in_a_session_is_redacted_and_reaches_the_cli() {
    for engine in engines() {
        let fake = Fake::new(engine, "session");
        let mut chat = Chat::start(&fake);
        // Turn 1 names no key: the CLI starts with the one in the bridge's environment.
        chat.send(&json!({"message": "TURN-OK first"}).to_string());
        let first = chat.read_turn(|_, _| ());
        assert_eq!(turn_end(&first)["success"], true, "{first:?}");
        // Turn 2 brings its own key, which the CLI echoes on every channel it has.
        let second = chat.turn("TURN-SECRETS second");
        assert_eq!(
            turn_end(&second)["success"],
            true,
            "{}: {second:?}",
            engine.name
        );
        let dump = format!("{second:?}");
        assert!(dump.contains("[redacted]"), "{}: {dump}", engine.name);
        if engine.request_key_to_cli {
            assert_eq!(
                fake.env_var(engine.api_key_env).as_deref(),
                Some(CANARY_REQUEST_KEY),
                "{}: the new key reached the CLI",
                engine.name
            );
        }
        if warm(engine) {
            assert!(
                of_kind(&second, "status").iter().any(|s| s["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("changed apiKey")),
                "{}: a warm CLI restarts for a new key and says so: {second:?}",
                engine.name
            );
        }
        chat.running.close_stdin();
        // `finish` checks every byte of stdout and stderr for the canaries.
        let out = chat.running.finish(SECS(60));
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert!(
            fake.await_no_leftovers(SECS(10)).is_empty(),
            "{}",
            engine.name
        );
    }
}

#[test]
fn unknown_control_lines_in_a_session_are_warnings_and_the_session_goes_on() {
    let engine = &ENGINES[0];
    let fake = Fake::new(engine, "session");
    let mut chat = Chat::start(&fake);
    chat.send(r#"{"type":"dance","steps":3}"#);
    chat.send(r#"{"type":"set_model"}"#);
    let turn = chat.turn("TURN-OK after the odd lines");
    assert_eq!(turn_end(&turn)["success"], true, "{turn:?}");
    chat.running.close_stdin();
    let out = chat.running.finish(SECS(60));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("[WARNING] unknown_control: unknown control message type `dance`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("set_model needs a string `model`"),
        "{}",
        out.stderr
    );
    assert_eq!(turn_pids(&fake).len(), 1, "only the request ran a turn");
}

/// `bridge daemon` over a fake: the requests of one `<provider>.send` line each, tagged by id.
struct DaemonRun {
    running: Running,
    seen: Vec<Value>,
}

impl DaemonRun {
    fn start(fake: &Fake) -> DaemonRun {
        DaemonRun {
            running: Running::spawn(fake.bridge(&["daemon"]), Input::OpenSilent),
            seen: Vec::new(),
        }
    }

    fn send(&mut self, provider: &str, id: &str, params: Value) {
        let line = json!({"id": id, "method": format!("{provider}.send"), "params": params});
        self.running.write_stdin(format!("{line}\n").as_bytes());
    }

    /// Reads until request `id` wrote a line containing `needle`.
    fn until_line(&mut self, id: &str, needle: &str) {
        let hit =
            |v: &Value| v["id"] == id && v["line"].as_str().is_some_and(|l| l.contains(needle));
        let mut found = self.seen.iter().any(hit);
        while !found {
            let line = self
                .running
                .next_line(SECS(60))
                .unwrap_or_else(|| panic!("{id} never wrote {needle:?}; so far: {:?}", self.seen));
            let value: Value = serde_json::from_str(&line).unwrap();
            found = hit(&value);
            self.seen.push(value);
        }
    }

    /// Reads until request `id` is done; returns its `done` line and its output lines.
    fn done(&mut self, id: &str) -> (Value, Vec<String>) {
        let is_done = |v: &Value| v["id"] == id && v["done"] == true;
        // Each new line is checked once (a flood is 100,000 of them).
        let mut found = self.seen.iter().any(is_done);
        while !found {
            let line = self
                .running
                .next_line(SECS(120))
                .unwrap_or_else(|| panic!("request {id} never ended; so far: {:?}", self.seen));
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            found = is_done(&value);
            self.seen.push(value);
        }
        let done = self
            .seen
            .iter()
            .find(|v| is_done(v))
            .cloned()
            .unwrap_or_default();
        let lines = self
            .seen
            .iter()
            .filter(|v| v["id"] == id)
            .filter_map(|v| v["line"].as_str().map(str::to_string))
            .collect();
        (done, lines)
    }
}

/// A CLI that dies during a daemon turn fails that request only: a turn of another session
/// running at the same time succeeds, the dead session's next turn starts a new process, and
/// no key (the request's, the environment's, a secret `env` variable's) reaches stdout or
/// stderr. stdin EOF then ends the daemon with nothing left behind.
#[test]
fn a_cli_dying_in_the_daemon_takes_down_its_own_request_only() {
    for engine in engines() {
        let fake = Fake::new(engine, "session").var("WARM", u8::from(warm(engine)));
        let mut daemon = DaemonRun::start(&fake);
        // Each conversation's own id, through its request's `env` (the fakes read it there).
        let params = |message: &str, session: &str, resume: bool| {
            let mut params = json!({"message": message, "apiKey": CANARY_REQUEST_KEY,
                "env": {"FAKE_SESSION_ID": session, "BRIDGE_FAULTS_TOKEN": CANARY_ENV_TOKEN}});
            if resume {
                params["sessionId"] = json!(session);
            }
            params
        };
        daemon.send(
            engine.provider,
            "a1",
            params("TURN-OK first", "sess-a", false),
        );
        let (first, lines) = daemon.done("a1");
        assert_eq!(first["success"], true, "{}: {lines:?}", engine.name);
        // b streams while a's CLI dies. (The fakes share one request file: b's must have been
        // read before a's is written.)
        daemon.send(
            engine.provider,
            "b1",
            params("TURN-SLOW other", "sess-b", false),
        );
        daemon.until_line("b1", "s1;");
        daemon.send(
            engine.provider,
            "a2",
            params("TURN-DIE now", "sess-a", true),
        );
        let (died, died_lines) = daemon.done("a2");
        // In markers a send's outcome is in-band (as per process): its `done` says it was
        // served, `[SEND_ERROR]` and the final line say how it went.
        assert_eq!(died["success"], true, "{}: {died_lines:?}", engine.name);
        assert!(
            died_lines.iter().any(|l| l.starts_with("[SEND_ERROR]")),
            "{}: {died_lines:?}",
            engine.name
        );
        let (other, other_lines) = daemon.done("b1");
        assert_eq!(other["success"], true, "{}: {other_lines:?}", engine.name);
        assert!(
            other_lines.iter().any(|l| l.contains("s20;")),
            "{}: {other_lines:?}",
            engine.name
        );
        daemon.send(
            engine.provider,
            "a3",
            params("TURN-SECRETS after", "sess-a", true),
        );
        let (after, after_lines) = daemon.done("a3");
        assert_eq!(after["success"], true, "{}: {after_lines:?}", engine.name);
        assert!(
            after_lines.iter().any(|l| l.contains("[redacted]")),
            "{}: the key was not shown redacted: {after_lines:?}",
            engine.name
        );
        daemon.running.close_stdin();
        let out = daemon.running.finish(SECS(60));
        assert_eq!(out.code(), Some(0), "{}: {}", engine.name, out.stderr);
        assert_eq!(
            fake.await_no_leftovers(SECS(5)),
            Vec::<i32>::new(),
            "{}",
            engine.name
        );
    }
}

/// The other failure rows through the daemon, for every engine: a CLI killed between two turns
/// (the next turn starts a new process and resumes), a CLI that hangs past the idle deadline
/// (its request ends with `done` and the idle error while another session's turn succeeds), a
/// flood of 100,000 deltas (every one arrives, the daemon's memory stays bounded).
#[test]
fn kill_hang_and_flood_through_the_daemon_end_their_own_request() {
    const FLOOD: u64 = 100_000;
    for engine in engines() {
        let fake = Fake::new(engine, "session")
            .var("WARM", u8::from(warm(engine)))
            .var("FAKE_N", FLOOD);
        let mut daemon = DaemonRun {
            running: Running::spawn(
                fake.bridge(&["daemon", "--idle-timeout", "2"]),
                Input::OpenSilent,
            ),
            seen: Vec::new(),
        };
        let params = |message: &str, session: &str, resume: bool| {
            let mut params = json!({"message": message, "env": {"FAKE_SESSION_ID": session}});
            if resume {
                params["sessionId"] = json!(session);
            }
            params
        };
        daemon.send(
            engine.provider,
            "a1",
            params("TURN-OK first", "sess-a", false),
        );
        assert_eq!(daemon.done("a1").0["success"], true, "{}", engine.name);
        if warm(engine) {
            let pid = *turn_pids(&fake).last().expect("a pid");
            // SAFETY: kill has no memory-safety preconditions; the fake is ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        daemon.send(
            engine.provider,
            "a2",
            params("TURN-OK after the kill", "sess-a", true),
        );
        let (after, lines) = daemon.done("a2");
        assert_eq!(after["success"], true, "{}: {lines:?}", engine.name);
        let pids = turn_pids(&fake);
        assert_ne!(pids[0], pids[1], "{}: a new process", engine.name);

        daemon.send(
            engine.provider,
            "b1",
            params("TURN-WAIT hang", "sess-b", false),
        );
        daemon.until_line("b1", "waiting");
        daemon.send(
            engine.provider,
            "a3",
            params("TURN-OK meanwhile", "sess-a", true),
        );
        let (meanwhile, lines) = daemon.done("a3");
        assert_eq!(meanwhile["success"], true, "{}: {lines:?}", engine.name);
        let (_, lines) = daemon.done("b1");
        let error = lines
            .iter()
            .find(|l| l.starts_with("[SEND_ERROR]"))
            .unwrap_or_else(|| panic!("{}: no [SEND_ERROR]: {lines:?}", engine.name));
        assert!(error.contains("idle"), "{}: {error}", engine.name);

        daemon.send(
            engine.provider,
            "a4",
            params("TURN-FLOOD now", "sess-a", true),
        );
        let (flood, lines) = daemon.done("a4");
        assert_eq!(flood["success"], true, "{}", engine.name);
        let deltas = lines
            .iter()
            .filter(|l| l.starts_with("[CONTENT_DELTA] \"d"))
            .count() as u64;
        assert_eq!(deltas, FLOOD, "{}: every delta arrives", engine.name);
        daemon.seen.clear();
        daemon.running.close_stdin();
        let out = daemon.running.finish(SECS(60));
        assert_eq!(out.code(), Some(0), "{}: {}", engine.name, out.stderr);
        assert!(
            out.hwm_kib < 48 * 1024,
            "{}: daemon peak {} KiB",
            engine.name,
            out.hwm_kib
        );
        figure(
            &format!(
                "{}: daemon peak RSS over kill, hang, 100k-delta flood",
                engine.name
            ),
            format!("{} KiB", out.hwm_kib),
        );
        assert_eq!(
            fake.await_no_leftovers(SECS(5)),
            Vec::<i32>::new(),
            "{}",
            engine.name
        );
    }
}
