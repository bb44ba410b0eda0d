//! Copilot CLI `--output-format json` output → [`Event`]s.
//!
//! Facts this relies on (Copilot CLI 1.0.102, BYOK; `shared/reference/real-clis-anthropic-gemini.md`
//! §5 and the e2e tests):
//!
//! * every line is `{"type", "data", "id", "timestamp", "parentId"[, "ephemeral"]}`;
//! * text streams as `assistant.message_delta {messageId, deltaContent}` after an
//!   `assistant.message_start`; each model call (and each retry) gets a new `messageId`; the
//!   complete `assistant.message {content, toolRequests}` follows;
//! * reasoning streams as `assistant.reasoning_delta {reasoningId, deltaContent}`, then
//!   `assistant.reasoning {content}` (the whole text);
//! * tools: `tool.execution_start {toolCallId, toolName, arguments}` and
//!   `tool.execution_complete {success, result:{content}, error:{message, code}}`; a call that
//!   needed an approval nobody could give fails with `code:"denied"` and the turn goes on;
//! * retries: `session.info {infoType:"model_retry", message}` (plus `assistant.turn_retry`)
//!   after the failed call's `model.call_failure {statusCode}`; where no `session.info` comes
//!   (Copilot CLI 1.0.92 never sends one, 1.0.102 not for a 429) the next attempt's
//!   `model.call_start` after a `model.call_failure` is reported as the retry;
//! * a failed turn ends with `session.error {errorType, message, statusCode}` and
//!   `result.exitCode:1` (process exit 1);
//! * the **session id only appears in the last line**, `result {sessionId, exitCode, usage}`
//!   (the channel presets it with `--session-id`, so it is known from the start).
//!
//! The `result` line ends the turn: a success only with `exitCode` 0 and no `session.error`. A
//! stream that ends without it is decided at exit ([`ExitTurn`]): a failure either way.

use std::collections::{HashMap, HashSet};
use std::process::ExitStatus;

use bridge_core::event::{
    ErrorCode, Event, FileDiff, Status, StatusKind, StopReason, ToolKind, ToolResult, ToolUse,
    TurnEnd,
};
use bridge_core::normalize::{ExitTurn, fail_turn, json_object, str_at};
use bridge_core::turn::Normalizer;
use serde_json::Value;

/// Normalized kind of a Copilot CLI tool.
///
/// ```
/// use bridge_channel_copilot::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("bash"), ToolKind::Execute);
/// assert_eq!(tool_kind("view"), ToolKind::Read);
/// assert_eq!(tool_kind("my_mcp_tool"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "view" | "read_bash" | "list_bash" | "read_agent" | "list_agents" => ToolKind::Read,
        "edit" | "create" | "apply_patch" | "str_replace_editor" => ToolKind::Edit,
        "bash" | "shell" | "powershell" | "write_bash" | "stop_bash" => ToolKind::Execute,
        "grep" | "glob" | "rg" => ToolKind::Search,
        "web_fetch" | "fetch_copilot_cli_documentation" => ToolKind::Fetch,
        "task" | "report_intent" | "update_todo" | "think" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The file change of an `edit` (`path`, `old_str`, `new_str`) or `create` (`path`,
/// `file_text`) call.
fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = str_at(input, "path")?.to_string();
    let text = |key: &str| str_at(input, key).map(str::to_string);
    let (old_text, new_text) = match name {
        "edit" => (text("old_str"), text("new_str")),
        "create" => (None, text("file_text")),
        _ => return None,
    };
    Some(FileDiff {
        path,
        old_text,
        new_text,
    })
}

/// Normalizer state for one Copilot CLI process.
#[derive(Debug, Default)]
pub struct CopilotNormalizer {
    session_id: Option<String>,
    emitted_session_id: bool,
    turn: ExitTurn,
    /// The message being streamed, and whether any of its text arrived as deltas.
    message_id: Option<String>,
    message_streamed: bool,
    /// Reasoning ids that streamed deltas (their `assistant.reasoning` repeats them).
    reasoning_streamed: HashSet<String>,
    tools: HashMap<String, String>,
    tools_finished: HashSet<String>,
    last_text: Option<String>,
    ended: bool,
    /// A `model.call_failure` not yet reported as a retry (its HTTP status, if any).
    failed_call: Option<Option<u64>>,
}

impl CopilotNormalizer {
    /// A fresh normalizer.
    pub fn new() -> Self {
        CopilotNormalizer::default()
    }

    /// A normalizer for a process whose session id is known before it starts (preset with
    /// `--session-id`, or resumed): the id is reported with the first line.
    pub fn with_session(id: impl Into<String>) -> Self {
        CopilotNormalizer {
            session_id: Some(id.into()),
            ..CopilotNormalizer::default()
        }
    }

    fn emit_session(&mut self, out: &mut Vec<Event>) {
        if let Some(id) = &self.session_id
            && !self.emitted_session_id
        {
            self.emitted_session_id = true;
            out.push(Event::SessionId { id: id.clone() });
        }
    }

