//! The ACP client engine: one agent process, one JSON-RPC connection, one session.
//!
//! The agent runs on bridge-core's session runner ([`Process`]: own process group, scrubbed
//! environment, bounded stdout lines, stderr tail, deadlines, interrupt, approvals); this module
//! is the protocol on top of it ([`Engine`]).
//!
//! [`AcpSession::start`] spawns the agent and runs the handshake: `initialize` (honest client
//! capabilities: no file system, no terminal), `authenticate` when the agent requires it,
//! `session/new` or, for a given session id, `session/resume` or `session/load` (whichever the
//! agent advertises; a status event says which), then the permission mode and the model. Every
//! handshake request has a deadline of seconds ([`SessionConfig::handshake_timeout`]); an agent
//! that never answers is killed and reported.
//!
//! [`AcpSession::prompt`] runs one turn: `session/prompt` under the turn's wall-clock and idle
//! deadlines, `session/update` notifications normalized into events as they arrive, approval
//! requests answered through the turn's permission broker, `session/cancel` on interrupt. It
//! always ends with exactly one [`Event::TurnEnd`]. The session outlives the turn, so it can be
//! prompted again; [`AcpSession::shutdown`] closes stdin and takes the process group down.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::normalize::{fail_turn, str_at};
use bridge_core::permission::{PermissionRequest, Resolution};
use bridge_core::process::CommandSpec;
use bridge_core::session::{Engine, EngineIo, Lifetime, Process, StepFailure};
use bridge_core::turn::{TurnContext, interrupted_end};
use permission_mapper::PermissionMode;
use serde_json::{Value, json};

use crate::normalize::AcpNormalizer;
use crate::permission::{answer, cancelled, policy};
use crate::rpc::{self, Id, Incoming, METHOD_NOT_FOUND, RpcError};

/// The ACP protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Default deadline of each handshake request (Copilot's first run unpacks itself for seconds).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// At most this many unparsable stdout lines are reported one by one.
const MAX_GARBAGE_WARNINGS: usize = 5;

/// How to run one session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Provider key, used in messages.
    pub provider: String,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// A session to resume instead of starting a new one.
    pub resume: Option<String>,
    /// The `mcpServers` of `session/new` / `session/load` / `session/resume` (ACP's shape).
    pub mcp_servers: Vec<Value>,
    /// A model to select over ACP (`session/set_model` or a `model` config option).
    pub model: Option<String>,
    /// A reasoning effort to select over ACP (a `thought_level` config option).
    pub effort: Option<String>,
    /// The requested permission mode (its policy applies to approval requests).
    pub mode: PermissionMode,
    /// The agent's mode ids (or mode config values, or `configId=value` for any select config
    /// option) that match `mode`, preferred first.
    pub mode_ids: Vec<String>,
    /// Auth method ids to use when the agent requires authentication, preferred first.
    pub auth_methods: Vec<String>,
    /// Authenticate right after `initialize`, before any session request.
    pub authenticate_first: bool,
    /// A `session/load` that replays no history means the agent did not know the session (it
    /// made a new one instead of failing).
    pub empty_load_is_unknown: bool,
    /// Resume with `session/load` only (never `session/resume`, which replays nothing) and
    /// keep what it replays ([`AcpSession::take_history`]): for reading a conversation back.
    /// An empty replay is then an empty history, not an unknown session.
    pub keep_history: bool,
    /// Appended to the "requires authentication" error (see [`crate::AcpProvider::auth_hint`]).
    pub auth_hint: Option<&'static str>,
    /// How long the agent runs on after a prompt before its stdin is closed (see
    /// [`crate::AcpProvider::close_settle`]).
    pub close_settle: Duration,
    /// Deadline of each handshake request.
    pub handshake_timeout: Duration,
    /// Retry and error notices the agent sends as message text.
    pub notices: crate::normalize::TextNotices,
    /// Kinds of the agent's tools by name, for tool calls that carry no `kind`.
    pub tool_kinds: &'static [(&'static str, bridge_core::event::ToolKind)],
    /// A turn that ends normally without any output is an error (an agent that swallows API
    /// errors); the message, and where its log may say more.
    pub empty_turn: Option<EmptyTurn>,
}

/// What a turn without any output means for an agent that swallows API errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmptyTurn {
    /// The error message.
    pub message: &'static str,
    /// The agent's log file, relative to HOME, whose last line containing `pattern` is quoted.
    pub log: Option<&'static str>,
    /// The substring that marks the line to quote.
    pub pattern: &'static str,
}

/// The last line of `path` (its last 256 KiB) containing `pattern`.
fn last_log_line(path: &std::path::Path, pattern: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(256 * 1024)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .find(|l| l.contains(pattern))
        .map(|l| l.chars().take(1000).collect())
}

/// How the session was obtained (reported as a status event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStrategy {
    /// `session/new`.
    New,
    /// `session/resume` (no history replay).
    Resume,
    /// `session/load` (the agent replays the history; the bridge does not re-emit it).
    Load,
}

impl SessionStrategy {
    /// The ACP method.
    pub fn method(self) -> &'static str {
        match self {
            SessionStrategy::New => "session/new",
            SessionStrategy::Resume => "session/resume",
            SessionStrategy::Load => "session/load",
        }
    }
}

