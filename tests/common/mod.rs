//! Shared harness of the end-to-end tests: the real `bridge` binary, the real pinned CLIs,
//! the project's mock model server, all inside a loopback-only network namespace.
#![allow(dead_code)]

pub mod acp;
pub mod chat;
pub mod mcp;
pub mod pi_family;
pub mod plugin;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use regex::Regex;
use serde_json::Value;

/// The canary API key every e2e test passes: it must never appear in any output.
pub const CANARY_KEY: &str = "sk-ant-canary-7f3c9a1e5b";

/// Fails the test unless it runs in a network namespace whose only interface is `lo`
/// (`tests/netns-run` / `scripts/test` provide one): no test may reach a non-loopback address.
pub fn require_loopback_only_network() {
    let dev = std::fs::read_to_string("/proc/net/dev").expect("read /proc/net/dev");
    let others: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .filter(|name| *name != "lo")
        .collect();
    assert!(
        others.is_empty(),
        "end-to-end tests drive real CLIs and must run in a loopback-only network namespace \
         (run them through scripts/test or tests/netns-run); visible interfaces: {others:?}"
    );
}

/// Finds a pinned CLI on PATH (scripts/test puts the installer's bin dirs first).
pub fn cli_path(name: &str) -> PathBuf {
    which::which(name).unwrap_or_else(|_| {
        panic!("`{name}` not found on PATH: run tests/install-clis.sh and add its bin dirs (scripts/test does)")
    })
}

/// A scratch home, config dir and project dir for one CLI run.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["home", "home/.claude", "tmp", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Sandbox { dir }
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// `cmd` (a `bridge <provider> send …` command) as `bridge <provider> session --format FORMAT`,
/// with the same environment and working directory.
pub fn as_session_in(cmd: &Command, format: &str) -> Command {
    let mut session = Command::new(cmd.get_program());
    session.args(cmd.get_args().map(|a| {
        if a == "send" {
            std::ffi::OsStr::new("session")
        } else {
            a
        }
    }));
    session.args(["--format", format]);
    with_env_of(cmd, session)
}

/// `out` with the environment (cleared first) and working directory of `cmd`.
fn with_env_of(cmd: &Command, mut out: Command) -> Command {
    out.env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            out.env(key, value);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        out.current_dir(dir);
    }
    out
}

/// The bridge binary under test.
pub fn bridge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bridge"))
}

/// `bridge claude send` with a clean environment pointing Claude Code at `base_url`.
pub fn claude_command(sandbox: &Sandbox, base_url: &str, extra_args: &[&str]) -> Command {
    let claude = cli_path("claude");
    let mut cmd = bridge();
    cmd.env_clear()
        .arg("claude")
        .arg("send")
        .args(extra_args)
        .current_dir(sandbox.work())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("CLAUDE_CONFIG_DIR", sandbox.home().join(".claude"))
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("CLAUDE_CODE_PATH", claude)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", CANARY_KEY);
    cmd
}

/// `bridge codex send` with a clean environment: `CODEX_HOME` inside the sandbox, the pinned
/// CLI named by `CODEX_PATH` (the channel runs the native binary behind its npm shim), and the
/// bridge's model provider limited to one attempt (`BRIDGE_CODEX_MAX_RETRIES=0`), so HTTP errors
/// fail at once. Codex ignores `OPENAI_BASE_URL`: the mock's URL and key travel in the request
/// (`baseUrl`, `apiKey`), as the plugin sends them, and the channel maps them to a provider.
pub fn codex_command(sandbox: &Sandbox, extra_args: &[&str]) -> Command {
    let codex = cli_path("codex");
    let codex_home = sandbox.home().join(".codex");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    let mut cmd = bridge();
    cmd.env_clear()
        .arg("codex")
        .arg("send")
        .args(extra_args)
        .current_dir(sandbox.work())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("CODEX_HOME", codex_home)
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("CODEX_PATH", codex)
        .env("BRIDGE_CODEX_MAX_RETRIES", "0");
    cmd
}

/// A Codex request as the plugin sends it: the mock's URL and the canary key in the request
/// (Codex ignores `OPENAI_BASE_URL`), model `gpt-5.5` (a slug Codex bundles metadata for),
/// `cwd` the sandbox's work dir, plus `extra`'s fields.
pub fn codex_request(mock: &Mock, sandbox: &Sandbox, message: &str, extra: Value) -> String {
    let base = serde_json::json!({
        "message": message,
        "cwd": sandbox.work(),
        "model": "gpt-5.5",
        "baseUrl": mock.api_base(),
        "apiKey": CANARY_KEY,
    });
    request_with(base, extra)
}

