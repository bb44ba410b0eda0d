//! Kimi CLI, over ACP (`kimi acp`).
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

#![deny(missing_docs)]

use bridge_acp::{AcpChannel, AcpProvider, EmptyTurn};
use bridge_core::event::ToolKind as K;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

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

/// How the bridge runs `kimi acp`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["acp"],
    env_defaults: &[
        ("KIMI_CLI_NO_AUTO_UPDATE", "1"),
        ("KIMI_DISABLE_TELEMETRY", "1"),
    ],
    base_url_env: &["KIMI_BASE_URL"],
    api_key_env: &["KIMI_API_KEY"],
    tool_kinds: &[
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
    ],
    empty_turn: Some(EmptyTurn {
        message: "the turn ended without any output (kimi-cli 1.51.0 swallows API errors over ACP).",
        log: Some(".kimi/logs/kimi.log"),
        pattern: "Error code:",
    }),
    ..AcpProvider::new(PROBE)
};

/// The Kimi channel.
pub fn channel() -> AcpChannel {
    AcpChannel::new(&PROVIDER)
}
