//! The `json` transport: one `opencode run --format json` per turn.
//!
//! | request | what opencode gets |
//! |---|---|
//! | `message` (+ `agentPrompt`) | stdin, closed after it (an argument would be re-quoted by opencode, and it waits for EOF on an open stdin) |
//! | `sessionId` | `--session <id>` (an unknown id: `Session not found` on stderr, exit 1) |
//! | `model` | `-m <provider/model>` |
//! | `reasoningEffort` | `--variant <effort>` (provider-specific variants) |
//! | `disableThinking` | no `--thinking` (the reasoning is not shown; the model may still reason) |
//! | `permissionMode` | `OPENCODE_PERMISSION` ([`permission_mapper::opencode`]), `--agent plan` for plan |
//! | `baseUrl`, `apiKey`, `attachments` | not used, with a warning (opencode takes endpoints and keys from `opencode.json`) |
//! | `cwd` | the process's working directory |

use std::path::PathBuf;

use bridge_core::event::Event;
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_one_shot::{
    BuildError, OneShot, OneShotChannel, OneShotTurn, attachments_skipped, endpoint_fields,
    set_env_defaults, stdin_prompt_turn,
};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;

use crate::normalize::OpencodeNormalizer;

/// Variables set unless the user's environment sets them: no self-update, no model list fetch,
/// no sharing, no LSP downloads during a turn.
pub const ENV_DEFAULTS: &[(&str, &str)] = &[
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
];

/// How the bridge runs `opencode run --format json`.
pub const ONE_SHOT: OneShot = OneShot::new(crate::PROBE, build_turn);

/// The `json` transport's channel.
pub fn channel() -> OneShotChannel {
    OneShotChannel::new(&ONE_SHOT)
}

/// Builds the process for one turn of the opencode CLI at `program`.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in ["run", "--format", "json"] {
        command.arg(arg);
    }
    if request.disable_thinking {
        warnings.push(Event::warning(
            "disable_thinking",
            "opencode run cannot switch the model's thinking off; its reasoning is not shown",
        ));
    } else {
        command.arg("--thinking");
    }
    if let Some(id) = &request.session_id {
        command.arg("--session").arg(id);
    }
    if let Some(model) = &request.model {
        command.arg("-m").arg(model);
    }
    if let Some(effort) = &request.reasoning_effort {
        command.arg("--variant").arg(effort);
    }
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let effective = permission_mapper::opencode::effective_run(&requested);
    if let Some(agent) = effective.settings.agent {
        command.arg("--agent").arg(agent);
    }
    command.env(
        permission_mapper::opencode::PERMISSION_ENV,
        effective.settings.permission,
    );
    for note in effective.notes {
        warnings.push(Event::warning("permission_mode", note.message));
    }
    for field in endpoint_fields(request) {
        warnings.push(Event::warning(
            "unsupported_field",
            format!(
                "opencode takes endpoints and keys from its own configuration \
                 (opencode.json, `opencode auth login`); the request's `{field}` was not applied"
            ),
        ));
    }
    warnings.extend(attachments_skipped(crate::ID, request));
    set_env_defaults(&mut command, ENV_DEFAULTS, env);
    command.cwd = request.cwd.clone();
    let turn = stdin_prompt_turn(crate::ID, command, request.message_with_agent_prompt());
    Ok(OneShotTurn {
        turn,
        warnings,
        scratch: None,
        normalizer: Box::new(OpencodeNormalizer::new(request.session_id.clone())),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build(request: serde_json::Value) -> OneShotTurn {
        let request = Request::from_value(request).unwrap();
        build_turn("/opt/opencode".into(), &request, &ProbeEnv::empty()).unwrap()
    }

    #[test]
    fn the_message_goes_to_stdin_and_the_rest_to_flags() {
        let launch = build(json!({
            "message": "-x \"quoted\" prompt", "cwd": "/tmp", "sessionId": "ses_abc",
            "model": "mock/mock-model", "reasoningEffort": "high", "agentPrompt": "Be brief.",
            "permissionMode": "yolo",
        }));
        assert_eq!(
            launch.args(),
            [
                "run",
                "--format",
                "json",
                "--thinking",
                "--session",
                "ses_abc",
                "-m",
                "mock/mock-model",
                "--variant",
                "high",
            ]
        );
        assert_eq!(
            launch.stdin_prompt(),
            Some("-x \"quoted\" prompt\n\n## Agent Role and Instructions\n\nBe brief.")
        );
        assert_eq!(
            launch.turn.command.cwd.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(
            launch.env("OPENCODE_PERMISSION").as_deref(),
            Some(r#"{"edit":"allow","bash":"allow","webfetch":"allow"}"#)
        );
        assert_eq!(
            launch.env("OPENCODE_DISABLE_AUTOUPDATE").as_deref(),
            Some("1")
        );
        assert!(launch.warning_codes().is_empty(), "{:?}", launch.warnings);
    }

    #[test]
    fn modes_that_need_approval_say_what_will_be_refused() {
        let launch = build(json!({"message": "hi"}));
        assert_eq!(launch.warning_codes(), ["permission_mode"]);
        assert_eq!(
            launch.env("OPENCODE_PERMISSION").as_deref(),
            Some(r#"{"edit":"ask","bash":"ask","webfetch":"ask"}"#)
        );
        let plan = build(json!({"message": "hi", "permissionMode": "plan"}));
        assert!(
            plan.args()
                .ends_with(&["--agent".to_string(), "plan".to_string()])
        );
        assert_eq!(
            plan.env("OPENCODE_PERMISSION").as_deref(),
            Some(r#"{"edit":"deny","bash":"deny","webfetch":"ask"}"#)
        );
    }

    #[test]
    fn unusable_fields_are_reported_and_keys_never_passed() {
        let launch = build(json!({
            "message": "hi", "permissionMode": "bypassPermissions", "disableThinking": true,
            "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-canary-1",
            "attachments": [{"fileName": "a.png", "mediaType": "image/png", "data": "AAAA"}],
        }));
        assert!(!launch.args().contains(&"--thinking".to_string()));
        assert_eq!(
            launch.warning_codes(),
            [
                "disable_thinking",
                "unsupported_field",
                "unsupported_field",
                "attachment_skipped"
            ]
        );
        let all = format!("{:?}", launch.turn.command);
        assert!(!all.contains("sk-canary-1"));
    }
}
