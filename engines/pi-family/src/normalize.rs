//! pi / oh-my-pi `--mode json` output → [`Event`]s.
//!
//! Facts this relies on (pi 0.73.1, omp 18.2.3; `shared/reference/real-clis-openai.md` §6 and
//! the e2e tests):
//!
//! * the first line is the session header `{"type":"session","id":…}`: the id resumes the
//!   conversation (`--session <id>` for pi, `--resume=<id>` for omp);
//! * assistant output streams as `message_update` lines whose `assistantMessageEvent` is
//!   `text_delta` / `thinking_delta` (true token deltas), `toolcall_end` (the complete call);
//!   pi repeats the whole partial message in every update (`partial`), so lines are large;
//!   with Chat Completions `thinking_end` may arrive after the text deltas (ignored: only the
//!   deltas matter);
//! * `message_end` of the assistant carries the usage and `stopReason` (`stop`, `toolUse`,
//!   `length`, `error` with `errorMessage`, `aborted`);
//! * tools run between `tool_execution_start {toolCallId, toolName, args}` and
//!   `tool_execution_end {toolCallId, result:{content:[…]}, isError}`;
//! * `agent_end` ends a run, but not necessarily the turn: on 429/5xx pi prints
//!   `auto_retry_start` after it and runs again (`auto_retry_end {success:false}` when it gives
//!   up). **The exit code is 0 even after an API error** (pi; omp exits 1), so the outcome is
//!   decided at exit by [`ExitTurn`]: an error that no later attempt cleared is a failure, a
//!   stream without `agent_end` is a failure, anything but exit 0 is a failure;
//! * plain-text lines can appear on stdout (a resume of a session from another project asks
//!   "Fork this session into current directory? [y/N]" and exits 0 with "Aborted."): they are
//!   kept for the error message.

use std::borrow::Cow;
use std::collections::HashSet;
use std::process::ExitStatus;

use bridge_core::event::{
    Event, FileDiff, Status, StatusKind, StopReason, ToolKind, ToolResult, ToolUse, Usage,
    UsageScope,
};
use bridge_core::normalize::{ExitTurn, TurnUsage, json_object, str_at, u32_at, u64_at};
use bridge_core::turn::Normalizer;
use serde::Deserialize;
use serde_json::{Value, json};

/// The fields of a line the token stream needs. Most lines are `message_update`s that repeat
/// the whole partial message; reading them into this (borrowing the delta, skipping the rest
/// without building it) instead of a full [`Value`] keeps the normalizer cheaper than parsing.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(rename = "assistantMessageEvent", borrow, default)]
    update: Option<Update<'a>>,
}

#[derive(Deserialize)]
struct Update<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(rename = "toolCall", default)]
    tool_call: Option<Value>,
}

/// Normalizer state for one pi (or omp) process.
#[derive(Debug)]
pub struct PiNormalizer {
    provider: &'static str,
    session_id: Option<String>,
    turn: ExitTurn,
    tools_announced: HashSet<String>,
    tools_finished: HashSet<String>,
    /// Text and stop reason of the latest assistant message.
    last_text: Option<String>,
    last_stop: StopReason,
    usage: TurnUsage,
}

