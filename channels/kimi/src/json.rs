//! The `json` transport: one `kimi --print --output-format stream-json` per turn.
//!
//! | request | what kimi gets |
//! |---|---|
//! | `message` (+ `agentPrompt`) | stdin, closed after it (print mode reads the prompt from a piped stdin) |
//! | `sessionId` | `--session <id>`; a new turn gets `--session <fresh uuid>`, so the id is known from the start. Kimi starts a new session under an id it does not know (exit 0, no history), so an id it has no session for in this working directory is refused before it runs ([`crate::sessions`]) |
//! | `cwd` | `--work-dir <cwd>` and the process's working directory |
//! | `model` | `--model <name>` (a model name from `config.toml`) |
//! | `reasoningEffort` / `disableThinking` | `--thinking` / `--no-thinking` (kimi has no effort levels: any effort turns thinking on, with a warning unless it is `high` or more) |
//! | `baseUrl`, `apiKey` | `KIMI_BASE_URL`, `KIMI_API_KEY` (honoured by `type = "kimi"` providers; the child's environment only) |
//! | `permissionMode` | print mode auto-approves every tool; plan and sandbox run a read-only agent file (`--agent-file`, [`permission_mapper::kimi`]) |
//! | `attachments` | not sent, with a warning |
//!
//! `--yolo` is not passed: print mode already approves every call for its invocation, and
//! `--plan` restricts nothing there (measured), which is why the read-only modes use an agent
//! file instead.

use std::path::PathBuf;

use bridge_core::event::{ErrorCode, Event};
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_one_shot::{
    BuildError, OneShot, OneShotChannel, OneShotTurn, attachments_skipped, scratch_dir,
    set_endpoint_env, set_env_defaults, stdin_prompt_turn,
};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;

use crate::normalize::KimiNormalizer;

/// Variables set unless the user's environment sets them: no self-update, no telemetry.
pub const ENV_DEFAULTS: &[(&str, &str)] = &[
    ("KIMI_CLI_NO_AUTO_UPDATE", "1"),
    ("KIMI_DISABLE_TELEMETRY", "1"),
];

/// How the bridge runs `kimi --print`.
pub const ONE_SHOT: OneShot = OneShot::new(crate::PROBE, build_turn);

/// The `json` transport's channel.
pub fn channel() -> OneShotChannel {
    OneShotChannel::new(&ONE_SHOT)
}

/// The thinking flag for a request, and a warning when the effort cannot be honoured exactly.
fn thinking(request: &Request) -> (Option<&'static str>, Option<String>) {
    if request.disable_thinking {
        return (Some("--no-thinking"), None);
    }
    match request.reasoning_effort.as_deref().map(str::trim) {
        None | Some("") => (None, None),
        Some(effort) => {
            let note = (!matches!(
                effort.to_ascii_lowercase().as_str(),
                "high" | "xhigh" | "max"
            ))
            .then(|| {
                format!(
                    "kimi has thinking on or off, no effort levels: reasoningEffort `{effort}` \
                     turned thinking on"
                )
            });
            (Some("--thinking"), note)
        }
    }
}

