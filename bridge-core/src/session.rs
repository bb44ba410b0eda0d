//! The session runner: one supervised CLI process, and the engine that speaks its protocol.
//!
//! Every provider runs on this one loop, whether its CLI lives for one turn (`codex exec`, the
//! one-shot JSONL CLIs) or for a whole conversation (Claude Code's stream-json input, ACP
//! agents). [`Process`] owns what is the same for all of them:
//!
//! * the child's process group, its stdin (a writer task, so a slow child never blocks the
//!   loop), bounded stdout line reading ([`crate::lines`]) and the stderr tail;
//! * the wall-clock and idle deadlines (the idle clock stops while an approval waits for the
//!   client: the approval timeout bounds that wait);
//! * interrupt: the engine's graceful form first ([`Engine::interrupt`]), then, after
//!   [`TurnLimits::interrupt_grace`], the group kill;
//! * the consumer going away ([`TurnContext::abort`]): the group is killed at once;
//! * permission dispatch: a [`Event::PermissionRequest`] the engine emits goes out first, then
//!   the engine's policy or the turn's [`crate::permission::PermissionBroker`] decides, in the
//!   background, and [`Engine::decided`] turns the decision into bytes for the CLI;
//! * the outcome of a turn: success only when the engine saw the provider's own terminal event;
//!   a stream that ends without one is an [`ErrorCode::ExitedEarly`] failure with the stderr
//!   tail, never a fabricated success; a failed end always comes after one error; exactly one
//!   [`Event::TurnEnd`] is sent, last.
//!
//! An engine is a protocol, not a loop: it turns a stdout line into events and bytes to write
//! back ([`EngineIo`]), a cancel into bytes, a permission decision into bytes, and says when a
//! turn (or a handshake step) is over. [`LineEngine`] adapts a pure [`Normalizer`] (plus its
//! [`PermissionResponder`]) to it; the ACP engine implements [`Engine`] itself.
//!
//! [`run_once`] runs a one-process-per-turn CLI; a warm conversation spawns a [`Process`] once
//! and calls [`Process::run_turn`] with [`Lifetime::Warm`] for every turn.

use std::collections::HashMap;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::event::{ErrorCode, ErrorInfo, Event, TurnEnd};
use crate::lines::{LineItem, LineReader};
use crate::permission::{PermissionRequest, PermissionResponder, Resolution};
use crate::process::{ChildProcess, CommandSpec, StdinMode, describe_exit};
use crate::record::RecordedReader;
use crate::turn::{
    CloseStdin, DeferredWrite, Normalizer, ProcessTurn, TurnContext, TurnLimits, interrupted_end,
};

/// What an engine hands back from each callback: events for the client, bytes for the CLI's
/// stdin, and whether the exchange it was waiting for is over.
#[derive(Debug, Default)]
pub struct EngineIo {
    events: Vec<Event>,
    stdin: Vec<Vec<u8>>,
    done: bool,
}

impl EngineIo {
    /// Emits `event` (after those emitted before it).
    pub fn emit(&mut self, event: Event) {
        self.events.push(event);
    }

    /// The events emitted so far, for code that pushes into a `Vec<Event>`.
    pub fn events(&mut self) -> &mut Vec<Event> {
        &mut self.events
    }

    /// Writes `bytes` to the CLI's stdin (after the events of this callback went out).
    pub fn write(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.stdin.push(bytes);
        }
    }

    /// Ends the current exchange: a handshake step got its answer. (A turn ends with an
    /// [`Event::TurnEnd`] instead.)
    pub fn done(&mut self) {
        self.done = true;
    }
}

/// A CLI's protocol, driven by [`Process`]. Implementations hold the conversation's state; the
/// loop, the deadlines and the process belong to the runner.
pub trait Engine: Send {
    /// Handles one stdout line. Emits [`Event::TurnEnd`] when (and only when) the line is the
    /// provider's own terminal event for the turn.
    fn stdout_line(&mut self, line: &str, io: &mut EngineIo);

    /// Handles one stderr line (the runner keeps a stderr tail for error reports anyway).
    fn stderr_line(&mut self, line: &str, io: &mut EngineIo) {
        let _ = (line, io);
    }

    /// The client asked to interrupt the turn: write the CLI's graceful form and return true,
    /// or return false when it has none (the group is killed at once).
    fn interrupt(&mut self, io: &mut EngineIo) -> bool {
        let _ = io;
        false
    }

    /// Whether this engine can answer the permission requests it emits. When it cannot, the
    /// client is told (a `permission_unanswerable` warning) and nobody is asked.
    fn answers_permissions(&self) -> bool {
        false
    }

    /// A decision the permission mode makes without asking anyone, or `None` to ask.
    fn policy(&self, request: &PermissionRequest) -> Option<Resolution> {
        let _ = request;
        None
    }

    /// Turns the decision on `request` into bytes for the CLI and events (at least the
    /// [`Event::PermissionDecision`]). Returns true when the decision stops the turn.
    fn decided(
        &mut self,
        request: &PermissionRequest,
        resolution: &Resolution,
        io: &mut EngineIo,
    ) -> bool {
        let _ = (request, resolution, io);
        false
    }

    /// `request` will not be decided: the turn is being interrupted.
    fn abandoned(&mut self, request: &PermissionRequest, io: &mut EngineIo) {
        let _ = (request, io);
    }

