//! `bridge <provider> session`: one conversation per bridge process, many turns over stdin.
//!
//! Each stdin line is a request JSON (a turn; the same fields as `send`, `sessionId` only on
//! the first) or a control line (`interrupt`, `permission_response`, `set_permission_mode`,
//! `set_model`). Turns run one at a time in the order their lines came; a request sent while a
//! turn runs is queued. In markers each turn is a complete `send` transcript (its own
//! `[MESSAGE_START]` … final `{"success":…}` line); in JSONL turns are delimited by
//! `turn_start` / `turn_end` and `seq` runs on across the session. A malformed line is a failed
//! turn of its own (its error says why) and the session goes on; an unknown control type is a
//! `[WARNING]` on stderr. In the text format it is a chat: each line typed is a turn, `/exit`
//! ends it. stdin EOF ends the session after the queued turns: the CLI gets its graceful close,
//! then the group kill.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge::core::control::{Control, parse_control};
use bridge::core::conversation::Session;
use bridge::core::driver::{SendOptions, Sink, WireSink, write_turn};
use bridge::core::encode::Format;
use bridge::core::event::Event;
use bridge::core::output::{LineWriter, watch_stdout_closed};
use bridge::core::permission::PermissionBroker;
use bridge::core::permission_ipc::FileIpc;
use bridge::core::request::{Request, RequestError};
use bridge::core::text::{OpenApprovals, TextSink};
use futures_util::stream::BoxStream;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    Cli, OutputFormat, answer_typed, base_redactor, install_signal_handlers, output_format,
    turn_limits, with_defaults,
};

/// A turn asked for: its events, and the token that interrupts it.
struct Queued {
    events: BoxStream<'static, Event>,
    cancel: CancellationToken,
    /// `"streaming": false` in its request (markers: whole blocks instead of deltas).
    streaming: bool,
    /// The request's `apiKey`: the output redacts it from this turn on.
    api_key: Option<String>,
}