/// Runs `cmd` with `stdin` written (no trailing newline, then closed, as the plugin does).
pub fn run_with_stdin(mut cmd: Command, stdin: &str) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn bridge");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .expect("write request");
    let output = child.wait_with_output().expect("wait bridge");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stdout.contains(CANARY_KEY) && !stderr.contains(CANARY_KEY),
        "the API key leaked into the output"
    );
    output
}

/// Replaces ids, paths and timings with stable placeholders.
pub fn redact(text: &str, sandbox: &Sandbox) -> String {
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let toolu = Regex::new(r"toolu_[A-Za-z0-9]+").unwrap();
    let msg = Regex::new(r"msg_[A-Za-z0-9]+").unwrap();
    let mock_addr = Regex::new(r"127\.0\.0\.1:[0-9]+").unwrap();
    let root = sandbox.root().to_string_lossy().into_owned();
    let text = text.replace(&root, "[sandbox]");
    let text = mock_addr.replace_all(&text, "[mock]").into_owned();
    let text = uuid.replace_all(&text, "[uuid]");
    let text = toolu.replace_all(&text, "[toolu]");
    msg.replace_all(&text, "[msg]").into_owned()
}

/// A stable view of marker output: `[MESSAGE]` payloads (full of versions, timings and tool
/// lists) become a one-line summary of what the plugin renders from them.
pub fn markers_view(stdout: &str, sandbox: &Sandbox) -> String {
    stdout
        .lines()
        .map(|line| match line.strip_prefix("[MESSAGE] ") {
            Some(json) => match serde_json::from_str::<Value>(json) {
                Ok(v) => format!("[MESSAGE] {}", summarize_message(&v)),
                Err(_) => line.to_string(),
            },
            None => line.to_string(),
        })
        .map(|line| redact(&line, sandbox))
        .collect::<Vec<_>>()
        .join("\n")
}

