//! The terminal view of a turn (`--format text`, the default when stdout is a terminal).
//!
//! stdout carries only the assistant's answer, streamed as it arrives, so
//! `bridge claude send "…" > answer.md` keeps just the answer. Everything else a person wants
//! to follow goes to stderr, one line each: thinking (dimmed), tool calls and their outcome,
//! approvals, retries, warnings, errors, and the session id to resume with. Colours are used
//! only when asked for (a terminal without `NO_COLOR`). Every line is redacted; deltas reach the
//! sink already redacted across their boundaries by the driver.
//!
//! ```
//! use bridge_core::driver::Sink;
//! use bridge_core::event::{Event, TurnEnd, StopReason};
//! use bridge_core::redact::Redactor;
//! use bridge_core::text::TextSink;
//!
//! let mut sink = TextSink::new(Vec::new(), Vec::new(), Redactor::new(), false);
//! for event in [
//!     Event::TextDelta { text: "Hello".into() },
//!     Event::TextDelta { text: " there.".into() },
//!     Event::TurnEnd(TurnEnd {
//!         success: true,
//!         stop_reason: StopReason::EndTurn,
//!         session_id: Some("abc".into()),
//!         result: Some("Hello there.".into()),
//!         error: None,
//!     }),
//! ] {
//!     sink.write_event(&event).unwrap();
//! }
//! let (out, err) = sink.into_parts();
//! assert_eq!(String::from_utf8(out).unwrap(), "Hello there.\n");
//! assert_eq!(String::from_utf8(err).unwrap(), "session abc\n");
//! ```

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::driver::Sink;
use crate::event::{ErrorInfo, Event, StatusKind, ToolResult, ToolUse, TurnEnd, Usage, UsageScope};
use crate::permission::{DecisionKind, EffectiveDecision, PermissionRequest, RequestKind};
use crate::redact::Redactor;

/// Longest summary of a tool's input or output shown on one line, in characters.
const SUMMARY_CHARS: usize = 120;

/// Approvals shown to the person at the terminal and not yet decided, oldest first: a plain
/// answer typed on stdin (`y`, `a`, `n`) is for the oldest one.
#[derive(Debug, Clone, Default)]
pub struct OpenApprovals {
    ids: Arc<Mutex<VecDeque<String>>>,
}

impl OpenApprovals {
    /// The oldest approval still waiting, if any.
    pub fn oldest(&self) -> Option<String> {
        self.ids.lock().ok()?.front().cloned()
    }

    fn open(&self, id: &str) {
        if let Ok(mut ids) = self.ids.lock() {
            ids.push_back(id.to_string());
        }
    }

    fn close(&self, id: &str) {
        if let Ok(mut ids) = self.ids.lock() {
            ids.retain(|open| open != id);
        }
    }
}

/// What a plain answer typed at the terminal means: `y`/`yes` allow once, `a`/`always` allow
/// for the session, `n`/`no` deny, `c`/`cancel` stop the turn; `None` for anything else.
///
/// ```
/// use bridge_core::permission::DecisionKind;
/// use bridge_core::text::typed_answer;
/// assert_eq!(typed_answer(" Y\n"), Some(DecisionKind::AllowOnce));
/// assert_eq!(typed_answer("always"), Some(DecisionKind::AllowSession));
/// assert_eq!(typed_answer("maybe"), None);
/// ```
pub fn typed_answer(line: &str) -> Option<DecisionKind> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(DecisionKind::AllowOnce),
        "a" | "always" => Some(DecisionKind::AllowSession),
        "n" | "no" => Some(DecisionKind::Deny),
        "c" | "cancel" => Some(DecisionKind::Cancel),
        _ => None,
    }
}

/// The terminal view: the answer on `out`, the rest of the turn on `err`.
pub struct TextSink<O: Write, E: Write> {
    out: O,
    err: E,
    redactor: Redactor,
    color: bool,
    /// Approvals a typed answer can be for; `None` when nobody can type one.
    approvals: Option<OpenApprovals>,
    /// Where the last write left each stream: at the start of a line or not.
    out_at_line_start: bool,
    err_in_thinking: bool,
    /// Something was written to `out` in this turn.
    answered: bool,
    /// The turn's token use: its `turn` usage, else the sum of its messages'.
    turn_usage: Option<Usage>,
    message_usage: Option<Usage>,
}

