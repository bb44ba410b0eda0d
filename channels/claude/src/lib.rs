//! The Claude Code channel.
//!
//! How it launches the CLI (facts: `shared/reference/real-clis-anthropic-gemini.md` §2):
//!
//! ```text
//! claude --input-format stream-json --output-format stream-json --verbose
//!        --include-partial-messages --permission-prompt-tool stdio
//!        [--resume <sessionId>] [--model <m>]
//!        --permission-mode <mapped> [--effort <level>] [--append-system-prompt <agentPrompt>]
//! ```
//!
//! * the prompt goes to stdin as one stream-json user message, never into argv;
//! * stdin stays open until the `result` line (then closing it makes the CLI exit), so an
//!   interrupt can be sent as a stream-json `control_request`;
//! * `baseUrl` / `apiKey` from the request become `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY`
//!   for the child only;
//! * `bypassPermissions` as root needs `IS_SANDBOX=1`, which the channel sets and reports;
//! * file checkpointing is on (`CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true`), so that
//!   `rewindFiles` can restore what a turn changed ([`control`]);
//! * approvals arrive as `can_use_tool` control requests and are answered through the turn's
//!   permission broker ([`approvals`]).
//!
//! The output is normalized by [`normalize::ClaudeNormalizer`], which CLIs printing the same
//! stream-json shape reuse with their own [`normalize::Dialect`] (Qwen Code's `json` transport).
//! The normalizer, its delta modes and the approval responder are the Claude stream-json
//! engine (`engines/claude-stream`, [`bridge_claude_stream`]); this crate re-exports them.
//!
//! This crate also launches the Anthropic-compatible relays (`minimax`, `zcode`, and the
//! user-defined ones): Claude Code pointed at another vendor's endpoint. They are data,
//! [`relay::ClaudeRelay`] profiles kept here next to the launch, which the facade registers
//! once each as a [`relay::RelayChannel`], so no provider crate has to depend on this one.
//! Their streaming quirk (deltas that are cumulative or corrective snapshots) is handled in
//! the normalizer, per content block, by the delta mode a profile declares ([`deltas`]).

#![deny(missing_docs)]

pub mod control;
pub mod history;
pub mod mcp;
pub mod models;
pub mod relay;
pub mod session;

pub use bridge_claude_stream::{approvals, deltas, normalize};

use std::path::PathBuf;

use bridge_core::channel::Channel;
use bridge_core::event::Event;
use bridge_core::process::{CommandSpec, PrivateFile, StdinMode};
use bridge_core::request::{McpServer, McpTransport, Request};
use bridge_core::turn::{CloseStdin, DeferredWrite, ProcessTurn, TurnContext};
use bridge_one_shot::{BuildError, OneShot, OneShotChannel, OneShotTurn, set_endpoint_env};
use futures_util::future::BoxFuture;
use permission_mapper::{RequestedMode, claude as claude_mode};
use serde_json::{Value, json};

pub use normalize::ClaudeNormalizer;

/// Provider key.
pub const ID: &str = "claude";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@anthropic-ai/claude-code";

/// Reasoning efforts `--effort` accepts.
const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// The Claude Code channel.
#[derive(Debug, Default, Clone)]
pub struct ClaudeChannel;

impl ClaudeChannel {
    /// The channel.
    pub fn new() -> Self {
        ClaudeChannel
    }
}

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: sdk_probe::ProbeSpec = sdk_probe::ProbeSpec {
    id: ID,
    display_name: "Claude Code",
    binaries: &["claude"],
    env_overrides: &["CLAUDE_CODE_PATH", "CLAUDE_BIN", "CLAUDE_CLI_PATH"],
    install_dirs: &[".claude/local", ".claude/bin"],
    version_args: sdk_probe::DEFAULT_VERSION_ARGS,
    version_env: &[("DISABLE_AUTOUPDATER", "1")],
    tested: Some(sdk_probe::VersionRange::new(
        sdk_probe::Version::new(2, 1, 197),
        sdk_probe::Version::new(2, 1, 332),
    )),
    install_hint: "npm i -g @anthropic-ai/claude-code",
    auth: &[
        sdk_probe::AuthSource::Env("ANTHROPIC_API_KEY"),
        sdk_probe::AuthSource::Env("ANTHROPIC_AUTH_TOKEN"),
        sdk_probe::AuthSource::Env("CLAUDE_CODE_OAUTH_TOKEN"),
        sdk_probe::AuthSource::File(".claude/.credentials.json"),
    ],
};

/// Where the `claude` executable is: `CLAUDE_CODE_PATH` / `CLAUDE_BIN` / `CLAUDE_CLI_PATH`,
/// then PATH, then the usual install directories (see [`sdk_probe::resolve_binary`]).
pub fn resolve_cli() -> Result<sdk_probe::Located, String> {
    sdk_probe::locate(&PROBE, &sdk_probe::ProbeEnv::from_process())
}

