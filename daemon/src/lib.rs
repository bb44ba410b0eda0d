//! `bridge daemon`: the JetBrains plugin's daemon protocol over many warm sessions.
//!
//! The plugin's main Claude path is a long-lived `node daemon.js` (ai-bridge protocol §4.6):
//! one process, NDJSON requests on stdin, id-tagged lines on stdout ([`wire`]). This crate
//! speaks that protocol over the library's [`Session`]s:
//!
//! * `<provider>.send` / `sendWithAttachments` run on a warm session keyed by provider and
//!   session id ([`sessions`]): the next turn of a conversation lands in the same CLI process.
//!   A request without a session id opens a new session (or takes the spare a `preconnect`
//!   started). Turns of different sessions run at the same time; turns of one session queue.
//! * `heartbeat`, `status`, `abort` and `<provider>.setPermissionMode` are answered at once,
//!   also while turns run; `abort` interrupts every running request (each ends "User
//!   interrupted").
//! * `<provider>.preconnect` starts the CLI before the first message; `resetRuntime` closes
//!   the sessions it names.
//! * `<provider>.getContextUsage` / `getUsage` ask the warm session of their `sessionId`
//!   (Claude Code's `get_context_usage` control request on its running process); without one
//!   they run per process.
//! * Every other method (`system.*`, `claude.getSession`, an unknown provider or command) runs
//!   as the per-process command would, by running this same binary once
//!   ([`PerProcess`]): the same output, the same error texts.
//! * Sessions idle for [`DaemonOptions::idle_timeout`] are closed and resumed transparently on
//!   their next turn; at most [`DaemonOptions::max_warm`] keep a CLI process (the least
//!   recently used idle one is closed first).
//! * stdin EOF ends the daemon after the requests already sent; `shutdown`, a signal or the
//!   parent's death interrupt them. Then every session gets its graceful close, then the group
//!   kills. No request id is left without its `done`.

#![deny(missing_docs)]

pub mod out;
pub mod sessions;
pub mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_core::Router;
use bridge_core::channel::Channel;
use bridge_core::conversation::{Inquiry, InquiryError, Session, SessionOptions};
use bridge_core::driver::{SendOptions, write_turn};
use bridge_core::encode::Format;
use bridge_core::event::Event;
use bridge_core::lines::{LineItem, LineReader};
use bridge_core::permission::PermissionBroker;
use bridge_core::permission_ipc::FileIpc;
use bridge_core::process::{ChildProcess, CommandSpec, StdinMode, rss_bytes, tree_rss_bytes};
use bridge_core::redact::Redactor;
use bridge_core::request::{MAX_REQUEST_BYTES, Request, RequestError};
use bridge_core::turn::TurnLimits;
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::out::{Out, ReplySink};
use crate::sessions::{Evicted, Registry};
use crate::wire::{Incoming, PROTOCOL_VERSION, Special, lifecycle};

/// How other commands run: this binary once per request, with the request on stdin.
#[derive(Debug, Clone)]
pub struct PerProcess {
    /// The `bridge` executable (normally the daemon's own).
    pub program: PathBuf,
    /// Longest a command may run before its group is killed.
    pub deadline: Duration,
}

/// Settings of a daemon.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The wire format of each request's `line`s (the plugin parses markers).
    pub format: Format,
    /// Deadlines of every turn.
    pub limits: TurnLimits,
    /// A session without a turn for this long is closed (its next turn resumes it).
    pub idle_timeout: Duration,
    /// Most sessions that keep a CLI process at once.
    pub max_warm: usize,
    /// How long an approval waits when no file IPC sets its own safety net.
    pub approval_timeout: Duration,
    /// The secrets of the daemon's own environment; each request adds its own.
    pub redactor: Redactor,
    /// How other commands run.
    pub per_process: PerProcess,
    /// How often the daemon checks that its parent still lives (`None`: never).
    pub parent_check: Option<Duration>,
    /// Longest the graceful close of all sessions may take at shutdown before the group kills.
    pub shutdown_grace: Duration,
    /// The binary's version, reported in `starting` and `status`.
    pub bridge_version: &'static str,
}

