//! The ACP providers' end-to-end harness: each provider's real CLI behind `bridge <provider>
//! send`, pointed at the project's mock model server, in a scratch home, inside the loopback
//! namespace. The scenarios are shared; `tests/<provider>.rs` run them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

/// One ACP provider under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Gemini,
    Qwen,
    Copilot,
    Opencode,
    Kimi,
    /// `bridge grok send` with a `grok` executable that runs `qwen --acp`.
    Grok,
}

impl Provider {
    pub fn id(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::Qwen => "qwen",
            Provider::Copilot => "copilot",
            Provider::Opencode => "opencode",
            Provider::Kimi => "kimi",
            Provider::Grok => "grok",
        }
    }

    /// The real CLI the provider drives.
    pub fn cli(self) -> &'static str {
        match self {
            Provider::Grok => "qwen",
            other => other.id(),
        }
    }
}

/// A provider and the transport the bridge uses for it (`None`: the provider's default, ACP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub provider: Provider,
    pub transport: Option<&'static str>,
}

impl From<Provider> for Target {
    fn from(provider: Provider) -> Target {
        Target {
            provider,
            transport: None,
        }
    }
}

impl Provider {
    /// This provider through its JSON print mode (`--transport json`).
    pub fn json(self) -> Target {
        Target {
            provider: self,
            transport: Some("json"),
        }
    }
}

impl Target {
    /// The snapshot name prefix: `gemini`, or `gemini-json` for another transport.
    pub fn id(self) -> String {
        match self.transport {
            None => self.provider.id().to_string(),
            Some(transport) => format!("{}-{transport}", self.provider.id()),
        }
    }

    /// Whether this is the ACP transport (status lines name the ACP methods).
    pub fn is_acp(self) -> bool {
        self.transport.is_none_or(|t| t == "acp")
    }

    /// Whether the CLI prints whole messages rather than token deltas (opencode's and Kimi's
    /// print modes): text is one chunk per message, and nothing shows while the model streams.
    pub fn whole_messages(self) -> bool {
        matches!(
            (self.provider, self.transport),
            (Provider::Opencode | Provider::Kimi, Some("json"))
        )
    }
}

/// The mock model server (re-exported: the provider test files only import this module).
pub use super::Mock;

/// The ACP scenarios every provider passes, as `#[test]`s of the calling test file: text in
/// both formats, thinking, an approval allowed / denied / unanswerable, an interrupt during a
/// slow stream, and an HTTP 401 surfaced with `$needle` (the agent's wording of it).
#[macro_export]
macro_rules! acp_scenarios {
    ($provider:expr, http_401: $needle:expr) => {
        #[test]
        fn text_streams_in_both_formats() {
            $crate::common::acp::text_in_both_formats($provider);
        }

        #[test]
        fn thinking_streams_before_text() {
            $crate::common::acp::thinking_before_text($provider);
        }

        #[test]
        fn approval_allowed_over_stdin_runs_the_command() {
            $crate::common::acp::approval_allowed_runs($provider);
        }

        #[test]
        fn approval_denied_over_stdin_runs_nothing() {
            $crate::common::acp::approval_denied_does_not_run($provider);
        }

        #[test]
        fn approval_without_a_client_is_denied_at_once() {
            $crate::common::acp::approval_without_client_is_denied($provider);
        }

        #[test]
        fn interrupt_during_a_slow_stream_leaves_no_process() {
            $crate::common::acp::interrupt_during_slow_stream($provider);
        }

        #[test]
        fn http_401_is_surfaced() {
            $crate::common::acp::http_error_is_surfaced($provider, "err401", $needle);
        }
    };
}

