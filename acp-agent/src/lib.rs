//! `bridge acp <provider>`: any provider the bridge drives, as an Agent Client Protocol agent
//! over stdio (JSON-RPC 2.0 with the `jsonrpc` member, one message per line), for Zed,
//! JetBrains and any other ACP client.
//!
//! Each ACP session is one [`Session`] with the provider: warm where the CLI allows (Claude
//! stream-json, ACP agents, Codex app-server), respawn and resume otherwise. A prompt is a turn;
//! its [`Event`]s become `session/update` notifications through the
//! [`encode::UpdateEncoder`], and its end the prompt's `stopReason`. Every approval the provider
//! asks and the permission-mode policy does not decide is a `session/request_permission` to the
//! client, with options from the unified decision set; an approval nobody answers in time is
//! denied (a rejection the model sees, never `cancelled`, which would end the whole turn).
//!
//! # Methods
//!
//! | method | what it does |
//! |---|---|
//! | `initialize` | answers protocol version 1 (the only one), the provider's capabilities ([`ProviderProfile`]; `mcpCapabilities` from [`Channel::mcp_support`]) and one agent auth method (the CLI's own login) |
//! | `authenticate` | nothing to do: the CLI uses its own credentials |
//! | `session/new` | a [`Session`] in `cwd`; the CLI is started in the background (the answer does not wait for it; the first `session/new` in the agent's own directory without MCP servers takes the session [`AgentOptions::prestart`] began at `initialize`), the unified permission modes as ACP modes; its `mcpServers` go to the CLI where it takes them ([`Request::mcp_servers`]), the others are dropped with a warning on stderr |
//! | `session/load` | where [`ProviderProfile::load_session`]: the provider's history replayed as updates ([`history`]), then a session whose first turn resumes the conversation (with its `mcpServers`) |
//! | `session/resume` | the same without the replay (`sessionCapabilities.resume` where `session/load` is) |
//! | `session/list` | where [`ProviderProfile::list_sessions`]: the provider's conversations (its `listSessions` query), newest first, filtered by `cwd`, under the ACP id a client opened each with where the session map knows it, [`LIST_PAGE`] a page (`nextCursor`: the index of the next one) |
//! | `session/prompt` | one turn; text, resource links and embedded text resources are sent as the message, images (where [`ProviderProfile::image`]) as its attachments; the turn ends with a `usage_update` where the context window is known ([`encode`]) |
//! | `session/cancel` | interrupts the running turn (its prompt answers `cancelled`) |
//! | `session/close` | forgets the session (requests naming it are refused), cancels its running prompt (which answers `cancelled`) and answers once its CLI is closed (graceful close, then the group kill); the session map keeps the pairing, so a later `session/load` can reopen it |
//! | `session/set_mode` | [`Session::set_permission_mode`]: live where the CLI can change it |
//! | `session/set_config_option` | `model` ([`Session::set_model`]): the prestarted session's CLI's own list where it can tell ([`Inquiry::Models`]), else the provider's `listModels`, read once after `initialize` when no prompt has run for 0.5 s (after the first prompt, or 5 s without one: listing starts a CLI of its own, which would slow the session's start); sessions opened before it came get a `config_option_update` |
//!
//! Anything else is a JSON-RPC "method not found"; a line that is not JSON a "parse error";
//! wrong params "invalid params". Nothing a client sends can panic the agent.
//!
//! # Why the schema crate and the project's own framing
//!
//! The message types are the `agent-client-protocol-schema` crate's, generated from the
//! official ACP JSON schema (pinned exactly: the ACP crates change fast), so the wire shapes
//! follow the schema rather than a hand copy of it. The `agent-client-protocol` crate's
//! connection builder is not used: it reads input lines without a bound (rust-sdk #340/#342),
//! so one endless line from a client would cost unbounded memory. Lines here are read with
//! [`bridge_core::lines::LineReader`] (a cap per line, invalid UTF-8 decoded lossily) and framed
//! with [`bridge_core::jsonrpc`], the same framing the ACP client engine uses. The end-to-end
//! tests check every message against the official TypeScript SDK's schemas.
//!
//! `session/list`, `usage_update` and `mcpServers` are in the stable v1 schema (no `unstable_*`
//! feature of the schema crate is needed), and so is `session/close`; `session/list`'s
//! `archived` filter and session titles (unstable features) are not implemented.
//!
//! Where each works: `session/load` and `session/list` for Claude (its session files) and
//! Codex (its rollout files; the thread resumes with the app-server's `thread/resume`),
//! `session/load` and `session/list` for the ACP providers whose `getSession` reads back what
//! their own agent's `session/load` replays and whose `listSessions` is its `session/list`
//! (Qwen, Copilot, opencode, Kimi; `bridge_acp::history`);
//! `usage_update` for Claude (its result's `modelUsage` context window), Codex (the
//! app-server's `model_context_window`) and ACP agents that send their own; `mcpServers` for
//! Claude (`--mcp-config`: stdio, HTTP, SSE), Codex's app-server (the thread's `config`,
//! `mcp_servers.<name>`: stdio and HTTP) and the ACP providers (forwarded in their own
//! `session/new`: stdio); images where [`Channel::takes_images`]: Claude (stream-json image
//! blocks), Codex (`localImage` inputs) and the ACP providers (their agents' `image` blocks).
//!
//! # Process hygiene
//!
//! [`serve`] returns when the client closes stdin (or is killed, which closes it), when `stop`
//! is cancelled (the command cancels it on a signal, and asks for SIGTERM when its parent
//! dies), when nobody reads the output any more, or when no `initialize` arrives within
//! [`AgentOptions::handshake_timeout`]. Before it returns,
//! every running turn is interrupted and every session closed (the CLI's graceful close, then
//! its process group is killed), so no CLI outlives the agent.

#![deny(missing_docs)]

pub mod encode;
pub mod history;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use bridge_core::channel::Channel;
use bridge_core::conversation::{Inquiry, Session, SessionOptions};
use bridge_core::event::{Event, TurnEnd};
use bridge_core::jsonrpc::{self, Framing, INVALID_PARAMS, Id, Incoming, METHOD_NOT_FOUND};
use bridge_core::lines::{LineItem, LineReader};
use bridge_core::permission::{
    DecisionKind, PermissionBroker, PermissionDecision, PermissionRequest,
};
use bridge_core::redact::Redactor;
use bridge_core::request::{Attachment, McpServer, McpTransport, Request};
use bridge_core::turn::TurnLimits;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::encode::UpdateEncoder;

