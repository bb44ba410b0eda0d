//! The ACP client engine, and the shared channel every ACP provider is made of.
//!
//! Most agent CLIs speak the [Agent Client Protocol](https://agentclientprotocol.com) (JSON-RPC
//! 2.0 over stdio, one message per line): `gemini --acp`, `qwen --acp`, `copilot --acp --stdio`,
//! `opencode acp`, `kimi acp`, `grok agent stdio`. This crate is the client side:
//!
//! * [`rpc`]: JSON-RPC framing (by hand, on bounded lines);
//! * [`session`]: the engine: spawn, handshake with deadlines (`initialize`, `authenticate`,
//!   `session/new` | `session/resume` | `session/load`, mode, model), one `session/prompt` per
//!   turn, `session/cancel` on interrupt, approvals through the turn's permission broker;
//! * [`normalize`]: the pure `session/update` → [`Event`] mapping (snapshot-tested on captures);
//! * [`permission`]: unified decisions → the agent's option ids, and each mode's policy;
//! * [`AcpProvider`] + [`AcpChannel`]: what a provider crate declares (argv, env, modes, auth,
//!   tested version) and the [`Channel`] built from it. A provider crate is data:
//!
//! ```
//! use bridge_acp::{AcpChannel, AcpProvider};
//! use permission_mapper::PermissionMode;
//!
//! const PROBE: sdk_probe::ProbeSpec = sdk_probe::ProbeSpec {
//!     install_hint: "npm i -g my-agent",
//!     ..sdk_probe::ProbeSpec::new("mine", "My Agent", &["my-agent"])
//! };
//! pub const PROVIDER: AcpProvider = AcpProvider {
//!     args: &["acp"],
//!     api_key_env: &["MY_AGENT_API_KEY"],
//!     modes: &[(PermissionMode::Plan, &["plan"])],
//!     ..AcpProvider::new(PROBE)
//! };
//! let channel = AcpChannel::new(&PROVIDER);
//! # use bridge_core::Channel;
//! assert_eq!(channel.id(), "mine");
//! ```
//!
//! One agent process serves one session; today the channel runs one turn per `send` and then
//! shuts the agent down, but [`session::AcpSession`] outlives a turn, so a daemon can keep it.

#![deny(missing_docs)]

pub mod history;
pub mod models;
pub mod normalize;
pub mod permission;
pub mod rpc;
pub mod session;

use std::path::PathBuf;
use std::time::Duration;

use bridge_core::channel::Channel;
use bridge_core::conversation::{Continuity, Conversation};
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::request::{Attachment, LaunchSettings, McpServer, McpTransport, Request};
use bridge_core::turn::{TurnContext, TurnLimits};
use futures_util::future::BoxFuture;
use permission_mapper::{PermissionMode, RequestedMode};
use serde_json::{Value, json};

pub use normalize::AcpNormalizer;
pub use session::{AcpSession, EmptyTurn, SessionConfig, SessionStrategy};