/// Normalized kind of a pi / omp tool.
///
/// ```
/// use bridge_pi_family::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("bash"), ToolKind::Execute);
/// assert_eq!(tool_kind("glob"), ToolKind::Search);
/// assert_eq!(tool_kind("my_extension_tool"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read" | "read_file" | "view" => ToolKind::Read,
        "edit" | "write" | "ast_edit" | "multiedit" | "apply_patch" | "notebook" => ToolKind::Edit,
        "bash" | "shell" | "exec" | "eval" | "python" => ToolKind::Execute,
        "grep" | "find" | "ls" | "glob" | "ast_grep" | "search" => ToolKind::Search,
        "fetch" | "web_fetch" | "web_search" | "websearch" | "browser" => ToolKind::Fetch,
        "todo" | "todo_write" | "task" | "think" | "plan" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The file change an `edit` / `write` call describes (pi: `{path, edits:[{oldText, newText}]}`
/// and `{path, content}`; older spellings `oldText`/`newText` at the top level are read too).
fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = str_at(input, "path").or_else(|| str_at(input, "file_path"))?;
    let text = |value: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| str_at(value, k))
            .map(str::to_string)
    };
    const OLD: &[&str] = &["oldText", "old_text", "old_string"];
    const NEW: &[&str] = &["newText", "new_text", "new_string"];
    let (old_text, new_text) = match name {
        "write" => (None, text(input, &["content"])),
        "edit" => match input.get("edits").and_then(Value::as_array) {
            Some(edits) => {
                let join = |keys: &[&str]| {
                    edits
                        .iter()
                        .filter_map(|e| text(e, keys))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                (Some(join(OLD)), Some(join(NEW)))
            }
            None => (text(input, OLD), text(input, NEW)),
        },
        _ => return None,
    };
    if old_text.is_none() && new_text.is_none() {
        return None;
    }
    Some(FileDiff {
        path: path.to_string(),
        old_text,
        new_text,
    })
}

/// A tool result's `content` (`[{type:"text",text}, {type:"image",data,mimeType}]`) as the
/// Claude-shaped value plugins render: one string when it is all text, blocks otherwise.
fn result_content(content: &Value) -> Value {
    let Some(blocks) = content.as_array() else {
        return match content {
            Value::Null => Value::String(String::new()),
            other => other.clone(),
        };
    };
    if blocks.iter().all(|b| b["type"] == "text") {
        let text: Vec<&str> = blocks.iter().filter_map(|b| str_at(b, "text")).collect();
        return Value::String(text.join("\n"));
    }
    Value::Array(
        blocks
            .iter()
            .map(|b| match str_at(b, "type") {
                Some("image") => json!({
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": str_at(b, "mimeType").unwrap_or("image/png"),
                        "data": str_at(b, "data").unwrap_or(""),
                    },
                }),
                Some("text") => json!({"type": "text", "text": str_at(b, "text").unwrap_or("")}),
                _ => b.clone(),
            })
            .collect(),
    )
}

/// The text blocks of an assistant message, joined.
fn message_text(message: &Value) -> Option<String> {
    let blocks = message.get("content")?.as_array()?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| str_at(b, "text"))
        .collect();
    (!text.is_empty()).then_some(text)
}

impl PiNormalizer {
    /// A normalizer for one process of `provider` (`pi` or `omp`, used in messages).
    pub fn new(provider: &'static str) -> Self {
        PiNormalizer {
            provider,
            session_id: None,
            turn: ExitTurn::new(),
            tools_announced: HashSet::new(),
            tools_finished: HashSet::new(),
            last_text: None,
            last_stop: StopReason::EndTurn,
            usage: TurnUsage::default(),
        }
    }

    /// What the stream said about the outcome so far (for tests and diagnostics).
    pub fn outcome(&self) -> &ExitTurn {
        &self.turn
    }

    fn announce(&mut self, id: &str, name: &str, input: &Value, out: &mut Vec<Event>) {
        if id.is_empty() || !self.tools_announced.insert(id.to_string()) {
            return;
        }
        out.push(Event::ToolUse(ToolUse {
            id: id.to_string(),
            name: name.to_string(),
            kind: tool_kind(name),
            input: input.clone(),
            diff: tool_diff(name, input),
        }));
    }

