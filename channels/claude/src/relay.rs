//! Claude Code on Anthropic-compatible relays (MiniMax, Z.ai GLM, user-defined ones).
//!
//! A relay is not a CLI of its own: it is Claude Code pointed at a vendor's
//! Anthropic-compatible endpoint, with the vendor's key and the vendor's model names mapped
//! onto Claude Code's model slots. So a relay provider is pure data, a [`ClaudeRelay`]
//! profile, and runs on this crate's stream-json engine ([`crate::build_turn`] plus
//! [`crate::ClaudeNormalizer`] in the profile's [`DeltaMode`]). The facade registers one
//! [`RelayChannel`] per profile: the built-in [`MINIMAX`] and [`ZCODE`], and those a user
//! declares in `providers.toml`. Keeping the profiles here, next to the engine, means no
//! provider crate depends on another: everything Claude has (approvals, sessions, interrupt,
//! resume) is the same code.
//!
//! What a relay turn changes in the Claude launch:
//!
//! * `ANTHROPIC_BASE_URL`: the request's `baseUrl`, else the profile's default;
//! * `ANTHROPIC_AUTH_TOKEN` (sent as `Authorization: Bearer`, what the vendors document): the
//!   request's `apiKey`, else the profile's key variable; a turn without a key fails before
//!   the CLI starts, naming the variable. `ANTHROPIC_API_KEY` and `CLAUDE_CODE_OAUTH_TOKEN`
//!   are removed from the child's environment, so an Anthropic credential never goes to a
//!   relay;
//! * the model slots Claude Code 2.1.197 reads: `ANTHROPIC_MODEL`,
//!   `ANTHROPIC_DEFAULT_OPUS_MODEL`, `ANTHROPIC_DEFAULT_SONNET_MODEL`,
//!   `ANTHROPIC_DEFAULT_HAIKU_MODEL`, `ANTHROPIC_SMALL_FAST_MODEL` ([`RelayModels`]); a
//!   `model` in the request still becomes `--model`;
//! * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (nothing but the model API goes to the relay)
//!   and `API_TIMEOUT_MS` (relays answer slower than Anthropic), unless set.

use std::path::PathBuf;

use bridge_core::channel::Channel;
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_core::turn::TurnContext;
use bridge_one_shot::{BuildError, OneShotTurn, run_one_shot};
use futures_util::future::BoxFuture;
use sdk_probe::{AuthSource, ProbeEnv, ProbeSpec};

use crate::ClaudeNormalizer;
use crate::deltas::DeltaMode;

/// The vendor model names a relay maps onto Claude Code's model slots (`None`: the slot is
/// left to Claude Code).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayModels {
    /// `ANTHROPIC_MODEL`: the model of the main loop.
    pub main: Option<&'static str>,
    /// `ANTHROPIC_DEFAULT_OPUS_MODEL`.
    pub opus: Option<&'static str>,
    /// `ANTHROPIC_DEFAULT_SONNET_MODEL`.
    pub sonnet: Option<&'static str>,
    /// `ANTHROPIC_DEFAULT_HAIKU_MODEL`.
    pub haiku: Option<&'static str>,
    /// `ANTHROPIC_SMALL_FAST_MODEL` (titles, summaries, quick side requests).
    pub small_fast: Option<&'static str>,
}

impl RelayModels {
    /// The same model in every slot.
    pub const fn all(model: &'static str) -> Self {
        RelayModels {
            main: Some(model),
            opus: Some(model),
            sonnet: Some(model),
            haiku: Some(model),
            small_fast: Some(model),
        }
    }

    /// `(variable, model)` for every slot that is set.
    pub fn env(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        [
            ("ANTHROPIC_MODEL", self.main),
            ("ANTHROPIC_DEFAULT_OPUS_MODEL", self.opus),
            ("ANTHROPIC_DEFAULT_SONNET_MODEL", self.sonnet),
            ("ANTHROPIC_DEFAULT_HAIKU_MODEL", self.haiku),
            ("ANTHROPIC_SMALL_FAST_MODEL", self.small_fast),
        ]
        .into_iter()
        .filter_map(|(var, model)| Some((var, model?)))
    }
}

/// One Anthropic-compatible relay that Claude Code is pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaudeRelay {
    /// Provider key (`minimax`).
    pub id: &'static str,
    /// Human name (`MiniMax (Claude Code)`).
    pub display_name: &'static str,
    /// The Anthropic-compatible endpoint (`https://api.minimax.io/anthropic`).
    pub base_url: &'static str,
    /// Model names per Claude Code slot.
    pub models: RelayModels,
    /// How the relay's content-block deltas are read.
    pub deltas: DeltaMode,
    auth: [AuthSource; 1],
}