impl<O: Write, E: Write> TextSink<O, E> {
    /// A view writing the answer to `out` and the rest to `err`; `color` enables ANSI styles.
    pub fn new(out: O, err: E, redactor: Redactor, color: bool) -> Self {
        TextSink {
            out,
            err,
            redactor,
            color,
            approvals: None,
            out_at_line_start: true,
            err_in_thinking: false,
            answered: false,
            turn_usage: None,
            message_usage: None,
        }
    }

    /// Approvals are answered by typing on stdin: requests show how, and are tracked in
    /// `approvals` until decided.
    pub fn answered_by_typing(mut self, approvals: OpenApprovals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The two writers (to read the output back in tests).
    pub fn into_parts(self) -> (O, E) {
        (self.out, self.err)
    }

    fn answer(&mut self, text: &str) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.end_thinking()?;
        let text = self.redactor.redact(text);
        self.out.write_all(text.as_bytes())?;
        self.out.flush()?;
        self.out_at_line_start = text.ends_with('\n');
        self.answered = true;
        Ok(())
    }

    /// Ends the answer's current line, so what follows starts on its own.
    fn end_answer_line(&mut self) -> std::io::Result<()> {
        if !self.out_at_line_start {
            self.out.write_all(b"\n")?;
            self.out.flush()?;
            self.out_at_line_start = true;
        }
        Ok(())
    }

    fn thinking(&mut self, text: &str) -> std::io::Result<()> {
        let text = self.redactor.redact(text).into_owned();
        if !self.err_in_thinking {
            self.err_in_thinking = true;
            let prefix = self.style("2", "thinking: ");
            self.err.write_all(prefix.as_bytes())?;
        }
        let text = self.style("2", &text.replace('\n', " "));
        self.err.write_all(text.as_bytes())?;
        self.err.flush()
    }

    fn end_thinking(&mut self) -> std::io::Result<()> {
        if self.err_in_thinking {
            self.err_in_thinking = false;
            self.err.write_all(b"\n")?;
            self.err.flush()?;
        }
        Ok(())
    }

    /// One progress line on `err` (single line, redacted), styled with the ANSI `sgr` code.
    fn note(&mut self, sgr: &str, line: &str) -> std::io::Result<()> {
        self.end_thinking()?;
        let line = self.redactor.redact(line).replace(['\r', '\n'], " ");
        let line = self.style(sgr, &line);
        writeln!(self.err, "{line}")?;
        self.err.flush()
    }