/// The stream-json user message carrying the prompt (and images) for stdin.
pub fn user_message(request: &Request) -> Result<String, String> {
    let mut blocks = Vec::new();
    for attachment in &request.attachments {
        let data = attachment.to_base64().map_err(|e| e.to_string())?;
        blocks.push(image_block(&attachment.media_type(), &data));
    }
    let content = if blocks.is_empty() {
        Value::String(request.message.clone())
    } else {
        blocks.push(json!({"type": "text", "text": request.message}));
        Value::Array(blocks)
    };
    let line = json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": null,
        "session_id": "",
    });
    Ok(format!("{line}\n"))
}

fn image_block(media_type: &str, data: &str) -> Value {
    if media_type.starts_with("image/") {
        json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
    } else {
        json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}})
    }
}

/// The `--mcp-config` JSON of `servers` (Claude Code's `.mcp.json` shape: `mcpServers`, by
/// name, `type` `stdio` / `http` / `sse`).
///
/// ```
/// use bridge_core::request::{McpServer, McpTransport};
/// let servers = [
///     McpServer { name: "probe".into(), transport: McpTransport::Stdio {
///         command: "node".into(), args: vec!["probe.mjs".into()], env: vec![("K".into(), "v".into())] } },
///     McpServer { name: "web".into(), transport: McpTransport::Http {
///         url: "http://127.0.0.1:9/mcp".into(), headers: vec![] } },
/// ];
/// assert_eq!(bridge_channel_claude::mcp_config(&servers), serde_json::json!({"mcpServers": {
///     "probe": {"type": "stdio", "command": "node", "args": ["probe.mjs"], "env": {"K": "v"}},
///     "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {}},
/// }}));
/// ```
pub fn mcp_config(servers: &[McpServer]) -> Value {
    fn object(pairs: &[(String, String)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }
    let entries = servers
        .iter()
        .map(|server| {
            let entry = match &server.transport {
                McpTransport::Stdio { command, args, env } => {
                    json!({"type": "stdio", "command": command, "args": args, "env": object(env)})
                }
                McpTransport::Http { url, headers } | McpTransport::Sse { url, headers } => {
                    json!({"type": server.transport.kind(), "url": url, "headers": object(headers)})
                }
            };
            (server.name.clone(), entry)
        })
        .collect::<serde_json::Map<_, _>>();
    json!({ "mcpServers": entries })
}

/// The stream-json control request that interrupts the running turn.
pub const INTERRUPT_REQUEST: &str = "{\"type\":\"control_request\",\"request_id\":\"bridge-interrupt\",\"request\":{\"subtype\":\"interrupt\"}}\n";

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    #[cfg(unix)]
    return unsafe { libc::geteuid() } == 0;
    #[cfg(not(unix))]
    false
}

/// Builds the process for one turn, plus warnings about what could not be honoured exactly.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
) -> Result<(ProcessTurn, Vec<Event>), String> {
    let (command, warnings) = build_command(program, request);
    let mode = RequestedMode::from_option(request.permission_mode.as_deref()).mode;
    let turn = ProcessTurn {
        provider: ID.into(),
        command,
        stdin_payload: user_message(request)?.into_bytes(),
        close_stdin: CloseStdin::AfterTurnEnd,
        interrupt_payload: Some(INTERRUPT_REQUEST.as_bytes().to_vec()),
        responder: Some(std::sync::Arc::new(approvals::ClaudeResponder::new(mode))),
        deferred: Some(no_auto_mode_in_plan()),
    };
    Ok((turn, warnings))
}

/// The flags that make `claude` speak stream-json on stdin and stdout. Without `-p`, as the
/// Agent SDK launches it: piped stdout already makes Claude Code non-interactive, and with
/// `-p` (2.1.197) its first answer came about 85 ms later (`scripts/bench-acp.sh`).
pub const STREAM_JSON_ARGS: [&str; 5] = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// The control request (its `request` object) that turns off Claude Code's "auto mode during
/// plan" in its flag settings layer. Entering plan mode live (`set_permission_mode`, or the
/// model's own `EnterPlanMode`) turns that mode on where auto mode is available, and its
/// classifier then approves commands without asking; plan given as the launch flag never does.
/// Off, plan is read-only however it was entered, and its requests reach the bridge's plan
/// policy.
///
/// Sent as a stdin request rather than as `--settings` at launch, which made the first answer
/// about 40 ms later; written at the turn's first `stream_event` ([`no_auto_mode_in_plan`]),
/// when the model request is already out and before any tool can enter plan mode.
pub fn no_auto_mode_in_plan_request() -> Value {
    json!({"subtype": "apply_flag_settings", "settings": {"useAutoModeDuringPlan": false}})
}

/// [`no_auto_mode_in_plan_request`] as a stdin line, written at the first `stream_event` line
/// of a turn (its answer, a `control_response`, is not waited for).
pub fn no_auto_mode_in_plan() -> DeferredWrite {
    let line = json!({"type": "control_request", "request_id": "bridge-no-auto-plan",
                      "request": no_auto_mode_in_plan_request()});
    DeferredWrite {
        marker: "\"type\":\"stream_event\"",
        bytes: format!("{line}\n").into_bytes(),
    }
}