/// Runs the session until stdin ends (or `/exit`, or a signal).
pub(crate) async fn run(cli: Cli, channel: Arc<dyn bridge::core::Channel>) -> ExitCode {
    let ended = CancellationToken::new();
    let stdout_closed = CancellationToken::new();
    install_signal_handlers(ended.clone());
    watch_stdout_closed(ended.clone(), stdout_closed.clone());
    let format = output_format(&cli);
    let cwd = cli
        .cwd
        .clone()
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let ipc = FileIpc::from_env(&cwd);
    let approval_timeout = match &ipc {
        Some(ipc) => ipc.safety_net(),
        None => Duration::from_secs(cli.approval_timeout),
    };
    let broker = Arc::new(PermissionBroker::new(true, ipc, approval_timeout));
    let mut redactor = base_redactor();
    let options = SendOptions {
        raw: cli.raw,
        limits: turn_limits(&cli),
        permissions: Some(Arc::clone(&broker)),
        abort: stdout_closed.clone(),
        warnings_to_stderr: format == OutputFormat::Wire(Format::Markers),
        record: cli.record.clone(),
    };
    let session = Arc::new(Session::open(
        Arc::clone(&channel),
        bridge::core::conversation::SessionOptions {
            announce_continuity: true,
            ..options.session_options(redactor.clone())
        },
    ));
    let typed = (format == OutputFormat::Text).then(OpenApprovals::default);
    // The running turn's interrupt token (an `interrupt` line or a signal cancels it).
    let current: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let (queue, mut turns) = mpsc::unbounded_channel::<Queued>();
    {
        let session = Arc::clone(&session);
        let current = Arc::clone(&current);
        let broker = Arc::clone(&broker);
        let typed = typed.clone();
        let cli_defaults = cli.clone();
        let ended = ended.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            let mut first = true;
            loop {
                let line = tokio::select! {
                    line = lines.next_line() => line,
                    _ = ended.cancelled() => break,
                };
                let Ok(Some(line)) = line else { break };
                let trimmed = line.trim();
                if trimmed.is_empty() {
                    continue;
                }
                let request = if let Some(typed) = &typed
                    && !trimmed.starts_with('{')
                {
                    if trimmed == "/exit" {
                        break;
                    }
                    if typed.oldest().is_some() {
                        answer_typed(trimmed, typed, &broker);
                        continue;
                    }
                    Ok(Request::from_prompt(trimmed))
                } else {
                    match classify(trimmed) {
                        Line::Control(control) => {
                            apply_control(control, &session, &current, &broker);
                            continue;
                        }
                        Line::UnknownControl(message) => {
                            eprintln!("[WARNING] unknown_control: {message}; ignored");
                            continue;
                        }
                        Line::Request(request) => *request,
                    }
                };
                let request = request.map(|request| with_defaults(&cli_defaults, request, first));
                first = false;
                let streaming = request
                    .as_ref()
                    .ok()
                    .and_then(|r| r.streaming)
                    .unwrap_or(true);
                let api_key = request
                    .as_ref()
                    .ok()
                    .and_then(|r| r.api_key.as_ref())
                    .map(|key| key.expose().to_string());
                let cancel = CancellationToken::new();
                let events = session.turn(request, cancel.clone());
                if queue
                    .send(Queued {
                        events,
                        cancel,
                        streaming,
                        api_key,
                    })
                    .is_err()
                {
                    break;
                }
            }
            // Nobody can answer approvals over stdin any more.
            broker.client_gone();
        });
    }

    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut text_sink = (format == OutputFormat::Text).then(|| {
        let sink = TextSink::new(
            std::io::stdout().lock(),
            std::io::stderr(),
            redactor.clone(),
            color,
        );
        match typed.clone() {
            Some(typed) => sink.answered_by_typing(typed),
            None => sink,
        }
    });
    let mut jsonl_sink = (format == OutputFormat::Wire(Format::Jsonl)).then(|| {
        let encoder = Format::Jsonl.encoder_for(channel.dialect(), cli.raw, true);
        WireSink::new(
            encoder,
            LineWriter::new(std::io::stdout().lock(), redactor.clone()),
        )
    });
    let mut closed = false;
    while let Some(turn) = tokio::select! {
        turn = turns.recv() => turn,
        _ = ended.cancelled() => None,
    } {
        if let Ok(mut current) = current.lock() {
            *current = Some(turn.cancel.clone());
        }
        // A signal interrupts the running turn too.
        let on_signal = {
            let ended = ended.clone();
            let cancel = turn.cancel.clone();
            tokio::spawn(async move {
                ended.cancelled().await;
                cancel.cancel();
            })
        };
        // Every key a request brought stays redacted for the rest of the session.
        if let Some(key) = &turn.api_key {
            redactor.add(key);
        }
        let outcome = match (&mut text_sink, &mut jsonl_sink) {
            (Some(sink), _) => {
                add_secret(sink, turn.api_key.as_deref());
                write_turn(turn.events, &options, sink, turn.cancel).await
            }
            (_, Some(sink)) => {
                add_secret(sink, turn.api_key.as_deref());
                write_turn(turn.events, &options, sink, turn.cancel).await
            }
            _ => {
                let encoder =
                    Format::Markers.encoder_for(channel.dialect(), cli.raw, turn.streaming);
                let writer = LineWriter::new(std::io::stdout().lock(), redactor.clone());
                let mut sink: WireSink<_> = WireSink::new(encoder, writer);
                write_turn(
                    turn.events,
                    &options,
                    &mut sink as &mut dyn Sink,
                    turn.cancel,
                )
                .await
            }
        };
        on_signal.abort();
        if outcome.stdout_closed {
            closed = true;
            break;
        }
        if ended.is_cancelled() {
            break;
        }
    }
    // Later turns queued when the session ends are not run.
    drop(turns);
    session.close().await;
    if closed || stdout_closed.is_cancelled() {
        ExitCode::from(1)
    } else if ended.is_cancelled() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    }
}

fn add_secret(sink: &mut dyn Sink, secret: Option<&str>) {
    if let Some(secret) = secret {
        sink.add_secret(secret);
    }
}

/// What one stdin line of a session is.
enum Line {
    Control(Control),
    UnknownControl(String),
    Request(Box<Result<Request, RequestError>>),
}

/// Control lines have a `type` the control protocol knows; a line with another `type` and no
/// `message` is an unknown control line; everything else is a request (or a malformed one).
fn classify(line: &str) -> Line {
    let value: Option<serde_json::Value> = serde_json::from_str(line).ok();
    let kind = value
        .as_ref()
        .and_then(|v| v.get("type"))
        .and_then(|t| t.as_str());
    let has_message = value.as_ref().is_some_and(|v| v.get("message").is_some());
    match kind {
        Some(_) if !has_message => match parse_control(line) {
            Ok(control) => Line::Control(control),
            Err(error) => Line::UnknownControl(error),
        },
        _ => Line::Request(Box::new(Request::from_json(line.as_bytes()))),
    }
}

fn apply_control(
    control: Control,
    session: &Session,
    current: &Mutex<Option<CancellationToken>>,
    broker: &PermissionBroker,
) {
    match control {
        Control::Interrupt => {
            if let Ok(current) = current.lock()
                && let Some(cancel) = current.as_ref()
            {
                cancel.cancel();
            }
        }
        Control::PermissionResponse {
            request_id,
            decision,
        } => {
            if !broker.answer(&request_id, *decision) {
                eprintln!("bridge: too many answers for unknown approvals; dropped {request_id:?}");
            }
        }
        Control::SetPermissionMode(mode) => session.set_permission_mode(mode),
        Control::SetModel(model) => session.set_model(model),
    }
}