    /// The runner ends the turn itself (a deadline passed, the group was killed): emit what is
    /// still buffered (tool calls announced but not finished, say) before its error.
    fn cut_short(&mut self, io: &mut EngineIo) {
        let _ = io;
    }

    /// stdout ended without a terminal event, with the exit status if the process exited. A
    /// CLI whose terminal signal is its exit decides the turn here (see [`Normalizer::finish`]).
    fn finish(&mut self, exit: Option<&ExitStatus>, io: &mut EngineIo) {
        let _ = (exit, io);
    }

    /// For a CLI whose terminal signal is its exit: the stream says the turn is complete, so
    /// the CLI should exit now (see [`Normalizer::turn_complete`]).
    fn turn_complete(&self) -> bool {
        false
    }

    /// The conversation id seen so far.
    fn session_id(&self) -> Option<String>;
}

/// A pure [`Normalizer`] with the stdin side of its protocol: the permission responder and the
/// graceful interrupt.
pub struct LineEngine {
    normalizer: Box<dyn Normalizer>,
    responder: Option<Arc<dyn PermissionResponder>>,
    interrupt: Option<Vec<u8>>,
    /// Still to be written, at the first line that contains its marker.
    deferred: Option<DeferredWrite>,
    deferred_written: bool,
}

impl LineEngine {
    /// `normalizer`, answering approvals with `responder` and interrupting with `interrupt`.
    pub fn new(
        normalizer: Box<dyn Normalizer>,
        responder: Option<Arc<dyn PermissionResponder>>,
        interrupt: Option<Vec<u8>>,
    ) -> Self {
        LineEngine {
            normalizer,
            responder,
            interrupt,
            deferred: None,
            deferred_written: false,
        }
    }

    /// The same engine, writing `deferred` to stdin at the first stdout line that contains its
    /// marker (once; before that line is normalized).
    pub fn with_deferred(mut self, deferred: Option<DeferredWrite>) -> Self {
        self.deferred = deferred;
        self
    }

    /// Whether the deferred write went out (a warm session carries what did not over to its
    /// next turn).
    pub fn deferred_written(&self) -> bool {
        self.deferred_written
    }
}

impl std::fmt::Debug for LineEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineEngine")
            .field("responder", &self.responder)
            .field("interrupt", &self.interrupt.is_some())
            .field("deferred", &self.deferred)
            .finish_non_exhaustive()
    }
}

impl Engine for LineEngine {
    fn stdout_line(&mut self, line: &str, io: &mut EngineIo) {
        if self
            .deferred
            .as_ref()
            .is_some_and(|deferred| line.contains(deferred.marker))
            && let Some(deferred) = self.deferred.take()
        {
            io.write(deferred.bytes);
            self.deferred_written = true;
        }
        self.normalizer.line(line, io.events());
    }

    fn stderr_line(&mut self, line: &str, io: &mut EngineIo) {
        self.normalizer.stderr_line(line, io.events());
    }

    fn interrupt(&mut self, io: &mut EngineIo) -> bool {
        match &self.interrupt {
            Some(bytes) => {
                io.write(bytes.clone());
                true
            }
            None => false,
        }
    }

    fn answers_permissions(&self) -> bool {
        self.responder.is_some()
    }

    fn policy(&self, request: &PermissionRequest) -> Option<Resolution> {
        self.responder.as_ref()?.policy(request)
    }

    fn decided(
        &mut self,
        request: &PermissionRequest,
        resolution: &Resolution,
        io: &mut EngineIo,
    ) -> bool {
        let Some(responder) = &self.responder else {
            return false;
        };
        let response = responder.respond(request, resolution);
        io.write(response.stdin);
        io.emit(Event::PermissionDecision(response.effective));
        response.cancel_turn
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, io: &mut EngineIo) {
        self.normalizer.finish(exit, io.events());
    }

    fn turn_complete(&self) -> bool {
        self.normalizer.turn_complete()
    }

    fn session_id(&self) -> Option<String> {
        self.normalizer.session_id()
    }
}

/// Whether the process outlives the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// One process per turn: after the terminal event stdin is closed and the CLI gets
    /// [`TurnLimits::exit_grace`] to exit before the group is stopped.
    PerTurn,
    /// The process stays for the next turn.
    Warm,
}

/// After the leader exited, how long stdout may stay quiet before the runner stops reading it
/// (a helper left behind can hold the pipe open forever; what the leader wrote is already in
/// the pipe and reads at once).
const AFTER_EXIT_QUIET: Duration = Duration::from_millis(250);

/// Why an exchange stopped.
enum Stop {
    /// The engine emitted the turn's end.
    Ended(TurnEnd),
    /// The engine said the handshake step is over ([`EngineIo::done`]).
    Done,
    /// stdout ended, or the leader exited and stdout went quiet.
    Eof,
    /// The stream said the turn is complete and the CLI stayed past the exit grace.
    Stayed,
    Idle,
    Wall,
    Interrupted,
    ConsumerGone,
}

/// Why a handshake step ([`Process::step`]) did not get its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepFailure {
    /// Its deadline passed.
    Deadline,
    /// The CLI exited (or closed its stdout).
    Exited,
    /// The client interrupted.
    Interrupted,
    /// Nobody reads the output any more.
    ConsumerGone,
}

enum StdinCommand {
    Write(Vec<u8>),
    Close,
}

