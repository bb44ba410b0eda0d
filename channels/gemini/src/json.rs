//! Gemini CLI headless `--output-format stream-json` output → [`Event`]s.
//!
//! Facts this relies on (Gemini CLI 0.61.0: its bundled `nonInteractiveCli`, the captures
//! `tests/corpus/gemini/<version>/*.stdout` and `shared/reference/real-clis-anthropic-gemini.md` §3):
//!
//! * one JSON object per line: `init {session_id, model}` first, then the prompt echoed as
//!   `message {role:"user"}`, the answer as `message {role:"assistant", content, delta:true}`
//!   pieces (no message ids, no "message end"), `tool_use {tool_name, tool_id, parameters}`,
//!   `tool_result {tool_id, status:"success"|"error", output?, error?:{type, message}}`,
//!   `error {severity:"warning"|"error", message}` and, last, `result {status, error?, stats}`;
//! * **thinking is not in the stream** (the CLI drops thought parts; the ACP transport shows
//!   them);
//! * the turn's outcome is the `result` line: `status:"success"` is the only success. An API
//!   error gives `result {status:"error", error:{message:"[API Error: …]"}}` and exits with
//!   the HTTP status mod 256, but a stream that breaks mid-answer gives `error {severity:
//!   "error"}`, `result {status:"error"}` and **exit 0**; an `error` of severity `error`
//!   therefore fails the turn even if a `result` says success after it (`Maximum session
//!   turns exceeded` does that);
//! * startup failures print nothing on stdout and exit non-zero with the reason on stderr
//!   (41 `Invalid auth method selected.`, 42 `Error resuming session: Invalid session
//!   identifier …`, 55 untrusted folder): [`Normalizer::finish`] reports the exit, the reason
//!   and the stderr tail; the auth case also says how to fix it;
//! * a tool the approval mode would have to confirm is not offered to the model in headless
//!   mode: a call to it ends as `tool_result {status:"error", error:{type:"tool_not_registered"}}`
//!   and the turn goes on. The bridge shows that as a failed tool result plus a
//!   `permission_denied` warning;
//! * after an internal retry the CLI repeats the deltas it had already printed, without any
//!   marker (nothing can undo them here; the ACP transport has the same behaviour);
//! * `result.stats` totals the turn's tokens over every model the CLI called (its router
//!   included): `input_tokens` (prompt), `cached`, `input` (prompt minus cached),
//!   `output_tokens`. They become one turn-scope [`Usage`].
//!
//! Tools are shown under Claude's names (as the ACP transport does): `run_shell_command` →
//! `Bash`, `read_file` → `Read`, `write_file` → `Write`, `replace` → `Edit`, `glob` → `Glob`,
//! `grep_search` → `Grep`, `list_directory` → `LS`, `web_fetch` → `WebFetch`,
//! `google_web_search` → `WebSearch`; Gemini's parameter names (`command`, `file_path`,
//! `content`, `old_string`, `new_string`) are already Claude's.

use std::process::ExitStatus;

use bridge_core::event::{
    ErrorCode, Event, FileDiff, StopReason, ToolKind, ToolResult, ToolUse, TurnEnd, Usage,
    UsageScope,
};
use bridge_core::normalize::{ExitTurn, fail_turn, json_object, str_at};
use bridge_core::turn::Normalizer;
use serde_json::{Map, Value, json};

/// What the CLI prints on stderr (exit 41) when `GOOGLE_GEMINI_BASE_URL` is set and no auth
/// type is configured: it then picks the `gateway` type, which headless mode rejects.
pub const AUTH_TYPE_ERROR: &str = "Invalid auth method selected.";

/// The fix for [`AUTH_TYPE_ERROR`].
pub const AUTH_TYPE_HINT: &str = "Gemini CLI's headless mode needs an auth type when a base URL is set \
     (GOOGLE_GEMINI_BASE_URL / `baseUrl` makes it choose `gateway`, which it rejects): add \
     {\"security\":{\"auth\":{\"selectedType\":\"gemini-api-key\"}}} to ~/.gemini/settings.json, or \
     use the acp transport";

