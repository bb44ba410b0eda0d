//! The `bridge` command: a thin CLI over the library.
//!
//! ```text
//! bridge <provider> send [PROMPT] [--format markers|jsonl|text] [--raw] [...]
//! bridge <provider> <query> [ARGS...]      (getSession <sessionId> <cwd>, listModels, ...)
//! bridge acp <provider>                    (the provider as an ACP agent on stdio)
//! ```
//!
//! Without a prompt argument the request JSON is read from stdin (ai-bridge style). The format
//! defaults to `markers`, or to `text` (answer on stdout, progress on stderr, approvals typed
//! on stdin) when stdout is a terminal. Exit codes: 0 success (and, in the markers format with a
//! stdin request, any failure that was reported in-band with `[SEND_ERROR]`, an invalid request
//! included, as ai-bridge does); 1 invalid provider or command, or a failed turn or invalid
//! request in the other formats; 2 bad command-line flags; 130 interrupted.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use bridge::core::control::{Control, parse_control};
use bridge::core::driver::{SendOptions, SendOutcome, WireSink, run_send};
use bridge::core::encode::Format;
use bridge::core::output::{LineWriter, watch_stdout_closed};
use bridge::core::permission::{PermissionBroker, PermissionDecision};
use bridge::core::permission_ipc::FileIpc;
use bridge::core::redact::Redactor;
use bridge::core::request::{Request, RequestError, read_request};
use bridge::core::text::{OpenApprovals, TextSink, typed_answer};
use bridge::core::turn::TurnLimits;
use clap::Parser;
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

mod acp_cmd;
mod daemon_cmd;
mod session_cmd;

/// Drive a coding-agent CLI and stream its turn as ai-bridge markers, JSONL, or readable text.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "bridge",
    version,
    about,
    after_help = "Providers: claude, codex, gemini, qwen, copilot, opencode, kimi, grok, pi, omp, grok-cli, minimax, zcode (more relays can be declared in providers.toml; bridge system status shows which are installed; gemini, qwen, copilot, opencode and kimi also take --transport json, codex --transport exec).\nThe request JSON (ai-bridge fields: message, sessionId, cwd, permissionMode, model, reasoningEffort, baseUrl, apiKey, attachments, ...) is read from stdin unless a PROMPT is given."
)]
pub(crate) struct Cli {
    /// Provider key (e.g. `claude`).
    pub(crate) provider: Option<String>,
    /// Command (`send`, `sendWithAttachments`).
    pub(crate) command: Option<String>,
    /// Prompt text; when absent the request JSON is read from stdin.
    pub(crate) prompt: Vec<String>,
    /// Output format [default: text when stdout is a terminal, else markers]. `text`: the
    /// answer on stdout, tool calls, thinking and errors on stderr, approvals answered by typing
    /// y / a / n on stdin.
    #[arg(long, value_enum, env = "BRIDGE_FORMAT")]
    pub(crate) format: Option<FormatArg>,
    /// Include provider-native lines (`raw` events) in JSONL output.
    #[arg(long)]
    pub(crate) raw: bool,
    /// Wall-clock deadline of the turn, in seconds.
    #[arg(long, value_name = "SECS", env = "BRIDGE_TURN_TIMEOUT")]
    pub(crate) timeout: Option<u64>,
    /// Idle deadline (no CLI output), in seconds.
    #[arg(long, value_name = "SECS", env = "BRIDGE_IDLE_TIMEOUT")]
    pub(crate) idle_timeout: Option<u64>,
    /// How long to wait for the request JSON on stdin, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub(crate) stdin_timeout: u64,
    /// Longest CLI output line kept, in bytes (longer ones are skipped with a warning).
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_line_bytes: Option<usize>,
    /// Model (when the request does not name one).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Session to resume (when the request does not name one).
    #[arg(long = "session", value_name = "ID")]
    pub(crate) session_id: Option<String>,
    /// Working directory (when the request does not name one).
    #[arg(long)]
    pub(crate) cwd: Option<String>,
    /// Permission mode (when the request does not name one).
    #[arg(long)]
    pub(crate) permission_mode: Option<String>,
    /// Transport of providers that have several (e.g. `acp` or `json` for gemini; when the
    /// request does not name one).
    #[arg(long, value_name = "NAME")]
    pub(crate) transport: Option<String>,
    /// How long an approval waits for the client's answer over stdin, in seconds (the file
    /// IPC uses CLAUDE_PERMISSION_SAFETY_NET_MS).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 300,
        env = "BRIDGE_APPROVAL_TIMEOUT"
    )]
    pub(crate) approval_timeout: u64,
    /// Also write the CLI's raw stdout, stderr and stdin to PREFIX.stdout, PREFIX.stderr and
    /// PREFIX.stdin (secrets redacted): for bug reports and the transcript corpus.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) record: Option<std::path::PathBuf>,
    /// `bridge system status`: print one JSON document instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// `bridge daemon`: close a session after this many seconds without a turn (its next
    /// turn resumes it).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1800,
        env = "BRIDGE_SESSION_IDLE_TIMEOUT"
    )]
    pub(crate) session_idle_timeout: u64,
    /// `bridge daemon`: most sessions that keep a CLI process at once (the least recently
    /// used idle one is closed first).
    #[arg(long, value_name = "N", default_value_t = 8, env = "BRIDGE_MAX_WARM")]
    pub(crate) max_warm: usize,
    /// `bridge daemon`: longest a command other than a send may run, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) command_timeout: u64,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum FormatArg {
    Markers,
    Jsonl,
    Text,
}

