//! `kimi --print --output-format stream-json` output → [`Event`]s.
//!
//! Facts this relies on (kimi-cli 1.51.0; `shared/reference/real-clis-openai.md` §7, the
//! captures, the CLI's print-mode source and the e2e tests):
//!
//! * stdout carries whole OpenAI-shaped messages, one per line, printed when a step ends:
//!   `{"role":"assistant","content":"…"|[{"type":"think","think":…},{"type":"text","text":…}],
//!   "tool_calls":[…]}` and `{"role":"tool","content":[{"type":"text","text":…}],
//!   "tool_call_id":…}`; a tool result whose first part starts with `<system>ERROR` failed.
//!   Notifications (`{"title","body",…}`) and plan displays (`{"content","file_path"}`) can
//!   appear too. Text arrives as snapshots: each is turned into what it adds
//!   ([`SnapshotDelta`]), so a message that repeats and extends the previous one only streams
//!   its new part, and a different one starts a new block;
//! * **the session id is only on stderr**, at exit: `To resume this session: kimi -r <uuid>`
//!   ([`Normalizer::stderr_line`]); a resumed turn reports the requested id until then;
//! * **errors are plain text on stdout**, wrapped at 80 columns (`Error code: 401 - {…}`), with
//!   exit code 1, or **75** for a retryable one (429, 5xx, connection errors) after kimi's own
//!   retries; `Max steps reached`, `Interrupted by user` and `Unknown error: …` are printed the
//!   same way;
//! * there is no end-of-turn event: the turn is complete when the process exits 0 and the last
//!   message was an assistant message without tool calls ([`ExitTurn`] decides: any plain-text
//!   error, or any exit but 0, is a failure).

use std::process::ExitStatus;

use bridge_core::event::{Event, StopReason, ToolKind, ToolResult, ToolUse};
use bridge_core::normalize::{
    ExitTurn, SnapshotDelta, SnapshotStep, UnparsedLines, json_object, str_at,
};
use bridge_core::turn::Normalizer;
use serde_json::Value;

/// How kimi prints the id of the session on stderr.
pub const RESUME_HINT: &str = "To resume this session: kimi -r ";

/// The width at which kimi wraps the plain-text errors it prints on stdout.
pub const WRAP_COLUMNS: usize = 80;

/// Plain-text lines kept for the error message.
const PLAIN_LINES: usize = 40;

/// Normalized kind of a Kimi CLI tool.
///
/// ```
/// use bridge_channel_kimi::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("Shell"), ToolKind::Execute);
/// assert_eq!(tool_kind("StrReplaceFile"), ToolKind::Edit);
/// assert_eq!(tool_kind("mcp__x"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    crate::TOOL_KINDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, kind)| *kind)
        .unwrap_or(ToolKind::Other)
}

/// The text of a message's `content` (a string, or parts of `type` `part_type` whose text is
/// under `key`), joined.
fn content_text(content: &Value, part_type: &str, key: &str) -> String {
    match content {
        Value::String(text) if part_type == "text" => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| str_at(p, "type") == Some(part_type))
            .filter_map(|p| str_at(p, key))
            .collect(),
        _ => String::new(),
    }
}

/// Joins the lines of a plain-text report kimi wrapped at [`WRAP_COLUMNS`]: a line of exactly
/// that width continues on the next one.
///
/// ```
/// use bridge_channel_kimi::normalize::unwrap_lines;
/// let a = "x".repeat(80);
/// assert_eq!(unwrap_lines(&[a.clone(), "yz".into(), "next".into()]), format!("{a}yz\nnext"));
/// ```
pub fn unwrap_lines(lines: &[String]) -> String {
    let mut text = String::new();
    for (n, line) in lines.iter().enumerate() {
        if n > 0 && lines[n - 1].chars().count() != WRAP_COLUMNS {
            text.push('\n');
        }
        text.push_str(line);
    }
    text
}

/// Normalizer state for one `kimi --print` process.
#[derive(Debug, Default)]
pub struct KimiNormalizer {
    session_id: Option<String>,
    emitted_session: Option<String>,
    turn: ExitTurn,
    text: SnapshotDelta,
    thinking: SnapshotDelta,
    /// Something was shown since the last block reset.
    shown: bool,
    /// The last message was an assistant message without tool calls.
    answered: bool,
    last_text: Option<String>,
    /// Non-JSON stdout lines, untrimmed (kimi wraps its errors at 80 columns).
    plain: Vec<String>,
    unparsed: UnparsedLines,
}