    fn announce(&mut self, id: &str, name: &str, input: &Value, out: &mut Vec<Event>) {
        if id.is_empty() || self.tools.contains_key(id) {
            return;
        }
        self.tools.insert(id.to_string(), name.to_string());
        out.push(Event::ToolUse(ToolUse {
            id: id.to_string(),
            name: name.to_string(),
            kind: tool_kind(name),
            input: input.clone(),
            diff: tool_diff(name, input),
        }));
    }

    fn tool_complete(&mut self, data: &Value, out: &mut Vec<Event>) {
        let id = str_at(data, "toolCallId").unwrap_or_default();
        if id.is_empty() || !self.tools_finished.insert(id.to_string()) {
            return;
        }
        let success = data.get("success").and_then(Value::as_bool) == Some(true);
        let error = data.get("error");
        let content = if success {
            data.pointer("/result/content")
                .cloned()
                .unwrap_or(Value::String(String::new()))
        } else {
            let message = error
                .and_then(|e| str_at(e, "message"))
                .or_else(|| data.pointer("/result/content").and_then(Value::as_str))
                .unwrap_or("the tool failed");
            Value::String(message.to_string())
        };
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id.to_string(),
            content,
            is_error: !success,
        }));
        if error.and_then(|e| str_at(e, "code")) == Some("denied") {
            let tool = self.tools.get(id).map(String::as_str).unwrap_or("a tool");
            out.push(Event::warning(
                "permission_denied",
                format!("permission to use {tool} was denied"),
            ));
        }
    }

    fn assistant_message(&mut self, data: &Value, out: &mut Vec<Event>) {
        let content = str_at(data, "content").unwrap_or_default();
        let same = self.message_id.as_deref() == str_at(data, "messageId");
        if !content.is_empty() {
            // A message that was not streamed (streaming off, or a provider without deltas).
            if !(same && self.message_streamed) {
                out.push(Event::BlockReset);
                out.push(Event::TextDelta {
                    text: content.to_string(),
                });
            }
            self.last_text = Some(content.to_string());
        }
        self.message_id = None;
        self.message_streamed = false;
        for request in data
            .get("toolRequests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = str_at(request, "toolCallId").unwrap_or_default();
            let name = str_at(request, "name").unwrap_or("tool");
            let input = request.get("arguments").cloned().unwrap_or(Value::Null);
            self.announce(id, name, &input, out);
        }
    }

    fn result(&mut self, line: &Value, out: &mut Vec<Event>) {
        if let Some(id) = str_at(line, "sessionId").filter(|id| !id.is_empty()) {
            if self.session_id.as_deref() != Some(id) {
                self.emitted_session_id = false;
            }
            self.session_id = Some(id.to_string());
            self.emit_session(out);
        }
        let code = line.get("exitCode").and_then(Value::as_i64);
        let error = match (self.turn.error_message(), code) {
            (Some(error), _) => Some(error.to_string()),
            (None, Some(0)) => None,
            (None, Some(code)) => Some(format!("Copilot CLI ended the turn with exit code {code}")),
            (None, None) => Some("Copilot CLI ended the turn without an exit code".into()),
        };
        self.ended = true;
        match error {
            Some(message) => fail_turn(ErrorCode::Provider, message, self.session_id.clone(), out),
            None => out.push(Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: StopReason::EndTurn,
                session_id: self.session_id.clone(),
                result: self.last_text.clone(),
                error: None,
            })),
        }
    }
}

/// A retry status with `message`.
fn retry(message: String) -> Event {
    Event::Status(Status {
        kind: StatusKind::Retry,
        message,
        attempt: None,
        max_attempts: None,
    })
}

