//! The pi coding agent channel (`@mariozechner/pi-coding-agent`), on the pi-family engine
//! (`engines/pi-family`, [`bridge_pi_family`]) whose launch ([`launch`]) and normalizer
//! ([`normalize`]) it shares with oh-my-pi (`channels/omp`) and re-exports.
//!
//! How it runs pi 0.73.1 (facts: `shared/reference/real-clis-openai.md` §6,
//! `ai-bridge-protocol.md` §1.3):
//!
//! ```text
//! pi --print --mode json [--model <m>] [--session <id>] [--thinking <level>]
//!    [--tools read,grep,find,ls] [--append-system-prompt <file>] [@<attachment>…]   < prompt
//! ```
//!
//! * binary: `PI_BIN` / `PI_PATH` / `PI_CLI_PATH`, then PATH, then `~/.pi/bin` and the usual
//!   install dirs;
//! * `model`: passed as `--model` (pi accepts `provider/id` and `id:thinking`); `auto`,
//!   `default`, `pi-default`, … mean pi's configured default;
//! * resume: `--session <id>` with the id of the first `session` line (pi 0.73.1 has no
//!   `--session-id`, which ai-bridge's newer pi uses); an unknown id exits 1 with
//!   `No session found matching '…'` on stderr, reported with that text;
//! * `reasoningEffort` → `--thinking` (off, minimal, low, medium, high, xhigh; `max` becomes
//!   `xhigh`), `disableThinking` → `--thinking off`;
//! * `permissionMode` → pi's tool allowlist ([`permission_mapper::pi`]): read-only modes get
//!   `--tools read,grep,find,ls`; pi has no approval prompts, so the other modes run every tool
//!   without asking, and a `permission_mode` warning says so;
//! * `PI_SKIP_VERSION_CHECK=1` unless set (no update check per turn);
//! * the outcome is decided at exit ([`normalize::PiNormalizer`]): pi exits 0 after an API
//!   error, so the stream decides, never the exit code alone.

#![deny(missing_docs)]

pub mod models;

pub use bridge_pi_family::{launch, normalize};

use std::path::PathBuf;

use bridge_core::request::Request;
use bridge_one_shot::{BuildError, OneShot, OneShotChannel, OneShotTurn};
use permission_mapper::RequestedMode;
use sdk_probe::{AuthSource, ProbeEnv, ProbeSpec, Version, VersionRange};

pub use launch::{Flavor, Permissions, Runtime, ValueStyle};
pub use normalize::PiNormalizer;

/// Provider key.
pub const ID: &str = "pi";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@mariozechner/pi-coding-agent";

/// What `bridge system status` and the error path need to know about pi.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["PI_BIN", "PI_PATH", "PI_CLI_PATH"],
    install_dirs: &[".pi/bin"],
    version_env: &[("PI_OFFLINE", "1")],
    tested: Some(VersionRange::new(
        Version::new(0, 73, 0),
        Version::new(0, 73, 1),
    )),
    install_hint: "npm i -g @mariozechner/pi-coding-agent",
    auth: &[
        AuthSource::File(".pi/agent/models.json"),
        AuthSource::File(".pi/agent/auth.json"),
        AuthSource::Env("OPENAI_API_KEY"),
        AuthSource::Env("ANTHROPIC_API_KEY"),
        AuthSource::Env("GEMINI_API_KEY"),
    ],
    ..ProbeSpec::new(ID, "pi", &["pi"])
};

/// pi's permission flags: its tool allowlist.
pub fn permissions(requested: &RequestedMode) -> Permissions {
    let effective = permission_mapper::pi::effective(requested);
    Permissions {
        args: effective.settings.args(),
        notes: effective.notes.into_iter().map(|n| n.message).collect(),
    }
}

/// How the bridge runs pi.
pub const FLAVOR: Flavor = Flavor {
    probe: PROBE,
    resume_flag: "--session",
    values: ValueStyle::Separate,
    thinking_levels: &["off", "minimal", "low", "medium", "high", "xhigh"],
    default_model_tokens: &["pi-default", "pi default"],
    env_defaults: &[("PI_SKIP_VERSION_CHECK", "1")],
    permissions,
    runtime: None,
};

fn build(program: PathBuf, request: &Request, env: &ProbeEnv) -> Result<OneShotTurn, BuildError> {
    launch::build_turn(&FLAVOR, program, request, env)
}

/// pi on the one-shot engine, with its `listModels` ([`models::QUERY`]).
pub const ONE_SHOT: OneShot = OneShot::new(PROBE, build).with_queries(&[models::QUERY]);