impl KimiNormalizer {
    /// A normalizer for one process; `resume` is the session the request resumes.
    pub fn new(resume: Option<String>) -> Self {
        KimiNormalizer {
            session_id: resume,
            ..KimiNormalizer::default()
        }
    }

    fn announce_session(&mut self, out: &mut Vec<Event>) {
        if let Some(id) = &self.session_id
            && self.emitted_session.as_ref() != Some(id)
        {
            self.emitted_session = Some(id.clone());
            out.push(Event::SessionId { id: id.clone() });
        }
    }

    /// Streams what a text or thinking snapshot adds.
    fn snapshot(&mut self, thinking: bool, snapshot: &str, out: &mut Vec<Event>) {
        let state = if thinking {
            &mut self.thinking
        } else {
            &mut self.text
        };
        let text = match state.next(snapshot) {
            SnapshotStep::Unchanged => return,
            SnapshotStep::Delta(text) => text,
            SnapshotStep::Restart(text) => {
                if self.shown {
                    out.push(Event::BlockReset);
                    // A new message: the other kind starts over too.
                    if thinking {
                        self.text.reset();
                    } else {
                        self.thinking.reset();
                    }
                }
                text
            }
        };
        self.shown = true;
        out.push(if thinking {
            Event::ThinkingDelta { text }
        } else {
            Event::TextDelta { text }
        });
    }

    fn assistant(&mut self, message: &Value, out: &mut Vec<Event>) {
        let content = &message["content"];
        let thinking = content_text(content, "think", "think");
        if !thinking.is_empty() {
            self.snapshot(true, &thinking, out);
        }
        let text = content_text(content, "text", "text");
        if !text.is_empty() {
            self.snapshot(false, &text, out);
        }
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        match calls {
            Some(calls) => {
                self.answered = false;
                for call in calls {
                    let name = str_at(&call["function"], "name").unwrap_or("tool");
                    let input = match &call["function"]["arguments"] {
                        Value::String(text) => serde_json::from_str(text)
                            .unwrap_or_else(|_| Value::String(text.clone())),
                        other => other.clone(),
                    };
                    out.push(Event::ToolUse(ToolUse {
                        id: str_at(call, "id").unwrap_or("").to_string(),
                        name: name.to_string(),
                        kind: tool_kind(name),
                        diff: crate::tool_diff(name, &input),
                        input,
                    }));
                }
            }
            None => {
                self.answered = true;
                self.last_text = Some(self.text.text().to_string()).filter(|t| !t.is_empty());
            }
        }
    }

    fn tool(&mut self, message: &Value, out: &mut Vec<Event>) {
        self.answered = false;
        let content = &message["content"];
        let text = match content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| str_at(p, "text"))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: str_at(message, "tool_call_id").unwrap_or("").to_string(),
            is_error: text.starts_with("<system>ERROR"),
            content: Value::String(text),
        }));
    }

    fn plain_line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.trim().is_empty() {
            return;
        }
        if self.plain.len() < PLAIN_LINES {
            self.plain.push(line.trim_end_matches('\r').to_string());
        }
        out.extend(self.unparsed.warning(crate::ID, line));
    }
}

impl Normalizer for KimiNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        self.announce_session(out);
        let Some(value) = json_object(line) else {
            return self.plain_line(line, out);
        };
        match str_at(&value, "role") {
            Some("assistant") => self.assistant(&value, out),
            Some("tool") => self.tool(&value, out),
            Some(_) => {}
            None => {
                if let (Some(content), Some(_)) =
                    (str_at(&value, "content"), str_at(&value, "file_path"))
                {
                    // A plan display: shown as its own block.
                    if self.shown {
                        out.push(Event::BlockReset);
                    }
                    self.text.reset();
                    self.shown = true;
                    out.push(Event::Text {
                        text: content.to_string(),
                    });
                } else if let Some(title) = str_at(&value, "title") {
                    let body = str_at(&value, "body").unwrap_or("");
                    out.push(Event::status(
                        format!("{title}: {body}").trim_end_matches(": "),
                    ));
                }
            }
        }
    }

    fn stderr_line(&mut self, line: &str, out: &mut Vec<Event>) {
        if let Some(rest) = line.trim().strip_prefix(RESUME_HINT) {
            let id = rest.trim();
            if !id.is_empty() && !id.contains(char::is_whitespace) {
                self.session_id = Some(id.to_string());
                self.announce_session(out);
            }
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        self.announce_session(out);
        let exit_ok = exit.is_some_and(ExitStatus::success);
        let report = unwrap_lines(&self.plain);
        // Plain text on stdout is kimi's error report; with exit 0 only when it says so.
        if !report.is_empty() && (!exit_ok || report.starts_with("Error")) {
            self.turn.error(report);
        }
        if self.answered {
            self.turn
                .complete(StopReason::EndTurn, self.last_text.clone());
        }
        self.turn
            .finish(crate::ID, exit, self.session_id.clone(), out);
    }
}

