//! The Codex channel.
//!
//! How it launches the CLI (facts: `shared/reference/real-clis-openai.md` §3, Codex 0.171.0):
//!
//! ```text
//! codex exec --json --color never
//!       --skip-git-repo-check --sandbox <mapped>     (permission mode, CODEX_SANDBOX_MODE)
//!       [-C <cwd>]                                    (new threads only)
//!       [-m <model>] [-c model_reasoning_effort="…"] [-c developer_instructions="…"]
//!       [-c service_tier="…"]
//!       [-c model_provider="bridge" -c model_providers.bridge.{name,base_url,wire_api,env_key,…}]
//!       [-c shell_environment_policy.exclude=["BRIDGE_CODEX_API_KEY","CODEX_API_KEY"]]
//!       -c analytics.enabled=false -c check_for_update_on_startup=false
//!       -c tools.update_plan.enabled=true
//!       --disable plugins --disable remote_plugin --disable apps
//!       [--image=<file>]…
//!       [resume <threadId>]
//!       -- <prompt>                                   (or `-- -` with the prompt on stdin)
//! ```
//!
//! * stdin is `/dev/null` (Codex reads a piped stdin to EOF and appends it to the prompt); only a
//!   prompt too long for one argument ([`ARGV_PROMPT_MAX`]) goes over a pipe that is closed
//!   right after it;
//! * the native binary behind the npm shim is run directly ([`native`]);
//! * Codex ignores `OPENAI_BASE_URL`, so a `baseUrl` becomes a model provider of its own, `bridge`
//!   ([`provider_args`]); its key travels in the child's environment only, as
//!   `BRIDGE_CODEX_API_KEY` (named by `env_key`); a key without a `baseUrl` is `CODEX_API_KEY`,
//!   which `codex exec` uses for the OpenAI provider; either is excluded from the environment of
//!   the commands the agent runs (`shell_environment_policy.exclude`);
//! * telemetry, the update check and plugin/app sync are off (they phone home and delay exit by
//!   seconds); `update_plan` is on, so plans show up as `todo_list` items;
//! * the permission mode maps through [`permission_mapper::codex`]; the plugin's
//!   `CODEX_SANDBOX_MODE` / `CODEX_SANDBOX` / `CODEX_APPROVAL_POLICY` overrides are applied and,
//!   like every name in [`permission_mapper::codex::STRIPPED_ENV`], never reach the child;
//! * `codex exec` cannot ask for approval: it always runs with approval policy `never`. When the
//!   mode maps to `on-request`, the turn starts with an `approvals_not_interactive` warning
//!   saying so; refusals show up as failed tool results plus `permission_denied` /
//!   `sandbox_denied` warnings. Nothing pretends to ask.
//!
//! The output is normalized by [`normalize::CodexNormalizer`], helped by the thread's rollout
//! file ([`rollout`]), which the engine reads and pushes into it ([`RolloutReader`]).

#![deny(missing_docs)]

pub mod app_server;
pub mod history;
pub mod mcp;
pub mod models;

pub use bridge_codex::{command, native, normalize, patch, rollout};

use std::path::{Path, PathBuf};

use bridge_core::attachment::{image_extension, write_private};
use bridge_core::channel::Channel;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::{ErrorCode, ErrorInfo, Event};
use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::request::{Attachment, Request};
use bridge_core::session::run_once;
use bridge_core::turn::{CloseStdin, ProcessTurn, TurnContext};
use futures_util::future::BoxFuture;
use permission_mapper::codex::{self as codex_mode, CodexApproval, CodexOverrides};
use permission_mapper::{Platform, RequestedMode};
use serde_json::Value;

pub use bridge_codex::RolloutReader;
pub use native::NativeCodex;
pub use normalize::CodexNormalizer;

/// Provider key.
pub const ID: &str = "codex";

