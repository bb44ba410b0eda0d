//! The Codex channel's default transport: `codex app-server`.
//!
//! ```text
//! codex app-server
//!       [-c model_provider="bridge" -c model_providers.bridge.{name,base_url,wire_api,env_key,…}]
//!       [-c shell_environment_policy.exclude=["BRIDGE_CODEX_API_KEY","CODEX_API_KEY"]]
//!       -c analytics.enabled=false -c check_for_update_on_startup=false
//!       -c tools.update_plan.enabled=true
//!       --disable plugins --disable remote_plugin --disable apps
//! ```
//!
//! then, over stdio (see [`bridge_codex::app_server`]):
//!
//! * `thread/start {cwd, model, approvalPolicy, sandbox, developerInstructions, serviceTier}`
//!   or `thread/resume {threadId, …}` for a request with a `sessionId`/`threadId`;
//! * per turn `turn/start {input: text + localImage…, cwd, model, effort, approvalPolicy,
//!   sandboxPolicy}`: the permission mode, model, effort and cwd apply from that turn on, so a
//!   warm session changes them live;
//! * approvals arrive as server requests and are answered through the turn's broker (the
//!   client over stdin, the ai-bridge file IPC, or denied at once when nobody can answer);
//!   `on-request` is interactive here, unlike `codex exec`.
//!
//! Side effect to know (Codex's, documented in its README): `thread/start` with a cwd and a
//! writable sandbox records that project as trusted in `$CODEX_HOME/config.toml`.

use std::path::PathBuf;

use bridge_codex::app_server::protocol::{
    AskForApproval, SandboxMode, ThreadStartParams, TurnStartParams, UserInput,
};
use bridge_codex::app_server::{AppServerSession, ThreadConfig, session};
use bridge_core::channel::Channel;
use bridge_core::conversation::{Continuity, Conversation};
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::request::{LaunchSettings, McpServer, McpTransport, Request};
use bridge_core::turn::{TurnContext, TurnLimits, interrupted_end};
use futures_util::future::BoxFuture;
use permission_mapper::codex::{self as codex_mode, CodexApproval, CodexSandbox};
use permission_mapper::{PermissionMode, Platform, RequestedMode};
use serde_json::Value;

use crate::{
    DISPLAY_NAME, ID, LaunchEnv, NativeCodex, child_env, connection_args, effort, locate,
    materialize_images, turn_tag,
};

/// Launch settings an app-server turn changes live (`turn/start` overrides), so a change in
/// them does not restart the server.
const LIVE: &[&str] = &["cwd", "reasoningEffort"];

/// The `codex app-server` process for `request`.
pub fn command(codex: &NativeCodex, request: &Request, env: &LaunchEnv) -> CommandSpec {
    let mut command = CommandSpec::new(&codex.program);
    command.arg("app-server");
    connection_args(&mut command, request, env);
    child_env(&mut command, codex, request);
    command.stdin = StdinMode::Piped;
    command
}

/// The approval policy and sandbox of a permission mode, with the notes of what could not be
/// honoured exactly.
fn mode_settings(request: &Request, env: &LaunchEnv) -> (AskForApproval, SandboxMode, Vec<Event>) {
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let platform = env.platform.unwrap_or_else(Platform::current);
    let effective = codex_mode::effective(&requested, platform, &env.overrides);
    let warnings = effective
        .notes
        .iter()
        .map(|note| Event::warning("permission_mode", note.message.clone()))
        .collect();
    let approval = match effective.settings.approval_policy {
        CodexApproval::Never => AskForApproval::Never,
        CodexApproval::OnRequest | CodexApproval::OnFailure => AskForApproval::OnRequest,
    };
    let sandbox = match effective.settings.sandbox {
        CodexSandbox::ReadOnly => SandboxMode::ReadOnly,
        CodexSandbox::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        CodexSandbox::DangerFullAccess => SandboxMode::DangerFullAccess,
    };
    (approval, sandbox, warnings)
}

/// The service tier a request asks for (`serviceTier`: `fast`/`priority` or `flex`).
fn service_tier(request: &Request) -> Option<String> {
    match request.extra.get("serviceTier").and_then(Value::as_str) {
        Some("fast" | "priority") => Some("fast".into()),
        Some("flex") => Some("flex".into()),
        _ => None,
    }
}

/// `thread/start` settings for `request`.
pub fn thread_params(request: &Request, env: &LaunchEnv) -> ThreadStartParams {
    let (approval, sandbox, _) = mode_settings(request, env);
    ThreadStartParams {
        cwd: request.cwd.as_ref().map(|c| c.display().to_string()),
        model: request.model.clone(),
        approval_policy: Some(approval),
        sandbox: Some(sandbox),
        developer_instructions: request.instructions(),
        service_tier: service_tier(request),
        config: mcp_config(&request.mcp_servers),
    }
}