struct Pending {
    request: PermissionRequest,
    /// The broker's task (none for a decision the policy made at once).
    abort: Option<AbortHandle>,
}

/// What one exchange is waiting for.
#[derive(Clone, Copy)]
struct Goal {
    deadline: Instant,
    /// The idle deadline applies (turns; handshake steps have their own deadline only).
    idle: bool,
    /// A cancel asks the engine to interrupt (turns); otherwise it stops the step at once.
    graceful_interrupt: bool,
    /// Stop when the engine reports [`EngineIo::done`].
    step: bool,
}

/// One supervised CLI process: the child's group, its pipes, and the permission requests in
/// flight. See the [module docs](self).
pub struct Process {
    provider: String,
    child: ChildProcess,
    stdin: Option<mpsc::Sender<StdinCommand>>,
    stdout: LineReader<RecordedReader<ChildStdout>>,
    stdout_open: bool,
    stderr_lines: mpsc::Receiver<String>,
    stderr_open: bool,
    stderr_activity: watch::Receiver<u64>,
    /// When the leader's exit was seen.
    leader_exited: Option<Instant>,
    exit_status: Option<ExitStatus>,
    /// Stopped by the runner (deadline, interrupt kill, shutdown): not usable any more.
    stopped: bool,
    pending: HashMap<String, Pending>,
    /// Decisions come back here (unbounded: the loop that drains it is the one that would wait
    /// on a full queue; there is one entry per permission request at most).
    decided_tx: mpsc::UnboundedSender<(PermissionRequest, Resolution)>,
    decided_rx: mpsc::UnboundedReceiver<(PermissionRequest, Resolution)>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("provider", &self.provider)
            .field("pid", &self.child.pgid())
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl Process {
    /// Spawns `command` (with the turn's recording attached) for `provider` (used in messages).
    pub fn spawn(
        provider: &str,
        command: &CommandSpec,
        ctx: &TurnContext,
    ) -> Result<Process, ErrorInfo> {
        let command = ctx.prepared(command);
        let (mut child, stderr_lines) = ChildProcess::spawn_with_stderr_lines(&command)
            .map_err(|error| ErrorInfo::new(ErrorCode::SpawnFailed, error.to_string()))?;
        let stdin = child.take_stdin().map(|mut stdin| {
            let (tx, mut rx) = mpsc::channel::<StdinCommand>(64);
            tokio::spawn(async move {
                while let Some(command) = rx.recv().await {
                    match command {
                        StdinCommand::Write(bytes) => {
                            // A child that stopped reading is reported through its exit.
                            if stdin.write_all(&bytes).await.is_err()
                                || stdin.flush().await.is_err()
                            {
                                break;
                            }
                        }
                        StdinCommand::Close => break,
                    }
                }
                let _ = stdin.shutdown().await;
            });
            tx
        });
        let Some(stdout) = child.take_stdout() else {
            return Err(ErrorInfo::new(
                ErrorCode::Internal,
                "child stdout was not captured",
            ));
        };
        let stderr_activity = child.stderr_activity();
        let (decided_tx, decided_rx) = mpsc::unbounded_channel();
        Ok(Process {
            provider: provider.to_string(),
            stdout: LineReader::new(stdout, ctx.limits.max_line_bytes),
            stdout_open: true,
            child,
            stdin,
            stderr_lines,
            stderr_open: true,
            stderr_activity,
            leader_exited: None,
            exit_status: None,
            stopped: false,
            pending: HashMap::new(),
            decided_tx,
            decided_rx,
        })
    }

    /// The provider key this process runs for.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The leader's pid (the process group id).
    pub fn pid(&self) -> Option<i32> {
        self.child.pgid()
    }

    /// Whether the process can take another turn: not stopped, stdout open, the leader not
    /// seen exiting (checked now, without waiting).
    pub fn is_alive(&self) -> bool {
        !self.stopped && self.stdout_open && self.leader_exited.is_none()
    }

    /// Checks, without waiting, whether the leader exited since the last look (a CLI that
    /// crashed or was killed between two turns). Returns [`Process::is_alive`].
    pub fn check_alive(&mut self) -> bool {
        if self.leader_exited.is_none()
            && let Some(status) = self.child.try_exit_status()
        {
            self.leader_exited = Some(Instant::now());
            self.exit_status = Some(status);
        }
        self.is_alive()
    }

    /// How the leader exited, once it did (`exit code 1`, `signal 9 (SIGKILL)`).
    pub fn exit_description(&self) -> Option<String> {
        self.exit_status.as_ref().map(describe_exit)
    }

    /// The last stderr lines.
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail()
    }

    /// The last stderr lines once the stderr pipe drained (at most 1 s).
    pub async fn settled_stderr_tail(&mut self) -> String {
        self.child.settled_stderr_tail(Duration::from_secs(1)).await
    }

    /// Writes `bytes` to the CLI's stdin (queued; never blocks on a child that stopped reading
    /// beyond the queue's 64 entries).
    pub async fn write(&self, bytes: Vec<u8>) {
        if let Some(stdin) = &self.stdin
            && !bytes.is_empty()
        {
            let _ = stdin.send(StdinCommand::Write(bytes)).await;
        }
    }

    /// Closes the CLI's stdin (after what was queued before).
    pub async fn close_stdin(&mut self) {
        if let Some(stdin) = self.stdin.take() {
            let _ = stdin.send(StdinCommand::Close).await;
        }
    }