fn summarize_message(v: &Value) -> String {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("?");
    let mut parts = vec![format!("type={kind}")];
    if let Some(sub) = v.get("subtype").and_then(Value::as_str) {
        parts.push(format!("subtype={sub}"));
    }
    if let Some(is_error) = v.get("is_error").and_then(Value::as_bool) {
        parts.push(format!("is_error={is_error}"));
    }
    if let Some(content) = v.pointer("/message/content").and_then(Value::as_array) {
        for block in content {
            let btype = block.get("type").and_then(Value::as_str).unwrap_or("?");
            let detail = match btype {
                "tool_use" => block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                "tool_result" => format!(
                    "is_error={}",
                    block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                _ => String::new(),
            };
            parts.push(format!("{btype}({detail})"));
        }
    }
    parts.join(" ")
}

/// A stable view of JSONL output: ids redacted, usage numbers and costs kept (the mock is
/// deterministic), requesting-status lines dropped (their count depends on CLI internals).
pub fn jsonl_view(stdout: &str, sandbox: &Sandbox) -> String {
    stdout
        .lines()
        .filter(|line| !line.contains(r#""kind":"requesting""#))
        .map(|line| {
            let mut v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert_eq!(v["v"], 1, "every line is versioned: {line}");
            if let Some(obj) = v.as_object_mut() {
                obj.shift_remove("seq");
            }
            redact(&v.to_string(), sandbox)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The decoded text of every `[CONTENT_DELTA]` line.
pub fn content_text(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[CONTENT_DELTA] "))
        .map(|json| serde_json::from_str::<String>(json).expect("delta payload is a JSON string"))
        .collect()
}

/// The final `{"success":…}` line, parsed.
pub fn final_line(stdout: &str) -> Value {
    let last = stdout.lines().last().expect("some output");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
}

/// Pids whose parent is `pid` (from /proc).
pub fn children_of(pid: u32) -> Vec<i32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state, ppid, pgrp, …
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let _state = fields.next();
        if fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            children.push(child);
        }
    }
    children
}

/// True while any process of process group `pgid` exists (zombies excluded).
pub fn group_alive(pgid: i32) -> bool {
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<i32>().ok() == Some(pgid) {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// One-shot JSONL providers: pi, oh-my-pi (omp), the community Grok CLI (grok-cli)
// ---------------------------------------------------------------------------------------------

/// The variable pi's and omp's test model configs name as the mock provider's key; the e2e
/// tests set it to [`CANARY_KEY`] (so the key must never show in any output).
pub const MOCK_KEY_ENV: &str = "BRIDGE_E2E_MOCK_KEY";

/// The model id the pi/omp test configs declare (`mock/mock-model` on Chat Completions,
/// `mockresp/mock-model` on the Responses API).
pub const PI_MOCK_MODEL: &str = "mock-model";

/// Writes pi's `~/.pi/agent/models.json` into the sandbox: provider `mock` (Chat Completions)
/// and `mockresp` (Responses API), both at `api_base` (`http://127.0.0.1:PORT/v1`), model
/// [`PI_MOCK_MODEL`] (reasoning, text and image input), key from [`MOCK_KEY_ENV`].
/// `supportsReasoningEffort` is on so `--thinking` shows in the request as `reasoning_effort`.
pub fn write_pi_models(sandbox: &Sandbox, api_base: &str) {
    let dir = sandbox.home().join(".pi/agent");
    std::fs::create_dir_all(&dir).unwrap();
    let model = serde_json::json!({
        "id": PI_MOCK_MODEL, "name": "Mock Model", "reasoning": true,
        "input": ["text", "image"], "contextWindow": 128000, "maxTokens": 8192,
    });
    let config = serde_json::json!({"providers": {
        "mock": {
            "baseUrl": api_base, "api": "openai-completions", "apiKey": MOCK_KEY_ENV,
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": true},
            "models": [model.clone()],
        },
        "mockresp": {
            "baseUrl": api_base, "api": "openai-responses", "apiKey": MOCK_KEY_ENV,
            "models": [model],
        },
    }});
    std::fs::write(dir.join("models.json"), config.to_string()).unwrap();
}

/// Writes omp's `~/.omp/agent/models.yml` into the sandbox: provider `mock` (Chat Completions)
/// at `api_base`, model [`PI_MOCK_MODEL`], key from [`MOCK_KEY_ENV`].
pub fn write_omp_models(sandbox: &Sandbox, api_base: &str) {
    let dir = sandbox.home().join(".omp/agent");
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = format!(
        "providers:\n  mock:\n    baseUrl: {api_base}\n    api: openai-completions\n    apiKey: {MOCK_KEY_ENV}\n    compat:\n      supportsDeveloperRole: false\n      supportsReasoningEffort: true\n    models:\n      - id: {PI_MOCK_MODEL}\n        name: Mock Model\n        reasoning: true\n        input: [text, image]\n        contextWindow: 128000\n        maxTokens: 8192\n"
    );
    std::fs::write(dir.join("models.yml"), yaml).unwrap();
}

fn jsonl_cli_command(sandbox: &Sandbox, provider: &str, extra_args: &[&str]) -> Command {
    let mut cmd = bridge();
    cmd.env_clear()
        .arg(provider)
        .arg("send")
        .args(extra_args)
        .current_dir(sandbox.work())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8");
    cmd
}

/// `bridge pi send` with a clean environment: HOME in the sandbox (write its model config with
/// [`write_pi_models`]), the pinned CLI named by `PI_BIN`, `PI_OFFLINE=1`, and the canary as
/// the mock provider's key.
pub fn pi_command(sandbox: &Sandbox, extra_args: &[&str]) -> Command {
    let mut cmd = jsonl_cli_command(sandbox, "pi", extra_args);
    cmd.env("PI_BIN", cli_path("pi"))
        .env("PI_OFFLINE", "1")
        .env(MOCK_KEY_ENV, CANARY_KEY);
    cmd
}

/// `bridge omp send` with a clean environment: HOME in the sandbox (write its model config with
/// [`write_omp_models`]), the pinned CLI named by `OMP_BIN` (bun, which it runs on, comes from
/// the PATH the installer's bin dirs are on), and the canary as the mock provider's key.
pub fn omp_command(sandbox: &Sandbox, extra_args: &[&str]) -> Command {
    let mut cmd = jsonl_cli_command(sandbox, "omp", extra_args);
    cmd.env("OMP_BIN", cli_path("omp"))
        .env(MOCK_KEY_ENV, CANARY_KEY);
    cmd
}

/// `bridge grok-cli send` with a clean environment: HOME in the sandbox, the pinned CLI named
/// by `VIBE_GROK_BIN` (installed as `grok-cli`). The mock's URL and the canary key travel in
/// the request (`baseUrl`, `apiKey`), as a plugin sends them.
pub fn grok_cli_command(sandbox: &Sandbox, extra_args: &[&str]) -> Command {
    let mut cmd = jsonl_cli_command(sandbox, "grok-cli", extra_args);
    cmd.env("VIBE_GROK_BIN", cli_path("grok-cli"));
    cmd
}

/// Writes an executable shell script `name` into `dir` (a fake CLI) and returns its path.
pub fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The parsed JSONL lines of a `--format jsonl` run.
pub fn jsonl_events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Events of one `type` among parsed JSONL lines.
pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// A running mock model server. Starting one fails the test outside a loopback-only network
/// namespace.
pub struct Mock {
    pub server: mock_llm::MockServer,
}

impl Mock {
    /// The mock with its default scenarios.
    pub fn start() -> Mock {
        Mock::with(mock_llm::Config::default())
    }

    /// The mock with `config`.
    pub fn with(config: mock_llm::Config) -> Mock {
        require_loopback_only_network();
        Mock {
            server: mock_llm::MockServer::start_in_thread(config).expect("start mock model server"),
        }
    }

    /// Its base URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        self.server.base_url()
    }

    /// The OpenAI-style API base (`…/v1`).
    pub fn api_base(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// The model requests the CLI made (the ones that selected a scenario).
    pub fn model_requests(&self) -> Vec<mock_llm::LoggedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.scenario.is_some())
            .collect()
    }
}

/// `base` (a JSON object) with the fields of `extra` added or replaced, as request text.
pub fn request_with(mut base: Value, extra: Value) -> String {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base.to_string()
}

/// Runs one scenario in both formats, each in a fresh sandbox (`run(format_args)` returns the
/// bridge's stdout and its sandbox), and snapshots `name.markers` / `name.jsonl` as a plugin and
/// an integrator would see them, after `stable` replaced the run-specific ids.
pub fn snapshot_both_formats(
    name: &str,
    mut run: impl FnMut(&[&str]) -> (String, Sandbox),
    stable: impl Fn(String) -> String,
) -> (String, String) {
    let (markers, sandbox) = run(&[]);
    let (jsonl, sandbox2) = run(&["--format", "jsonl"]);
    // Stored as `tests/snapshots/<test file>__<name>.*.snap`, as if the test file took them.
    let test_file = env!("CARGO_CRATE_NAME");
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(
            format!("{test_file}__{name}.markers"),
            stable(markers_view(&markers, &sandbox))
        );
        insta::assert_snapshot!(
            format!("{test_file}__{name}.jsonl"),
            stable(jsonl_view(&jsonl, &sandbox2))
        );
    });
    (markers, jsonl)
}

/// Plays the plugin's side of the file IPC: answers the first request file matching `prefix`.
pub fn answer_ipc_file(dir: &Path, prefix: &str, response_prefix: &str, answer: Value) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix) && name.ends_with(".json") {
                    let Ok(bytes) = std::fs::read(entry.path()) else {
                        continue;
                    };
                    let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
                        continue;
                    };
                    let id = body["requestId"].as_str().unwrap().to_string();
                    std::fs::write(
                        dir.join(format!("{response_prefix}{id}.json")),
                        answer.to_string(),
                    )
                    .unwrap();
                    return body;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no {prefix}* file appeared in {}", dir.display());
}

