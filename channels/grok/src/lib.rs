//! xAI Grok CLI, over ACP (`grok agent stdio`), the way the JetBrains plugin's ai-bridge drives
//! it (`shared/reference/ai-bridge-protocol.md` §1.3, §5.6):
//!
//! * binary lookup: `GROK_CLI_PATH`, `GROK_BIN`, `GROK_PATH`, then PATH, `~/.grok/bin`,
//!   `~/.local/bin`, `/usr/local/bin`;
//! * env: `GROK_NO_AUTO_UPDATE=1`, `CI=1` (when unset); `apiKey` → `XAI_API_KEY` and
//!   `GROK_API_KEY`; `baseUrl` → `GROK_BASE_URL`; `reasoningEffort` → `GROK_REASONING_EFFORT`;
//! * `authenticate` right after `initialize` (`_meta.headless`), with the method named by
//!   `GROK_AUTH_METHOD` when set, else an API-key method;
//! * resume with `session/load` (or `session/resume` when advertised); approvals are
//!   `session/request_permission` through the unified broker.
//!
//! **The real xAI binary is untested**: it is in no registry reachable here. The e2e test puts a
//! `grok` executable on the test PATH that runs a real ACP agent (`qwen --acp`, ignoring
//! `agent stdio`, fed `XAI_API_KEY`/`GROK_BASE_URL` as its OpenAI key and endpoint), so this
//! launch, env, authentication, resume and normalization run against a real agent, but not
//! against xAI's.

#![deny(missing_docs)]

use bridge_acp::{AcpChannel, AcpProvider};
use sdk_probe::{AuthSource, ProbeSpec};

/// Provider key.
pub const ID: &str = "grok";

/// What `bridge system status` and the error path need to know about this CLI.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["GROK_CLI_PATH", "GROK_BIN", "GROK_PATH"],
    install_dirs: &[".grok/bin", ".local/bin", "/usr/local/bin"],
    version_env: &[("GROK_NO_AUTO_UPDATE", "1")],
    tested: None,
    install_hint: "curl -fsSL https://x.ai/cli/install.sh | bash",
    auth: &[
        AuthSource::Env("XAI_API_KEY"),
        AuthSource::Env("GROK_API_KEY"),
        AuthSource::File(".grok/auth.json"),
    ],
    ..ProbeSpec::new(ID, "Grok CLI", &["grok"])
};

/// How the bridge runs `grok agent stdio`.
pub const PROVIDER: AcpProvider = AcpProvider {
    args: &["agent", "stdio"],
    env: &[("GROK_NO_AUTO_UPDATE", "1")],
    env_defaults: &[("CI", "1")],
    base_url_env: &["GROK_BASE_URL"],
    api_key_env: &["XAI_API_KEY", "GROK_API_KEY"],
    reasoning_effort_env: Some("GROK_REASONING_EFFORT"),
    auth_methods: &["api-key", "xai-api-key", "grok-api-key"],
    auth_method_env: Some("GROK_AUTH_METHOD"),
    authenticate_first: true,
    ..AcpProvider::new(PROBE)
};

/// The Grok channel.
pub fn channel() -> AcpChannel {
    AcpChannel::new(&PROVIDER)
}