    /// Sends `bytes` and runs the loop until the engine reports [`EngineIo::done`] (a handshake
    /// request got its answer), under `timeout`. Events the engine emits meanwhile go to `ctx`.
    /// A cancel stops the step at once; so does a consumer that went away.
    pub async fn step(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        bytes: Vec<u8>,
        timeout: Duration,
    ) -> Result<(), StepFailure> {
        self.write(bytes).await;
        let goal = Goal {
            deadline: Instant::now() + timeout,
            idle: false,
            graceful_interrupt: false,
            step: true,
        };
        let (stop, _) = self.exchange(engine, ctx, goal).await;
        match stop {
            Stop::Done => Ok(()),
            // A turn end during a handshake step is the engine's business; the step is over.
            Stop::Ended(_) => Ok(()),
            Stop::Eof | Stop::Stayed => Err(StepFailure::Exited),
            Stop::Idle | Stop::Wall => {
                self.kill(ctx.limits).await;
                Err(StepFailure::Deadline)
            }
            Stop::Interrupted => Err(StepFailure::Interrupted),
            Stop::ConsumerGone => {
                self.kill(ctx.limits).await;
                Err(StepFailure::ConsumerGone)
            }
        }
    }

    /// Sends `bytes` (the turn's input) and runs one turn to its end, sending its events and
    /// exactly one [`Event::TurnEnd`] (none when the consumer went away). With
    /// [`Lifetime::Warm`] the process stays for the next turn when it can
    /// ([`Process::is_alive`] says).
    ///
    /// Cancel safety: not cancel-safe; dropping the future mid-turn leaves the process in an
    /// unknown state (drop the [`Process`] too: its group is killed).
    pub async fn run_turn(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        bytes: Vec<u8>,
        lifetime: Lifetime,
    ) {
        self.write(bytes).await;
        let limits = ctx.limits;
        let goal = Goal {
            deadline: Instant::now() + limits.wall,
            idle: true,
            graceful_interrupt: true,
            step: false,
        };
        let (stop, interrupting) = self.exchange(engine, ctx, goal).await;
        let provider = self.provider.clone();
        let session_id = engine.session_id();
        let end = match stop {
            Stop::Ended(end) => {
                if lifetime == Lifetime::PerTurn {
                    self.shutdown(limits).await;
                }
                end
            }
            Stop::Done => {
                // A turn ends with a TurnEnd; an engine that only says "done" did not end it.
                let message = format!(
                    "internal error: the {provider} engine ended the turn without a result"
                );
                self.failure(ctx, ErrorCode::Internal, message, session_id.clone())
                    .await
            }
            Stop::Eof | Stop::Stayed => {
                self.verdict_at_exit(engine, ctx, matches!(stop, Stop::Stayed), interrupting)
                    .await
            }
            Stop::Idle | Stop::Wall => {
                self.kill(limits).await;
                self.cut_short(engine, ctx).await;
                let (code, message) = if matches!(stop, Stop::Idle) {
                    let secs = limits.idle.as_secs();
                    let message = format!(
                        "{provider} printed nothing for {secs} s (idle deadline); stopped it"
                    );
                    (ErrorCode::IdleTimeout, message)
                } else {
                    let secs = limits.wall.as_secs();
                    let message = format!(
                        "{provider} ran longer than {secs} s (wall-clock deadline); stopped it"
                    );
                    (ErrorCode::WallTimeout, message)
                };
                self.failure(ctx, code, message, session_id.clone()).await
            }
            Stop::Interrupted => {
                self.kill(limits).await;
                interrupted_end(session_id.clone())
            }
            Stop::ConsumerGone => {
                self.kill(limits).await;
                return;
            }
        };
        let end = if interrupting && ctx.cancel.is_cancelled() {
            interrupted_end(end.session_id.or(session_id))
        } else {
            end
        };
        ctx.emit(Event::TurnEnd(end)).await;
    }