    fn style(&self, sgr: &str, text: &str) -> String {
        if self.color && !sgr.is_empty() {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn tool_use(&mut self, tool: &ToolUse) -> std::io::Result<()> {
        self.end_answer_line()?;
        let summary = input_summary(&tool.input);
        let line = if summary.is_empty() {
            format!("> {}", tool.name)
        } else {
            format!("> {} {summary}", tool.name)
        };
        self.note("36", &line)
    }

    fn tool_result(&mut self, result: &ToolResult) -> std::io::Result<()> {
        let text = content_text(&result.content);
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().map(|l| clip(l.trim())).unwrap_or_default();
        let more = lines.count();
        let more = match more {
            0 => String::new(),
            1 => " (+1 line)".to_string(),
            n => format!(" (+{n} lines)"),
        };
        if result.is_error {
            self.note("31", &format!("  failed: {first}{more}"))
        } else if first.is_empty() {
            self.note("2", "  done")
        } else {
            self.note("2", &format!("  {first}{more}"))
        }
    }

    fn permission_request(&mut self, request: &PermissionRequest) -> std::io::Result<()> {
        self.end_answer_line()?;
        let what = match request.kind {
            RequestKind::Tool => {
                let summary = request
                    .description
                    .clone()
                    .unwrap_or_else(|| input_summary(&request.input));
                format!("{} {summary}", request.tool_name)
            }
            RequestKind::Question => format!(
                "{} asks: {}",
                request.tool_name,
                input_summary(&request.input)
            ),
            RequestKind::PlanApproval => "leave plan mode and carry out the plan".to_string(),
        };
        let line = match &self.approvals {
            Some(approvals) => {
                approvals.open(&request.request_id);
                let always = if request.options.contains(&DecisionKind::AllowSession) {
                    " / [a]lways"
                } else {
                    ""
                };
                format!("? allow {what}  [y]es{always} / [n]o / [c]ancel, then Enter")
            }
            None => format!("? allow {what}"),
        };
        self.note("33;1", &line)
    }

    fn permission_decision(&mut self, decision: &EffectiveDecision) -> std::io::Result<()> {
        if let Some(approvals) = &self.approvals {
            approvals.close(&decision.request_id);
        }
        let applied = match decision.applied {
            DecisionKind::AllowOnce => "allowed",
            DecisionKind::AllowSession => "allowed for the session",
            DecisionKind::Deny => "denied",
            DecisionKind::Cancel => "denied, turn cancelled",
        };
        let source = serde_json::to_value(decision.source)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
            .unwrap_or_default();
        let line = match &decision.note {
            Some(note) => format!("  {applied} ({source}: {note})"),
            None => format!("  {applied} ({source})"),
        };
        self.note("33", &line)
    }

    fn error(&mut self, error: &ErrorInfo) -> std::io::Result<()> {
        self.end_answer_line()?;
        self.note("31;1", &format!("error: {}", error.message))?;
        if let Some(tail) = &error.stderr_tail {
            for line in tail.lines().filter(|l| !l.trim().is_empty()) {
                self.note("31", &format!("  | {line}"))?;
            }
        }
        Ok(())
    }

    fn turn_end(&mut self, end: &TurnEnd) -> std::io::Result<()> {
        // An answer that came only as the result (no deltas) is still the answer.
        if !self.answered
            && end.success
            && let Some(result) = end.result.as_deref()
        {
            self.answer(result)?;
        }
        self.end_answer_line()?;
        self.end_thinking()?;
        let usage = self.turn_usage.as_ref().or(self.message_usage.as_ref());
        let mut summary: Vec<String> = end
            .session_id
            .iter()
            .map(|id| format!("session {id}"))
            .collect();
        if let Some(usage) = usage {
            let input = usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens;
            summary.push(format!("{input} in / {} out tokens", usage.output_tokens));
            if let Some(cost) = usage.cost_usd.filter(|c| *c > 0.0) {
                summary.push(format!("${cost:.4}"));
            }
        }
        if !summary.is_empty() {
            self.note("2", &summary.join(" · "))?;
        }
        Ok(())
    }

    fn usage(&mut self, usage: &Usage) {
        match usage.scope {
            UsageScope::Turn => self.turn_usage = Some(usage.clone()),
            UsageScope::Message => match &mut self.message_usage {
                Some(sum) => sum.accumulate(usage),
                None => self.message_usage = Some(usage.clone()),
            },
        }
    }
}

impl<O: Write, E: Write> Sink for TextSink<O, E> {
    fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn add_secret(&mut self, secret: &str) {
        self.redactor.add(secret);
    }

    fn write_event(&mut self, event: &Event) -> std::io::Result<()> {
        match event {
            Event::TextDelta { text } => self.answer(text),
            Event::Text { text } => {
                self.answer(text)?;
                self.end_answer_line()
            }
            Event::ThinkingDelta { text } => self.thinking(text),
            Event::BlockReset => self.end_thinking(),
            Event::ToolUse(tool) => self.tool_use(tool),
            Event::ToolResult(result) => self.tool_result(result),
            Event::Status(status) => match status.kind {
                StatusKind::Requesting => Ok(()),
                _ => self.note("33", &status.message),
            },
            Event::Warning { message, .. } => self.note("33", &format!("warning: {message}")),
            Event::PermissionRequest(request) => self.permission_request(request),
            Event::PermissionDecision(decision) => self.permission_decision(decision),
            Event::Error(error) => self.error(error),
            Event::TurnEnd(end) => self.turn_end(end),
            Event::Usage(usage) => {
                self.usage(usage);
                Ok(())
            }
            Event::TurnStart { .. }
            | Event::SessionId { .. }
            | Event::Message { .. }
            | Event::Raw { .. } => Ok(()),
        }
    }
}

/// The part of a tool's input a person recognises it by: the command, path, pattern, URL or
/// query; else the compact JSON. Clipped to one short line.
fn input_summary(input: &Value) -> String {
    const KEYS: [&str; 8] = [
        "command",
        "file_path",
        "path",
        "pattern",
        "url",
        "query",
        "description",
        "prompt",
    ];
    let picked = KEYS
        .iter()
        .find_map(|key| input.get(key))
        .map(|value| match value {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        });
    match (picked, input) {
        (Some(text), _) => clip(&text),
        (None, Value::Null) => String::new(),
        (None, Value::Object(map)) if map.is_empty() => String::new(),
        (None, other) => clip(&other.to_string()),
    }
}

/// The text of a tool result: a string, or the `text` of Claude-style content blocks.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or(b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other
            .get("text")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_string),
    }
}