/// The scenarios every `--transport json` mode passes, as `#[test]`s of the calling test file:
/// text in both formats, resume, an interrupt that leaves no process, and an HTTP 401 surfaced
/// with `$needle`. The second form adds thinking before text and a tool that runs in the
/// permission mode `$mode` (Gemini's print mode shows no thoughts and needs its own tool test).
#[macro_export]
macro_rules! json_scenarios {
    ($provider:expr, http_401: $needle:expr) => {
        #[test]
        fn json_text_streams_in_both_formats() {
            $crate::common::acp::text_in_both_formats($provider.json());
        }

        #[test]
        fn json_resume_sees_the_earlier_turn() {
            $crate::common::acp::resume_sees_the_earlier_turn($provider.json());
        }

        #[test]
        fn json_interrupt_leaves_no_process() {
            $crate::common::acp::interrupt_leaves_no_process($provider.json());
        }

        #[test]
        fn json_http_401_is_surfaced() {
            $crate::common::acp::http_error_is_surfaced($provider.json(), "err401", $needle);
        }
    };
    ($provider:expr, http_401: $needle:expr, thinking, tool_runs_in: $mode:expr) => {
        $crate::json_scenarios!($provider, http_401: $needle);

        #[test]
        fn json_thinking_streams_before_text() {
            $crate::common::acp::thinking_before_text($provider.json());
        }

        #[test]
        fn json_tool_runs_when_the_mode_allows_it() {
            $crate::common::acp::one_shot_tool_runs_when_the_mode_allows_it(
                $provider.json(),
                $mode,
            );
        }
    };
}

/// Writes the files `provider` needs in the scratch home (model provider configs, and Kimi's
/// placeholder login) and returns extra PATH dirs.
fn prepare_home(target: Target, sandbox: &Sandbox, base_url: &str) -> Vec<PathBuf> {
    let home = sandbox.home();
    match target.provider {
        Provider::Opencode => {
            let dir = home.join(".config/opencode");
            std::fs::create_dir_all(&dir).unwrap();
            let config = json!({
                "autoupdate": false, "share": "disabled",
                "model": "mock/mock-model", "small_model": "mock/mock-small",
                "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock LLM",
                    "options": {"baseURL": format!("{base_url}/v1"), "apiKey": "{env:MOCK_API_KEY}"},
                    "models": {"mock-model": {"name": "Mock Model", "tool_call": true, "reasoning": true},
                               "mock-small": {"name": "Mock Small"}}}}
            });
            std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
            Vec::new()
        }
        Provider::Kimi => {
            let dir = home.join(".kimi");
            std::fs::create_dir_all(dir.join("credentials")).unwrap();
            let config = format!(
                "default_model = \"mock\"\ndefault_thinking = false\ntelemetry = false\n\n\
                 [providers.mock]\ntype = \"kimi\"\nbase_url = \"{base_url}/v1\"\napi_key = \"{CANARY_KEY}\"\n\n\
                 [models.mock]\nprovider = \"mock\"\nmodel = \"mock-model\"\nmax_context_size = 128000\n\
                 capabilities = [\"thinking\"]\n"
            );
            std::fs::write(dir.join("config.toml"), config).unwrap();
            // `kimi acp` refuses every session without a Kimi Code login (see the kimi crate):
            // a placeholder token gets past that check; the mock provider never sees it. The
            // print mode needs none, and is tested without it.
            if !target.is_acp() {
                return Vec::new();
            }
            std::fs::write(
                dir.join("credentials/kimi-code.json"),
                r#"{"access_token":"placeholder-not-a-secret","refresh_token":"","expires_at":null,"scope":"","token_type":"Bearer"}"#,
            )
            .unwrap();
            Vec::new()
        }
        Provider::Gemini => {
            // Headless Gemini (the json transport, and every resumed turn) needs an auth type
            // when GOOGLE_GEMINI_BASE_URL is set; ACP ignores it. The user's step, not the
            // bridge's (see the gemini crate).
            let dir = home.join(".gemini");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("settings.json"),
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            )
            .unwrap();
            Vec::new()
        }
        Provider::Grok => {
            // A `grok` that runs a real ACP agent (Qwen Code: its ACP resumes sessions), ignoring
            // `agent stdio` and taking the key and endpoint from the variables the grok channel
            // sets.
            let bin = sandbox.root().join("grok-bin");
            std::fs::create_dir_all(&bin).unwrap();
            let qwen = cli_path("qwen");
            let script = bin.join("grok");
            std::fs::write(
                &script,
                format!(
                    "#!/bin/sh\n# test stand-in for xAI's grok: a real ACP agent\n\
                     [ \"$1 $2\" = \"agent stdio\" ] || {{ echo \"unexpected args: $*\" >&2; exit 2; }}\n\
                     export OPENAI_API_KEY=\"$XAI_API_KEY\" OPENAI_BASE_URL=\"$GROK_BASE_URL\"\n\
                     exec \"{}\" --acp\n",
                    qwen.display()
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            vec![bin]
        }
        _ => Vec::new(),
    }
}

