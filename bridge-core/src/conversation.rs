//! Conversations that outlive a turn.
//!
//! A [`Conversation`] is what a channel holds for many turns: a warm CLI process (Claude Code
//! reading stream-json on stdin, an ACP agent), or, for CLIs that run one process per turn, the
//! session id the next turn resumes ([`Respawn`]). [`Channel::conversation`] makes one.
//!
//! [`Session`] is the library's entry point on top of it. It gives every turn the guarantees
//! `bridge <provider> send` gives: the request is validated and its transport checked, the turn
//! start comes first, a secret streamed across deltas is redacted, a failed end always follows
//! one error, exactly one turn end comes last. The binary's `send` and `session` commands are
//! users of this same API.
//!
//! ```no_run
//! # async fn demo(channel: std::sync::Arc<dyn bridge_core::Channel>) {
//! use bridge_core::conversation::{Session, SessionOptions};
//! use bridge_core::request::Request;
//! use futures_util::StreamExt;
//!
//! let options = SessionOptions {
//!     announce_continuity: true,
//!     ..SessionOptions::default()
//! };
//! let session = Session::open(channel, options);
//! for prompt in ["remember the word tangerine", "which word?"] {
//!     let mut events = session.turn(Ok(Request::from_prompt(prompt)), Default::default());
//!     while let Some(event) = events.next().await {
//!         println!("{event:?}");
//!     }
//! }
//! session.close().await;
//! # }
//! ```

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channel::Channel;
use crate::event::{ErrorCode, ErrorInfo, Event, StopReason, TurnEnd, Usage, UsageScope};
use crate::permission::PermissionBroker;
use crate::record::Recording;
use crate::redact::{Redactor, SplitSecretGuard};
use crate::request::{Request, RequestError};
use crate::turn::{TurnContext, TurnLimits};

/// How a session keeps the conversation between turns (reported once per session as a
/// `status` event whose message starts with `conversation:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuity {
    /// One CLI process for the whole conversation.
    WarmProcess,
    /// A CLI process per turn, resumed by the session id the first turn reported.
    RespawnResume,
    /// A CLI process per turn, and the CLI cannot resume: every turn starts afresh.
    NoResume,
}

impl Continuity {
    /// `warm process`, `respawn + native resume` or `no resume`.
    pub fn as_str(self) -> &'static str {
        match self {
            Continuity::WarmProcess => "warm process",
            Continuity::RespawnResume => "respawn + native resume",
            Continuity::NoResume => "no resume",
        }
    }
}

/// A conversation a channel holds across turns. One turn runs at a time ([`Session`] makes
/// sure). Every turn's request is complete (the session fills in the session id and the
/// current permission mode and model); a conversation applies what changed since the last
/// turn, live where the CLI can, by restarting it otherwise (and says which in a `status`
/// event).
pub trait Conversation: Send {
    /// How this conversation is kept between turns.
    fn continuity(&self) -> Continuity;

    /// Runs one turn, sending its events to `ctx` and ending with exactly one
    /// [`Event::TurnEnd`].
    ///
    /// Cancel safety: not cancel-safe; a turn dropped midway leaves a warm process in an
    /// unknown state, so implementations stop it on the next turn or on [`Conversation::close`].
    fn turn<'a>(&'a mut self, request: Request, ctx: TurnContext) -> BoxFuture<'a, ()>;

    /// Ends the conversation: the CLI gets its graceful close, then the group kill.
    fn close<'a>(&'a mut self, limits: TurnLimits) -> BoxFuture<'a, ()>;

    /// Starts the CLI for `request` before the first turn, so that turn does not wait for it
    /// (the plugin's `preconnect`). A conversation without a warm process has nothing to start
    /// (the default). `ctx` carries the deadlines and where warnings go; no turn runs.
    ///
    /// Cancel safety: like [`Conversation::turn`].
    fn prepare<'a>(
        &'a mut self,
        request: &'a Request,
        ctx: &'a TurnContext,
    ) -> BoxFuture<'a, Result<(), ErrorInfo>> {
        let _ = (request, ctx);
        Box::pin(async { Ok(()) })
    }

    /// The process id of the warm CLI while it runs (`None` between processes, or for a
    /// conversation that runs one process per turn).
    fn pid(&self) -> Option<u32> {
        None
    }

    /// Asks the warm CLI `inquiry` between turns (Claude Code's `get_context_usage`): its
    /// answer as the CLI gave it. A conversation whose CLI cannot tell answers
    /// [`InquiryError::Unsupported`] (the default); one with no process running
    /// [`InquiryError::NotRunning`]. `ctx` carries the deadlines; no turn runs.
    ///
    /// Cancel safety: like [`Conversation::turn`].
    fn inquire<'a>(
        &'a mut self,
        inquiry: Inquiry,
        ctx: &'a TurnContext,
    ) -> BoxFuture<'a, Result<serde_json::Value, InquiryError>> {
        let _ = (inquiry, ctx);
        Box::pin(async { Err(InquiryError::Unsupported) })
    }
}