#[cfg(test)]
mod tests {
    use bridge_core::normalize::{run_lines, turn_end};

    use super::*;

    fn run(lines: &[&str], stderr: &[&str], exit: i32) -> Vec<Event> {
        run_lines(&mut KimiNormalizer::new(None), lines, stderr, exit)
    }

    fn deltas(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    const HINT: &str = "To resume this session: kimi -r 36a343e2-5389-4f9d-b59c-2bbb638bd4e3";

    #[test]
    fn growing_snapshots_stream_only_what_they_add() {
        let events = run(
            &[
                r#"{"role":"assistant","content":"Hel"}"#,
                r#"{"role":"assistant","content":[{"type":"text","text":"Hello"}]}"#,
                r#"{"role":"assistant","content":"Hello"}"#,
            ],
            &["", HINT],
            0,
        );
        assert_eq!(deltas(&events), ["Hel", "lo"]);
        let end = turn_end(&events);
        assert!(end.success);
        assert_eq!(end.result.as_deref(), Some("Hello"));
        assert_eq!(
            end.session_id.as_deref(),
            Some("36a343e2-5389-4f9d-b59c-2bbb638bd4e3")
        );
        assert!(events.iter().any(|e| matches!(e, Event::SessionId { .. })));
    }

    #[test]
    fn a_new_message_starts_a_new_block_and_tools_pair_up() {
        let events = run(
            &[
                r#"{"role":"assistant","content":"I will run it.","tool_calls":[{"type":"function","id":"c1","function":{"name":"Shell","arguments":"{\"command\":\"ls\"}"}}]}"#,
                r#"{"role":"tool","content":[{"type":"text","text":"<system>ERROR: nope</system>"}],"tool_call_id":"c1"}"#,
                r#"{"role":"assistant","content":"Done."}"#,
            ],
            &[],
            0,
        );
        assert_eq!(deltas(&events), ["I will run it.", "Done."]);
        assert!(events.iter().any(|e| matches!(e, Event::BlockReset)));
        assert!(events.iter().any(
            |e| matches!(e, Event::ToolUse(t) if t.kind == ToolKind::Execute && t.input["command"] == "ls")
        ));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ToolResult(r) if r.is_error))
        );
        assert_eq!(turn_end(&events).result.as_deref(), Some("Done."));
    }

    #[test]
    fn wrapped_plain_errors_fail_whatever_the_exit() {
        let wrapped = [
            "Error code: 429 - {'error': {'message': 'Rate limit reached for mock-model. Plea",
            "se try again in 1s. (mock)', 'type': 'requests'}}",
        ];
        for exit in [75, 1, 0] {
            let events = run(&wrapped, &[HINT], exit);
            let end = turn_end(&events);
            assert!(!end.success, "exit {exit}");
            let error = end.error.clone().unwrap();
            assert!(error.contains("Please try again"), "{error}");
        }
    }

    #[test]
    fn an_unfinished_turn_is_not_a_success() {
        let call = r#"{"role":"assistant","content":"","tool_calls":[{"type":"function","id":"c1","function":{"name":"Shell","arguments":"{}"}}]}"#;
        assert!(!turn_end(&run(&[call], &[], 0)).success);
        assert!(!turn_end(&run(&[], &[], 0)).success);
        let done = r#"{"role":"assistant","content":"ok"}"#;
        assert!(!turn_end(&run(&[done], &[], 1)).success);
        let events = run(&[done, "Max steps reached: 100"], &[], 1);
        assert!(
            turn_end(&events)
                .error
                .as_deref()
                .unwrap()
                .contains("Max steps")
        );
    }

    #[test]
    fn a_resumed_session_is_reported_before_kimi_prints_it() {
        let mut normalizer = KimiNormalizer::new(Some("s-1".into()));
        let mut out = Vec::new();
        normalizer.line(r#"{"role":"assistant","content":"hi"}"#, &mut out);
        assert_eq!(out[0], Event::SessionId { id: "s-1".into() });
        normalizer.stderr_line("To resume this session: kimi -r s-1", &mut out);
        assert_eq!(
            out.iter()
                .filter(|e| matches!(e, Event::SessionId { .. }))
                .count(),
            1
        );
    }
}
