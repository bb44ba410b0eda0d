//! Gemini CLI, through two transports: ACP (`gemini --acp`, the default, with interactive
//! approvals and thinking) and the headless JSON mode (`gemini --output-format stream-json`,
//! `--transport json`, [`headless`] + [`json`]), which also carries every resumed turn.
//!
//! Tested with `@google/gemini-cli` 0.61.0 against the project's mock Gemini API (facts:
//! `shared/reference/real-clis-anthropic-gemini.md` §3, captures `gemini-*`):
//!
//! * `initialize` advertises `loadSession` and image/audio/embedded-context prompts; with
//!   `GEMINI_API_KEY` in the environment no `authenticate` is needed (when the agent asks for
//!   it anyway, the bridge uses the `gemini-api-key` method);
//! * `session/new` offers the modes `default`, `autoEdit`, `yolo`, `plan` and a model list
//!   (`session/set_model`);
//! * **resume does not work over ACP in 0.61.0**: `session/load` in a new process fails with
//!   `Internal error: No previous sessions found for this project.`, because the CLI starts
//!   recording the loaded session (rewriting its chat file to an empty conversation) before it
//!   reads it, so a failed load also destroys the saved history; `--resume` is ignored with
//!   `--acp`. The headless mode's `--resume <id>` does work, for sessions recorded by either
//!   mode (both write `~/.gemini/tmp/<project>/chats/`; verified end to end: a session started
//!   over ACP and resumed headless in a later process, the model saw the first turn). So a
//!   request with a `sessionId` runs on the `json` transport ([`channel`] routes it, with a
//!   `transport` warning), and a resumed turn has no interactive approvals: its permission
//!   mode decides (see [`permission_mapper::gemini`]). `--transport acp` with a `sessionId` is
//!   still refused, without calling `session/load`;
//! * thoughts stream as `agent_thought_chunk`, each formatted `**<subject>**\n<text>` and
//!   trimmed (word deltas lose their spaces; the engine drops the empty `****\n` prefix); a tool that needs approval arrives as
//!   `session/request_permission` *without* a preceding `tool_call` (the engine announces it
//!   from the request), with options `proceed_always`, `proceed_once`, `cancel`; a rejected call
//!   gets no `tool_call_update` at all; the headless mode prints no thoughts at all;
//! * unlike headless mode, `--acp` needs neither `~/.gemini/settings.json` with
//!   `security.auth.selectedType` nor folder trust (untrusted folders only disable project
//!   hooks);
//! * API errors: the `session/prompt` request fails with the API error text (see the e2e tests).
//!
//! `baseUrl` → `GOOGLE_GEMINI_BASE_URL`, `apiKey` → `GEMINI_API_KEY` on both transports; the
//! model is selected with `session/set_model` (ACP) or `--model` (JSON).

#![deny(missing_docs)]

pub mod headless;
pub mod json;

use std::sync::Arc;

use bridge_acp::{AcpChannel, AcpProvider};
use bridge_core::channel::Transports;
use bridge_one_shot::OneShotChannel;
use permission_mapper::PermissionMode as M;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "gemini";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@google/gemini-cli";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["GEMINI_CLI_PATH", "GEMINI_BIN"],
    tested: Some(VersionRange::new(
        Version::new(0, 60, 0),
        Version::new(0, 61, 0),
    )),
    install_hint: "npm i -g @google/gemini-cli",
    auth: &[
        AuthSource::Env("GEMINI_API_KEY"),
        AuthSource::Env("GOOGLE_API_KEY"),
        AuthSource::File(".gemini/oauth_creds.json"),
    ],
    ..ProbeSpec::new(ID, "Gemini CLI", &["gemini"])
};

/// How the bridge runs `gemini --acp`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["--acp"],
    base_url_env: &["GOOGLE_GEMINI_BASE_URL"],
    api_key_env: &["GEMINI_API_KEY"],
    modes: &[
        (M::Default, &["default"]),
        (M::AcceptEdits, &["autoEdit"]),
        (M::Plan, &["plan"]),
        (M::Sandbox, &["plan"]),
        (M::BypassPermissions, &["yolo"]),
        (M::Yolo, &["yolo"]),
    ],
    auth_methods: &["gemini-api-key"],
    resume_broken: Some(
        "Gemini CLI 0.61.0's session/load starts a fresh recording of the session before reading it (the load fails with \"No previous sessions found for this project\" and the saved conversation is overwritten), and --resume is ignored with --acp; not attempted (resume without naming a transport: it runs on the json transport)",
    ),
    ..AcpProvider::new(PROBE)
};

/// Why a resumed turn runs on the `json` transport (told to the client as a warning).
pub const RESUME_VIA_JSON: &str = "Gemini CLI 0.61.0 cannot load a session over ACP, its headless mode resumes sessions of either transport with --resume (this turn has no interactive approvals: its permission mode decides)";

/// A resumed turn runs on `json` (see [`RESUME_VIA_JSON`]).
fn resume_via_json(request: &bridge_core::request::Request) -> Option<(&'static str, String)> {
    request.session_id.as_ref().map(|_| {
        let why = format!("resuming through the json transport: {RESUME_VIA_JSON}");
        ("json", why)
    })
}

/// `listModels`: the models Gemini CLI offers in a new ACP session (it has no listing command),
/// cached per binary and settings ([`bridge_acp::models`]).
pub const LIST_MODELS: bridge_core::query::Query = bridge_acp::list_models_query!(
    PROVIDER,
    "the models Gemini CLI offers in an ACP session",
    &[".gemini/settings.json"]
);

/// The Gemini channel: ACP by default, `json` on request and for every resumed turn.
pub fn channel() -> Transports {
    Transports::new("acp", Arc::new(AcpChannel::new(&PROVIDER)))
        .queries(&[LIST_MODELS])
        .with("json", Arc::new(OneShotChannel::new(&headless::ONE_SHOT)))
        .route(resume_via_json)
}