/// Human name.
pub const DISPLAY_NAME: &str = "Codex CLI";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@openai/codex";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: sdk_probe::ProbeSpec = sdk_probe::ProbeSpec {
    env_overrides: &["CODEX_PATH", "CODEX_BIN"],
    tested: Some(sdk_probe::VersionRange::new(
        sdk_probe::Version::new(0, 169, 1),
        sdk_probe::Version::new(0, 171, 0),
    )),
    install_hint: "npm i -g @openai/codex",
    auth: &[
        sdk_probe::AuthSource::Env("OPENAI_API_KEY"),
        sdk_probe::AuthSource::Env("CODEX_API_KEY"),
        sdk_probe::AuthSource::File(".codex/auth.json"),
    ],
    ..sdk_probe::ProbeSpec::new(ID, DISPLAY_NAME, &["codex"])
};

/// Longest prompt passed as an argument (Linux caps one argument at 128 KiB); longer prompts
/// go over stdin.
pub const ARGV_PROMPT_MAX: usize = 100 * 1024;

/// Id of the model provider the bridge defines for a `baseUrl`.
pub const PROVIDER_ID: &str = "bridge";

/// The child variable that carries the key of the [`PROVIDER_ID`] provider (its `env_key`).
pub const API_KEY_VAR: &str = "BRIDGE_CODEX_API_KEY";

/// Bridge variable: default `baseUrl` when the request has none.
pub const BASE_URL_VAR: &str = "BRIDGE_CODEX_BASE_URL";

/// Bridge variable: `request_max_retries` and `stream_max_retries` of the bridge's provider.
pub const MAX_RETRIES_VAR: &str = "BRIDGE_CODEX_MAX_RETRIES";

/// Bridge variable: `1` keeps Codex plugins and apps (and their network sync) enabled.
pub const PLUGINS_VAR: &str = "BRIDGE_CODEX_PLUGINS";

/// Settings on every run: no telemetry, no update check, plans as `todo_list` items.
pub const QUIET_ARGS: &[&str] = &[
    "-c",
    "analytics.enabled=false",
    "-c",
    "check_for_update_on_startup=false",
    "-c",
    "tools.update_plan.enabled=true",
];

/// Features off on every run unless [`PLUGINS_VAR`] is `1`: they sync from chatgpt.com and
/// GitHub at start-up.
pub const OFFLINE_ARGS: &[&str] = &[
    "--disable",
    "plugins",
    "--disable",
    "remote_plugin",
    "--disable",
    "apps",
];

/// Reasoning efforts Codex accepts (`model_reasoning_effort`).
const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// The Codex channel.
#[derive(Debug, Default, Clone)]
pub struct CodexChannel;

impl CodexChannel {
    /// The channel.
    pub fn new() -> Self {
        CodexChannel
    }
}

/// Where the `codex` executable is (`CODEX_PATH` / `CODEX_BIN`, PATH, the usual install dirs;
/// see [`sdk_probe::resolve_binary`]), with the native binary behind the npm shim preferred.
pub fn resolve_cli() -> Option<NativeCodex> {
    sdk_probe::resolve_binary(&PROBE, &sdk_probe::ProbeEnv::from_process())
        .map(|r| native::native_behind(&r.path))
}

/// What the launch reads from the bridge's own environment (a value, so tests can build one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// The platform the permission mapping is computed for.
    pub platform: Option<Platform>,
    /// `CODEX_SANDBOX_MODE` / `CODEX_SANDBOX` / `CODEX_APPROVAL_POLICY`.
    pub overrides: CodexOverrides,
    /// [`BASE_URL_VAR`].
    pub base_url: Option<String>,
    /// Whether [`API_KEY_VAR`] is set (the child inherits it).
    pub api_key_in_env: bool,
    /// [`MAX_RETRIES_VAR`].
    pub max_retries: Option<u32>,
    /// [`PLUGINS_VAR`] is `1`.
    pub keep_plugins: bool,
}

