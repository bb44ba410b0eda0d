//! The `json` transport: Qwen Code's one-shot stream-json mode.
//!
//! ```text
//! qwen --output-format stream-json --include-partial-messages [--auth-type openai]
//!      [--model <m>] [--resume <sessionId>] --approval-mode <mapped>
//!      [--append-system-prompt <agentPrompt>]                             < prompt
//! ```
//!
//! * the prompt goes to stdin (Qwen Code reads piped stdin as the one-shot prompt), never into
//!   argv, so a prompt starting with `-` stays text; stdin is closed after it;
//! * `baseUrl` → `OPENAI_BASE_URL`, `apiKey` → `OPENAI_API_KEY` (child only); `--auth-type
//!   openai` is passed when either is given or `OPENAI_API_KEY` is set, otherwise Qwen Code's
//!   own configured auth applies;
//! * `permissionMode` → `--approval-mode` ([`permission_mapper::qwen`]): headless Qwen Code
//!   refuses the tools that need approval instead of asking, and a `permission_mode` warning
//!   says so for the modes that would ask;
//! * an unknown `--resume` id exits 1 with `No saved session found with ID …` on stderr and no
//!   stdout: reported as an early exit carrying that text;
//! * the output is Claude-shaped stream-json, normalized by the Claude normalizer with
//!   [`DIALECT`]: one `assistant` line per content block, each with its own uuid; no
//!   `message_delta`; **API errors arrive as assistant text `[API Error: …]`** with
//!   `result.is_error:false` and exit 0: the dialect takes them out of the text and fails the
//!   turn with them;
//! * `reasoningEffort` and attachments have no headless flag: warned about and ignored.

use std::path::PathBuf;

use bridge_claude_stream::normalize::{self as claude, ClaudeNormalizer, Dialect};
use bridge_core::event::{Event, FileDiff, ToolKind};
use bridge_core::process::CommandSpec;
use bridge_core::request::Request;
use bridge_one_shot::{BuildError, OneShot, OneShotTurn, set_endpoint_env, stdin_prompt_turn};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;
use serde_json::Value;

/// Normalized kind of a Qwen Code tool (Claude Code's names, which Qwen Code accepts as
/// aliases, are known too).
///
/// ```
/// use bridge_channel_qwen::json::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("run_shell_command"), ToolKind::Execute);
/// assert_eq!(tool_kind("Bash"), ToolKind::Execute);
/// assert_eq!(tool_kind("write_file"), ToolKind::Edit);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "read_many_files" => ToolKind::Read,
        "edit" | "replace" | "write_file" => ToolKind::Edit,
        "run_shell_command" => ToolKind::Execute,
        "grep_search" | "glob" | "list_directory" | "tool_search" => ToolKind::Search,
        "web_fetch" | "web_search" => ToolKind::Fetch,
        "todo_write" | "agent" | "task" | "save_memory" => ToolKind::Think,
        "exit_plan_mode" => ToolKind::SwitchMode,
        other => claude::tool_kind(other),
    }
}

/// The file change of an `edit` (`file_path`, `old_string`, `new_string`) or `write_file`
/// (`file_path`, `content`) call: Claude Code's Edit and Write inputs.
fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let claude_name = match name {
        "edit" | "replace" => "Edit",
        "write_file" => "Write",
        other => other,
    };
    claude::tool_diff(claude_name, input)
}

/// How Qwen Code's stream-json differs from Claude Code's.
pub const DIALECT: Dialect = Dialect {
    cli: "qwen",
    display_name: "Qwen Code",
    tool_kind,
    tool_diff,
    ids_per_block: true,
    api_error_marker: Some("[API Error: "),
};

/// The `json` transport's declaration.
pub const ONE_SHOT: OneShot = OneShot::new(crate::PROBE, build_turn);

