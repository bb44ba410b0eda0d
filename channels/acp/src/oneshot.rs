//! The second transport of ACP providers whose CLI also has a one-shot JSON print mode
//! (`opencode run --format json`, `kimi --print --output-format stream-json`): one process per
//! turn, its stdout turned into events by a pure [`Normalizer`], through the shared process-turn
//! engine ([`bridge_core::turn::run_process_turn`]).
//!
//! A provider crate declares a [`OneShot`] (its probe, how to build the process for a request,
//! which normalizer reads it) and combines the [`OneShotChannel`] with its ACP channel in a
//! [`bridge_core::channel::Transports`].

use std::path::PathBuf;

use bridge_core::channel::Channel;
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_core::turn::{Normalizer, ProcessTurn, TurnContext, run_process_turn};
use futures_util::future::BoxFuture;
use sdk_probe::{ProbeEnv, ProbeSpec};

/// A built turn.
#[derive(Debug)]
pub struct OneShotLaunch {
    /// The process to run.
    pub turn: ProcessTurn,
    /// What could not be honoured exactly (emitted before the turn).
    pub warnings: Vec<Event>,
    /// Private files the turn needs (an agent file, …); deleted when the turn is over.
    pub scratch: Option<tempfile::TempDir>,
    /// The session the turn runs in, when it is known before the CLI says (a resumed one, or
    /// one the bridge named).
    pub session_id: Option<String>,
}

impl OneShotLaunch {
    /// The arguments, as text (for tests and diagnostics).
    pub fn args(&self) -> Vec<String> {
        self.turn
            .command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The value the launch sets for the variable `key`, if it sets one.
    pub fn env(&self, key: &str) -> Option<String> {
        self.turn
            .command
            .env
            .iter()
            .find(|(k, _)| k.to_str() == Some(key))
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    /// The codes of the warnings, in order.
    pub fn warning_codes(&self) -> Vec<String> {
        self.warnings
            .iter()
            .filter_map(|e| match e {
                Event::Warning { code, .. } => Some(code.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A turn of `command` whose prompt is `payload` on stdin, closed right after it (the print
/// modes read the prompt to EOF and wait for it on an open stdin).
pub fn stdin_prompt_turn(provider: &str, mut command: CommandSpec, payload: String) -> ProcessTurn {
    command.stdin = bridge_core::process::StdinMode::Piped;
    ProcessTurn {
        provider: provider.into(),
        command,
        stdin_payload: payload.into_bytes(),
        close_stdin: bridge_core::turn::CloseStdin::AfterPayload,
        interrupt_payload: None,
        responder: None,
    }
}

/// Sets each of `defaults` on `command` unless the bridge's environment `env` sets it.
pub fn set_env_defaults(command: &mut CommandSpec, defaults: &[(&str, &str)], env: &ProbeEnv) {
    for (key, value) in defaults {
        if env.var(key).is_none() {
            command.env(key, value);
        }
    }
}

/// Why a request cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneShotError {
    /// [`ErrorCode::InvalidRequest`] or [`ErrorCode::CliNotFound`].
    pub code: ErrorCode,
    /// What to fix.
    pub message: String,
}

impl OneShotError {
    /// An invalid request.
    pub fn invalid(message: impl Into<String>) -> Self {
        OneShotError {
            code: ErrorCode::InvalidRequest,
            message: message.into(),
        }
    }
}

/// What a provider declares about its print mode.
#[derive(Debug, Clone, Copy)]
pub struct OneShot {
    /// Binary lookup, tested versions (shared with the ACP transport).
    pub probe: ProbeSpec,
    /// The process for one turn of the CLI at the given path.
    pub build: fn(PathBuf, &Request, &ProbeEnv) -> Result<OneShotLaunch, OneShotError>,
    /// The normalizer for one turn, given [`OneShotLaunch::session_id`].
    pub normalizer: fn(Option<String>) -> Box<dyn Normalizer>,
}

/// The [`Channel`] of a [`OneShot`] print mode.
#[derive(Debug, Clone, Copy)]
pub struct OneShotChannel {
    spec: &'static OneShot,
}

impl OneShotChannel {
    /// The channel of `spec`.
    pub const fn new(spec: &'static OneShot) -> Self {
        OneShotChannel { spec }
    }
}

impl Channel for OneShotChannel {
    fn id(&self) -> &'static str {
        self.spec.probe.id
    }

    fn display_name(&self) -> &'static str {
        self.spec.probe.display_name
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        let spec = self.spec;
        Box::pin(async move {
            let env = ProbeEnv::from_process();
            let fail = |code, message| ErrorInfo {
                code,
                message,
                stderr_tail: None,
            };
            let located = match sdk_probe::locate(&spec.probe, &env) {
                Ok(located) => located,
                Err(message) => {
                    let info = fail(ErrorCode::CliNotFound, message);
                    ctx.fail(info, request.session_id.clone()).await;
                    return;
                }
            };
            for warning in located.warnings {
                ctx.emit(Event::warning("cli_path", warning)).await;
            }
            // A binary named through an env override is the user's choice: not second-guessed.
            let explicit = matches!(located.resolved.source, sdk_probe::Source::Env { .. });
            let program = located.resolved.path;
            let launch = match (spec.build)(program.clone(), &request, &env) {
                Ok(launch) => launch,
                Err(error) => {
                    let info = fail(error.code, error.message);
                    ctx.fail(info, request.session_id.clone()).await;
                    return;
                }
            };
            for warning in launch.warnings {
                ctx.emit(warning).await;
            }
            if !explicit {
                let ctx = ctx.clone();
                let probe = spec.probe;
                tokio::spawn(async move {
                    let timeout = std::time::Duration::from_secs(5);
                    if let Some(message) =
                        sdk_probe::untested_version_warning(&probe, &program, &env, timeout).await
                    {
                        ctx.emit(Event::warning("untested_version", message)).await;
                    }
                });
            }
            let normalizer = (spec.normalizer)(launch.session_id.clone());
            run_process_turn(launch.turn, normalizer, ctx).await;
            drop(launch.scratch);
        })
    }
}

/// The request's message with `agentPrompt` appended (for CLIs without a system-prompt flag).
pub fn message_with_agent_prompt(request: &Request) -> String {
    let mut message = request.message.clone();
    if let Some(prompt) = request
        .agent_prompt
        .as_deref()
        .filter(|p| !p.trim().is_empty())
    {
        message.push_str("\n\n## Agent Role and Instructions\n\n");
        message.push_str(prompt);
    }
    message
}

/// A private (0700) temporary directory for one turn's files.
pub fn scratch_dir(id: &str) -> Result<tempfile::TempDir, OneShotError> {
    let mut builder = tempfile::Builder::new();
    let prefix = format!("bridge-{id}-");
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder
        .tempdir()
        .map_err(|e| OneShotError::invalid(format!("cannot create a temporary directory: {e}")))
}

/// A warning when the request has attachments a print mode cannot take.
pub fn attachments_skipped(provider: &str, request: &Request) -> Option<Event> {
    (!request.attachments.is_empty()).then(|| {
        Event::warning(
            "attachment_skipped",
            format!(
                "the {provider} print mode takes a text prompt only; {} attachment(s) ignored \
                 (use --transport acp to send them)",
                request.attachments.len()
            ),
        )
    })
}