/// What a warm conversation can be asked between turns ([`Conversation::inquire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inquiry {
    /// How full the context window is (the plugin's `getContextUsage`).
    ContextUsage,
    /// What the process has spent so far (the plugin's `getUsage`).
    Usage,
    /// The models the CLI offers, answered as a [`crate::query::ModelList`] (what `listModels`
    /// would start a CLI of its own for). Not a plugin command of the daemon: its
    /// `listModels` stays the query.
    Models,
}

impl Inquiry {
    /// The plugin's command for it (`getContextUsage`, `getUsage`, `listModels`).
    pub fn command(self) -> &'static str {
        match self {
            Inquiry::ContextUsage => crate::query::CONTEXT_USAGE,
            Inquiry::Usage => crate::query::USAGE,
            Inquiry::Models => crate::query::LIST_MODELS,
        }
    }

    /// The inquiry of a plugin command the daemon answers from a warm session, if it is one
    /// (`getContextUsage`, `getUsage`).
    pub fn of_command(command: &str) -> Option<Inquiry> {
        [Inquiry::ContextUsage, Inquiry::Usage]
            .into_iter()
            .find(|i| i.command() == command)
    }
}

/// Why a conversation did not answer an [`Inquiry`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InquiryError {
    /// The CLI cannot tell.
    #[error("this provider's conversations cannot tell")]
    Unsupported,
    /// No CLI process is running for the conversation (none started yet, or it exited).
    #[error("no CLI process is running for this conversation")]
    NotRunning,
    /// The CLI was asked and failed or refused.
    #[error("{0}")]
    Failed(String),
}

/// The conversation of a channel that runs one process per turn: each turn is the channel's
/// [`Channel::send`] with the session id of the turn before (the CLI's own resume).
pub struct Respawn {
    channel: Arc<dyn Channel>,
    continuity: Continuity,
}

impl Respawn {
    /// A conversation over `channel`'s turns; `resumes` says whether its CLI can resume.
    pub fn new(channel: Arc<dyn Channel>, resumes: bool) -> Self {
        Respawn {
            channel,
            continuity: if resumes {
                Continuity::RespawnResume
            } else {
                Continuity::NoResume
            },
        }
    }
}

impl Conversation for Respawn {
    fn continuity(&self) -> Continuity {
        self.continuity
    }

    fn turn<'a>(&'a mut self, request: Request, ctx: TurnContext) -> BoxFuture<'a, ()> {
        self.channel.send(request, ctx)
    }

    fn close<'a>(&'a mut self, _limits: TurnLimits) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Settings of a [`Session`].
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Deadlines of each turn.
    pub limits: TurnLimits,
    /// Include provider-native lines as [`Event::Raw`].
    pub raw: bool,
    /// Who answers approvals (default: nobody, every approval is denied at once).
    pub permissions: Option<Arc<PermissionBroker>>,
    /// Cancelled when nobody reads the output any more: the running turn stops without grace
    /// periods.
    pub abort: CancellationToken,
    /// The secrets no event may carry, also when streamed across several deltas.
    pub redactor: Redactor,
    /// Record the CLI's raw stdin, stdout and stderr under this prefix
    /// ([`crate::record::Recording`]); a prefix that cannot be written is a warning.
    pub record: Option<std::path::PathBuf>,
    /// Say in the first turn, as a `status` event (`conversation: warm process`, …), how the
    /// conversation is kept between turns. Off for a one-turn `send`, where it means nothing.
    pub announce_continuity: bool,
}