/// Claude Code's launch with `DISABLE_NONESSENTIAL_TRAFFIC` and a long API timeout: the
/// defaults every relay turn gets unless the environment sets them.
const RELAY_ENV_DEFAULTS: &[(&str, &str)] = &[
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("API_TIMEOUT_MS", "3000000"),
];

/// Anthropic credentials a relay's child process must not see.
const ANTHROPIC_CREDENTIALS: &[&str] = &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"];

impl ClaudeRelay {
    /// A relay whose key is read from `key_env`, with no model mapping and
    /// [`DeltaMode::Auto`].
    pub const fn new(
        id: &'static str,
        display_name: &'static str,
        base_url: &'static str,
        key_env: &'static str,
    ) -> Self {
        ClaudeRelay {
            id,
            display_name,
            base_url,
            models: RelayModels {
                main: None,
                opus: None,
                sonnet: None,
                haiku: None,
                small_fast: None,
            },
            deltas: DeltaMode::Auto,
            auth: [AuthSource::Env(key_env)],
        }
    }

    /// The variable the key is read from (`MINIMAX_API_KEY`).
    pub fn key_env(&self) -> &'static str {
        match self.auth[0] {
            AuthSource::Env(var) | AuthSource::File(var) => var,
        }
    }

    /// What `bridge system status` probes: Claude Code's binary and tested versions, and the
    /// presence of this relay's key variable.
    pub fn probe(&'static self) -> ProbeSpec {
        ProbeSpec {
            id: self.id,
            display_name: self.display_name,
            auth: &self.auth,
            ..crate::PROBE
        }
    }

    /// Builds one turn: Claude's launch with this relay's endpoint, key and models.
    pub fn build_turn(
        &'static self,
        program: PathBuf,
        request: &Request,
        env: &ProbeEnv,
    ) -> Result<OneShotTurn, BuildError> {
        let (mut turn, warnings) = crate::build_turn(program, request)?;
        turn.provider = self.id.into();
        self.configure(&mut turn.command, request, env)?;
        Ok(OneShotTurn {
            warnings,
            ..OneShotTurn::new(turn, Box::new(self.normalizer()))
        })
    }

    /// The Claude normalizer reading this relay's deltas.
    pub fn normalizer(&self) -> ClaudeNormalizer {
        ClaudeNormalizer::new().with_delta_mode(self.deltas)
    }

    /// Points Claude Code's `command` at this relay: its endpoint (or the request's `baseUrl`),
    /// its key (or the request's `apiKey`) and never Anthropic's credentials, its models.
    pub fn configure(
        &self,
        command: &mut CommandSpec,
        request: &Request,
        env: &ProbeEnv,
    ) -> Result<(), BuildError> {
        let key = match &request.api_key {
            Some(key) => key.expose().to_string(),
            None => env
                .var_non_empty(self.key_env())
                .map(|k| k.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    BuildError::invalid(format!(
                        "{} needs an API key: set {} or pass `apiKey` in the request",
                        self.display_name,
                        self.key_env()
                    ))
                })?,
        };
        let base_url = request.base_url.as_deref().unwrap_or(self.base_url);
        command
            .env
            .retain(|(var, _)| var != "ANTHROPIC_API_KEY" && var != "ANTHROPIC_BASE_URL");
        command
            .env_remove
            .extend(ANTHROPIC_CREDENTIALS.iter().map(Into::into));
        command.env("ANTHROPIC_BASE_URL", base_url);
        command.env("ANTHROPIC_AUTH_TOKEN", key);
        for (var, model) in self.models.env() {
            command.env(var, model);
        }
        for (var, value) in RELAY_ENV_DEFAULTS {
            if env.var(var).is_none() {
                command.env(*var, *value);
            }
        }
        Ok(())
    }
}

/// MiniMax's Anthropic-compatible endpoint (its coding plan documents Claude Code on it).
pub const MINIMAX: ClaudeRelay = ClaudeRelay {
    models: RelayModels::all("MiniMax-M2"),
    ..ClaudeRelay::new(
        "minimax",
        "MiniMax (Claude Code)",
        "https://api.minimax.io/anthropic",
        "MINIMAX_API_KEY",
    )
};