/// `bridge <provider> send` with a clean environment pointing the CLI at `base_url`.
pub fn acp_command(
    target: impl Into<Target>,
    sandbox: &Sandbox,
    base_url: &str,
    extra_args: &[&str],
) -> Command {
    let target = target.into();
    let provider = target.provider;
    let _ = cli_path(provider.cli());
    let extra_path = prepare_home(target, sandbox, base_url);
    let mut path = std::env::join_paths(extra_path).unwrap_or_default();
    if !path.is_empty() {
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut cmd = bridge();
    cmd.env_clear()
        .arg(provider.id())
        .arg("send")
        .args(
            target
                .transport
                .map(|t| ["--transport", t])
                .iter()
                .flatten(),
        )
        .args(extra_args)
        .current_dir(sandbox.work())
        .env("PATH", path)
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("BRIDGE_ACP_HANDSHAKE_TIMEOUT", "120");
    let home = sandbox.home();
    match provider {
        Provider::Gemini => {
            cmd.env("GEMINI_API_KEY", CANARY_KEY)
                .env("GOOGLE_GEMINI_BASE_URL", base_url);
            if !target.is_acp() {
                cmd.env("GEMINI_CLI_PATH", cli_path("gemini"));
            }
        }
        Provider::Grok => {
            cmd.env("XAI_API_KEY", CANARY_KEY)
                .env("GROK_BASE_URL", format!("{base_url}/v1"))
                .env("OPENAI_MODEL", "mock-qwen-model")
                .env("GROK_AUTH_METHOD", "openai");
        }
        Provider::Qwen => {
            cmd.env("OPENAI_API_KEY", CANARY_KEY)
                .env("OPENAI_BASE_URL", format!("{base_url}/v1"))
                .env("OPENAI_MODEL", "mock-qwen-model");
            if !target.is_acp() {
                // Named explicitly, the one-shot channel skips its background version check,
                // whose timing-dependent warning would make the JSONL snapshots flaky.
                cmd.env("QWEN_CLI_PATH", cli_path("qwen"));
            }
        }
        Provider::Copilot => {
            cmd.env("COPILOT_OFFLINE", "true")
                .env("COPILOT_PROVIDER_BASE_URL", format!("{base_url}/v1"))
                .env("COPILOT_PROVIDER_TYPE", "openai")
                .env("COPILOT_PROVIDER_API_KEY", CANARY_KEY)
                .env("COPILOT_MODEL", "gpt-4.1");
            if !target.is_acp() {
                cmd.env("COPILOT_CLI_PATH", cli_path("copilot"));
            }
        }
        Provider::Opencode => {
            cmd.env("MOCK_API_KEY", CANARY_KEY)
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .env("XDG_DATA_HOME", home.join(".local/share"))
                .env("XDG_CACHE_HOME", home.join(".cache"))
                .env("XDG_STATE_HOME", home.join(".local/state"))
                .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                .env("OPENCODE_DISABLE_SHARE", "1")
                .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1");
        }
        Provider::Kimi => {}
    }
    cmd
}

/// Starts the bridge with `request` on stdin, kept open (control lines can follow).
pub fn start(mut cmd: Command, request: &Value) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn bridge");
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(request.to_string().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    child
}

/// Reads the bridge's stdout to EOF, calling `on_line` for each line with the bridge's stdin
/// (to answer approvals or interrupt); closes stdin after the final line. Returns the output,
/// the exit status and the wall time.
pub fn drive(
    mut child: Child,
    mut on_line: impl FnMut(&str, &mut dyn Write),
) -> (String, ExitStatus, Duration) {
    let started = Instant::now();
    let mut stdin = child.stdin.take();
    let stderr = child.stderr.take().unwrap();
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
        text
    });
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut out = String::new();
    for line in reader.lines() {
        let line = line.unwrap();
        if let Some(stdin) = stdin.as_mut() {
            on_line(&line, stdin);
        }
        if line.starts_with('{') && line.contains("\"success\"") {
            stdin.take();
        }
        out.push_str(&line);
        out.push('\n');
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    let err = err_thread.join().unwrap_or_default();
    assert!(
        !out.contains(CANARY_KEY) && !err.contains(CANARY_KEY),
        "the API key leaked into the output"
    );
    (out, status, elapsed)
}

