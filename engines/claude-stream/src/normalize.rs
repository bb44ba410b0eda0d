//! Claude Code `stream-json` output → [`Event`]s.
//!
//! Facts this relies on (Claude Code 2.1.197, `--verbose --include-partial-messages`):
//!
//! * every line is one JSON object with a `type`; key order changed across versions, so lines
//!   are parsed, never prefix-matched;
//! * `system/init` carries the session id first; every later line repeats it;
//! * text and thinking arrive as `stream_event` deltas; the `assistant` line of each content
//!   block repeats the whole block (one line per block, all with the same message id);
//! * after a mid-stream API error the CLI silently retries *without* streaming, so a block can
//!   arrive only as an `assistant` snapshot: the part not yet streamed is filled in as a delta;
//! * API errors end in a synthetic assistant message plus a `result` with `is_error:true` and,
//!   confusingly, `subtype:"success"`: `is_error` decides;
//! * lines with a non-null `parent_tool_use_id` belong to sub-agents and are not shown, as in
//!   ai-bridge.
//!
//! Other CLIs print the same shape with small differences; a [`Dialect`] describes them, so
//! one normalizer serves them all ([`CLAUDE`] here, Qwen Code's in the qwen crate).

use bridge_core::event::{
    ErrorCode, Event, FileDiff, Status, StatusKind, StopReason, ToolKind, ToolResult, ToolUse,
    TurnEnd, Usage, UsageScope,
};
use bridge_core::normalize::{fail_turn, json_event, str_at, u32_at, u64_at};
use bridge_core::turn::Normalizer;
use serde_json::Value;

use crate::deltas::{BlockDeltas, BlockKind, Correction, DeltaMode};

/// How a CLI's stream-json output differs from Claude Code's.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The CLI's name in messages (`claude`).
    pub cli: &'static str,
    /// Its human name (`Claude Code`).
    pub display_name: &'static str,
    /// Normalized kind of a tool, by name.
    pub tool_kind: fn(&str) -> ToolKind,
    /// The file change a tool call's input describes.
    pub tool_diff: fn(&str, &Value) -> Option<FileDiff>,
    /// Every `assistant` line has an id of its own (Qwen Code: one uuid per content block),
    /// so once the stream has `message_start` events only they begin a new message. Claude
    /// repeats the API message id on every block, and a new id means an unstreamed message.
    pub ids_per_block: bool,
    /// Where an API error the CLI reports as assistant text begins (Qwen Code:
    /// `[API Error: `, with `result.is_error:false` and exit 0). That part is not shown as
    /// text, and the turn fails with it.
    pub api_error_marker: Option<&'static str>,
}

/// Claude Code.
pub const CLAUDE: Dialect = Dialect {
    cli: "claude",
    display_name: "Claude Code",
    tool_kind,
    tool_diff,
    ids_per_block: false,
    api_error_marker: None,
};

/// Normalizer state for one Claude Code process (or a CLI with the same output, see
/// [`Dialect`]).
#[derive(Debug)]
pub struct ClaudeNormalizer {
    dialect: &'static Dialect,
    session_id: Option<String>,
    emitted_session_id: Option<String>,
    message: MessageFill,
    usage: Usage0,
    /// A `message_start` was seen: the CLI streams partial messages.
    streaming: bool,
    /// An API error reported as text ([`Dialect::api_error_marker`]).
    api_error: Option<String>,
    /// How content-block deltas are read (relays may send cumulative snapshots).
    deltas: BlockDeltas,
}

impl Default for ClaudeNormalizer {
    fn default() -> Self {
        ClaudeNormalizer::with_dialect(&CLAUDE)
    }
}

/// Text and thinking of the current API message: what was streamed as deltas and what the
/// block snapshots said, so a snapshot's unstreamed tail can be filled in.
#[derive(Debug, Default)]
struct MessageFill {
    id: Option<String>,
    text_streamed: Streamed,
    text_snapshot: String,
    thinking_streamed: Streamed,
    thinking_snapshot: String,
}

/// What was streamed so far, in constant memory: its length and a running FNV-1a hash, enough
/// to tell whether a snapshot starts with it (a flood of deltas must not be kept in memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Streamed {
    len: usize,
    hash: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