/// JSON-RPC "parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "invalid request".
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "internal error" (a failed turn).
pub const INTERNAL_ERROR: i64 = -32603;

/// Sessions in one `session/list` answer (a `nextCursor` leads to the next ones).
pub const LIST_PAGE: usize = 50;

/// The unified permission modes offered as ACP session modes: id, name, description.
pub const MODES: &[(&str, &str, &str)] = &[
    (
        "default",
        "Default",
        "Ask before anything that is not read-only",
    ),
    (
        "acceptEdits",
        "Accept edits",
        "Apply file edits without asking; ask before commands",
    ),
    ("plan", "Plan", "Read and plan only; nothing is changed"),
    (
        "bypassPermissions",
        "Bypass permissions",
        "Never ask (the provider's own sandbox still applies)",
    ),
];

/// What the provider can do, as `initialize` advertises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProviderProfile {
    /// `session/load` can restore a conversation (its history is readable).
    pub load_session: bool,
    /// `session/list` can list the provider's conversations (a `listSessions` query).
    pub list_sessions: bool,
    /// Prompts may carry images.
    pub image: bool,
    /// Prompts may carry embedded resources (sent to the CLI as text).
    pub embedded_context: bool,
}

/// Settings of [`serve`].
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// What `initialize` advertises.
    pub profile: ProviderProfile,
    /// Deadlines of each turn.
    pub limits: TurnLimits,
    /// Longest an approval waits for the client's answer (then it is denied).
    pub approval_timeout: Duration,
    /// Longest the client may take to send `initialize` after the agent starts.
    pub handshake_timeout: Duration,
    /// Longest input line read (a longer one is answered with an error and skipped).
    pub max_line_bytes: usize,
    /// The secrets no output may carry.
    pub redactor: Redactor,
    /// The agent's version, in `agentInfo`.
    pub version: &'static str,
    /// The model of every session (`None`: the CLI's default).
    pub model: Option<String>,
    /// Where ACP sessions are paired with the provider's conversations, for `session/load`
    /// (`None`: not kept).
    pub sessions: Option<history::SessionMap>,
    /// Start a session's CLI at `initialize`, in this directory (the agent's own, where IDEs
    /// start it), for the first `session/new` that asks for it without MCP servers: its first
    /// prompt then does not wait for the CLI to start. One that is not taken (another
    /// directory, MCP servers, a `session/load` first) is closed then. `None`: no prestart.
    pub prestart: Option<PathBuf>,
}

impl Default for AgentOptions {
    /// Default turn limits, 300 s approvals, a 60 s handshake, 16 MiB lines, no prestart.
    fn default() -> Self {
        AgentOptions {
            profile: ProviderProfile::default(),
            limits: TurnLimits::default(),
            approval_timeout: Duration::from_secs(300),
            handshake_timeout: Duration::from_secs(60),
            max_line_bytes: bridge_core::lines::DEFAULT_MAX_LINE_BYTES,
            redactor: Redactor::default(),
            version: env!("CARGO_PKG_VERSION"),
            model: None,
            sessions: None,
            prestart: None,
        }
    }
}

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its end of stdin (or died).
    StdinClosed,
    /// `stop` was cancelled (a signal).
    Stopped,
    /// Nobody reads the output any more.
    StdoutClosed,
    /// No `initialize` within the handshake timeout.
    HandshakeTimeout,
}

/// Why a request was refused (the JSON-RPC error it is answered with).
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("invalid params: {0}")]
    Params(String),
    #[error("unknown session: {0}")]
    UnknownSession(String),
    #[error("call `initialize` first")]
    NotInitialized,
    #[error("unknown mode `{0}`; modes: default, acceptEdits, plan, bypassPermissions")]
    UnknownMode(String),
    #[error("{0}")]
    Unsupported(String),
}

impl RequestError {
    fn code(&self) -> i64 {
        match self {
            RequestError::NotInitialized => INVALID_REQUEST,
            _ => INVALID_PARAMS,
        }
    }
}

/// The output: one writer task, lines in order, backpressure when the client reads slowly.
#[derive(Clone)]
struct Out {
    tx: mpsc::Sender<Vec<u8>>,
}

impl Out {
    async fn send(&self, line: Vec<u8>) -> bool {
        self.tx.send(line).await.is_ok()
    }

    async fn respond(&self, id: &Id, result: Result<Value, (i64, String)>) {
        let line = match result {
            Ok(value) => Framing::JSONRPC_2_0.response(id, value),
            Err((code, message)) => Framing::JSONRPC_2_0.error_response(id, code, &message),
        };
        self.send(line).await;
    }

    async fn update(&self, session_id: &str, update: acp::SessionUpdate) -> bool {
        let notification = acp::SessionNotification::new(session_id.to_string(), update);
        let params = serde_json::to_value(notification).unwrap_or(Value::Null);
        self.send(jsonrpc::notification("session/update", params))
            .await
    }
}

/// Requests the agent sends the client, waiting for their answers.
#[derive(Default)]
struct Calls {
    next: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, jsonrpc::RpcError>>>>,
}

impl Calls {
    /// Sends `method` and waits for the answer (`None`: the connection ended first).
    async fn call(
        &self,
        out: &Out,
        method: &str,
        params: Value,
    ) -> Option<Result<Value, jsonrpc::RpcError>> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        if !out.send(jsonrpc::request(id, method, params)).await {
            return None;
        }
        rx.await.ok()
    }

    fn answered(&self, id: &Id, outcome: Result<Value, jsonrpc::RpcError>) {
        let Id::Number(id) = id else { return };
        let sender = self.pending.lock().ok().and_then(|mut p| p.remove(id));
        if let Some(sender) = sender {
            let _ = sender.send(outcome);
        }
    }

    fn clear(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }
}