impl DaemonOptions {
    /// The defaults: markers, 30 min idle, 8 warm, 3 s parent checks, 5 s shutdown grace.
    pub fn new(per_process: PerProcess) -> DaemonOptions {
        DaemonOptions {
            format: Format::Markers,
            limits: TurnLimits::default(),
            idle_timeout: Duration::from_secs(30 * 60),
            max_warm: 8,
            approval_timeout: Duration::from_secs(300),
            redactor: Redactor::new(),
            per_process,
            parent_check: Some(Duration::from_secs(3)),
            shutdown_grace: Duration::from_secs(5),
            bridge_version: "",
        }
    }
}

/// Why the daemon ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// stdin reached EOF.
    StdinClosed,
    /// A `shutdown` request.
    Requested,
    /// [`run`]'s `stop` token (a signal).
    Stopped,
    /// The parent process is gone.
    ParentExited,
    /// Nobody reads stdout any more.
    StdoutClosed,
}

impl Ended {
    /// The `reason` of the `shutdown` event.
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::StdinClosed => "stdin_closed",
            Ended::Requested => "requested",
            Ended::Stopped => "signal",
            Ended::ParentExited => "parent_exited",
            Ended::StdoutClosed => "stdout_closed",
        }
    }
}

/// What every request task shares.
struct Daemon {
    router: Router,
    options: DaemonOptions,
    registry: Arc<Registry>,
    out: Out,
    /// The interrupt tokens of the running requests (`abort` cancels them all).
    running: Mutex<HashMap<u64, CancellationToken>>,
    next_request: std::sync::atomic::AtomicU64,
    /// Sessions being closed (evicted, reset): awaited at shutdown.
    closing: TaskTracker,
    started: Instant,
}

/// Runs the daemon until stdin ends, a `shutdown` request, `stop`, the parent's death or a
/// closed stdout; then closes every session and returns why it ended. Must run inside a tokio
/// runtime; requests are served on tasks of it.
///
/// Cancel safety: not cancel-safe; dropping the future drops the sessions, whose CLI groups
/// are then killed without their graceful close.
pub async fn run(
    router: Router,
    options: DaemonOptions,
    input: impl AsyncRead + Unpin,
    out: Out,
    stop: CancellationToken,
) -> Ended {
    let _ = out.send(&lifecycle(
        "starting",
        json!({
            "pid": std::process::id(),
            "version": PROTOCOL_VERSION,
            "bridgeVersion": options.bridge_version,
            "platform": std::env::consts::OS,
        }),
    ));
    let daemon = Arc::new(Daemon {
        router,
        options,
        registry: Arc::default(),
        out: out.clone(),
        running: Mutex::default(),
        next_request: Default::default(),
        closing: TaskTracker::new(),
        started: Instant::now(),
    });
    // Nothing to preload: the CLIs start per session, so the daemon is ready at once.
    let _ = out.send(&lifecycle(
        "ready",
        json!({"pid": std::process::id(), "sdkPreloaded": true}),
    ));

    let requests = TaskTracker::new();
    let parent_gone = CancellationToken::new();
    let background = CancellationToken::new();
    if let Some(every) = daemon.options.parent_check {
        tokio::spawn(watch_parent(every, parent_gone.clone(), background.clone()));
    }
    tokio::spawn(sweep_idle(Arc::clone(&daemon), background.clone()));

    let mut lines = LineReader::new(input, MAX_REQUEST_BYTES + 64 * 1024);
    let mut shutdown_id: Option<Option<String>> = None;
    let closed = out.closed();
    let ended = loop {
        let item = tokio::select! {
            item = lines.next_line() => item,
            _ = stop.cancelled() => break Ended::Stopped,
            _ = parent_gone.cancelled() => break Ended::ParentExited,
            _ = closed.cancelled() => break Ended::StdoutClosed,
        };
        let text = match item {
            Ok(Some(LineItem::Line { text, .. })) => text,
            Ok(Some(LineItem::TooLong { bytes })) => {
                out.done(
                    None,
                    false,
                    Some(&format!(
                        "request line of {bytes} bytes is longer than the {} MiB limit",
                        MAX_REQUEST_BYTES / (1024 * 1024)
                    )),
                );
                continue;
            }
            Ok(None) | Err(_) => break Ended::StdinClosed,
        };
        if text.trim().is_empty() {
            continue;
        }
        let request = match Incoming::parse(&text) {
            Ok(request) => request,
            Err(bad) => {
                out.done(bad.id.as_deref(), false, Some(&bad.error));
                continue;
            }
        };
        match Special::of(&request.method) {
            Some(Special::Heartbeat) => daemon.heartbeat(request.id.as_deref()),
            Some(Special::Status) => daemon.status(request.id.as_deref()),
            Some(Special::Abort) => {
                daemon.abort_all();
                out.done(request.id.as_deref(), true, None);
            }
            Some(Special::Shutdown) => {
                shutdown_id = Some(request.id);
                break Ended::Requested;
            }
            None => daemon.dispatch(request, &requests),
        }
    };
    background.cancel();
    // After stdin EOF the requests already sent still run to their end (a client that writes
    // its requests and closes stdin gets its answers); everything else interrupts them.
    daemon
        .shut_down(&requests, ended != Ended::StdinClosed)
        .await;
    let _ = out.send(&lifecycle("shutdown", json!({"reason": ended.as_str()})));
    if let Some(id) = shutdown_id {
        out.done(id.as_deref(), true, None);
    }
    ended
}

