//! The second transport of an ACP provider: its CLI's one-shot JSON print mode (`--transport
//! json`), one process per turn through [`bridge_core::turn::run_process_turn`].
//!
//! A provider crate declares a [`OneShot`]: where its CLI is ([`sdk_probe::ProbeSpec`]) and
//! how to build a turn ([`OneShot::build`]: argv, env, stdin, and the pure normalizer for its
//! output). [`OneShotChannel`] does the rest the same way for every provider: locate the CLI
//! (a missing CLI fails the turn with the install hint), emit the build's warnings, check the
//! version in the background, run the turn.
//!
//! A one-shot mode cannot ask the client for approvals: the provider's build maps the
//! requested permission mode to the CLI's flags and warns (`permission_mode`) when the CLI
//! cannot honour it.

use std::path::PathBuf;

use bridge_core::channel::Channel;
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::request::Request;
use bridge_core::turn::{Normalizer, ProcessTurn, TurnContext, run_process_turn};
use futures_util::future::BoxFuture;
use sdk_probe::{ProbeEnv, ProbeSpec};

/// A built turn.
pub struct OneShotTurn {
    /// The process to run.
    pub turn: ProcessTurn,
    /// The normalizer of its output.
    pub normalizer: Box<dyn Normalizer>,
    /// What could not be honoured exactly (emitted before the turn).
    pub warnings: Vec<Event>,
}

impl std::fmt::Debug for OneShotTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneShotTurn")
            .field("turn", &self.turn)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// Builds one turn of the CLI at `program` for a request (`env` is the bridge's environment).
/// An `Err` fails the turn with [`ErrorCode::InvalidRequest`] and that message.
pub type BuildTurn = fn(PathBuf, &Request, &ProbeEnv) -> Result<OneShotTurn, String>;

/// What a provider declares about its one-shot JSON mode.
#[derive(Debug, Clone, Copy)]
pub struct OneShot {
    /// Binary lookup, tested versions, install hint (usually the provider's ACP probe).
    pub probe: ProbeSpec,
    /// Builds a turn.
    pub build: BuildTurn,
}

/// The [`Channel`] of a [`OneShot`] declaration.
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

/// Warns (in the background, never delaying the turn) when the CLI is outside the tested
/// range; the version comes from the cache `bridge system status` keeps.
fn spawn_version_check(probe: ProbeSpec, program: PathBuf, ctx: TurnContext) {
    tokio::spawn(async move {
        let env = ProbeEnv::from_process();
        let timeout = std::time::Duration::from_secs(5);
        if let Some(message) =
            sdk_probe::untested_version_warning(&probe, &program, &env, timeout).await
        {
            ctx.emit(Event::warning("untested_version", message)).await;
        }
    });
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
            let built = match (spec.build)(program.clone(), &request, &env) {
                Ok(built) => built,
                Err(message) => {
                    let info = fail(ErrorCode::InvalidRequest, message);
                    ctx.fail(info, request.session_id.clone()).await;
                    return;
                }
            };
            for warning in built.warnings {
                ctx.emit(warning).await;
            }
            if !explicit {
                spawn_version_check(spec.probe, program, ctx.clone());
            }
            run_process_turn(built.turn, built.normalizer, ctx).await;
        })
    }
}