/// What went wrong in a request, before it is worded for the client.
#[derive(Debug)]
enum Failure {
    Rpc(RpcError),
    Deadline,
    Exited,
    Interrupted,
    ConsumerGone,
}

impl From<StepFailure> for Failure {
    fn from(failure: StepFailure) -> Self {
        match failure {
            StepFailure::Deadline => Failure::Deadline,
            StepFailure::Exited => Failure::Exited,
            StepFailure::Interrupted => Failure::Interrupted,
            StepFailure::ConsumerGone => Failure::ConsumerGone,
        }
    }
}

/// What the engine does with `session/update` notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Handshake requests: updates are ignored.
    Handshake,
    /// A `session/load` that replays history: updates are counted, not re-emitted.
    Load,
    /// A `session/prompt`: updates are the turn's events.
    Prompt,
}

/// The ACP protocol on the session runner: JSON-RPC lines in, events and answers out.
struct AcpEngine {
    provider: String,
    mode: PermissionMode,
    empty_turn: Option<EmptyTurn>,
    normalizer: AcpNormalizer,
    phase: Phase,
    /// The request whose answer ends the current exchange.
    awaiting: Option<Id>,
    /// The answer to a handshake request.
    answer: Option<Result<Value, RpcError>>,
    /// The bridge sent `session/cancel` for the current prompt.
    interrupting: bool,
    /// Permission requests in flight: the bridge's request id → the agent's JSON-RPC id.
    permission_ids: HashMap<String, Id>,
    session_id: String,
    garbage: usize,
    first_garbage: Option<String>,
    replayed: usize,
    /// The replayed history, folded as it arrives ([`SessionConfig::keep_history`]).
    history: Option<crate::history::Transcript>,
}

impl AcpEngine {
    /// The turn's end from the `session/prompt` answer.
    fn prompt_answer(&mut self, outcome: Result<Value, RpcError>, io: &mut EngineIo) {
        let provider = &self.provider;
        let session_id = Some(self.session_id.clone());
        let events = io.events();
        match outcome {
            Ok(result) => match self.empty_turn {
                Some(empty)
                    if !self.interrupting
                        && !self.normalizer.output_seen()
                        && str_at(&result, "stopReason") == Some("end_turn") =>
                {
                    let logged = empty.log.and_then(|log| {
                        let home = std::env::var_os("HOME")?;
                        last_log_line(&PathBuf::from(home).join(log), empty.pattern)
                    });
                    let message = match logged {
                        Some(line) => format!("{provider}: {} Its log says: {line}", empty.message),
                        None => format!("{provider}: {}", empty.message),
                    };
                    fail_turn(ErrorCode::Provider, message, session_id, events);
                }
                _ => self
                    .normalizer
                    .prompt_result(&result, self.interrupting, events),
            },
            // The agent ended the cancelled turn with an error: the turn was interrupted.
            Err(_) if self.interrupting => {
                self.normalizer.flush(events);
                events.push(Event::TurnEnd(interrupted_end(session_id)));
            }
            Err(e) => {
                // The agent's own error: its words, without its stderr log.
                self.normalizer.flush(events);
                let message = format!("{provider}: {}", e.describe());
                fail_turn(ErrorCode::Provider, message, session_id, events);
            }
        }
    }

    /// Answers a request the agent sent us.
    fn agent_request(&mut self, id: Id, method: &str, params: &Value, io: &mut EngineIo) {
        if method == "session/request_permission" {
            if self.phase != Phase::Prompt || self.interrupting {
                io.write(rpc::response(&id, cancelled()));
                return;
            }
            // The request event goes out (and is dispatched by the runner) before anything
            // can answer it.
            let request = self.normalizer.permission_request(&id, params, io.events());
            self.permission_ids.insert(request.request_id, id);
            return;
        }
        let what = if method.starts_with("fs/") {
            "file-system access"
        } else if method.starts_with("terminal/") {
            "terminals"
        } else {
            "this method"
        };
        let message = format!(
            "the bridge does not offer {what} to agents (`{method}`; its clientCapabilities say so)"
        );
        io.write(rpc::error_response(&id, METHOD_NOT_FOUND, &message));
        io.emit(Event::warning(
            "client_method_refused",
            format!("{} asked for `{method}`; refused: {message}", self.provider),
        ));
    }
}