/// Cancels `gone` when the parent process changes (it died and we were re-parented).
async fn watch_parent(every: Duration, gone: CancellationToken, stop: CancellationToken) {
    #[cfg(unix)]
    {
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => return,
            }
            // SAFETY: as above.
            if unsafe { libc::getppid() } != parent {
                gone.cancel();
                return;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (every, gone, stop);
    }
}

/// Closes idle sessions (and enforces the warm cap) every so often.
async fn sweep_idle(daemon: Arc<Daemon>, stop: CancellationToken) {
    let every = (daemon.options.idle_timeout / 4)
        .clamp(Duration::from_millis(200), Duration::from_secs(30));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        let evicted =
            daemon
                .registry
                .sweep(daemon.options.idle_timeout, daemon.options.max_warm, None);
        daemon.close_later(evicted);
    }
}

/// Removes `params.env` for [`PerProcess`] children: the request's variables, read and
/// filtered as every request's are ([`bridge_core::request::parse_env`]); an `env` that is not
/// an object of strings is the child's to reject (it stays in the request it reads).
fn take_env(params: &mut Map<String, Value>) -> Vec<(String, String)> {
    match bridge_core::request::parse_env(params.get("env").cloned()) {
        Ok(env) => {
            params.remove("env");
            env
        }
        Err(_) => Vec::new(),
    }
}

impl Daemon {
    fn heartbeat(&self, id: Option<&str>) {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let _ = self.out.send(&json!({
            "id": id.unwrap_or("0"),
            "type": "heartbeat",
            "ts": ts,
            "sdkPreloaded": true,
            // The daemon's own memory, not its CLIs' (status lists those per session).
            "memoryUsage": rss_bytes(std::process::id()).unwrap_or(0),
        }));
        self.out.done(id, true, None);
    }

    fn status(&self, id: Option<&str>) {
        let sessions = self.registry.status(tree_rss_bytes);
        let own = rss_bytes(std::process::id());
        let _ = self.out.send(&json!({
            "id": id,
            "type": "status",
            "version": PROTOCOL_VERSION,
            "bridgeVersion": self.options.bridge_version,
            "pid": std::process::id(),
            "uptime": self.started.elapsed().as_secs_f64(),
            "sdkPreloaded": true,
            "memoryUsage": {"rss": own},
            "running": self.running.lock().map(|r| r.len()).unwrap_or(0),
            "maxWarm": self.options.max_warm,
            "idleTimeoutSeconds": self.options.idle_timeout.as_secs(),
            "sessions": sessions,
        }));
        self.out.done(id, true, None);
    }

    fn abort_all(&self) {
        if let Ok(running) = self.running.lock() {
            for cancel in running.values() {
                cancel.cancel();
            }
        }
    }