impl Default for Streamed {
    fn default() -> Self {
        Streamed {
            len: 0,
            hash: FNV_OFFSET,
        }
    }
}

impl Streamed {
    fn push(&mut self, text: &str) {
        self.len += text.len();
        self.hash = fnv(self.hash, text.as_bytes());
    }

    fn of(text: &str) -> Streamed {
        let mut streamed = Streamed::default();
        streamed.push(text);
        streamed
    }

    /// Whether `snapshot` begins with exactly what was streamed.
    fn is_prefix_of(&self, snapshot: &str) -> bool {
        snapshot.is_char_boundary(self.len) && Streamed::of(&snapshot[..self.len]) == *self
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Usage0 {
    input: u64,
    cache_creation: u64,
    cache_read: u64,
}

/// Normalized kind of a Claude Code tool.
///
/// ```
/// use bridge_claude_stream::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("Bash"), ToolKind::Execute);
/// assert_eq!(tool_kind("mcp__fs__read_file"), ToolKind::Other);
/// ```
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Read" | "NotebookRead" | "BashOutput" | "TaskOutput" => ToolKind::Read,
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => ToolKind::Edit,
        "Bash" | "KillShell" | "KillBash" => ToolKind::Execute,
        "Grep" | "Glob" | "LS" | "ToolSearch" => ToolKind::Search,
        "WebFetch" | "WebSearch" => ToolKind::Fetch,
        "TodoWrite" | "Task" | "Agent" | "TaskCreate" | "TaskUpdate" => ToolKind::Think,
        "ExitPlanMode" | "EnterPlanMode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The file change described by a Claude Code Edit/Write-style tool input
/// (`file_path`, `old_string`, `new_string`, `content`, …).
///
/// ```
/// use bridge_claude_stream::normalize::tool_diff;
/// let diff = tool_diff("Write", &serde_json::json!({"file_path": "a.txt", "content": "hi"})).unwrap();
/// assert_eq!((diff.path.as_str(), diff.new_text.as_deref()), ("a.txt", Some("hi")));
/// ```
pub fn tool_diff(name: &str, input: &Value) -> Option<FileDiff> {
    let path = str_at(input, "file_path").or_else(|| str_at(input, "notebook_path"))?;
    let (old_text, new_text) = match name {
        "Edit" => (
            str_at(input, "old_string").map(str::to_string),
            str_at(input, "new_string").map(str::to_string),
        ),
        "Write" => (None, str_at(input, "content").map(str::to_string)),
        "NotebookEdit" => (None, str_at(input, "new_source").map(str::to_string)),
        "MultiEdit" => {
            let edits = input.get("edits").and_then(Value::as_array)?;
            let join = |key: &str| {
                edits
                    .iter()
                    .filter_map(|e| str_at(e, key))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            (Some(join("old_string")), Some(join("new_string")))
        }
        _ => return None,
    };
    Some(FileDiff {
        path: path.to_string(),
        old_text,
        new_text,
    })
}

/// Appends the part of `snapshot` not yet covered by `streamed` as a delta.
fn fill_tail(
    streamed: &mut Streamed,
    snapshot: &str,
    delta: impl Fn(String) -> Event,
    out: &mut Vec<Event>,
) {
    if streamed.len > snapshot.len() {
        // More was streamed than the snapshots hold so far (a later block's deltas arrived
        // before its snapshot): nothing to fill.
        return;
    }
    if streamed.is_prefix_of(snapshot) {
        let tail = &snapshot[streamed.len..];
        if !tail.is_empty() {
            out.push(delta(tail.to_string()));
            streamed.push(tail);
        }
    } else {
        // The snapshot disagrees with what was streamed (a retried response that differs):
        // start a new segment with the full snapshot rather than splicing mismatched text.
        out.push(Event::BlockReset);
        out.push(delta(snapshot.to_string()));
        *streamed = Streamed::of(snapshot);
    }
}

impl ClaudeNormalizer {
    /// A fresh normalizer for Claude Code.
    pub fn new() -> Self {
        ClaudeNormalizer::default()
    }

    /// A fresh normalizer for a CLI that speaks `dialect`.
    pub fn with_dialect(dialect: &'static Dialect) -> Self {
        ClaudeNormalizer {
            dialect,
            session_id: None,
            emitted_session_id: None,
            message: MessageFill::default(),
            usage: Usage0::default(),
            streaming: false,
            api_error: None,
            deltas: BlockDeltas::new(DeltaMode::Incremental),
        }
    }

    /// The same normalizer, reading content-block deltas in `mode` (see [`crate::deltas`]):
    /// Anthropic-compatible relays may send cumulative snapshots instead of increments.
    pub fn with_delta_mode(mut self, mode: DeltaMode) -> Self {
        self.deltas = BlockDeltas::new(mode);
        self
    }

    /// Emits what one content-block delta became: its increment, or a correction (a warning,
    /// a reset of the message segment, and the message's de-duplicated text so far).
    fn block_delta(&mut self, index: u64, kind: BlockKind, delta: &str, out: &mut Vec<Event>) {
        match self.deltas.delta(index, kind, delta) {
            Correction::Append(text) if text.is_empty() => {}
            Correction::Append(text) => match kind {
                BlockKind::Text => {
                    self.message.text_streamed.push(&text);
                    out.push(Event::TextDelta { text });
                }
                BlockKind::Thinking => {
                    self.message.thinking_streamed.push(&text);
                    out.push(Event::ThinkingDelta { text });
                }
            },
            Correction::Reset(reason) => {
                out.push(Event::warning("relay_snapshot", reason));
                out.push(Event::BlockReset);
                out.extend(self.deltas.replay());
            }
        }
    }

    /// `text` without an API error the dialect reports as text; the error is recorded.
    fn strip_api_error<'t>(&mut self, text: &'t str) -> &'t str {
        let Some(marker) = self.dialect.api_error_marker else {
            return text;
        };
        let Some(at) = text.find(marker) else {
            return text;
        };
        if self.api_error.is_none() {
            let error = text[at..].trim();
            let error = error.strip_prefix('[').unwrap_or(error);
            let error = error.strip_suffix(']').unwrap_or(error);
            self.api_error = Some(error.to_string());
        }
        &text[..at]
    }

    fn note_session(&mut self, line: &Value, out: &mut Vec<Event>) {
        let Some(id) = str_at(line, "session_id").filter(|id| !id.is_empty()) else {
            return;
        };
        if self.emitted_session_id.as_deref() != Some(id) {
            self.emitted_session_id = Some(id.to_string());
            out.push(Event::SessionId { id: id.to_string() });
        }
        self.session_id = Some(id.to_string());
    }

    fn start_message(&mut self, id: Option<&str>) {
        self.message = MessageFill {
            id: id.map(str::to_string),
            ..MessageFill::default()
        };
    }

    fn system(&mut self, line: &Value, out: &mut Vec<Event>) {
        match str_at(line, "subtype") {
            Some("init") => out.push(Event::Message {
                message: line.clone(),
            }),
            Some("api_retry") => {
                let attempt = u32_at(line, "attempt");
                let max = u32_at(line, "max_retries");
                let status = line
                    .get("error_status")
                    .and_then(Value::as_u64)
                    .map(|s| format!("HTTP {s}"))
                    .unwrap_or_else(|| "an API error".into());
                let kind = str_at(line, "error").unwrap_or("error");
                out.push(Event::Status(Status {
                    kind: StatusKind::Retry,
                    message: format!(
                        "Retrying after {status} ({kind}), attempt {}/{}",
                        attempt.unwrap_or(0),
                        max.unwrap_or(0)
                    ),
                    attempt,
                    max_attempts: max,
                }));
            }
            Some("status") if str_at(line, "status") == Some("requesting") => {
                out.push(Event::Status(Status {
                    kind: StatusKind::Requesting,
                    message: "Waiting for the model".into(),
                    attempt: None,
                    max_attempts: None,
                }));
            }
            _ => {}
        }
    }

    fn stream_event(&mut self, line: &Value, out: &mut Vec<Event>) {
        let Some(event) = line.get("event") else {
            return;
        };
        match str_at(event, "type") {
            Some("message_start") => {
                self.streaming = true;
                self.deltas.start_message();
                let message = event.get("message");
                self.start_message(message.and_then(|m| str_at(m, "id")));
                if let Some(usage) = message.and_then(|m| m.get("usage")) {
                    self.usage = Usage0 {
                        input: u64_at(usage, "input_tokens"),
                        cache_creation: u64_at(usage, "cache_creation_input_tokens"),
                        cache_read: u64_at(usage, "cache_read_input_tokens"),
                    };
                }
                out.push(Event::BlockReset);
            }
            Some("content_block_delta") => {
                let Some(delta) = event.get("delta") else {
                    return;
                };
                let index = u64_at(event, "index");
                match str_at(delta, "type") {
                    Some("text_delta") => {
                        let text = str_at(delta, "text").map(|t| self.strip_api_error(t));
                        if let Some(text) = text.filter(|t| !t.is_empty()) {
                            self.block_delta(index, BlockKind::Text, text, out);
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(text) = str_at(delta, "thinking").filter(|t| !t.is_empty()) {
                            self.block_delta(index, BlockKind::Thinking, text, out);
                        }
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                let usage = event.get("usage");
                let output = usage.map(|u| u64_at(u, "output_tokens")).unwrap_or(0);
                let input = usage
                    .map(|u| u64_at(u, "input_tokens"))
                    .filter(|n| *n > 0)
                    .unwrap_or(self.usage.input);
                out.push(Event::Usage(Usage {
                    scope: UsageScope::Message,
                    input_tokens: input,
                    output_tokens: output,
                    cache_read_input_tokens: self.usage.cache_read,
                    cache_creation_input_tokens: self.usage.cache_creation,
                    reasoning_tokens: None,
                    cost_usd: None,
                    context_window: None,
                    context_tokens: None,
                }));
            }
            _ => {}
        }
    }

    fn assistant(&mut self, line: &Value, out: &mut Vec<Event>) {
        let Some(message) = line.get("message") else {
            return;
        };
        // API errors come as a synthetic message whose text repeats the error; the `result`
        // line reports it as the turn's error instead.
        if line.get("error").is_some() && str_at(message, "model") == Some("<synthetic>") {
            return;
        }
        let id = str_at(message, "id");
        let new_message = !(self.dialect.ids_per_block && self.streaming);
        if new_message && id.is_some() && id != self.message.id.as_deref() {
            // A message that was not streamed (the CLI's non-streaming retry): new segment.
            self.start_message(id);
            out.push(Event::BlockReset);
        }
        let Some(content) = message.get("content").and_then(Value::as_array) else {
            return;
        };
        let has_tool_use = content
            .iter()
            .any(|b| str_at(b, "type") == Some("tool_use"));
        if has_tool_use {
            out.push(Event::Message {
                message: line.clone(),
            });
        }
        // The CLI concatenated the relay's snapshots: its copy of the text is the doubled one,
        // and what the client was shown is already right.
        let rewritten = self.deltas.message_rewritten();
        for block in content {
            match str_at(block, "type") {
                Some("text" | "thinking") if rewritten => {}
                Some("text") => {
                    let text = str_at(block, "text").unwrap_or_default();
                    let text = self.strip_api_error(text);
                    let fill = &mut self.message;
                    fill.text_snapshot.push_str(text);
                    fill_tail(
                        &mut fill.text_streamed,
                        &fill.text_snapshot,
                        |text| Event::TextDelta { text },
                        out,
                    );
                }
                Some("thinking") => {
                    let text = str_at(block, "thinking").unwrap_or_default();
                    let fill = &mut self.message;
                    fill.thinking_snapshot.push_str(text);
                    fill_tail(
                        &mut fill.thinking_streamed,
                        &fill.thinking_snapshot,
                        |text| Event::ThinkingDelta { text },
                        out,
                    );
                }
                Some("tool_use") => {
                    let name = str_at(block, "name").unwrap_or_default().to_string();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    out.push(Event::ToolUse(ToolUse {
                        id: str_at(block, "id").unwrap_or_default().to_string(),
                        kind: (self.dialect.tool_kind)(&name),
                        diff: (self.dialect.tool_diff)(&name, &input),
                        name,
                        input,
                    }));
                }
                _ => {}
            }
        }
    }

    fn user(&mut self, line: &Value, out: &mut Vec<Event>) {
        let Some(content) = line
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return;
        };
        let results: Vec<&Value> = content
            .iter()
            .filter(|b| str_at(b, "type") == Some("tool_result"))
            .collect();
        if results.is_empty() {
            return;
        }
        out.push(Event::Message {
            message: line.clone(),
        });
        for block in results {
            out.push(Event::ToolResult(ToolResult {
                tool_use_id: str_at(block, "tool_use_id").unwrap_or_default().to_string(),
                content: block.get("content").cloned().unwrap_or(Value::Null),
                is_error: block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }));
        }
    }

    fn result(&mut self, line: &Value, out: &mut Vec<Event>) {
        // After relay snapshots the CLI's `result` holds the doubled text: the final answer
        // is the de-duplicated text of the last message instead.
        let deduplicated = self
            .deltas
            .message_rewritten()
            .then(|| self.deltas.text(BlockKind::Text));
        let mut message = line.clone();
        if let (Some(text), Some(field)) = (&deduplicated, message.get_mut("result"))
            && field.is_string()
        {
            *field = Value::String(text.clone());
        }
        let line = &message;
        out.push(Event::Message {
            message: line.clone(),
        });
        if let Some(usage) = line.get("usage") {
            out.push(Event::Usage(Usage {
                scope: UsageScope::Turn,
                input_tokens: u64_at(usage, "input_tokens"),
                output_tokens: u64_at(usage, "output_tokens"),
                cache_read_input_tokens: u64_at(usage, "cache_read_input_tokens"),
                cache_creation_input_tokens: u64_at(usage, "cache_creation_input_tokens"),
                reasoning_tokens: None,
                cost_usd: line.get("total_cost_usd").and_then(Value::as_f64),
                context_window: context_window(line),
                context_tokens: None,
            }));
        }
        for denial in line
            .get("permission_denials")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let tool = str_at(denial, "tool_name").unwrap_or("a tool");
            out.push(Event::warning(
                "permission_denied",
                format!("permission to use {tool} was denied"),
            ));
        }
        let is_error = line
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || str_at(line, "subtype").is_some_and(|s| s != "success");
        let text = str_at(line, "result").filter(|t| !t.is_empty());
        if let Some(text) = text {
            self.strip_api_error(text);
        }
        // An API error reported as text comes with `is_error:false` (and exit 0): still a
        // failure.
        let failure = self.api_error.take().or_else(|| {
            is_error.then(|| {
                let errors: Vec<&str> = line
                    .get("errors")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                text.map(str::to_string)
                    .or_else(|| (!errors.is_empty()).then(|| errors.join("\n")))
                    .unwrap_or_else(|| {
                        format!(
                            "{} reported an error ({})",
                            self.dialect.display_name,
                            str_at(line, "subtype").unwrap_or("unknown")
                        )
                    })
            })
        });
        if let Some(message) = failure {
            fail_turn(ErrorCode::Provider, message, self.session_id.clone(), out);
        } else {
            out.push(Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: str_at(line, "stop_reason")
                    .map(StopReason::from_provider)
                    .unwrap_or(StopReason::EndTurn),
                session_id: self.session_id.clone(),
                result: text.map(str::to_string),
                error: None,
            }));
        }
    }
}

