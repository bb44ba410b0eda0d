//! Kimi CLI, over ACP (`kimi acp`, the default transport) and its print mode
//! (`kimi --print --output-format stream-json`, `--transport json`).
//!
//! Tested with `kimi-cli` 1.51.0 from PyPI (the last working release: 1.52.0 is a stub that only
//! prints a deprecation notice). It needs Python ≥ 3.12; `tests/install-clis.sh` builds its
//! virtualenv with the newest Python it finds (3.12.1 cannot import it: a `typing` bug; 3.13
//! works). Facts (`shared/reference/real-clis-openai.md` §7, and the e2e tests):
//!
//! * **`kimi acp` requires a Kimi Code login**: `session/new` and `session/load` fail with
//!   `-32000 Authentication required` unless `~/.kimi/credentials/kimi-code.json` holds an OAuth
//!   token, even when `~/.kimi/config.toml` configures an API-key provider. The only auth method
//!   is the interactive terminal `kimi login`, which the bridge cannot run; the error says so.
//!   (The e2e tests place a placeholder token file in their scratch home; the mock provider
//!   never sees it.)
//! * never run `kimi` without arguments: it downloads and runs an installer;
//! * one session mode (`default`): every permission mode is the bridge's policy;
//!   the model list (`mock`, `mock,thinking`) is selected with `session/set_model`;
//! * tool calls carry no `kind` and no `rawInput`: the arguments stream as the running call's
//!   text (`{"command":…}`), titled `Shell: <preview>`; the engine takes the last complete JSON
//!   object as the input and announces the call when it completes or asks for approval; the
//!   kind comes from the tool name (`Shell` → execute, `ReadFile` → read, …);
//! * **API errors are swallowed over ACP**: the turn ends `end_turn` with no output at all and
//!   the error (`Error code: 401 - …`) is only in `~/.kimi/logs/kimi.log`. The channel treats a
//!   turn without any output as failed and quotes the log's last `Error code:` line.
//!
//! `baseUrl` → `KIMI_BASE_URL`, `apiKey` → `KIMI_API_KEY` (honoured by providers of type `kimi`).
//!
//! The print mode ([`json`]) needs **no Kimi Code login**: an API-key provider in
//! `~/.kimi/config.toml` is enough (verified with 1.51.0 and no `credentials/` directory). So
//! [`channel`] routes a request that names no transport to `json` when
//! `~/.kimi/credentials/kimi-code.json` does not exist and the permission mode loses nothing in
//! print mode (plan, sandbox, bypassPermissions, yolo; see [`route_without_login`]), with a
//! `transport` warning saying why; otherwise the ACP "Authentication required" failure points
//! at `--transport json`. Print mode
//! cannot ask for approval: every tool runs, except in the read-only modes, which run an agent
//! without the writing tools ([`permission_mapper::kimi`]).

#![deny(missing_docs)]

pub mod json;
pub mod models;
pub mod normalize;
pub mod sessions;

use std::sync::Arc;

use bridge_acp::{AcpChannel, AcpProvider, EmptyTurn};
use bridge_core::channel::Transports;
use bridge_core::event::{FileDiff, ToolKind as K};
use bridge_core::request::Request;
use permission_mapper::PermissionMode;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};
use serde_json::Value;

pub use normalize::KimiNormalizer;

/// Provider key.
pub const ID: &str = "kimi";

/// The PyPI package that installs the CLI.
pub const PYPI_PACKAGE: &str = "kimi-cli";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["KIMI_BIN", "KIMI_PATH", "KIMI_CLI_PATH", "KIMI_CODE_BIN"],
    install_dirs: &[".kimi-code/bin", ".kimi/bin", ".moonshot/bin"],
    version_env: &[("KIMI_CLI_NO_AUTO_UPDATE", "1")],
    tested: Some(VersionRange::exactly(Version::new(1, 51, 0))),
    install_hint: "pipx install --python python3.13 kimi-cli==1.51.0",
    auth: &[
        AuthSource::File(".kimi/credentials/kimi-code.json"),
        AuthSource::File(".kimi/config.toml"),
        AuthSource::Env("KIMI_API_KEY"),
    ],
    ..ProbeSpec::new(ID, "Kimi CLI", &["kimi"])
};

/// Kinds of Kimi's tools, by name (its tool calls carry none).
pub const TOOL_KINDS: &[(&str, K)] = &[
    ("Shell", K::Execute),
    ("ReadFile", K::Read),
    ("ReadMediaFile", K::Read),
    ("WriteFile", K::Edit),
    ("StrReplaceFile", K::Edit),
    ("Glob", K::Search),
    ("Grep", K::Search),
    ("FetchURL", K::Fetch),
    ("SearchWeb", K::Fetch),
    ("SetTodoList", K::Think),
    ("Agent", K::Think),
    ("EnterPlanMode", K::SwitchMode),
    ("ExitPlanMode", K::SwitchMode),
];

/// The file change a `WriteFile` (`{path, content}`) or `StrReplaceFile`
/// (`{path, edit: {old, new} | [{old, new}…]}`) call describes.
pub fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = input.get("path").and_then(Value::as_str)?.to_string();
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    match name {
        "WriteFile" => Some(FileDiff {
            path,
            old_text: None,
            new_text: text(input, "content"),
        }),
        "StrReplaceFile" => {
            let edits: Vec<&Value> = match &input["edit"] {
                Value::Array(edits) => edits.iter().collect(),
                edit @ Value::Object(_) => vec![edit],
                _ => return None,
            };
            let join = |key: &str| {
                edits
                    .iter()
                    .filter_map(|e| text(e, key))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            Some(FileDiff {
                path,
                old_text: Some(join("old")),
                new_text: Some(join("new")),
            })
        }
        _ => None,
    }
}