/// Everything a provider crate declares about its ACP agent. `const`-constructible: start from
/// [`AcpProvider::new`] and override fields.
#[derive(Debug, Clone, Copy)]
pub struct AcpProvider {
    /// Binary lookup, version range, install hint, auth hints (also used by `bridge system`).
    pub probe: sdk_probe::ProbeSpec,
    /// Arguments that start the agent in ACP mode (`["--acp"]`).
    pub args: &'static [&'static str],
    /// Variables always set for the agent.
    pub env: &'static [(&'static str, &'static str)],
    /// Variables set only when the bridge's own environment does not set them.
    pub env_defaults: &'static [(&'static str, &'static str)],
    /// Variables that receive the request's `baseUrl`.
    pub base_url_env: &'static [&'static str],
    /// Variables that receive the request's `apiKey`.
    pub api_key_env: &'static [&'static str],
    /// A variable that receives the request's `model` (instead of selecting it over ACP).
    pub model_env: Option<&'static str>,
    /// A flag that receives the request's `model` (instead of selecting it over ACP).
    pub model_arg: Option<&'static str>,
    /// A variable that receives the request's `reasoningEffort` (otherwise it is selected over
    /// ACP through a `thought_level` config option, or reported as not supported).
    pub reasoning_effort_env: Option<&'static str>,
    /// The agent's session modes (or mode config values) for each permission mode, preferred
    /// first; modes not listed keep the agent's default and the bridge applies the mode's policy.
    pub modes: &'static [(PermissionMode, &'static [&'static str])],
    /// Variables set for a permission mode (for agents configured through the environment).
    pub mode_env: &'static [(PermissionMode, &'static str, &'static str)],
    /// Auth method ids the bridge may use when the agent requires authentication, preferred
    /// first (only methods that need no interaction, such as an API key from the environment).
    pub auth_methods: &'static [&'static str],
    /// A variable whose value, when set, is the preferred auth method id.
    pub auth_method_env: Option<&'static str>,
    /// Authenticate right after `initialize`, when one of [`AcpProvider::auth_methods`] is
    /// offered (the agent may not say it requires it).
    pub authenticate_first: bool,
    /// Why resuming a session over ACP must not be attempted with this CLI (a known-broken
    /// `session/load`); a request with a session id then fails at once with this reason.
    pub resume_broken: Option<&'static str>,
    /// A `session/load` that replays no history is reported as an unknown session (default
    /// true). ACP requires a load to replay the whole conversation, and some agents (Qwen Code
    /// 0.15.10) answer a load of an unknown id with a fresh, empty session instead of an error.
    pub empty_load_is_unknown: bool,
    /// Retry and error notices the agent sends as message text.
    pub text_notices: normalize::TextNotices,
    /// Kinds of the agent's tools by name, for tool calls that carry no `kind`.
    pub tool_kinds: &'static [(&'static str, bridge_core::event::ToolKind)],
    /// A turn that ends normally without any output is an error (an agent that swallows API
    /// errors).
    pub empty_turn: Option<session::EmptyTurn>,
    /// Appended to the error when the agent requires an authentication the bridge cannot
    /// perform (another way to run the provider, for instance).
    pub auth_hint: Option<&'static str>,
    /// How long the agent is left running after its last prompt before its stdin is closed:
    /// for an agent that records the turn's answer asynchronously after answering the prompt
    /// and does not wait for that write when its input ends (zero: closed at once).
    pub close_settle: std::time::Duration,
}

impl AcpProvider {
    /// A provider with no arguments, no environment and no mode table.
    pub const fn new(probe: sdk_probe::ProbeSpec) -> Self {
        AcpProvider {
            probe,
            args: &[],
            env: &[],
            env_defaults: &[],
            base_url_env: &[],
            api_key_env: &[],
            model_env: None,
            model_arg: None,
            reasoning_effort_env: None,
            modes: &[],
            mode_env: &[],
            auth_methods: &[],
            auth_method_env: None,
            authenticate_first: false,
            empty_load_is_unknown: true,
            resume_broken: None,
            text_notices: normalize::TextNotices {
                status_prefix: None,
                error_prefix: None,
            },
            tool_kinds: &[],
            empty_turn: None,
            auth_hint: None,
            close_settle: std::time::Duration::ZERO,
        }
    }

    /// The provider key.
    pub const fn id(&self) -> &'static str {
        self.probe.id
    }

    /// The agent's mode ids for `mode`.
    pub fn mode_ids(&self, mode: PermissionMode) -> Vec<String> {
        self.modes
            .iter()
            .filter(|(m, _)| *m == mode)
            .flat_map(|(_, ids)| ids.iter().map(|s| s.to_string()))
            .collect()
    }
}

/// How a turn will be run: the process, the session settings, the prompt, and warnings about
/// what could not be honoured.
#[derive(Debug, Clone)]
pub struct Launch {
    /// What to spawn.
    pub command: CommandSpec,
    /// Session settings.
    pub config: SessionConfig,
    /// The ACP prompt content blocks.
    pub prompt: Vec<Value>,
    /// Warnings to emit before the turn.
    pub warnings: Vec<Event>,
}