impl Normalizer for ClaudeNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let Some(value) = json_event(self.dialect.cli, line, out) else {
            return;
        };
        let from_subagent = value
            .get("parent_tool_use_id")
            .is_some_and(|p| !p.is_null());
        self.note_session(&value, out);
        match str_at(&value, "type") {
            Some("system") => self.system(&value, out),
            Some("stream_event") if !from_subagent => self.stream_event(&value, out),
            Some("assistant") if !from_subagent => self.assistant(&value, out),
            Some("user") if !from_subagent => self.user(&value, out),
            Some("result") => self.result(&value, out),
            Some("control_request") => {
                if let Some(request) = crate::approvals::permission_request(&value) {
                    out.push(Event::PermissionRequest(request));
                }
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }
}

/// The context window of a `result`'s conversation model: the `contextWindow` of the
/// `modelUsage` entry that used the most tokens (helper models such as a small one for titles
/// appear there too).
fn context_window(result: &Value) -> Option<u64> {
    let models = result.get("modelUsage")?.as_object()?;
    models
        .values()
        .filter_map(|model| {
            let window = model.get("contextWindow")?.as_u64().filter(|n| *n > 0)?;
            let tokens = [
                "inputTokens",
                "outputTokens",
                "cacheReadInputTokens",
                "cacheCreationInputTokens",
            ]
            .iter()
            .map(|key| u64_at(model, key))
            .fold(0u64, u64::saturating_add);
            Some((tokens, window))
        })
        .max_by_key(|(tokens, _)| *tokens)
        .map(|(_, window)| window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use captures::streamed_text;

    fn run(lines: &[&str]) -> Vec<Event> {
        let mut normalizer = ClaudeNormalizer::new();
        let mut out = Vec::new();
        for line in lines {
            normalizer.line(line, &mut out);
        }
        out
    }

    #[test]
    fn the_result_carries_the_conversation_models_context_window() {
        let events = run(&[concat!(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"hi","#,
            r#""session_id":"s","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":2},"#,
            r#""modelUsage":{"claude-haiku":{"inputTokens":5,"outputTokens":1,"contextWindow":200000},"#,
            r#""claude-opus[1m]":{"inputTokens":100,"outputTokens":20,"contextWindow":1000000}}}"#
        )]);
        let usage = events
            .iter()
            .find_map(|e| match e {
                Event::Usage(u) => Some(u),
                _ => None,
            })
            .expect("the turn's usage");
        assert_eq!(
            (usage.context_window, usage.context_tokens),
            (Some(1_000_000), None)
        );
        let none = run(&[
            r#"{"type":"result","subtype":"success","result":"hi","usage":{"input_tokens":1},"modelUsage":{}}"#,
        ]);
        assert!(
            none.iter()
                .any(|e| matches!(e, Event::Usage(u) if u.context_window.is_none()))
        );
    }

    #[test]
    fn unstreamed_snapshot_tail_is_filled_in() {
        let events = run(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Hello from the mock model."}]},"parent_tool_use_id":null}"#,
        ]);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        // m2 is a different (retried, non-streamed) message: its whole text is shown after a reset.
        assert_eq!(text, "Hello Hello from the mock model.");
        assert!(events.iter().filter(|e| **e == Event::BlockReset).count() >= 1);

        let events = run(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null}"#,
        ]);
        assert_eq!(events.last(), Some(&Event::TextDelta { text: "lo".into() }));
    }

    #[test]
    fn a_snapshot_that_disagrees_with_the_stream_starts_a_new_segment() {
        let events = run(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Goodbye"}]},"parent_tool_use_id":null}"#,
        ]);
        let n = events.len();
        assert_eq!(events[n - 2], Event::BlockReset);
        assert_eq!(
            events[n - 1],
            Event::TextDelta {
                text: "Goodbye".into()
            }
        );
    }

    #[test]
    fn is_error_wins_over_subtype_success() {
        let events = run(&[
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Fix external API key","session_id":"s"}"#,
        ]);
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("no turn end: {events:?}");
        };
        assert!(!end.success);
        assert_eq!(
            end.error.as_deref(),
            Some("Invalid API key · Fix external API key")
        );
    }

    #[test]
    fn subagent_lines_are_hidden() {
        let events = run(&[
            r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}},"parent_tool_use_id":"toolu_1"}"#,
        ]);
        assert!(events.is_empty(), "{events:?}");
    }

    const PER_BLOCK: Dialect = Dialect {
        cli: "x",
        display_name: "X",
        tool_kind,
        tool_diff,
        ids_per_block: true,
        api_error_marker: Some("[API Error: "),
    };

    fn run_dialect(lines: &[&str]) -> Vec<Event> {
        let mut normalizer = ClaudeNormalizer::with_dialect(&PER_BLOCK);
        let mut out = Vec::new();
        for line in lines {
            normalizer.line(line, &mut out);
        }
        out
    }

    #[test]
    fn an_api_error_reported_as_streamed_text_fails_the_turn_and_is_not_shown() {
        let events = run_dialect(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"[API Error: boom]"}},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"b1","content":[{"type":"text","text":"Hello [API Error: boom]"}]},"parent_tool_use_id":null}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello [API Error: boom]"}"#,
        ]);
        assert_eq!(streamed_text(&events), "Hello ");
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("no turn end: {events:?}");
        };
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("API Error: boom"));
    }

    #[test]
    fn per_block_ids_do_not_restart_a_streamed_message() {
        let streamed = run_dialect(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"b2","content":[{"type":"text","text":"Hi"}]},"parent_tool_use_id":null}"#,
        ]);
        assert_eq!(streamed_text(&streamed), "Hi");
        // Claude's rule for the same lines: a new id is an unstreamed message, shown again.
        assert_eq!(
            streamed_text(&run(&[
                r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#,
                r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"parent_tool_use_id":null}"#,
                r#"{"type":"assistant","message":{"id":"b2","content":[{"type":"text","text":"Hi"}]},"parent_tool_use_id":null}"#,
            ])),
            "HiHi"
        );
        // Without partial messages every block is shown from its snapshot.
        let whole = run_dialect(&[
            r#"{"type":"assistant","message":{"id":"b1","content":[{"type":"text","text":"One."}]},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"id":"b2","content":[{"type":"text","text":"Two."}]},"parent_tool_use_id":null}"#,
        ]);
        assert_eq!(streamed_text(&whole), "One.Two.");
    }

    /// A relay turn as Claude Code prints it: `message_start`, the deltas (block index, kind,
    /// raw delta), the CLI's concatenation in the `assistant` lines and in `result`.
    fn relay_turn(mode: DeltaMode, deltas: &[(u64, &str, &str)]) -> Vec<Event> {
        let mut lines = vec![
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s","parent_tool_use_id":null}"#.to_string(),
        ];
        let mut concatenated: Vec<(u64, &str, String)> = Vec::new();
        for (index, kind, delta) in deltas {
            let (ty, field) = if *kind == "thinking" {
                ("thinking_delta", "thinking")
            } else {
                ("text_delta", "text")
            };
            let event = serde_json::json!({"type": "content_block_delta", "index": index,
                "delta": {"type": ty, field: delta}});
            lines.push(
                serde_json::json!({"type": "stream_event", "event": event, "session_id": "s",
                    "parent_tool_use_id": null})
                .to_string(),
            );
            match concatenated.iter_mut().find(|(i, _, _)| i == index) {
                Some((_, _, text)) => text.push_str(delta),
                None => concatenated.push((*index, kind, delta.to_string())),
            }
        }
        for (_, kind, text) in &concatenated {
            let block = if *kind == "thinking" {
                serde_json::json!({"type": "thinking", "thinking": text})
            } else {
                serde_json::json!({"type": "text", "text": text})
            };
            lines.push(
                serde_json::json!({"type": "assistant", "message": {"id": "m1", "content": [block]},
                    "session_id": "s", "parent_tool_use_id": null})
                .to_string(),
            );
        }
        let result: String = concatenated
            .iter()
            .filter(|(_, kind, _)| *kind == "text")
            .map(|(_, _, t)| t.as_str())
            .collect();
        lines.push(
            serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
                "result": result, "session_id": "s"})
            .to_string(),
        );
        let mut normalizer = ClaudeNormalizer::new().with_delta_mode(mode);
        let mut out = Vec::new();
        for line in &lines {
            normalizer.line(line, &mut out);
        }
        out
    }

    /// The text and thinking a client holds at the end (a reset starts a new segment), and the
    /// turn's result.
    fn assembled(events: &[Event]) -> (String, String, Option<String>) {
        let (mut text, mut thinking, mut result) = (String::new(), String::new(), None);
        for event in events {
            match event {
                Event::BlockReset => {
                    text.clear();
                    thinking.clear();
                }
                Event::TextDelta { text: t } => text.push_str(t),
                Event::ThinkingDelta { text: t } => thinking.push_str(t),
                Event::TurnEnd(end) => result = end.result.clone(),
                _ => {}
            }
        }
        (text, thinking, result)
    }

    #[test]
    fn cumulative_relay_snapshots_become_increments_and_the_result_is_deduplicated() {
        let events = relay_turn(
            DeltaMode::Auto,
            &[
                (0, "thinking", "Let me"),
                (0, "thinking", "Let me think"),
                (1, "text", "Now I need to add"),
                (1, "text", "Now I need to add the handler"),
            ],
        );
        let (text, thinking, result) = assembled(&events);
        assert_eq!(text, "Now I need to add the handler");
        assert_eq!(thinking, "Let me think");
        assert_eq!(result.as_deref(), Some("Now I need to add the handler"));
        let Some(Event::Message { message }) = events
            .iter()
            .rev()
            .find(|e| matches!(e, Event::Message { .. }))
        else {
            panic!("no result message: {events:?}");
        };
        assert_eq!(message["result"], "Now I need to add the handler");
        assert!(!events.iter().any(|e| matches!(e, Event::Warning { .. })));
    }

    #[test]
    fn interleaved_blocks_learned_late_are_reset_with_a_warning() {
        let events = relay_turn(
            DeltaMode::Auto,
            &[
                (0, "thinking", "Hm"),
                (1, "text", "He"),
                (0, "thinking", "Hmm, ok"),
                (1, "text", "Hel"),
                (1, "text", "Hello"),
                (1, "text", "Hello wo"),
                (1, "text", "Hello world"),
            ],
        );
        let (text, thinking, result) = assembled(&events);
        assert_eq!(
            (text.as_str(), result.as_deref()),
            ("Hello world", Some("Hello world"))
        );
        assert_eq!(
            thinking, "HmHmm, ok",
            "thinking stayed incremental (prefix too short)"
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::Warning { code, .. } if code == "relay_snapshot"))
                .count(),
            1
        );
    }

    #[test]
    fn incremental_streams_with_repetitions_are_untouched_in_every_mode() {
        let deltas = [
            (0, "text", "a"),
            (0, "text", "a"),
            (0, "text", " ha"),
            (0, "text", " ha"),
            (0, "text", " ha"),
            (0, "text", " ha"),
        ];
        for mode in [DeltaMode::Incremental, DeltaMode::Auto] {
            let events = relay_turn(mode, &deltas);
            let (text, _, result) = assembled(&events);
            assert_eq!(text, "aa ha ha ha ha", "{mode:?}");
            assert_eq!(result.as_deref(), Some("aa ha ha ha ha"), "{mode:?}");
            assert!(
                !events.iter().any(|e| matches!(e, Event::Warning { .. })),
                "{mode:?}: {events:?}"
            );
            assert_eq!(
                events.iter().filter(|e| **e == Event::BlockReset).count(),
                1
            );
        }
    }

    #[test]
    fn a_corrective_snapshot_resets_the_segment() {
        let events = relay_turn(
            DeltaMode::Cumulative,
            &[
                (0, "text", "Hello wrold"),
                (0, "text", "Hello world"),
                (0, "text", "Hello world!"),
            ],
        );
        let (text, _, result) = assembled(&events);
        assert_eq!(
            (text.as_str(), result.as_deref()),
            ("Hello world!", Some("Hello world!"))
        );
        // Everything streamed: the wrong text, then after the reset the corrected block.
        assert_eq!(streamed_text(&events), "Hello wroldHello world!");
        assert_eq!(
            events.iter().filter(|e| **e == Event::BlockReset).count(),
            2
        );
    }

    #[test]
    fn garbage_is_a_warning_not_a_panic() {
        let events = run(&["not json \u{fffd}", "[1,2]", "{\"type\":"]);
        assert_eq!(events.len(), 3);
        assert!(
            events
                .iter()
                .all(|e| matches!(e, Event::Warning { code, .. } if code == "unparsed_line"))
        );
    }
}