impl LaunchEnv {
    /// Reads the process environment.
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        LaunchEnv {
            platform: Some(Platform::current()),
            overrides: CodexOverrides::from_process_env(),
            base_url: var(BASE_URL_VAR),
            api_key_in_env: var(API_KEY_VAR).is_some(),
            max_retries: var(MAX_RETRIES_VAR).and_then(|v| v.trim().parse().ok()),
            keep_plugins: var(PLUGINS_VAR).is_some_and(|v| v.trim() == "1"),
        }
    }
}

/// `CODEX_HOME`, else `~/.codex`: where Codex keeps its config and threads.
pub fn codex_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(home));
    }
    sdk_probe::ProbeEnv::from_process()
        .home()
        .map(|h| h.join(".codex"))
}

/// A TOML basic string (JSON string escapes are valid TOML escapes).
fn toml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The `-c` settings that point Codex at `base_url` through a provider of its own.
///
/// ```
/// let args = bridge_channel_codex::provider_args("http://127.0.0.1:9/v1", true, Some(0));
/// assert!(args.contains(&"model_provider=\"bridge\"".to_string()));
/// assert!(args.contains(&"model_providers.bridge.env_key=\"BRIDGE_CODEX_API_KEY\"".to_string()));
/// assert!(args.contains(&"model_providers.bridge.request_max_retries=0".to_string()));
/// ```
pub fn provider_args(base_url: &str, with_key: bool, max_retries: Option<u32>) -> Vec<String> {
    let p = PROVIDER_ID;
    let mut settings = vec![
        format!("model_provider={}", toml_string(p)),
        format!("model_providers.{p}.name={}", toml_string(p)),
        format!("model_providers.{p}.base_url={}", toml_string(base_url)),
        format!("model_providers.{p}.wire_api=\"responses\""),
    ];
    if with_key {
        settings.push(format!(
            "model_providers.{p}.env_key={}",
            toml_string(API_KEY_VAR)
        ));
    }
    if let Some(n) = max_retries {
        settings.push(format!("model_providers.{p}.request_max_retries={n}"));
        settings.push(format!("model_providers.{p}.stream_max_retries={n}"));
    }
    let mut args = Vec::with_capacity(settings.len() * 2);
    for s in settings {
        args.push("-c".to_string());
        args.push(s);
    }
    args
}

/// One Codex run, ready to spawn.
#[derive(Debug)]
pub struct Launch {
    /// The process.
    pub turn: ProcessTurn,
    /// What could not be honoured exactly, and what the approval behaviour is.
    pub warnings: Vec<Event>,
    /// Whether this turn resumes an existing thread.
    pub resumed: bool,
}

/// The reasoning effort to ask Codex for (`max` becomes `xhigh`; `disableThinking` without
/// an effort is `low`), with a warning for what cannot be honoured.
pub fn effort<'a>(request: &'a Request, warnings: &mut Vec<Event>) -> Option<&'a str> {
    let mut effort = request.reasoning_effort.as_deref().map(str::trim);
    if effort == Some("max") {
        warnings.push(Event::warning(
            "reasoning_effort",
            "Codex has no `max` reasoning effort; used `xhigh`",
        ));
        effort = Some("xhigh");
    }
    if request.disable_thinking {
        effort = effort.or(Some("low"));
    }
    match effort {
        Some(e) if EFFORTS.contains(&e) => Some(e),
        Some(e) => {
            warnings.push(Event::warning(
                "reasoning_effort",
                format!(
                    "reasoningEffort `{e}` is not one of low, medium, high, xhigh, max; ignored"
                ),
            ));
            None
        }
        None => None,
    }
}