/// The ACP prompt for `request`: image attachments as `image` blocks (other files as embedded
/// `resource` blocks), then the message, then `agentPrompt` as a separate text block (ACP has
/// no system prompt). `agent` is the `initialize` result, whose `promptCapabilities` decide
/// what may be sent; what may not is dropped with a warning.
pub fn prompt_blocks(request: &Request, agent: &Value) -> Result<(Vec<Value>, Vec<Event>), String> {
    let caps = agent
        .get("agentCapabilities")
        .and_then(|c| c.get("promptCapabilities"));
    let can = |key: &str| caps.and_then(|c| c.get(key)).and_then(Value::as_bool) == Some(true);
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    for (n, attachment) in request.attachments.iter().enumerate() {
        let media_type = attachment.media_type();
        let data = attachment.to_base64().map_err(|e| e.to_string())?;
        // The name becomes a resource URI: unnamed files get one without spaces.
        let name = match attachment {
            Attachment::Inline {
                file_name: None, ..
            } => format!("attachment-{}", n + 1),
            named => named.shown_name(n),
        };
        if media_type.starts_with("image/") {
            if can("image") {
                blocks.push(json!({"type": "image", "mimeType": media_type, "data": data}));
            } else {
                warnings.push(Event::warning(
                    "attachment_dropped",
                    format!("the agent does not accept images (promptCapabilities.image); {name} was not sent"),
                ));
            }
        } else if can("embeddedContext") {
            blocks.push(json!({"type": "resource", "resource": {
                "uri": format!("attachment:///{name}"), "mimeType": media_type, "blob": data}}));
        } else {
            warnings.push(Event::warning(
                "attachment_dropped",
                format!("the agent does not accept embedded files (promptCapabilities.embeddedContext); {name} was not sent"),
            ));
        }
    }
    let text = if request.message.is_empty() && !blocks.is_empty() {
        "Please analyze the attached image(s).".to_string()
    } else {
        request.message.clone()
    };
    // ACP has no system prompt: the IDE context goes before the message.
    if let Some(context) = request.ide_context() {
        blocks.push(json!({"type": "text", "text": context}));
    }
    blocks.push(json!({"type": "text", "text": text}));
    if let Some(prompt) = &request.agent_prompt {
        blocks.push(
            json!({"type": "text", "text": format!("## Agent Role and Instructions\n\n{prompt}")}),
        );
    }
    Ok((blocks, warnings))
}

/// Builds the process and session settings for one turn of `provider`.
pub fn launch(provider: &AcpProvider, program: PathBuf, request: &Request) -> Launch {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in provider.args {
        command.arg(*arg);
    }
    for (key, value) in provider.env {
        command.env(*key, *value);
    }
    for (key, value) in provider.env_defaults {
        if std::env::var_os(key).is_none() {
            command.env(*key, *value);
        }
    }
    if let Some(url) = &request.base_url {
        for key in provider.base_url_env {
            command.env(*key, url);
        }
        if provider.base_url_env.is_empty() {
            warnings.push(Event::warning(
                "base_url",
                format!(
                    "{} takes its endpoint from its own configuration; `baseUrl` was not applied",
                    provider.id()
                ),
            ));
        }
    }
    if let Some(key) = &request.api_key {
        for var in provider.api_key_env {
            command.env(*var, key.expose());
        }
        if provider.api_key_env.is_empty() {
            warnings.push(Event::warning(
                "api_key",
                format!(
                    "{} takes its credentials from its own configuration; `apiKey` was not applied",
                    provider.id()
                ),
            ));
        }
    }
    let mut acp_model = None;
    if let Some(model) = &request.model {
        match (provider.model_env, provider.model_arg) {
            (Some(var), _) => {
                command.env(var, model);
            }
            (None, Some(flag)) => {
                command.arg(flag).arg(model);
            }
            (None, None) => acp_model = Some(model.clone()),
        }
    }
    let mut acp_effort = None;
    if let Some(effort) = &request.reasoning_effort {
        match provider.reasoning_effort_env {
            Some(var) => {
                command.env(var, effort);
            }
            None => acp_effort = Some(effort.clone()),
        }
    }
    if request.disable_thinking {
        warnings.push(Event::warning(
            "disable_thinking",
            format!(
                "{} cannot switch thinking off over ACP; `disableThinking` was ignored",
                provider.id()
            ),
        ));
    }
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    if let Some(warning) = requested.warning() {
        warnings.push(Event::warning("permission_mode", warning.to_string()));
    }
    for (mode, key, value) in provider.mode_env {
        if *mode == requested.mode {
            command.env(*key, *value);
        }
    }
    let cwd = request
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    command.cwd = Some(cwd.clone());
    command.stdin = StdinMode::Piped;
    let config = SessionConfig {
        provider: provider.id().to_string(),
        cwd,
        resume: request.session_id.clone(),
        mcp_servers: request.mcp_servers.iter().map(acp_mcp_server).collect(),
        model: acp_model,
        effort: acp_effort,
        mode: requested.mode,
        mode_ids: provider.mode_ids(requested.mode),
        auth_methods: provider
            .auth_method_env
            .and_then(|var| std::env::var(var).ok())
            .filter(|m| !m.trim().is_empty())
            .into_iter()
            .chain(provider.auth_methods.iter().map(|s| s.to_string()))
            .collect(),
        authenticate_first: provider.authenticate_first,
        empty_load_is_unknown: provider.empty_load_is_unknown,
        keep_history: false,
        handshake_timeout: session::handshake_timeout_from_env(),
        notices: provider.text_notices,
        tool_kinds: provider.tool_kinds,
        empty_turn: provider.empty_turn,
        auth_hint: provider.auth_hint,
        close_settle: provider.close_settle,
    };
    Launch {
        command,
        config,
        prompt: Vec::new(),
        warnings,
    }
}