    /// stdout ended (or the CLI stayed after its stream said the turn was complete): the
    /// engine decides from the exit, and a stream without a terminal event is a failure.
    async fn verdict_at_exit(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        stayed: bool,
        interrupting: bool,
    ) -> TurnEnd {
        let limits = ctx.limits;
        self.close_stdin().await;
        let status = if stayed {
            self.kill(limits).await;
            // The stream said the turn was complete; the CLI only failed to leave.
            Some(exit_status_zero())
        } else {
            match self.exit_status {
                Some(status) => Some(status),
                None => match self.child.wait_timeout(limits.exit_grace).await {
                    Some(status) => Some(status),
                    None => self.child.terminate(limits.kill_grace).await,
                },
            }
        };
        self.exit_status = self.exit_status.or(status);
        self.stopped = true;
        self.child.sweep_group();
        // Everything the CLI wrote to stderr before it exited reaches the engine before its
        // verdict, and the verdict's errors carry the stderr tail.
        let tail = self.settled_stderr_tail().await;
        let mut io = EngineIo::default();
        while let Ok(line) = self.stderr_lines.try_recv() {
            engine.stderr_line(&line, &mut io);
        }
        engine.finish(status.as_ref(), &mut io);
        let session_id = engine.session_id();
        let with_tail = |mut info: ErrorInfo| {
            if info.stderr_tail.is_none() && !tail.is_empty() {
                info.stderr_tail = Some(tail.clone());
            }
            info
        };
        let mut ended = None;
        let mut error_seen = false;
        for event in io.events {
            match event {
                Event::TurnEnd(end) => {
                    ended.get_or_insert(end);
                }
                Event::Error(_) if interrupting => {}
                Event::Error(info) => {
                    error_seen = true;
                    ctx.emit(Event::Error(with_tail(info))).await;
                }
                event => {
                    ctx.emit(event).await;
                }
            }
        }
        let provider = &self.provider;
        match ended {
            Some(end) => {
                if !end.success && !error_seen && !interrupting {
                    let message = end
                        .error
                        .clone()
                        .unwrap_or_else(|| format!("{provider} reported a failed turn"));
                    ctx.emit(Event::Error(with_tail(ErrorInfo::new(
                        ErrorCode::Provider,
                        message,
                    ))))
                    .await;
                }
                TurnEnd {
                    session_id: end.session_id.or_else(|| session_id.clone()),
                    ..end
                }
            }
            None => {
                let how = status
                    .as_ref()
                    .map(describe_exit)
                    .unwrap_or_else(|| "an unknown status".into());
                let message = format!(
                    "{provider} exited ({how}) before finishing the turn: no terminal event was received"
                );
                ctx.emit(Event::Error(
                    ErrorInfo::new(ErrorCode::ExitedEarly, message.clone()).with_stderr_tail(tail),
                ))
                .await;
                TurnEnd::failed(session_id, message)
            }
        }
    }

    /// Sends what the engine still has buffered when the runner ends the turn itself (its
    /// turn end, if any, is dropped: the runner's verdict stands).
    async fn cut_short(&mut self, engine: &mut dyn Engine, ctx: &TurnContext) {
        let mut io = EngineIo::default();
        engine.cut_short(&mut io);
        for event in io.events {
            if !matches!(event, Event::TurnEnd(_)) {
                ctx.emit(event).await;
            }
        }
    }

    async fn failure(
        &mut self,
        ctx: &TurnContext,
        code: ErrorCode,
        message: String,
        session_id: Option<String>,
    ) -> TurnEnd {
        let tail = self.settled_stderr_tail().await;
        ctx.emit(Event::Error(
            ErrorInfo::new(code, message.clone()).with_stderr_tail(tail),
        ))
        .await;
        TurnEnd::failed(session_id, message)
    }

    /// The loop: reads stdout and stderr, watches the deadlines, the cancel and the consumer,
    /// dispatches approvals, until the goal is reached or something stops it. Returns why, and
    /// whether an interrupt was requested.
    async fn exchange(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        goal: Goal,
    ) -> (Stop, bool) {
        let limits = ctx.limits;
        let mut last_activity = Instant::now();
        let mut interrupting = false;
        let mut interrupt_deadline = goal.deadline;
        let mut drain_deadline = self
            .leader_exited
            .map(|at| (Instant::now() + AFTER_EXIT_QUIET).min(at + limits.exit_grace))
            .unwrap_or(goal.deadline);
        // Set while the engine says the turn is complete: the CLI should exit by then.
        let mut stay_deadline: Option<Instant> = None;
        let far = goal.deadline;
        let stop = loop {
            let mut io = EngineIo::default();
            let idle_deadline = last_activity + limits.idle;
            let idle_applies = goal.idle && self.pending.is_empty();
            tokio::select! {
                biased;
                _ = ctx.abort.cancelled() => break Stop::ConsumerGone,
                _ = ctx.cancel.cancelled(), if !interrupting => {
                    if !goal.graceful_interrupt {
                        break Stop::Interrupted;
                    }
                    interrupting = true;
                    for (_, pending) in self.pending.drain() {
                        if let Some(abort) = pending.abort {
                            abort.abort();
                        }
                        engine.abandoned(&pending.request, &mut io);
                    }
                    if !engine.interrupt(&mut io) {
                        break Stop::Interrupted;
                    }
                    interrupt_deadline = Instant::now() + limits.interrupt_grace;
                }
                _ = tokio::time::sleep_until(interrupt_deadline), if interrupting => {
                    break Stop::Interrupted;
                }
                _ = tokio::time::sleep_until(goal.deadline) => break Stop::Wall,
                _ = tokio::time::sleep_until(idle_deadline), if idle_applies => break Stop::Idle,
                Ok(()) = self.stderr_activity.changed() => last_activity = Instant::now(),
                Some((request, resolution)) = self.decided_rx.recv() => {
                    last_activity = Instant::now();
                    if self.pending.remove(&request.request_id).is_none() {
                        continue;
                    }
                    if engine.decided(&request, &resolution, &mut io) {
                        ctx.cancel.cancel();
                    }
                }
                line = self.stderr_lines.recv(), if self.stderr_open => match line {
                    Some(line) => {
                        last_activity = Instant::now();
                        engine.stderr_line(&line, &mut io);
                    }
                    None => self.stderr_open = false,
                },
                item = self.stdout.next_line(), if self.stdout_open => {
                    last_activity = Instant::now();
                    let text = match item {
                        Ok(Some(LineItem::Line { text, lossy })) => {
                            if lossy {
                                io.emit(Event::warning(
                                    "invalid_utf8",
                                    format!("{} printed a line that is not valid UTF-8; decoded it lossily", self.provider),
                                ));
                            }
                            text
                        }
                        Ok(Some(LineItem::TooLong { bytes })) => {
                            io.emit(Event::warning(
                                "line_too_long",
                                format!(
                                    "{} printed a {bytes}-byte line, over the {}-byte limit; skipped it",
                                    self.provider, limits.max_line_bytes
                                ),
                            ));
                            String::new()
                        }
                        Ok(None) | Err(_) => {
                            self.stdout_open = false;
                            break Stop::Eof;
                        }
                    };
                    if !text.trim().is_empty() {
                        if ctx.raw {
                            io.emit(Event::Raw { line: text.clone() });
                        }
                        engine.stdout_line(&text, &mut io);
                    }
                    stay_deadline = match (engine.turn_complete(), stay_deadline) {
                        (false, _) => None,
                        (true, Some(deadline)) => Some(deadline),
                        (true, None) => Some(Instant::now() + limits.exit_grace),
                    };
                    if let Some(exited) = self.leader_exited {
                        drain_deadline = (Instant::now() + AFTER_EXIT_QUIET).min(exited + limits.exit_grace);
                    }
                }
                // The leader is gone but something it left behind may hold stdout open: read
                // what is there, then stop (the group is swept by the verdict).
                status = self.child.wait(), if self.leader_exited.is_none() => {
                    let now = Instant::now();
                    self.leader_exited = Some(now);
                    self.exit_status = status.ok();
                    drain_deadline = now + AFTER_EXIT_QUIET;
                }
                _ = tokio::time::sleep_until(drain_deadline), if self.leader_exited.is_some() => {
                    break Stop::Eof;
                }
                _ = tokio::time::sleep_until(stay_deadline.unwrap_or(far)), if stay_deadline.is_some() && self.leader_exited.is_none() => {
                    break Stop::Stayed;
                }
            }
            match self.deliver(engine, ctx, io, interrupting, goal.step).await {
                Delivered::Continue => {}
                Delivered::Stop(stop) => break stop,
            }
        };
        (stop, interrupting)
    }

