//! `opencode run --format json` output → [`Event`]s.
//!
//! Facts this relies on (opencode 1.18.33; `shared/reference/real-clis-openai.md` §4, the
//! captures and the e2e tests):
//!
//! * every line is `{"type", "timestamp", "sessionID", …}`; `sessionID` (`ses_…`) is the id
//!   `--session` resumes;
//! * the types are `step_start`, `text`, `reasoning` (with `--thinking`), `tool_use`,
//!   `step_finish` and `error`. Parts arrive **whole**, never as deltas: a `text` part is one
//!   [`Event::Text`], a `reasoning` part one [`Event::ThinkingDelta`];
//! * `tool_use` carries a finished call: `state.status` `completed` (with `output`) or `error`
//!   (with `error`); a call refused because nobody could approve it says "The user rejected
//!   permission…" (reported as a [`Event::PermissionDecision`] by the bridge's policy), and
//!   opencode then ends the run without another model call;
//! * `step_finish.part.reason` is the model's finish reason (`stop`, `length`, `tool-calls`,
//!   `content-filter`, `error`, `unknown`, …) and carries the step's tokens and cost;
//! * `error` (`{name, data:{message, statusCode, …}}`) ends the run; opencode retries 429/5xx
//!   silently first. A dropped stream makes opencode loop on `unknown` steps forever (the
//!   bridge's deadlines stop it).
//!
//! There is no end-of-turn event: the run ends with the process. The outcome is decided at
//! exit ([`ExitTurn`]): an `error` event or a step that finished with `error` is a failure even
//! when opencode exits 0; otherwise the turn is complete only when the last step finished with
//! `stop`, `length` or `content-filter`, or with `tool-calls` after a refused call (the run
//! stops there); anything else, or a non-zero exit, is a failure.

use std::collections::HashSet;
use std::process::ExitStatus;

use bridge_core::event::{
    Event, FileDiff, StopReason, ToolKind, ToolResult, ToolUse, Usage, UsageScope,
};
use bridge_core::normalize::{ExitTurn, TurnUsage, json_object, str_at};
use bridge_core::permission::{DecisionKind, DecisionSource, EffectiveDecision};
use bridge_core::turn::Normalizer;
use serde_json::Value;

/// What opencode's tool error says when a call was refused for lack of approval.
pub const REJECTED: &str = "rejected permission";

/// The tool opencode runs for a call to a tool it does not offer (denied in this mode).
pub const INVALID_TOOL: &str = "invalid";

/// Normalized kind of an opencode tool.
///
/// ```
/// use bridge_channel_opencode::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("bash"), ToolKind::Execute);
/// assert_eq!(tool_kind("edit"), ToolKind::Edit);
/// assert_eq!(tool_kind("mcp_thing"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read" => ToolKind::Read,
        "edit" | "write" | "patch" | "multiedit" | "apply_patch" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "glob" | "grep" | "list" | "codesearch" => ToolKind::Search,
        "webfetch" | "websearch" => ToolKind::Fetch,
        "todowrite" | "todoread" | "task" | "skill" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The file change an `edit` (`{filePath, oldString, newString}`) or `write`
/// (`{filePath, content}`) call describes.
fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = str_at(input, "filePath").or_else(|| str_at(input, "path"))?;
    let text = |key: &str| str_at(input, key).map(str::to_string);
    let (old_text, new_text) = match name {
        "write" => (None, text("content")),
        "edit" => (text("oldString"), text("newString")),
        _ => return None,
    };
    Some(FileDiff {
        path: path.to_string(),
        old_text,
        new_text,
    })
}

