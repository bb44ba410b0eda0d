//! opencode, over ACP (`opencode acp`, the default transport) and its one-shot JSON mode
//! (`opencode run --format json`, `--transport json`).
//!
//! Tested with `opencode-ai` 1.18.33 against the project's mock OpenAI Chat Completions API
//! through an `@ai-sdk/openai-compatible` provider in `opencode.json` (facts:
//! `shared/reference/real-clis-openai.md` §4):
//!
//! * `initialize` advertises `loadSession` and `sessionCapabilities.resume` (the bridge uses
//!   `session/resume`); session ids look like `ses_…`;
//! * the session's config options are `model` (`provider/model`, selected with
//!   `session/set_config_option`), `effort` (category `thought_level`: `reasoningEffort`) and
//!   `mode` (`build`, `plan`);
//! * opencode asks for approval only for what its permission config says `ask`: the bridge sets
//!   `OPENCODE_PERMISSION` from the permission mode (default: ask before edits, shell and web
//!   fetches; acceptEdits: allow edits; plan/sandbox: deny edits and shell; bypass/yolo: allow);
//! * a tool call starts `pending` with only `{cwd}` as input; the command arrives with
//!   `in_progress`, and the engine announces the call then;
//! * text chunks carry a `messageId`; a new id starts a new text segment.
//!
//! `baseUrl` / `apiKey` are not applied: opencode takes endpoints and keys from its own config
//! (`opencode.json`, `opencode auth login`).
//!
//! The JSON transport ([`json`]) runs one `opencode run --format json` per turn:
//!
//! ```text
//! opencode run --format json [--thinking] [--session <id>] [-m <provider/model>]
//!              [--variant <effort>] [--agent plan]        < message   (stdin closed after it)
//! ```
//!
//! It cannot ask for approval: opencode auto-rejects whatever its permission config says `ask`
//! (the same `OPENCODE_PERMISSION` as over ACP, [`permission_mapper::opencode`]); the refusal is
//! a failed tool result plus a `[PERMISSION_DECISION]` by policy, and a `permission_mode`
//! warning says so up front. Output parts arrive whole ([`normalize`]).

#![deny(missing_docs)]

pub mod json;
pub mod models;
pub mod normalize;

use std::sync::Arc;

use bridge_acp::{AcpChannel, AcpProvider};
use bridge_core::channel::Transports;
use permission_mapper::PermissionMode as M;
use permission_mapper::opencode::to_provider;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

pub use normalize::OpencodeNormalizer;

/// Provider key.
pub const ID: &str = "opencode";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "opencode-ai";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["OPENCODE_BIN", "OPENCODE_PATH", "OPENCODE_CLI_PATH"],
    install_dirs: &[".opencode/bin", ".local/share/opencode/bin"],
    tested: Some(VersionRange::new(
        Version::new(1, 18, 32),
        Version::new(1, 18, 33),
    )),
    install_hint: "npm i -g opencode-ai",
    auth: &[
        AuthSource::File(".local/share/opencode/auth.json"),
        AuthSource::File(".config/opencode/opencode.json"),
    ],
    ..ProbeSpec::new(ID, "opencode", &["opencode"])
};

const PERMISSION: &str = permission_mapper::opencode::PERMISSION_ENV;

/// How the bridge runs `opencode acp`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["acp"],
    env_defaults: &[("OPENCODE_DISABLE_AUTOUPDATE", "1")],
    modes: &[
        (M::Default, &["build"]),
        (M::AcceptEdits, &["build"]),
        (M::Plan, &["plan"]),
        (M::Sandbox, &["plan"]),
        (M::BypassPermissions, &["build"]),
        (M::Yolo, &["build"]),
    ],
    mode_env: &[
        (M::Default, PERMISSION, to_provider(M::Default).permission),
        (
            M::AcceptEdits,
            PERMISSION,
            to_provider(M::AcceptEdits).permission,
        ),
        (M::Plan, PERMISSION, to_provider(M::Plan).permission),
        (M::Sandbox, PERMISSION, to_provider(M::Sandbox).permission),
        (
            M::BypassPermissions,
            PERMISSION,
            to_provider(M::BypassPermissions).permission,
        ),
        (M::Yolo, PERMISSION, to_provider(M::Yolo).permission),
    ],
    ..AcpProvider::new(PROBE)
};

/// `getSession <sessionId> <cwd>`: the session as its ACP agent replays it on `session/load`
/// ([`bridge_acp::history`]).
pub const GET_SESSION: bridge_core::query::Query = bridge_acp::get_session_query!(PROVIDER);

/// `listSessions < {cwd?}`: the sessions its ACP agent lists (`session/list`,
/// [`bridge_acp::history`]).
pub const LIST_SESSIONS: bridge_core::query::Query = bridge_acp::list_sessions_query!(PROVIDER);

/// The opencode channel: ACP (default) and `json` (`opencode run --format json`).
pub fn channel() -> Transports {
    Transports::new("acp", Arc::new(AcpChannel::new(&PROVIDER)))
        .with("json", Arc::new(json::channel()))
        .queries(&[models::QUERY, GET_SESSION, LIST_SESSIONS])
}