    /// Sends what one callback produced: events in order (a permission request goes out before
    /// anything can answer it, then is dispatched), then the bytes for stdin.
    async fn deliver(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        io: EngineIo,
        interrupting: bool,
        step: bool,
    ) -> Delivered {
        let EngineIo {
            events,
            stdin,
            done,
        } = io;
        let mut ended = None;
        for event in events {
            match event {
                Event::TurnEnd(end) => {
                    ended.get_or_insert(end);
                }
                // Once an interrupt was requested, the provider's own error for the aborted
                // turn is the interrupt itself: the turn ends as interrupted.
                Event::Error(_) if interrupting => {}
                event if ended.is_none() => {
                    let request = match &event {
                        Event::PermissionRequest(request) => Some(request.clone()),
                        _ => None,
                    };
                    if !ctx.emit(event).await {
                        return Delivered::Stop(Stop::ConsumerGone);
                    }
                    if let Some(request) = request {
                        self.dispatch(engine, ctx, request).await;
                    }
                }
                _ => {}
            }
        }
        for bytes in stdin {
            self.write(bytes).await;
        }
        match ended {
            Some(end) => Delivered::Stop(Stop::Ended(end)),
            None if done && step => Delivered::Stop(Stop::Done),
            None => Delivered::Continue,
        }
    }

    /// Gets a decision for `request`: the engine's policy at once, or the broker in the
    /// background (its answer comes back through `decided_rx`).
    async fn dispatch(
        &mut self,
        engine: &mut dyn Engine,
        ctx: &TurnContext,
        request: PermissionRequest,
    ) {
        if !engine.answers_permissions() {
            let message = format!(
                "{} asked for permission ({}) but this channel cannot answer it",
                request.tool_name, request.request_id
            );
            ctx.emit(Event::warning("permission_unanswerable", message))
                .await;
            return;
        }
        if let Some(resolution) = engine.policy(&request) {
            let _ = self.decided_tx.send((request.clone(), resolution));
            let pending = Pending {
                request,
                abort: None,
            };
            self.pending
                .insert(pending.request.request_id.clone(), pending);
            return;
        }
        let broker = ctx.permissions.clone();
        let tx = self.decided_tx.clone();
        let asked = request.clone();
        let task = tokio::spawn(async move {
            let resolution = broker.ask(&asked).await;
            let _ = tx.send((asked, resolution));
        });
        self.pending.insert(
            request.request_id.clone(),
            Pending {
                request,
                abort: Some(task.abort_handle()),
            },
        );
    }

    /// Closes stdin, gives the CLI [`TurnLimits::exit_grace`] to exit, then ends its whole
    /// process group.
    pub async fn shutdown(&mut self, limits: TurnLimits) {
        self.abandon_pending();
        self.close_stdin().await;
        if self.exit_status.is_none() {
            match self.child.wait_timeout(limits.exit_grace).await {
                Some(status) => self.exit_status = Some(status),
                None => self.exit_status = self.child.terminate(limits.kill_grace).await,
            }
        }
        self.stopped = true;
        self.child.sweep_group();
    }

    /// Ends the whole process group now (SIGTERM, [`TurnLimits::kill_grace`], SIGKILL).
    pub async fn kill(&mut self, limits: TurnLimits) {
        self.abandon_pending();
        self.stdin = None;
        let status = self.child.terminate(limits.kill_grace).await;
        self.exit_status = self.exit_status.or(status);
        self.stopped = true;
    }