impl Engine for AcpEngine {
    fn stdout_line(&mut self, text: &str, io: &mut EngineIo) {
        match rpc::parse(text) {
            Ok(Incoming::Response { id, outcome }) => {
                // Anything else answers a request abandoned earlier.
                if self.awaiting.as_ref() != Some(&id) {
                    return;
                }
                self.awaiting = None;
                if self.phase == Phase::Prompt {
                    self.prompt_answer(outcome, io);
                } else {
                    self.answer = Some(outcome);
                    io.done();
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                if method == "session/update" {
                    match self.phase {
                        Phase::Prompt => self.normalizer.update(&params, io.events()),
                        Phase::Load => {
                            self.replayed += 1;
                            if let (Some(history), Some(update)) =
                                (self.history.as_mut(), params.get("update"))
                            {
                                history.push(update);
                            }
                        }
                        Phase::Handshake => {}
                    }
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                self.agent_request(id, &method, &params, io);
            }
            Err(_) => {
                self.garbage += 1;
                if self.first_garbage.is_none() {
                    self.first_garbage = Some(text.to_string());
                }
                if self.garbage <= MAX_GARBAGE_WARNINGS {
                    let shown: String = text.chars().take(300).collect();
                    io.emit(Event::warning(
                        "unparsed_line",
                        format!(
                            "{} printed a stdout line that is not JSON-RPC: {shown}",
                            self.provider
                        ),
                    ));
                }
            }
        }
    }

    fn interrupt(&mut self, io: &mut EngineIo) -> bool {
        self.interrupting = true;
        io.write(rpc::notification(
            "session/cancel",
            json!({"sessionId": self.session_id}),
        ));
        true
    }

    fn answers_permissions(&self) -> bool {
        true
    }

    fn policy(&self, request: &PermissionRequest) -> Option<Resolution> {
        policy(self.mode, request)
    }

    fn decided(
        &mut self,
        request: &PermissionRequest,
        resolution: &Resolution,
        io: &mut EngineIo,
    ) -> bool {
        let Some(id) = self.permission_ids.remove(&request.request_id) else {
            return false;
        };
        let answer = answer(request, resolution);
        io.write(rpc::response(&id, answer.result.clone()));
        io.emit(Event::PermissionDecision(answer.effective.clone()));
        if answer.refused
            && let Some(tool) = &request.tool_use_id
        {
            let message = answer
                .effective
                .note
                .clone()
                .or(resolution.decision.message.clone())
                .unwrap_or_else(|| "The user denied this tool call".into());
            self.normalizer.refused(tool, &message, io.events());
        }
        answer.cancel_turn
    }

    fn abandoned(&mut self, request: &PermissionRequest, io: &mut EngineIo) {
        if let Some(id) = self.permission_ids.remove(&request.request_id) {
            io.write(rpc::response(&id, cancelled()));
        }
    }

    fn cut_short(&mut self, io: &mut EngineIo) {
        self.normalizer.flush(io.events());
    }

    fn finish(&mut self, _exit: Option<&std::process::ExitStatus>, io: &mut EngineIo) {
        self.normalizer.flush(io.events());
    }

    fn session_id(&self) -> Option<String> {
        (!self.session_id.is_empty()).then(|| self.session_id.clone())
    }
}

/// One running agent process with one ACP session.
pub struct AcpSession {
    config: SessionConfig,
    process: Process,
    engine: AcpEngine,
    next_id: i64,
    agent: Value,
    /// The session result (its modes, models and config options), for changes between turns.
    offer: Value,
    session_id: String,
    strategy: SessionStrategy,
    /// A prompt was sent (closing then waits [`SessionConfig::close_settle`]).
    prompted: bool,
}

impl std::fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpSession")
            .field("provider", &self.config.provider)
            .field("session_id", &self.session_id)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

fn error(code: ErrorCode, message: String, stderr_tail: String) -> ErrorInfo {
    ErrorInfo::new(code, message).with_stderr_tail(stderr_tail)
}

/// Reads the handshake deadline from `BRIDGE_ACP_HANDSHAKE_TIMEOUT` (seconds, decimals allowed).
pub fn handshake_timeout_from_env() -> Duration {
    bridge_core::turn::seconds_from_env("BRIDGE_ACP_HANDSHAKE_TIMEOUT")
        .unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT)
}

/// The `initialize` params: protocol version 1, and only the capabilities the bridge has (it
/// offers agents no file system and no terminal; their requests are refused).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "bridge", "title": "bridge", "version": env!("CARGO_PKG_VERSION")},
    })
}

impl AcpSession {
    /// Spawns the agent and runs the handshake. Events (session id, status, warnings) go to
    /// `ctx`; on failure the [`ErrorInfo`] says what went wrong (the caller ends the turn).
    pub async fn start(
        command: &CommandSpec,
        config: SessionConfig,
        ctx: &TurnContext,
    ) -> Result<AcpSession, Option<ErrorInfo>> {
        let mut session = AcpSession::spawn(command, config, ctx)?;
        let outcome = session.handshake(ctx).await;
        session.unless_failed(outcome, ctx).await
    }

    /// Spawns the agent and runs `initialize` (and the authentication the provider does first)
    /// without opening a session, for requests about the agent's sessions ([`AcpSession::call`],
    /// e.g. `session/list`); close it with [`AcpSession::close`].
    pub async fn connect(
        command: &CommandSpec,
        config: SessionConfig,
        ctx: &TurnContext,
    ) -> Result<AcpSession, Option<ErrorInfo>> {
        let mut session = AcpSession::spawn(command, config, ctx)?;
        let outcome = session.initialize(ctx).await;
        session.unless_failed(outcome, ctx).await
    }