/// Runs one request with stdin closed after it (nobody answers approvals).
pub fn run(
    provider: impl Into<Target>,
    sandbox: &Sandbox,
    mock: &Mock,
    request: Value,
    extra: &[&str],
) -> String {
    let out = run_with_stdin(
        acp_command(provider, sandbox, &mock.url(), extra),
        &request.to_string(),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `[PERMISSION_DECISION]` payload.
pub fn permission_decision(out: &str) -> Value {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("[PERMISSION_DECISION] "))
        .unwrap_or_else(|| panic!("no permission decision in:\n{out}"));
    serde_json::from_str(line).unwrap()
}

/// Live processes whose working directory is inside `dir` (the agent and anything it started).
pub fn processes_in(dir: &Path) -> Vec<String> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        if !cwd.starts_with(&dir) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            continue;
        }
        let cmdline = std::fs::read_to_string(entry.path().join("cmdline"))
            .unwrap_or_default()
            .replace('\0', " ");
        found.push(format!("{pid}: {cmdline}"));
    }
    found
}

/// A stable view of ACP marker output: `markers_view` plus placeholders for ids the CLIs make
/// up (opencode's `ses_…`/`call_…`, Kimi's `<uuid>/call_…`, Gemini's `<tool>_<ms>_<n>`).
pub fn acp_markers_view(stdout: &str, sandbox: &Sandbox) -> String {
    stabilize(&markers_view(stdout, sandbox))
}