/// The settings every Codex process gets, whichever the transport: the model provider for a
/// `baseUrl` and where its key is (the child's environment only), the key kept out of the
/// agent's commands, telemetry and the update check off, plugins and apps off.
pub fn connection_args(command: &mut CommandSpec, request: &Request, env: &LaunchEnv) {
    let base_url = request.base_url.clone().or_else(|| env.base_url.clone());
    match (&base_url, &request.api_key) {
        (Some(url), key) => {
            if let Some(key) = key {
                command.env(API_KEY_VAR, key.expose());
            }
            let with_key = key.is_some() || env.api_key_in_env;
            for arg in provider_args(url, with_key, env.max_retries) {
                command.arg(arg);
            }
        }
        (None, Some(key)) => {
            command.env("CODEX_API_KEY", key.expose());
        }
        (None, None) => {}
    }
    if request.api_key.is_some() || (base_url.is_some() && env.api_key_in_env) {
        // Codex passes its own environment to the commands the agent runs: keep the key the
        // bridge handed it out of theirs.
        command.arg("-c").arg(format!(
            "shell_environment_policy.exclude=[{},\"CODEX_API_KEY\"]",
            toml_string(API_KEY_VAR)
        ));
    }

    for arg in QUIET_ARGS {
        command.arg(arg);
    }
    if !env.keep_plugins {
        for arg in OFFLINE_ARGS {
            command.arg(arg);
        }
    }
}

/// The child's environment, whichever the transport: the native binary's variables, no
/// backtraces, the plugin's override variables removed; and its working directory.
pub fn child_env(command: &mut CommandSpec, codex: &NativeCodex, request: &Request) {
    for (key, value) in codex.env() {
        command.env(key, value);
    }
    // anyhow prints `Stack backtrace: <unknown>…` after start-up errors when RUST_BACKTRACE is
    // set; the stripped binary has no symbols, so it only buries the message.
    command.env("RUST_LIB_BACKTRACE", "0");
    for name in codex_mode::STRIPPED_ENV {
        command.env_remove.push(name.into());
    }
    command.cwd = request.cwd.clone();
}

/// Builds the process for one turn. `images` are the image files to attach (see
/// [`materialize_images`]).
pub fn build_turn(
    codex: &NativeCodex,
    request: &Request,
    images: &[PathBuf],
    env: &LaunchEnv,
) -> Launch {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(&codex.program);
    for arg in ["exec", "--json", "--color", "never"] {
        command.arg(arg);
    }

    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let platform = env.platform.unwrap_or_else(Platform::current);
    let effective = codex_mode::effective(&requested, platform, &env.overrides);
    for arg in effective.settings.exec_args() {
        command.arg(arg);
    }
    for note in &effective.notes {
        warnings.push(Event::warning("permission_mode", note.message.clone()));
    }
    if effective.settings.approval_policy != CodexApproval::Never {
        warnings.push(Event::warning(
            "approvals_not_interactive",
            format!(
                "codex exec cannot ask for approval: it runs with approval policy `never` instead \
                 of `{}`; anything that would need an approval is refused and the model is told \
                 so (sandbox: {})",
                effective.settings.approval_policy, effective.settings.sandbox
            ),
        ));
    }

    let resumed = request.session_id.is_some();
    if !resumed && let Some(cwd) = &request.cwd {
        command.arg("-C").arg(cwd);
    }
    if let Some(model) = &request.model {
        command.arg("-m").arg(model);
    }
    if request.disable_thinking {
        command.arg("-c").arg("model_reasoning_summary=\"none\"");
    }
    if let Some(e) = effort(request, &mut warnings) {
        command
            .arg("-c")
            .arg(format!("model_reasoning_effort={}", toml_string(e)));
    }
    if let Some(prompt) = request.instructions() {
        command
            .arg("-c")
            .arg(format!("developer_instructions={}", toml_string(&prompt)));
    }
    match request.extra.get("serviceTier").and_then(Value::as_str) {
        Some("fast" | "priority") => {
            command.arg("-c").arg("service_tier=\"fast\"");
        }
        Some("flex") => {
            command.arg("-c").arg("service_tier=\"flex\"");
        }
        _ => {}
    }

    connection_args(&mut command, request, env);
    for image in images {
        let mut arg = std::ffi::OsString::from("--image=");
        arg.push(image);
        command.arg(arg);
    }
    if let Some(id) = &request.session_id {
        command.arg("resume").arg(id);
    }
    command.arg("--");
    let mut stdin_payload = Vec::new();
    if request.message.len() > ARGV_PROMPT_MAX {
        command.arg("-");
        command.stdin = StdinMode::Piped;
        stdin_payload = request.message.clone().into_bytes();
    } else {
        command.arg(&request.message);
        command.stdin = StdinMode::Null;
    }

    child_env(&mut command, codex, request);

    let turn = ProcessTurn {
        provider: ID.into(),
        command,
        stdin_payload,
        close_stdin: CloseStdin::AfterPayload,
        interrupt_payload: None,
        responder: None,
        deferred: None,
    };
    Launch {
        turn,
        warnings,
        resumed,
    }
}