/// The message of an `error` event: `data.message`, unwrapped when it is itself a JSON
/// document with a `message` (what opencode does for a mid-stream error), with the HTTP status.
///
/// ```
/// use bridge_channel_opencode::normalize::error_message;
/// let e = serde_json::json!({"name":"APIError","data":{"message":"bad key","statusCode":401}});
/// assert_eq!(error_message(&e), "bad key (HTTP 401)");
/// let e = serde_json::json!({"name":"UnknownError","data":{"message":"{\"message\":\"boom\"}"}});
/// assert_eq!(error_message(&e), "boom");
/// ```
pub fn error_message(error: &Value) -> String {
    let data = &error["data"];
    let raw = str_at(data, "message").unwrap_or("");
    let message = match serde_json::from_str::<Value>(raw) {
        Ok(inner) => str_at(&inner, "message").unwrap_or(raw).to_string(),
        Err(_) => raw.to_string(),
    };
    let message = if message.trim().is_empty() {
        str_at(error, "name").unwrap_or("error").to_string()
    } else {
        message
    };
    match data.get("statusCode").and_then(Value::as_u64) {
        Some(code) => format!("{message} (HTTP {code})"),
        None => message,
    }
}

/// Normalizer state for one `opencode run --format json` process.
#[derive(Debug, Default)]
pub struct OpencodeNormalizer {
    session_id: Option<String>,
    emitted_session: Option<String>,
    turn: ExitTurn,
    steps: usize,
    /// Text parts of the current step.
    step_text: String,
    /// A call in the current step was refused for lack of approval.
    step_refused: bool,
    /// The finish reason of the latest step, cleared when a new step starts.
    last_finish: Option<String>,
    /// Text of the step that finished last.
    last_text: Option<String>,
    tools: HashSet<String>,
    usage: TurnUsage,
}

impl OpencodeNormalizer {
    /// A normalizer for one process; `resume` is the session the request resumes, reported
    /// until opencode names its own.
    pub fn new(resume: Option<String>) -> Self {
        OpencodeNormalizer {
            session_id: resume,
            ..OpencodeNormalizer::default()
        }
    }

    fn session(&mut self, value: &Value, out: &mut Vec<Event>) {
        let Some(id) = str_at(value, "sessionID").filter(|s| !s.is_empty()) else {
            return;
        };
        if self.emitted_session.as_deref() != Some(id) {
            self.session_id = Some(id.to_string());
            self.emitted_session = Some(id.to_string());
            out.push(Event::SessionId { id: id.to_string() });
        }
    }

    fn tool(&mut self, part: &Value, out: &mut Vec<Event>) {
        let id = str_at(part, "callID")
            .or_else(|| str_at(part, "id"))
            .unwrap_or("")
            .to_string();
        let name = str_at(part, "tool").unwrap_or("tool");
        let state = &part["state"];
        let input = state.get("input").cloned().unwrap_or(Value::Null);
        if self.tools.insert(id.clone()) {
            out.push(Event::ToolUse(ToolUse {
                id: id.clone(),
                name: name.to_string(),
                kind: tool_kind(name),
                diff: tool_diff(name, &input),
                input,
            }));
        }
        match str_at(state, "status") {
            Some("completed") => out.push(Event::ToolResult(ToolResult {
                tool_use_id: id,
                content: Value::String(str_at(state, "output").unwrap_or("").to_string()),
                // opencode answers a call to a tool it does not offer (a denied one) through
                // its `invalid` tool, which "completes" with the error.
                is_error: name == INVALID_TOOL,
            })),
            Some("error") => {
                let error = str_at(state, "error").unwrap_or("the tool failed");
                if error.contains(REJECTED) {
                    self.step_refused = true;
                    out.push(Event::PermissionDecision(EffectiveDecision {
                        request_id: id.clone(),
                        requested: DecisionKind::Deny,
                        applied: DecisionKind::Deny,
                        source: DecisionSource::Policy,
                        note: Some(format!(
                            "opencode run cannot ask for approval: its permission config for this \
                             mode says `ask` for {name}, so opencode refused the call"
                        )),
                    }));
                }
                out.push(Event::ToolResult(ToolResult {
                    tool_use_id: id,
                    content: Value::String(error.to_string()),
                    is_error: true,
                }));
            }
            _ => {}
        }
    }

