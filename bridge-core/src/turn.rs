//! The process-turn engine: run one CLI process for one turn and turn its stdout into events.
//!
//! A channel describes the process ([`ProcessTurn`]) and supplies a pure [`Normalizer`]
//! (`line → events`). The engine owns everything that is the same for every provider:
//!
//! * spawning in a process group, writing the stdin payload, closing stdin at the right time;
//! * bounded line reading (see [`crate::lines`]), raw passthrough when requested; stderr lines
//!   go to the normalizer too ([`Normalizer::stderr_line`]), for CLIs that print a session id
//!   there;
//! * the wall-clock and idle deadlines, interrupt (graceful first when the provider has one,
//!   then the group kill), and the consumer going away;
//! * deciding the outcome: success only when the normalizer saw the provider's own terminal
//!   event; a stream that ends without one is an [`ErrorCode::ExitedEarly`] error carrying the
//!   stderr tail, never a fabricated success. For CLIs whose terminal signal is their exit,
//!   [`Normalizer::finish`] decides from the stream and the exit status (exit codes lie:
//!   [`crate::normalize::ExitTurn`]), and its errors get the stderr tail as well.
//!
//! Every run sends exactly one [`Event::TurnEnd`], last.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use crate::event::{ErrorCode, ErrorInfo, Event, StopReason, TurnEnd};
use crate::lines::{LineItem, LineReader};
use crate::permission::{PermissionBroker, PermissionRequest, PermissionResponder};
use crate::process::{ChildProcess, CommandSpec, StdinMode, describe_exit};

/// Deadlines and bounds of one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnLimits {
    /// Longest a turn may run in total.
    pub wall: Duration,
    /// Longest the CLI may stay silent (no stdout or stderr line).
    pub idle: Duration,
    /// Longest stdout line kept (longer lines are skipped with a warning).
    pub max_line_bytes: usize,
    /// After the terminal event, how long the CLI gets to exit on its own.
    pub exit_grace: Duration,
    /// After SIGTERM to the group, how long before SIGKILL.
    pub kill_grace: Duration,
    /// After a graceful interrupt request, how long the CLI gets to end the turn itself.
    pub interrupt_grace: Duration,
}

impl Default for TurnLimits {
    /// 60 min wall clock, 10 min idle (CLIs retry 5xx for minutes, printing status lines),
    /// 16 MiB lines, 5 s exit grace, 3 s kill grace, 5 s interrupt grace.
    fn default() -> Self {
        TurnLimits {
            wall: Duration::from_secs(60 * 60),
            idle: Duration::from_secs(10 * 60),
            max_line_bytes: crate::lines::DEFAULT_MAX_LINE_BYTES,
            exit_grace: Duration::from_secs(5),
            kill_grace: Duration::from_secs(3),
            interrupt_grace: Duration::from_secs(5),
        }
    }
}

/// Turns a provider's stdout lines into events. Implementations are pure: no I/O, no clock,
/// so recorded transcripts replay as snapshot tests.
pub trait Normalizer: Send {
    /// Handles one stdout line. Emits [`Event::TurnEnd`] when (and only when) the line is the
    /// provider's own terminal event for the turn.
    fn line(&mut self, line: &str, out: &mut Vec<Event>);

    /// The conversation id seen so far.
    fn session_id(&self) -> Option<String>;

    /// Handles one line the CLI wrote to stderr, for providers that print something the turn
    /// needs there (a session id, a resume hint). The default ignores it (the engine keeps a
    /// stderr tail for error reports anyway).
    ///
    /// stderr and stdout are separate pipes: their relative order is not preserved, so a
    /// normalizer must not depend on it. Lines still buffered when stdout ends are delivered
    /// before [`Normalizer::finish`].
    fn stderr_line(&mut self, line: &str, out: &mut Vec<Event>) {
        let _ = (line, out);
    }

