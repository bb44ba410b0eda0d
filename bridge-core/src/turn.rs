//! The inputs of a turn: its [`TurnContext`] (where events go, cancel, deadlines, approvals),
//! the pure [`Normalizer`] a line-based provider supplies (`line → events`), and the
//! [`ProcessTurn`] that describes one CLI process for one turn.
//!
//! The loop that runs them is [`crate::session`]'s runner; [`crate::session::run_once`] runs a
//! [`ProcessTurn`]. For CLIs whose terminal signal is their exit, [`Normalizer::finish`] decides
//! from the stream and the exit status (exit codes lie: [`crate::normalize::ExitTurn`]).

use std::process::ExitStatus;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use crate::event::{ErrorInfo, Event, StopReason, TurnEnd};
use crate::permission::{PermissionBroker, PermissionResponder};
use crate::process::CommandSpec;

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
    /// needs there (a session id, a resume hint). The default ignores it (the runner keeps a
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
    /// its [`Event::TurnEnd`] here; otherwise the runner reports an early exit.
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
    /// turn is complete (pi's `agent_end`), so the CLI should exit now. The runner then gives
    /// it [`TurnLimits::exit_grace`]; a CLI that stays (neither exits nor prints a line that
    /// reopens the turn) is stopped, and [`Normalizer::finish`] decides as if it had exited 0:
    /// its stream said the turn was done, staying is not a failure of the turn. The default
    /// (false) waits for the exit, up to the deadlines.
    fn turn_complete(&self) -> bool {
        false
    }
}

/// When the runner closes the child's stdin.
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
    /// Bytes for stdin that wait until the CLI is busy with the model (see [`DeferredWrite`]).
    pub deferred: Option<DeferredWrite>,
}

/// Bytes for a CLI's stdin that are written once, at its first stdout line containing
/// `marker`: a request the CLI needs during the turn but would handle before the prompt if it
/// came at once, delaying the first answer (Claude Code handles a settings request it finds
/// on stdin at startup before it sends the prompt to the model; written at the first
/// `stream_event`, the model request is already on its way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredWrite {
    /// What the line must contain.
    pub marker: &'static str,
    /// What is written then.
    pub bytes: Vec<u8>,
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
    /// The request's own variables for every CLI process the turn starts
    /// ([`crate::request::Request::env`]); the command's own variables win.
    pub env: Arc<[(String, String)]>,
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
            env: Arc::new([]),
        }
    }

    /// `command` as this turn starts it: with the turn's recording attached (unless it has its
    /// own) and the request's variables ([`TurnContext::env`]) under the command's own ones (a
    /// variable the command sets or removes keeps the command's value).
    pub fn prepared(&self, command: &CommandSpec) -> CommandSpec {
        let mut command = command.clone();
        if command.record.is_none() {
            command.record = self.record.clone();
        }
        if !self.env.is_empty() {
            let own = |key: &str| {
                command.env.iter().any(|(k, _)| k == key)
                    || command.env_remove.iter().any(|k| k == key)
            };
            let overlay: Vec<_> = self
                .env
                .iter()
                .filter(|(key, _)| !own(key))
                .map(|(key, value)| (key.into(), value.into()))
                .collect();
            command.env.splice(0..0, overlay);
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

/// A duration in seconds (decimals allowed) from the environment variable `name`; `None` when
/// it is unset, not a number, or not positive.
///
/// ```
/// use bridge_core::turn::seconds_from_env;
/// assert_eq!(seconds_from_env("BRIDGE_DOCTEST_UNSET_VARIABLE"), None);
/// ```
pub fn seconds_from_env(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
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