/// Builds the process for one turn, plus warnings about what could not be honoured exactly.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut command = CommandSpec::new(program);
    for arg in [
        "--output-format",
        "stream-json",
        "--include-partial-messages",
    ] {
        command.arg(arg);
    }
    let openai_key = request.api_key.is_some()
        || request.base_url.is_some()
        || env.var_non_empty("OPENAI_API_KEY").is_some();
    if openai_key {
        command.arg("--auth-type").arg("openai");
    }
    if let Some(model) = request.model.as_deref().filter(|m| !m.trim().is_empty()) {
        command.arg("--model").arg(model);
    }
    if let Some(id) = &request.session_id {
        command.arg("--resume").arg(id);
    }
    let effective = permission_mapper::qwen::effective(&RequestedMode::from_option(
        request.permission_mode.as_deref(),
    ));
    for arg in effective.settings.args() {
        command.arg(arg);
    }
    for note in effective.notes {
        warnings.push(Event::warning("permission_mode", note.message));
    }
    if let Some(prompt) = request.instructions() {
        command.arg("--append-system-prompt").arg(prompt);
    }
    if let Some(effort) = &request.reasoning_effort {
        warnings.push(Event::warning(
            "reasoning_effort",
            format!(
                "Qwen Code has no reasoning-effort flag; reasoningEffort `{effort}` is ignored"
            ),
        ));
    }
    if !request.attachments.is_empty() {
        warnings.push(Event::warning(
            "attachment_skipped",
            "Qwen Code's one-shot JSON mode takes a text prompt only; the attachments were not sent (the ACP transport sends them)",
        ));
    }
    set_endpoint_env(&mut command, request, "OPENAI_BASE_URL", "OPENAI_API_KEY");
    command.cwd = request.cwd.clone();
    Ok(OneShotTurn {
        turn: stdin_prompt_turn(crate::ID, command, request.message.clone()),
        normalizer: Box::new(ClaudeNormalizer::with_dialect(&DIALECT)),
        warnings,
        scratch: None,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use serde_json::json;

    use super::*;

    fn build(request: Value, env: &ProbeEnv) -> (Vec<String>, OneShotTurn) {
        let request = Request::from_value(request).unwrap();
        let built = build_turn("/opt/qwen".into(), &request, env).unwrap();
        (built.args(), built)
    }

    #[test]
    fn a_plain_turn_streams_json_and_sends_the_prompt_on_stdin() {
        let (args, built) = build(
            json!({"message": "-y hi", "cwd": "/tmp"}),
            &ProbeEnv::empty(),
        );
        assert_eq!(
            args,
            [
                "--output-format",
                "stream-json",
                "--include-partial-messages",
                "--approval-mode",
                "default"
            ]
        );
        assert_eq!(built.stdin_prompt(), Some("-y hi"));
        // Default mode cannot ask headless: said so.
        assert_eq!(built.warning_codes(), ["permission_mode"]);
    }

    #[test]
    fn endpoint_key_model_resume_and_mode_map_to_flags_and_env() {
        let (args, built) = build(
            json!({
                "message": "hi", "model": "qwen3-coder", "sessionId": "s-1",
                "permissionMode": "bypassPermissions", "agentPrompt": "Be brief.",
                "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-secret-canary",
            }),
            &ProbeEnv::empty(),
        );
        assert_eq!(
            args,
            [
                "--output-format",
                "stream-json",
                "--include-partial-messages",
                "--auth-type",
                "openai",
                "--model",
                "qwen3-coder",
                "--resume",
                "s-1",
                "--approval-mode",
                "yolo",
                "--append-system-prompt",
                "Be brief.",
            ]
        );
        assert!(!args.iter().any(|a| a.contains("sk-secret")));
        let env = &built.turn.command.env;
        assert!(env.contains(&(
            OsString::from("OPENAI_BASE_URL"),
            OsString::from("http://127.0.0.1:9/v1")
        )));
        assert!(env.contains(&(
            OsString::from("OPENAI_API_KEY"),
            OsString::from("sk-secret-canary")
        )));
        assert!(built.warning_codes().is_empty());
    }

    #[test]
    fn an_inherited_openai_key_selects_the_openai_auth_type() {
        let env = ProbeEnv::empty().with_var("OPENAI_API_KEY", "sk-x");
        let (args, _) = build(json!({"message": "hi", "permissionMode": "sandbox"}), &env);
        assert_eq!(args[3..5], ["--auth-type", "openai"]);
        assert_eq!(args[5..], ["--approval-mode", "default"]);
    }

    #[test]
    fn unsupported_fields_are_warned_about() {
        let (_, built) = build(
            json!({
                "message": "hi", "permissionMode": "yolo", "reasoningEffort": "high",
                "attachments": [{"mediaType": "image/png", "data": "iVBORw0KGgo="}],
            }),
            &ProbeEnv::empty(),
        );
        assert_eq!(
            built.warning_codes(),
            ["reasoning_effort", "attachment_skipped"]
        );
    }
}