/// The pi channel.
pub fn channel() -> OneShotChannel {
    OneShotChannel::new(&ONE_SHOT)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use serde_json::json;

    use super::*;

    fn argv(request: serde_json::Value) -> (Vec<String>, OneShotTurn) {
        let request = Request::from_value(request).unwrap();
        let env = ProbeEnv::empty().with_home("/nonexistent-home");
        let launch = launch::build_turn(&FLAVOR, "/opt/pi".into(), &request, &env).unwrap();
        (launch.args(), launch)
    }

    #[test]
    fn a_plain_turn_prints_json_and_sends_the_prompt_on_stdin() {
        let (args, launch) = argv(json!({"message": "-- @not-a-file hi", "cwd": "/tmp"}));
        assert_eq!(args, ["--print", "--mode", "json"]);
        let turn = &launch.turn;
        assert_eq!(launch.stdin_prompt(), Some("-- @not-a-file hi"));
        assert_eq!(
            turn.command.cwd.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert!(
            turn.command
                .env
                .contains(&(OsString::from("PI_SKIP_VERSION_CHECK"), OsString::from("1")))
        );
        // Default mode: pi runs every tool without asking, and says so.
        assert_eq!(launch.warning_codes(), ["permission_mode"]);
    }

    #[test]
    fn model_session_thinking_and_permissions_map_to_flags() {
        let (args, launch) = argv(json!({
            "message": "hi",
            "model": "mock/mock-model",
            "sessionId": "01a22f2c-85c3-719c-92cc-0ee3c6be2fdb",
            "reasoningEffort": "high",
            "permissionMode": "sandbox",
        }));
        assert_eq!(
            args,
            [
                "--print",
                "--mode",
                "json",
                "--model",
                "mock/mock-model",
                "--session",
                "01a22f2c-85c3-719c-92cc-0ee3c6be2fdb",
                "--thinking",
                "high",
                "--tools",
                "read,grep,find,ls",
            ]
        );
        assert!(launch.warning_codes().is_empty());
    }

    #[test]
    fn special_model_tokens_mean_no_model_flag() {
        for model in ["auto", "__config_default__", "pi-default", "PI DEFAULT"] {
            let (args, _) =
                argv(json!({"message": "hi", "model": model, "permissionMode": "yolo"}));
            assert_eq!(args, ["--print", "--mode", "json"], "{model}");
        }
    }

    #[test]
    fn thinking_max_becomes_xhigh_and_disable_wins() {
        let (args, launch) =
            argv(json!({"message": "hi", "reasoningEffort": "max", "permissionMode": "yolo"}));
        assert_eq!(args[3..], ["--thinking", "xhigh"]);
        assert_eq!(launch.warning_codes(), ["reasoning_effort"]);
        let (args, _) = argv(json!({
            "message": "hi", "reasoningEffort": "high", "disableThinking": true, "permissionMode": "yolo"
        }));
        assert_eq!(args[3..], ["--thinking", "off"]);
    }

    #[test]
    fn images_and_the_agent_prompt_go_through_private_files() {
        // A 1×1 PNG.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
        let (args, launch) = argv(json!({
            "message": "what is this?",
            "permissionMode": "bypassPermissions",
            "agentPrompt": "README.md",
            "attachments": [
                {"fileName": "shot.png", "mediaType": "image/png", "data": png},
                {"fileName": "x.pdf", "mediaType": "application/pdf", "data": "JVBERi0="},
                {"mediaType": "image/png", "data": format!("data:image/png;base64,{png}")},
            ],
        }));
        let dir = launch.scratch.as_ref().expect("a scratch dir").path();
        let prompt = dir.join("agent-prompt.md");
        let first = dir.join("1-shot.png");
        let third = dir.join("attachment-3.png");
        assert_eq!(
            args,
            [
                "--print".to_string(),
                "--mode".into(),
                "json".into(),
                "--append-system-prompt".into(),
                prompt.display().to_string(),
                format!("@{}", first.display()),
                format!("@{}", third.display()),
            ]
        );
        assert_eq!(std::fs::read_to_string(&prompt).unwrap(), "README.md");
        assert!(std::fs::read(&first).unwrap().starts_with(b"\x89PNG"));
        assert_eq!(
            std::fs::read(&first).unwrap(),
            std::fs::read(&third).unwrap()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(dir), 0o700);
            assert_eq!(mode(&first), 0o600);
        }
        assert_eq!(launch.warning_codes(), ["attachment_skipped"]);
        let dir = dir.to_path_buf();
        drop(launch);
        assert!(!dir.exists(), "the scratch dir is removed with the launch");
    }

    #[test]
    fn local_images_are_passed_as_they_are_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("a.png");
        std::fs::write(&image, b"\x89PNG").unwrap();
        let (args, launch) = argv(json!({
            "message": "hi", "permissionMode": "yolo",
            "attachments": [{"type": "local_image", "path": image}],
        }));
        assert_eq!(args[3..], [format!("@{}", image.display())]);
        assert!(launch.scratch.is_none());
        let request = Request::from_value(json!({
            "message": "hi", "attachments": [{"type": "local_image", "path": "/nope/missing.png"}],
        }))
        .unwrap();
        let error = launch::build_turn(&FLAVOR, "/opt/pi".into(), &request, &ProbeEnv::empty())
            .unwrap_err();
        assert!(error.message.contains("/nope/missing.png"), "{error:?}");
    }

    #[test]
    fn base_url_and_api_key_are_not_passed_and_never_in_argv() {
        let (args, launch) = argv(json!({
            "message": "hi", "permissionMode": "yolo",
            "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-secret-canary",
        }));
        assert!(!args.iter().any(|a| a.contains("sk-secret-canary")));
        assert!(
            !launch
                .turn
                .command
                .env
                .iter()
                .any(|(_, v)| v.to_string_lossy().contains("sk-secret"))
        );
        assert_eq!(
            launch.warning_codes(),
            ["unsupported_field", "unsupported_field"]
        );
    }
}