/// The async runtime of a command ([`bridge::async_runtime`]), or the failure line that says
/// why there is none.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    bridge::async_runtime()
        .map_err(|error| fail_line(&format!("cannot start the async runtime: {error}")))
}

pub(crate) fn fail_line(error: &str) -> ExitCode {
    println!("{}", serde_json::json!({"success": false, "error": error}));
    ExitCode::from(1)
}

/// Parses the command line; `bridge <provider> --help` also lists the commands that provider
/// accepts (its sends, `session` and its queries).
fn parse_cli() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut command = Cli::command();
    let wants_help = args.iter().skip(1).any(|a| a == "--help" || a == "-h");
    if wants_help
        && let Some(provider) = args.get(1).and_then(|a| a.to_str())
        && let Some(channel) = bridge::router().get(provider)
    {
        let commands = bridge::core::query::command_list(&*channel).join(", ");
        let general = command
            .get_after_help()
            .map(ToString::to_string)
            .unwrap_or_default();
        command = command.after_help(format!("{general}\n\nCommands of {provider}: {commands}"));
    }
    let matches = command.get_matches_from(args);
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let router = bridge::router();
    let Some(provider) = cli.provider.clone() else {
        eprintln!(
            "usage: bridge <provider> <command> [PROMPT]   |   bridge daemon   |   bridge acp <provider>   |   bridge system status [--json]   |   bridge schema [events|control]\nproviders: {}",
            router.ids().join(", ")
        );
        return fail_line("No provider specified");
    };
    if provider == "schema" {
        let schema = match cli.command.as_deref() {
            None | Some("events") => bridge::core::schema::jsonl_line_schema(),
            Some("control") => bridge::core::schema::control_line_schema(),
            Some(other) => {
                return fail_line(&format!("Unknown schema: {other} (use events or control)"));
            }
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&schema).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    if provider == "system" {
        return bridge::system::run(cli.command.as_deref(), cli.json);
    }
    if provider == "daemon" {
        return daemon_cmd::run_daemon(cli);
    }
    if provider == "acp" {
        return acp_cmd::run_acp(cli);
    }
    let config_error = bridge::relays::user_relays().as_ref().err();
    if let Some(error) = config_error {
        eprintln!("[WARNING] providers_config: {error} (its relays are not registered)");
    }
    let Some(channel) = router.get(&provider) else {
        eprintln!("valid providers: {}", router.ids().join(", "));
        return match config_error {
            Some(error) => fail_line(&format!("Invalid provider: {provider} ({error})")),
            None => fail_line(&format!("Invalid provider: {provider}")),
        };
    };
    let commands = bridge::core::query::command_list(&*channel).join(", ");
    let Some(command) = cli.command.clone() else {
        eprintln!("commands of {provider}: {commands}");
        return fail_line("No command specified");
    };
    let query = bridge::core::query::find(&*channel, &command);
    if command != "session" && !channel.commands().contains(&command.as_str()) && query.is_none() {
        eprintln!("[COMMAND_ERROR] unknown command; {provider} accepts: {commands}");
        return fail_line(&format!(
            "Unknown {} command: {command}",
            channel.display_name()
        ));
    }

    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let code = if let Some(query) = query {
        runtime.block_on(run_query(&cli, channel.id(), query))
    } else if command == "session" {
        runtime.block_on(session_cmd::run(cli, channel))
    } else {
        runtime.block_on(send(cli, channel))
    };
    // Do not wait for detached tasks (a stdin reader blocked on an open pipe).
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

async fn send(cli: Cli, channel: std::sync::Arc<dyn bridge::core::Channel>) -> ExitCode {
    let cancel = CancellationToken::new();
    let stdout_closed = CancellationToken::new();
    install_signal_handlers(cancel.clone());
    watch_stdout_closed(cancel.clone(), stdout_closed.clone());

    let from_stdin = cli.prompt.is_empty();
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let format = output_format(&cli);
    let mut stdin = tokio::io::stdin();
    let mut control_rest = None;
    let request: Result<Request, RequestError> = if from_stdin {
        if stdin_is_terminal {
            Err(RequestError::Empty)
        } else {
            match read_request(&mut stdin, Duration::from_secs(cli.stdin_timeout)).await {
                Ok(read) => {
                    control_rest = Some(read.rest);
                    Ok(read.request)
                }
                Err(error) => Err(error),
            }
        }
    } else {
        // With the prompt as an argument, stdin is free for control lines; in the text format
        // a person at the terminal answers approvals there too.
        if !stdin_is_terminal || format == OutputFormat::Text {
            control_rest = Some(Vec::new());
        }
        Ok(Request::from_prompt(cli.prompt.join(" ")))
    };
    let request = request.map(|request| with_defaults(&cli, request, true));

    let mut redactor = base_redactor();
    if let Ok(request) = &request
        && let Some(key) = &request.api_key
    {
        redactor.add(key.expose());
    }

    let limits = turn_limits(&cli);
    let cwd = request
        .as_ref()
        .ok()
        .and_then(|r| r.cwd.clone())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let ipc = FileIpc::from_env(&cwd);
    let approval_timeout = match &ipc {
        Some(ipc) => ipc.safety_net(),
        None => Duration::from_secs(cli.approval_timeout),
    };
    let broker = Arc::new(PermissionBroker::new(
        control_rest.is_some(),
        ipc,
        approval_timeout,
    ));
    // Typed answers (y / a / n) are for the oldest approval the text view has shown.
    let typed =
        (format == OutputFormat::Text && control_rest.is_some()).then(OpenApprovals::default);
    if let Some(rest) = control_rest {
        spawn_control_reader(
            stdin,
            rest,
            cancel.clone(),
            Arc::clone(&broker),
            typed.clone(),
        );
    }
    let options = SendOptions {
        raw: cli.raw,
        limits,
        permissions: Some(broker),
        abort: stdout_closed.clone(),
        warnings_to_stderr: format == OutputFormat::Wire(Format::Markers),
        record: cli.record.clone(),
    };
    let outcome = match format {
        OutputFormat::Wire(wire) => {
            // `"streaming": false`: whole text blocks instead of deltas, for every provider.
            let streaming = request
                .as_ref()
                .ok()
                .and_then(|r| r.streaming)
                .unwrap_or(true);
            let encoder = wire.encoder_for(channel.dialect(), cli.raw, streaming);
            let writer = LineWriter::new(std::io::stdout().lock(), redactor);
            let mut sink = WireSink::new(encoder, writer);
            run_send(channel, request, &options, &mut sink, cancel).await
        }
        OutputFormat::Text => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let mut sink =
                TextSink::new(std::io::stdout().lock(), std::io::stderr(), redactor, color);
            if let Some(typed) = typed {
                sink = sink.answered_by_typing(typed);
            }
            run_send(channel, request, &options, &mut sink, cancel).await
        }
    };
    exit_code(outcome, format, from_stdin, stdout_closed.is_cancelled())
}