/// Image attachments written to files for `--image`, deleted when dropped.
#[derive(Debug, Default)]
pub struct Images {
    /// Paths to pass, in request order.
    pub paths: Vec<PathBuf>,
    /// Attachments that are not images (Codex takes only images); reported, not sent.
    pub skipped: Vec<String>,
    _dir: Option<tempfile::TempDir>,
}

/// Writes inline (base64) image attachments to a private temporary directory (mode 0700, files
/// 0600) and collects the paths of `local_image` ones.
pub fn materialize_images(attachments: &[Attachment]) -> Result<Images, String> {
    let mut images = Images::default();
    for (n, attachment) in attachments.iter().enumerate() {
        match attachment {
            Attachment::LocalImage { path } => images.paths.push(path.clone()),
            Attachment::Inline {
                file_name,
                media_type,
                ..
            } => {
                if !media_type.starts_with("image/") {
                    images.skipped.push(
                        file_name
                            .clone()
                            .unwrap_or_else(|| format!("attachment {}", n + 1)),
                    );
                    continue;
                }
                let bytes = attachment.to_bytes(n).map_err(|e| e.to_string())?;
                if images._dir.is_none() {
                    images._dir = Some(
                        tempfile::Builder::new()
                            .prefix("bridge-codex-images-")
                            .tempdir()
                            .map_err(|e| format!("cannot create a directory for images: {e}"))?,
                    );
                }
                let dir = images._dir.as_ref().map(tempfile::TempDir::path);
                let path = dir.unwrap_or(Path::new(".")).join(format!(
                    "image-{}.{}",
                    n + 1,
                    image_extension(media_type)
                ));
                write_private(&path, &bytes)
                    .map_err(|e| format!("cannot write image {}: {e}", path.display()))?;
                images.paths.push(path);
            }
        }
    }
    Ok(images)
}

/// Finds the Codex CLI (the error names the package that installs it), reports where it was
/// found and checks its version next to the turn; the native binary behind the npm shim.
pub(crate) async fn locate(ctx: &TurnContext) -> Result<NativeCodex, ErrorInfo> {
    let resolution = sdk_probe::resolve(&PROBE, &sdk_probe::ProbeEnv::from_process());
    let Some(resolved) = resolution.found else {
        return Err(ErrorInfo::new(
            ErrorCode::CliNotFound,
            format!(
                "Codex CLI (`codex`) not found on PATH or in the usual install directories; install it with `{}` or set CODEX_PATH",
                PROBE.pinned_install_hint()
            ),
        ));
    };
    for warning in resolution.warnings {
        ctx.emit(Event::warning("cli_path", warning)).await;
    }
    if let Some(check) = sdk_probe::turn_version_check(PROBE, &resolved) {
        ctx.warn_later("untested_version", check);
    }
    Ok(native::native_behind(&resolved.path))
}

/// Bridge variable: `exec` makes `codex exec` the transport of requests that name none (the
/// plugin cannot pass `--transport`).
pub const TRANSPORT_VAR: &str = "BRIDGE_CODEX_TRANSPORT";

/// Codex with both transports: `app-server` (the default: interactive approvals, live
/// interrupt, warm threads) and `exec` (`--transport exec`, or [`TRANSPORT_VAR`]`=exec`: one
/// `codex exec` per turn).
pub fn channel() -> bridge_core::channel::Transports {
    bridge_core::channel::Transports::new(
        "app-server",
        std::sync::Arc::new(app_server::AppServerChannel),
    )
    .with("exec", std::sync::Arc::new(CodexChannel::new()))
    .route(|_| {
        let chosen = std::env::var(TRANSPORT_VAR).ok()?;
        chosen
            .trim()
            .eq_ignore_ascii_case("exec")
            .then(|| ("exec", String::new()))
    })
}