    fn finish_tool(&mut self, id: &str, content: &Value, is_error: bool, out: &mut Vec<Event>) {
        if id.is_empty() || !self.tools_finished.insert(id.to_string()) {
            return;
        }
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id.to_string(),
            content: result_content(content),
            is_error,
        }));
    }

    fn assistant_update(&mut self, event: Update<'_>, out: &mut Vec<Event>) {
        let delta = event.delta.filter(|d| !d.is_empty());
        match (event.kind.as_ref(), delta) {
            ("text_delta", Some(delta)) => out.push(Event::TextDelta {
                text: delta.into_owned(),
            }),
            ("thinking_delta", Some(delta)) => out.push(Event::ThinkingDelta {
                text: delta.into_owned(),
            }),
            ("toolcall_end", _) => {
                let call = event.tool_call.unwrap_or_default();
                if let (Some(id), Some(name)) = (str_at(&call, "id"), str_at(&call, "name")) {
                    self.announce(id, name, &call["arguments"], out);
                }
            }
            _ => {}
        }
    }

    fn assistant_end(&mut self, message: &Value, out: &mut Vec<Event>) {
        // Calls a `toolcall_end` did not announce (a provider path without it).
        if let Some(blocks) = message.get("content").and_then(Value::as_array) {
            for block in blocks.iter().filter(|b| b["type"] == "toolCall") {
                if let (Some(id), Some(name)) = (str_at(block, "id"), str_at(block, "name")) {
                    self.announce(id, name, &block["arguments"], out);
                }
            }
        }
        let usage = &message["usage"];
        let (input, output) = (u64_at(usage, "input"), u64_at(usage, "output"));
        let (cache_read, cache_write) = (u64_at(usage, "cacheRead"), u64_at(usage, "cacheWrite"));
        if input + output + cache_read + cache_write > 0 {
            let cost = usage
                .pointer("/cost/total")
                .and_then(Value::as_f64)
                .filter(|c| *c > 0.0);
            let message_usage = Usage {
                scope: UsageScope::Message,
                input_tokens: input,
                output_tokens: output,
                cache_read_input_tokens: cache_read,
                cache_creation_input_tokens: cache_write,
                reasoning_tokens: None,
                cost_usd: cost,
                context_window: None,
                context_tokens: None,
            };
            self.usage.add(&message_usage);
            out.push(Event::Usage(message_usage));
        }
        self.last_text = message_text(message);
        self.last_stop = match str_at(message, "stopReason") {
            Some("length") => StopReason::MaxTokens,
            Some("error") | Some("aborted") => StopReason::Error,
            _ => StopReason::EndTurn,
        };
        match str_at(message, "stopReason") {
            Some("error") => {
                let error = str_at(message, "errorMessage").unwrap_or("");
                self.turn.error(error.to_string());
            }
            Some("aborted") => {
                let error = str_at(message, "errorMessage").unwrap_or("the request was aborted");
                self.turn.error(error.to_string());
            }
            _ => {}
        }
    }
}

