//! Qwen Code, over ACP (`qwen --acp`, the default transport) or its one-shot stream-json
//! mode (`--transport json`, [`json`]).
//!
//! Tested with `@qwen-code/qwen-code` 0.15.10 (pinned: the whole e2e suite) and 0.24.4 (the
//! newest: `tests/newest.rs` and the corpus replays; it declares Node >= 22 and runs on 20)
//! against the project's mock OpenAI Chat Completions API (facts:
//! `shared/reference/real-clis-anthropic-gemini.md` §4, and the e2e tests):
//!
//! * `initialize` advertises `loadSession` and `sessionCapabilities.resume` (the bridge resumes
//!   with `session/resume`, which replays nothing) and two terminal auth methods; with
//!   `OPENAI_API_KEY` set no `authenticate` is needed (the `openai` method is used if the agent
//!   asks anyway);
//! * modes `plan`, `default`, `auto-edit`, `yolo`; the model list uses ids such as
//!   `$runtime|openai|<model>(openai)`, matched by name for `session/set_model`;
//! * per-call token usage arrives as `_meta.usage` on an empty `agent_message_chunk`;
//! * the answer of a turn reaches its chat file after the prompt is answered, by a write its
//!   exit on stdin EOF does not wait for: the bridge leaves it 300 ms before closing
//!   ([`AcpProvider::close_settle`]), else a resumed conversation lacks the last answer;
//! * `session/load` of an unknown id succeeds with a new, empty session: the bridge reports a
//!   load that replays no history as an unknown session;
//! * approval options include two `allow_always` scopes (`proceed_always_project`,
//!   `proceed_always_user`); "allow for the session" picks the first (project).
//!
//! `baseUrl` → `OPENAI_BASE_URL`, `apiKey` → `OPENAI_API_KEY` (the `openai` auth type).
//!
//! The `json` transport runs `qwen --output-format stream-json` once per turn: Claude-shaped
//! output through the Claude normalizer ([`json::DIALECT`]), no interactive approvals (the
//! permission mode's headless policy applies, with a `permission_mode` warning).

#![deny(missing_docs)]

pub mod json;

use std::sync::Arc;

use bridge_acp::{AcpChannel, AcpProvider};
use bridge_core::channel::Transports;
use bridge_one_shot::OneShotChannel;
use permission_mapper::PermissionMode as M;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "qwen";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@qwen-code/qwen-code";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["QWEN_CLI_PATH", "QWEN_BIN"],
    install_dirs: &[".qwen/bin"],
    tested: Some(VersionRange::new(
        Version::new(0, 15, 10),
        Version::new(0, 24, 4),
    )),
    install_hint: "npm i -g @qwen-code/qwen-code",
    auth: &[
        AuthSource::Env("OPENAI_API_KEY"),
        AuthSource::File(".qwen/settings.json"),
        AuthSource::File(".qwen/oauth_creds.json"),
    ],
    ..ProbeSpec::new(ID, "Qwen Code", &["qwen"])
};

/// How the bridge runs `qwen --acp`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["--acp"],
    base_url_env: &["OPENAI_BASE_URL"],
    api_key_env: &["OPENAI_API_KEY"],
    modes: &[
        (M::Default, &["default"]),
        (M::AcceptEdits, &["auto-edit"]),
        (M::Plan, &["plan"]),
        (M::Sandbox, &["plan"]),
        (M::BypassPermissions, &["yolo"]),
        (M::Yolo, &["yolo"]),
    ],
    auth_methods: &["openai"],
    // Qwen Code 0.15.10 appends the turn's answer to its chat file after answering the prompt
    // (a queued write of the session's own recorder, which its exit on stdin EOF does not
    // wait for): closed at once, a resumed conversation has lost the model's last answer.
    close_settle: std::time::Duration::from_millis(300),
    ..AcpProvider::new(PROBE)
};

/// `listModels`: the models Qwen Code offers in a new ACP session (it has no listing command),
/// cached per binary and settings ([`bridge_acp::models`]).
pub const LIST_MODELS: bridge_core::query::Query = bridge_acp::list_models_query!(
    PROVIDER,
    "the models Qwen Code offers in an ACP session",
    &[".qwen/settings.json"]
);

/// `getSession <sessionId> <cwd>`: the session as its ACP agent replays it on `session/load`
/// ([`bridge_acp::history`]).
pub const GET_SESSION: bridge_core::query::Query = bridge_acp::get_session_query!(PROVIDER);

/// `listSessions < {cwd?}`: the sessions its ACP agent lists (`session/list`,
/// [`bridge_acp::history`]).
pub const LIST_SESSIONS: bridge_core::query::Query = bridge_acp::list_sessions_query!(PROVIDER);

/// The Qwen channel: `acp` (default) and `json`.
pub fn channel() -> Transports {
    Transports::new("acp", Arc::new(AcpChannel::new(&PROVIDER)))
        .queries(&[LIST_MODELS, GET_SESSION, LIST_SESSIONS])
        .with("json", Arc::new(OneShotChannel::new(&json::ONE_SHOT)))
}
