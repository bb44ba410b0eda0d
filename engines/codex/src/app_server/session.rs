//! One `codex app-server` process, one thread, many turns, on bridge-core's session runner.
//!
//! [`AppServerSession::start`] spawns the server and runs the handshake under a deadline of
//! seconds: `initialize` → `initialized` → `thread/start` (or `thread/resume` of a given
//! thread). [`AppServerSession::turn`] runs one `turn/start` with the turn's overrides (model,
//! effort, cwd, sandbox, approval policy: they stick for later turns, so a mode change between
//! turns is live) to its `turn/completed`, approvals going through the turn's permission
//! broker, `turn/interrupt` on interrupt (the runner kills the group after the grace). The
//! process stays for the next turn.

use std::collections::HashMap;
use std::time::Duration;

use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::jsonrpc::{Framing, Id, Incoming, METHOD_NOT_FOUND, RpcError, parse};
use bridge_core::permission::{
    DecisionKind, DecisionSource, PermissionDecision, PermissionRequest, Resolution,
};
use bridge_core::process::CommandSpec;
use bridge_core::session::{Engine, EngineIo, Lifetime, Process, StepFailure};
use bridge_core::turn::TurnContext;
use permission_mapper::PermissionMode;
use serde::Serialize;
use serde_json::{Value, json};

use super::normalize::{AppServerNormalizer, Asked, abandoned, answer, asked};
use super::protocol::{
    ClientInfo, InitializeCapabilities, InitializeParams, ThreadResumeParams, ThreadStartParams,
    ThreadStartResponse, TurnInterruptParams, TurnStartParams, TurnStartResponse, method,
};

/// The wire dialect: JSON-RPC without the `jsonrpc` member.
const FRAMING: Framing = Framing::WITHOUT_VERSION;

/// Default deadline of each handshake request.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// At most this many unparsable stdout lines are reported one by one.
const MAX_GARBAGE_WARNINGS: usize = 5;

/// Notifications nobody reads: the server need not send them.
const OPTED_OUT: &[&str] = &[
    "account/rateLimits/updated",
    "thread/readState/changed",
    "remoteControl/status/changed",
    "mcpServer/startupStatus/updated",
    "item/reasoning/summaryPartAdded",
];

/// How to open the thread.
#[derive(Debug, Clone)]
pub struct ThreadConfig {
    /// Provider key, used in messages.
    pub provider: String,
    /// A thread to resume instead of starting one.
    pub resume: Option<String>,
    /// The `thread/start` (or, for a resume, the matching `thread/resume`) settings.
    pub start: ThreadStartParams,
    /// The permission mode of the first turn (its policy decides what nobody is asked).
    pub mode: PermissionMode,
    /// Deadline of each handshake request.
    pub handshake_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Handshake,
    Turn,
}

/// The protocol on the runner: JSON-RPC lines in, events and answers out.
#[derive(Debug)]
struct AppServerEngine {
    provider: String,
    mode: PermissionMode,
    phase: Phase,
    next_id: i64,
    /// The request whose answer ends a handshake step, or `turn/start`'s.
    awaiting: Option<Id>,
    answer: Option<Result<Value, RpcError>>,
    thread_id: String,
    turn_id: Option<String>,
    normalizer: Option<AppServerNormalizer>,
    interrupting: bool,
    /// Approvals in flight: the bridge's request id → Codex's request id.
    pending: HashMap<String, Id>,
    garbage: usize,
    first_garbage: Option<String>,
}

impl AppServerEngine {
    fn request(&mut self, method: &str, params: impl Serialize) -> (Id, Vec<u8>) {
        self.next_id += 1;
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        (
            Id::Number(self.next_id),
            FRAMING.request(self.next_id, method, params),
        )
    }