/// One ACP session.
struct AcpSession {
    id: String,
    session: Session,
    broker: Arc<PermissionBroker>,
    /// The approvals the broker waits on the client for (one prompt reads them at a time).
    asks: tokio::sync::Mutex<mpsc::UnboundedReceiver<PermissionRequest>>,
    cwd: PathBuf,
    mode: Mutex<String>,
    /// The running prompt's interrupt.
    running: Mutex<Option<CancellationToken>>,
    /// `session/close` took it: a prompt that got it before starts cancelled.
    closed: AtomicBool,
    /// A turn ran (later ones inherit its settings).
    started: AtomicBool,
    /// The model of its turns (`None`: the CLI's default); `session/set_config_option` changes it.
    model: Mutex<Option<String>>,
    /// The provider conversation the first turn resumes (a loaded session).
    resume: Option<String>,
    /// The provider conversation id last recorded in the session map.
    recorded: Mutex<Option<String>>,
    /// What the session's turns cost so far in USD (`None`: the provider reported no cost).
    cost: Mutex<Option<f64>>,
    /// The client's MCP servers the provider takes, for the CLI's launch.
    mcp_servers: Vec<McpServer>,
}

struct Agent {
    channel: Arc<dyn Channel>,
    options: AgentOptions,
    out: Out,
    calls: Calls,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    initialized: AtomicBool,
    tasks: TaskTracker,
    /// The provider's models (`listModels`), once read: offered as the `model` config option.
    models: Mutex<Option<Vec<(String, String)>>>,
    /// The prompts running and ended so far (the model list waits for a quiet moment).
    turns: tokio::sync::watch::Sender<Turns>,
    /// Cancelled when the agent closes (tasks that only wait stop waiting).
    closing: CancellationToken,
    /// The session [`AgentOptions::prestart`] began, until a `session/new` takes it or it is
    /// closed.
    spare: Mutex<Option<Arc<AcpSession>>>,
}

/// How many prompts run now and how many have ended ([`Agent::turns`]).
#[derive(Debug, Clone, Copy, Default)]
struct Turns {
    running: usize,
    ended: usize,
}

/// How long after `initialize` the model list waits for a first prompt before it is read
/// anyway (when no prompt runs).
const MODELS_IDLE_DELAY: Duration = Duration::from_secs(5);

/// How long no prompt must run before the model list is read (a client that sends its next
/// prompt at once is not made to wait behind the answer).
const MODELS_QUIET: Duration = Duration::from_millis(500);

/// Serves the ACP agent for `channel` on `input` / `output` until the client goes away (see
/// the [crate docs](crate)), then closes every session.
///
/// Cancel safety: not cancel safe: dropping the future drops the sessions without their
/// graceful close (their process groups are still killed as the processes are dropped).
pub async fn serve<R, W>(
    channel: Arc<dyn Channel>,
    options: AgentOptions,
    input: R,
    mut output: W,
    stop: CancellationToken,
) -> Ended
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut lines_out) = mpsc::channel::<Vec<u8>>(256);
    let stdout_closed = CancellationToken::new();
    let writer = {
        let closed = stdout_closed.clone();
        tokio::spawn(async move {
            while let Some(line) = lines_out.recv().await {
                if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                    closed.cancel();
                    break;
                }
            }
        })
    };
    let handshake = tokio::time::sleep(options.handshake_timeout);
    tokio::pin!(handshake);
    let agent = Arc::new(Agent {
        channel,
        out: Out { tx },
        calls: Calls::default(),
        sessions: Mutex::default(),
        initialized: AtomicBool::new(false),
        tasks: TaskTracker::new(),
        models: Mutex::new(None),
        turns: tokio::sync::watch::Sender::new(Turns::default()),
        closing: CancellationToken::new(),
        spare: Mutex::new(None),
        options,
    });
    let mut lines = LineReader::new(input, agent.options.max_line_bytes);
    let ended = loop {
        let waiting_for_initialize = !agent.initialized.load(Ordering::SeqCst);
        let item = tokio::select! {
            item = lines.next_line() => item,
            _ = stop.cancelled() => break Ended::Stopped,
            _ = stdout_closed.cancelled() => break Ended::StdoutClosed,
            _ = &mut handshake, if waiting_for_initialize => break Ended::HandshakeTimeout,
        };
        let text = match item {
            Ok(Some(LineItem::Line { text, .. })) => text,
            Ok(Some(LineItem::TooLong { bytes })) => {
                let message = format!(
                    "a line of {bytes} bytes is longer than the {} byte limit",
                    agent.options.max_line_bytes
                );
                agent
                    .out
                    .send(null_id_error(INVALID_REQUEST, &message))
                    .await;
                continue;
            }
            Ok(None) | Err(_) => break Ended::StdinClosed,
        };
        if text.trim().is_empty() {
            continue;
        }
        match jsonrpc::parse(&text) {
            Err(jsonrpc::ParseError::NotJson) => {
                agent
                    .out
                    .send(null_id_error(PARSE_ERROR, "parse error: not JSON"))
                    .await;
            }
            Err(jsonrpc::ParseError::NotRpc) => {
                agent
                    .out
                    .send(null_id_error(INVALID_REQUEST, "not a JSON-RPC 2.0 message"))
                    .await;
            }
            Ok(Incoming::Response { id, outcome }) => agent.calls.answered(&id, outcome),
            Ok(Incoming::Notification { method, params }) => agent.notification(&method, &params),
            Ok(Incoming::Request { id, method, params }) => {
                Arc::clone(&agent).request(id, method, params).await;
            }
        }
    };
    agent.shut_down().await;
    // The writer ends once every sender (the agent's, the prompts') is gone.
    drop(agent);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    ended
}

fn null_id_error(code: i64, message: &str) -> Vec<u8> {
    let mut line =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
            .to_string()
            .into_bytes();
    line.push(b'\n');
    line
}

