//! The `json` transport: Copilot CLI's one-shot JSONL mode.
//!
//! ```text
//! copilot --output-format json --no-ask-user (--session-id=<new uuid> | --resume=<sessionId>)
//!         [--model <m>] [--reasoning-effort <level>] [<permission flags>]
//!         [--attachment <image path>…]                                     < prompt
//! ```
//!
//! * the prompt goes to stdin (Copilot CLI reads piped stdin as the prompt when `-p` is not
//!   given), never into argv; stdin is closed after it. `agentPrompt` has no flag: it is
//!   appended to the prompt (`## Agent Role and Instructions`);
//! * the session id is printed only in the last line, so a new session gets a bridge-chosen
//!   id (`--session-id=<uuid>`), known (and reported) from the start, also when the turn is
//!   interrupted; an unknown `--resume` id exits 1 with `No session, task, or name matched …`
//!   on stderr;
//! * `baseUrl` → `COPILOT_PROVIDER_BASE_URL` (BYOK) plus `COPILOT_OFFLINE=true` unless set
//!   (BYOK needs no GitHub sign-in; offline mode also skips telemetry and auto-update),
//!   `apiKey` → `COPILOT_PROVIDER_API_KEY`; `COPILOT_AUTO_UPDATE=false` unless set;
//! * `permissionMode` → allow/deny rules ([`permission_mapper::copilot`]): prompt mode denies
//!   what needs approval instead of asking, and a `permission_mode` warning says so;
//! * `reasoningEffort` → `--reasoning-effort` (`disableThinking` → `none`);
//! * `{type:"local_image", path}` attachments → `--attachment <path>`; inline attachments are
//!   not sent (warning; the ACP transport sends them);
//! * the output is normalized by [`CopilotNormalizer`].

use std::path::PathBuf;

use bridge_core::event::Event;
use bridge_core::process::CommandSpec;
use bridge_core::request::{Attachment, Request};
use bridge_one_shot::{
    BuildError, OneShot, OneShotTurn, set_endpoint_env, set_env_defaults, stdin_prompt_turn,
};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;

use crate::normalize::CopilotNormalizer;

/// The values `--reasoning-effort` accepts.
pub const REASONING_EFFORTS: &[&str] =
    &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// The `json` transport's declaration.
pub const ONE_SHOT: OneShot = OneShot::new(crate::PROBE, build_turn);

/// [`build_turn_with_session`] with a fresh session id for a new conversation.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    build_turn_with_session(program, request, env, &uuid::Uuid::new_v4().to_string())
}