    /// The session, or, when `outcome` failed, its process group killed and the failure.
    async fn unless_failed(
        mut self,
        outcome: Result<(), Option<ErrorInfo>>,
        ctx: &TurnContext,
    ) -> Result<AcpSession, Option<ErrorInfo>> {
        match outcome {
            Ok(()) => Ok(self),
            Err(info) => {
                self.process.kill(ctx.limits).await;
                Err(info)
            }
        }
    }

    /// One request to the agent outside any prompt (the session's id is not added), under the
    /// handshake deadline; an agent that asks for authentication first gets it (once) and the
    /// request again.
    pub async fn call(
        &mut self,
        ctx: &TurnContext,
        method: &str,
        params: Value,
    ) -> Result<Value, Option<ErrorInfo>> {
        let mut result = self
            .handshake_call(ctx, method, params.clone(), Phase::Handshake)
            .await;
        if let Err(Failure::Rpc(e)) = &result
            && e.code == rpc::AUTH_REQUIRED
        {
            self.authenticate(ctx, true).await?;
            result = self
                .handshake_call(ctx, method, params, Phase::Handshake)
                .await;
        }
        result.map_err(|f| self.handshake_failure(method, f))
    }

    /// The agent process, with the engine for its protocol (nothing sent yet).
    fn spawn(
        command: &CommandSpec,
        config: SessionConfig,
        ctx: &TurnContext,
    ) -> Result<AcpSession, Option<ErrorInfo>> {
        let process = Process::spawn(&config.provider, command, ctx).map_err(Some)?;
        let engine = AcpEngine {
            provider: config.provider.clone(),
            mode: config.mode,
            empty_turn: config.empty_turn,
            normalizer: AcpNormalizer::with_notices(config.notices)
                .with_tool_kinds(config.tool_kinds),
            phase: Phase::Handshake,
            awaiting: None,
            answer: None,
            interrupting: false,
            permission_ids: HashMap::new(),
            session_id: String::new(),
            garbage: 0,
            first_garbage: None,
            replayed: 0,
            history: config
                .keep_history
                .then(|| crate::history::Transcript::with_tool_kinds(config.tool_kinds)),
        };
        Ok(AcpSession {
            config,
            process,
            engine,
            next_id: 0,
            agent: Value::Null,
            offer: Value::Null,
            session_id: String::new(),
            strategy: SessionStrategy::New,
            prompted: false,
        })
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// How the session was obtained.
    pub fn strategy(&self) -> SessionStrategy {
        self.strategy
    }

    /// The history the `session/load` replayed, as `getSession` rows (empty unless
    /// [`SessionConfig::keep_history`], or when the agent replayed nothing, or resumed with
    /// `session/resume`).
    pub fn take_history(&mut self) -> Vec<serde_json::Value> {
        self.engine
            .history
            .take()
            .map(crate::history::Transcript::finish)
            .unwrap_or_default()
    }

    /// The agent's `initialize` result (capabilities, auth methods, agent info).
    pub fn agent(&self) -> &Value {
        &self.agent
    }

    /// The session result (`session/new` or `session/load`): the modes, models and config
    /// options the agent offers.
    pub fn offer(&self) -> &Value {
        &self.offer
    }

    /// The permission mode the session runs in.
    pub fn mode(&self) -> PermissionMode {
        self.config.mode
    }

    /// Between turns: puts the session in permission mode `mode` (the agent's `mode_ids` for
    /// it, preferred first) and selects `model`, through the session's own methods, where they
    /// differ from what it runs with. A refusal is a warning (the mode's policy still applies
    /// to approvals); `Err` when the agent died or the consumer went away.
    pub async fn reconfigure(
        &mut self,
        ctx: &TurnContext,
        mode: PermissionMode,
        mode_ids: Vec<String>,
        model: Option<String>,
    ) -> Result<(), Option<ErrorInfo>> {
        let offer = self.offer.clone();
        if mode != self.config.mode {
            self.config.mode = mode;
            self.config.mode_ids = mode_ids;
            self.engine.mode = mode;
            self.apply_mode(ctx, &offer).await?;
            let message = format!("permission mode is now {}", mode.as_str());
            self.status(ctx, message).await?;
        }
        if model.is_some() && model != self.config.model {
            self.config.model = model;
            self.apply_model(ctx, &offer).await?;
        }
        Ok(())
    }

    async fn status(&self, ctx: &TurnContext, message: String) -> Result<(), Option<ErrorInfo>> {
        if ctx.emit(Event::status(message)).await {
            Ok(())
        } else {
            Err(None)
        }
    }

    /// Ends the session: stdin closed, `exit_grace` to exit, then the group kill.
    pub async fn close(mut self, limits: bridge_core::turn::TurnLimits) {
        self.settle().await;
        self.process.shutdown(limits).await;
    }

    /// The agent's pid.
    pub fn pid(&self) -> Option<i32> {
        self.process.pid()
    }

    /// Whether the agent can take another prompt (it did not exit, was not stopped).
    pub fn is_alive(&mut self) -> bool {
        self.process.check_alive()
    }

    fn provider(&self) -> &str {
        &self.config.provider
    }

    /// Sends a handshake request (`phase` is [`Phase::Handshake`], or [`Phase::Load`] for a
    /// `session/load` that replays history) under its own handshake deadline, handling
    /// everything the agent sends meanwhile. A cancel or a consumer that went away stops it
    /// at once.
    async fn handshake_call(
        &mut self,
        ctx: &TurnContext,
        method: &str,
        params: Value,
        phase: Phase,
    ) -> Result<Value, Failure> {
        self.next_id += 1;
        let id = Id::Number(self.next_id);
        self.engine.phase = phase;
        self.engine.awaiting = Some(id);
        self.engine.answer = None;
        let bytes = rpc::request(self.next_id, method, params);
        let timeout = self.config.handshake_timeout;
        self.process
            .step(&mut self.engine, ctx, bytes, timeout)
            .await?;
        match self.engine.answer.take() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(Failure::Rpc(e)),
            None => Err(Failure::Exited),
        }
    }