impl Agent {
    fn notification(&self, method: &str, params: &Value) {
        if method == "session/cancel"
            && let Ok(cancel) = serde_json::from_value::<acp::CancelNotification>(params.clone())
            && let Some(session) = self.session(&cancel.session_id.0)
        {
            session.cancel_running();
        }
        // Other notifications (extensions, `$/cancel_request`) are ignored, as JSON-RPC wants.
    }

    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }

    async fn request(self: Arc<Self>, id: Id, method: String, params: Value) {
        let initialized = self.initialized.load(Ordering::SeqCst);
        let result = match method.as_str() {
            "initialize" => self.initialize(&params),
            _ if !initialized => Err(RequestError::NotInitialized),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(&params),
            // Answered before the next line is read: a prompt right behind it finds the session.
            "session/load" | "session/resume" if self.options.profile.load_session => {
                self.load_session(&params, method == "session/load").await
            }
            "session/list" if self.options.profile.list_sessions => {
                self.list_sessions(&params).await
            }
            "session/set_mode" => self.set_mode(&params),
            "session/set_config_option" => self.set_config_option(&params),
            "session/close" => match self.close_session(&params) {
                // Answered once the CLI is gone; the connection goes on meanwhile.
                Ok(session) => {
                    let out = self.out.clone();
                    self.tasks.spawn(async move {
                        session.session.close().await;
                        out.respond(
                            &id,
                            to_value(acp::CloseSessionResponse::new())
                                .map_err(|e| (e.code(), e.to_string())),
                        )
                        .await;
                    });
                    return;
                }
                Err(error) => Err(error),
            },
            "session/prompt" => {
                // Runs concurrently: the connection stays responsive (cancel, approvals).
                let agent = Arc::clone(&self);
                self.tasks
                    .spawn(async move { agent.prompt(id, params).await });
                return;
            }
            _ => {
                let message = format!("method not found: {method}");
                self.out
                    .respond(&id, Err((METHOD_NOT_FOUND, message)))
                    .await;
                return;
            }
        };
        let result = result.map_err(|error| (error.code(), error.to_string()));
        self.out.respond(&id, result).await;
    }

    fn initialize(self: &Arc<Self>, params: &Value) -> Result<Value, RequestError> {
        // Version 1 is the only one spoken, whatever the client asked for: a client that
        // asked for another one decides whether it can live with it.
        let _: acp::InitializeRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        if !self.initialized.swap(true, Ordering::SeqCst) {
            // The model list comes from the CLI (a second or so): read it in the background,
            // when no session's CLI is starting.
            let spare = self.options.prestart.clone().map(|cwd| {
                let id = uuid::Uuid::new_v4().to_string();
                let spare = self.start_session(id, cwd, None, Vec::new());
                if let Ok(mut slot) = self.spare.lock() {
                    *slot = Some(Arc::clone(&spare));
                }
                spare
            });
            let agent = Arc::clone(self);
            self.tasks
                .spawn(async move { agent.read_models(spare).await });
        }
        let profile = self.options.profile;
        let name = self.channel.display_name();
        let mut sessions =
            acp::SessionCapabilities::new().close(acp::SessionCloseCapabilities::new());
        if profile.load_session {
            sessions = sessions.resume(acp::SessionResumeCapabilities::new());
        }
        if profile.list_sessions {
            sessions = sessions.list(acp::SessionListCapabilities::new());
        }
        let mcp = self.channel.mcp_support();
        let capabilities = acp::AgentCapabilities::new()
            .load_session(profile.load_session)
            .mcp_capabilities(acp::McpCapabilities::new().http(mcp.http).sse(mcp.sse))
            .session_capabilities(sessions)
            .prompt_capabilities(
                acp::PromptCapabilities::new()
                    .image(profile.image)
                    .embedded_context(profile.embedded_context),
            );
        let login = acp::AuthMethodAgent::new("cli-login", format!("{name} login")).description(
            format!(
                "Uses the credentials of the {name} CLI: log in with the CLI itself (or set its API key in the environment) before starting a session."
            ),
        );
        let response = acp::InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .auth_methods(vec![acp::AuthMethod::Agent(login)])
            .agent_info(
                acp::Implementation::new(
                    format!("bridge-{}", self.channel.id()),
                    self.options.version,
                )
                .title(format!("{name} (bridge)")),
            );
        to_value(response)
    }

    /// `session/close`: the session is forgotten (later requests naming it are refused) and
    /// its running prompt cancelled (it answers `cancelled`); the caller closes its CLI.
    fn close_session(&self, params: &Value) -> Result<Arc<AcpSession>, RequestError> {
        let request: acp::CloseSessionRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        let id = request.session_id.0.to_string();
        let session = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut sessions| sessions.remove(&id))
            .ok_or(RequestError::UnknownSession(id))?;
        session.closed.store(true, Ordering::SeqCst);
        session.cancel_running();
        Ok(session)
    }

    fn new_session(&self, params: &Value) -> Result<Value, RequestError> {
        let request: acp::NewSessionRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        absolute(&request.cwd)?;
        let servers = self.mcp_servers(&request.mcp_servers);
        let id = match self.take_spare() {
            Some(spare) if servers.is_empty() && same_dir(&spare.cwd, &request.cwd) => {
                self.register(&spare);
                spare.id.clone()
            }
            other => {
                if let Some(spare) = other {
                    self.discard(spare);
                }
                let id = uuid::Uuid::new_v4().to_string();
                self.open_session(id.clone(), request.cwd, None, servers);
                id
            }
        };
        let options = self.config_options(&self.options.model);
        to_value(
            acp::NewSessionResponse::new(id)
                .modes(modes())
                .config_options(options),
        )
    }

    /// A session in `cwd` registered as `id`, whose first turn resumes `resume`; its CLI is
    /// started in the background (an answer does not wait for the CLI to start).
    fn open_session(
        &self,
        id: String,
        cwd: PathBuf,
        resume: Option<String>,
        mcp_servers: Vec<McpServer>,
    ) -> Arc<AcpSession> {
        let session = self.start_session(id, cwd, resume, mcp_servers);
        self.register(&session);
        session
    }

    /// Makes the clients' requests find `session` by its id.
    fn register(&self, session: &Arc<AcpSession>) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(session.id.clone(), Arc::clone(session));
        }
    }

    /// The prestarted session, if one is still waiting.
    fn take_spare(&self) -> Option<Arc<AcpSession>> {
        self.spare.lock().ok()?.take()
    }

    /// Closes a session no client request will reach (its CLI's graceful close, in the
    /// background).
    fn discard(&self, session: Arc<AcpSession>) {
        self.tasks
            .spawn(async move { session.session.close().await });
    }

    /// [`Agent::open_session`] without registering it: the session, its CLI starting in the
    /// background.
    fn start_session(
        &self,
        id: String,
        cwd: PathBuf,
        resume: Option<String>,
        mcp_servers: Vec<McpServer>,
    ) -> Arc<AcpSession> {
        let (watcher, asks) = mpsc::unbounded_channel();
        let broker = Arc::new(
            PermissionBroker::new(true, None, self.options.approval_timeout).watched(watcher),
        );
        let session = Session::open(
            Arc::clone(&self.channel),
            SessionOptions {
                limits: self.options.limits,
                permissions: Some(Arc::clone(&broker)),
                redactor: self.options.redactor.clone(),
                ..SessionOptions::default()
            },
        );
        let session = Arc::new(AcpSession {
            id: id.clone(),
            session,
            broker,
            asks: tokio::sync::Mutex::new(asks),
            cwd,
            mode: Mutex::new("default".to_string()),
            running: Mutex::new(None),
            closed: AtomicBool::new(false),
            started: AtomicBool::new(false),
            model: Mutex::new(self.options.model.clone()),
            recorded: Mutex::new(resume.clone()),
            resume,
            cost: Mutex::new(None),
            mcp_servers,
        });
        {
            let session = Arc::clone(&session);
            let request = session.first_request(String::new());
            self.tasks.spawn(async move {
                let _ = session.session.prepare(request).await;
            });
        }
        session
    }

    /// The client's MCP servers the provider takes ([`Channel::mcp_support`]); the others are
    /// dropped with a warning on stderr (the client's log).
    fn mcp_servers(&self, servers: &[acp::McpServer]) -> Vec<McpServer> {
        let support = self.channel.mcp_support();
        servers
            .iter()
            .filter_map(|server| {
                let (name, transport) = match server {
                    acp::McpServer::Stdio(s) => (
                        s.name.clone(),
                        McpTransport::Stdio {
                            command: s.command.to_string_lossy().into_owned(),
                            args: s.args.clone(),
                            env: s
                                .env
                                .iter()
                                .map(|v| (v.name.clone(), v.value.clone()))
                                .collect(),
                        },
                    ),
                    acp::McpServer::Http(s) => (
                        s.name.clone(),
                        McpTransport::Http {
                            url: s.url.clone(),
                            headers: header_pairs(&s.headers),
                        },
                    ),
                    acp::McpServer::Sse(s) => (
                        s.name.clone(),
                        McpTransport::Sse {
                            url: s.url.clone(),
                            headers: header_pairs(&s.headers),
                        },
                    ),
                    _ => {
                        eprintln!("bridge acp: an MCP server of an unknown transport is ignored");
                        return None;
                    }
                };
                if !support.takes(&transport) {
                    eprintln!(
                        "bridge acp: {} takes no {} MCP servers; `{name}` is ignored",
                        self.channel.display_name(),
                        transport.kind()
                    );
                    return None;
                }
                Some(McpServer { name, transport })
            })
            .collect()
    }

    /// `session/load` (`replay`: the provider's history of the conversation replayed as
    /// updates) and `session/resume` (no replay): a session whose first turn resumes the
    /// conversation, once its history was found.
    async fn load_session(&self, params: &Value, replay: bool) -> Result<Value, RequestError> {
        // Both requests have the same required fields.
        let request: acp::LoadSessionRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        absolute(&request.cwd)?;
        let acp_id = request.session_id.0.to_string();
        let provider_id = self
            .options
            .sessions
            .as_ref()
            .and_then(|map| map.lookup(&acp_id))
            .unwrap_or_else(|| acp_id.clone());
        let args = vec![
            provider_id.clone(),
            request.cwd.to_string_lossy().into_owned(),
        ];
        let body = self
            .query("getSession", args)
            .await
            .map_err(|error| RequestError::Params(format!("cannot load the session: {error}")))?;
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages.is_empty() {
            return Err(RequestError::UnknownSession(acp_id));
        }
        let servers = self.mcp_servers(&request.mcp_servers);
        if let Some(spare) = self.take_spare() {
            // The client reopens conversations: the prestarted CLI is not for it.
            self.discard(spare);
        }
        let session = self.open_session(acp_id, request.cwd, Some(provider_id), servers);
        let options = self.config_options(&self.options.model);
        if !replay {
            return to_value(
                acp::ResumeSessionResponse::new()
                    .modes(modes())
                    .config_options(options),
            );
        }
        for update in history::replay(&messages) {
            self.out.update(&session.id, update).await;
        }
        to_value(
            acp::LoadSessionResponse::new()
                .modes(modes())
                .config_options(options),
        )
    }

    /// `session/list`: the provider's conversations (its `listSessions`), newest first, under
    /// the ACP ids they were opened with where the session map knows them, [`LIST_PAGE`] at a
    /// time (the cursor is the index of the next one).
    async fn list_sessions(&self, params: &Value) -> Result<Value, RequestError> {
        let request: acp::ListSessionsRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        if let Some(cwd) = &request.cwd {
            absolute(cwd)?;
        }
        let start = match &request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                RequestError::Params(format!("unknown cursor `{cursor}` (pass a nextCursor)"))
            })?,
        };
        let mut filter = serde_json::Map::new();
        if let Some(cwd) = &request.cwd {
            filter.insert("cwd".into(), json!(cwd));
        }
        let body = self
            .query_with("listSessions", Vec::new(), Some(filter))
            .await
            .map_err(|error| RequestError::Unsupported(format!("cannot list sessions: {error}")))?;
        let acp_ids = self
            .options
            .sessions
            .as_ref()
            .map(history::SessionMap::acp_ids)
            .unwrap_or_default();
        let listed = body["sessions"].as_array().cloned().unwrap_or_default();
        let total = listed.len();
        let sessions: Vec<acp::SessionInfo> = listed
            .iter()
            .skip(start)
            .take(LIST_PAGE)
            .filter_map(|entry| {
                let provider_id = entry["sessionId"].as_str()?;
                let cwd = entry["cwd"].as_str()?;
                let id = acp_ids
                    .get(provider_id)
                    .cloned()
                    .unwrap_or_else(|| provider_id.to_string());
                Some(
                    acp::SessionInfo::new(id, PathBuf::from(cwd))
                        .title(entry["title"].as_str().map(str::to_string))
                        .updated_at(entry["updatedAt"].as_str().map(str::to_string)),
                )
            })
            .collect();
        let next = start.saturating_add(LIST_PAGE);
        let response = acp::ListSessionsResponse::new(sessions)
            .next_cursor((next < total).then(|| next.to_string()));
        to_value(response)
    }

    /// Runs the provider's query `name` with `args`: its reply, or why there is none.
    async fn query(&self, name: &str, args: Vec<String>) -> Result<Value, String> {
        self.query_with(name, args, None).await
    }

    /// [`Agent::query`] with a JSON object on the query's stdin.
    async fn query_with(
        &self,
        name: &str,
        args: Vec<String>,
        stdin: Option<serde_json::Map<String, Value>>,
    ) -> Result<Value, String> {
        let query = bridge_core::query::find(&*self.channel, name)
            .ok_or_else(|| format!("{} has no {name}", self.channel.display_name()))?;
        let deadline = bridge_core::query::DEFAULT_DEADLINE;
        let asked = bridge_core::query::QueryRequest {
            provider: self.channel.id(),
            query: query.name,
            args,
            stdin,
            deadline,
        };
        match tokio::time::timeout(deadline, (query.run)(asked)).await {
            Ok(Ok(reply)) => serde_json::from_str(reply.json()).map_err(|e| e.to_string()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("{name} did not finish in time")),
        }
    }

    /// Waits for a quiet moment to read the model list: no prompt running for
    /// [`MODELS_QUIET`], and a first prompt ended or [`MODELS_IDLE_DELAY`] passed. Listing starts a CLI of its own (Claude Code: a
    /// second `claude` process); started with the session's, the two compete for the CPU and
    /// the first answer comes later. `false`: the agent closed meanwhile.
    async fn quiet_for_models(&self) -> bool {
        let mut turns = self.turns.subscribe();
        let delay = tokio::time::sleep(MODELS_IDLE_DELAY);
        tokio::pin!(delay);
        let mut waited = false;
        loop {
            let now = *turns.borrow_and_update();
            if now.running == 0 && (now.ended > 0 || waited) {
                // Quiet for a moment, not just between two prompts a client sends back to
                // back: the answer would hold up the next prompt's first chunk.
                tokio::select! {
                    changed = turns.changed() => {
                        if changed.is_err() {
                            return false;
                        }
                        continue;
                    }
                    () = tokio::time::sleep(MODELS_QUIET) => return true,
                    () = self.closing.cancelled() => return false,
                }
            }
            tokio::select! {
                changed = turns.changed() => {
                    if changed.is_err() {
                        return false;
                    }
                }
                () = &mut delay, if !waited => waited = true,
                () = self.closing.cancelled() => return false,
            }
        }
    }

    /// The model list of `session`'s CLI ([`Inquiry::Models`], asked between turns: no CLI
    /// of its own), in the `listModels` reply's shape; `None` where
    /// it cannot tell.
    async fn models_of_a_warm_cli(session: &AcpSession) -> Option<Value> {
        // Behind the session's own preparation (a no-op once its CLI runs; a closed session
        // answers neither).
        session
            .session
            .prepare(session.first_request(String::new()))
            .await
            .ok()?;
        let list = session.session.inquire(Inquiry::Models).await.ok()?;
        let mut list = list.as_object()?.clone();
        list.insert("success".into(), Value::Bool(true));
        Some(Value::Object(list))
    }

    /// Reads the provider's model list once, at a quiet moment (after the first prompt, or
    /// 5 s without one: asked before the first prompt, even the warm CLI's answer would delay
    /// it): from the prestarted session's CLI where it can tell, else with `listModels` (which
    /// may start a CLI of its own).
    async fn read_models(&self, prestarted: Option<Arc<AcpSession>>) {
        if !self.quiet_for_models().await {
            return;
        }
        let warm = match prestarted {
            Some(session) => Self::models_of_a_warm_cli(&session).await,
            None => None,
        };
        let list = match warm {
            Some(list) => list,
            None => {
                let Ok(list) = self
                    .query(bridge_core::query::LIST_MODELS, Vec::new())
                    .await
                else {
                    return;
                };
                list
            }
        };
        let models: Vec<(String, String)> = list["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let id = m["id"].as_str()?.to_string();
                let label = m["label"].as_str().unwrap_or(&id).to_string();
                Some((id, label))
            })
            .collect();
        if list["success"] != true || models.is_empty() {
            return;
        }
        if let Ok(mut known) = self.models.lock() {
            *known = Some(models);
        }
        // Sessions opened before the list came learn of the option now.
        let sessions: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default();
        for session in sessions {
            let current = session.model.lock().ok().and_then(|m| m.clone());
            if let Some(options) = self.config_options(&current) {
                let update =
                    acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(options));
                self.out.update(&session.id, update).await;
            }
        }
    }

    /// The session config options: the model, where the provider's model list is known.
    fn config_options(&self, current: &Option<String>) -> Option<Vec<acp::SessionConfigOption>> {
        let models = self.models.lock().ok()?.clone()?;
        let current = current
            .clone()
            .or_else(|| models.first().map(|(id, _)| id.clone()))?;
        let mut options: Vec<acp::SessionConfigSelectOption> = models
            .iter()
            .map(|(id, label)| acp::SessionConfigSelectOption::new(id.clone(), label.clone()))
            .collect();
        if !models.iter().any(|(id, _)| *id == current) {
            options.push(acp::SessionConfigSelectOption::new(
                current.clone(),
                current.clone(),
            ));
        }
        Some(vec![
            acp::SessionConfigOption::select("model", "Model", current, options)
                .category(acp::SessionConfigOptionCategory::Model),
        ])
    }

    /// `session/set_config_option`: `model` ([`Session::set_model`], from the next turn).
    fn set_config_option(&self, params: &Value) -> Result<Value, RequestError> {
        let request: acp::SetSessionConfigOptionRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        let session = self
            .session(&request.session_id.0)
            .ok_or_else(|| RequestError::UnknownSession(request.session_id.0.to_string()))?;
        let acp::SessionConfigOptionValue::ValueId { value } = request.value else {
            return Err(RequestError::Params("`model` takes a model id".into()));
        };
        if &*request.config_id.0 != "model" {
            return Err(RequestError::Params(format!(
                "unknown config option `{}` (options: model)",
                request.config_id.0
            )));
        }
        let model = value.0.to_string();
        session.session.set_model(model.clone());
        if let Ok(mut current) = session.model.lock() {
            *current = Some(model.clone());
        }
        let options = self.config_options(&Some(model)).unwrap_or_default();
        to_value(acp::SetSessionConfigOptionResponse::new(options))
    }

    fn set_mode(&self, params: &Value) -> Result<Value, RequestError> {
        let request: acp::SetSessionModeRequest = serde_json::from_value(params.clone())
            .map_err(|e| RequestError::Params(e.to_string()))?;
        let session = self
            .session(&request.session_id.0)
            .ok_or_else(|| RequestError::UnknownSession(request.session_id.0.to_string()))?;
        let mode = request.mode_id.0.to_string();
        if !MODES.iter().any(|(id, _, _)| *id == mode) {
            return Err(RequestError::UnknownMode(mode));
        }
        if let Ok(mut current) = session.mode.lock() {
            current.clone_from(&mode);
        }
        session.session.set_permission_mode(mode);
        Ok(json!({}))
    }

    async fn prompt(self: Arc<Self>, id: Id, params: Value) {
        self.turns.send_modify(|t| t.running += 1);
        let result = self.prompt_inner(params).await;
        self.turns.send_modify(|t| {
            t.running -= 1;
            t.ended += 1;
        });
        let result = match result {
            Ok(result) => Ok(result),
            Err(PromptError::Refused(error)) => Err((error.code(), error.to_string())),
            Err(PromptError::Failed(message)) => Err((INTERNAL_ERROR, message)),
        };
        self.out.respond(&id, result).await;
    }

    async fn prompt_inner(self: &Arc<Self>, params: Value) -> Result<Value, PromptError> {
        let request: acp::PromptRequest = serde_json::from_value(params)
            .map_err(|e| PromptError::Refused(RequestError::Params(e.to_string())))?;
        let session = self.session(&request.session_id.0).ok_or_else(|| {
            PromptError::Refused(RequestError::UnknownSession(
                request.session_id.0.to_string(),
            ))
        })?;
        let message =
            prompt_text(&request.prompt, self.options.profile).map_err(PromptError::Refused)?;
        let images = prompt_images(&request.prompt);
        // One prompt of a session at a time reads its approvals.
        let mut asks = session.asks.lock().await;
        let cancel = CancellationToken::new();
        if let Ok(mut running) = session.running.lock() {
            *running = Some(cancel.clone());
        }
        if session.closed.load(Ordering::SeqCst) {
            cancel.cancel();
        }
        let mut turn = if session.started.swap(true, Ordering::SeqCst) {
            let mut turn = Request::from_prompt(message);
            turn.cwd = Some(session.cwd.clone());
            turn
        } else {
            session.first_request(message)
        };
        turn.attachments = images;
        let mut events = session.session.turn(Ok(turn), cancel.clone());
        let cost_before = session.cost.lock().ok().and_then(|cost| *cost);
        let mut encoder = UpdateEncoder::with_session_cost(cost_before);
        let mut end: Option<TurnEnd> = None;
        let mut error: Option<String> = None;
        loop {
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else { break };
                    match &event {
                        Event::TurnEnd(turn_end) => end = Some(turn_end.clone()),
                        Event::Error(info) => error = Some(info.message.clone()),
                        _ => {}
                    }
                    for update in encoder.encode(&event) {
                        if !self.out.update(&session.id, update).await {
                            cancel.cancel();
                        }
                    }
                }
                Some(ask) = asks.recv() => {
                    let agent = Arc::clone(self);
                    let session = Arc::clone(&session);
                    self.tasks.spawn(async move { agent.ask_client(&session, ask).await });
                }
            }
        }
        if let Ok(mut running) = session.running.lock() {
            *running = None;
        }
        if let Ok(mut cost) = session.cost.lock() {
            *cost = encoder.session_cost();
        }
        self.remember(&session);
        if cancel.is_cancelled() {
            return Ok(json!({"stopReason": "cancelled"}));
        }
        let end =
            end.unwrap_or_else(|| TurnEnd::failed(None, "the turn ended without a result".into()));
        match encode::stop_reason(&end) {
            Some(reason) => {
                to_value(acp::PromptResponse::new(reason)).map_err(PromptError::Refused)
            }
            None => Err(PromptError::Failed(
                error
                    .or(end.error)
                    .unwrap_or_else(|| "the turn failed".into()),
            )),
        }
    }

    /// Records the provider conversation `session` is now, when it changed.
    fn remember(&self, session: &AcpSession) {
        let (Some(map), Some(provider_id)) = (&self.options.sessions, session.session.session_id())
        else {
            return;
        };
        let Ok(mut recorded) = session.recorded.lock() else {
            return;
        };
        if recorded.as_deref() == Some(provider_id.as_str()) {
            return;
        }
        if let Err(error) = map.record(&session.id, &provider_id) {
            eprintln!("bridge acp: cannot record session {}: {error}", session.id);
            return;
        }
        *recorded = Some(provider_id);
    }

    /// Asks the client about `request` and hands its answer to the broker.
    async fn ask_client(&self, session: &AcpSession, request: PermissionRequest) {
        let params = acp::RequestPermissionRequest::new(
            session.id.clone(),
            encode::permission_call(&request),
            encode::options_for(&request),
        );
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        let answer = self
            .calls
            .call(&self.out, "session/request_permission", params)
            .await;
        let decision = match answer {
            Some(Ok(result)) => {
                match serde_json::from_value::<acp::RequestPermissionResponse>(result) {
                    Ok(response) => match response.outcome {
                        acp::RequestPermissionOutcome::Selected(selected) => {
                            match encode::decision_of(&selected.option_id.0) {
                                Some(DecisionKind::Deny) => {
                                    PermissionDecision::deny("The user denied this tool call.")
                                }
                                Some(kind) => PermissionDecision::new(kind),
                                None => PermissionDecision::deny(format!(
                                    "The client chose an unknown option `{}`.",
                                    selected.option_id.0
                                )),
                            }
                        }
                        // The client cancelled the prompt turn.
                        _ => PermissionDecision::new(DecisionKind::Cancel),
                    },
                    Err(error) => PermissionDecision::deny(format!(
                        "The client's answer could not be read ({error}); denied."
                    )),
                }
            }
            Some(Err(error)) => PermissionDecision::deny(format!(
                "The client could not ask the user ({}); denied.",
                error.describe()
            )),
            None => PermissionDecision::deny("The client went away before answering; denied."),
        };
        session.broker.answer(&request.request_id, decision);
    }

    /// Interrupts every running turn and closes every session.
    async fn shut_down(&self) {
        let mut sessions: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        sessions.extend(self.take_spare());
        self.calls.clear();
        for session in &sessions {
            session.broker.client_gone();
            session.cancel_running();
        }
        let closes = sessions.iter().map(|session| session.session.close());
        let grace = self.options.limits.exit_grace
            + self.options.limits.kill_grace
            + Duration::from_secs(2);
        let _ = tokio::time::timeout(grace, futures_util::future::join_all(closes)).await;
        self.closing.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tasks.wait()).await;
    }
}

