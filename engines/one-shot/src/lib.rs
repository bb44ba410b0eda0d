//! The one-shot engine: a CLI run once per turn that prints one JSON event per line (pi,
//! oh-my-pi, the community Grok CLI, and the one-shot JSON print modes of qwen, copilot, gemini,
//! opencode and kimi, which are those providers' `json` transport; also `claude` stream-json).
//!
//! A provider declares a [`OneShot`]: where its CLI is ([`sdk_probe::ProbeSpec`], or its own
//! lookup) and how to build a turn ([`OneShot::build`]: argv, env, stdin, and the pure
//! normalizer of its output). [`OneShotChannel`] does the rest the same way for every provider:
//! locate the CLI (a missing CLI fails the turn with the install hint), emit the build's
//! warnings, check the version in the background ([`sdk_probe::turn_version_check`]), run the
//! turn through
//! [`bridge_core::session::run_once`] (deadlines, interrupt, process group, exit codes that
//! lie are the normalizer's `finish`).
//!
//! A one-shot print mode cannot ask the client for approvals: the provider's build maps the
//! requested permission mode to the CLI's flags and warns (`permission_mode`) when the CLI
//! cannot honour it. (Claude Code's stream-json mode can: its built turn carries the
//! [`ProcessTurn::responder`] that answers them.)
//!
//! ```
//! use bridge_core::channel::Channel;
//! use bridge_core::event::Event;
//! use bridge_core::process::{CommandSpec, StdinMode};
//! use bridge_core::turn::{CloseStdin, Normalizer, ProcessTurn};
//! use bridge_one_shot::{BuildError, OneShot, OneShotChannel, OneShotTurn};
//!
//! /// `{"text": "…"}` lines; the exit status decides (a real normalizer checks the stream too).
//! #[derive(Default)]
//! struct Lines;
//! impl Normalizer for Lines {
//!     fn line(&mut self, line: &str, out: &mut Vec<Event>) {
//!         if let Some(text) = line.strip_prefix(r#"{"text":""#).and_then(|t| t.strip_suffix(r#""}"#)) {
//!             out.push(Event::TextDelta { text: text.to_string() });
//!         }
//!     }
//!     fn session_id(&self) -> Option<String> {
//!         None
//!     }
//! }
//!
//! const PROBE: sdk_probe::ProbeSpec = sdk_probe::ProbeSpec {
//!     install_hint: "npm i -g my-agent",
//!     ..sdk_probe::ProbeSpec::new("mine", "My Agent", &["my-agent"])
//! };
//!
//! fn build(
//!     program: std::path::PathBuf,
//!     request: &bridge_core::request::Request,
//!     _env: &sdk_probe::ProbeEnv,
//! ) -> Result<OneShotTurn, BuildError> {
//!     let mut command = CommandSpec::new(program);
//!     command.arg("--print").arg("--json");
//!     command.stdin = StdinMode::Piped;
//!     let turn = ProcessTurn {
//!         provider: "mine".into(),
//!         command,
//!         stdin_payload: request.message.clone().into_bytes(),
//!         close_stdin: CloseStdin::AfterPayload,
//!         interrupt_payload: None,
//!         responder: None,
//!         deferred: None,
//!     };
//!     Ok(OneShotTurn::new(turn, Box::new(Lines)))
//! }
//!
//! static MINE: OneShot = OneShot::new(PROBE, build);
//! let channel = OneShotChannel::new(&MINE);
//! assert_eq!(channel.id(), "mine");
//! ```

#![deny(missing_docs)]

use std::path::PathBuf;

use bridge_core::channel::Channel;
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::request::Request;
use bridge_core::session::run_once;
use bridge_core::turn::{CloseStdin, Normalizer, ProcessTurn, TurnContext};
use futures_util::future::BoxFuture;
use sdk_probe::{Located, ProbeEnv, ProbeSpec};