/// The Kimi Code login `kimi acp` requires, relative to the home directory.
pub const LOGIN_FILE: &str = ".kimi/credentials/kimi-code.json";

/// How the bridge runs `kimi acp`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["acp"],
    env_defaults: &[
        ("KIMI_CLI_NO_AUTO_UPDATE", "1"),
        ("KIMI_DISABLE_TELEMETRY", "1"),
    ],
    base_url_env: &["KIMI_BASE_URL"],
    api_key_env: &["KIMI_API_KEY"],
    tool_kinds: TOOL_KINDS,
    auth_hint: Some(
        "or run it through kimi's print mode, which needs no login, only an API-key provider in \
         ~/.kimi/config.toml: `--transport json` (request field \"transport\": \"json\")",
    ),
    empty_turn: Some(EmptyTurn {
        message: "the turn ended without any output (kimi-cli 1.51.0 swallows API errors over ACP).",
        log: Some(".kimi/logs/kimi.log"),
        pattern: "Error code:",
    }),
    ..AcpProvider::new(PROBE)
};

/// `getSession <sessionId> <cwd>`: the session as its ACP agent replays it on `session/load`
/// ([`bridge_acp::history`]).
pub const GET_SESSION: bridge_core::query::Query = bridge_acp::get_session_query!(PROVIDER);

/// `listSessions < {cwd?}`: the sessions its ACP agent lists (`session/list`,
/// [`bridge_acp::history`]).
pub const LIST_SESSIONS: bridge_core::query::Query = bridge_acp::list_sessions_query!(PROVIDER);

/// The Kimi channel: ACP (default) and `json` (`kimi --print`), routed to `json` when there is
/// no Kimi Code login for ACP ([`route_without_login`]).
pub fn channel() -> Transports {
    Transports::new("acp", Arc::new(AcpChannel::new(&PROVIDER)))
        .with("json", Arc::new(json::channel()))
        .route(route)
        .queries(&[models::QUERY, GET_SESSION, LIST_SESSIONS])
}

/// The [`bridge_core::channel::Route`] of kimi: [`route_without_login`] in this process's
/// environment.
fn route(request: &Request) -> Option<(&'static str, String)> {
    let env = sdk_probe::ProbeEnv::from_process();
    let mode = PermissionMode::parse(request.permission_mode.as_deref().unwrap_or("")).mode;
    route_without_login(env.home(), mode).map(|why| ("json", why))
}

/// Why a request that names no transport runs on `json`: `kimi acp` would refuse it for lack
/// of a login (`~/.kimi/credentials/kimi-code.json` under `home`), while the print mode works
/// with an API-key provider. `None` when the login exists, the home is unknown, or the mode is
/// one print mode would weaken: it cannot ask, so `default` and `acceptEdits` would run every
/// command without approval where ACP asks (or denies when nobody answers). Those stay on ACP,
/// whose error then points at `--transport json`; the read-only modes (a read-only agent) and
/// the modes that approve everything anyway are routed.
pub fn route_without_login(home: Option<&std::path::Path>, mode: PermissionMode) -> Option<String> {
    let login = home?.join(LOGIN_FILE);
    let same_or_stricter = matches!(
        mode,
        PermissionMode::Plan
            | PermissionMode::Sandbox
            | PermissionMode::BypassPermissions
            | PermissionMode::Yolo
    );
    (same_or_stricter && !login.exists()).then(|| {
        format!(
            "no Kimi Code login ({}), which `kimi acp` requires: using kimi's print mode \
             (--transport json), which works with an API-key provider in ~/.kimi/config.toml; \
             pass --transport acp after `kimi login` for approvals",
            login.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_login_file_only_modes_print_mode_honours_are_routed() {
        let home = tempfile::tempdir().unwrap();
        for mode in PermissionMode::ALL {
            let routed = route_without_login(Some(home.path()), mode);
            let expected = !matches!(mode, PermissionMode::Default | PermissionMode::AcceptEdits);
            assert_eq!(routed.is_some(), expected, "{mode}");
        }
        let why = route_without_login(Some(home.path()), PermissionMode::Yolo).unwrap();
        assert!(
            why.contains("--transport json") && why.contains(LOGIN_FILE),
            "{why}"
        );
        let login = home.path().join(LOGIN_FILE);
        std::fs::create_dir_all(login.parent().unwrap()).unwrap();
        std::fs::write(&login, "{}").unwrap();
        assert_eq!(
            route_without_login(Some(home.path()), PermissionMode::Yolo),
            None
        );
        assert_eq!(route_without_login(None, PermissionMode::Yolo), None);
    }

    #[test]
    fn edits_carry_a_diff() {
        let input = serde_json::json!({"path": "/w/a", "edit": [{"old": "a", "new": "b"}, {"old": "c", "new": "d"}]});
        let diff = tool_diff("StrReplaceFile", &input).unwrap();
        assert_eq!(diff.new_text.as_deref(), Some("b\nd"));
        let write = tool_diff(
            "WriteFile",
            &serde_json::json!({"path": "/w/b", "content": "x"}),
        );
        assert_eq!(write.unwrap().new_text.as_deref(), Some("x"));
        assert!(tool_diff("Shell", &serde_json::json!({"command": "ls"})).is_none());
    }
}