/// Runs one turn of `provider` for `request` with the CLI at `program`: spawn, handshake, one
/// prompt, shutdown. Always ends with exactly one [`Event::TurnEnd`].
pub async fn run_turn(
    provider: &AcpProvider,
    program: PathBuf,
    request: Request,
    ctx: TurnContext,
) {
    if let Some(info) = resume_refused(provider, &request) {
        return ctx.fail(info, request.session_id.clone()).await;
    }
    run_launch(launch(provider, program, &request), request, ctx).await;
}

/// A resume the provider cannot do over ACP ([`AcpProvider::resume_broken`]), refused before
/// anything is spawned that could damage the saved conversation.
fn resume_refused(provider: &AcpProvider, request: &Request) -> Option<ErrorInfo> {
    let (id, reason) = (request.session_id.as_ref()?, provider.resume_broken?);
    Some(ErrorInfo::new(
        ErrorCode::Provider,
        format!(
            "{} cannot resume session {id} over ACP: {reason}",
            provider.probe.display_name
        ),
    ))
}

/// Runs one turn from a prepared [`Launch`] (what [`run_turn`] does after [`launch`]; tests and
/// embedders use it to adjust the process or the deadlines first).
pub async fn run_launch(launch: Launch, request: Request, ctx: TurnContext) {
    let Some(mut session) = start_session(launch, request.session_id.clone(), &ctx).await else {
        return;
    };
    if prompt_turn(&mut session, &request, &ctx).await {
        session.shutdown(&ctx).await;
    } else {
        session.terminate(&ctx).await;
    }
}

/// Emits the launch's warnings and starts the agent; when that fails, ends the turn (as failed,
/// or as interrupted) and returns `None`.
async fn start_session(
    launch: Launch,
    session_id: Option<String>,
    ctx: &TurnContext,
) -> Option<AcpSession> {
    for warning in launch.warnings {
        if !ctx.emit(warning).await {
            return None;
        }
    }
    match AcpSession::start(&launch.command, launch.config, ctx).await {
        Ok(session) => Some(session),
        Err(Some(info)) => {
            ctx.fail(info, session_id).await;
            None
        }
        Err(None) => {
            if ctx.cancel.is_cancelled() {
                let end = bridge_core::turn::interrupted_end(session_id);
                ctx.emit(Event::TurnEnd(end)).await;
            }
            None
        }
    }
}

/// One prompt of `request` on `session` (its content blocks as the agent can take them).
/// Returns whether the session can take another prompt.
async fn prompt_turn(session: &mut AcpSession, request: &Request, ctx: &TurnContext) -> bool {
    let (prompt, warnings) = match prompt_blocks(request, session.agent()) {
        Ok(built) => built,
        Err(message) => {
            let info = ErrorInfo::new(ErrorCode::InvalidRequest, message);
            ctx.fail(info, Some(session.session_id().to_string())).await;
            return true;
        }
    };
    for warning in warnings {
        ctx.emit(warning).await;
    }
    session.prompt(prompt, ctx).await
}