impl AcpSession {
    /// Interrupts the session's running prompt, if one runs.
    fn cancel_running(&self) {
        if let Ok(running) = self.running.lock()
            && let Some(token) = running.as_ref()
        {
            token.cancel();
        }
    }

    /// The request of the first turn (or the preparation): the session's cwd and mode.
    fn first_request(&self, message: String) -> Request {
        let mut request = Request::from_prompt(message);
        request.cwd = Some(self.cwd.clone());
        request.permission_mode = self.mode.lock().ok().map(|mode| mode.clone());
        request.session_id.clone_from(&self.resume);
        request.model = self.model.lock().ok().and_then(|model| model.clone());
        request.mcp_servers.clone_from(&self.mcp_servers);
        request
    }
}

/// An MCP server's HTTP headers as name/value pairs.
fn header_pairs(headers: &[acp::HttpHeader]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect()
}

/// The unified permission modes as an ACP mode state (a session starts in `default`).
fn modes() -> acp::SessionModeState {
    let modes = MODES
        .iter()
        .map(|(id, name, description)| {
            acp::SessionMode::new(*id, *name).description(description.to_string())
        })
        .collect();
    acp::SessionModeState::new("default", modes)
}

/// Whether two directories are the same one (compared resolved, where they resolve).
fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    let resolved =
        |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    a == b || resolved(a) == resolved(b)
}