    /// Sends a handshake request that configures the session (mode, model, a config option).
    /// The agent refusing it is not fatal: a warning with code `code`, worded by
    /// `refused(provider, error)`.
    async fn configure(
        &mut self,
        ctx: &TurnContext,
        method: &str,
        params: Value,
        code: &str,
        refused: impl FnOnce(&str, String) -> String,
    ) -> Result<(), Option<ErrorInfo>> {
        match self
            .handshake_call(ctx, method, params, Phase::Handshake)
            .await
        {
            Ok(_) => Ok(()),
            Err(Failure::Rpc(e)) => {
                let message = refused(self.provider(), e.describe());
                self.warn(ctx, code, message).await
            }
            Err(f) => Err(self.handshake_failure(method, f)),
        }
    }

    /// A handshake failure the agent caused ([`ErrorCode::Provider`]), with its stderr tail.
    fn provider_error(&self, message: String) -> Option<ErrorInfo> {
        Some(error(
            ErrorCode::Provider,
            message,
            self.process.stderr_tail(),
        ))
    }

    /// Words a handshake failure for the client.
    fn handshake_failure(&self, method: &str, failure: Failure) -> Option<ErrorInfo> {
        let provider = self.provider();
        let tail = self.process.stderr_tail();
        let garbage = match (&self.engine.first_garbage, self.engine.garbage) {
            (Some(first), n) => {
                let first: String = first.chars().take(200).collect();
                format!(
                    "; its stdout had {n} line(s) that are not JSON-RPC, the first: {first:?} (is this an ACP agent?)"
                )
            }
            _ => String::new(),
        };
        let (code, message) = match failure {
            Failure::Rpc(e) => (
                ErrorCode::Provider,
                format!(
                    "{provider} refused `{method}`: {} (code {})",
                    e.describe(),
                    e.code
                ),
            ),
            Failure::Deadline => (
                ErrorCode::IdleTimeout,
                format!(
                    "{provider} did not answer `{method}` within {} s (ACP handshake deadline); stopped it{garbage}",
                    self.config.handshake_timeout.as_secs_f64()
                ),
            ),
            Failure::Exited => (
                ErrorCode::ExitedEarly,
                format!("{provider} exited before answering `{method}`{garbage}"),
            ),
            Failure::Interrupted => return None,
            Failure::ConsumerGone => return None,
        };
        Some(error(code, message, tail))
    }

    async fn handshake(&mut self, ctx: &TurnContext) -> Result<(), Option<ErrorInfo>> {
        self.initialize(ctx).await?;
        self.open(ctx).await
    }

    /// `initialize` (the agent's answer kept), then the authentication the provider does first.
    async fn initialize(&mut self, ctx: &TurnContext) -> Result<(), Option<ErrorInfo>> {
        let init = match self
            .handshake_call(ctx, "initialize", initialize_params(), Phase::Handshake)
            .await
        {
            Ok(v) => v,
            Err(f) => return Err(self.handshake_failure("initialize", f)),
        };
        let version = init.get("protocolVersion").and_then(Value::as_u64);
        if !init.is_object() || version.is_none() {
            let shown: String = init.to_string().chars().take(200).collect();
            return Err(self.provider_error(format!(
                "{} answered `initialize` with something that is not an ACP initialize result: {shown}",
                self.provider()
            )));
        }
        if version != Some(PROTOCOL_VERSION) {
            return Err(self.provider_error(format!(
                "{} speaks ACP protocol version {}, the bridge speaks {PROTOCOL_VERSION}",
                self.provider(),
                version.unwrap_or(0)
            )));
        }
        self.agent = init;
        if self.config.authenticate_first {
            self.authenticate(ctx, false).await?;
        }
        Ok(())
    }

