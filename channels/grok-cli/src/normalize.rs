//! Grok CLI (`@vibe-kit/grok-cli` 0.0.34) headless output → [`Event`]s.
//!
//! Facts this relies on (`shared/reference/real-clis-openai.md` §5, and the e2e tests):
//!
//! * `grok --prompt <text>` makes non-streaming Chat Completions requests and prints nothing
//!   until the end; then one OpenAI chat message per line: the user message, each assistant
//!   message (with `tool_calls`), each tool result (`role: "tool"`), the final assistant
//!   message. So text arrives whole ([`Event::Text`]), never as deltas;
//! * no session id, no usage, and reasoning is dropped;
//! * **an API error is an assistant message with exit code 0**:
//!   `{"role":"assistant","content":"Sorry, I encountered an error: Grok API error: 401 …"}`
//!   (after two retries for 429/5xx), and the earlier messages of the turn are not printed;
//! * an exception that escapes prints `{"role":"assistant","content":"Error: …"}` and exits 1;
//! * after `--max-tool-rounds` the last message is "Maximum tool execution rounds reached. …";
//! * an assistant message whose model sent no text carries the CLI's filler "Using tools to help
//!   you..." (dropped) or "I understand, but I don't have a specific response." (kept).
//!
//! The turn is complete with the final assistant message; its outcome is decided at exit by
//! [`ExitTurn`], so the error message above is a failure even though the CLI exits 0.

use std::process::ExitStatus;

use bridge_core::event::{Event, FileDiff, StopReason, ToolKind, ToolResult, ToolUse};
use bridge_core::normalize::{ExitTurn, json_object, str_at};
use bridge_core::turn::Normalizer;
use serde_json::Value;

/// How the CLI reports an API error (as the final assistant message, exit 0).
pub const API_ERROR_PREFIX: &str = "Sorry, I encountered an error: ";

/// How the CLI reports an exception (as the final assistant message, exit 1).
pub const EXCEPTION_PREFIX: &str = "Error: ";

/// The CLI's last message when it hit `--max-tool-rounds`.
pub const MAX_ROUNDS_TEXT: &str = "Maximum tool execution rounds reached";

/// What the CLI writes as the text of an assistant message whose model sent none.
const TOOL_FILLER: &str = "Using tools to help you...";

/// Normalizer state for one `grok --prompt` process.
#[derive(Debug, Default)]
pub struct GrokCliNormalizer {
    turn: ExitTurn,
    assistant_messages: usize,
}

/// Normalized kind of a Grok CLI tool.
///
/// ```
/// use bridge_channel_grok_cli::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("str_replace_editor"), ToolKind::Edit);
/// assert_eq!(tool_kind("bash"), ToolKind::Execute);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "view_file" => ToolKind::Read,
        "create_file" | "str_replace_editor" | "edit_file" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "search" => ToolKind::Search,
        "create_todo_list" | "update_todo_list" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = str_at(input, "path")?.to_string();
    let text = |key: &str| str_at(input, key).map(str::to_string);
    match name {
        "create_file" => Some(FileDiff {
            path,
            old_text: None,
            new_text: text("content"),
        }),
        "str_replace_editor" => Some(FileDiff {
            path,
            old_text: text("old_str"),
            new_text: text("new_str"),
        }),
        _ => None,
    }
}

impl GrokCliNormalizer {
    /// A normalizer for one process.
    pub fn new() -> Self {
        GrokCliNormalizer::default()
    }

    /// What the stream said about the outcome so far.
    pub fn outcome(&self) -> &ExitTurn {
        &self.turn
    }

    fn text(&mut self, text: &str, out: &mut Vec<Event>) {
        if self.assistant_messages > 0 {
            out.push(Event::BlockReset);
        }
        self.assistant_messages += 1;
        out.push(Event::Text {
            text: text.to_string(),
        });
    }