/// The `claude` stream-json command for `request` (flags, environment, working directory;
/// stdin piped), plus warnings about what could not be honoured exactly. The prompt is not in
/// it: it goes to stdin ([`user_message`]), once per turn.
pub fn build_command(program: PathBuf, request: &Request) -> (CommandSpec, Vec<Event>) {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in STREAM_JSON_ARGS {
        command.arg(arg);
    }
    for arg in [
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
    ] {
        command.arg(arg);
    }
    if let Some(id) = &request.session_id {
        command.arg("--resume").arg(id);
    }
    if let Some(model) = &request.model {
        command.arg("--model").arg(model);
    }
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let effective = claude_mode::effective(
        &requested,
        claude_mode::ClaudeContext {
            running_as_root: running_as_root(),
        },
    );
    for arg in effective.settings.args() {
        command.arg(arg);
    }
    for (key, value) in effective.settings.env() {
        command.env(key, value);
    }
    for note in &effective.notes {
        warnings.push(Event::warning("permission_mode", note.message.clone()));
    }
    if let Some(effort) = &request.reasoning_effort {
        if EFFORTS.contains(&effort.as_str()) {
            command.arg("--effort").arg(effort);
        } else {
            warnings.push(Event::warning(
                "reasoning_effort",
                format!("reasoningEffort `{effort}` is not one of {EFFORTS:?}; ignored"),
            ));
        }
    }
    if let Some(prompt) = request.instructions() {
        command.arg("--append-system-prompt").arg(prompt);
    }
    if request.disable_thinking {
        command.env("MAX_THINKING_TOKENS", "0");
    }
    if !request.mcp_servers.is_empty() {
        // A file, not the JSON itself: the servers' env and headers may hold tokens, and a
        // command line is readable by every user.
        let config = mcp_config(&request.mcp_servers).to_string();
        match PrivateFile::new("bridge-claude-mcp-", ".json", config.as_bytes()) {
            Ok(file) => {
                command.arg("--mcp-config").arg(file.path());
                command.files.push(std::sync::Arc::new(file));
            }
            Err(error) => warnings.push(Event::warning(
                "mcp_servers",
                format!(
                    "cannot write the MCP config file ({error}); the turn runs without the request's MCP servers"
                ),
            )),
        }
    }
    // File checkpoints, so that `rewindFiles` can restore what a turn changed (as the
    // plugin's SDK path runs every turn).
    command.env(control::FILE_CHECKPOINTING_ENV, "true");
    set_endpoint_env(
        &mut command,
        request,
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
    );
    command.cwd = request.cwd.clone();
    command.stdin = StdinMode::Piped;
    (command, warnings)
}

/// How the bridge runs `claude` for a turn: bridge-one-shot's process-per-turn engine (locate
/// the CLI, check its version from the cache `bridge system status` keeps, build the turn, run
/// it) with [`build_turn`] and a [`ClaudeNormalizer`].
pub const ONE_SHOT: OneShot = OneShot::new(PROBE, build_one_shot);

fn build_one_shot(
    program: PathBuf,
    request: &Request,
    _env: &sdk_probe::ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let (turn, warnings) = build_turn(program, request)?;
    Ok(OneShotTurn {
        warnings,
        ..OneShotTurn::new(turn, Box::new(ClaudeNormalizer::new()))
    })
}

/// The query commands of the claude provider: the history of a conversation
/// ([`history::QUERIES`]: `getSession`, `getLatestUserMessage`, `listSessions`), `listModels`
/// ([`models::QUERY`]) and the control-request ones ([`control::QUERIES`]: `getContextUsage`,
/// `getUsage`, `rewindFiles`) and the MCP ones ([`mcp`]: `getMcpServerStatus`,
/// `getMcpServerTools`).
pub const QUERIES: &[bridge_core::query::Query] = &[
    history::QUERIES[0],
    history::QUERIES[1],
    history::QUERIES[2],
    models::QUERY,
    control::QUERIES[0],
    control::QUERIES[1],
    control::QUERIES[2],
    mcp::STATUS,
    mcp::TOOLS,
];

impl Channel for ClaudeChannel {
    fn id(&self) -> &'static str {
        ID
    }

    fn queries(&self) -> &'static [bridge_core::query::Query] {
        QUERIES
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        OneShotChannel::new(&ONE_SHOT).send(request, ctx)
    }

    fn conversation(
        &self,
        _first: &Request,
    ) -> Option<Box<dyn bridge_core::conversation::Conversation>> {
        Some(Box::new(session::ClaudeConversation::new()))
    }

    /// `--mcp-config` takes every transport.
    fn mcp_support(&self) -> bridge_core::request::McpSupport {
        bridge_core::request::McpSupport::ALL
    }

    /// Stream-json user messages carry image blocks ([`user_message`]).
    fn takes_images(&self) -> bool {
        true
    }
}