    /// `session/new`, or the resume of [`SessionConfig::resume`], then the mode, model and
    /// effort.
    async fn open(&mut self, ctx: &TurnContext) -> Result<(), Option<ErrorInfo>> {
        let caps = self
            .agent
            .get("agentCapabilities")
            .cloned()
            .unwrap_or_default();
        let cwd = self.config.cwd.display().to_string();
        let (strategy, params) = match &self.config.resume {
            None => (
                SessionStrategy::New,
                json!({"cwd": cwd, "mcpServers": self.config.mcp_servers}),
            ),
            Some(id) => {
                let resume = caps
                    .get("sessionCapabilities")
                    .and_then(|s| s.get("resume"))
                    .is_some_and(|r| !r.is_null());
                let load = caps.get("loadSession").and_then(Value::as_bool) == Some(true);
                let strategy = if resume && !(self.config.keep_history && load) {
                    SessionStrategy::Resume
                } else if load {
                    SessionStrategy::Load
                } else {
                    return Err(Some(error(
                        ErrorCode::Provider,
                        format!(
                            "{} cannot resume session {id}: its ACP agent advertises neither `loadSession` nor `sessionCapabilities.resume`",
                            self.provider()
                        ),
                        String::new(),
                    )));
                };
                (
                    strategy,
                    json!({"sessionId": id, "cwd": cwd, "mcpServers": self.config.mcp_servers}),
                )
            }
        };
        let mut strategy = strategy;
        let load_advertised = caps.get("loadSession").and_then(Value::as_bool) == Some(true);
        let phase = if strategy == SessionStrategy::Load {
            Phase::Load
        } else {
            Phase::Handshake
        };
        let mut result = self
            .handshake_call(ctx, strategy.method(), params.clone(), phase)
            .await;
        if let Err(Failure::Rpc(e)) = &result
            && e.code == rpc::AUTH_REQUIRED
            && !self.config.authenticate_first
        {
            self.authenticate(ctx, true).await?;
            result = self
                .handshake_call(ctx, strategy.method(), params.clone(), phase)
                .await;
        }
        // Qwen Code 0.15.10 advertises `sessionCapabilities.resume` but answers `session/resume`
        // with "Method not found": fall back to `session/load` when that is advertised.
        if let Err(Failure::Rpc(e)) = &result
            && e.code == METHOD_NOT_FOUND
            && strategy == SessionStrategy::Resume
            && load_advertised
        {
            strategy = SessionStrategy::Load;
            result = self
                .handshake_call(ctx, strategy.method(), params, Phase::Load)
                .await;
        }
        let result = match result {
            Ok(v) => v,
            Err(Failure::Rpc(e)) if strategy != SessionStrategy::New => {
                let id = self.config.resume.clone().unwrap_or_default();
                return Err(self.provider_error(format!(
                    "{} could not resume session {id} ({}): {} (code {})",
                    self.provider(),
                    strategy.method(),
                    e.describe(),
                    e.code
                )));
            }
            Err(f) => return Err(self.handshake_failure(strategy.method(), f)),
        };
        if strategy == SessionStrategy::Load
            && self.engine.replayed == 0
            && self.config.empty_load_is_unknown
            && !self.config.keep_history
        {
            let id = self.config.resume.clone().unwrap_or_default();
            return Err(self.provider_error(format!(
                "{} has no session {id} to resume: session/load replayed no history (the agent starts a new, empty session for an unknown id instead of failing)",
                self.provider()
            )));
        }
        let session_id = str_at(&result, "sessionId")
            .map(str::to_string)
            .or_else(|| self.config.resume.clone());
        let Some(session_id) = session_id else {
            return Err(self.provider_error(format!(
                "{} answered `session/new` without a session id",
                self.provider()
            )));
        };
        self.session_id = session_id.clone();
        self.strategy = strategy;
        let mut events = Vec::new();
        self.engine.normalizer.session(&session_id, &mut events);
        let message = match strategy {
            SessionStrategy::New => format!("started session {session_id} with session/new"),
            SessionStrategy::Resume => {
                format!("resumed session {session_id} with session/resume")
            }
            SessionStrategy::Load => format!(
                "resumed session {session_id} with session/load ({} replayed history update(s) not re-emitted)",
                self.engine.replayed
            ),
        };
        events.push(Event::status(message));
        for event in events {
            if !ctx.emit(event).await {
                return Err(None);
            }
        }
        self.apply_mode(ctx, &result).await?;
        self.apply_model(ctx, &result).await?;
        self.apply_effort(ctx, &result).await?;
        self.offer = result;
        Ok(())
    }

