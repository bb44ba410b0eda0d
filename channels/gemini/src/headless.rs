//! The `json` transport: one `gemini --output-format stream-json` process per turn.
//!
//! ```text
//! gemini --prompt= --output-format stream-json --skip-trust --approval-mode <m>
//!        [--model <m>] [--resume <sessionId>]          < prompt (stdin, closed after it)
//! ```
//!
//! * the prompt goes over stdin (the CLI appends `--prompt`, which is empty: it only makes the
//!   run headless whatever stdin is); the CLI cuts stdin at 8 MiB without failing, so a longer
//!   prompt is refused ([`MAX_PROMPT_BYTES`]);
//! * `--skip-trust`: headless Gemini refuses an untrusted folder (exit 55), and the request's
//!   `cwd` is the folder the client opened; it also means the folder's own `.gemini` settings
//!   apply for the turn, as they do for a trusted folder;
//! * `permissionMode` → `--approval-mode` ([`permission_mapper::gemini`]); headless Gemini
//!   cannot ask, so `default` and `acceptEdits` get a `permission_mode` warning saying what is
//!   refused;
//! * `baseUrl` → `GOOGLE_GEMINI_BASE_URL`, `apiKey` → `GEMINI_API_KEY` (child env only). With a
//!   base URL the CLI also needs `security.auth.selectedType` in `~/.gemini/settings.json`
//!   (otherwise it exits 41); the bridge does not write the user's settings (Gemini reads its
//!   system settings only from root-owned files, and `GEMINI_CLI_HOME` would move the saved
//!   sessions too), it reports the fix ([`crate::json::AUTH_TYPE_HINT`]);
//! * `agentPrompt` is appended to the prompt (headless Gemini has no system-prompt flag);
//!   attachments, `reasoningEffort` and `disableThinking` are not supported by the CLI's
//!   headless mode and are reported as warnings;
//! * deadlines, interrupt (the process group is killed) and the outcome come from the
//!   process-turn engine ([`bridge_core::turn`]) and [`crate::json::GeminiJsonNormalizer`].

use std::path::PathBuf;

use bridge_core::event::Event;
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_one_shot::{BuildError, OneShot, OneShotTurn, set_endpoint_env, stdin_prompt_turn};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;

use crate::json::GeminiJsonNormalizer;
use crate::{ID, PROBE};

/// Flags every headless turn gets (before the per-request ones).
pub const BASE_ARGS: &[&str] = &[
    "--prompt=",
    "--output-format",
    "stream-json",
    "--skip-trust",
];

/// The variable that receives the request's `baseUrl`.
pub const BASE_URL_ENV: &str = "GOOGLE_GEMINI_BASE_URL";

/// The variable that receives the request's `apiKey`.
pub const API_KEY_ENV: &str = "GEMINI_API_KEY";

/// The most the CLI reads from stdin (8 MiB); it silently cuts a longer prompt, so the bridge
/// refuses one instead.
pub const MAX_PROMPT_BYTES: usize = 8 * 1024 * 1024;

/// The `json` transport's declaration (its channel is a [`bridge_one_shot::OneShotChannel`]).
pub const ONE_SHOT: OneShot = OneShot::new(PROBE, build_turn);

