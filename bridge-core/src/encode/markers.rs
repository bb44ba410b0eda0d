//! The ai-bridge marker protocol, as the JetBrains plugin parses it.
//!
//! # Format
//!
//! One line per item, `\n`-terminated, UTF-8, never a raw CR or LF inside a payload:
//!
//! | event | line |
//! |---|---|
//! | turn start | `[MESSAGE_START]`, `[STREAM_START]` |
//! | session id | `[SESSION_ID] <id>` (`[THREAD_ID] <id>` in the Codex dialect) |
//! | text delta, whole text block | `[CONTENT_DELTA] "<json string>"` |
//! | thinking delta | `[THINKING_DELTA] "<json string>"` |
//! | new message segment | `[BLOCK_RESET]` |
//! | Claude-shaped message | `[MESSAGE] {json}` |
//! | tool use not already inside a `[MESSAGE]` | `[MESSAGE] {"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use",…}]}}` |
//! | tool result | `[MESSAGE] {"type":"user",…}` (unless already inside one), then `[TOOL_RESULT] {…}` |
//! | per-message usage | `[USAGE] {"input_tokens":…,"output_tokens":…,"cache_creation_input_tokens":…,"cache_read_input_tokens":…}` |
//! | approval needed | `[PERMISSION_REQUEST] {"requestId":…,"kind":…,"toolName":…,"toolKind":…,"input":…,"options":[…]}` |
//! | approval applied | `[PERMISSION_DECISION] {"requestId":…,"requested":…,"applied":…,"source":…,"note":…}` |
//! | error | `[SEND_ERROR] {"success":false,"error":"…"}` |
//! | turn end | `[STREAM_END]`, `[MESSAGE_END]`, then `{"success":…,"sessionId"|"threadId":…,"result":…,"error":…}` |
//!
//! Warnings, statuses (outside the Codex dialect) and raw lines have no marker and are not printed.
//!
//! # Non-streaming (`"streaming": false` in the request)
//!
//! What ai-bridge prints when the plugin's streaming setting is off, for every provider: no
//! `[STREAM_START]`, `[STREAM_END]`, `[BLOCK_RESET]`, `[CONTENT_DELTA]` or `[THINKING_DELTA]`.
//! Deltas are collected per message segment; at the segment's end (a new segment, a tool call or
//! result, a message, an error, the turn end) the segment is written whole: `[THINKING] <text>`,
//! `[CONTENT] <text>` and a Claude-shaped assistant
//! `[MESSAGE] {"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking",…},{"type":"text",…}]}}`
//! (left out when the provider's own `[MESSAGE]` that ends the segment already carries the
//! text). The plugin takes the exact text from that `[MESSAGE]`; `[CONTENT]` and `[THINKING]`
//! are raw-text lines, so their line breaks are written as spaces (a payload never spans lines).

use std::collections::HashSet;

use serde_json::{Value, json};

use super::Encoder;
use crate::event::{Event, StatusKind, StopReason, ToolResult, ToolUse, TurnEnd, UsageScope};

/// `[TOOL_RESULT]` content longer than this is cut (65 % head, 35 % tail), as ai-bridge does.
pub const TOOL_RESULT_MAX_CHARS: usize = 20_000;

/// Per-provider spelling of the marker protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerDialect {
    /// Tag of the id line: `[SESSION_ID]` or `[THREAD_ID]`.
    pub id_tag: &'static str,
    /// Key of the id in the final JSON line: `sessionId` or `threadId`.
    pub id_key: &'static str,
    /// Print statuses as `[MESSAGE] {"type":"status","message":…}` (the Codex plugin path shows them).
    pub status_messages: bool,
    /// Print turn usage as a Claude-shaped `[MESSAGE] {"type":"result","subtype":"usage",…}` (Codex),
    /// with `input_tokens` counting the cached tokens too (Codex's convention).
    pub turn_usage_message: bool,
}

impl MarkerDialect {
    /// Claude and every provider that reports a session id.
    pub const SESSION: MarkerDialect = MarkerDialect {
        id_tag: "[SESSION_ID]",
        id_key: "sessionId",
        status_messages: false,
        turn_usage_message: false,
    };
    /// Codex: `[THREAD_ID]`, `threadId`, status and usage messages.
    pub const THREAD: MarkerDialect = MarkerDialect {
        id_tag: "[THREAD_ID]",
        id_key: "threadId",
        status_messages: true,
        turn_usage_message: true,
    };
}

/// Encodes [`Event`]s as ai-bridge marker lines.
#[derive(Debug)]
pub struct MarkerEncoder {
    dialect: MarkerDialect,
    send_error_written: bool,
    ended: bool,
    /// Tool ids whose tool_use / tool_result already went out inside a `[MESSAGE]`.
    tool_uses_in_messages: HashSet<String>,
    tool_results_in_messages: HashSet<String>,
    /// Deltas are streamed (the default); `false`: whole segments (see the module docs).
    streaming: bool,
    /// Non-streaming: the text and thinking of the current segment.
    pending_text: String,
    pending_thinking: String,
}