    /// Called once when stdout ended without a terminal event, with the exit status if the
    /// process exited. A provider whose terminal signal *is* the exit (plain JSONL CLIs) emits
    /// its [`Event::TurnEnd`] here; otherwise the engine reports an early exit.
    ///
    /// Exit codes lie (pi and the community Grok CLI exit 0 after an API error): a provider
    /// whose stream carried an error must end the turn as a failure here whatever the exit
    /// status says ([`crate::normalize::ExitTurn`] implements these rules). An
    /// [`Event::Error`] emitted here gets the CLI's stderr tail attached when it has none, and
    /// a failed [`Event::TurnEnd`] without an error gets one.
    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        let _ = (exit, out);
    }

    /// For a provider whose terminal signal is the exit: whether the stream so far says the
    /// turn is complete (pi's `agent_end`), so the CLI should exit now. The engine then gives
    /// it [`TurnLimits::exit_grace`]; a CLI that stays (neither exits nor prints a line that
    /// reopens the turn) is stopped, and [`Normalizer::finish`] decides as if it had exited 0:
    /// its stream said the turn was done, staying is not a failure of the turn. The default
    /// (false) waits for the exit, up to the deadlines.
    fn turn_complete(&self) -> bool {
        false
    }
}

/// After the leader exited, how long stdout may stay quiet before the engine stops reading it
/// (a helper left behind can hold the pipe open forever; what the leader wrote is already in
/// the pipe and reads at once).
const AFTER_EXIT_QUIET: Duration = Duration::from_millis(250);

/// When the engine closes the child's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseStdin {
    /// Right after the payload (one-shot input).
    AfterPayload,
    /// After the terminal event (stream-json input: the CLI exits on EOF, and control
    /// messages such as interrupts can be written until then).
    AfterTurnEnd,
}

/// One CLI process for one turn.
#[derive(Debug, Clone)]
pub struct ProcessTurn {
    /// Provider key, used in messages (`claude exited with …`).
    pub provider: String,
    /// What to spawn.
    pub command: CommandSpec,
    /// Bytes written to stdin first (when [`CommandSpec::stdin`] is piped).
    pub stdin_payload: Vec<u8>,
    /// When stdin is closed.
    pub close_stdin: CloseStdin,
    /// Bytes that ask the CLI to interrupt the turn gracefully (written to stdin on cancel).
    pub interrupt_payload: Option<Vec<u8>>,
    /// Answers the CLI's permission requests (stream-json control protocol and the like).
    pub responder: Option<Arc<dyn PermissionResponder>>,
}

/// Shared inputs of every turn: where events go, cancellation, limits.
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// Events of the turn, in order. Bounded: a slow consumer slows the child down instead of
    /// growing memory.
    pub events: mpsc::Sender<Event>,
    /// Cancelled on interrupt (client request, SIGINT/SIGTERM, stdout closed).
    pub cancel: CancellationToken,
    /// Deadlines.
    pub limits: TurnLimits,
    /// Also emit every native line as [`Event::Raw`].
    pub raw: bool,
    /// Who answers approvals.
    pub permissions: Arc<PermissionBroker>,
    /// Cancelled when nobody reads the output any more (stdout closed): the turn stops at once,
    /// without the graceful-interrupt grace period.
    pub abort: CancellationToken,
    /// Where the CLI's stdin, stdout and stderr are also recorded (`--record`); set on every
    /// command the turn spawns that has no recording of its own.
    pub record: Option<Arc<crate::record::Recording>>,
}

impl TurnContext {
    /// A context with an unattended permission broker (every approval is denied at once).
    pub fn new(events: mpsc::Sender<Event>, cancel: CancellationToken, limits: TurnLimits) -> Self {
        TurnContext {
            events,
            cancel,
            limits,
            raw: false,
            permissions: Arc::new(PermissionBroker::unattended()),
            abort: CancellationToken::new(),
            record: None,
        }
    }

    /// `command` with this turn's recording attached (unless it has its own).
    pub fn recorded(&self, command: &CommandSpec) -> CommandSpec {
        let mut command = command.clone();
        if command.record.is_none() {
            command.record = self.record.clone();
        }
        command
    }

    /// Sends an event; false when the consumer is gone.
    pub async fn emit(&self, event: Event) -> bool {
        self.events.send(event).await.is_ok()
    }

    /// Emits the warning `check` yields (if any) with `code` when it is ready: it runs next to
    /// the turn and never delays it (an untested CLI version, for example).
    pub fn warn_later(
        &self,
        code: &'static str,
        check: impl std::future::Future<Output = Option<String>> + Send + 'static,
    ) {
        let ctx = self.clone();
        tokio::spawn(async move {
            if let Some(message) = check.await {
                ctx.emit(Event::warning(code, message)).await;
            }
        });
    }