/// A stable view of ACP JSONL output (see [`acp_markers_view`]); a version probe that timed
/// out on a loaded machine is left out (it depends on timing, not on the bridge).
pub fn acp_jsonl_view(stdout: &str, sandbox: &Sandbox) -> String {
    let view = stabilize(&jsonl_view(stdout, sandbox));
    view.lines()
        .filter(|l| !(l.contains(r#""code":"untested_version""#) && l.contains("timed out")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stabilize(text: &str) -> String {
    let rules = [
        (r"ses_[A-Za-z0-9]+", "[ses]"),
        (r"call_[A-Za-z0-9]+", "[call]"),
        (r"[a-z_]+__[a-z_]+_\d{10,}_\d+", "[gemini-call]"),
        (r"PGID: \d+", "PGID: [pid]"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[port]"),
        (r#"(?m)^(\[CONTENT_DELTA\] ")\d{3,}"#, "${1}[n]"),
        (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+", "[time]"),
        (r#""used":\d+"#, r#""used":[n]"#),
        (r#""input_tokens":\d{4,}"#, r#""input_tokens":[n]"#),
        // The agent's own token count (its prompt varies): like `input_tokens`.
        (r#""context_tokens":\d{4,}"#, r#""context_tokens":[n]"#),
    ];
    let mut text = text.to_string();
    for (pattern, replacement) in rules {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, replacement)
            .into_owned();
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Scenarios, shared by every provider.

/// Plain text in both formats, snapshotted; the streamed text equals the result.
pub fn text_in_both_formats(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let request = json!({"message": "MOCK:text say hello"});
    let markers = run(provider, &sandbox, &mock, request.clone(), &[]);
    let sandbox2 = Sandbox::new();
    let jsonl = run(provider, &sandbox2, &mock, request, &["--format", "jsonl"]);
    assert!(
        markers.starts_with("[MESSAGE_START]\n[STREAM_START]\n"),
        "{markers}"
    );
    let last = final_line(&markers);
    assert_eq!(last["success"], true, "{markers}");
    assert!(
        last["sessionId"].as_str().is_some_and(|s| !s.is_empty()),
        "{last}"
    );
    assert_eq!(content_text(&markers), mock_llm::scenario::HELLO_TEXT);
    assert_eq!(last["result"], mock_llm::scenario::HELLO_TEXT);
    assert!(
        provider.whole_messages()
            || markers
                .lines()
                .filter(|l| l.starts_with("[CONTENT_DELTA]"))
                .count()
                >= 3,
        "text must stream in deltas: {markers}"
    );
    let end = jsonl.lines().last().unwrap();
    assert!(end.contains(r#""type":"turn_end","success":true"#), "{end}");
    assert!(
        !provider.is_acp()
            || jsonl
                .lines()
                .any(|l| l.contains(r#""type":"status""#) && l.contains("session/new")),
        "the session strategy is reported: {jsonl}"
    );
    insta::assert_snapshot!(
        format!("{}-text.markers", provider.id()),
        acp_markers_view(&markers, &sandbox)
    );
    insta::assert_snapshot!(
        format!("{}-text.jsonl", provider.id()),
        acp_jsonl_view(&jsonl, &sandbox2)
    );
}

/// Thinking streams as thinking deltas before the text.
pub fn thinking_before_text(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:thinking think first"}),
        &[],
    );
    let thinking = out
        .find("[THINKING_DELTA]")
        .unwrap_or_else(|| panic!("no thinking: {out}"));
    let text = out.find("[CONTENT_DELTA]").expect("text deltas");
    assert!(thinking < text, "{out}");
    let thought: String = out
        .lines()
        .filter_map(|l| l.strip_prefix("[THINKING_DELTA] "))
        .map(|j| serde_json::from_str::<String>(j).unwrap())
        .collect();
    // Gemini trims each thought part, so the words may arrive without their spaces.
    assert!(thought.replace(' ', "").contains("stepbystep"), "{thought}");
    assert_eq!(final_line(&out)["success"], true);
    assert_eq!(content_text(&out), mock_llm::scenario::AFTER_THINKING_TEXT);
    insta::assert_snapshot!(
        format!("{}-thinking.markers", provider.id()),
        acp_markers_view(&out, &sandbox)
    );
}

/// The `danger` shell call asks for approval; `decision` answers it over stdin.
fn approval(provider: Target, decision: Value) -> (String, Sandbox) {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let child = start(
        acp_command(provider, &sandbox, &mock.url(), &[]),
        &json!({"message": "MOCK:danger make a file", "permissionMode": "default"}),
    );
    let mut asked = 0;
    let (out, _, _) = drive(child, |line, stdin| {
        if let Some(payload) = line.strip_prefix("[PERMISSION_REQUEST] ") {
            asked += 1;
            let request: Value = serde_json::from_str(payload).unwrap();
            assert_eq!(request["kind"], "tool", "{request}");
            assert_eq!(request["toolKind"], "execute", "{request}");
            assert_eq!(request["toolName"], "Bash", "{request}");
            let command = request["input"]["command"].as_str().unwrap_or_default();
            assert!(command.contains("touch mock-created.txt"), "{request}");
            let reply = json!({"type": "permission_response", "requestId": request["requestId"], "decision": decision});
            writeln!(stdin, "{reply}").unwrap();
        }
    });
    assert_eq!(asked, 1, "exactly one approval request:\n{out}");
    (out, sandbox)
}

/// Allowed over stdin: the command runs, the decision is reported, the result comes back.
pub fn approval_allowed_runs(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let (out, sandbox) = approval(provider, json!("allow"));
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command did not run:\n{out}"
    );
    let decision = permission_decision(&out);
    assert_eq!(decision["applied"], "allow_once", "{decision}");
    assert_eq!(decision["source"], "client");
    assert_command_ran_and_was_answered(&out);
    insta::assert_snapshot!(
        format!("{}-approval-allowed.markers", provider.id()),
        acp_markers_view(&out, &sandbox)
    );
}

/// The `danger` command's Claude-shaped tool_use came before its successful result, the model
/// saw the output, and the turn succeeded.
fn assert_command_ran_and_was_answered(out: &str) {
    let tool_use = out
        .lines()
        .position(|l| l.starts_with("[MESSAGE] ") && l.contains(r#""type":"tool_use""#))
        .unwrap_or_else(|| panic!("a Claude-shaped tool_use: {out}"));
    let result = out
        .lines()
        .position(|l| l.starts_with("[TOOL_RESULT] ") && l.contains(r#""is_error":false"#))
        .unwrap_or_else(|| panic!("a successful tool result: {out}"));
    assert!(tool_use < result, "{out}");
    // The model saw the command's output (some agents report no output in the tool result).
    assert!(content_text(out).contains("created"), "{out}");
    assert_eq!(final_line(out)["success"], true, "{out}");
}

/// Denied over stdin: nothing runs, the turn goes on and ends normally.
pub fn approval_denied_does_not_run(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let (out, sandbox) = approval(
        provider,
        json!({"behavior": "deny", "message": "not on my machine"}),
    );
    assert!(
        !sandbox.work().join("mock-created.txt").exists(),
        "the denied command ran:\n{out}"
    );
    let decision = permission_decision(&out);
    assert_eq!(decision["applied"], "deny", "{decision}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("[TOOL_RESULT] ") && l.contains(r#""is_error":true"#)),
        "the refused call has an error result: {out}"
    );
    assert_eq!(final_line(&out)["success"], true, "{out}");
}

/// With stdin closed and no IPC, nobody can answer: the call is denied at once, never hangs.
pub fn approval_without_client_is_denied(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let out = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:danger make a file"}),
        &[],
    );
    assert!(started.elapsed() < Duration::from_secs(90));
    assert!(!sandbox.work().join("mock-created.txt").exists(), "{out}");
    let decision = permission_decision(&out);
    assert_eq!(decision["source"], "no_client", "{decision}");
    assert_eq!(final_line(&out)["success"], true, "{out}");
}

/// A later turn resumes the session: same id, and the model sees the earlier turn, its prompt
/// and its answer (an agent that records the answer after answering the prompt must have been
/// left the time to: Qwen Code's `close_settle`).
pub fn resume_sees_the_earlier_turn(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:text first turn"}),
        &[],
    );
    let session = final_line(&first)["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("first turn reports its session: {first}"))
        .to_string();
    let second = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:recall what did I say?", "sessionId": session}),
        &["--format", "jsonl"],
    );
    let end: Value = serde_json::from_str(second.lines().last().unwrap()).unwrap();
    assert_eq!(end["success"], true, "{second}");
    assert_eq!(end["session_id"], session.as_str());
    assert!(
        end["result"]
            .as_str()
            .unwrap_or_default()
            .contains("first turn"),
        "the model did not see turn 1: {second}"
    );
    let request = mock
        .model_requests()
        .into_iter()
        .rfind(|r| r.body.to_string().contains("MOCK:recall what did I say?"))
        .expect("the second turn's model request");
    // The grok test's `grok` is Qwen Code standing in for xAI's binary, whose recording is its
    // own: the grok provider has no Qwen settle time, and the stand-in loses the answer.
    assert!(
        provider.provider == Provider::Grok
            || request
                .body
                .to_string()
                .contains(mock_llm::scenario::HELLO_TEXT),
        "the model did not see turn 1's answer: {:#}",
        request.body
    );
    assert!(
        !provider.is_acp()
            || second.lines().any(|l| l.contains(r#""type":"status""#)
                && (l.contains("session/load") || l.contains("session/resume"))),
        "the resume strategy is reported: {second}"
    );
}

/// For agents whose ACP resume is broken (Gemini 0.61.0): a session id is refused at once with
/// the reason, and nothing is spawned that could damage the saved conversation.
pub fn resume_refused_with_reason(provider: impl Into<Target>, needle: &str) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:text first turn"}),
        &[],
    );
    let session = final_line(&first)["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let requests_before = mock.server.requests().len();
    let second = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:recall what did I say?", "sessionId": session}),
        &[],
    );
    let last = final_line(&second);
    assert_eq!(last["success"], false, "{second}");
    assert_eq!(last["sessionId"], session.as_str());
    let error = second
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(
        error.contains(needle) && error.contains(&session),
        "{error}"
    );
    assert_eq!(
        mock.server.requests().len(),
        requests_before,
        "nothing reached the model"
    );
}

/// An unknown session id is a clear error, not a silent new session.
pub fn unknown_session_is_an_error(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": "MOCK:text hi", "sessionId": "00000000-0000-4000-8000-000000000000"}),
        &[],
    );
    let last = final_line(&out);
    assert_eq!(last["success"], false, "{out}");
    let error = out
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(
        error.contains("00000000-0000-4000-8000-000000000000"),
        "{error}"
    );
}

/// An interrupt stops the turn and leaves no process: during the slow stream for CLIs that
/// stream deltas, while the model answers for those that print whole messages.
pub fn interrupt_leaves_no_process(target: Target) {
    if target.whole_messages() {
        interrupt_while_the_model_answers(target);
    } else {
        interrupt_during_slow_stream(target);
    }
}

/// An interrupt during a slow stream stops the turn within seconds and leaves no process.
pub fn interrupt_during_slow_stream(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let child = start(
        acp_command(provider, &sandbox, &mock.url(), &[]),
        &json!({"message": "MOCK:slow talk"}),
    );
    let mut deltas = 0;
    let mut interrupted_at = None;
    let (out, status, _) = drive(child, |line, stdin| {
        if line.starts_with("[CONTENT_DELTA]") {
            deltas += 1;
            if deltas == 3 {
                interrupted_at = Some(Instant::now());
                writeln!(stdin, "{{\"type\":\"interrupt\"}}").unwrap();
            }
        }
    });
    let stopped_in = interrupted_at.expect("three deltas arrived").elapsed();
    assert!(stopped_in < Duration::from_secs(15), "{stopped_in:?}");
    assert!(deltas < 40, "the stream was not interrupted: {out}");
    let last = final_line(&out);
    assert_eq!(last["success"], false, "{out}");
    assert_eq!(last["error"], "User interrupted");
    assert!(out.contains("[STREAM_END]\n[MESSAGE_END]\n"), "{out}");
    assert_eq!(status.code(), Some(130));
    // The whole group got SIGKILL as the bridge ended; a member killed a moment before may
    // still be exiting (no command line any more): gone within seconds is the contract.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut left = processes_in(sandbox.root());
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_in(sandbox.root());
    }
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// An HTTP error from the model API is surfaced with its message.
pub fn http_error_is_surfaced(provider: impl Into<Target>, scenario: &str, needle: &str) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let out = run(
        provider,
        &sandbox,
        &mock,
        json!({"message": format!("MOCK:{scenario} hi")}),
        &[],
    );
    assert!(
        started.elapsed() < Duration::from_secs(150),
        "{:?}",
        started.elapsed()
    );
    let error = out
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .unwrap_or_else(|| panic!("{scenario}: no send error in {out}"));
    assert!(error.contains(needle), "{scenario}: {error}");
    assert_eq!(final_line(&out)["success"], false, "{scenario}: {out}");
    insta::assert_snapshot!(
        format!("{}-{scenario}.markers", provider.id()),
        acp_markers_view(&out, &sandbox)
    );
}

// ---------------------------------------------------------------------------------------------
// One-shot JSON transports (`--transport json`): no interactive approvals, the mode's policy.

/// The `danger` shell call under a mode that allows it without asking (`yolo`,
/// `bypassPermissions`): it runs, its result comes back, the turn succeeds.
pub fn one_shot_tool_runs_when_the_mode_allows_it(target: impl Into<Target>, mode: &str) {
    let target: Target = target.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(
        target,
        &sandbox,
        &mock,
        json!({"message": "MOCK:danger make a file", "permissionMode": mode}),
        &[],
    );
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "{mode}: the command did not run:\n{out}"
    );
    assert_command_ran_and_was_answered(&out);
    assert!(
        !out.contains("[PERMISSION_REQUEST]"),
        "nothing is asked: {out}"
    );
    insta::assert_snapshot!(
        format!("{}-tool-{mode}.markers", target.id()),
        acp_markers_view(&out, &sandbox)
    );
}

/// The `danger` shell call in the default mode, for one-shot modes that refuse what needs
/// approval ([`one_shot_tool_refused`]), and tell the client why (`permission_mode` warning) and
/// what was refused (`permission_denied`).
pub fn one_shot_tool_refused_in_default_mode(target: impl Into<Target>) {
    let out = one_shot_tool_refused(target, "default");
    let events = jsonl_events(&out);
    let warning = |code: &str| {
        events
            .iter()
            .any(|e| e["type"] == "warning" && e["code"] == code)
    };
    assert!(
        warning("permission_mode"),
        "the mode's policy is told: {out}"
    );
    assert!(warning("permission_denied"), "the refusal is told: {out}");
}

// ---------------------------------------------------------------------------------------------
// Scenarios of the one-shot print modes (`--transport json`), which cannot ask for approval.

/// An interrupt while the model is answering (for CLIs that print nothing until a message is
/// complete, the moment the mock has the `slow` request) stops the turn within seconds, before
/// the answer completes, and leaves no process.
pub fn interrupt_while_the_model_answers(provider: impl Into<Target>) {
    let provider: Target = provider.into();
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut child = start(
        acp_command(provider, &sandbox, &mock.url(), &[]),
        &json!({"message": "MOCK:slow talk"}),
    );
    let mut stdin = child.stdin.take().unwrap();
    // The watcher owns the mock (it lives until the thread is joined) and the bridge's stdin.
    let interrupter = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            let asked = mock
                .server
                .requests()
                .iter()
                .any(|r| r.scenario.as_deref() == Some("slow"));
            if asked {
                // Into the 6 s answer: the CLI is streaming it.
                std::thread::sleep(Duration::from_millis(1500));
                let sent = Instant::now();
                writeln!(stdin, "{{\"type\":\"interrupt\"}}").unwrap();
                return Some((sent, stdin, mock));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    });
    let (out, status, _) = drive(child, |_, _| {});
    let (sent, stdin, _mock) = interrupter
        .join()
        .unwrap()
        .expect("the model got the slow request");
    let stopped_in = sent.elapsed();
    drop(stdin);
    assert!(stopped_in < Duration::from_secs(15), "{stopped_in:?}");
    assert!(!out.contains("word39"), "the answer completed: {out}");
    let last = final_line(&out);
    assert_eq!(last["success"], false, "{out}");
    assert_eq!(last["error"], "User interrupted");
    assert!(out.contains("[STREAM_END]\n[MESSAGE_END]\n"), "{out}");
    assert_eq!(status.code(), Some(130));
    let left = processes_in(sandbox.root());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// The `danger` shell call in `mode`, with nobody to ask; returns the markers output.
fn danger_in_mode(provider: Target, sandbox: &Sandbox, mode: &str, format: &[&str]) -> String {
    let mock = Mock::start();
    run(
        provider,
        sandbox,
        &mock,
        json!({"message": "MOCK:danger make a file", "permissionMode": mode}),
        format,
    )
}

/// The `danger` shell call in a mode that does not allow it, with nobody to ask: it does not
/// run, the refusal is visible (a failed tool result), and the turn still ends normally.
/// Returns the JSONL output.
pub fn one_shot_tool_refused(provider: impl Into<Target>, mode: &str) -> String {
    let provider: Target = provider.into();
    let sandbox = Sandbox::new();
    let out = danger_in_mode(provider, &sandbox, mode, &["--format", "jsonl"]);
    assert!(
        !sandbox.work().join("mock-created.txt").exists(),
        "the refused command ran:\n{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains(r#""type":"tool_result""#) && l.contains(r#""is_error":true"#)),
        "the refused call has an error result: {out}"
    );
    assert!(
        !out.contains(r#""type":"permission_request""#),
        "nothing is asked: {out}"
    );
    let end: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(end["success"], true, "{out}");
    insta::assert_snapshot!(
        format!("{}-tool-refused-{mode}.jsonl", provider.id()),
        acp_jsonl_view(&out, &sandbox)
    );
    out
}