/// The `config` overrides that add `servers` to Codex's (`mcp_servers.<name>`: `command`,
/// `args`, `env` for stdio, `url` and `http_headers` for streamable HTTP; Codex has no SSE
/// transport, so [`AppServerChannel::mcp_support`] does not take it). `None` without servers.
pub fn mcp_config(servers: &[McpServer]) -> Option<serde_json::Map<String, serde_json::Value>> {
    fn table(pairs: &[(String, String)]) -> serde_json::Value {
        serde_json::Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
        )
    }
    let config: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .filter_map(|server| {
            let entry = match &server.transport {
                McpTransport::Stdio { command, args, env } => {
                    serde_json::json!({"command": command, "args": args, "env": table(env)})
                }
                McpTransport::Http { url, headers } => {
                    serde_json::json!({"url": url, "http_headers": table(headers)})
                }
                McpTransport::Sse { .. } => return None,
            };
            Some((format!("mcp_servers.{}", server.name), entry))
        })
        .collect();
    (!config.is_empty()).then_some(config)
}

/// `turn/start` for `request` (its images at `images`), and the warnings of what could not be
/// honoured exactly.
pub fn turn_params(
    request: &Request,
    images: &[PathBuf],
    env: &LaunchEnv,
) -> (TurnStartParams, Vec<Event>) {
    let (approval, sandbox, mut warnings) = mode_settings(request, env);
    let effort = effort(request, &mut warnings).map(str::to_string);
    let mut input = vec![UserInput::Text {
        text: request.message.clone(),
    }];
    input.extend(images.iter().map(|path| UserInput::LocalImage {
        path: path.display().to_string(),
    }));
    let params = TurnStartParams {
        thread_id: String::new(),
        input,
        cwd: request.cwd.as_ref().map(|c| c.display().to_string()),
        approval_policy: Some(approval),
        sandbox_policy: Some(sandbox.into()),
        model: request.model.clone(),
        effort,
    };
    (params, warnings)
}

/// The deadline of each handshake request: `BRIDGE_CODEX_HANDSHAKE_TIMEOUT` seconds, else
/// [`session::DEFAULT_HANDSHAKE_TIMEOUT`].
fn handshake_timeout() -> std::time::Duration {
    bridge_core::turn::seconds_from_env("BRIDGE_CODEX_HANDSHAKE_TIMEOUT")
        .unwrap_or(session::DEFAULT_HANDSHAKE_TIMEOUT)
}

/// A warm Codex conversation: one app-server process and one thread for every turn. The mode,
/// model, effort and cwd change live; a change of what the process was launched with
/// (`baseUrl`, `apiKey`, env, instructions) restarts it and resumes the thread, as does a
/// server that died between turns.
#[derive(Debug, Default)]
pub struct AppServerConversation {
    session: Option<AppServerSession>,
    thread_id: Option<String>,
    launch: Option<LaunchSettings>,
    /// The permission mode of the last turn.
    mode: Option<PermissionMode>,
}

impl AppServerConversation {
    /// A conversation, started by its first turn.
    pub fn new() -> Self {
        AppServerConversation::default()
    }

    /// Starts the server and opens (or resumes) the thread.
    async fn start(
        &mut self,
        request: &Request,
        env: &LaunchEnv,
        ctx: &TurnContext,
    ) -> Result<(), Option<ErrorInfo>> {
        let codex = locate(ctx).await.map_err(Some)?;
        let config = ThreadConfig {
            provider: ID.into(),
            resume: self.thread_id.clone(),
            start: thread_params(request, env),
            mode: RequestedMode::from_option(request.permission_mode.as_deref()).mode,
            handshake_timeout: handshake_timeout(),
        };
        let session = AppServerSession::start(&command(&codex, request, env), config, ctx).await?;
        self.thread_id = Some(session.thread_id().to_string());
        self.launch = Some(request.launch_settings());
        self.session = Some(session);
        Ok(())
    }

    /// [`AppServerConversation::start`] for a turn: a failure ends the turn.
    async fn open(&mut self, request: &Request, env: &LaunchEnv, ctx: &TurnContext) -> bool {
        match self.start(request, env, ctx).await {
            Ok(()) => true,
            Err(Some(info)) => {
                ctx.fail(info, self.thread_id.clone()).await;
                false
            }
            Err(None) => {
                if ctx.cancel.is_cancelled() {
                    let end = interrupted_end(self.thread_id.clone());
                    ctx.emit(Event::TurnEnd(end)).await;
                }
                false
            }
        }
    }

