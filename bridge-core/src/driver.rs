//! Runs one `send` end to end: request → session → events → encoder → stdout.
//!
//! This is what `bridge <provider> send` does after parsing its arguments (and `bridge
//! <provider> session` for each turn). The wire invariants no channel has to think about (the
//! turn start comes first, a failed turn always carries one error before its end, exactly one
//! turn end) are kept by [`Session`]; this adds that a closed stdout stops the turn instead of
//! being written to forever.

use std::io::Write;
use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::channel::Channel;
use crate::conversation::{Session, SessionOptions};
use crate::encode::Encoder;
use crate::event::{ErrorCode, Event, StopReason};
use crate::output::LineWriter;
use crate::permission::PermissionBroker;
use crate::redact::Redactor;
use crate::request::{Request, RequestError};
use crate::turn::TurnLimits;

/// How to run and print one send.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// Include provider-native lines (JSONL only).
    pub raw: bool,
    /// Deadlines.
    pub limits: TurnLimits,
    /// Who answers approvals (default: nobody, every approval is denied at once).
    pub permissions: Option<Arc<PermissionBroker>>,
    /// Cancelled when the output's reader is gone; the turn then stops without grace periods.
    /// The driver also cancels it itself when a write fails.
    pub abort: CancellationToken,
    /// Also print each warning to stderr as `[WARNING] <code>: <message>` (redacted like
    /// stdout). The markers format has no line for warnings, and ai-bridge clients ignore
    /// stderr lines they do not know, so terminal users and plugin logs still see them.
    pub warnings_to_stderr: bool,
    /// Record the CLI's raw stdin, stdout and stderr under this prefix
    /// ([`crate::record::Recording`]); a prefix that cannot be written is a warning.
    pub record: Option<std::path::PathBuf>,
}

/// Where a send's events go: a wire format on stdout ([`WireSink`]) or the terminal view
/// ([`crate::text::TextSink`]).
pub trait Sink {
    /// The secrets this run must never print.
    fn redactor(&self) -> &Redactor;
    /// Never prints `secret` either from now on (the key of a session's later request).
    fn add_secret(&mut self, secret: &str);
    /// Writes one event (already redacted across deltas); an error means the reader is gone.
    fn write_event(&mut self, event: &Event) -> std::io::Result<()>;
    /// Writes one diagnostic line (already redacted, one line) where this output keeps them:
    /// the process's stderr by default, best effort (a closed stderr must not stop the turn).
    fn write_diagnostic(&mut self, line: &str) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// A wire format: each event encoded as lines and written through a redacting [`LineWriter`].
pub struct WireSink<W: Write> {
    encoder: Box<dyn Encoder>,
    writer: LineWriter<W>,
    lines: Vec<String>,
}

impl<W: Write> WireSink<W> {
    /// Encodes with `encoder` (see [`crate::encode::Format::encoder`]) into `writer`.
    pub fn new(encoder: Box<dyn Encoder>, writer: LineWriter<W>) -> Self {
        WireSink {
            encoder,
            writer,
            lines: Vec::new(),
        }
    }

    /// The writer (to get the output back in tests).
    pub fn into_writer(self) -> LineWriter<W> {
        self.writer
    }
}

impl<W: Write> Sink for WireSink<W> {
    fn redactor(&self) -> &Redactor {
        self.writer.redactor()
    }

    fn add_secret(&mut self, secret: &str) {
        self.writer.add_secret(secret);
    }

    fn write_event(&mut self, event: &Event) -> std::io::Result<()> {
        self.lines.clear();
        self.encoder.encode(event, &mut self.lines);
        for line in &self.lines {
            self.writer.write_line(line)?;
        }
        Ok(())
    }
}

/// How a send ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendOutcome {
    /// The provider reported success.
    pub success: bool,
    /// The turn was interrupted.
    pub interrupted: bool,
    /// The request itself was rejected (nothing was run).
    pub invalid_request: bool,
    /// Our stdout was closed by the reader.
    pub stdout_closed: bool,
}

/// Runs one send and writes its events to `sink`: a [`Session`] with one turn.
pub async fn run_send(
    channel: Arc<dyn Channel>,
    request: Result<Request, RequestError>,
    options: &SendOptions,
    sink: &mut dyn Sink,
    cancel: CancellationToken,
) -> SendOutcome {
    let session = Session::open(channel, options.session_options(sink.redactor().clone()));
    let outcome = run_session_turn(&session, request, options, sink, cancel).await;
    session.close().await;
    outcome
}

impl SendOptions {
    /// The [`Session`] settings of these options, redacting with `redactor`.
    pub fn session_options(&self, redactor: Redactor) -> SessionOptions {
        SessionOptions {
            limits: self.limits,
            raw: self.raw,
            permissions: self.permissions.clone(),
            abort: self.abort.clone(),
            redactor,
            record: self.record.clone(),
            announce_continuity: false,
        }
    }
}

/// Runs one turn of `session` and writes its events to `sink` (the session guarantees the
/// wire invariants; this adds the output side: a closed stdout stops the session, warnings
/// may go to stderr too).
pub async fn run_session_turn(
    session: &Session,
    request: Result<Request, RequestError>,
    options: &SendOptions,
    sink: &mut dyn Sink,
    cancel: CancellationToken,
) -> SendOutcome {
    let events = session.turn(request, cancel.clone());
    write_turn(events, options, sink, cancel).await
}

/// Writes the events of one turn (a stream from [`Session::turn`]) to `sink`, up to its turn
/// end. A write that fails (the reader is gone) cancels `cancel` and [`SendOptions::abort`].
pub async fn write_turn<S: Sink + ?Sized>(
    mut events: futures_util::stream::BoxStream<'static, Event>,
    options: &SendOptions,
    sink: &mut S,
    cancel: CancellationToken,
) -> SendOutcome {
    let mut outcome = SendOutcome {
        success: false,
        interrupted: false,
        invalid_request: false,
        stdout_closed: false,
    };
    let mut errors = 0usize;
    while let Some(event) = events.next().await {
        match &event {
            Event::Error(info) => {
                errors += 1;
                if errors == 1 && info.code == ErrorCode::InvalidRequest {
                    outcome.invalid_request = true;
                }
            }
            Event::TurnEnd(end) => {
                outcome.success = end.success;
                outcome.interrupted = end.stop_reason == StopReason::Interrupted;
            }
            Event::Warning { code, message } if options.warnings_to_stderr => {
                let line = format!("[WARNING] {code}: {message}");
                let line = sink.redactor().redact(&line).replace(['\r', '\n'], " ");
                sink.write_diagnostic(&line);
            }
            _ => {}
        }
        let end = matches!(event, Event::TurnEnd(_));
        if !outcome.stdout_closed && sink.write_event(&event).is_err() {
            outcome.stdout_closed = true;
            options.abort.cancel();
            cancel.cancel();
        }
        if end {
            break;
        }
    }
    outcome
}