impl Normalizer for PiNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        // The token stream (most lines, and the largest ones) takes the cheap path.
        if let Ok(head) = serde_json::from_str::<Head>(line)
            && head.kind == "message_update"
        {
            if let Some(update) = head.update {
                self.assistant_update(update, out);
            }
            return;
        }
        let Some(value) = json_object(line) else {
            self.turn.unparsed_line(self.provider, line, out);
            return;
        };
        match str_at(&value, "type") {
            Some("session") => {
                if let Some(id) = str_at(&value, "id")
                    && self.session_id.as_deref() != Some(id)
                {
                    self.session_id = Some(id.to_string());
                    out.push(Event::SessionId { id: id.to_string() });
                }
            }
            Some("message_start") if value["message"]["role"] == "assistant" => {
                out.push(Event::BlockReset);
            }
            Some("message_end") => {
                let message = &value["message"];
                match str_at(message, "role") {
                    Some("assistant") => self.assistant_end(message, out),
                    Some("toolResult") => {
                        let id = str_at(message, "toolCallId").unwrap_or("");
                        let is_error = message["isError"] == true;
                        self.finish_tool(id, &message["content"], is_error, out);
                    }
                    _ => {}
                }
            }
            Some("tool_execution_start") => {
                let id = str_at(&value, "toolCallId").unwrap_or("");
                let name = str_at(&value, "toolName").unwrap_or("tool");
                self.announce(id, name, &value["args"], out);
            }
            Some("tool_execution_end") => {
                let id = str_at(&value, "toolCallId").unwrap_or("");
                let is_error = value["isError"] == true;
                self.finish_tool(id, &value["result"]["content"], is_error, out);
            }
            Some("agent_end") => {
                self.turn
                    .complete(self.last_stop.clone(), self.last_text.clone());
            }
            Some("auto_retry_start") => {
                // Another attempt follows: what it reports decides, not the failed one.
                self.turn.reopen();
                let attempt = u32_at(&value, "attempt");
                let max_attempts = u32_at(&value, "maxAttempts");
                let error = str_at(&value, "errorMessage").unwrap_or("an API error");
                let delay = u64_at(&value, "delayMs");
                let mut message = format!("Retrying after {error}");
                if let (Some(a), Some(m)) = (attempt, max_attempts) {
                    message.push_str(&format!(" (attempt {a}/{m})"));
                }
                if delay > 0 {
                    message.push_str(&format!(" in {:.1} s", delay as f64 / 1000.0));
                }
                out.push(Event::Status(Status {
                    kind: StatusKind::Retry,
                    message,
                    attempt,
                    max_attempts,
                }));
            }
            Some("auto_retry_end") if value["success"] == false => {
                let error = str_at(&value, "finalError").unwrap_or("the retries failed");
                self.turn.error(error.to_string());
            }
            Some("compaction_start") | Some("auto_compaction_start") => {
                out.push(Event::status("Compacting the conversation"));
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    fn turn_complete(&self) -> bool {
        // `agent_end`, and no `auto_retry_start` after it.
        self.turn.is_complete()
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        if let Some(usage) = self.usage.take() {
            out.push(Event::Usage(usage));
        }
        self.turn
            .finish(self.provider, exit, self.session_id.clone(), out);
    }
}

#[cfg(test)]
mod tests {
    use bridge_core::normalize::{run_lines, turn_end};

    use super::*;

    fn run(lines: &[&str], exit: i32) -> Vec<Event> {
        run_lines(&mut PiNormalizer::new("pi"), lines, &[], exit)
    }

    const SESSION: &str = r#"{"type":"session","version":3,"id":"s-1","cwd":"/w"}"#;
    const START: &str = r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#;
    const HELLO: &str = r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello"}}"#;
    const END_OK: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hello"}],"usage":{"input":10,"output":2,"cacheRead":5,"cacheWrite":0,"cost":{"total":0.25}},"stopReason":"stop"}}"#;
    const END_ERR: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":0,"output":0},"stopReason":"error","errorMessage":"500 boom"}}"#;
    const AGENT_END: &str = r#"{"type":"agent_end","messages":[]}"#;

    #[test]
    fn a_text_turn_succeeds_with_the_last_text_and_usage() {
        let events = run(&[SESSION, START, HELLO, END_OK, AGENT_END], 0);
        assert_eq!(events[0], Event::SessionId { id: "s-1".into() });
        assert_eq!(events[1], Event::BlockReset);
        assert_eq!(
            events[2],
            Event::TextDelta {
                text: "Hello".into()
            }
        );
        let usages: Vec<&Usage> = events
            .iter()
            .filter_map(|e| match e {
                Event::Usage(u) => Some(u),
                _ => None,
            })
            .collect();
        assert_eq!(usages.len(), 2);
        assert_eq!(usages[0].scope, UsageScope::Message);
        assert_eq!(usages[1].scope, UsageScope::Turn);
        assert_eq!(usages[1].cost_usd, Some(0.25));
        let end = turn_end(&events);
        assert!(end.success);
        assert_eq!(end.result.as_deref(), Some("Hello"));
        assert_eq!(end.session_id.as_deref(), Some("s-1"));
    }

    #[test]
    fn an_api_error_with_exit_zero_is_a_failure() {
        let events = run(&[SESSION, START, END_ERR, AGENT_END], 0);
        let end = turn_end(&events);
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("500 boom"));
        assert!(events.iter().any(|e| matches!(e, Event::Error(_))));
    }

    #[test]
    fn a_retry_that_succeeds_is_a_success_and_one_that_gives_up_is_not() {
        let retry = r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"500 boom"}"#;
        let events = run(
            &[
                SESSION, START, END_ERR, AGENT_END, retry, START, HELLO, END_OK, AGENT_END,
            ],
            0,
        );
        assert!(turn_end(&events).success, "{events:?}");
        let status = events
            .iter()
            .find_map(|e| match e {
                Event::Status(s) => Some(s),
                _ => None,
            })
            .unwrap();
        assert_eq!(status.kind, StatusKind::Retry);
        assert_eq!(
            status.message,
            "Retrying after 500 boom (attempt 1/3) in 2.0 s"
        );
        let gave_up =
            r#"{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"500 still"}"#;
        let events = run(
            &[
                SESSION, START, END_ERR, AGENT_END, retry, START, END_ERR, AGENT_END, gave_up,
            ],
            0,
        );
        assert_eq!(turn_end(&events).error.as_deref(), Some("500 still"));
    }

    #[test]
    fn a_stream_without_agent_end_is_a_failure() {
        let events = run(&[SESSION, START, HELLO], 0);
        let end = turn_end(&events);
        assert!(!end.success);
        assert!(
            end.error
                .as_deref()
                .unwrap()
                .contains("pi exited (exit code 0) before finishing the turn")
        );
    }

    #[test]
    fn plain_text_lines_explain_the_failure() {
        let events = run(
            &[
                SESSION,
                "Session found in different project: /other",
                "Fork this session into current directory? [y/N] Aborted.",
            ],
            0,
        );
        let warnings = events
            .iter()
            .filter(|e| matches!(e, Event::Warning { code, .. } if code == "unparsed_line"))
            .count();
        assert_eq!(warnings, 2);
        let error = turn_end(&events).error.clone().unwrap();
        assert!(
            error.contains("Session found in different project"),
            "{error}"
        );
    }

    #[test]
    fn tools_are_announced_once_and_results_follow() {
        let call_end = r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a.txt","edits":[{"oldText":"a","newText":"b"}]}}}}"#;
        let msg_end = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"edit","arguments":{}}],"stopReason":"toolUse"}}"#;
        let exec_start =
            r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"edit","args":{}}"#;
        let exec_end = r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"edit","result":{"content":[{"type":"text","text":"ok"}]},"isError":false}"#;
        let tool_msg = r#"{"type":"message_end","message":{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":false}}"#;
        let events = run(
            &[
                SESSION, START, call_end, msg_end, exec_start, exec_end, tool_msg,
            ],
            0,
        );
        let uses: Vec<&ToolUse> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolUse(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(uses.len(), 1);
        assert_eq!(uses[0].kind, ToolKind::Edit);
        assert_eq!(
            uses[0].diff,
            Some(FileDiff {
                path: "a.txt".into(),
                old_text: Some("a".into()),
                new_text: Some("b".into())
            })
        );
        let results: Vec<&ToolResult> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolResult(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].content, Value::String("ok".into()));
        // No agent_end: the turn is not a success.
        assert!(!turn_end(&events).success);
    }

    #[test]
    fn image_results_become_claude_image_blocks() {
        let content = json!([
            {"type": "text", "text": "see"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ]);
        assert_eq!(
            result_content(&content),
            json!([
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
            ])
        );
    }

    #[test]
    fn a_non_zero_exit_fails_even_after_a_complete_stream() {
        let events = run(&[SESSION, START, HELLO, END_OK, AGENT_END], 1);
        assert!(!turn_end(&events).success);
    }
}
