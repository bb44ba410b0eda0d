//! Gemini CLI, over ACP (`gemini --acp`).
//!
//! Tested with `@google/gemini-cli` 0.61.0 against the project's mock Gemini API (facts:
//! `shared/reference/real-clis-anthropic-gemini.md` §3, captures `gemini-acp-*`):
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
//!   `--acp`. The bridge therefore refuses a `sessionId` for gemini with that explanation instead
//!   of calling `session/load` (a later issue adds the `-p --output-format stream-json --resume`
//!   fallback);
//! * thoughts stream as `agent_thought_chunk`, each formatted `**<subject>**\n<text>` and
//!   trimmed (word deltas lose their spaces; the engine drops the empty `****\n` prefix); a tool that needs approval arrives as
//!   `session/request_permission` *without* a preceding `tool_call` (the engine announces it
//!   from the request), with options `proceed_always`, `proceed_once`, `cancel`; a rejected call
//!   gets no `tool_call_update` at all;
//! * unlike headless `-p` mode, `--acp` needs neither `~/.gemini/settings.json` with
//!   `security.auth.selectedType` nor folder trust (untrusted folders only disable project
//!   hooks);
//! * API errors: the `session/prompt` request fails with the API error text (see the e2e tests).
//!
//! `baseUrl` → `GOOGLE_GEMINI_BASE_URL`, `apiKey` → `GEMINI_API_KEY`; the model is selected
//! with `session/set_model`.

#![deny(missing_docs)]

use bridge_acp::{AcpChannel, AcpProvider};
use permission_mapper::PermissionMode as M;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "gemini";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@google/gemini-cli";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["GEMINI_CLI_PATH", "GEMINI_BIN"],
    tested: Some(VersionRange::exactly(Version::new(0, 61, 0))),
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
        "Gemini CLI 0.61.0's session/load starts a fresh recording of the session before reading it (the load fails with \"No previous sessions found for this project\" and the saved conversation is overwritten), and --resume is ignored with --acp; not attempted",
    ),
    ..AcpProvider::new(PROBE)
};

/// The Gemini channel.
pub fn channel() -> AcpChannel {
    AcpChannel::new(&PROVIDER)
}