/// Z.ai's GLM coding plan endpoint.
pub const ZCODE: ClaudeRelay = ClaudeRelay {
    models: RelayModels {
        main: Some("glm-4.6"),
        opus: Some("glm-4.6"),
        sonnet: Some("glm-4.6"),
        haiku: Some("glm-4.5-air"),
        small_fast: Some("glm-4.5-air"),
    },
    ..ClaudeRelay::new(
        "zcode",
        "Z.ai GLM (Claude Code)",
        "https://api.z.ai/api/anthropic",
        "ZAI_API_KEY",
    )
};

/// The built-in relays.
pub const BUILT_IN: &[&ClaudeRelay] = &[&MINIMAX, &ZCODE];

/// The channel of one relay profile.
#[derive(Debug, Clone, Copy)]
pub struct RelayChannel {
    relay: &'static ClaudeRelay,
}

impl RelayChannel {
    /// The channel of `relay`.
    pub const fn new(relay: &'static ClaudeRelay) -> Self {
        RelayChannel { relay }
    }

    /// Its profile.
    pub fn relay(&self) -> &'static ClaudeRelay {
        self.relay
    }
}

impl Channel for RelayChannel {
    fn id(&self) -> &'static str {
        self.relay.id
    }

    fn display_name(&self) -> &'static str {
        self.relay.display_name
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        let relay = self.relay;
        Box::pin(run_one_shot(
            relay.probe(),
            sdk_probe::locate,
            move |program, request, env| relay.build_turn(program, request, env),
            request,
            ctx,
        ))
    }

    fn conversation(
        &self,
        _first: &Request,
    ) -> Option<Box<dyn bridge_core::conversation::Conversation>> {
        Some(Box::new(crate::session::ClaudeConversation::relay(
            self.relay,
        )))
    }

    /// Claude Code's `--mcp-config`, as for Claude.
    fn mcp_support(&self) -> bridge_core::request::McpSupport {
        bridge_core::request::McpSupport::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(turn: &OneShotTurn, var: &str) -> Option<String> {
        turn.turn
            .command
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    fn request(value: serde_json::Value) -> Request {
        Request::from_value(value).unwrap()
    }

    #[test]
    fn the_key_comes_from_the_variable_and_the_request_overrides_key_and_url() {
        let env = ProbeEnv::empty().with_var("MINIMAX_API_KEY", "mm-key-123456");
        let turn = MINIMAX
            .build_turn(
                "claude".into(),
                &request(serde_json::json!({"message": "hi"})),
                &env,
            )
            .unwrap();
        assert_eq!(turn.turn.provider, "minimax");
        assert_eq!(
            env_of(&turn, "ANTHROPIC_AUTH_TOKEN").as_deref(),
            Some("mm-key-123456")
        );
        assert_eq!(
            env_of(&turn, "ANTHROPIC_BASE_URL").as_deref(),
            Some("https://api.minimax.io/anthropic")
        );
        assert_eq!(
            env_of(&turn, "ANTHROPIC_MODEL").as_deref(),
            Some("MiniMax-M2")
        );
        assert_eq!(env_of(&turn, "ANTHROPIC_API_KEY"), None);
        assert!(
            turn.turn
                .command
                .env_remove
                .iter()
                .any(|v| v == "ANTHROPIC_API_KEY")
        );

        let turn = MINIMAX
            .build_turn(
                "claude".into(),
                &request(
                    serde_json::json!({"message": "hi", "apiKey": "req-key-123456",
                    "baseUrl": "http://127.0.0.1:9/anthropic"}),
                ),
                &env,
            )
            .unwrap();
        assert_eq!(
            env_of(&turn, "ANTHROPIC_AUTH_TOKEN").as_deref(),
            Some("req-key-123456")
        );
        assert_eq!(
            env_of(&turn, "ANTHROPIC_API_KEY"),
            None,
            "the key goes to the bearer only"
        );
        assert_eq!(
            env_of(&turn, "ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/anthropic")
        );
    }

    #[test]
    fn no_key_is_an_error_naming_the_variable() {
        let error = ZCODE
            .build_turn(
                "claude".into(),
                &request(serde_json::json!({"message": "hi"})),
                &ProbeEnv::empty(),
            )
            .unwrap_err();
        assert!(error.message.contains("ZAI_API_KEY"), "{error}");
    }

    #[test]
    fn the_probe_is_claudes_with_the_relays_key() {
        let probe = ZCODE.probe();
        assert_eq!((probe.id, probe.binaries), ("zcode", crate::PROBE.binaries));
        assert_eq!(probe.auth, [AuthSource::Env("ZAI_API_KEY")]);
        assert_eq!(probe.tested, crate::PROBE.tested);
    }
}