/// Builds the process for one turn of the Kimi CLI at `program`.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut scratch = None;
    let mut command = CommandSpec::new(program);
    for arg in ["--print", "--output-format", "stream-json"] {
        command.arg(arg);
    }
    if let Some(cwd) = &request.cwd {
        command.arg("--work-dir").arg(cwd);
    }
    if let Some(model) = &request.model {
        command.arg("--model").arg(model);
    }
    let (flag, note) = thinking(request);
    if let Some(flag) = flag {
        command.arg(flag);
    }
    if let Some(note) = note {
        warnings.push(Event::warning("reasoning_effort", note));
    }
    // A new session gets its id from the bridge: kimi starts a session under an id it does
    // not know, and otherwise names it only on stderr when it exits. For the same reason a
    // resume of an id kimi does not have is refused here: kimi would answer without history.
    if let Some(id) = &request.session_id
        && crate::sessions::exists(env, request.cwd.as_deref(), id) == Some(false)
    {
        return Err(BuildError {
            code: ErrorCode::Provider,
            message: format!(
                "kimi has no session `{id}` for this working directory (it keeps sessions per \
                 directory under ~/.kimi/sessions); send the turn without a sessionId to start \
                 a new conversation, or with the cwd the session was started in"
            ),
        });
    }
    let session_id = request
        .session_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    command.arg("--session").arg(&session_id);
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let effective = permission_mapper::kimi::effective_print(&requested);
    if let Some(agent) = effective.settings.agent_file() {
        let dir = scratch_dir(crate::ID)?;
        let path = dir.path().join("read-only-agent.yaml");
        std::fs::write(&path, agent)
            .map_err(|e| BuildError::invalid(format!("cannot write the agent file: {e}")))?;
        command.arg("--agent-file").arg(&path);
        scratch = Some(dir);
    }
    for note in effective.notes {
        warnings.push(Event::warning("permission_mode", note.message));
    }
    warnings.extend(attachments_skipped(crate::ID, request));
    set_endpoint_env(&mut command, request, "KIMI_BASE_URL", "KIMI_API_KEY");
    set_env_defaults(&mut command, ENV_DEFAULTS, env);
    command.cwd = request.cwd.clone();
    let turn = stdin_prompt_turn(crate::ID, command, request.message_with_agent_prompt());
    Ok(OneShotTurn {
        turn,
        warnings,
        scratch,
        normalizer: Box::new(KimiNormalizer::new(Some(session_id))),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build(request: serde_json::Value) -> OneShotTurn {
        let request = Request::from_value(request).unwrap();
        build_turn("/opt/kimi".into(), &request, &ProbeEnv::empty()).unwrap()
    }

    #[test]
    fn flags_env_and_the_prompt_on_stdin() {
        let launch = build(json!({
            "message": "-p --yolo hi", "cwd": "/tmp", "model": "mock", "sessionId": "abc-1",
            "reasoningEffort": "high", "permissionMode": "yolo",
            "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "sk-canary-2",
        }));
        assert_eq!(
            launch.args(),
            [
                "--print",
                "--output-format",
                "stream-json",
                "--work-dir",
                "/tmp",
                "--model",
                "mock",
                "--thinking",
                "--session",
                "abc-1",
            ]
        );
        assert_eq!(launch.stdin_prompt(), Some("-p --yolo hi"));
        assert_eq!(launch.env("KIMI_API_KEY").as_deref(), Some("sk-canary-2"));
        assert_eq!(
            launch.env("KIMI_BASE_URL").as_deref(),
            Some("http://127.0.0.1:1/v1")
        );
        assert_eq!(launch.env("KIMI_CLI_NO_AUTO_UPDATE").as_deref(), Some("1"));
        assert!(!launch.args().iter().any(|a| a.contains("sk-canary")));
        assert!(launch.warning_codes().is_empty(), "{:?}", launch.warnings);
    }

    #[test]
    fn read_only_modes_get_a_private_agent_file_without_writing_tools() {
        let launch = build(json!({"message": "hi", "permissionMode": "sandbox"}));
        let args = launch.args();
        // A new session is named by the bridge, so its id is known from the start.
        let at = args.iter().position(|a| a == "--session").unwrap();
        let id = args[at + 1].clone();
        assert_eq!(id.len(), 36);
        assert!(args.windows(2).any(|w| w[0] == "--session" && w[1] == id));
        let at = args.iter().position(|a| a == "--agent-file").unwrap();
        let path = std::path::PathBuf::from(&args[at + 1]);
        let yaml = std::fs::read_to_string(&path).unwrap();
        assert!(yaml.contains("kimi_cli.tools.shell:Shell"), "{yaml}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let dir = path.parent().unwrap();
            let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
        }
        assert!(launch.warning_codes().is_empty());
        drop(launch);
        assert!(!path.exists(), "the agent file goes with the turn");
    }

    #[test]
    fn what_print_mode_cannot_honour_is_reported() {
        let launch = build(json!({
            "message": "hi", "reasoningEffort": "low",
            "attachments": [{"fileName": "a.png", "mediaType": "image/png", "data": "AAAA"}],
        }));
        assert_eq!(
            launch.warning_codes(),
            ["reasoning_effort", "permission_mode", "attachment_skipped"]
        );
        let off = build(
            json!({"message": "hi", "disableThinking": true, "reasoningEffort": "high", "permissionMode": "yolo"}),
        );
        assert_eq!(off.args()[3], "--no-thinking");
    }
}