/// A per-turn prefix for tool ids (Codex restarts its item numbering in every process).
pub(crate) fn turn_tag() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("codex_{}", &id[..8])
}

/// The query commands of the codex provider: `listModels` ([`models::QUERY`]),
/// `getMcpServerTools` ([`mcp::TOOLS`]), and `getSession` / `listSessions` from its rollout
/// files ([`history`]).
pub const QUERIES: &[bridge_core::query::Query] = &[
    models::QUERY,
    mcp::TOOLS,
    history::GET_SESSION,
    history::LIST_SESSIONS,
];

impl Channel for CodexChannel {
    fn id(&self) -> &'static str {
        ID
    }

    fn display_name(&self) -> &'static str {
        DISPLAY_NAME
    }

    fn dialect(&self) -> MarkerDialect {
        MarkerDialect::THREAD
    }

    fn queries(&self) -> &'static [bridge_core::query::Query] {
        QUERIES
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let codex = match locate(&ctx).await {
                Ok(codex) => codex,
                Err(info) => return ctx.fail(info, request.session_id.clone()).await,
            };
            let images = match materialize_images(&request.attachments) {
                Ok(images) => images,
                Err(message) => {
                    let info = ErrorInfo::new(ErrorCode::InvalidRequest, message);
                    ctx.fail(info, request.session_id.clone()).await;
                    return;
                }
            };
            let launch = build_turn(&codex, &request, &images.paths, &LaunchEnv::from_process());
            for warning in launch.warnings {
                ctx.emit(warning).await;
            }
            for name in &images.skipped {
                ctx.emit(Event::warning(
                    "attachment_skipped",
                    format!("{name} is not an image; codex exec only takes images (--image)"),
                ))
                .await;
            }
            let inner = if launch.resumed {
                CodexNormalizer::resumed()
            } else {
                CodexNormalizer::new()
            }
            .with_id_prefix(turn_tag());
            match codex_home() {
                Some(home) => {
                    let mut engine = RolloutReader::new(inner, home, launch.resumed);
                    bridge_core::session::run_engine_once(launch.turn, &mut engine, ctx).await;
                }
                None => run_once(launch.turn, Box::new(inner), ctx).await,
            }
            drop(images);
        })
    }

    /// `codex exec --image` takes image files ([`materialize_images`]).
    fn takes_images(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn codex() -> NativeCodex {
        NativeCodex {
            program: "/opt/codex".into(),
            package_root: None,
        }
    }

    fn args(launch: &Launch) -> Vec<String> {
        launch
            .turn
            .command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn request(json: &str) -> Request {
        Request::from_json(json.as_bytes()).unwrap()
    }

    fn unix() -> LaunchEnv {
        LaunchEnv {
            platform: Some(Platform::Unix),
            ..LaunchEnv::default()
        }
    }

    #[test]
    fn new_thread_argv() {
        let launch = build_turn(
            &codex(),
            &request(
                r#"{"message":"-n hi","cwd":"/w","model":"gpt-5.5","reasoningEffort":"max","baseUrl":"http://h/v1","apiKey":"sk-1","permissionMode":"plan"}"#,
            ),
            &[PathBuf::from("/i/a.png")],
            &LaunchEnv {
                max_retries: Some(0),
                ..unix()
            },
        );
        let argv = args(&launch).join(" ");
        assert!(argv.starts_with(
            "exec --json --color never --skip-git-repo-check --sandbox read-only -C /w -m gpt-5.5 -c model_reasoning_effort=\"xhigh\""
        ), "{argv}");
        assert!(argv.contains("-c model_providers.bridge.base_url=\"http://h/v1\""));
        assert!(argv.contains("-c model_providers.bridge.stream_max_retries=0"));
        assert!(argv.contains("--disable plugins --disable remote_plugin --disable apps"));
        assert!(argv.ends_with("--image=/i/a.png -- -n hi"), "{argv}");
        assert!(!argv.contains("sk-1"), "the key never goes to argv");
        let env = &launch.turn.command.env;
        assert!(env.iter().any(|(k, v)| k == API_KEY_VAR && v == "sk-1"));
        assert_eq!(launch.turn.command.stdin, StdinMode::Null);
        assert!(!launch.resumed);
        let codes: Vec<&str> = launch
            .warnings
            .iter()
            .filter_map(|w| match w {
                Event::Warning { code, .. } => Some(code.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            codes,
            [
                "permission_mode",
                "approvals_not_interactive",
                "reasoning_effort"
            ]
        );
    }

    #[test]
    fn resume_has_no_cd_and_the_id_before_the_prompt() {
        let launch = build_turn(
            &codex(),
            &request(
                r#"{"message":"again","threadId":"t-1","cwd":"/w","permissionMode":"bypassPermissions"}"#,
            ),
            &[],
            &unix(),
        );
        let argv = args(&launch);
        assert!(!argv.iter().any(|a| a == "-C"));
        assert!(argv.join(" ").ends_with("resume t-1 -- again"));
        assert!(launch.resumed);
        assert_eq!(launch.turn.command.cwd, Some(PathBuf::from("/w")));
        // bypassPermissions maps to approval `never`: exec is exact, no approvals warning.
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
    }

    #[test]
    fn overrides_apply_and_are_stripped_from_the_child() {
        let env = LaunchEnv {
            overrides: CodexOverrides {
                sandbox_mode: Some("danger-full-access".into()),
                ..Default::default()
            },
            ..unix()
        };
        let launch = build_turn(&codex(), &request(r#"{"message":"x"}"#), &[], &env);
        assert!(
            args(&launch)
                .join(" ")
                .contains("--sandbox danger-full-access")
        );
        for name in codex_mode::STRIPPED_ENV {
            assert!(
                launch.turn.command.is_scrubbed(std::ffi::OsStr::new(name)),
                "{name}"
            );
        }
    }

    #[test]
    fn key_without_base_url_is_codex_api_key_and_long_prompts_use_stdin() {
        let long = "x".repeat(ARGV_PROMPT_MAX + 1);
        let req = request(&serde_json::json!({"message": long, "apiKey": "k"}).to_string());
        let launch = build_turn(&codex(), &req, &[], &unix());
        let argv = args(&launch);
        assert!(!argv.iter().any(|a| a.contains("model_provider")));
        assert_eq!(argv.last().map(String::as_str), Some("-"));
        assert_eq!(launch.turn.command.stdin, StdinMode::Piped);
        assert_eq!(launch.turn.stdin_payload.len(), ARGV_PROMPT_MAX + 1);
        assert!(
            launch
                .turn
                .command
                .env
                .iter()
                .any(|(k, v)| k == "CODEX_API_KEY" && v == "k")
        );
    }

    #[test]
    fn images_are_private_files_and_other_attachments_are_skipped() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG");
        let attachments = vec![
            Attachment::Inline {
                file_name: Some("a.png".into()),
                media_type: "image/png".into(),
                data: format!("data:image/png;base64,{png}"),
            },
            Attachment::Inline {
                file_name: Some("notes.txt".into()),
                media_type: "text/plain".into(),
                data: "aGk=".into(),
            },
            Attachment::LocalImage {
                path: "/x/b.jpg".into(),
            },
        ];
        let images = materialize_images(&attachments).unwrap();
        assert_eq!(images.paths.len(), 2);
        assert_eq!(std::fs::read(&images.paths[0]).unwrap(), b"\x89PNG");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&images.paths[0])
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(images.skipped, ["notes.txt"]);
        let written = images.paths[0].clone();
        drop(images);
        assert!(!written.exists(), "images are deleted after the turn");
    }
}