    /// Authenticates with the first usable method. When none is offered, a `required`
    /// authentication fails the handshake (the error names the agent's methods); an optional one
    /// is skipped.
    async fn authenticate(
        &mut self,
        ctx: &TurnContext,
        required: bool,
    ) -> Result<(), Option<ErrorInfo>> {
        let offered: Vec<String> = self
            .agent
            .get("authMethods")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| str_at(m, "id").map(str::to_string))
            .collect();
        let Some(method) = self
            .config
            .auth_methods
            .iter()
            .find(|m| offered.contains(m))
            .cloned()
        else {
            if !required {
                return Ok(());
            }
            return Err(self.provider_error(format!(
                "{} requires authentication, and none of its methods ({}) can be used headless by the bridge; log in with the CLI itself first{}",
                self.provider(),
                if offered.is_empty() {
                    "none offered".to_string()
                } else {
                    offered.join(", ")
                },
                self.config
                    .auth_hint
                    .map(|hint| format!(", {hint}"))
                    .unwrap_or_default()
            )));
        };
        let params = json!({"methodId": method, "_meta": {"headless": true}});
        match self
            .handshake_call(ctx, "authenticate", params, Phase::Handshake)
            .await
        {
            Ok(_) => Ok(()),
            Err(f) => Err(self.handshake_failure("authenticate", f)),
        }
    }

    async fn warn(
        &self,
        ctx: &TurnContext,
        code: &str,
        message: String,
    ) -> Result<(), Option<ErrorInfo>> {
        if ctx.emit(Event::warning(code, message)).await {
            Ok(())
        } else {
            Err(None)
        }
    }

    /// Sets a select config option; a refusal is a warning with code `code`, worded by
    /// `refused(provider, error)`.
    async fn set_option_or_warn(
        &mut self,
        ctx: &TurnContext,
        config_id: &str,
        value: &str,
        code: &str,
        refused: impl FnOnce(&str, String) -> String,
    ) -> Result<(), Option<ErrorInfo>> {
        let params = json!({"sessionId": self.session_id, "configId": config_id, "value": value});
        self.configure(ctx, "session/set_config_option", params, code, refused)
            .await
    }

    /// Sets a select config option; a refusal is a warning saying `what` was not applied.
    async fn set_option(
        &mut self,
        ctx: &TurnContext,
        config_id: &str,
        value: &str,
        what: &str,
    ) -> Result<(), Option<ErrorInfo>> {
        self.set_option_or_warn(ctx, config_id, value, "config_option", |provider, error| {
            format!("{provider} refused {config_id}={value} ({error}); {what} was not applied")
        })
        .await
    }

    /// Selects the requested reasoning effort through a `thought_level` config option.
    async fn apply_effort(
        &mut self,
        ctx: &TurnContext,
        result: &Value,
    ) -> Result<(), Option<ErrorInfo>> {
        let Some(effort) = self.config.effort.clone() else {
            return Ok(());
        };
        let option = config_options(result)
            .find(|o| str_at(o, "category") == Some("thought_level"))
            .cloned();
        let Some(option) = option else {
            let message = format!(
                "{} has no reasoning-effort setting over ACP; `reasoningEffort` {effort} was ignored",
                self.provider()
            );
            return self.warn(ctx, "reasoning_effort", message).await;
        };
        let values = option_values(&option);
        let config_id = str_at(&option, "id").unwrap_or("effort").to_string();
        match values.iter().find(|v| v.eq_ignore_ascii_case(&effort)) {
            Some(value) => {
                let value = value.to_string();
                self.set_option(ctx, &config_id, &value, "the reasoning effort")
                    .await
            }
            None => {
                let message = format!(
                    "{} offers reasoning efforts {values:?}; `reasoningEffort` {effort} was ignored",
                    self.provider()
                );
                self.warn(ctx, "reasoning_effort", message).await
            }
        }
    }

    /// Puts the agent in the mode matching the requested permission mode, where it has one.
    async fn apply_mode(
        &mut self,
        ctx: &TurnContext,
        result: &Value,
    ) -> Result<(), Option<ErrorInfo>> {
        let wanted = self.config.mode_ids.clone();
        // `configId=value` candidates name any select config option (Copilot's `allow_all=on`).
        for candidate in &wanted {
            let Some((config_id, value)) = candidate.split_once('=') else {
                continue;
            };
            let option = config_options(result)
                .find(|o| str_at(o, "id") == Some(config_id))
                .cloned();
            if let Some(option) = option
                && option_values(&option).contains(&value)
            {
                if str_at(&option, "currentValue") == Some(value) {
                    return Ok(());
                }
                let what = format!("permission mode {}", self.config.mode.as_str());
                return self.set_option(ctx, config_id, value, &what).await;
            }
        }
        let modes = result.get("modes");
        let available: Vec<&str> = modes
            .and_then(|m| m.get("availableModes"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| str_at(m, "id"))
            .collect();
        let current = modes.and_then(|m| str_at(m, "currentModeId"));
        let mode_option = config_options(result)
            .find(|o| str_at(o, "category") == Some("mode") || str_at(o, "id") == Some("mode"))
            .cloned();
        let mode_name = self.config.mode.as_str();
        if let Some(id) = matching_mode(&wanted, &available) {
            if current == Some(id) {
                return Ok(());
            }
            let params = json!({"sessionId": self.session_id, "modeId": id});
            let refused = mode_refused(id, mode_name);
            return self
                .configure(ctx, "session/set_mode", params, "permission_mode", refused)
                .await;
        }
        if let Some(option) = mode_option {
            let values = option_values(&option);
            if let (Some(value), Some(config_id)) =
                (matching_mode(&wanted, &values), str_at(&option, "id"))
            {
                if str_at(&option, "currentValue") == Some(value) {
                    return Ok(());
                }
                let refused = mode_refused(value, mode_name);
                return self
                    .set_option_or_warn(ctx, config_id, value, "permission_mode", refused)
                    .await;
            }
        }
        if self.config.mode != PermissionMode::Default {
            let message = format!(
                "{} has no ACP session mode for permission mode {mode_name}; the bridge applies the mode's policy to its approval requests",
                self.provider()
            );
            self.warn(ctx, "permission_mode", message).await?;
        }
        Ok(())
    }

    /// Selects the requested model over ACP, where the agent offers model selection.
    async fn apply_model(
        &mut self,
        ctx: &TurnContext,
        result: &Value,
    ) -> Result<(), Option<ErrorInfo>> {
        let Some(model) = self.config.model.clone() else {
            return Ok(());
        };
        let listed = result
            .get("models")
            .and_then(|m| m.get("availableModels"))
            .and_then(Value::as_array);
        let model_option = config_options(result)
            .find(|o| str_at(o, "category") == Some("model"))
            .cloned();
        let (method, params) = if let Some(models) = listed {
            let id = id_by_id_or_name(models, "modelId", &model).to_string();
            (
                "session/set_model",
                json!({"sessionId": self.session_id, "modelId": id}),
            )
        } else if let Some(option) = model_option {
            let value = id_by_id_or_name(select_options(&option), "value", &model).to_string();
            let config_id = str_at(&option, "id").unwrap_or("model").to_string();
            (
                "session/set_config_option",
                json!({"sessionId": self.session_id, "configId": config_id, "value": value}),
            )
        } else {
            let message = format!(
                "{} offers no model selection over ACP; `model` {model} was not applied",
                self.provider()
            );
            return self.warn(ctx, "model", message).await;
        };
        self.configure(ctx, method, params, "model", |provider, error| {
            format!("{provider} refused model {model} ({error}); it keeps its default model")
        })
        .await
    }

    /// Runs one turn with `prompt` (ACP content blocks), sending its events, ending with
    /// exactly one [`Event::TurnEnd`]: `session/prompt` under the turn's deadlines, approvals
    /// through the turn's broker, `session/cancel` on interrupt. Returns whether the session
    /// can take another prompt (false when the agent died, timed out or the consumer went
    /// away).
    pub async fn prompt(&mut self, prompt: Vec<Value>, ctx: &TurnContext) -> bool {
        self.prompted = true;
        self.engine.normalizer.begin_turn();
        self.next_id += 1;
        self.engine.phase = Phase::Prompt;
        self.engine.awaiting = Some(Id::Number(self.next_id));
        self.engine.interrupting = false;
        self.engine.session_id = self.session_id.clone();
        let params = json!({"sessionId": self.session_id, "prompt": prompt});
        let bytes = rpc::request(self.next_id, "session/prompt", params);
        self.process
            .run_turn(&mut self.engine, ctx, bytes, Lifetime::Warm)
            .await;
        self.engine.phase = Phase::Handshake;
        self.engine.permission_ids.clear();
        self.process.check_alive()
    }

    /// Closes stdin, gives the agent `exit_grace` to exit, then ends its whole process group.
    pub async fn shutdown(mut self, ctx: &TurnContext) {
        self.settle().await;
        self.process.shutdown(ctx.limits).await;
    }

    /// Waits [`SessionConfig::close_settle`] when a prompt ran, so the agent's own records of
    /// it reach its files before its input ends.
    async fn settle(&self) {
        if self.prompted && !self.config.close_settle.is_zero() {
            tokio::time::sleep(self.config.close_settle).await;
        }
    }

    /// Ends the whole process group now (interrupts, deadlines, a consumer that went away).
    pub async fn terminate(mut self, ctx: &TurnContext) {
        self.process.kill(ctx.limits).await;
    }
}