/// `text` on one line, at most [`SUMMARY_CHARS`] characters (with `…` when cut).
fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= SUMMARY_CHARS {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::{ErrorCode, Status, StopReason, ToolKind};
    use crate::permission::DecisionSource;

    fn turn() -> Vec<Event> {
        vec![
            Event::TurnStart {
                provider: "claude".into(),
            },
            Event::SessionId { id: "s-1".into() },
            Event::ThinkingDelta {
                text: "Let me\nlook.".into(),
            },
            Event::BlockReset,
            Event::TextDelta {
                text: "I will run it.".into(),
            },
            Event::ToolUse(ToolUse {
                id: "t1".into(),
                name: "Bash".into(),
                kind: ToolKind::Execute,
                input: json!({"command": "echo hello", "description": "Say hello"}),
                diff: None,
            }),
            Event::PermissionRequest(PermissionRequest {
                request_id: "r1".into(),
                kind: RequestKind::Tool,
                tool_name: "Bash".into(),
                tool_kind: ToolKind::Execute,
                input: json!({"command": "echo hello"}),
                description: None,
                paths: vec![],
                tool_use_id: Some("t1".into()),
                options: vec![
                    DecisionKind::AllowOnce,
                    DecisionKind::AllowSession,
                    DecisionKind::Deny,
                ],
                native: None,
            }),
            Event::PermissionDecision(EffectiveDecision {
                request_id: "r1".into(),
                requested: DecisionKind::AllowOnce,
                applied: DecisionKind::AllowOnce,
                source: DecisionSource::Client,
                note: None,
            }),
            Event::ToolResult(ToolResult {
                tool_use_id: "t1".into(),
                content: json!([{"type": "text", "text": "hello\nworld\nagain\n"}]),
                is_error: false,
            }),
            Event::Status(Status {
                kind: StatusKind::Retry,
                message: "Retrying after HTTP 529 (attempt 1/10)".into(),
                attempt: Some(1),
                max_attempts: Some(10),
            }),
            Event::BlockReset,
            Event::TextDelta {
                text: "Done: hello ".into(),
            },
            Event::TextDelta {
                text: "sk-canary-0123456789".into(),
            },
            Event::Warning {
                code: "untested_version".into(),
                message: "Claude Code 9.0.0 is newer than tested".into(),
            },
            Event::Usage(Usage {
                scope: UsageScope::Message,
                input_tokens: 10,
                output_tokens: 5,
                cache_read_input_tokens: 100,
                cache_creation_input_tokens: 0,
                reasoning_tokens: None,
                cost_usd: None,
                context_window: None,
                context_tokens: None,
            }),
            Event::Usage(Usage {
                scope: UsageScope::Turn,
                input_tokens: 12,
                output_tokens: 7,
                cache_read_input_tokens: 200,
                cache_creation_input_tokens: 3,
                reasoning_tokens: None,
                cost_usd: Some(0.01234),
                context_window: None,
                context_tokens: None,
            }),
            Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: StopReason::EndTurn,
                session_id: Some("s-1".into()),
                result: Some("Done".into()),
                error: None,
            }),
        ]
    }

    fn render(events: &[Event], color: bool, typed: Option<OpenApprovals>) -> (String, String) {
        let mut redactor = Redactor::new();
        redactor.add("sk-canary-0123456789");
        let mut sink = TextSink::new(Vec::new(), Vec::new(), redactor, color);
        if let Some(typed) = typed {
            sink = sink.answered_by_typing(typed);
        }
        for event in events {
            sink.write_event(event).unwrap();
        }
        let (out, err) = sink.into_parts();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn the_answer_goes_to_stdout_and_the_rest_to_stderr() {
        let typed = OpenApprovals::default();
        let (out, err) = render(&turn(), false, Some(typed.clone()));
        assert_eq!(out, "I will run it.\nDone: hello [redacted]\n");
        insta::assert_snapshot!("text_turn_stderr", err);
        // The decided approval is no longer open.
        assert_eq!(typed.oldest(), None);
    }

    #[test]
    fn colours_only_when_asked_for() {
        let (_, plain) = render(&turn(), false, None);
        assert!(!plain.contains('\x1b'));
        let (out, colored) = render(&turn(), true, None);
        assert!(
            colored.contains("\x1b[36m> Bash echo hello\x1b[0m"),
            "{colored}"
        );
        assert!(!out.contains('\x1b'), "the answer is never styled: {out}");
        // Without a typist, the request does not offer keys.
        assert!(plain.contains("? allow Bash echo hello\n"), "{plain}");
    }

    #[test]
    fn open_approvals_are_answered_oldest_first() {
        let typed = OpenApprovals::default();
        let mut events = turn();
        // Drop the decision: r1 stays open; a second request queues behind it.
        events.retain(|e| !matches!(e, Event::PermissionDecision(_)));
        let (_, err) = render(&events[..7], false, Some(typed.clone()));
        assert!(
            err.contains("? allow Bash echo hello  [y]es / [a]lways / [n]o / [c]ancel, then Enter"),
            "{err}"
        );
        assert_eq!(typed.oldest().as_deref(), Some("r1"));
    }

    #[test]
    fn a_failed_turn_shows_the_error_and_its_stderr_tail_and_no_answer() {
        let (out, err) = render(
            &[
                Event::Error(ErrorInfo {
                    code: ErrorCode::Provider,
                    message: "401 invalid x-api-key".into(),
                    stderr_tail: Some("line one\n\nline two".into()),
                }),
                Event::TurnEnd(TurnEnd {
                    success: false,
                    stop_reason: StopReason::Error,
                    session_id: None,
                    result: Some("partial".into()),
                    error: Some("401 invalid x-api-key".into()),
                }),
            ],
            false,
            None,
        );
        assert_eq!(out, "");
        assert_eq!(
            err,
            "error: 401 invalid x-api-key\n  | line one\n  | line two\n"
        );
    }

    #[test]
    fn a_result_without_deltas_is_the_answer() {
        let (out, _) = render(
            &[Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: StopReason::EndTurn,
                session_id: None,
                result: Some("Whole answer.".into()),
                error: None,
            })],
            false,
            None,
        );
        assert_eq!(out, "Whole answer.\n");
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(input_summary(&json!({"file_path": "/a/b.rs"})), "/a/b.rs");
        assert_eq!(input_summary(&json!({"command": ["ls", "-la"]})), "ls -la");
        assert_eq!(input_summary(&json!({})), "");
        assert_eq!(input_summary(&json!({"x": 1})), r#"{"x":1}"#);
        let long = "word ".repeat(100);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), SUMMARY_CHARS);
        assert!(clipped.ends_with('…'));
        assert_eq!(content_text(&json!("a\nb")), "a\nb");
    }
}