    fn step_finish(&mut self, part: &Value, out: &mut Vec<Event>) {
        let reason = str_at(part, "reason").unwrap_or("unknown").to_string();
        let input = u64_at(part, "/tokens/input");
        let output = u64_at(part, "/tokens/output");
        let reasoning = u64_at(part, "/tokens/reasoning");
        let cache_read = u64_at(part, "/tokens/cache/read");
        let cache_write = u64_at(part, "/tokens/cache/write");
        if input + output + reasoning + cache_read + cache_write > 0 {
            let usage = Usage {
                scope: UsageScope::Message,
                input_tokens: input,
                output_tokens: output,
                cache_read_input_tokens: cache_read,
                cache_creation_input_tokens: cache_write,
                reasoning_tokens: (reasoning > 0).then_some(reasoning),
                cost_usd: part
                    .get("cost")
                    .and_then(Value::as_f64)
                    .filter(|c| *c > 0.0),
                context_window: None,
                context_tokens: None,
            };
            self.usage.add(&usage);
            out.push(Event::Usage(usage));
        }
        if reason == "error" {
            self.turn
                .error("opencode: the model's answer failed (finish reason `error`)");
        }
        self.last_text = Some(std::mem::take(&mut self.step_text)).filter(|t| !t.is_empty());
        self.last_finish = Some(reason);
    }
}