/// Spawns `cmd` with piped stdin and stdout (stderr inherited) and a thread that forwards
/// each stdout line: the child, its stdin, and the lines.
pub fn spawn_piped(
    cmd: &mut Command,
) -> (
    std::process::Child,
    Option<std::process::ChildStdin>,
    std::sync::mpsc::Receiver<String>,
) {
    use std::io::BufRead;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn the bridge");
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, stdin, lines)
}

/// `cmd` (a `bridge <provider> send …` command) as the query `bridge <provider> QUERY ARGS…`,
/// with the same environment and working directory.
pub fn as_query(cmd: &Command, query: &str, args: &[&str]) -> Command {
    let mut out = Command::new(cmd.get_program());
    let provider = cmd.get_args().next().expect("a provider argument");
    out.arg(provider).arg(query).args(args);
    with_env_of(cmd, out)
}

/// What a query command printed, read the way the plugin's Java side reads it.
#[derive(Debug)]
pub struct QueryRun {
    /// The last stdout line that starts with `{` and ends with `}`, parsed
    /// (`ClaudeJsonOutputExtractor.extractLastJsonLine`, `CliModelsHandler`).
    pub json: Value,
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

/// Runs a query command with stdin closed at once (the plugin writes nothing for these), and
/// checks the wire rule: the reply is the last stdout line, one JSON object.
pub fn run_query(mut cmd: Command) -> QueryRun {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run a bridge query");
    query_run(output)
}

/// [`run_query`] for a query that reads a JSON object on stdin (`rewindFiles`): `stdin` is
/// written and closed, as the plugin does.
pub fn run_query_with(cmd: Command, stdin: &Value) -> QueryRun {
    query_run(run_with_stdin(cmd, &stdin.to_string()))
}

fn query_run(output: Output) -> QueryRun {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !stdout.contains(CANARY_KEY) && !stderr.contains(CANARY_KEY),
        "the API key leaked into the output"
    );
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with('{') && l.ends_with('}'))
        .unwrap_or_else(|| panic!("no JSON line on stdout: {stdout:?}; stderr: {stderr}"));
    assert_eq!(
        Some(line),
        stdout.lines().last().map(str::trim),
        "the reply is the last line"
    );
    let json = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    QueryRun {
        json,
        stdout,
        stderr,
        code: output.status.code(),
    }
}