/// What the session knows between turns.
struct State {
    conversation: Option<Box<dyn Conversation>>,
    /// The conversation's id, once a turn reported it.
    session_id: Option<String>,
    /// Changes asked for between turns ([`Session::set_permission_mode`], [`Session::set_model`]).
    permission_mode: Option<String>,
    model: Option<String>,
    /// The settings the turn before ran with (its request without message and attachments).
    last: Option<Request>,
    recording: Option<Arc<Recording>>,
    record_warning: Option<String>,
    /// The continuity `status` was sent ([`SessionOptions::announce_continuity`]).
    announced: bool,
    /// How full the context was after the last turn that said (the answer to
    /// [`Inquiry::ContextUsage`] when the CLI cannot be asked).
    context: Option<ContextLevel>,
}

/// The context's fill after a turn, from its usage events: the tokens in it and the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextLevel {
    /// Tokens in the context: the provider's own figure, else the last model call's input and
    /// output, else the turn's.
    pub used: u64,
    /// The model's context window.
    pub window: u64,
}

impl ContextLevel {
    /// Reads one usage event of a turn into `level` (`None` until one is seen).
    fn observe(level: &mut Option<(Option<u64>, Option<u64>)>, usage: &Usage) {
        let (used, window) = level.get_or_insert((None, None));
        *window = usage.context_window.or(*window);
        *used = match usage.scope {
            UsageScope::Message => Some(usage.context_used()),
            _ => usage
                .context_tokens
                .or(*used)
                .or(Some(usage.context_used())),
        };
    }

    /// The plugin's context-usage data (`ContextUsageData`: totals, percentage and the two
    /// categories a provider without Claude's breakdown has, the conversation and the free
    /// space), from real counts only; `source` says where the numbers come from.
    ///
    /// ```
    /// use bridge_core::conversation::ContextLevel;
    /// let data = ContextLevel { used: 5_000, window: 200_000 }.usage_data(Some("m"));
    /// assert_eq!((data["totalTokens"].as_u64(), data["maxTokens"].as_u64()), (Some(5_000), Some(200_000)));
    /// assert_eq!(data["percentage"], 2.5);
    /// assert_eq!(data["categories"][1]["tokens"], 195_000);
    /// ```
    pub fn usage_data(&self, model: Option<&str>) -> serde_json::Value {
        let window = self.window.max(1);
        let used = self.used.min(window);
        let free = window - used;
        // One decimal, as the plugin shows it.
        let percentage = (1000.0 * used as f64 / window as f64).round() / 10.0;
        serde_json::json!({
            "totalTokens": used,
            "maxTokens": window,
            "rawMaxTokens": window,
            "percentage": percentage,
            "model": model.unwrap_or_default(),
            "isAutoCompactEnabled": false,
            "source": "last_turn_usage",
            "categories": [
                {"name": "Conversation", "tokens": used, "color": "claude"},
                {"name": "Free space", "tokens": free, "color": "inactive"},
            ],
            "gridRows": [],
            "memoryFiles": [],
            "mcpTools": [],
            "agents": [],
        })
    }
}

/// What the session's worker does next, in the order asked.
enum Job {
    Turn {
        request: Box<Result<Request, RequestError>>,
        cancel: CancellationToken,
        events: mpsc::Sender<Event>,
    },
    SetPermissionMode(String),
    SetModel(String),
    Inquire {
        inquiry: Inquiry,
        done: tokio::sync::oneshot::Sender<Result<serde_json::Value, InquiryError>>,
    },
    Prepare {
        request: Box<Request>,
        done: tokio::sync::oneshot::Sender<Result<(), ErrorInfo>>,
    },
    Close(tokio::sync::oneshot::Sender<()>),
}