/// Builds the process for one turn; `new_session` is the id a new conversation gets (unused
/// when the request resumes one).
pub fn build_turn_with_session(
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
    new_session: &str,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in ["--output-format", "json", "--no-ask-user"] {
        command.arg(arg);
    }
    let session = match &request.session_id {
        Some(id) => {
            command.arg(format!("--resume={id}"));
            id.clone()
        }
        None => {
            command.arg(format!("--session-id={new_session}"));
            new_session.to_string()
        }
    };
    if let Some(model) = request.model.as_deref().filter(|m| !m.trim().is_empty()) {
        command.arg("--model").arg(model);
    }
    let effort = if request.disable_thinking {
        Some("none")
    } else {
        request.reasoning_effort.as_deref()
    };
    match effort {
        Some(effort) if REASONING_EFFORTS.contains(&effort) => {
            command.arg("--reasoning-effort").arg(effort);
        }
        Some(effort) => warnings.push(Event::warning(
            "reasoning_effort",
            format!("reasoningEffort `{effort}` is not one of {REASONING_EFFORTS:?}; ignored"),
        )),
        None => {}
    }
    let effective = permission_mapper::copilot::effective(&RequestedMode::from_option(
        request.permission_mode.as_deref(),
    ));
    for arg in effective.settings.args() {
        command.arg(arg);
    }
    for (key, value) in effective.settings.env() {
        command.env(key, value);
    }
    for note in effective.notes {
        warnings.push(Event::warning("permission_mode", note.message));
    }
    for attachment in &request.attachments {
        match attachment {
            Attachment::LocalImage { path } => {
                command.arg("--attachment").arg(path);
            }
            Attachment::Inline { file_name, .. } => warnings.push(Event::warning(
                "attachment_skipped",
                format!(
                    "{} was not sent: Copilot CLI's one-shot mode attaches files by path only \
                     (the ACP transport sends inline attachments)",
                    file_name.as_deref().unwrap_or("an inline attachment")
                ),
            )),
        }
    }
    set_env_defaults(&mut command, &[("COPILOT_AUTO_UPDATE", "false")], env);
    if request.base_url.is_some() {
        set_env_defaults(&mut command, &[("COPILOT_OFFLINE", "true")], env);
    }
    set_endpoint_env(
        &mut command,
        request,
        "COPILOT_PROVIDER_BASE_URL",
        "COPILOT_PROVIDER_API_KEY",
    );
    command.cwd = request.cwd.clone();
    Ok(OneShotTurn {
        turn: stdin_prompt_turn(crate::ID, command, request.message_with_agent_prompt()),
        normalizer: Box::new(CopilotNormalizer::with_session(session)),
        warnings,
        scratch: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn build(request: Value, env: &ProbeEnv) -> (Vec<String>, OneShotTurn) {
        let request = Request::from_value(request).unwrap();
        let built = build_turn_with_session("/opt/copilot".into(), &request, env, "new-1").unwrap();
        (built.args(), built)
    }

    #[test]
    fn a_plain_turn_presets_the_session_and_sends_the_prompt_on_stdin() {
        let (args, built) = build(
            json!({"message": "-p hi", "cwd": "/tmp"}),
            &ProbeEnv::empty(),
        );
        assert_eq!(
            args,
            [
                "--output-format",
                "json",
                "--no-ask-user",
                "--session-id=new-1"
            ]
        );
        assert_eq!(built.stdin_prompt(), Some("-p hi"));
        assert_eq!(
            built.env_vars(),
            [
                ("COPILOT_ALLOW_ALL".into(), "false".into()),
                ("COPILOT_AUTO_UPDATE".into(), "false".into())
            ]
        );
        assert_eq!(built.warning_codes(), ["permission_mode"]);
    }

    #[test]
    fn resume_model_effort_mode_endpoint_and_key() {
        let (args, built) = build(
            json!({
                "message": "hi", "sessionId": "s-9", "model": "gpt-4.1", "reasoningEffort": "high",
                "permissionMode": "yolo", "baseUrl": "http://127.0.0.1:9/v1",
                "apiKey": "sk-secret-canary", "agentPrompt": "Be brief.",
            }),
            &ProbeEnv::empty().with_var("COPILOT_AUTO_UPDATE", "true"),
        );
        assert_eq!(
            args,
            [
                "--output-format",
                "json",
                "--no-ask-user",
                "--resume=s-9",
                "--model",
                "gpt-4.1",
                "--reasoning-effort",
                "high",
                "--allow-all",
            ]
        );
        assert!(!args.iter().any(|a| a.contains("sk-secret")));
        assert_eq!(
            built.env_vars(),
            [
                ("COPILOT_OFFLINE".into(), "true".into()),
                (
                    "COPILOT_PROVIDER_BASE_URL".into(),
                    "http://127.0.0.1:9/v1".into()
                ),
                ("COPILOT_PROVIDER_API_KEY".into(), "sk-secret-canary".into()),
            ]
        );
        assert_eq!(
            built.turn.stdin_payload,
            b"hi\n\n## Agent Role and Instructions\n\nBe brief."
        );
        assert!(built.warning_codes().is_empty());
    }

    #[test]
    fn read_only_modes_deny_commands_and_writes() {
        let (args, built) = build(
            json!({"message": "hi", "permissionMode": "sandbox"}),
            &ProbeEnv::empty(),
        );
        assert_eq!(args[4..], ["--deny-tool", "shell", "--deny-tool", "write"]);
        assert!(built.warning_codes().is_empty());
    }

    #[test]
    fn attachments_by_path_are_passed_and_inline_ones_warned_about() {
        let (args, built) = build(
            json!({
                "message": "hi", "permissionMode": "bypassPermissions", "disableThinking": true,
                "reasoningEffort": "high",
                "attachments": [
                    {"type": "local_image", "path": "/tmp/a.png"},
                    {"fileName": "b.png", "mediaType": "image/png", "data": "iVBORw0KGgo="},
                ],
            }),
            &ProbeEnv::empty(),
        );
        assert_eq!(
            args[4..],
            [
                "--reasoning-effort",
                "none",
                "--allow-all-tools",
                "--attachment",
                "/tmp/a.png"
            ]
        );
        assert_eq!(built.warning_codes(), ["attachment_skipped"]);
        assert!(
            !built
                .env_vars()
                .contains(&("COPILOT_ALLOW_ALL".into(), "false".into()))
        );
    }
}
