//! GitHub Copilot CLI, over ACP (`copilot --acp --stdio`, the default transport) or its
//! one-shot JSONL mode (`--transport json`, [`json`]).
//!
//! Tested with `@github/copilot` 1.0.102 in BYOK offline mode (`COPILOT_OFFLINE=true`,
//! `COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_TYPE=openai`) against the project's mock
//! OpenAI Chat Completions API (facts: `shared/reference/real-clis-anthropic-gemini.md` §5):
//!
//! * `initialize` advertises `loadSession` (resume is `session/load`) and one terminal auth
//!   method (`copilot login`), which BYOK mode does not need;
//! * modes come as a `mode` config option whose values are URLs
//!   (`…/session-modes#agent|#plan|#autopilot`); bypass is the `allow_all` config option (`on`);
//!   there is no model list over ACP, so `model` goes to `COPILOT_MODEL`;
//! * a tool call is announced (`tool_call`, pending, with `rawInput`) before its
//!   `session/request_permission` (options `allow_once`, `allow_always`, `reject_once`);
//! * `usage_update {used, size}` reports the context window; the prompt result carries `usage`;
//! * **API errors arrive as message text**: each retry is an `agent_message_chunk`
//!   `Info: Request failed due to a transient API error. Retrying...`, the final failure is a
//!   chunk `Error: Authentication failed with provider at … (HTTP 401). …`, and the turn still
//!   ends with `end_turn` (but without `usage`). The channel turns the `Info:` chunks into retry
//!   statuses and such a final `Error:` chunk into the turn's error.
//!
//! `baseUrl` → `COPILOT_PROVIDER_BASE_URL`, `apiKey` → `COPILOT_PROVIDER_API_KEY`.
//!
//! The `json` transport runs `copilot --output-format json` once per turn ([`json`],
//! normalized by [`normalize::CopilotNormalizer`]); it cannot ask for approvals, so the
//! permission mode becomes allow/deny rules, with a `permission_mode` warning where that
//! differs from the request.

#![deny(missing_docs)]

pub mod json;
pub mod normalize;

use std::sync::Arc;

use bridge_acp::normalize::TextNotices;
use bridge_acp::{AcpChannel, AcpProvider};
use bridge_core::channel::Transports;
use bridge_one_shot::OneShotChannel;
use permission_mapper::PermissionMode as M;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "copilot";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@github/copilot";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["COPILOT_CLI_PATH", "COPILOT_BIN"],
    version_env: &[("COPILOT_AUTO_UPDATE", "false")],
    tested: Some(VersionRange::new(
        Version::new(1, 0, 92),
        Version::new(1, 0, 102),
    )),
    install_hint: "npm i -g @github/copilot",
    auth: &[
        AuthSource::Env("COPILOT_PROVIDER_API_KEY"),
        AuthSource::Env("GH_TOKEN"),
        AuthSource::Env("GITHUB_TOKEN"),
        AuthSource::File(".copilot/config.json"),
    ],
    ..ProbeSpec::new(ID, "GitHub Copilot CLI", &["copilot"])
};

/// How the bridge runs `copilot --acp --stdio`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["--acp", "--stdio"],
    env_defaults: &[("COPILOT_AUTO_UPDATE", "false")],
    base_url_env: &["COPILOT_PROVIDER_BASE_URL"],
    api_key_env: &["COPILOT_PROVIDER_API_KEY"],
    model_env: Some("COPILOT_MODEL"),
    modes: &[
        (M::Default, &["agent"]),
        (M::Plan, &["plan"]),
        (M::Sandbox, &["plan"]),
        (M::BypassPermissions, &["allow_all=on"]),
        (M::Yolo, &["allow_all=on"]),
    ],
    text_notices: TextNotices {
        status_prefix: Some("Info: "),
        error_prefix: Some("Error: "),
    },
    ..AcpProvider::new(PROBE)
};

/// `listModels`: the models Copilot CLI offers in a new ACP session (it has no listing command),
/// cached per binary and settings ([`bridge_acp::models`]).
pub const LIST_MODELS: bridge_core::query::Query = bridge_acp::list_models_query!(
    PROVIDER,
    "the models Copilot CLI offers in an ACP session",
    &[".copilot/config.json"]
);

/// `getSession <sessionId> <cwd>`: the session as its ACP agent replays it on `session/load`
/// ([`bridge_acp::history`]).
pub const GET_SESSION: bridge_core::query::Query = bridge_acp::get_session_query!(PROVIDER);

/// `listSessions < {cwd?}`: the sessions its ACP agent lists (`session/list`,
/// [`bridge_acp::history`]).
pub const LIST_SESSIONS: bridge_core::query::Query = bridge_acp::list_sessions_query!(PROVIDER);

/// The Copilot channel: `acp` (default) and `json`.
pub fn channel() -> Transports {
    Transports::new("acp", Arc::new(AcpChannel::new(&PROVIDER)))
        .queries(&[LIST_MODELS, GET_SESSION, LIST_SESSIONS])
        .with("json", Arc::new(OneShotChannel::new(&json::ONE_SHOT)))
}