/// A [`Channel`] for one ACP provider.
#[derive(Debug, Clone, Copy)]
pub struct AcpChannel {
    provider: &'static AcpProvider,
}

impl AcpChannel {
    /// The channel of `provider`.
    pub const fn new(provider: &'static AcpProvider) -> Self {
        AcpChannel { provider }
    }

    /// The provider's declaration.
    pub fn provider(&self) -> &'static AcpProvider {
        self.provider
    }
}

/// Where `provider`'s executable is (see [`sdk_probe::resolve_binary`]).
pub fn resolve_cli(provider: &AcpProvider) -> Option<PathBuf> {
    sdk_probe::resolve_binary(&provider.probe, &sdk_probe::ProbeEnv::from_process()).map(|r| r.path)
}

/// An MCP server as ACP's `session/new` carries it (`env` and `headers` as name/value
/// lists; stdio servers without a `type`).
fn acp_mcp_server(server: &McpServer) -> Value {
    let pairs = |pairs: &[(String, String)]| -> Vec<Value> {
        pairs
            .iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect()
    };
    match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            json!({"name": server.name, "command": command, "args": args, "env": pairs(env)})
        }
        McpTransport::Http { url, headers } | McpTransport::Sse { url, headers } => json!({
            "type": server.transport.kind(), "name": server.name, "url": url,
            "headers": pairs(headers),
        }),
    }
}

impl Channel for AcpChannel {
    fn id(&self) -> &'static str {
        self.provider.probe.id
    }

    fn display_name(&self) -> &'static str {
        self.provider.probe.display_name
    }

    /// Every ACP agent takes stdio MCP servers (the protocol requires it); HTTP and SSE only
    /// where its own `mcpCapabilities` say so, which is known once it runs: not offered.
    fn mcp_support(&self) -> bridge_core::request::McpSupport {
        bridge_core::request::McpSupport {
            stdio: true,
            ..bridge_core::request::McpSupport::default()
        }
    }

    /// Image attachments go as `image` blocks where the agent's `promptCapabilities.image`
    /// allows ([`prompt_blocks`]; else they are dropped with a warning). Every ACP agent
    /// installed here advertises it (Gemini CLI 0.61.0, Qwen Code 0.15.10, Copilot CLI 1.0.102,
    /// opencode 1.18.33, Kimi CLI 1.51.0); xAI's `grok` could not be checked.
    fn takes_images(&self) -> bool {
        true
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        let provider = self.provider;
        Box::pin(async move {
            match locate(provider, &ctx).await {
                Ok(program) => run_turn(provider, program, request, ctx).await,
                Err(info) => ctx.fail(info, request.session_id.clone()).await,
            }
        })
    }

    fn conversation(&self, _first: &Request) -> Option<Box<dyn Conversation>> {
        Some(Box::new(AcpConversation::new(self.provider)))
    }
}

/// Finds `provider`'s CLI (the error names the package that installs it), reports where it was
/// found and checks its version next to the turn.
async fn locate(provider: &'static AcpProvider, ctx: &TurnContext) -> Result<PathBuf, ErrorInfo> {
    let resolution = sdk_probe::resolve(&provider.probe, &sdk_probe::ProbeEnv::from_process());
    let Some(resolved) = resolution.found else {
        let probe = &provider.probe;
        let overrides = if probe.env_overrides.is_empty() {
            String::new()
        } else {
            format!(" or set {}", probe.env_overrides.join(" / "))
        };
        return Err(ErrorInfo::new(
            ErrorCode::CliNotFound,
            format!(
                "{} (`{}`) not found on PATH or in the usual install directories; install it with `{}`{overrides}",
                probe.display_name,
                probe.binaries.first().copied().unwrap_or(probe.id),
                probe.pinned_install_hint()
            ),
        ));
    };
    for warning in resolution.warnings {
        ctx.emit(Event::warning("cli_path", warning)).await;
    }
    if let Some(check) = sdk_probe::turn_version_check(provider.probe, &resolved) {
        ctx.warn_later("untested_version", check);
    }
    Ok(resolved.path)
}