impl Normalizer for OpencodeNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let Some(value) = json_object(line) else {
            self.turn.unparsed_line(crate::ID, line, out);
            return;
        };
        self.session(&value, out);
        let part = &value["part"];
        match str_at(&value, "type") {
            Some("step_start") => {
                if self.steps > 0 {
                    out.push(Event::BlockReset);
                }
                self.steps += 1;
                self.step_text.clear();
                self.step_refused = false;
                self.last_finish = None;
            }
            Some("text") => {
                if let Some(text) = str_at(part, "text").filter(|t| !t.is_empty()) {
                    self.step_text.push_str(text);
                    out.push(Event::Text {
                        text: text.to_string(),
                    });
                }
            }
            Some("reasoning") => {
                if let Some(text) = str_at(part, "text").filter(|t| !t.is_empty()) {
                    out.push(Event::ThinkingDelta {
                        text: text.to_string(),
                    });
                }
            }
            Some("tool_use") => self.tool(part, out),
            Some("step_finish") => self.step_finish(part, out),
            Some("error") => {
                let message = error_message(&value["error"]);
                self.turn.error(message);
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    fn finish(&mut self, exit: Option<&ExitStatus>, out: &mut Vec<Event>) {
        if let Some(usage) = self.usage.take() {
            out.push(Event::Usage(usage));
        }
        // A resume that fails prints nothing on stdout (`Session not found` on stderr, exit 1).
        if self.emitted_session.is_none()
            && self.turn.error_message().is_none()
            && !exit.is_some_and(ExitStatus::success)
            && let Some(id) = &self.session_id
        {
            self.turn
                .error(format!("opencode could not resume session {id}"));
        }
        let stop = match self.last_finish.as_deref() {
            Some("stop") => Some(StopReason::EndTurn),
            Some("length") => Some(StopReason::MaxTokens),
            Some("content-filter") => Some(StopReason::Refusal),
            // A refused call ends the run: the turn is over, the refusal is in the stream.
            Some("tool-calls") if self.step_refused => Some(StopReason::EndTurn),
            _ => None,
        };
        if let Some(stop) = stop {
            self.turn.complete(stop, self.last_text.clone());
        }
        self.turn
            .finish(crate::ID, exit, self.session_id.clone(), out);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use bridge_core::normalize::{run_lines, turn_end};

    use super::*;

    fn run(lines: &[&str], exit: i32) -> Vec<Event> {
        run_lines(&mut OpencodeNormalizer::new(None), lines, &[], exit)
    }

    const START: &str = r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#;
    const TEXT: &str =
        r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Hello"}}"#;
    const STOP: &str = r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":10,"output":2,"reasoning":1,"cache":{"write":0,"read":5}},"cost":0.5}}"#;
    const TOOL_CALLS: &str = r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","tokens":{"input":0,"output":0,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}"#;
    const REFUSED: &str = r#"{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"error","input":{"command":"rm x"},"error":"The user rejected permission to use this specific tool call."}}}"#;
    const ERROR: &str = r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"boom","statusCode":500}}}"#;

    #[test]
    fn a_text_turn_succeeds_once_with_usage() {
        let events = run(&[START, TEXT, STOP], 0);
        assert_eq!(events[0], Event::SessionId { id: "ses_1".into() });
        assert_eq!(
            events[1],
            Event::Text {
                text: "Hello".into()
            }
        );
        let usage: Vec<&Usage> = events
            .iter()
            .filter_map(|e| match e {
                Event::Usage(u) => Some(u),
                _ => None,
            })
            .collect();
        assert_eq!(usage.len(), 2);
        assert_eq!(usage[0].reasoning_tokens, Some(1));
        assert_eq!(usage[1].scope, UsageScope::Turn);
        assert_eq!(usage[1].cost_usd, Some(0.5));
        let end = turn_end(&events);
        assert!(end.success);
        assert_eq!(end.result.as_deref(), Some("Hello"));
        assert_eq!(end.session_id.as_deref(), Some("ses_1"));
    }

    #[test]
    fn an_error_event_fails_the_turn_even_with_exit_zero() {
        for lines in [&[START, TEXT, STOP, ERROR][..], &[ERROR][..]] {
            let events = run(lines, 0);
            let end = turn_end(&events);
            assert!(!end.success, "{events:?}");
            assert_eq!(end.error.as_deref(), Some("boom (HTTP 500)"));
        }
    }

    #[test]
    fn a_failed_or_unfinished_step_is_never_a_success() {
        let failed = r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"error"}}"#;
        assert!(!turn_end(&run(&[START, TEXT, failed], 0)).success);
        let unknown = r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"unknown"}}"#;
        assert!(!turn_end(&run(&[START, TEXT, unknown], 0)).success);
        // A tool step the run did not follow up, and a stream cut after a step start.
        assert!(!turn_end(&run(&[START, TEXT, TOOL_CALLS], 0)).success);
        assert!(!turn_end(&run(&[START, TEXT, STOP, START], 0)).success);
        // A complete stream with a non-zero exit.
        assert!(!turn_end(&run(&[START, TEXT, STOP], 1)).success);
    }

    #[test]
    fn a_refused_call_is_reported_and_ends_the_turn() {
        let events = run(&[START, REFUSED, TOOL_CALLS], 0);
        let decision = events
            .iter()
            .find_map(|e| match e {
                Event::PermissionDecision(d) => Some(d),
                _ => None,
            })
            .expect("a permission decision");
        assert_eq!(decision.source, DecisionSource::Policy);
        assert_eq!(decision.request_id, "c1");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ToolResult(r) if r.is_error && r.tool_use_id == "c1"))
        );
        assert!(turn_end(&events).success);
    }

    #[test]
    fn tools_carry_kind_and_diff_and_new_steps_reset_the_block() {
        let edit = r#"{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"edit","callID":"c2","state":{"status":"completed","input":{"filePath":"/w/a.rs","oldString":"a","newString":"b"},"output":"ok"}}}"#;
        let events = run(&[START, edit, TOOL_CALLS, START, TEXT, STOP], 0);
        let tool = events
            .iter()
            .find_map(|e| match e {
                Event::ToolUse(t) => Some(t),
                _ => None,
            })
            .unwrap();
        assert_eq!(tool.kind, ToolKind::Edit);
        assert_eq!(tool.diff.as_ref().unwrap().new_text.as_deref(), Some("b"));
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::BlockReset))
                .count(),
            1
        );
        assert!(turn_end(&events).success);
    }

    #[test]
    fn a_failed_resume_names_the_session() {
        let mut normalizer = OpencodeNormalizer::new(Some("ses_gone".into()));
        let mut out = Vec::new();
        normalizer.finish(Some(&ExitStatus::from_raw(1 << 8)), &mut out);
        let error = turn_end(&out).error.clone().unwrap();
        assert!(error.contains("ses_gone"), "{error}");
        assert_eq!(turn_end(&out).session_id.as_deref(), Some("ses_gone"));
    }

    #[test]
    fn plain_text_is_kept_for_the_error() {
        let events = run(&["Error: Session not found"], 1);
        let error = turn_end(&events).error.clone().unwrap();
        assert!(error.contains("Session not found"), "{error}");
    }
}