/// The `configOptions` of a session result.
fn config_options(result: &Value) -> impl Iterator<Item = &Value> {
    result
        .get("configOptions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The first of the `wanted` mode ids (preferred first) that one of the `offered` ids (or
/// select values) is, or ends with as `#<id>` (Copilot's mode values are URLs).
fn matching_mode<'a>(wanted: &[String], offered: &[&'a str]) -> Option<&'a str> {
    wanted.iter().find_map(|w| {
        offered
            .iter()
            .find(|o| **o == w.as_str() || o.ends_with(&format!("#{w}")))
            .copied()
    })
}

/// The wording of the warning when the agent refuses `mode` for permission mode `mode_name`.
fn mode_refused<'a>(mode: &'a str, mode_name: &'a str) -> impl FnOnce(&str, String) -> String + 'a {
    move |provider, error| {
        format!(
            "{provider} refused mode `{mode}` for permission mode {mode_name} ({error}); the bridge applies the mode's policy to approval requests"
        )
    }
}

/// The choices of a select config option (`{value, name}` objects).
fn select_options(option: &Value) -> impl Iterator<Item = &Value> {
    option
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The values a select config option offers.
fn option_values(option: &Value) -> Vec<&str> {
    select_options(option)
        .filter_map(|o| str_at(o, "value"))
        .collect()
}

/// The `id_key` of the first of `entries` whose `id_key` or `name` is `wanted` (models are
/// asked for by id or by name); `wanted` itself when none is.
fn id_by_id_or_name<'a>(
    entries: impl IntoIterator<Item = &'a Value>,
    id_key: &str,
    wanted: &'a str,
) -> &'a str {
    entries
        .into_iter()
        .find(|e| str_at(e, id_key) == Some(wanted) || str_at(e, "name") == Some(wanted))
        .and_then(|e| str_at(e, id_key))
        .unwrap_or(wanted)
}