    fn abandon_pending(&mut self) {
        for (_, pending) in self.pending.drain() {
            if let Some(abort) = pending.abort {
                abort.abort();
            }
        }
    }
}

enum Delivered {
    Continue,
    Stop(Stop),
}

/// Runs `turn` (one CLI process for one turn) with `normalizer` to completion, sending its
/// events (ending with exactly one [`Event::TurnEnd`]) to `ctx.events`.
pub async fn run_once(turn: ProcessTurn, normalizer: Box<dyn Normalizer>, ctx: TurnContext) {
    let mut engine = LineEngine::new(
        normalizer,
        turn.responder.clone(),
        turn.interrupt_payload.clone(),
    )
    .with_deferred(turn.deferred.clone());
    run_engine_once(turn, &mut engine, ctx).await;
}

/// Runs `turn` with an engine of its own (one that does more than a pure normalizer, such as
/// reading a file the CLI writes next to its stdout); `turn`'s responder and interrupt are the
/// engine's business then.
pub async fn run_engine_once(turn: ProcessTurn, engine: &mut dyn Engine, ctx: TurnContext) {
    let mut process = match Process::spawn(&turn.provider, &turn.command, &ctx) {
        Ok(process) => process,
        Err(info) => {
            ctx.fail(info, None).await;
            return;
        }
    };
    let piped = turn.command.stdin == StdinMode::Piped;
    let payload = if piped {
        turn.stdin_payload
    } else {
        Vec::new()
    };
    if piped && turn.close_stdin == CloseStdin::AfterPayload {
        process.write(payload).await;
        process.close_stdin().await;
        process
            .run_turn(engine, &ctx, Vec::new(), Lifetime::PerTurn)
            .await;
    } else {
        process
            .run_turn(engine, &ctx, payload, Lifetime::PerTurn)
            .await;
    }
}