    /// Registers a running request's interrupt token; the guard removes it.
    fn track(self: &Arc<Self>) -> (CancellationToken, Tracked) {
        let key = self
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let cancel = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(key, cancel.clone());
        }
        (
            cancel,
            Tracked {
                daemon: Arc::clone(self),
                key,
            },
        )
    }

    /// Closes `sessions` on a task of their own (graceful close, then the group kill).
    fn close_later(&self, sessions: Evicted) {
        for session in sessions {
            self.closing.spawn(async move { session.close().await });
        }
    }

    /// Serves a `<provider>.<command>` request on a task; its `done` is written whatever
    /// happens in it (a panic included).
    fn dispatch(self: &Arc<Self>, request: Incoming, tasks: &TaskTracker) {
        let Some((provider, command)) = request.provider_command() else {
            let error = format!(
                "Invalid method format: {}. Expected \"provider.command\"",
                request.method
            );
            self.out.done(request.id.as_deref(), false, Some(&error));
            return;
        };
        let (provider, command) = (provider.to_string(), command.to_string());
        if command == "setPermissionMode" {
            let result = self.set_permission_mode(&provider, &request.params);
            self.out.done(
                request.id.as_deref(),
                result.is_ok(),
                result.err().as_deref(),
            );
            return;
        }
        let Some(id) = request.id.clone() else {
            self.out.done(None, false, Some("request has no `id`"));
            return;
        };
        let daemon = Arc::clone(self);
        tasks.spawn(async move {
            let served = std::panic::AssertUnwindSafe(daemon.serve(
                &id,
                &provider,
                &command,
                request.params,
            ))
            .catch_unwind()
            .await;
            let (success, error) = match served {
                Ok(result) => (result.is_ok(), result.err()),
                Err(_) => (
                    false,
                    Some(format!("internal error while serving {provider}.{command}")),
                ),
            };
            daemon.out.done(Some(&id), success, error.as_deref());
        });
    }

    async fn serve(
        self: &Arc<Self>,
        id: &str,
        provider: &str,
        command: &str,
        params: Map<String, Value>,
    ) -> Result<(), String> {
        let channel = self.router.get(provider);
        match (channel, command) {
            (Some(channel), "send" | "sendWithAttachments")
                if channel.commands().contains(&command) =>
            {
                self.send(id, channel, params).await
            }
            (Some(channel), "preconnect") => self.preconnect(channel, params).await,
            (Some(_), "resetRuntime") => {
                self.reset(provider, &params).await;
                Ok(())
            }
            _ => match self.inquire(id, provider, command, &params).await {
                Some(answered) => answered,
                None => self.per_process(id, provider, command, params).await,
            },
        }
    }

    /// The redactor of one request: the daemon's secrets, its key and its secret variables.
    fn redactor_for(&self, request: &Result<Request, RequestError>) -> Redactor {
        let mut redactor = self.options.redactor.clone();
        if let Ok(request) = request {
            if let Some(key) = &request.api_key {
                redactor.add(key.expose());
            }
            redactor.add_env(request.env.iter().map(|(k, v)| (k, v)));
        }
        redactor
    }

    /// A new session for `channel`, its approvals through the file IPC the request's
    /// variables (or the daemon's) describe.
    fn open_session(
        &self,
        channel: Arc<dyn Channel>,
        request: &Result<Request, RequestError>,
        redactor: Redactor,
    ) -> Session {
        let ok = request.as_ref().ok();
        let env = ok.map(|r| r.env.clone()).unwrap_or_default();
        let cwd = ok
            .and_then(|r| r.cwd.clone())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let ipc = FileIpc::from_vars(
            |name| {
                env.iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .or_else(|| std::env::var(name).ok())
            },
            &cwd,
        );
        let timeout = ipc
            .as_ref()
            .map_or(self.options.approval_timeout, FileIpc::safety_net);
        let broker = PermissionBroker::new(false, ipc, timeout);
        Session::open(
            channel,
            SessionOptions {
                limits: self.options.limits,
                raw: false,
                permissions: Some(Arc::new(broker)),
                abort: self.out.closed(),
                redactor,
                record: None,
                announce_continuity: false,
            },
        )
    }

    /// A session checked out for `provider` and `session_id`, opened (after making room under
    /// the warm cap) when there is none.
    fn lease(
        &self,
        channel: &Arc<dyn Channel>,
        request: &Result<Request, RequestError>,
        redactor: &Redactor,
        spare: bool,
    ) -> sessions::Lease {
        let session_id = request.as_ref().ok().and_then(|r| r.session_id.clone());
        let epoch = request.as_ref().ok().and_then(epoch_of);
        if let Some(lease) = self.registry.checkout(channel.id(), session_id.as_deref()) {
            if lease.epoch == epoch || epoch.is_none() {
                return lease;
            }
            // A new runtime epoch (the plugin reset the chat's runtime): a new process, which
            // resumes the conversation; the old one is closed after what it runs.
            self.registry.release(lease.handle, false);
            let old = self
                .registry
                .remove_where(true, |handle, _, _| handle == lease.handle);
            self.close_later(old);
        }
        let room = self.options.max_warm.saturating_sub(1);
        self.close_later(self.registry.sweep(self.options.idle_timeout, room, None));
        let session = self.open_session(Arc::clone(channel), request, redactor.clone());
        self.registry
            .insert(channel.id(), session_id, epoch, Arc::new(session), spare)
    }

    async fn send(
        self: &Arc<Self>,
        id: &str,
        channel: Arc<dyn Channel>,
        params: Map<String, Value>,
    ) -> Result<(), String> {
        let streaming = params
            .get("streaming")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let request = Request::from_value(Value::Object(params));
        let redactor = self.redactor_for(&request);
        let lease = self.lease(&channel, &request, &redactor, false);
        let (cancel, _tracked) = self.track();
        let events = lease.session.turn(request, cancel.clone());
        let registry = Arc::clone(&self.registry);
        let handle = lease.handle;
        let encoder = self
            .options
            .format
            .encoder_for(channel.dialect(), false, streaming);
        let mut sink = ReplySink::new(
            id,
            encoder,
            self.out.clone(),
            redactor,
            Box::new(move |event| {
                if let Event::SessionId { id } = event {
                    registry.name(handle, id);
                }
            }),
        );
        let options = SendOptions {
            raw: false,
            limits: self.options.limits,
            permissions: None,
            abort: self.out.closed(),
            warnings_to_stderr: self.options.format == Format::Markers,
            record: None,
        };
        let outcome = write_turn(events, &options, &mut sink, cancel).await;
        if let Some(session_id) = lease.session.session_id() {
            self.registry.name(handle, &session_id);
        }
        self.registry.release(handle, true);
        // A turn that ended may bring the warm count over the cap.
        self.close_later(self.registry.sweep(
            self.options.idle_timeout,
            self.options.max_warm,
            Some(handle),
        ));
        if outcome.success || (self.options.format == Format::Markers && !outcome.stdout_closed) {
            // In markers the outcome is in-band (`[SEND_ERROR]`, the final line), as with the
            // per-process exit code 0: the plugin counts a failed `done` as a second error
            // ("Daemon command failed"), and daemon.js answers a failed send with success too.
            Ok(())
        } else {
            let error = sink
                .end()
                .and_then(|end| end.error.clone())
                .unwrap_or_else(|| "the turn failed".into());
            Err(sink_redacted(&sink, &error))
        }
    }

    /// Starts the CLI of a session before its first message.
    async fn preconnect(
        self: &Arc<Self>,
        channel: Arc<dyn Channel>,
        mut params: Map<String, Value>,
    ) -> Result<(), String> {
        // A pre-connect has no message; the request is parsed for its settings only.
        params
            .entry("message")
            .or_insert_with(|| Value::String("(preconnect)".into()));
        let request = Request::from_value(Value::Object(params));
        let redactor = self.redactor_for(&request);
        let named = request
            .as_ref()
            .ok()
            .is_some_and(|r| r.session_id.is_some());
        let lease = self.lease(&channel, &request, &redactor, false);
        let (_cancel, _tracked) = self.track();
        let result = match request {
            Ok(request) => lease.session.prepare(request).await,
            Err(error) => Err(bridge_core::event::ErrorInfo::new(
                bridge_core::event::ErrorCode::InvalidRequest,
                error.to_string(),
            )),
        };
        self.registry.release(lease.handle, false);
        if !named {
            self.registry.mark_spare(lease.handle);
        }
        result.map_err(|info| redactor.redact(&info.message).into_owned())
    }

    /// Closes the sessions a `resetRuntime` names: those of its `runtimeSessionEpoch` (what the
    /// plugin sends) or `sessionId`, or every session of the provider when it names none. A
    /// session with a running turn is closed after it.
    async fn reset(&self, provider: &str, params: &Map<String, Value>) {
        let field = |name: &str| {
            params
                .get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let (epoch, wanted) = (field("runtimeSessionEpoch"), field("sessionId"));
        let removed = self.registry.remove_where(true, |_, p, entry| {
            p == provider
                && epoch.as_deref().is_none_or(|e| entry.epoch == Some(e))
                && wanted
                    .as_deref()
                    .is_none_or(|w| entry.session_id == Some(w))
        });
        self.close_later(removed);
    }

    /// `<provider>.setPermissionMode`: the mode of the next turns of the sessions it names
    /// (`sessionId`), or of every session of the provider.
    fn set_permission_mode(
        &self,
        provider: &str,
        params: &Map<String, Value>,
    ) -> Result<(), String> {
        let mode = ["permissionMode", "mode"]
            .iter()
            .find_map(|field| params.get(*field).and_then(Value::as_str))
            .filter(|m| !m.trim().is_empty())
            .ok_or(
                "setPermissionMode needs `mode` (default, plan, acceptEdits, bypassPermissions)",
            )?;
        let wanted = params
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        for session in self
            .registry
            .find(|p, id| p == provider && wanted.is_none_or(|w| Some(w) == id))
        {
            // (The plugin sends `runtimeSessionEpoch` too; the session id names the session.)
            session.set_permission_mode(mode);
        }
        Ok(())
    }

    /// `getContextUsage` / `getUsage`, asked of the warm session of the request's `sessionId`
    /// when there is one whose CLI runs: its answer as one line `{"success":true,"data":…}`
    /// (what the plugin reads). A CLI that cannot be asked answers from its last turn's counts
    /// where they include the window. `None` for every other request and when no warm CLI can answer:
    /// the per-process command answers then.
    async fn inquire(
        &self,
        id: &str,
        provider: &str,
        command: &str,
        params: &Map<String, Value>,
    ) -> Option<Result<(), String>> {
        let inquiry = Inquiry::of_command(command)?;
        let wanted = params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())?;
        let session = self
            .registry
            .find(|p, id| p == provider && id == Some(wanted))
            .into_iter()
            .next()?;
        let answer = match session.inquire(inquiry).await {
            Ok(data) => Ok(json!({"success": true, "data": data})),
            Err(InquiryError::Failed(why)) => Err(why),
            // No process to ask, or a CLI that cannot tell.
            Err(InquiryError::NotRunning | InquiryError::Unsupported) => return None,
        };
        let line = match &answer {
            Ok(reply) => reply.to_string(),
            Err(why) => json!({"success": false, "error": why}).to_string(),
        };
        let redact = |text: &str| self.options.redactor.redact(text).into_owned();
        let _ = self.out.send(&wire::OutputLine {
            id,
            line: &redact(&line),
        });
        Some(answer.map(|_| ()).map_err(|why| redact(&why)))
    }

    /// Runs `bridge <provider> <command>` once with the request on stdin, relaying its stdout
    /// lines and stderr lines; succeeds when it exits 0 and its last JSON line does not say
    /// `"success": false`.
    async fn per_process(
        self: &Arc<Self>,
        id: &str,
        provider: &str,
        command: &str,
        mut params: Map<String, Value>,
    ) -> Result<(), String> {
        let env = take_env(&mut params);
        let mut redactor = self.options.redactor.clone();
        redactor.add_env(env.iter().map(|(k, v)| (k, v)));
        if let Some(key) = params.get("apiKey").and_then(Value::as_str) {
            redactor.add(key);
        }
        let mut spec = CommandSpec::new(&self.options.per_process.program);
        spec.arg(provider).arg(command);
        spec.stdin = StdinMode::Piped;
        for (key, value) in env {
            spec.env(key, value);
        }
        let (mut child, mut stderr) = ChildProcess::spawn_with_stderr_lines(&spec)
            .map_err(|error| format!("cannot run {provider}.{command}: {error}"))?;
        if let Some(mut stdin) = child.take_stdin() {
            let payload = serde_json::to_vec(&Value::Object(params)).unwrap_or_default();
            tokio::spawn(async move {
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
            });
        }
        let stdout = child
            .take_stdout()
            .ok_or_else(|| format!("cannot read the output of {provider}.{command}"))?;
        let mut lines = LineReader::new(stdout, self.options.limits.max_line_bytes);
        let (cancel, _tracked) = self.track();
        let deadline = tokio::time::sleep(self.options.per_process.deadline);
        tokio::pin!(deadline);
        let mut last_json: Option<Value> = None;
        let mut stdout_open = true;
        let mut stderr_open = true;
        let mut stopped = None;
        while stdout_open || stderr_open {
            tokio::select! {
                line = lines.next_line(), if stdout_open => match line {
                    Ok(Some(LineItem::Line { text, .. })) => {
                        let text = redactor.redact(&text).into_owned();
                        if text.trim_start().starts_with('{')
                            && let Ok(value) = serde_json::from_str::<Value>(&text)
                        {
                            last_json = Some(value);
                        }
                        if !text.is_empty() {
                            let _ = self.out.send(&wire::OutputLine { id, line: &text });
                        }
                    }
                    Ok(Some(LineItem::TooLong { bytes })) => {
                        self.out.stderr(id, &format!("[WARNING] line_too_long: skipped an output line of {bytes} bytes"));
                    }
                    Ok(None) | Err(_) => stdout_open = false,
                },
                line = stderr.recv(), if stderr_open => match line {
                    Some(text) => self.out.stderr(id, &redactor.redact(&text)),
                    None => stderr_open = false,
                },
                _ = cancel.cancelled(), if stopped.is_none() => {
                    stopped = Some("User interrupted");
                    break;
                }
                _ = &mut deadline, if stopped.is_none() => {
                    stopped = Some("timed out");
                    break;
                }
            }
        }
        if let Some(why) = stopped {
            child.terminate(Duration::from_secs(2)).await;
            return Err(match why {
                "timed out" => format!(
                    "{provider}.{command} did not finish within {} s",
                    self.options.per_process.deadline.as_secs()
                ),
                other => other.to_string(),
            });
        }
        let status = child.wait().await.map_err(|e| e.to_string())?;
        child.sweep_group();
        let said = last_json
            .as_ref()
            .and_then(|v| v.get("success"))
            .and_then(Value::as_bool);
        let error = last_json
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if status.success() && said != Some(false) {
            Ok(())
        } else {
            Err(error.unwrap_or_else(|| {
                format!(
                    "{provider}.{command} failed ({})",
                    bridge_core::process::describe_exit(&status)
                )
            }))
        }
    }

    /// Interrupts what runs (`interrupt`) or lets it finish, waits for the requests' `done`s,
    /// and closes every session.
    async fn shut_down(&self, requests: &TaskTracker, interrupt: bool) {
        requests.close();
        let grace = self.options.shutdown_grace;
        if interrupt {
            self.abort_all();
            let _ = tokio::time::timeout(grace, requests.wait()).await;
        } else {
            // Each turn is bounded by its own deadlines.
            requests.wait().await;
        }
        let sessions = self.registry.drain();
        let closes = futures_util::future::join_all(sessions.iter().map(|s| s.close()));
        let _ = tokio::time::timeout(grace, closes).await;
        self.closing.close();
        let _ = tokio::time::timeout(grace, self.closing.wait()).await;
        // Whatever did not close in time is killed when its session is dropped (the runtime
        // drops the worker tasks at exit).
    }
}

/// The plugin's `runtimeSessionEpoch` of a request (its chat's runtime generation), if any.
fn epoch_of(request: &Request) -> Option<String> {
    request
        .extra
        .get("runtimeSessionEpoch")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
}

fn sink_redacted(sink: &ReplySink, text: &str) -> String {
    bridge_core::driver::Sink::redactor(sink)
        .redact(text)
        .into_owned()
}

/// Removes a running request's interrupt token when the request ends.
struct Tracked {
    daemon: Arc<Daemon>,
    key: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Ok(mut running) = self.daemon.running.lock() {
            running.remove(&self.key);
        }
    }
}