/// One conversation with one provider, many turns, one at a time, in the order they were
/// asked for. See the [module docs](self).
///
/// A session's turns run on a worker task: [`Session::open`] must be called inside a tokio
/// runtime. Dropping the session without [`Session::close`] ends it after the running turn
/// (a warm CLI's group is killed when its process is dropped).
pub struct Session {
    provider: &'static str,
    jobs: mpsc::UnboundedSender<Job>,
    /// The id as last seen, readable without waiting for a running turn.
    session_id: Arc<Mutex<Option<String>>>,
    /// The warm CLI's process id as last seen (after the last turn or preparation).
    pid: Arc<Mutex<Option<u32>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("provider", &self.provider)
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session with `channel`. Nothing runs until the first turn (which says where, with
    /// which model and mode: the fields of its request).
    pub fn open(channel: Arc<dyn Channel>, options: SessionOptions) -> Session {
        let (recording, record_warning) = match &options.record {
            None => (None, None),
            Some(prefix) => match Recording::create(prefix, options.redactor.clone()) {
                Ok(recording) => (Some(recording), None),
                Err(error) => (
                    None,
                    Some(format!("cannot record to {}: {error}", prefix.display())),
                ),
            },
        };
        let mut state = State {
            conversation: None,
            session_id: None,
            permission_mode: None,
            model: None,
            last: None,
            recording,
            record_warning,
            announced: false,
            context: None,
        };
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let session_id = Arc::new(Mutex::new(None));
        let seen_id = Arc::clone(&session_id);
        let pid = Arc::new(Mutex::new(None));
        let seen_pid = Arc::clone(&pid);
        let provider = channel.id();
        tokio::spawn(async move {
            while let Some(job) = queue.recv().await {
                match job {
                    Job::Turn {
                        request,
                        cancel,
                        events,
                    } => {
                        let mut out =
                            Guarded::new(events, options.redactor.clone(), options.abort.clone());
                        run_turn(&channel, &options, &mut state, *request, cancel, &mut out).await;
                        if let Some(level) = out.context_level() {
                            state.context = Some(level);
                        }
                        if let Ok(mut id) = seen_id.lock() {
                            id.clone_from(&state.session_id);
                        }
                        if let Ok(mut pid) = seen_pid.lock() {
                            *pid = state.conversation.as_ref().and_then(|c| c.pid());
                        }
                    }
                    Job::Prepare { request, done } => {
                        let result = prepare(&channel, &options, &mut state, *request).await;
                        if let Ok(mut pid) = seen_pid.lock() {
                            *pid = state.conversation.as_ref().and_then(|c| c.pid());
                        }
                        let _ = done.send(result);
                    }
                    Job::Inquire { inquiry, done } => {
                        let result = match state.conversation.as_mut() {
                            None => Err(InquiryError::NotRunning),
                            Some(conversation) => {
                                let env = state.last.as_ref().map(|r| r.env.clone());
                                let ctx = quiet_context(
                                    &options,
                                    state.recording.clone(),
                                    env.unwrap_or_default(),
                                );
                                conversation.inquire(inquiry, &ctx).await
                            }
                        };
                        // A CLI that cannot be asked: the last turn's own counts, where they
                        // include the window (never a guessed one).
                        let result = match (result, inquiry, state.context) {
                            (
                                Err(InquiryError::Unsupported),
                                Inquiry::ContextUsage,
                                Some(level),
                            ) => {
                                let model = state.last.as_ref().and_then(|r| r.model.clone());
                                Ok(level.usage_data(model.as_deref().or(state.model.as_deref())))
                            }
                            (result, _, _) => result,
                        };
                        let _ = done.send(result);
                    }
                    Job::SetPermissionMode(mode) => state.permission_mode = Some(mode),
                    Job::SetModel(model) => state.model = Some(model),
                    Job::Close(done) => {
                        if let Some(mut conversation) = state.conversation.take() {
                            conversation.close(options.limits).await;
                        }
                        let _ = done.send(());
                        return;
                    }
                }
            }
            // The session was dropped without close.
            if let Some(conversation) = state.conversation.as_mut() {
                conversation.close(options.limits).await;
            }
        });
        Session {
            provider,
            jobs,
            session_id,
            pid,
        }
    }

    /// The process id of the warm CLI as of the last turn (or [`Session::prepare`]); `None`
    /// when the conversation runs a process per turn or none is running.
    pub fn pid(&self) -> Option<u32> {
        self.pid.lock().ok().and_then(|pid| *pid)
    }

    /// Starts the CLI for the settings of `request` (its message is not sent) before the first
    /// turn, where the conversation keeps a warm process; later turns inherit its settings as
    /// they inherit a turn's. Warnings are dropped; an error says why the CLI did not start
    /// (the first turn then tries again). Runs in order with the turns asked for.
    ///
    /// Cancel safety: dropping the future does not cancel the preparation, which the session
    /// finishes before its next turn.
    pub async fn prepare(&self, request: Request) -> Result<(), ErrorInfo> {
        let (done, prepared) = tokio::sync::oneshot::channel();
        let job = Job::Prepare {
            request: Box::new(request),
            done,
        };
        if self.jobs.send(job).is_err() {
            return Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the session is closed",
            ));
        }
        prepared.await.unwrap_or_else(|_| {
            Err(ErrorInfo::new(
                ErrorCode::Internal,
                "the session ended while it was starting its CLI",
            ))
        })
    }

    /// The conversation's id, once a turn reported it.
    pub fn session_id(&self) -> Option<String> {
        self.session_id.lock().ok().and_then(|id| id.clone())
    }

    /// The permission mode of the next turns (applied live where the CLI can change it, by a
    /// restart with resume where it cannot; the turn says which in a `status` event).
    pub fn set_permission_mode(&self, mode: impl Into<String>) {
        let _ = self.jobs.send(Job::SetPermissionMode(mode.into()));
    }

    /// The model of the next turns.
    pub fn set_model(&self, model: impl Into<String>) {
        let _ = self.jobs.send(Job::SetModel(model.into()));
    }

    /// Asks the conversation's warm CLI `inquiry` ([`Conversation::inquire`]), after the turns
    /// asked for before.
    ///
    /// Cancel safety: dropping the future drops the answer, not the question.
    pub async fn inquire(&self, inquiry: Inquiry) -> Result<serde_json::Value, InquiryError> {
        let (done, answered) = tokio::sync::oneshot::channel();
        if self.jobs.send(Job::Inquire { inquiry, done }).is_err() {
            return Err(InquiryError::NotRunning);
        }
        answered.await.unwrap_or(Err(InquiryError::NotRunning))
    }

    /// Runs one turn of `request` (or reports why it is not valid) and returns its events,
    /// ending with exactly one [`Event::TurnEnd`]. Turns run one at a time, in the order this
    /// is called: a turn asked for while another runs is queued.
    ///
    /// Cancel `cancel` to interrupt the turn; the stream still ends with its turn end. Dropping
    /// the stream stops the turn (its process group is killed; the next turn restarts the CLI
    /// and resumes).
    pub fn turn(
        &self,
        request: Result<Request, RequestError>,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Event> {
        let (events, rx) = mpsc::channel(256);
        let job = Job::Turn {
            request: Box::new(request),
            cancel,
            events,
        };
        if let Err(mpsc::error::SendError(Job::Turn { events, .. })) = self.jobs.send(job) {
            // The session was closed: say so as a failed turn.
            let message = "the session is closed".to_string();
            let _ = events.try_send(Event::Error(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                message.clone(),
            )));
            let _ = events.try_send(Event::TurnEnd(TurnEnd::failed(None, message)));
        }
        futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        })
        .boxed()
    }

    /// Ends the session after the turns asked for before: the CLI gets its graceful close,
    /// then the group kill. Turns asked for later fail with "the session is closed".
    pub async fn close(&self) {
        let (done, closed) = tokio::sync::oneshot::channel();
        if self.jobs.send(Job::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

/// The consumer end of a turn, with the invariants: split-secret redaction, one error before a
/// failed end, exactly one end.
struct Guarded {
    tx: mpsc::Sender<Event>,
    redactor: Redactor,
    guard: SplitSecretGuard,
    out: Vec<Event>,
    error_seen: bool,
    ended: bool,
    /// Cancelled when the consumer dropped the stream.
    gone: CancellationToken,
    /// The turn's context tokens and window, from its usage events.
    context: Option<(Option<u64>, Option<u64>)>,
}

impl Guarded {
    fn new(tx: mpsc::Sender<Event>, redactor: Redactor, abort: CancellationToken) -> Self {
        Guarded {
            tx,
            redactor,
            guard: SplitSecretGuard::default(),
            out: Vec::new(),
            error_seen: false,
            ended: false,
            gone: abort.child_token(),
            context: None,
        }
    }

    /// The context's fill after the turn, where its usage said both the tokens and the window.
    fn context_level(&self) -> Option<ContextLevel> {
        match self.context {
            Some((Some(used), Some(window))) if window > 0 => Some(ContextLevel { used, window }),
            _ => None,
        }
    }

    /// Passes `event` on; after the turn end nothing more goes out.
    async fn send(&mut self, event: Event) {
        if self.ended {
            return;
        }
        match &event {
            Event::Error(_) => self.error_seen = true,
            Event::Usage(usage) => ContextLevel::observe(&mut self.context, usage),
            Event::TurnEnd(end) => {
                if !end.success && !self.error_seen && end.stop_reason != StopReason::Interrupted {
                    let message = end
                        .error
                        .clone()
                        .unwrap_or_else(|| "the turn failed".into());
                    Box::pin(self.send(Event::error(ErrorCode::Provider, message))).await;
                }
                self.ended = true;
            }
            _ => {}
        }
        self.guard.pass(event, &self.redactor, &mut self.out);
        for event in self.out.drain(..) {
            if self.tx.send(event).await.is_err() {
                self.gone.cancel();
            }
        }
    }

    async fn fail(&mut self, code: ErrorCode, message: String, session_id: Option<String>) {
        self.send(Event::Error(ErrorInfo::new(code, message.clone())))
            .await;
        self.send(Event::TurnEnd(TurnEnd::failed(session_id, message)))
            .await;
    }
}

/// The session's conversation, made by the channel for `request` when there is none yet.
fn conversation_of<'a>(
    channel: &Arc<dyn Channel>,
    state: &'a mut State,
    request: &Request,
) -> &'a mut Box<dyn Conversation> {
    state.conversation.get_or_insert_with(|| {
        channel
            .conversation(request)
            .unwrap_or_else(|| Box::new(Respawn::new(Arc::clone(channel), channel.resumes())))
    })
}