/// A query command (`getSession`, `listModels`, …): the positional arguments after the
/// command, stdin when the query reads it, `--timeout` as its deadline; one JSON line on
/// stdout ([`bridge::core::query::run`]).
async fn run_query(
    cli: &Cli,
    provider: &'static str,
    query: bridge::core::query::Query,
) -> ExitCode {
    use std::io::Write;
    let stdin = (!std::io::stdin().is_terminal()).then(tokio::io::stdin);
    let deadline = cli
        .timeout
        .map_or(bridge::core::query::DEFAULT_DEADLINE, Duration::from_secs);
    let outcome =
        bridge::core::query::run(&query, provider, cli.prompt.clone(), stdin, deadline).await;
    let redactor = base_redactor();
    for line in &outcome.stderr {
        eprintln!("{}", redactor.redact(line));
    }
    let mut stdout = std::io::stdout().lock();
    let mut line = String::new();
    for before in &outcome.stdout_before {
        line.push_str(&redactor.redact(before));
        line.push('\n');
    }
    line.push_str(&redactor.redact(&outcome.stdout));
    line.push('\n');
    if stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    ExitCode::from(outcome.exit_code)
}

/// The output format `cli` asks for (or the terminal implies).
pub(crate) fn output_format(cli: &Cli) -> OutputFormat {
    match cli.format {
        Some(FormatArg::Markers) => OutputFormat::Wire(Format::Markers),
        Some(FormatArg::Jsonl) => OutputFormat::Wire(Format::Jsonl),
        Some(FormatArg::Text) => OutputFormat::Text,
        None if std::io::stdout().is_terminal() => OutputFormat::Text,
        None => OutputFormat::Wire(Format::Markers),
    }
}