    fn server_request(&mut self, id: Id, method: &str, params: &Value, io: &mut EngineIo) {
        let answers = method::SERVER_REQUESTS.contains(&method);
        if answers
            && self.phase == Phase::Turn
            && !self.interrupting
            && let Some(normalizer) = self.normalizer.as_mut()
            && let Some(request) = normalizer.permission_request(&id, method, params, io.events())
        {
            self.pending.insert(request.request_id, id);
            return;
        }
        if answers {
            // Outside a turn (or while it stops) nobody may decide: refuse without running.
            let result = if method == method::USER_INPUT {
                json!({"answers": {}})
            } else {
                json!({"decision": "cancel"})
            };
            io.write(FRAMING.response(&id, result));
            return;
        }
        let message = format!("the bridge does not answer `{method}`");
        io.write(FRAMING.error_response(&id, METHOD_NOT_FOUND, &message));
        io.emit(Event::warning(
            "client_method_refused",
            format!("{} asked for `{method}`; refused: {message}", self.provider),
        ));
    }

    fn turn_answer(&mut self, outcome: Result<Value, RpcError>, io: &mut EngineIo) {
        match outcome {
            Ok(result) => {
                if let Ok(started) = serde_json::from_value::<TurnStartResponse>(result) {
                    self.turn_id = Some(started.turn.id);
                }
            }
            Err(e) => {
                let message = format!("{} refused `turn/start`: {}", self.provider, e.describe());
                bridge_core::normalize::fail_turn(
                    ErrorCode::Provider,
                    message,
                    Some(self.thread_id.clone()),
                    io.events(),
                );
            }
        }
    }
}