impl MarkerEncoder {
    /// A new encoder for one turn.
    pub fn new(dialect: MarkerDialect) -> Self {
        MarkerEncoder {
            dialect,
            send_error_written: false,
            ended: false,
            tool_uses_in_messages: HashSet::new(),
            tool_results_in_messages: HashSet::new(),
            streaming: true,
            pending_text: String::new(),
            pending_thinking: String::new(),
        }
    }

    /// `streaming: false` writes whole segments instead of deltas, as ai-bridge does when the
    /// request says `"streaming": false` (see the module docs).
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Non-streaming: writes the collected segment. `carried` is the provider's own message
    /// that ends the segment; when it has text or thinking, no assistant message is made up.
    fn flush_segment(&mut self, carried: Option<&Value>, out: &mut Vec<String>) {
        if self.streaming || (self.pending_text.is_empty() && self.pending_thinking.is_empty()) {
            return;
        }
        let thinking = std::mem::take(&mut self.pending_thinking);
        let text = std::mem::take(&mut self.pending_text);
        let mut blocks = Vec::new();
        if !thinking.is_empty() {
            out.push(format!("[THINKING] {}", single_line(&thinking)));
            blocks.push(json!({"type": "thinking", "thinking": thinking, "text": thinking}));
        }
        if !text.is_empty() {
            out.push(format!("[CONTENT] {}", single_line(&text)));
            blocks.push(json!({"type": "text", "text": text}));
        }
        let carries_text = carried
            .filter(|m| m.get("type").and_then(Value::as_str) == Some("assistant"))
            .and_then(|m| m.get("message")?.get("content")?.as_array())
            .is_some_and(|content| {
                content.iter().any(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("text" | "thinking")
                    )
                })
            });
        if !carries_text {
            let message = json!({
                "type": "assistant",
                "message": {"role": "assistant", "content": blocks},
            });
            out.push(format!("[MESSAGE] {message}"));
        }
    }

    fn note_message_tools(&mut self, message: &Value) {
        let Some(content) = message
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return;
        };
        for block in content {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if let Some(id) = block.get("id").and_then(Value::as_str) {
                        self.tool_uses_in_messages.insert(id.to_string());
                    }
                }
                Some("tool_result") => {
                    if let Some(id) = block.get("tool_use_id").and_then(Value::as_str) {
                        self.tool_results_in_messages.insert(id.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    fn tool_use(&mut self, tool: &ToolUse, out: &mut Vec<String>) {
        if self.tool_uses_in_messages.contains(&tool.id) {
            return;
        }
        let message = json!({
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool.id, "name": tool.name, "input": tool.input}],
            },
        });
        out.push(format!("[MESSAGE] {message}"));
    }

    fn tool_result(&mut self, result: &ToolResult, out: &mut Vec<String>) {
        let block = json!({
            "type": "tool_result",
            "tool_use_id": result.tool_use_id,
            "content": truncate_content(&result.content),
            "is_error": result.is_error,
        });
        if !self.tool_results_in_messages.contains(&result.tool_use_id) {
            let message = json!({
                "type": "user",
                "message": {"role": "user", "content": [block]},
            });
            out.push(format!("[MESSAGE] {message}"));
        }
        out.push(format!("[TOOL_RESULT] {block}"));
    }

    fn send_error(&mut self, message: &str, out: &mut Vec<String>) {
        self.send_error_written = true;
        out.push(format!(
            "[SEND_ERROR] {}",
            json!({"success": false, "error": message})
        ));
    }

    fn turn_end(&mut self, end: &TurnEnd, out: &mut Vec<String>) {
        if self.ended {
            return;
        }
        self.ended = true;
        // An interrupt is not an error for the plugin: it expects only the end markers and
        // `"error":"User interrupted"` in the final line.
        if !end.success && !self.send_error_written && end.stop_reason != StopReason::Interrupted {
            let message = end.error.as_deref().unwrap_or("The turn failed");
            self.send_error(message, out);
        }
        if self.streaming {
            out.push("[STREAM_END]".into());
        }
        out.push("[MESSAGE_END]".into());
        let mut last = serde_json::Map::new();
        last.insert("success".into(), Value::Bool(end.success));
        if let Some(id) = &end.session_id {
            last.insert(self.dialect.id_key.into(), Value::String(id.clone()));
        }
        if let Some(result) = &end.result {
            last.insert("result".into(), Value::String(result.clone()));
        }
        if let Some(error) = &end.error {
            last.insert("error".into(), Value::String(error.clone()));
        }
        out.push(Value::Object(last).to_string());
    }
}