    fn assistant(&mut self, message: &Value, out: &mut Vec<Event>) {
        let content = str_at(message, "content").unwrap_or("");
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        let Some(calls) = calls else {
            if let Some(error) = content.strip_prefix(API_ERROR_PREFIX) {
                self.turn.error(error.to_string());
                return;
            }
            if content.starts_with(MAX_ROUNDS_TEXT) {
                self.turn.error(format!("grok-cli stopped: {content}"));
                return;
            }
            if content.starts_with(EXCEPTION_PREFIX) {
                // The exception report (exit 1) if the exit says so; text otherwise.
                self.turn.plain_line(content);
            }
            self.text(content, out);
            self.turn
                .complete(StopReason::EndTurn, Some(content.to_string()));
            return;
        };
        if !content.is_empty() && content != TOOL_FILLER {
            self.text(content, out);
        }
        for call in calls {
            let id = str_at(call, "id").unwrap_or("");
            let name = str_at(&call["function"], "name").unwrap_or("tool");
            let arguments = &call["function"]["arguments"];
            let input = match arguments {
                Value::String(text) => {
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                }
                other => other.clone(),
            };
            out.push(Event::ToolUse(ToolUse {
                id: id.to_string(),
                name: name.to_string(),
                kind: tool_kind(name),
                diff: tool_diff(name, &input),
                input,
            }));
        }
    }
}

impl Normalizer for GrokCliNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let Some(value) = json_object(line) else {
            self.turn.unparsed_line("grok-cli", line, out);
            return;
        };
        match str_at(&value, "role") {
            Some("assistant") => self.assistant(&value, out),
            Some("tool") => {
                out.push(Event::ToolResult(ToolResult {
                    tool_use_id: str_at(&value, "tool_call_id").unwrap_or("").to_string(),
                    content: Value::String(str_at(&value, "content").unwrap_or("").to_string()),
                    // The CLI prints a failed tool's error text the same way as its output.
                    is_error: false,
                }));
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        None
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        self.turn.finish("grok-cli", exit, None, out);
    }
}

#[cfg(test)]
mod tests {
    use bridge_core::normalize::{run_lines, turn_end};

    use super::*;

    fn run(lines: &[&str], exit: i32) -> Vec<Event> {
        run_lines(&mut GrokCliNormalizer::new(), lines, &[], exit)
    }

    const USER: &str = r#"{"role":"user","content":"hi"}"#;

    #[test]
    fn the_api_error_message_with_exit_zero_is_a_failure() {
        let events = run(
            &[
                USER,
                r#"{"role":"assistant","content":"Sorry, I encountered an error: Grok API error: 401 bad key"}"#,
            ],
            0,
        );
        let end = turn_end(&events);
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("Grok API error: 401 bad key"));
        assert!(!events.iter().any(|e| matches!(e, Event::Text { .. })));
    }

    #[test]
    fn the_exception_report_with_exit_one_is_a_failure_naming_it() {
        let events = run(
            &[
                USER,
                r#"{"role":"assistant","content":"Error: fetch failed"}"#,
            ],
            1,
        );
        let error = turn_end(&events).error.clone().unwrap();
        assert!(
            error.contains("exit code 1") && error.contains("Error: fetch failed"),
            "{error}"
        );
    }

    #[test]
    fn a_tool_round_then_text_is_a_success() {
        let events = run(
            &[
                USER,
                r#"{"role":"assistant","content":"Using tools to help you...","tool_calls":[{"id":"c1","type":"function","function":{"name":"create_file","arguments":"{\"path\":\"a.txt\",\"content\":\"x\"}"}}]}"#,
                r#"{"role":"tool","tool_call_id":"c1","content":"created"}"#,
                r#"{"role":"assistant","content":"Done."}"#,
            ],
            0,
        );
        let ToolUse { kind, diff, .. } = events
            .iter()
            .find_map(|e| match e {
                Event::ToolUse(t) => Some(t.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(kind, ToolKind::Edit);
        assert_eq!(diff.unwrap().new_text.as_deref(), Some("x"));
        let texts: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Text { .. }))
            .collect();
        assert_eq!(texts.len(), 1, "the filler is dropped: {events:?}");
        let end = turn_end(&events);
        assert!(end.success);
        assert_eq!(end.result.as_deref(), Some("Done."));
    }

    #[test]
    fn max_rounds_and_truncated_output_are_failures() {
        let events = run(
            &[
                USER,
                r#"{"role":"assistant","content":"Maximum tool execution rounds reached. Stopping to prevent infinite loops."}"#,
            ],
            0,
        );
        assert!(!turn_end(&events).success);
        let events = run(
            &[
                USER,
                r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]}"#,
            ],
            0,
        );
        assert!(!turn_end(&events).success);
        let events = run(&["Gracefully shutting down..."], 0);
        assert!(
            turn_end(&events)
                .error
                .as_deref()
                .unwrap()
                .contains("Gracefully shutting down")
        );
    }
}