/// A session's `cwd` must be absolute (the protocol says so).
fn absolute(cwd: &std::path::Path) -> Result<(), RequestError> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(RequestError::Params(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        )))
    }
}

enum PromptError {
    Refused(RequestError),
    Failed(String),
}

fn to_value(value: impl serde::Serialize) -> Result<Value, RequestError> {
    serde_json::to_value(value)
        .map_err(|e| RequestError::Unsupported(format!("cannot encode the answer: {e}")))
}

/// The images of a prompt (its `image` blocks, base64 data), as the turn's attachments.
fn prompt_images(blocks: &[acp::ContentBlock]) -> Vec<Attachment> {
    blocks
        .iter()
        .filter_map(|block| match block {
            acp::ContentBlock::Image(image) => Some(Attachment::Inline {
                file_name: None,
                media_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The message a prompt's content blocks make: text as is, resource links by their URI (a
/// file path for `file://` ones), embedded text resources in a `<context>` block.
fn prompt_text(
    blocks: &[acp::ContentBlock],
    profile: ProviderProfile,
) -> Result<String, RequestError> {
    let mut parts: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(text) => parts.push(text.text.clone()),
            acp::ContentBlock::ResourceLink(link) => {
                parts.push(
                    link.uri
                        .strip_prefix("file://")
                        .unwrap_or(&link.uri)
                        .to_string(),
                );
            }
            acp::ContentBlock::Resource(resource) if profile.embedded_context => {
                match &resource.resource {
                    acp::EmbeddedResourceResource::TextResourceContents(text) => parts.push(
                        format!("<context uri=\"{}\">\n{}\n</context>", text.uri, text.text),
                    ),
                    _ => {
                        return Err(RequestError::Unsupported(
                            "binary embedded resources are not supported".into(),
                        ));
                    }
                }
            }
            // Sent as attachments ([`prompt_images`]).
            acp::ContentBlock::Image(_) if profile.image => {}
            acp::ContentBlock::Image(_) => {
                return Err(RequestError::Unsupported(
                    "this provider takes no images over ACP (promptCapabilities.image is false)"
                        .into(),
                ));
            }
            _ => {
                return Err(RequestError::Unsupported(
                    "this content type is not supported (see promptCapabilities)".into(),
                ));
            }
        }
    }
    let message = parts.join("\n");
    if message.trim().is_empty() {
        return Err(RequestError::Params("the prompt has no text".into()));
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(value: Value) -> Vec<acp::ContentBlock> {
        serde_json::from_value(value).expect("content blocks")
    }

    #[test]
    fn a_prompt_is_its_text_links_and_embedded_text() {
        let profile = ProviderProfile {
            embedded_context: true,
            ..ProviderProfile::default()
        };
        let message = prompt_text(
            &blocks(json!([
                {"type": "text", "text": "explain"},
                {"type": "resource_link", "name": "a.rs", "uri": "file:///p/a.rs"},
                {"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}"}}
            ])),
            profile,
        )
        .expect("a message");
        assert_eq!(
            message,
            "explain\n/p/a.rs\n<context uri=\"file:///p/b.rs\">\nfn b() {}\n</context>"
        );
        let image = blocks(json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]));
        assert!(matches!(
            prompt_text(&image, profile),
            Err(RequestError::Unsupported(_))
        ));
        let with_image = ProviderProfile {
            image: true,
            ..profile
        };
        let both = blocks(json!([
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "text", "text": "what is it"}
        ]));
        assert_eq!(
            prompt_text(&both, with_image).expect("a message"),
            "what is it"
        );
        assert_eq!(
            prompt_images(&both),
            [Attachment::Inline {
                file_name: None,
                media_type: "image/png".into(),
                data: "AA==".into()
            }]
        );
        let empty = blocks(json!([{"type": "text", "text": "  "}]));
        assert!(matches!(
            prompt_text(&empty, profile),
            Err(RequestError::Params(_))
        ));
        let embedded = blocks(json!([{"type": "resource", "resource": {"uri": "u", "text": "t"}}]));
        assert!(prompt_text(&embedded, ProviderProfile::default()).is_err());
    }
}