    async fn run(&mut self, request: Request, ctx: TurnContext) {
        if self.thread_id.is_none() {
            self.thread_id.clone_from(&request.session_id);
        }
        let env = LaunchEnv::from_process();
        if let Some(session) = self.session.as_mut()
            && !session.is_alive()
        {
            let pid = session.pid().unwrap_or_default();
            ctx.emit(Event::status(format!(
                "{DISPLAY_NAME} app-server (pid {pid}) exited between turns; restarting it and resuming thread {}",
                self.thread_id.clone().unwrap_or_default()
            )))
            .await;
            self.session = None;
        }
        let settings = request.launch_settings();
        let changed: Vec<&str> = self
            .launch
            .as_ref()
            .map(|running| running.changed(&settings))
            .unwrap_or_default()
            .into_iter()
            .filter(|name| !LIVE.contains(name))
            .collect();
        if !changed.is_empty()
            && let Some(session) = self.session.take()
        {
            ctx.emit(Event::status(format!(
                "restarting the {DISPLAY_NAME} app-server and resuming thread {}: the request changed {}, which it takes only at launch",
                self.thread_id.clone().unwrap_or_default(),
                changed.join(", ")
            )))
            .await;
            session.close(ctx.limits).await;
        }
        let images = match materialize_images(&request.attachments) {
            Ok(images) => images,
            Err(message) => {
                let info = ErrorInfo::new(ErrorCode::InvalidRequest, message);
                return ctx.fail(info, self.thread_id.clone()).await;
            }
        };
        let (params, warnings) = turn_params(&request, &images.paths, &env);
        for warning in warnings {
            ctx.emit(warning).await;
        }
        for name in &images.skipped {
            ctx.emit(Event::warning(
                "attachment_skipped",
                format!("{name} is not an image; Codex only takes images"),
            ))
            .await;
        }
        if self.session.is_none() && !self.open(&request, &env, &ctx).await {
            return;
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let mode: PermissionMode =
            RequestedMode::from_option(request.permission_mode.as_deref()).mode;
        if self.mode.is_some_and(|last| last != mode) {
            // `turn/start` carries the approval policy and sandbox: the change is live.
            let message = format!("permission mode is now {}", mode.as_str());
            ctx.emit(Event::status(message)).await;
        }
        self.mode = Some(mode);
        if !session.turn(params, mode, turn_tag(), &ctx).await
            && let Some(session) = self.session.take()
        {
            session.kill(ctx.limits).await;
        }
        drop(images);
    }
}

impl Conversation for AppServerConversation {
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

    fn prepare<'a>(
        &'a mut self,
        request: &'a Request,
        ctx: &'a TurnContext,
    ) -> BoxFuture<'a, Result<(), ErrorInfo>> {
        Box::pin(async move {
            if self.session.is_some() {
                return Ok(());
            }
            if self.thread_id.is_none() {
                self.thread_id.clone_from(&request.session_id);
            }
            self.start(request, &LaunchEnv::from_process(), ctx)
                .await
                .map_err(|info| {
                    info.unwrap_or_else(|| {
                        ErrorInfo::new(ErrorCode::Interrupted, "the preparation was interrupted")
                    })
                })
        })
    }

    fn pid(&self) -> Option<u32> {
        self.session
            .as_ref()
            .and_then(AppServerSession::pid)
            .and_then(|pid| u32::try_from(pid).ok())
    }
}

/// Codex through `codex app-server` (the default transport).
#[derive(Debug, Default, Clone, Copy)]
pub struct AppServerChannel;

impl Channel for AppServerChannel {
    fn id(&self) -> &'static str {
        ID
    }

    fn display_name(&self) -> &'static str {
        DISPLAY_NAME
    }

    fn dialect(&self) -> MarkerDialect {
        MarkerDialect::THREAD
    }

    fn queries(&self) -> &'static [bridge_core::query::Query] {
        crate::QUERIES
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let mut conversation = AppServerConversation::new();
            let limits = ctx.limits;
            conversation.run(request, ctx).await;
            conversation.close(limits).await;
        })
    }

    fn conversation(&self, _first: &Request) -> Option<Box<dyn Conversation>> {
        Some(Box::new(AppServerConversation::new()))
    }

    /// The thread's `config` takes stdio and streamable HTTP servers ([`mcp_config`]).
    fn mcp_support(&self) -> bridge_core::request::McpSupport {
        bridge_core::request::McpSupport {
            stdio: true,
            http: true,
            sse: false,
        }
    }

    /// `turn/start` takes `localImage` inputs ([`materialize_images`]).
    fn takes_images(&self) -> bool {
        true
    }
}