    /// Ends a turn that failed before any process ran (CLI missing, bad request).
    pub async fn fail(&self, info: ErrorInfo, session_id: Option<String>) {
        let error = info.message.clone();
        self.emit(Event::Error(info)).await;
        self.emit(Event::TurnEnd(TurnEnd::failed(session_id, error)))
            .await;
    }
}

enum Stop {
    Ended(TurnEnd),
    /// stdout ended, or the leader exited and stdout went quiet.
    Eof,
    /// The stream said the turn is complete and the CLI stayed past the exit grace.
    Stayed,
    Idle,
    Wall,
    Interrupted,
    ConsumerGone,
}

enum StdinCommand {
    Write(Vec<u8>),
    Close,
}

/// Runs `turn` to completion, sending its events (ending with exactly one [`Event::TurnEnd`])
/// to `ctx.events`.
pub async fn run_process_turn(
    turn: ProcessTurn,
    mut normalizer: Box<dyn Normalizer>,
    ctx: TurnContext,
) {
    let limits = ctx.limits;
    let command = ctx.recorded(&turn.command);
    let (mut child, mut stderr_lines) = match ChildProcess::spawn_with_stderr_lines(&command) {
        Ok(spawned) => spawned,
        Err(error) => {
            let info = ErrorInfo::new(ErrorCode::SpawnFailed, error.to_string());
            ctx.fail(info, None).await;
            return;
        }
    };

    let stdin_tx = child.take_stdin().map(|mut stdin| {
        let (tx, mut rx) = mpsc::channel::<StdinCommand>(16);
        tokio::spawn(async move {
            while let Some(command) = rx.recv().await {
                match command {
                    StdinCommand::Write(bytes) => {
                        // A child that stopped reading is reported through its exit, not here.
                        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
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
    let mut stdin_tx = stdin_tx;
    if let Some(tx) = &stdin_tx
        && turn.command.stdin == StdinMode::Piped
    {
        if !turn.stdin_payload.is_empty() {
            let _ = tx
                .send(StdinCommand::Write(turn.stdin_payload.clone()))
                .await;
        }
        if turn.close_stdin == CloseStdin::AfterPayload {
            let _ = tx.send(StdinCommand::Close).await;
            stdin_tx = None;
        }
    }

    let Some(stdout) = child.take_stdout() else {
        let info = ErrorInfo::new(ErrorCode::Internal, "child stdout was not captured");
        ctx.fail(info, None).await;
        return;
    };
    let mut reader = LineReader::new(stdout, limits.max_line_bytes);
    let mut stderr_activity = child.stderr_activity();
    let started = Instant::now();
    let wall_deadline = started + limits.wall;
    let mut last_activity = started;
    let mut interrupting = false;
    let mut interrupt_deadline = started + limits.wall;
    let mut batch = Vec::new();
    // Set once the leader exited: stop reading when stdout is quiet or this passes.
    let mut leader_exited: Option<Instant> = None;
    let mut drain_deadline = wall_deadline;
    // Set while the normalizer says the turn is complete: the CLI should exit by then.
    let mut stay_deadline: Option<Instant> = None;

    let mut stderr_open = true;
    let stop = 'read: loop {
        let idle_deadline = last_activity + limits.idle;
        tokio::select! {
            biased;
            _ = ctx.abort.cancelled() => break 'read Stop::ConsumerGone,
            _ = ctx.cancel.cancelled(), if !interrupting => {
                interrupting = true;
                match (&turn.interrupt_payload, &stdin_tx) {
                    (Some(payload), Some(tx)) => {
                        let _ = tx.send(StdinCommand::Write(payload.clone())).await;
                        interrupt_deadline = Instant::now() + limits.interrupt_grace;
                    }
                    _ => break 'read Stop::Interrupted,
                }
            }
            _ = tokio::time::sleep_until(interrupt_deadline), if interrupting => {
                break 'read Stop::Interrupted;
            }
            _ = tokio::time::sleep_until(wall_deadline) => break 'read Stop::Wall,
            _ = tokio::time::sleep_until(idle_deadline) => break 'read Stop::Idle,
            Ok(()) = stderr_activity.changed() => last_activity = Instant::now(),
            line = stderr_lines.recv(), if stderr_open => match line {
                Some(line) => {
                    last_activity = Instant::now();
                    normalizer.stderr_line(&line, &mut batch);
                }
                None => stderr_open = false,
            },
            item = reader.next_line() => {
                last_activity = Instant::now();
                let text = match item {
                    Ok(Some(LineItem::Line { text, lossy })) => {
                        if lossy {
                            batch.push(Event::warning(
                                "invalid_utf8",
                                format!("{} printed a line that is not valid UTF-8; decoded it lossily", turn.provider),
                            ));
                        }
                        text
                    }
                    Ok(Some(LineItem::TooLong { bytes })) => {
                        batch.push(Event::warning(
                            "line_too_long",
                            format!(
                                "{} printed a {bytes}-byte line, over the {}-byte limit; skipped it",
                                turn.provider, limits.max_line_bytes
                            ),
                        ));
                        String::new()
                    }
                    Ok(None) | Err(_) => break 'read Stop::Eof,
                };
                if !text.is_empty() {
                    if ctx.raw {
                        batch.push(Event::Raw { line: text.clone() });
                    }
                    normalizer.line(&text, &mut batch);
                }
                stay_deadline = match (normalizer.turn_complete(), stay_deadline) {
                    (false, _) => None,
                    (true, Some(deadline)) => Some(deadline),
                    (true, None) => Some(Instant::now() + limits.exit_grace),
                };
                if let Some(exited) = leader_exited {
                    drain_deadline = (Instant::now() + AFTER_EXIT_QUIET).min(exited + limits.exit_grace);
                }
            }
            // The leader is gone but something it left behind may hold stdout open: read
            // what is there, then stop (the group is swept below).
            _ = child.wait(), if leader_exited.is_none() => {
                let now = Instant::now();
                leader_exited = Some(now);
                drain_deadline = now + AFTER_EXIT_QUIET;
            }
            _ = tokio::time::sleep_until(drain_deadline), if leader_exited.is_some() => {
                break 'read Stop::Eof;
            }
            _ = tokio::time::sleep_until(stay_deadline.unwrap_or(wall_deadline)), if stay_deadline.is_some() && leader_exited.is_none() => {
                break 'read Stop::Stayed;
            }
        }
        // What the stdout or stderr line produced (nothing after a deadline or activity tick).
        let mut ended = None;
        for event in batch.drain(..) {
            match event {
                Event::TurnEnd(end) => {
                    ended.get_or_insert(end);
                }
                // Once an interrupt was requested, the provider's own error for the
                // aborted turn is the interrupt itself: the turn ends as interrupted,
                // not as a failure the user has to read.
                Event::Error(_) if interrupting => {}
                event if ended.is_none() => {
                    // The request goes out before anything can answer it.
                    let request = match &event {
                        Event::PermissionRequest(request) => Some(request.clone()),
                        _ => None,
                    };
                    if !ctx.emit(event).await {
                        break 'read Stop::ConsumerGone;
                    }
                    if let Some(request) = request {
                        resolve_permission(request, &turn, &ctx, stdin_tx.clone());
                    }
                }
                _ => {}
            }
        }
        if let Some(end) = ended {
            break 'read Stop::Ended(end);
        }
    };

    let provider = &turn.provider;
    let session_id = normalizer.session_id();
    let end = match stop {
        Stop::Ended(end) => {
            if let Some(tx) = stdin_tx.take() {
                let _ = tx.send(StdinCommand::Close).await;
            }
            if child.wait_timeout(limits.exit_grace).await.is_none() {
                child.terminate(limits.kill_grace).await;
            }
            child.sweep_group();
            end
        }
        Stop::Eof | Stop::Stayed => {
            drop(stdin_tx.take());
            let status = if matches!(stop, Stop::Stayed) {
                child.terminate(limits.kill_grace).await;
                // The stream said the turn was complete; the CLI only failed to leave.
                Some(exit_status_zero())
            } else {
                match child.wait_timeout(limits.exit_grace).await {
                    Some(status) => Some(status),
                    None => child.terminate(limits.kill_grace).await,
                }
            };
            child.sweep_group();
            // Everything the CLI wrote to stderr before it exited reaches the normalizer
            // before its verdict, and the verdict's errors carry the stderr tail.
            let tail = child.settled_stderr_tail(Duration::from_secs(1)).await;
            let mut tail_events = Vec::new();
            while let Ok(line) = stderr_lines.try_recv() {
                normalizer.stderr_line(&line, &mut tail_events);
            }
            normalizer.finish(status.as_ref(), &mut tail_events);
            let session_id = normalizer.session_id().or_else(|| session_id.clone());
            let with_tail = |mut info: ErrorInfo| {
                if info.stderr_tail.is_none() && !tail.is_empty() {
                    info.stderr_tail = Some(tail.clone());
                }
                info
            };
            let mut ended = None;
            let mut error_seen = false;
            for event in tail_events {
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
                    failure(
                        &ctx,
                        ErrorCode::ExitedEarly,
                        message,
                        &mut child,
                        session_id.clone(),
                    )
                    .await
                }
            }
        }
        Stop::Idle => {
            child.terminate(limits.kill_grace).await;
            let message = format!(
                "{provider} printed nothing for {} s (idle deadline); stopped it",
                limits.idle.as_secs()
            );
            failure(
                &ctx,
                ErrorCode::IdleTimeout,
                message,
                &mut child,
                session_id.clone(),
            )
            .await
        }
        Stop::Wall => {
            child.terminate(limits.kill_grace).await;
            let message = format!(
                "{provider} ran longer than {} s (wall-clock deadline); stopped it",
                limits.wall.as_secs()
            );
            failure(
                &ctx,
                ErrorCode::WallTimeout,
                message,
                &mut child,
                session_id.clone(),
            )
            .await
        }
        Stop::Interrupted => {
            child.terminate(limits.kill_grace).await;
            interrupted_end(session_id.clone())
        }
        Stop::ConsumerGone => {
            child.terminate(limits.kill_grace).await;
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

/// Gets a decision for `request` in the background and writes the CLI's answer to its stdin.
fn resolve_permission(
    request: PermissionRequest,
    turn: &ProcessTurn,
    ctx: &TurnContext,
    stdin: Option<mpsc::Sender<StdinCommand>>,
) {
    let (Some(responder), Some(stdin)) = (turn.responder.clone(), stdin) else {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            ctx.emit(Event::warning(
                "permission_unanswerable",
                format!(
                    "{} asked for permission ({}) but this channel cannot answer it",
                    request.tool_name, request.request_id
                ),
            ))
            .await;
        });
        return;
    };
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let resolution = match responder.policy(&request) {
            Some(resolution) => resolution,
            None => ctx.permissions.ask(&request).await,
        };
        let response = responder.respond(&request, &resolution);
        let _ = stdin.send(StdinCommand::Write(response.stdin)).await;
        ctx.emit(Event::PermissionDecision(response.effective))
            .await;
        if response.cancel_turn {
            ctx.cancel.cancel();
        }
    });
}

/// A successful exit status (for a CLI stopped after its stream said the turn was complete).
fn exit_status_zero() -> ExitStatus {
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    #[cfg(windows)]
    use std::os::windows::process::ExitStatusExt;
    ExitStatus::from_raw(0)
}

/// The [`TurnEnd`] of an interrupted turn, as the plugin expects it.
pub fn interrupted_end(session_id: Option<String>) -> TurnEnd {
    TurnEnd {
        success: false,
        stop_reason: StopReason::Interrupted,
        session_id,
        result: None,
        error: Some("User interrupted".into()),
    }
}

async fn failure(
    ctx: &TurnContext,
    code: ErrorCode,
    message: String,
    child: &mut ChildProcess,
    session_id: Option<String>,
) -> TurnEnd {
    let tail = child.settled_stderr_tail(Duration::from_secs(1)).await;
    ctx.emit(Event::Error(
        ErrorInfo::new(code, message.clone()).with_stderr_tail(tail),
    ))
    .await;
    TurnEnd::failed(session_id, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::ExitTurn;

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
        };
        let (tx, mut rx) = mpsc::channel(64);
        let limits = TurnLimits {
            exit_grace: Duration::from_secs(2),
            ..TurnLimits::default()
        };
        let ctx = TurnContext::new(tx, CancellationToken::new(), limits);
        run_process_turn(turn, Box::<ExitNormalizer>::default(), ctx).await;
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