impl Engine for AppServerEngine {
    fn stdout_line(&mut self, text: &str, io: &mut EngineIo) {
        match parse(text) {
            Ok(Incoming::Response { id, outcome }) => {
                if self.awaiting.as_ref() != Some(&id) {
                    return;
                }
                self.awaiting = None;
                match self.phase {
                    Phase::Turn => self.turn_answer(outcome, io),
                    Phase::Handshake => {
                        self.answer = Some(outcome);
                        io.done();
                    }
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                if self.phase != Phase::Turn {
                    return;
                }
                if method == method::TURN_STARTED
                    && let Some(id) = params
                        .get("turn")
                        .and_then(|t| t.get("id"))
                        .and_then(Value::as_str)
                {
                    self.turn_id.get_or_insert_with(|| id.to_string());
                }
                if let Some(normalizer) = self.normalizer.as_mut() {
                    normalizer.notification(&method, &params, io.events());
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                self.server_request(id, &method, &params, io);
            }
            Err(_) => {
                self.garbage += 1;
                if self.first_garbage.is_none() {
                    self.first_garbage = Some(text.chars().take(200).collect());
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
        let Some(turn_id) = self.turn_id.clone() else {
            // The turn has no id yet: nothing to name in `turn/interrupt`.
            return false;
        };
        self.interrupting = true;
        let params = TurnInterruptParams {
            thread_id: self.thread_id.clone(),
            turn_id,
        };
        let (_, bytes) = self.request(method::TURN_INTERRUPT, params);
        io.write(bytes);
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
        let Some(id) = self.pending.remove(&request.request_id) else {
            return false;
        };
        let answer = answer(request, resolution);
        io.write(FRAMING.response(&id, answer.result));
        io.emit(Event::PermissionDecision(answer.effective));
        answer.cancel_turn
    }

    fn abandoned(&mut self, request: &PermissionRequest, io: &mut EngineIo) {
        if let Some(id) = self.pending.remove(&request.request_id) {
            io.write(FRAMING.response(&id, abandoned(request)));
        }
    }

    fn session_id(&self) -> Option<String> {
        (!self.thread_id.is_empty()).then(|| self.thread_id.clone())
    }
}

/// What each permission mode decides without asking anyone, when Codex asks (its approval
/// policy is `on-request` in these modes; `bypassPermissions` and `yolo` run with `never`):
///
/// * `plan`: everything is denied (a plan changes nothing; the sandbox is read-only);
/// * `acceptEdits`: file changes are allowed once, commands are asked;
/// * `bypassPermissions` / `yolo`: allowed once (Codex should not ask at all);
/// * `default` / `sandbox`: nothing; the client is asked (in `sandbox` Codex's read-only
///   sandbox asks for every write).
pub fn policy(mode: PermissionMode, request: &PermissionRequest) -> Option<Resolution> {
    let decision = match (mode, asked(request)) {
        (PermissionMode::Plan, Some(Asked::Command | Asked::FileChange)) => {
            PermissionDecision::deny(format!(
                "Permission denied: {} is not allowed in plan mode (read-only)",
                request.tool_name
            ))
        }
        (PermissionMode::AcceptEdits, Some(Asked::FileChange))
        | (PermissionMode::BypassPermissions | PermissionMode::Yolo, _) => {
            PermissionDecision::new(DecisionKind::AllowOnce)
        }
        _ => return None,
    };
    Some(Resolution {
        decision,
        source: DecisionSource::Policy,
    })
}

/// One running app-server with one loaded thread.
pub struct AppServerSession {
    config: ThreadConfig,
    process: Process,
    engine: AppServerEngine,
    user_agent: String,
}

impl std::fmt::Debug for AppServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppServerSession")
            .field("provider", &self.config.provider)
            .field("thread_id", &self.engine.thread_id)
            .finish_non_exhaustive()
    }
}

/// What went wrong in a handshake request.
enum Failure {
    Rpc(RpcError),
    Step(StepFailure),
}

impl AppServerSession {
    /// Spawns `command` (`codex app-server …`) and opens the thread. Events (the thread id,
    /// a status) go to `ctx`. `Err(None)`: interrupted, or nobody reads the output any more.
    pub async fn start(
        command: &CommandSpec,
        config: ThreadConfig,
        ctx: &TurnContext,
    ) -> Result<AppServerSession, Option<ErrorInfo>> {
        let process = Process::spawn(&config.provider, command, ctx).map_err(Some)?;
        let engine = AppServerEngine {
            provider: config.provider.clone(),
            mode: config.mode,
            phase: Phase::Handshake,
            next_id: 0,
            awaiting: None,
            answer: None,
            thread_id: String::new(),
            turn_id: None,
            normalizer: None,
            interrupting: false,
            pending: HashMap::new(),
            garbage: 0,
            first_garbage: None,
        };
        let mut session = AppServerSession {
            config,
            process,
            engine,
            user_agent: String::new(),
        };
        match session.handshake(ctx).await {
            Ok(()) => Ok(session),
            Err(info) => {
                session.process.kill(ctx.limits).await;
                Err(info)
            }
        }
    }

    /// The thread id.
    pub fn thread_id(&self) -> &str {
        &self.engine.thread_id
    }

    /// Codex's user agent from `initialize` (it names the version).
    pub fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// The server's pid.
    pub fn pid(&self) -> Option<i32> {
        self.process.pid()
    }

    /// Whether the server can take another turn.
    pub fn is_alive(&mut self) -> bool {
        self.process.check_alive()
    }

    /// Closes stdin (the server exits), `exit_grace`, then the group kill.
    pub async fn close(mut self, limits: bridge_core::turn::TurnLimits) {
        self.process.shutdown(limits).await;
    }

    /// Ends the whole process group now.
    pub async fn kill(mut self, limits: bridge_core::turn::TurnLimits) {
        self.process.kill(limits).await;
    }

    async fn call(
        &mut self,
        ctx: &TurnContext,
        method: &str,
        params: impl Serialize,
    ) -> Result<Value, Failure> {
        let (id, bytes) = self.engine.request(method, params);
        self.engine.phase = Phase::Handshake;
        self.engine.awaiting = Some(id);
        self.engine.answer = None;
        let timeout = self.config.handshake_timeout;
        self.process
            .step(&mut self.engine, ctx, bytes, timeout)
            .await
            .map_err(Failure::Step)?;
        match self.engine.answer.take() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(Failure::Rpc(e)),
            None => Err(Failure::Step(StepFailure::Exited)),
        }
    }

    fn failure(&self, method: &str, failure: Failure) -> Option<ErrorInfo> {
        let provider = &self.config.provider;
        let garbage = match &self.engine.first_garbage {
            Some(first) => format!(
                "; its stdout had {} line(s) that are not JSON-RPC, the first: {first:?}",
                self.engine.garbage
            ),
            None => String::new(),
        };
        let (code, message) = match failure {
            Failure::Rpc(e) if method == method::THREAD_RESUME => (
                ErrorCode::Provider,
                format!(
                    "{provider} could not resume thread {}: {} (code {})",
                    self.config.resume.clone().unwrap_or_default(),
                    e.describe(),
                    e.code
                ),
            ),
            Failure::Rpc(e) => (
                ErrorCode::Provider,
                format!(
                    "{provider} refused `{method}`: {} (code {})",
                    e.describe(),
                    e.code
                ),
            ),
            Failure::Step(StepFailure::Deadline) => (
                ErrorCode::IdleTimeout,
                format!(
                    "{provider} did not answer `{method}` within {} s (app-server handshake deadline); stopped it{garbage}",
                    self.config.handshake_timeout.as_secs_f64()
                ),
            ),
            Failure::Step(StepFailure::Exited) => (
                ErrorCode::ExitedEarly,
                format!("{provider} app-server exited before answering `{method}`{garbage}"),
            ),
            Failure::Step(StepFailure::Interrupted | StepFailure::ConsumerGone) => return None,
        };
        Some(ErrorInfo::new(code, message).with_stderr_tail(self.process.stderr_tail()))
    }

    async fn handshake(&mut self, ctx: &TurnContext) -> Result<(), Option<ErrorInfo>> {
        let init = InitializeParams {
            client_info: ClientInfo {
                name: "bridge".into(),
                title: Some("bridge".into()),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            capabilities: Some(InitializeCapabilities {
                opt_out_notification_methods: Some(
                    OPTED_OUT.iter().map(|m| m.to_string()).collect(),
                ),
            }),
        };
        let result = match self.call(ctx, method::INITIALIZE, init).await {
            Ok(result) => result,
            Err(f) => return Err(self.failure(method::INITIALIZE, f)),
        };
        self.user_agent = result
            .get("userAgent")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.process
            .write(FRAMING.notification(method::INITIALIZED, Value::Null))
            .await;
        let start = self.config.start.clone();
        let (method, outcome) = match self.config.resume.clone() {
            None => (
                method::THREAD_START,
                self.call(ctx, method::THREAD_START, start).await,
            ),
            Some(thread_id) => {
                let params = ThreadResumeParams {
                    thread_id,
                    settings: start,
                    exclude_turns: true,
                };
                (
                    method::THREAD_RESUME,
                    self.call(ctx, method::THREAD_RESUME, params).await,
                )
            }
        };
        let result = outcome.map_err(|f| self.failure(method, f))?;
        let thread =
            serde_json::from_value::<ThreadStartResponse>(result.clone()).map_err(|e| {
                let shown: String = result.to_string().chars().take(200).collect();
                Some(ErrorInfo::new(
                    ErrorCode::Provider,
                    format!(
                        "{} answered `{method}` without a thread ({e}): {shown}",
                        self.config.provider
                    ),
                ))
            })?;
        self.engine.thread_id = thread.thread.id.clone();
        // The plugin sees what `codex exec` shows it: the thread id, no status about how the
        // thread was opened.
        let event = Event::SessionId {
            id: thread.thread.id.clone(),
        };
        if !ctx.emit(event).await {
            return Err(None);
        }
        Ok(())
    }

    /// Runs one turn of `params` (its thread id is filled in) in permission mode `mode`,
    /// sending its events, ending with exactly one [`Event::TurnEnd`]. `id_prefix` prefixes
    /// the turn's tool ids. Returns whether the server can take another turn.
    ///
    /// Cancel safety: not cancel-safe (see [`Process::run_turn`]); drop the session too.
    pub async fn turn(
        &mut self,
        mut params: TurnStartParams,
        mode: PermissionMode,
        id_prefix: String,
        ctx: &TurnContext,
    ) -> bool {
        params.thread_id = self.engine.thread_id.clone();
        self.engine.mode = mode;
        self.engine.phase = Phase::Turn;
        self.engine.turn_id = None;
        self.engine.interrupting = false;
        self.engine.normalizer = Some(AppServerNormalizer::new(&self.engine.thread_id, id_prefix));
        let (id, bytes) = self.engine.request(method::TURN_START, params);
        self.engine.awaiting = Some(id);
        self.process
            .run_turn(&mut self.engine, ctx, bytes, Lifetime::Warm)
            .await;
        self.engine.phase = Phase::Handshake;
        self.engine.normalizer = None;
        self.engine.pending.clear();
        self.process.check_alive()
    }
}