/// The start of the CLI's stderr report of a `--resume` id it cannot find (exit 42).
pub const RESUME_ERROR_PREFIX: &str = "Error resuming session:";

/// The start of the CLI's stderr report of an untrusted folder (exit 55).
pub const UNTRUSTED_PREFIX: &str = "Gemini CLI is not running in a trusted directory";

/// Normalizer state for one `gemini -p … --output-format stream-json` process.
#[derive(Debug, Default)]
pub struct GeminiJsonNormalizer {
    session_id: Option<String>,
    announced_session: bool,
    turn: ExitTurn,
    /// The assistant text since the last tool call (the turn's result).
    text: String,
    /// A tool ran since the last text: the next text starts a new block.
    after_tool: bool,
    any_text: bool,
    /// Error-severity `error` lines: they fail the turn whatever `result` says.
    stream_error: Option<String>,
    ended: bool,
}

fn u64_at(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// Normalized kind of a Gemini CLI tool.
///
/// ```
/// use bridge_channel_gemini::json::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("run_shell_command"), ToolKind::Execute);
/// assert_eq!(tool_kind("replace"), ToolKind::Edit);
/// assert_eq!(tool_kind("some_mcp_tool"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "read_many_files" => ToolKind::Read,
        "write_file" | "replace" | "edit" => ToolKind::Edit,
        "run_shell_command" => ToolKind::Execute,
        "glob" | "grep_search" | "search_file_content" | "list_directory" => ToolKind::Search,
        "web_fetch" | "google_web_search" => ToolKind::Fetch,
        "write_todos" | "enter_plan_mode" | "update_topic" | "save_memory" => ToolKind::Think,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The Claude tool name plugins render a Gemini tool as (its own name when Claude has none).
///
/// ```
/// use bridge_channel_gemini::json::claude_name;
/// assert_eq!(claude_name("run_shell_command"), "Bash");
/// assert_eq!(claude_name("invoke_agent"), "invoke_agent");
/// ```
pub fn claude_name(name: &str) -> &str {
    match name {
        "run_shell_command" => "Bash",
        "read_file" => "Read",
        "write_file" => "Write",
        "replace" | "edit" => "Edit",
        "glob" => "Glob",
        "grep_search" | "search_file_content" => "Grep",
        "list_directory" => "LS",
        "web_fetch" => "WebFetch",
        "google_web_search" => "WebSearch",
        "write_todos" => "TodoWrite",
        "exit_plan_mode" => "ExitPlanMode",
        other => other,
    }
}

/// The Claude-shaped input: Gemini's parameters plus `file_path` where Gemini says
/// `absolute_path` / `dir_path`, and the Gemini tool name under `gemini_tool`.
fn claude_input(name: &str, parameters: &Value) -> Value {
    let mut input: Map<String, Value> = match parameters {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("input".into(), other.clone());
            map
        }
    };
    if !input.contains_key("file_path")
        && let Some(path) = ["absolute_path", "path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
    {
        let path = path.to_string();
        input.insert("file_path".into(), json!(path));
    }
    if name == "list_directory"
        && !input.contains_key("path")
        && let Some(dir) = input.get("dir_path").cloned()
    {
        input.insert("path".into(), dir);
    }
    if claude_name(name) != name {
        input.insert("gemini_tool".into(), json!(name));
    }
    Value::Object(input)
}

fn tool_diff(name: &str, parameters: &Value) -> Option<FileDiff> {
    let path = str_at(parameters, "file_path")?.to_string();
    let text = |key: &str| str_at(parameters, key).map(str::to_string);
    match name {
        "write_file" => Some(FileDiff {
            path,
            old_text: None,
            new_text: text("content"),
        }),
        "replace" | "edit" => Some(FileDiff {
            path,
            old_text: text("old_string"),
            new_text: text("new_string"),
        }),
        _ => None,
    }
}

/// `line` without ANSI color sequences (`ESC [ … letter`): the CLI colors some stderr reports.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The turn usage from `result.stats`, or `None` when it counted nothing (failed turns).
fn stats_usage(stats: &Value) -> Option<Usage> {
    let prompt = u64_at(stats, "input_tokens").unwrap_or(0);
    let cached = u64_at(stats, "cached").unwrap_or(0);
    let input = u64_at(stats, "input").unwrap_or(prompt.saturating_sub(cached));
    let output = u64_at(stats, "output_tokens").unwrap_or(0);
    if prompt + cached + input + output == 0 {
        return None;
    }
    Some(Usage {
        scope: UsageScope::Turn,
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: 0,
        reasoning_tokens: None,
        cost_usd: None,
        context_window: None,
        context_tokens: None,
    })
}

impl GeminiJsonNormalizer {
    /// A normalizer for one process. `resumed` is the session id the turn resumes, reported
    /// with a failure that happens before the CLI printed its `init` line.
    pub fn new(resumed: Option<String>) -> Self {
        GeminiJsonNormalizer {
            session_id: resumed,
            ..GeminiJsonNormalizer::default()
        }
    }

    /// What the stream said about the outcome so far.
    pub fn outcome(&self) -> &ExitTurn {
        &self.turn
    }

    fn end(&mut self, out: &mut Vec<Event>, result: &Value) {
        self.ended = true;
        if let Some(usage) = result.get("stats").and_then(stats_usage) {
            out.push(Event::Usage(usage));
        }
        let reported = result
            .get("error")
            .and_then(|e| str_at(e, "message"))
            .map(str::to_string);
        let failure = match (str_at(result, "status"), &self.stream_error) {
            (_, Some(error)) => Some(reported.unwrap_or_else(|| error.clone())),
            (Some("success"), None) => None,
            (status, None) => Some(reported.unwrap_or_else(|| {
                format!(
                    "Gemini CLI ended the turn with status {}",
                    status.unwrap_or("(none)")
                )
            })),
        };
        match failure {
            None => out.push(Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: StopReason::EndTurn,
                session_id: self.session_id.clone(),
                result: Some(self.text.clone()),
                error: None,
            })),
            Some(message) => fail_turn(ErrorCode::Provider, message, self.session_id.clone(), out),
        }
    }

    fn tool_result(&mut self, value: &Value, out: &mut Vec<Event>) {
        let id = str_at(value, "tool_id").unwrap_or("").to_string();
        let is_error = str_at(value, "status") != Some("success");
        let error = value.get("error");
        let error_message = error.and_then(|e| str_at(e, "message"));
        let content = match (str_at(value, "output"), error_message) {
            (Some(output), _) if !output.is_empty() => output.to_string(),
            (_, Some(message)) if is_error => message.to_string(),
            (Some(output), _) => output.to_string(),
            _ => String::new(),
        };
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id,
            content: Value::String(content),
            is_error,
        }));
        let kind = error.and_then(|e| str_at(e, "type"));
        if let Some(kind @ ("tool_not_registered" | "policy_violation" | "permission_denied")) =
            kind
        {
            out.push(Event::warning(
                "permission_denied",
                format!(
                    "Gemini CLI refused the tool call ({kind}): {}. In headless (JSON) mode tools \
                     that need an approval are not available; use permissionMode \
                     bypassPermissions/yolo (or acceptEdits for edits), or the acp transport for \
                     interactive approvals",
                    error_message.unwrap_or("no reason given")
                ),
            ));
        }
        self.after_tool = true;
    }
}