/// [`Session::prepare`] on the worker: the request checked as a turn's would be, then the
/// conversation's [`Conversation::prepare`].
async fn prepare(
    channel: &Arc<dyn Channel>,
    options: &SessionOptions,
    state: &mut State,
    mut request: Request,
) -> Result<(), ErrorInfo> {
    request
        .validate()
        .and_then(|()| channel.check_transport(&request))
        .map_err(|error| ErrorInfo::new(ErrorCode::InvalidRequest, error.to_string()))?;
    if state
        .conversation
        .as_ref()
        .is_some_and(|c| c.pid().is_some())
    {
        return Ok(());
    }
    if let Some(last) = &state.last {
        request.inherit(last);
    }
    state.last = Some(request.settings_only());
    if state.session_id.is_none() && channel.resumes() {
        state.session_id.clone_from(&request.session_id);
    }
    let ctx = quiet_context(options, state.recording.clone(), request.env.clone());
    conversation_of(channel, state, &request)
        .prepare(&request, &ctx)
        .await
}

/// The context of work outside a turn (a preparation, an inquiry): nobody reads its events,
/// so a channel that fills the buffer gets dropped warnings, not a stall.
fn quiet_context(
    options: &SessionOptions,
    record: Option<Arc<Recording>>,
    env: Vec<(String, String)>,
) -> TurnContext {
    let (events, mut drain) = mpsc::channel(64);
    tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let mut ctx = TurnContext::new(events, CancellationToken::new(), options.limits);
    if let Some(broker) = &options.permissions {
        ctx.permissions = Arc::clone(broker);
    }
    ctx.abort = options.abort.clone();
    ctx.record = record;
    ctx.env = env.into();
    ctx
}