impl Encoder for MarkerEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<String>) {
        if !self.streaming {
            match event {
                Event::TextDelta { text } | Event::Text { text } => {
                    self.pending_text.push_str(text);
                    return;
                }
                Event::ThinkingDelta { text } => {
                    self.pending_thinking.push_str(text);
                    return;
                }
                Event::BlockReset => {
                    self.flush_segment(None, out);
                    return;
                }
                Event::TurnStart { .. } => {
                    out.push("[MESSAGE_START]".into());
                    return;
                }
                Event::Message { message } => self.flush_segment(Some(message), out),
                Event::ToolUse(_)
                | Event::ToolResult(_)
                | Event::PermissionRequest(_)
                | Event::Error(_)
                | Event::TurnEnd(_) => self.flush_segment(None, out),
                _ => {}
            }
        }
        match event {
            Event::TurnStart { .. } => {
                out.push("[MESSAGE_START]".into());
                out.push("[STREAM_START]".into());
            }
            Event::SessionId { id } => {
                out.push(format!("{} {}", self.dialect.id_tag, single_line(id)));
            }
            Event::TextDelta { text } | Event::Text { text } => {
                out.push(format!("[CONTENT_DELTA] {}", Value::String(text.clone())));
            }
            Event::ThinkingDelta { text } => {
                out.push(format!("[THINKING_DELTA] {}", Value::String(text.clone())));
            }
            Event::BlockReset => out.push("[BLOCK_RESET]".into()),
            Event::ToolUse(tool) => self.tool_use(tool, out),
            Event::ToolResult(result) => self.tool_result(result, out),
            Event::Usage(usage) => match usage.scope {
                UsageScope::Message => out.push(format!(
                    "[USAGE] {}",
                    json!({
                        "input_tokens": usage.input_tokens,
                        "output_tokens": usage.output_tokens,
                        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                        "cache_read_input_tokens": usage.cache_read_input_tokens,
                    })
                )),
                // Codex's convention, which the plugin's Codex handler expects (it subtracts
                // the cache reads again): `input_tokens` includes the cached tokens.
                UsageScope::Turn if self.dialect.turn_usage_message => out.push(format!(
                    "[MESSAGE] {}",
                    json!({
                        "type": "result",
                        "subtype": "usage",
                        "is_error": false,
                        "usage": {
                            // Saturating: the counts come from the CLI (a fuzzer found the
                            // plain sum overflowing on absurd ones).
                            "input_tokens": usage
                                .input_tokens
                                .saturating_add(usage.cache_read_input_tokens)
                                .saturating_add(usage.cache_creation_input_tokens),
                            "output_tokens": usage.output_tokens,
                            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                            "cache_read_input_tokens": usage.cache_read_input_tokens,
                        },
                    })
                )),
                UsageScope::Turn => {}
            },
            Event::Message { message } => {
                self.note_message_tools(message);
                out.push(format!("[MESSAGE] {message}"));
            }
            Event::Status(status) if self.dialect.status_messages => {
                if status.kind != StatusKind::Requesting {
                    out.push(format!(
                        "[MESSAGE] {}",
                        json!({"type": "status", "message": status.message})
                    ));
                }
            }
            Event::PermissionRequest(request) => out.push(format!(
                "[PERMISSION_REQUEST] {}",
                serde_json::to_string(request).unwrap_or_default()
            )),
            Event::PermissionDecision(decision) => out.push(format!(
                "[PERMISSION_DECISION] {}",
                serde_json::to_string(decision).unwrap_or_default()
            )),
            Event::Status(_) | Event::Warning { .. } | Event::Raw { .. } => {}
            Event::Error(info) => {
                let message = match &info.stderr_tail {
                    Some(tail) if !tail.is_empty() => {
                        format!("{}\n\nCLI stderr (last lines):\n{}", info.message, tail)
                    }
                    _ => info.message.clone(),
                };
                self.send_error(&message, out);
            }
            Event::TurnEnd(end) => self.turn_end(end, out),
        }
    }
}

