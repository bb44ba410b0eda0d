//! Runs one `send` end to end: request → channel → events → encoder → stdout.
//!
//! This is what `bridge <provider> send` does after parsing its arguments. It guarantees the
//! wire invariants no channel has to think about: the turn start comes first, a failed turn
//! always carries one error before its end, exactly one turn end is written, and a closed
//! stdout stops the turn instead of being written to forever.

use std::io::Write;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channel::Channel;
use crate::encode::Encoder;
use crate::event::{ErrorCode, ErrorInfo, Event, StopReason, TurnEnd};
use crate::output::LineWriter;
use crate::permission::PermissionBroker;
use crate::redact::{Redactor, SplitSecretGuard};
use crate::request::{Request, RequestError};
use crate::turn::{TurnContext, TurnLimits};

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
    /// Writes one event (already redacted across deltas); an error means the reader is gone.
    fn write_event(&mut self, event: &Event) -> std::io::Result<()>;
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

/// Runs one send and writes its events to `sink`.
pub async fn run_send(
    channel: Arc<dyn Channel>,
    request: Result<Request, RequestError>,
    options: &SendOptions,
    sink: &mut dyn Sink,
    cancel: CancellationToken,
) -> SendOutcome {
    let mut outcome = SendOutcome {
        success: false,
        interrupted: false,
        invalid_request: false,
        stdout_closed: false,
    };
    // Created before `write` borrows the sink; opened files appear only once the CLI writes.
    let recording = options.record.as_ref().map(|prefix| {
        (
            prefix,
            crate::record::Recording::create(prefix, sink.redactor().clone()),
        )
    });
    // A secret streamed across several deltas would pass the per-line redaction.
    let mut guard = SplitSecretGuard::default();
    let mut guarded = Vec::new();
    let mut write = |event: Event, outcome: &mut SendOutcome| {
        guarded.clear();
        guard.pass(event, sink.redactor(), &mut guarded);
        for event in guarded.drain(..) {
            if options.warnings_to_stderr
                && let Event::Warning { code, message } = &event
            {
                let line = format!("[WARNING] {code}: {message}");
                let line = sink.redactor().redact(&line).replace(['\r', '\n'], " ");
                // Best effort: a closed stderr must not stop the turn.
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            if outcome.stdout_closed {
                break;
            }
            if sink.write_event(&event).is_err() {
                outcome.stdout_closed = true;
                options.abort.cancel();
                cancel.cancel();
            }
        }
    };

    write(
        Event::TurnStart {
            provider: channel.id().to_string(),
        },
        &mut outcome,
    );

    let request = request.and_then(|request| {
        request.validate()?;
        channel.check_transport(&request)?;
        Ok(request)
    });
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            outcome.invalid_request = true;
            let message = error.to_string();
            write(
                Event::Error(ErrorInfo::new(ErrorCode::InvalidRequest, message.clone())),
                &mut outcome,
            );
            write(Event::TurnEnd(TurnEnd::failed(None, message)), &mut outcome);
            return outcome;
        }
    };

    let (events, mut receiver) = mpsc::channel(256);
    let mut ctx = TurnContext::new(events, cancel.clone(), options.limits);
    ctx.raw = options.raw;
    if let Some(broker) = &options.permissions {
        ctx.permissions = Arc::clone(broker);
    }
    ctx.abort = options.abort.clone();
    if let Some((prefix, recording)) = recording {
        match recording {
            Ok(recording) => ctx.record = Some(recording),
            Err(error) => write(
                Event::warning(
                    "record_failed",
                    format!("cannot record to {}: {error}", prefix.display()),
                ),
                &mut outcome,
            ),
        }
    }
    let task = tokio::spawn(channel.send(request, ctx));
    let mut error_seen = false;
    let mut ended = false;
    while let Some(event) = receiver.recv().await {
        match &event {
            Event::Error(_) => error_seen = true,
            Event::TurnEnd(end) => {
                if !end.success && !error_seen && end.stop_reason != StopReason::Interrupted {
                    let message = end
                        .error
                        .clone()
                        .unwrap_or_else(|| "the turn failed".into());
                    write(Event::error(ErrorCode::Provider, message), &mut outcome);
                }
                outcome.success = end.success;
                outcome.interrupted = end.stop_reason == StopReason::Interrupted;
                ended = true;
            }
            _ => {}
        }
        if ended && !matches!(event, Event::TurnEnd(_)) {
            continue;
        }
        write(event, &mut outcome);
        if ended {
            break;
        }
    }
    drop(receiver);
    let _ = task.await;
    if !ended {
        let message = format!(
            "internal error: the {} channel ended without a result",
            channel.id()
        );
        write(
            Event::error(ErrorCode::Internal, message.clone()),
            &mut outcome,
        );
        write(Event::TurnEnd(TurnEnd::failed(None, message)), &mut outcome);
    }
    outcome
}