impl Normalizer for CopilotNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        self.emit_session(out);
        let Some(value) = json_object(line) else {
            self.turn.unparsed_line("copilot", line, out);
            return;
        };
        let data = value.get("data").unwrap_or(&Value::Null);
        match str_at(&value, "type") {
            Some("assistant.message_start") => {
                self.message_id = str_at(data, "messageId").map(str::to_string);
                self.message_streamed = false;
                out.push(Event::BlockReset);
            }
            Some("assistant.message_delta") => {
                if let Some(text) = str_at(data, "deltaContent").filter(|t| !t.is_empty()) {
                    self.message_streamed = true;
                    out.push(Event::TextDelta { text: text.into() });
                }
            }
            Some("assistant.reasoning_delta") => {
                if let Some(text) = str_at(data, "deltaContent").filter(|t| !t.is_empty()) {
                    if let Some(id) = str_at(data, "reasoningId") {
                        self.reasoning_streamed.insert(id.to_string());
                    }
                    out.push(Event::ThinkingDelta { text: text.into() });
                }
            }
            Some("assistant.reasoning") => {
                let streamed = str_at(data, "reasoningId")
                    .is_some_and(|id| self.reasoning_streamed.contains(id));
                if let Some(text) = str_at(data, "content").filter(|t| !t.is_empty())
                    && !streamed
                {
                    out.push(Event::ThinkingDelta { text: text.into() });
                }
            }
            Some("assistant.message") => self.assistant_message(data, out),
            Some("tool.execution_start") => {
                let id = str_at(data, "toolCallId").unwrap_or_default();
                let name = str_at(data, "toolName").unwrap_or("tool");
                let input = data.get("arguments").cloned().unwrap_or(Value::Null);
                self.announce(id, name, &input, out);
            }
            Some("tool.execution_complete") => self.tool_complete(data, out),
            Some("session.info") if str_at(data, "infoType") == Some("model_retry") => {
                self.failed_call = None;
                let message = str_at(data, "message").unwrap_or("Retrying the model request");
                out.push(retry(message.to_string()));
            }
            Some("model.call_failure") => {
                self.failed_call = Some(data.get("statusCode").and_then(Value::as_u64));
            }
            // Copilot CLI 1.0.92: the next attempt is the only sign of a retry.
            Some("model.call_start") => {
                if let Some(status) = self.failed_call.take() {
                    let message = match status {
                        Some(code) => format!("The model request failed (HTTP {code}); retrying"),
                        None => "The model request failed; retrying".to_string(),
                    };
                    out.push(retry(message));
                }
            }
            Some("session.error") => {
                self.failed_call = None;
                let message = str_at(data, "message").unwrap_or_default();
                self.turn.error(message.trim().to_string());
            }
            Some("result") if !self.ended => self.result(&value, out),
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        if !self.ended {
            self.ended = true;
            self.turn
                .finish("copilot", exit, self.session_id.clone(), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(normalizer: &mut CopilotNormalizer, lines: &[&str]) -> Vec<Event> {
        let mut out = Vec::new();
        for line in lines {
            normalizer.line(line, &mut out);
        }
        out
    }

    #[test]
    fn an_unstreamed_message_is_shown_whole_and_a_streamed_one_once() {
        let events = run(
            &mut CopilotNormalizer::new(),
            &[
                r#"{"type":"assistant.message","data":{"messageId":"m1","content":"Whole","toolRequests":[]}}"#,
                r#"{"type":"assistant.message_start","data":{"messageId":"m2"}}"#,
                r#"{"type":"assistant.message_delta","data":{"messageId":"m2","deltaContent":"Str"}}"#,
                r#"{"type":"assistant.message","data":{"messageId":"m2","content":"Str","toolRequests":[]}}"#,
            ],
        );
        let text: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, ["Whole", "Str"]);
    }

    #[test]
    fn exit_code_one_without_session_error_still_fails() {
        let events = run(
            &mut CopilotNormalizer::new(),
            &[r#"{"type":"result","sessionId":"s","exitCode":1}"#],
        );
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("{events:?}")
        };
        assert!(!end.success);
        assert_eq!(end.session_id.as_deref(), Some("s"));
        assert!(end.error.as_deref().unwrap().contains("exit code 1"));
    }

    #[test]
    fn a_preset_session_is_reported_first_and_once() {
        let mut normalizer = CopilotNormalizer::with_session("s-1");
        let events = run(
            &mut normalizer,
            &[
                r#"{"type":"session.tools_updated","data":{}}"#,
                r#"{"type":"result","sessionId":"s-1","exitCode":0}"#,
            ],
        );
        assert_eq!(events[0], Event::SessionId { id: "s-1".into() });
        let ids = events
            .iter()
            .filter(|e| matches!(e, Event::SessionId { .. }))
            .count();
        assert_eq!(ids, 1);
    }

    #[test]
    fn a_stream_cut_before_the_result_is_a_failure_even_with_exit_zero() {
        use std::os::unix::process::ExitStatusExt;
        let mut normalizer = CopilotNormalizer::new();
        let mut events = run(
            &mut normalizer,
            &[r#"{"type":"assistant.message_delta","data":{"messageId":"m","deltaContent":"Hi"}}"#],
        );
        normalizer.finish(Some(&ExitStatus::from_raw(0)), &mut events);
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("{events:?}")
        };
        assert!(!end.success);
    }

    fn retries(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Status(s) if s.kind == StatusKind::Retry => Some(s.message.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_failed_call_followed_by_another_is_one_retry_in_either_version() {
        let failure = r#"{"type":"model.call_failure","data":{"statusCode":500}}"#;
        let start = r#"{"type":"model.call_start","data":{}}"#;
        let info =
            r#"{"type":"session.info","data":{"infoType":"model_retry","message":"Retrying..."}}"#;
        // 1.0.92: no session.info.
        let old = run(
            &mut CopilotNormalizer::new(),
            &[start, failure, start, failure],
        );
        assert_eq!(
            retries(&old),
            ["The model request failed (HTTP 500); retrying"]
        );
        // 1.0.102: the CLI's own message, once.
        let new = run(
            &mut CopilotNormalizer::new(),
            &[start, failure, info, start, failure],
        );
        assert_eq!(retries(&new), ["Retrying..."]);
    }

    #[test]
    fn garbage_is_a_warning_not_a_panic() {
        let events = run(
            &mut CopilotNormalizer::new(),
            &["Error: boom \u{fffd}", "[1]", "{\"type\":"],
        );
        assert_eq!(events.len(), 3);
        assert!(
            events
                .iter()
                .all(|e| matches!(e, Event::Warning { code, .. } if code == "unparsed_line"))
        );
    }
}