async fn run_turn(
    channel: &Arc<dyn Channel>,
    options: &SessionOptions,
    state: &mut State,
    request: Result<Request, RequestError>,
    cancel: CancellationToken,
    out: &mut Guarded,
) {
    out.send(Event::TurnStart {
        provider: channel.id().to_string(),
    })
    .await;
    if let Some(message) = state.record_warning.take() {
        out.send(Event::warning("record_failed", message)).await;
    }
    let request = request.and_then(|request| {
        request.validate()?;
        channel.check_transport(&request)?;
        Ok(request)
    });
    let mut request = match request {
        Ok(request) => {
            if let Some(key) = &request.api_key {
                out.redactor.add(key.expose());
            }
            out.redactor
                .add_env(request.env.iter().map(|(k, v)| (k, v)));
            request
        }
        Err(error) => {
            let id = state.session_id.clone();
            out.fail(ErrorCode::InvalidRequest, error.to_string(), id)
                .await;
            return;
        }
    };
    match (&state.session_id, &request.session_id) {
        (Some(ours), Some(theirs)) if ours != theirs => {
            let message = format!(
                "this session is {ours}; a request for session {theirs} belongs in a session of its own (start another bridge session, or leave `sessionId` out)"
            );
            let id = state.session_id.clone();
            out.fail(ErrorCode::InvalidRequest, message, id).await;
            return;
        }
        // A CLI without sessions is never asked to resume one (its turns start afresh).
        (Some(ours), None) if channel.resumes() => request.session_id = Some(ours.clone()),
        _ => {}
    }
    // What the request says wins; then a change asked for between turns; then what the turn
    // before ran with (a later turn keeps the session's settings unless it says otherwise).
    if request.permission_mode.is_none() {
        request.permission_mode = state.permission_mode.take();
    }
    if request.model.is_none() {
        request.model = state.model.take();
    }
    if let Some(last) = &state.last {
        request.inherit(last);
    }
    state.last = Some(request.settings_only());

    if options.announce_continuity && !state.announced {
        state.announced = true;
        let how = conversation_of(channel, state, &request).continuity();
        out.send(Event::status(format!("conversation: {}", how.as_str())))
            .await;
    }
    let recording = state.recording.clone();
    let conversation = conversation_of(channel, state, &request);

    let (events, mut receiver) = mpsc::channel(256);
    let mut ctx = TurnContext::new(events, cancel, options.limits);
    ctx.raw = options.raw;
    if let Some(broker) = &options.permissions {
        ctx.permissions = Arc::clone(broker);
    }
    ctx.abort = out.gone.clone();
    ctx.record = recording;
    ctx.env = request.env.clone().into();
    let mut turn = conversation.turn(request, ctx);
    let mut session_id = None;
    let mut running = true;
    while running {
        let mut next = Vec::new();
        tokio::select! {
            biased;
            event = receiver.recv() => match event {
                Some(event) => next.push(event),
                None => running = false,
            },
            _ = &mut turn => {
                running = false;
                // What the turn sent last; a late warning of a background check is dropped.
                while let Ok(event) = receiver.try_recv() {
                    next.push(event);
                }
            }
        }
        for event in next {
            match &event {
                Event::SessionId { id } => session_id = Some(id.clone()),
                Event::TurnEnd(end) => {
                    if let Some(id) = &end.session_id {
                        session_id = Some(id.clone());
                    }
                }
                _ => {}
            }
            out.send(event).await;
        }
    }
    drop(turn);
    if session_id.is_some() && state.session_id.is_none() {
        state.session_id = session_id;
    }
    if !out.ended {
        let message = format!(
            "internal error: the {} channel ended without a result",
            channel.id()
        );
        let id = state.session_id.clone();
        out.fail(ErrorCode::Internal, message, id).await;
    }
}