impl Normalizer for GeminiJsonNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        let Some(value) = json_object(line) else {
            self.turn.unparsed_line("gemini", line, out);
            return;
        };
        match str_at(&value, "type") {
            Some("init") => {
                if let Some(id) = str_at(&value, "session_id").filter(|id| !id.is_empty()) {
                    if !self.announced_session || self.session_id.as_deref() != Some(id) {
                        out.push(Event::SessionId { id: id.to_string() });
                    }
                    self.announced_session = true;
                    self.session_id = Some(id.to_string());
                }
            }
            Some("message") if str_at(&value, "role") == Some("assistant") => {
                let Some(text) = str_at(&value, "content").filter(|t| !t.is_empty()) else {
                    return;
                };
                if self.after_tool {
                    self.after_tool = false;
                    self.text.clear();
                    if self.any_text {
                        out.push(Event::BlockReset);
                    }
                }
                self.any_text = true;
                self.text.push_str(text);
                out.push(Event::TextDelta {
                    text: text.to_string(),
                });
            }
            Some("tool_use") => {
                let name = str_at(&value, "tool_name").unwrap_or("tool");
                let parameters = value.get("parameters").cloned().unwrap_or(Value::Null);
                out.push(Event::ToolUse(ToolUse {
                    id: str_at(&value, "tool_id").unwrap_or("").to_string(),
                    name: claude_name(name).to_string(),
                    kind: tool_kind(name),
                    diff: tool_diff(name, &parameters),
                    input: claude_input(name, &parameters),
                }));
                self.after_tool = true;
            }
            Some("tool_result") => self.tool_result(&value, out),
            Some("error") => {
                let message = str_at(&value, "message").unwrap_or("").to_string();
                if str_at(&value, "severity") == Some("warning") {
                    out.push(Event::warning("provider_warning", message));
                } else {
                    let message = if message.trim().is_empty() {
                        "Gemini CLI reported an error without a message".to_string()
                    } else {
                        message
                    };
                    self.turn.error(message.clone());
                    self.stream_error = Some(message);
                }
            }
            Some("result") => self.end(out, &value),
            // The echoed prompt, and types a later CLI may add.
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    fn stderr_line(&mut self, line: &str, _out: &mut Vec<Event>) {
        let line = strip_ansi(line);
        let line = line.trim();
        if line.contains(AUTH_TYPE_ERROR) {
            self.turn
                .error(format!("Gemini CLI: {AUTH_TYPE_ERROR} {AUTH_TYPE_HINT}"));
        } else if line.starts_with(RESUME_ERROR_PREFIX) || line.starts_with(UNTRUSTED_PREFIX) {
            // Only the first reason: the lines after it are advice the stderr tail keeps.
            if self.turn.error_message().is_none() {
                // "No previous sessions found for this project." does not name the id.
                let message = match (&self.session_id, line.starts_with(RESUME_ERROR_PREFIX)) {
                    (Some(id), true) if !self.announced_session => {
                        format!("Gemini CLI cannot resume session {id}: {line}")
                    }
                    _ => format!("Gemini CLI: {line}"),
                };
                self.turn.error(message);
            }
        }
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        self.turn
            .finish("gemini", exit, self.session_id.clone(), out);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use bridge_core::normalize::{run_lines, turn_end};

    use super::*;

    fn run(lines: &[&str], stderr: &[&str], exit: i32) -> Vec<Event> {
        // The normalizer ignores whatever follows its `result` line.
        run_lines(&mut GeminiJsonNormalizer::new(None), lines, stderr, exit)
    }

    const INIT: &str = r#"{"type":"init","session_id":"s-1","model":"auto"}"#;

    #[test]
    fn an_error_line_fails_the_turn_even_when_the_result_says_success() {
        let events = run(
            &[
                INIT,
                r#"{"type":"message","role":"assistant","content":"Hi","delta":true}"#,
                r#"{"type":"error","severity":"error","message":"Maximum session turns exceeded"}"#,
                r#"{"type":"result","status":"success","stats":{}}"#,
            ],
            &[],
            0,
        );
        let end = turn_end(&events);
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("Maximum session turns exceeded"));
        assert_eq!(end.session_id.as_deref(), Some("s-1"));
    }

    #[test]
    fn warnings_do_not_fail_the_turn_and_text_after_a_tool_is_the_result() {
        let events = run(
            &[
                INIT,
                r#"{"type":"message","role":"assistant","content":"Let me look.","delta":true}"#,
                r#"{"type":"tool_use","tool_name":"replace","tool_id":"t1","parameters":{"file_path":"/p/a.rs","old_string":"a","new_string":"b"}}"#,
                r#"{"type":"tool_result","tool_id":"t1","status":"success"}"#,
                r#"{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}"#,
                r#"{"type":"message","role":"assistant","content":"Done.","delta":true}"#,
                r#"{"type":"result","status":"success","stats":{"input_tokens":10,"cached":4,"input":6,"output_tokens":2}}"#,
            ],
            &[],
            0,
        );
        let end = turn_end(&events);
        assert!(end.success, "{events:?}");
        assert_eq!(end.result.as_deref(), Some("Done."));
        assert!(events.contains(&Event::BlockReset));
        let tool = events
            .iter()
            .find_map(|e| match e {
                Event::ToolUse(t) => Some(t),
                _ => None,
            })
            .unwrap();
        assert_eq!((tool.name.as_str(), tool.kind), ("Edit", ToolKind::Edit));
        assert_eq!(tool.diff.as_ref().unwrap().old_text.as_deref(), Some("a"));
        assert_eq!(tool.input["gemini_tool"], "replace");
        assert!(events.iter().any(|e| matches!(e, Event::Usage(u)
            if u.input_tokens == 6 && u.cache_read_input_tokens == 4 && u.output_tokens == 2)));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Warning { code, .. } if code == "provider_warning"))
        );
    }

    #[test]
    fn a_stream_without_a_result_is_an_error_even_with_exit_zero() {
        let events = run(
            &[
                INIT,
                r#"{"type":"message","role":"assistant","content":"Hel","delta":true}"#,
            ],
            &[],
            0,
        );
        let end = turn_end(&events);
        assert!(!end.success);
        assert!(
            end.error
                .as_deref()
                .unwrap()
                .contains("before finishing the turn")
        );
    }

    #[test]
    fn startup_failures_name_the_reason_from_stderr() {
        let events = run(
            &[],
            &["\u{1b}[31mInvalid auth method selected.\u{1b}[0m"],
            41,
        );
        let error = turn_end(&events).error.clone().unwrap();
        assert!(
            error.contains("selectedType") && error.contains("gemini-api-key"),
            "{error}"
        );

        // Gemini CLI 0.61.0's report of an untrusted folder (what the channel's --skip-trust
        // avoids), exit 55.
        let untrusted = format!(
            "\u{1b}[31m{UNTRUSTED_PREFIX}. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.\u{1b}[0m"
        );
        let events = run(&[], &[untrusted.as_str()], 55);
        let error = turn_end(&events).error.clone().unwrap();
        assert!(error.contains(UNTRUSTED_PREFIX), "{error}");

        let mut normalizer = GeminiJsonNormalizer::new(Some("0000-1".into()));
        let mut out = Vec::new();
        normalizer.stderr_line(
            "Error resuming session: Invalid session identifier \"0000-1\".",
            &mut out,
        );
        normalizer.stderr_line("  Use --list-sessions to see available sessions", &mut out);
        normalizer.finish(Some(&ExitStatus::from_raw(42 << 8)), &mut out);
        let end = turn_end(&out);
        assert!(!end.success);
        assert_eq!(end.session_id.as_deref(), Some("0000-1"));
        assert_eq!(
            end.error.as_deref(),
            Some(
                "Gemini CLI cannot resume session 0000-1: Error resuming session: Invalid session identifier \"0000-1\"."
            )
        );
    }

    #[test]
    fn lines_after_the_result_are_ignored_and_plain_lines_are_reported() {
        let mut normalizer = GeminiJsonNormalizer::new(None);
        let mut out = Vec::new();
        normalizer.line("Loaded cached credentials.", &mut out);
        normalizer.line(INIT, &mut out);
        normalizer.line(
            r#"{"type":"result","status":"success","stats":{}}"#,
            &mut out,
        );
        let len = out.len();
        normalizer.line(
            r#"{"type":"message","role":"assistant","content":"late","delta":true}"#,
            &mut out,
        );
        normalizer.finish(Some(&ExitStatus::from_raw(0)), &mut out);
        assert_eq!(out.len(), len);
        assert!(matches!(&out[0], Event::Warning { code, .. } if code == "unparsed_line"));
        assert!(
            matches!(out.last(), Some(Event::TurnEnd(end)) if end.success && end.result.as_deref() == Some(""))
        );
    }
}