/// A warm ACP conversation: one agent process and one ACP session for every turn
/// (`session/prompt` again); the permission mode and the model change through the session's
/// own methods; an agent that died between turns is restarted and resumes the session.
#[derive(Debug)]
pub struct AcpConversation {
    provider: &'static AcpProvider,
    session: Option<AcpSession>,
    session_id: Option<String>,
    /// The model the running agent was started with or switched to.
    model: Option<String>,
    /// What the running agent was launched with.
    launch: Option<LaunchSettings>,
}

impl AcpConversation {
    /// A conversation with `provider`'s agent, started by the first turn.
    pub fn new(provider: &'static AcpProvider) -> Self {
        AcpConversation {
            provider,
            session: None,
            session_id: None,
            model: None,
            launch: None,
        }
    }

    async fn run(&mut self, request: Request, ctx: TurnContext) {
        let provider = self.provider;
        if self.session_id.is_none() {
            self.session_id.clone_from(&request.session_id);
        }
        if let Some(session) = self.session.as_mut()
            && !session.is_alive()
        {
            let pid = session.pid().unwrap_or_default();
            ctx.emit(Event::status(format!(
                "{} (pid {pid}) exited between turns; restarting it and resuming session {}",
                provider.probe.display_name,
                self.session_id.clone().unwrap_or_default()
            )))
            .await;
            self.session = None;
        }
        let launch_settings = request.launch_settings();
        let changed = self
            .launch
            .as_ref()
            .map(|running| running.changed(&launch_settings))
            .unwrap_or_default();
        if !changed.is_empty()
            && let Some(session) = self.session.take()
        {
            ctx.emit(Event::status(format!(
                "restarting {} and resuming session {}: the request changed {}, which it takes only at launch",
                provider.probe.display_name,
                self.session_id.clone().unwrap_or_default(),
                changed.join(", ")
            )))
            .await;
            session.shutdown(&ctx).await;
        }
        let mode = RequestedMode::from_option(request.permission_mode.as_deref()).mode;
        if let Some(session) = self.session.as_mut() {
            let env_bound = provider.mode_env.iter().any(|(m, _, _)| *m == mode)
                != provider
                    .mode_env
                    .iter()
                    .any(|(m, _, _)| *m == session.mode());
            if env_bound {
                ctx.emit(Event::status(format!(
                    "restarting {} to change the permission mode to {}: it takes that mode from its environment",
                    provider.probe.display_name,
                    mode.as_str()
                )))
                .await;
                if let Some(session) = self.session.take() {
                    session.shutdown(&ctx).await;
                }
            } else {
                let model = (request.model != self.model).then(|| request.model.clone());
                // An agent that died or a consumer that went away is reported by the prompt.
                let _ = session
                    .reconfigure(&ctx, mode, provider.mode_ids(mode), model.flatten())
                    .await;
                self.model.clone_from(&request.model);
            }
        }
        if self.session.is_none() {
            let program = match locate(provider, &ctx).await {
                Ok(program) => program,
                Err(info) => return ctx.fail(info, self.session_id.clone()).await,
            };
            let mut first = request.clone();
            first.session_id.clone_from(&self.session_id);
            if let Some(info) = resume_refused(provider, &first) {
                return ctx.fail(info, first.session_id).await;
            }
            let launch = launch(provider, program, &first);
            let session = start_session(launch, self.session_id.clone(), &ctx).await;
            let Some(session) = session else { return };
            self.model.clone_from(&request.model);
            self.launch = Some(launch_settings);
            self.session_id = Some(session.session_id().to_string());
            self.session = Some(session);
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if !prompt_turn(session, &request, &ctx).await
            && let Some(session) = self.session.take()
        {
            session.terminate(&ctx).await;
        }
    }
}

impl Conversation for AcpConversation {
    fn continuity(&self) -> Continuity {
        Continuity::WarmProcess
    }