/// `request` with the fields it does not set taken from the command line (`--session` only
/// when `with_session`: in a session it applies to the first turn alone).
pub(crate) fn with_defaults(cli: &Cli, mut request: Request, with_session: bool) -> Request {
    request.model = request.model.or(cli.model.clone());
    if with_session {
        request.session_id = request.session_id.or(cli.session_id.clone());
    }
    request.cwd = request.cwd.or(cli.cwd.clone().map(Into::into));
    request.permission_mode = request.permission_mode.or(cli.permission_mode.clone());
    request.transport = request.transport.or(cli.transport.clone());
    request
}

/// The secrets of this run's environment (relay keys included); request keys are added per
/// request.
pub(crate) fn base_redactor() -> Redactor {
    let mut redactor = Redactor::new();
    redactor.add_env(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    );
    for var in bridge::relay_key_vars() {
        if let Ok(key) = std::env::var(var) {
            redactor.add(&key);
        }
    }
    redactor
}

/// The deadlines `cli` sets.
pub(crate) fn turn_limits(cli: &Cli) -> TurnLimits {
    let mut limits = TurnLimits::default();
    if let Some(secs) = cli.timeout {
        limits.wall = Duration::from_secs(secs);
    }
    if let Some(secs) = cli.idle_timeout {
        limits.idle = Duration::from_secs(secs);
    }
    if let Some(bytes) = cli.max_line_bytes {
        limits.max_line_bytes = bytes;
    }
    limits
}

/// The output the user asked for (or the terminal implies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    /// A wire format on stdout.
    Wire(Format),
    /// The terminal view.
    Text,
}

fn exit_code(
    outcome: SendOutcome,
    format: OutputFormat,
    from_stdin: bool,
    stdout_closed: bool,
) -> ExitCode {
    if outcome.success {
        ExitCode::SUCCESS
    } else if stdout_closed || outcome.stdout_closed {
        // Nobody read the in-band error.
        ExitCode::from(1)
    } else if outcome.interrupted {
        ExitCode::from(130)
    } else if format == OutputFormat::Wire(Format::Markers) && from_stdin {
        // Every failure here, an invalid request included, was reported in-band with
        // `[SEND_ERROR]`. ai-bridge exits 0 after a send error, and the plugin's generic CLI
        // path (`BaseSDKBridge`) reports a non-zero exit as a second error.
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// SIGINT, SIGTERM and SIGHUP interrupt the turn (the child group is stopped, end markers and
/// the final line are still written).
pub(crate) fn install_signal_handlers(cancel: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        for kind in [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ] {
            if let Ok(mut stream) = signal(kind) {
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    if stream.recv().await.is_some() {
                        cancel.cancel();
                    }
                });
            }
        }
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
    }
}

/// Reads control lines that follow the request on stdin (interrupts and approval answers).
/// EOF tells the broker that no client can answer approvals over stdin any more.
fn spawn_control_reader(
    stdin: tokio::io::Stdin,
    rest: Vec<u8>,
    cancel: CancellationToken,
    broker: Arc<PermissionBroker>,
    typed: Option<OpenApprovals>,
) {
    tokio::spawn(async move {
        let input = tokio::io::AsyncReadExt::chain(std::io::Cursor::new(rest), stdin);
        let mut lines = tokio::io::BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(typed) = &typed
                && !line.trim_start().starts_with('{')
            {
                answer_typed(&line, typed, &broker);
                continue;
            }
            match parse_control(&line) {
                Ok(Control::Interrupt) => cancel.cancel(),
                Ok(Control::PermissionResponse {
                    request_id,
                    decision,
                }) => {
                    if !broker.answer(&request_id, *decision) {
                        eprintln!(
                            "bridge: too many answers for unknown approvals; dropped {request_id:?}"
                        );
                    }
                }
                Ok(Control::SetPermissionMode(_) | Control::SetModel(_)) => {
                    eprintln!(
                        "[WARNING] control_ignored: set_permission_mode and set_model change the next turn of a `session`; a `send` has one turn"
                    );
                }
                Err(error) => eprintln!("bridge: ignoring a control line: {error}"),
            }
        }
        broker.client_gone();
    });
}

/// A plain answer typed at the terminal, for the oldest approval shown.
pub(crate) fn answer_typed(line: &str, typed: &OpenApprovals, broker: &PermissionBroker) {
    let Some(request_id) = typed.oldest() else {
        eprintln!("bridge: no approval is waiting; ignoring {:?}", line.trim());
        return;
    };
    match typed_answer(line) {
        Some(decision) => {
            broker.answer(&request_id, PermissionDecision::new(decision));
        }
        None => eprintln!("bridge: answer y (yes), a (always), n (no) or c (cancel)"),
    }
}
