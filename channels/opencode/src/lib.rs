//! opencode, over ACP (`opencode acp`).
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

#![deny(missing_docs)]

use bridge_acp::{AcpChannel, AcpProvider};
use permission_mapper::PermissionMode as M;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "opencode";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "opencode-ai";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["OPENCODE_BIN", "OPENCODE_PATH", "OPENCODE_CLI_PATH"],
    install_dirs: &[".opencode/bin", ".local/share/opencode/bin"],
    tested: Some(VersionRange::exactly(Version::new(1, 18, 33))),
    install_hint: "npm i -g opencode-ai",
    auth: &[
        AuthSource::File(".local/share/opencode/auth.json"),
        AuthSource::File(".config/opencode/opencode.json"),
    ],
    ..ProbeSpec::new(ID, "opencode", &["opencode"])
};

const ASK: &str = r#"{"edit":"ask","bash":"ask","webfetch":"ask"}"#;
const ACCEPT_EDITS: &str = r#"{"edit":"allow","bash":"ask","webfetch":"ask"}"#;
const READ_ONLY: &str = r#"{"edit":"deny","bash":"deny","webfetch":"ask"}"#;
const ALLOW: &str = r#"{"edit":"allow","bash":"allow","webfetch":"allow"}"#;

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
        (M::Default, "OPENCODE_PERMISSION", ASK),
        (M::AcceptEdits, "OPENCODE_PERMISSION", ACCEPT_EDITS),
        (M::Plan, "OPENCODE_PERMISSION", READ_ONLY),
        (M::Sandbox, "OPENCODE_PERMISSION", READ_ONLY),
        (M::BypassPermissions, "OPENCODE_PERMISSION", ALLOW),
        (M::Yolo, "OPENCODE_PERMISSION", ALLOW),
    ],
    ..AcpProvider::new(PROBE)
};

/// The opencode channel.
pub fn channel() -> AcpChannel {
    AcpChannel::new(&PROVIDER)
}