    fn turn<'a>(&'a mut self, request: Request, ctx: TurnContext) -> BoxFuture<'a, ()> {
        Box::pin(self.run(request, ctx))
    }

    fn close<'a>(&'a mut self, limits: TurnLimits) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(session) = self.session.take() {
                session.close(limits).await;
            }
        })
    }

    fn pid(&self) -> Option<u32> {
        self.session
            .as_ref()
            .and_then(AcpSession::pid)
            .and_then(|pid| u32::try_from(pid).ok())
    }
}

/// How long an ACP provider may take to answer each handshake request by default.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = session::DEFAULT_HANDSHAKE_TIMEOUT;

#[cfg(test)]
mod tests {
    use super::*;

    fn request(attachments: Vec<Attachment>) -> Request {
        Request {
            attachments,
            agent_prompt: Some("Be brief.".into()),
            ..Request::from_prompt("look")
        }
    }

    #[test]
    fn the_ide_context_goes_before_the_message() {
        let request = Request::from_json(
            br#"{"message":"explain this","openedFiles":{"active":"/p/a.rs","selection":{"startLine":1,"endLine":1,"selectedText":"fn a() {}"}}}"#,
        )
        .unwrap();
        let (blocks, _) = prompt_blocks(&request, &json!({})).unwrap();
        let context = blocks[0]["text"].as_str().unwrap();
        assert!(context.starts_with("<ide-context>") && context.contains("fn a() {}"));
        assert_eq!(blocks[1], json!({"type": "text", "text": "explain this"}));
    }

    #[test]
    fn prompt_blocks_follow_the_agents_capabilities() {
        let png = Attachment::Inline {
            file_name: Some("a.png".into()),
            media_type: "image/png".into(),
            data: "data:image/png;base64,iVBORw0KGgo=".into(),
        };
        let pdf = Attachment::Inline {
            file_name: Some("b.pdf".into()),
            media_type: "application/pdf".into(),
            data: "JVBERi0=".into(),
        };
        let all = json!({"agentCapabilities": {"promptCapabilities": {"image": true, "embeddedContext": true}}});
        let (blocks, warnings) =
            prompt_blocks(&request(vec![png.clone(), pdf.clone()]), &all).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            blocks[0],
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
        );
        assert_eq!(blocks[1]["type"], "resource");
        assert_eq!(blocks[1]["resource"]["blob"], "JVBERi0=");
        assert_eq!(blocks[2], json!({"type": "text", "text": "look"}));
        assert!(blocks[3]["text"].as_str().unwrap().ends_with("Be brief."));

        let (blocks, warnings) = prompt_blocks(&request(vec![png, pdf]), &json!({})).unwrap();
        assert_eq!(
            blocks.len(),
            2,
            "only text is sent to an agent without capabilities"
        );
        assert_eq!(warnings.len(), 2);
    }

    #[test]
    fn launch_maps_request_fields_to_the_providers_settings() {
        const P: AcpProvider = AcpProvider {
            args: &["--acp"],
            base_url_env: &["X_BASE"],
            api_key_env: &["X_KEY"],
            model_env: Some("X_MODEL"),
            modes: &[(PermissionMode::Plan, &["plan", "read-only"])],
            mode_env: &[(PermissionMode::Plan, "X_PERMS", "deny")],
            ..AcpProvider::new(sdk_probe::ProbeSpec::new("x", "X", &["x"]))
        };
        let mut request = Request::from_prompt("hi");
        request.base_url = Some("http://127.0.0.1:1".into());
        request.model = Some("m1".into());
        request.permission_mode = Some("plan".into());
        request.session_id = Some("s-1".into());
        let l = launch(&P, PathBuf::from("/bin/x"), &request);
        let env: Vec<(String, String)> = l
            .command
            .env
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        assert!(env.contains(&("X_BASE".into(), "http://127.0.0.1:1".into())));
        assert!(env.contains(&("X_MODEL".into(), "m1".into())));
        assert!(env.contains(&("X_PERMS".into(), "deny".into())));
        assert_eq!(l.command.args, vec![std::ffi::OsString::from("--acp")]);
        assert_eq!(l.config.model, None, "the model went to the environment");
        assert_eq!(l.config.mode_ids, vec!["plan", "read-only"]);
        assert_eq!(l.config.resume.as_deref(), Some("s-1"));
        assert_eq!(l.command.stdin, StdinMode::Piped);
    }
}