/// Raw-payload markers (`[SESSION_ID] id`) must not carry a line break.
fn single_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// Cuts long string content the way ai-bridge does (65 % head, 35 % tail, a note between).
fn truncate_content(content: &Value) -> Value {
    match content {
        Value::String(text) if text.chars().count() > TOOL_RESULT_MAX_CHARS => {
            let total = text.chars().count();
            let head = TOOL_RESULT_MAX_CHARS * 65 / 100;
            let tail = TOOL_RESULT_MAX_CHARS - head;
            let head_text: String = text.chars().take(head).collect();
            let tail_text: String = text.chars().skip(total - tail).collect();
            Value::String(format!(
                "{head_text}\n… [{} characters omitted] …\n{tail_text}",
                total - head - tail
            ))
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ErrorCode, ToolKind};

    fn encode_all(events: &[Event]) -> String {
        encode_all_with(&mut MarkerEncoder::new(MarkerDialect::SESSION), events)
    }

    fn bash_ls() -> ToolUse {
        ToolUse {
            id: "t1".into(),
            name: "Bash".into(),
            kind: ToolKind::Execute,
            input: json!({"command": "ls"}),
            diff: None,
        }
    }

    fn success_end() -> Event {
        Event::TurnEnd(TurnEnd {
            success: true,
            stop_reason: StopReason::EndTurn,
            session_id: Some("s-1".into()),
            result: Some("Hi".into()),
            error: None,
        })
    }

    #[test]
    fn deltas_are_json_strings_without_raw_newlines() {
        let out = encode_all(&[Event::TextDelta {
            text: "Hello\nWorld\r\"q\"".into(),
        }]);
        assert_eq!(out, r#"[CONTENT_DELTA] "Hello\nWorld\r\"q\"""#);
    }

    #[test]
    fn full_turn_matches_the_claude_sequence() {
        let out = encode_all(&[
            Event::TurnStart {
                provider: "claude".into(),
            },
            Event::SessionId { id: "s-1".into() },
            Event::ThinkingDelta { text: "hm".into() },
            Event::TextDelta { text: "Hi".into() },
            success_end(),
        ]);
        insta::assert_snapshot!(out, @r#"
        [MESSAGE_START]
        [STREAM_START]
        [SESSION_ID] s-1
        [THINKING_DELTA] "hm"
        [CONTENT_DELTA] "Hi"
        [STREAM_END]
        [MESSAGE_END]
        {"success":true,"sessionId":"s-1","result":"Hi"}
        "#);
    }

    #[test]
    fn tool_use_is_synthesized_only_when_no_message_carried_it() {
        let tool = bash_ls();
        let carried = encode_all(&[
            Event::Message {
                message: json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}),
            },
            Event::ToolUse(tool.clone()),
        ]);
        assert_eq!(carried.lines().count(), 1);
        let synthesized = encode_all(&[Event::ToolUse(tool)]);
        assert_eq!(
            synthesized,
            r#"[MESSAGE] {"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#
        );
    }

    #[test]
    fn failure_writes_one_send_error_then_end_markers_and_final_line() {
        let out = encode_all(&[
            Event::error(ErrorCode::Provider, "Invalid API key"),
            Event::TurnEnd(TurnEnd {
                success: false,
                stop_reason: StopReason::Error,
                session_id: None,
                result: None,
                error: Some("Invalid API key".into()),
            }),
        ]);
        insta::assert_snapshot!(out, @r#"
        [SEND_ERROR] {"success":false,"error":"Invalid API key"}
        [STREAM_END]
        [MESSAGE_END]
        {"success":false,"error":"Invalid API key"}
        "#);
    }

    #[test]
    fn non_streaming_writes_whole_segments_and_no_stream_markers() {
        let mut encoder = MarkerEncoder::new(MarkerDialect::SESSION).with_streaming(false);
        let tool = bash_ls();
        let out = encode_all_with(
            &mut encoder,
            &[
                Event::TurnStart {
                    provider: "claude".into(),
                },
                Event::SessionId { id: "s-1".into() },
                Event::ThinkingDelta { text: "hm".into() },
                Event::TextDelta { text: "Hel".into() },
                Event::TextDelta {
                    text: "lo\nthere".into(),
                },
                Event::ToolUse(tool),
                Event::BlockReset,
                Event::Text {
                    text: "Done.".into(),
                },
                // The provider's own message ends this segment: nothing is made up.
                Event::Message {
                    message: json!({"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}),
                },
                success_end(),
            ],
        );
        insta::assert_snapshot!(out, @r#"
        [MESSAGE_START]
        [SESSION_ID] s-1
        [THINKING] hm
        [CONTENT] Hello there
        [MESSAGE] {"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","text":"hm"},{"type":"text","text":"Hello\nthere"}]}}
        [MESSAGE] {"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
        [CONTENT] Done.
        [MESSAGE] {"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}
        [MESSAGE_END]
        {"success":true,"sessionId":"s-1","result":"Hi"}
        "#);
    }

    fn encode_all_with(encoder: &mut MarkerEncoder, events: &[Event]) -> String {
        crate::encode::encode_all(events, encoder)
    }

    #[test]
    fn long_tool_results_are_cut_head_and_tail() {
        let long = "x".repeat(TOOL_RESULT_MAX_CHARS + 500);
        let cut = truncate_content(&Value::String(long));
        let text = cut.as_str().unwrap();
        assert!(text.contains("[500 characters omitted]"), "{}", &text[..80]);
        assert!(text.chars().count() < TOOL_RESULT_MAX_CHARS + 100);
    }
}