/// Builds the `gemini` process for one headless turn of `request`; `Err` (what to fix) for a
/// prompt the CLI would cut.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
    _env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in BASE_ARGS {
        command.arg(*arg);
    }
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let effective = permission_mapper::gemini::effective(&requested);
    for arg in effective.settings.args() {
        command.arg(arg);
    }
    for note in effective.notes {
        warnings.push(Event::warning("permission_mode", note.message));
    }
    if let Some(model) = &request.model {
        command.arg("--model").arg(model);
    }
    if let Some(id) = &request.session_id {
        command.arg("--resume").arg(id);
    }
    set_endpoint_env(&mut command, request, BASE_URL_ENV, API_KEY_ENV);
    if let Some(effort) = &request.reasoning_effort {
        warnings.push(Event::warning(
            "reasoning_effort",
            format!(
                "Gemini CLI's headless mode has no thinking-level flag; reasoningEffort `{effort}` was ignored"
            ),
        ));
    }
    if request.disable_thinking {
        warnings.push(Event::warning(
            "disable_thinking",
            "Gemini CLI's headless mode cannot switch thinking off; `disableThinking` was ignored",
        ));
    }
    if !request.attachments.is_empty() {
        warnings.push(Event::warning(
            "attachment_dropped",
            format!(
                "the gemini json transport does not send attachments; {} attachment(s) were not sent (the acp transport does)",
                request.attachments.len()
            ),
        ));
    }
    let prompt = request.message_with_agent_prompt();
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(BuildError::invalid(format!(
            "the prompt is {} bytes; Gemini CLI reads at most {MAX_PROMPT_BYTES} bytes of prompt in headless mode (the acp transport has no such limit)",
            prompt.len()
        )));
    }
    command.cwd = request.cwd.clone();
    Ok(OneShotTurn {
        turn: stdin_prompt_turn(ID, command, prompt),
        normalizer: Box::new(GeminiJsonNormalizer::new(request.session_id.clone())),
        warnings,
        scratch: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build(request: serde_json::Value) -> (Vec<String>, OneShotTurn) {
        let request = Request::from_value(request).unwrap();
        let launch = build_turn("/opt/gemini".into(), &request, &ProbeEnv::empty()).unwrap();
        (launch.args(), launch)
    }

    #[test]
    fn a_plain_turn_sends_the_prompt_on_stdin_and_warns_that_nothing_can_be_asked() {
        let (args, launch) = build(json!({"message": "--help me", "cwd": "/tmp"}));
        assert_eq!(
            args,
            [
                "--prompt=",
                "--output-format",
                "stream-json",
                "--skip-trust",
                "--approval-mode",
                "default"
            ]
        );
        assert_eq!(launch.stdin_prompt(), Some("--help me"));
        assert_eq!(
            launch.turn.command.cwd.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(launch.warning_codes(), ["permission_mode"]);
    }

    #[test]
    fn model_resume_mode_and_endpoint_map_to_flags_and_env() {
        let (args, launch) = build(json!({
            "message": "hi",
            "model": "gemini-2.5-pro",
            "sessionId": "0e46c639-d1d4-4d08-a311-c95bbd09e939",
            "permissionMode": "bypassPermissions",
            "baseUrl": "http://127.0.0.1:9",
            "apiKey": "canary-secret",
        }));
        assert_eq!(
            args[4..],
            [
                "--approval-mode",
                "yolo",
                "--model",
                "gemini-2.5-pro",
                "--resume",
                "0e46c639-d1d4-4d08-a311-c95bbd09e939"
            ]
        );
        assert!(!args.iter().any(|a| a.contains("canary")));
        let env = launch.env_vars();
        assert!(env.contains(&(BASE_URL_ENV.into(), "http://127.0.0.1:9".into())));
        assert!(env.contains(&(API_KEY_ENV.into(), "canary-secret".into())));
        assert!(launch.warning_codes().is_empty());
    }

    #[test]
    fn a_prompt_the_cli_would_cut_is_refused() {
        let request = Request::from_prompt("x".repeat(MAX_PROMPT_BYTES + 1));
        let error = build_turn("/opt/gemini".into(), &request, &ProbeEnv::empty()).unwrap_err();
        assert!(error.message.contains("8388608"), "{error}");
        let request = Request::from_prompt("x".repeat(MAX_PROMPT_BYTES));
        assert!(build_turn("/opt/gemini".into(), &request, &ProbeEnv::empty()).is_ok());
    }

    #[test]
    fn unsupported_fields_are_warnings_and_the_agent_prompt_follows_the_message() {
        let (args, launch) = build(json!({
            "message": "hi",
            "model": "auto",
            "permissionMode": "acceptEdits",
            "reasoningEffort": "high",
            "disableThinking": true,
            "agentPrompt": "Be brief.",
            "attachments": [{"fileName": "a.png", "mediaType": "image/png", "data": "iVBORw0KGgo="}],
        }));
        assert_eq!(args[4..], ["--approval-mode", "auto_edit"]);
        assert_eq!(
            launch.warning_codes(),
            [
                "permission_mode",
                "reasoning_effort",
                "disable_thinking",
                "attachment_dropped"
            ]
        );
        let prompt = String::from_utf8(launch.turn.stdin_payload).unwrap();
        assert!(
            prompt.starts_with("hi\n\n") && prompt.ends_with("Be brief."),
            "{prompt}"
        );
    }
}