/// A successful exit status (for a CLI stopped after its stream said the turn was complete).
fn exit_status_zero() -> ExitStatus {
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    #[cfg(windows)]
    use std::os::windows::process::ExitStatusExt;
    ExitStatus::from_raw(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StopReason;
    use crate::normalize::ExitTurn;
    use tokio_util::sync::CancellationToken;

    /// A JSONL normalizer whose terminal signal is the exit: `{"done":true}` completes the turn,
    /// `{"error":"…"}` reports an error, stderr `session: <id>` carries the session id.
    #[derive(Default)]
    struct ExitNormalizer {
        turn: ExitTurn,
        session: Option<String>,
        stderr_seen: Vec<String>,
    }

    impl Normalizer for ExitNormalizer {
        fn line(&mut self, line: &str, out: &mut Vec<Event>) {
            let value: serde_json::Value = match serde_json::from_str(line) {
                Ok(value) => value,
                Err(_) => return self.turn.plain_line(line),
            };
            if let Some(text) = value["text"].as_str() {
                out.push(Event::TextDelta { text: text.into() });
            }
            if let Some(error) = value["error"].as_str() {
                self.turn.error(error);
            }
            if value["done"] == true {
                self.turn.complete(StopReason::EndTurn, Some("done".into()));
            }
        }
        fn stderr_line(&mut self, line: &str, out: &mut Vec<Event>) {
            self.stderr_seen.push(line.to_string());
            if let Some(id) = line.strip_prefix("session: ") {
                self.session = Some(id.to_string());
                out.push(Event::SessionId { id: id.into() });
            }
        }
        fn session_id(&self) -> Option<String> {
            self.session.clone()
        }
        fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
            self.turn.finish("fake", exit, self.session.clone(), out);
        }
        fn turn_complete(&self) -> bool {
            self.turn.is_complete()
        }
    }

    async fn run(script: &str) -> Vec<Event> {
        let mut command = CommandSpec::new("/bin/sh");
        command.arg("-c").arg(script);
        let turn = ProcessTurn {
            provider: "fake".into(),
            command,
            stdin_payload: Vec::new(),
            close_stdin: CloseStdin::AfterPayload,
            interrupt_payload: None,
            responder: None,
            deferred: None,
        };
        let (tx, mut rx) = mpsc::channel(64);
        let limits = TurnLimits {
            exit_grace: Duration::from_secs(2),
            ..TurnLimits::default()
        };
        let ctx = TurnContext::new(tx, CancellationToken::new(), limits);
        run_once(turn, Box::<ExitNormalizer>::default(), ctx).await;
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        events
    }

    fn end(events: &[Event]) -> &TurnEnd {
        match events.last() {
            Some(Event::TurnEnd(end)) => end,
            other => panic!("last event is not a turn end: {other:?}"),
        }
    }

    fn errors(events: &[Event]) -> Vec<&ErrorInfo> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Error(info) => Some(info),
                _ => None,
            })
            .collect()
    }

    /// The texts of `events`, joined.
    fn text(events: &[Event]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_deferred_write_waits_for_its_marker_and_goes_out_once() {
        // The CLI reports what is on its stdin before the marker line (nothing may be), after
        // it, and whether a second marker line brought a second copy.
        let script = r#"read -r prompt; echo "{\"text\":\"prompt=$prompt \"}"
            read -r -t 0.3 early && echo "{\"text\":\"early=$early \"}"
            echo '{"text":"busy "}'; read -r -t 5 later; echo "{\"text\":\"later=$later \"}"
            echo '{"text":"busy "}'; read -r -t 0.3 again && echo "{\"text\":\"again=$again \"}"
            echo '{"done":true}'"#;
        let mut command = CommandSpec::new("/bin/bash");
        command.arg("-c").arg(script);
        command.stdin = StdinMode::Piped;
        let turn = ProcessTurn {
            provider: "fake".into(),
            command,
            stdin_payload: b"P\n".to_vec(),
            close_stdin: CloseStdin::AfterTurnEnd,
            interrupt_payload: None,
            responder: None,
            deferred: Some(DeferredWrite {
                marker: "busy",
                bytes: b"S\n".to_vec(),
            }),
        };
        let (tx, mut rx) = mpsc::channel(64);
        let ctx = TurnContext::new(tx, CancellationToken::new(), TurnLimits::default());
        run_once(turn, Box::<ExitNormalizer>::default(), ctx).await;
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        assert!(end(&events).success, "{events:?}");
        assert_eq!(text(&events), "prompt=P busy later=S busy ");
    }

    #[tokio::test]
    async fn exit_zero_after_a_stream_error_is_a_failure_with_the_stderr_tail() {
        let events = run(
            r#"echo '{"text":"Hel"}'; echo '{"error":"401 bad key"}'; echo '{"done":true}'; echo 'retrying later' >&2; exit 0"#,
        )
        .await;
        let end = end(&events);
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("401 bad key"));
        let errors = errors(&events);
        assert_eq!(errors.len(), 1, "{events:?}");
        assert_eq!(errors[0].code, ErrorCode::Provider);
        assert_eq!(errors[0].stderr_tail.as_deref(), Some("retrying later"));
    }

    #[tokio::test]
    async fn a_completed_stream_and_exit_zero_is_a_success() {
        let events = run(r#"echo '{"text":"Hi"}'; echo '{"done":true}'"#).await;
        assert!(end(&events).success, "{events:?}");
        assert!(errors(&events).is_empty());
    }

    #[tokio::test]
    async fn a_stream_without_its_end_is_a_failure_even_with_exit_zero() {
        let events = run(r#"echo '{"text":"Hi"}'; echo 'Aborted.'; exit 0"#).await;
        let end = end(&events);
        assert!(!end.success);
        let message = end.error.as_deref().unwrap();
        assert!(
            message.contains("exit code 0") && message.ends_with("Aborted."),
            "{message}"
        );
    }

    #[tokio::test]
    async fn stderr_lines_reach_the_normalizer_even_when_written_last() {
        let events = run(
            r#"echo '{"text":"Hi"}'; echo '{"done":true}'; exec 1>&-; sleep 0.2; echo 'session: s-42' >&2"#,
        )
        .await;
        let end = end(&events);
        assert!(end.success, "{events:?}");
        assert_eq!(end.session_id.as_deref(), Some("s-42"));
        assert!(
            events.contains(&Event::SessionId { id: "s-42".into() }),
            "{events:?}"
        );
    }

    #[tokio::test]
    async fn stderr_lines_arrive_while_the_turn_runs() {
        let events = run(
            r#"echo 'session: s-7' >&2; sleep 0.3; echo '{"text":"Hi"}'; echo '{"done":true}'"#,
        )
        .await;
        let id = events
            .iter()
            .position(|e| *e == Event::SessionId { id: "s-7".into() })
            .expect("session id event");
        let text = events
            .iter()
            .position(|e| matches!(e, Event::TextDelta { .. }))
            .expect("text");
        assert!(id < text, "{events:?}");
        assert!(end(&events).success);
    }

    #[tokio::test]
    async fn a_cli_that_stays_after_completing_is_stopped_and_the_turn_succeeds() {
        let started = std::time::Instant::now();
        let events = run(r#"echo '{"text":"Hi"}'; echo '{"done":true}'; exec sleep 30"#).await;
        let end = end(&events);
        assert!(end.success, "{events:?}");
        assert_eq!(end.result.as_deref(), Some("done"));
        // exit grace (2 s) + SIGTERM, far from the 30 s the CLI would stay.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(10),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_helper_holding_stdout_does_not_hold_the_turn_after_the_leader_exited() {
        for (script, success) in [
            (
                r#"sleep 30 & echo '{"text":"Hi"}'; echo '{"done":true}'; exit 0"#,
                true,
            ),
            (r#"sleep 30 & echo '{"text":"Hi"}'; exit 0"#, false),
        ] {
            let started = std::time::Instant::now();
            let events = run(script).await;
            assert_eq!(end(&events).success, success, "{script}: {events:?}");
            assert!(
                events.contains(&Event::TextDelta { text: "Hi".into() }),
                "{events:?}"
            );
            let took = started.elapsed();
            assert!(took < Duration::from_secs(5), "{script}: {took:?}");
        }
    }

    #[tokio::test]
    async fn a_non_zero_exit_is_a_failure_whatever_was_printed() {
        let events = run(r#"echo '{"done":true}'; echo 'fatal: boom' >&2; exit 3"#).await;
        let end = end(&events);
        assert!(!end.success);
        let errors = errors(&events);
        assert_eq!(errors[0].code, ErrorCode::ExitedEarly);
        assert!(errors[0].message.contains("exit code 3"));
        assert_eq!(errors[0].stderr_tail.as_deref(), Some("fatal: boom"));
    }
}