/// A built turn.
pub struct OneShotTurn {
    /// The process to run.
    pub turn: ProcessTurn,
    /// The normalizer of its output.
    pub normalizer: Box<dyn Normalizer>,
    /// What could not be honoured exactly (emitted before the turn).
    pub warnings: Vec<Event>,
    /// A private directory the turn's files live in (attachments, prompts), removed when the
    /// turn ends.
    pub scratch: Option<tempfile::TempDir>,
}

impl OneShotTurn {
    /// A turn without warnings or scratch files.
    pub fn new(turn: ProcessTurn, normalizer: Box<dyn Normalizer>) -> Self {
        OneShotTurn {
            turn,
            normalizer,
            warnings: Vec::new(),
            scratch: None,
        }
    }
}

impl OneShotTurn {
    /// The arguments, as text (for tests and diagnostics).
    pub fn args(&self) -> Vec<String> {
        self.turn
            .command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The value the turn sets for the variable `key`, if it sets one.
    pub fn env(&self, key: &str) -> Option<String> {
        self.turn
            .command
            .env
            .iter()
            .find(|(k, _)| k.to_str() == Some(key))
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    /// Every variable the turn sets, in the order it sets them.
    pub fn env_vars(&self) -> Vec<(String, String)> {
        self.turn
            .command
            .env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    /// The prompt the turn writes to the CLI's stdin, when stdin is piped and closed right
    /// after it (as [`stdin_prompt_turn`] does); `None` for any other stdin.
    pub fn stdin_prompt(&self) -> Option<&str> {
        let piped = self.turn.command.stdin == StdinMode::Piped
            && self.turn.close_stdin == CloseStdin::AfterPayload;
        piped
            .then(|| std::str::from_utf8(&self.turn.stdin_payload).ok())
            .flatten()
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

/// A turn of `command` whose prompt is `payload` on stdin, closed right after it (print modes
/// read the prompt to EOF and would wait for it on an open stdin).
pub fn stdin_prompt_turn(provider: &str, mut command: CommandSpec, payload: String) -> ProcessTurn {
    command.stdin = StdinMode::Piped;
    ProcessTurn {
        provider: provider.into(),
        command,
        stdin_payload: payload.into_bytes(),
        close_stdin: CloseStdin::AfterPayload,
        interrupt_payload: None,
        responder: None,
        deferred: None,
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

/// Passes the request's `baseUrl` and `apiKey` to the CLI in the variables `base_url_var` and
/// `api_key_var` (the child's environment only: a key never goes into argv).
pub fn set_endpoint_env(
    command: &mut CommandSpec,
    request: &Request,
    base_url_var: &str,
    api_key_var: &str,
) {
    if let Some(url) = &request.base_url {
        command.env(base_url_var, url);
    }
    if let Some(key) = &request.api_key {
        command.env(api_key_var, key.expose());
    }
}

/// A private (0700) temporary directory for one turn's files.
pub fn scratch_dir(id: &str) -> Result<tempfile::TempDir, BuildError> {
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
        .map_err(|e| BuildError::invalid(format!("cannot create a temporary directory: {e}")))
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

/// The endpoint fields (`baseUrl`, `apiKey`) that `request` sets, for a CLI that takes its
/// endpoints and keys only from its own configuration (each is worth an `unsupported_field`
/// warning).
///
/// ```
/// let request = bridge_core::request::Request::from_value(
///     serde_json::json!({"message": "hi", "apiKey": "sk-1"}),
/// )
/// .unwrap();
/// assert_eq!(bridge_one_shot::endpoint_fields(&request).collect::<Vec<_>>(), ["apiKey"]);
/// ```
pub fn endpoint_fields(request: &Request) -> impl Iterator<Item = &'static str> {
    [
        ("baseUrl", request.base_url.is_some()),
        ("apiKey", request.api_key.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
}

impl std::fmt::Debug for OneShotTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneShotTurn")
            .field("turn", &self.turn)
            .field("warnings", &self.warnings)
            .field("scratch", &self.scratch)
            .finish_non_exhaustive()
    }
}

/// Why a turn could not be built; it fails the turn with this code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BuildError {
    /// [`ErrorCode::InvalidRequest`] for a request the CLI cannot run, or another code (for
    /// example [`ErrorCode::CliNotFound`] for a missing runtime).
    pub code: ErrorCode,
    /// What to fix.
    pub message: String,
}

impl BuildError {
    /// A request the CLI cannot run.
    pub fn invalid(message: impl Into<String>) -> Self {
        BuildError {
            code: ErrorCode::InvalidRequest,
            message: message.into(),
        }
    }
}

impl From<String> for BuildError {
    fn from(message: String) -> Self {
        BuildError::invalid(message)
    }
}

/// Builds one turn of the CLI at `program` for a request (`env` is the bridge's environment).
pub type BuildTurn = fn(PathBuf, &Request, &ProbeEnv) -> Result<OneShotTurn, BuildError>;

/// Finds the CLI (the error names the package that installs it).
pub type LocateCli = fn(&ProbeSpec, &ProbeEnv) -> Result<Located, String>;

/// What a provider declares about its JSONL CLI.
#[derive(Debug, Clone, Copy)]
pub struct OneShot {
    /// Binary lookup, tested versions, install hint.
    pub probe: ProbeSpec,
    /// Finds the binary ([`sdk_probe::locate`] unless the provider needs more).
    pub locate: LocateCli,
    /// Builds a turn.
    pub build: BuildTurn,
    /// The CLI resumes a conversation by its session id (a session's later turns pass it);
    /// `false` for a CLI without sessions, whose every turn starts afresh.
    pub resumes: bool,
    /// The query commands it answers besides its sends ([`bridge_core::query`]).
    pub queries: &'static [bridge_core::query::Query],
}

impl OneShot {
    /// A CLI found by [`sdk_probe::locate`] from `probe`, whose turns `build` makes.
    pub const fn new(probe: ProbeSpec, build: BuildTurn) -> Self {
        OneShot {
            probe,
            locate: sdk_probe::locate,
            build,
            resumes: true,
            queries: &[],
        }
    }

    /// The same CLI, answering `queries` too.
    pub const fn with_queries(mut self, queries: &'static [bridge_core::query::Query]) -> Self {
        self.queries = queries;
        self
    }
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

    /// Its declaration.
    pub fn spec(&self) -> &'static OneShot {
        self.spec
    }
}

impl Channel for OneShotChannel {
    fn id(&self) -> &'static str {
        self.spec.probe.id
    }

    fn display_name(&self) -> &'static str {
        self.spec.probe.display_name
    }

    fn resumes(&self) -> bool {
        self.spec.resumes
    }

    fn queries(&self) -> &'static [bridge_core::query::Query] {
        self.spec.queries
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        let spec = self.spec;
        Box::pin(run_one_shot(
            spec.probe,
            spec.locate,
            spec.build,
            request,
            ctx,
        ))
    }
}

/// One turn of a one-shot CLI, the way [`OneShotChannel`] runs it, for a channel whose build
/// needs more than a `fn` pointer (a provider declared at run time, such as a relay profile
/// from a config file): locate the CLI from `probe`, emit the build's warnings, check the
/// version, run the turn.
pub async fn run_one_shot(
    probe: ProbeSpec,
    locate: LocateCli,
    build: impl FnOnce(PathBuf, &Request, &ProbeEnv) -> Result<OneShotTurn, BuildError>,
    request: Request,
    ctx: TurnContext,
) {
    let env = ProbeEnv::from_process();
    let fail = |code, message| ErrorInfo::new(code, message);
    let located = match locate(&probe, &env) {
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
    let version_check = sdk_probe::turn_version_check(probe, &located.resolved);
    let built = match build(located.resolved.path, &request, &env) {
        Ok(built) => built,
        Err(error) => {
            let info = fail(error.code, error.message);
            ctx.fail(info, request.session_id.clone()).await;
            return;
        }
    };
    for warning in built.warnings {
        ctx.emit(warning).await;
    }
    if let Some(check) = version_check {
        ctx.warn_later("untested_version", check);
    }
    run_once(built.turn, built.normalizer, ctx).await;
    // The scratch files outlive the process.
    drop(built.scratch);
}
