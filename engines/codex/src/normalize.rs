//! `codex exec --json` output (and, optionally, the thread's rollout) → [`Event`]s.
//!
//! Facts this relies on (Codex CLI 0.171.0, `shared/reference/real-clis-openai.md` §3.2):
//!
//! * every stdout line is one JSON event: `thread.started{thread_id}`, `turn.started`,
//!   `item.started|updated|completed{item}`, `turn.completed{usage}`, `turn.failed{error}` and
//!   top-level `error{message}`;
//! * items arrive whole (no text deltas): `agent_message` and `reasoning` only as
//!   `item.completed`; `command_execution`, `file_change`, `mcp_tool_call`, `web_search` and
//!   `todo_list` also get an `item.started`;
//! * the `web_search` item carries the key `"id"` twice; lines are parsed into
//!   [`serde_json::Value`] (the last one wins), never into a struct with an `id` field;
//! * `turn.completed.usage` is the running total of the *thread*: the turn's own usage is the
//!   difference to the total before the turn ([`CodexNormalizer::set_usage_baseline`]);
//! * a top-level `error` is either a retry notice (`Reconnecting... 2/5 (…)`, a `status`), the
//!   fatal error that `turn.failed` repeats (reported once, as the error), or a notice the turn
//!   survives (a `codex_error` warning); an `error` *item* is always a warning;
//! * success is `turn.completed` and nothing else: a stream that ends without it is a failure.
//!
//! | Codex | events |
//! |---|---|
//! | `thread.started` | `session_id` (`[THREAD_ID]`) |
//! | `agent_message` | `text` + Claude-shaped assistant `[MESSAGE]` |
//! | `reasoning` | `thinking_delta` + assistant thinking `[MESSAGE]` |
//! | `command_execution` | `tool_use` at start: `Read` {file_path}, `Glob` {path, pattern}, `Grep` {pattern, path} for commands that only read, list or search ([`crate::command::classify`]), else `Bash`; always with {command, description}; `tool_result` (output; `Exit code N` first when N ≠ 0) at the end |
//! | `file_change` | per file `tool_use` `Write`/`Edit`/`MultiEdit`/`Delete` with the diff, then `tool_result` |
//! | `mcp_tool_call` | `tool_use` `mcp__<server>__<tool>`, `tool_result` (MCP content blocks, or the error) |
//! | `web_search` | `tool_use` `WebSearch` {query}, `tool_result` |
//! | `todo_list` | `tool_use` `TodoWrite` {todos} (plan), on first sight and on every change |
//! | `error` item | `warning` |
//! | `turn.completed` | `usage` (turn delta) + token_count `[MESSAGE]`, `turn_end` success with the last agent message |
//! | `turn.failed` | `error` (`[SEND_ERROR]`), `turn_end` failure |
//!
//! The rollout (`$CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl`) adds what the exec stream
//! leaves out; the engine reads the file ([`crate::RolloutReader`]) and pushes its lines into
//! [`CodexNormalizer::rollout_line`]: file contents and diffs for `file_change`, the usage
//! total before the turn, and tool calls Codex refused before running them (a patch under a
//! read-only sandbox, an escalation under approval policy `never`), which the exec stream does
//! not show at all.

use std::collections::{HashMap, HashSet};

use bridge_core::event::{
    ErrorCode, Event, Status, StatusKind, StopReason, ToolKind, ToolResult, ToolUse, TurnEnd,
    Usage, UsageScope,
};
use bridge_core::normalize::{fail_turn, json_event, str_at, u64_at};
use bridge_core::turn::Normalizer;
use serde_json::{Map, Value, json};

use crate::command::{classify, display_command};
use crate::patch::{Change, parse_apply_patch, tool_for};

/// Token counts as Codex reports them (`turn.completed.usage`, rollout `token_count`).
/// `input` includes `cached_input` and `cache_write_input`; `output` includes
/// `reasoning_output`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    /// `input_tokens`.
    pub input: u64,
    /// `cached_input_tokens`.
    pub cached_input: u64,
    /// `cache_write_input_tokens`.
    pub cache_write_input: u64,
    /// `output_tokens`.
    pub output: u64,
    /// `reasoning_output_tokens`.
    pub reasoning_output: u64,
}

impl TokenTotals {
    /// Reads Codex's usage object (missing counts are zero).
    pub fn from_json(usage: &Value) -> TokenTotals {
        TokenTotals {
            input: u64_at(usage, "input_tokens"),
            cached_input: u64_at(usage, "cached_input_tokens"),
            cache_write_input: u64_at(usage, "cache_write_input_tokens"),
            output: u64_at(usage, "output_tokens"),
            reasoning_output: u64_at(usage, "reasoning_output_tokens"),
        }
    }

    /// `self - earlier`, per count, never below zero.
    pub fn since(self, earlier: TokenTotals) -> TokenTotals {
        TokenTotals {
            input: self.input.saturating_sub(earlier.input),
            cached_input: self.cached_input.saturating_sub(earlier.cached_input),
            cache_write_input: self
                .cache_write_input
                .saturating_sub(earlier.cache_write_input),
            output: self.output.saturating_sub(earlier.output),
            reasoning_output: self
                .reasoning_output
                .saturating_sub(earlier.reasoning_output),
        }
    }

    /// Codex's own JSON shape (the `token_count` message carries it).
    pub fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input,
            "cached_input_tokens": self.cached_input,
            "cache_write_input_tokens": self.cache_write_input,
            "output_tokens": self.output,
            "reasoning_output_tokens": self.reasoning_output,
            "total_tokens": self.input + self.output,
        })
    }

    /// As a turn [`Usage`]: input without the cache reads and writes.
    pub fn to_usage(self) -> Usage {
        Usage {
            scope: UsageScope::Turn,
            input_tokens: self
                .input
                .saturating_sub(self.cached_input)
                .saturating_sub(self.cache_write_input),
            output_tokens: self.output,
            cache_read_input_tokens: self.cached_input,
            cache_creation_input_tokens: self.cache_write_input,
            reasoning_tokens: Some(self.reasoning_output),
            cost_usd: None,
            context_window: None,
            context_tokens: None,
        }
    }
}

/// A completed turn's token counts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnUsage {
    /// The turn's own usage.
    pub(crate) turn: TokenTotals,
    /// The thread's running total.
    pub(crate) total: TokenTotals,
    /// The last model call (the context the model saw).
    pub(crate) last_call: TokenTotals,
    /// The model's context window, where known.
    pub(crate) context_window: Option<u64>,
}

/// A `FileChange` from the rollout: per path, what changed.
#[derive(Debug, Clone)]
struct FileChangeDetail {
    changes: HashMap<String, Change>,
    stdout: Option<String>,
}

/// A tool call seen in the rollout, kept until its output shows up.
#[derive(Debug, Clone)]
struct RolloutCall {
    name: String,
    input: Value,
}

/// What the rollout told us.
#[derive(Debug, Default)]
struct RolloutState {
    total: Option<TokenTotals>,
    /// `last_token_usage` of the newest `token_count` of this turn: the last model call.
    last_call: Option<TokenTotals>,
    /// `model_context_window` of the newest `token_count` (or `turn_context`) seen.
    context_window: Option<u64>,
    file_changes: Vec<FileChangeDetail>,
    calls: HashMap<String, RolloutCall>,
    items: HashSet<String>,
}

/// Normalizer state for one `codex exec` process (one turn).
#[derive(Debug)]
pub struct CodexNormalizer {
    thread_id: Option<String>,
    id_prefix: String,
    baseline: Option<TokenTotals>,
    last_agent_message: Option<String>,
    content_seen: bool,
    started_tools: HashSet<String>,
    todos: HashMap<String, (Value, u32)>,
    pending_error: Option<String>,
    ended: bool,
    rollout: RolloutState,
}

impl Default for CodexNormalizer {
    fn default() -> Self {
        CodexNormalizer::new()
    }
}

fn assistant_message(block: Value) -> Event {
    Event::Message {
        message: json!({
            "type": "assistant",
            "message": {"role": "assistant", "content": [block]},
        }),
    }
}

/// Outputs Codex gives the model when it refused a call before running it.
fn refusal(output: &str) -> Option<bool> {
    let permission = output.starts_with("patch rejected")
        || output.contains("approval policy is Never")
        || output.contains("rejected by user")
        || output.contains("Rejected(\"");
    if permission {
        Some(true)
    } else if output.starts_with("apply_patch verification failed") {
        Some(false)
    } else {
        None
    }
}

/// The text of a tool output in the rollout (a string, or content parts).
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| str_at(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(o) => o
            .get("content")
            .map(output_text)
            .unwrap_or_else(|| output.to_string()),
        other => other.to_string(),
    }
}

impl CodexNormalizer {
    /// A normalizer for a new thread: the usage before the turn is zero.
    pub fn new() -> Self {
        CodexNormalizer {
            thread_id: None,
            id_prefix: String::new(),
            baseline: Some(TokenTotals::default()),
            last_agent_message: None,
            content_seen: false,
            started_tools: HashSet::new(),
            todos: HashMap::new(),
            pending_error: None,
            ended: false,
            rollout: RolloutState::default(),
        }
    }

    /// A normalizer for a resumed thread: the usage total before the turn is unknown until
    /// [`CodexNormalizer::set_usage_baseline`] (or the rollout) tells it.
    pub fn resumed() -> Self {
        CodexNormalizer {
            baseline: None,
            ..CodexNormalizer::new()
        }
    }

    /// Prefixes every tool id with `prefix` and `_`. Codex numbers its items `item_0`, `item_1`,
    /// … in every process, so two turns of one thread reuse the same ids; a per-turn prefix
    /// keeps tool cards apart in a client that shows the whole conversation.
    pub fn with_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = prefix.into();
        self
    }

    /// The thread's usage total before this turn (the turn's usage is reported as the
    /// difference).
    pub fn set_usage_baseline(&mut self, totals: TokenTotals) {
        self.baseline = Some(totals);
    }

    /// The rollout lines written before this turn were all read: the last usage total in them is
    /// the baseline.
    pub fn rollout_history_done(&mut self) {
        let total = self.rollout.total.unwrap_or_default();
        self.baseline = Some(total);
    }

    fn tool_id(&self, item_id: &str) -> String {
        if self.id_prefix.is_empty() {
            item_id.to_string()
        } else {
            format!("{}_{item_id}", self.id_prefix)
        }
    }

    fn segment(&mut self, out: &mut Vec<Event>) {
        if self.content_seen {
            out.push(Event::BlockReset);
        }
        self.content_seen = true;
    }

    fn tool_use(&mut self, tool: ToolUse, out: &mut Vec<Event>) {
        self.content_seen = true;
        self.started_tools.insert(tool.id.clone());
        out.push(Event::ToolUse(tool));
    }

    fn agent_message(&mut self, item: &Value, out: &mut Vec<Event>) {
        let text = str_at(item, "text").unwrap_or_default();
        if text.is_empty() {
            return;
        }
        self.segment(out);
        out.push(Event::Text { text: text.into() });
        out.push(assistant_message(json!({"type": "text", "text": text})));
        self.last_agent_message = Some(text.to_string());
    }

    fn reasoning(&mut self, item: &Value, out: &mut Vec<Event>) {
        let text = str_at(item, "text").unwrap_or_default();
        if text.is_empty() {
            return;
        }
        self.segment(out);
        out.push(Event::ThinkingDelta { text: text.into() });
        out.push(assistant_message(
            json!({"type": "thinking", "thinking": text, "text": text}),
        ));
    }

    fn command(&mut self, completed: bool, item: &Value, out: &mut Vec<Event>) {
        let id = self.tool_id(str_at(item, "id").unwrap_or("command"));
        let raw = str_at(item, "command").unwrap_or_default();
        let command = display_command(raw);
        if !self.started_tools.contains(&id) {
            let tool = classify(&command);
            self.tool_use(
                ToolUse {
                    id: id.clone(),
                    name: tool.name.into(),
                    kind: command_kind(tool.name),
                    input: tool.input,
                    diff: None,
                },
                out,
            );
        }
        if !completed {
            return;
        }
        let status = str_at(item, "status").unwrap_or("completed");
        let exit_code = item.get("exit_code").and_then(Value::as_i64);
        let output = str_at(item, "aggregated_output").unwrap_or_default();
        let failed_exit = exit_code.filter(|c| *c != 0);
        let content = match (status, failed_exit) {
            ("declined", _) => {
                out.push(Event::warning(
                    "permission_denied",
                    format!("Codex declined to run `{command}` (approval policy or reviewer)"),
                ));
                if output.is_empty() {
                    "Command declined".to_string()
                } else {
                    format!("Command declined\n{output}")
                }
            }
            (_, Some(code)) => format!("Exit code {code}\n{output}"),
            _ => output.to_string(),
        };
        if status == "failed" && output.contains("Read-only file system") {
            out.push(Event::warning(
                "sandbox_denied",
                format!(
                    "the sandbox refused a write: `{command}` failed with `Read-only file system`"
                ),
            ));
        }
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id,
            content: Value::String(content),
            is_error: status != "completed" || failed_exit.is_some(),
        }));
    }

    fn take_file_change(&mut self, paths: &[&str]) -> Option<FileChangeDetail> {
        let wanted: HashSet<&str> = paths.iter().copied().collect();
        let pos = self.rollout.file_changes.iter().position(|d| {
            d.changes.len() == wanted.len() && d.changes.keys().all(|k| wanted.contains(k.as_str()))
        })?;
        Some(self.rollout.file_changes.remove(pos))
    }

    fn file_change(&mut self, item: &Value, out: &mut Vec<Event>) {
        let item_id = str_at(item, "id").unwrap_or("patch");
        let changes: Vec<(&str, &str)> = item
            .get("changes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| Some((str_at(c, "path")?, str_at(c, "kind").unwrap_or("update"))))
            .collect();
        let paths: Vec<&str> = changes.iter().map(|(p, _)| *p).collect();
        let detail = self.take_file_change(&paths);
        let status = str_at(item, "status").unwrap_or("completed");
        let (summary, is_error) = match status {
            "completed" => (
                detail
                    .as_ref()
                    .and_then(|d| d.stdout.clone())
                    .map(|s| s.trim_end().to_string())
                    .unwrap_or_else(|| "Patch applied".into()),
                false,
            ),
            "declined" => ("Patch declined".to_string(), true),
            _ => ("Patch apply failed".to_string(), true),
        };
        if status == "declined" {
            out.push(Event::warning(
                "permission_denied",
                format!("Codex declined to change {}", paths.join(", ")),
            ));
        }
        for (i, (path, kind)) in changes.iter().enumerate() {
            let base = self.tool_id(item_id);
            let id = if changes.len() == 1 {
                base
            } else {
                format!("{base}_{i}")
            };
            let change = detail.as_ref().and_then(|d| d.changes.get(*path));
            let (name, input, tool_kind, diff) = tool_for(path, kind, change);
            self.tool_use(
                ToolUse {
                    id: id.clone(),
                    name: name.into(),
                    kind: tool_kind,
                    input,
                    diff,
                },
                out,
            );
            out.push(Event::ToolResult(ToolResult {
                tool_use_id: id,
                content: Value::String(summary.clone()),
                is_error,
            }));
        }
    }

    fn mcp(&mut self, completed: bool, item: &Value, out: &mut Vec<Event>) {
        let id = self.tool_id(str_at(item, "id").unwrap_or("mcp"));
        if !self.started_tools.contains(&id) {
            let name = format!(
                "mcp__{}__{}",
                str_at(item, "server").unwrap_or("unknown"),
                str_at(item, "tool").unwrap_or("unknown")
            );
            let input = match item.get("arguments") {
                Some(Value::Null) | None => json!({}),
                Some(args) => args.clone(),
            };
            self.tool_use(
                ToolUse {
                    id: id.clone(),
                    name,
                    kind: ToolKind::Other,
                    input,
                    diff: None,
                },
                out,
            );
        }
        if !completed {
            return;
        }
        let error = item.get("error").filter(|e| !e.is_null()).map(|e| {
            str_at(e, "message")
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string())
        });
        let failed = error.is_some() || str_at(item, "status") == Some("failed");
        let content = match &error {
            Some(message) => {
                if message.contains("approval") {
                    out.push(Event::warning(
                        "permission_denied",
                        format!("Codex refused an MCP tool call: {message}"),
                    ));
                }
                Value::String(message.clone())
            }
            None => {
                let result = item.get("result").unwrap_or(&Value::Null);
                match result.get("content") {
                    Some(Value::Array(blocks)) if !blocks.is_empty() => {
                        Value::Array(blocks.clone())
                    }
                    _ => match result.get("structured_content") {
                        Some(v) if !v.is_null() => Value::String(v.to_string()),
                        _ => Value::String(String::new()),
                    },
                }
            }
        };
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id,
            content,
            is_error: failed,
        }));
    }

    fn web_search(&mut self, item: &Value, out: &mut Vec<Event>) {
        // `id` appears twice in this item; Value kept the last one (`ws_…`).
        let id = self.tool_id(str_at(item, "id").unwrap_or("web_search"));
        let action = item.get("action").unwrap_or(&Value::Null);
        let query = str_at(item, "query")
            .filter(|q| !q.is_empty())
            .or_else(|| str_at(action, "query"))
            .unwrap_or_default();
        let mut input = json!({"query": query});
        let summary = match str_at(action, "type") {
            Some("open_page") => {
                let url = str_at(action, "url").unwrap_or_default();
                input["url"] = Value::String(url.into());
                format!("Opened {url}")
            }
            Some("find_in_page") => {
                let url = str_at(action, "url").unwrap_or_default();
                let pattern = str_at(action, "pattern").unwrap_or_default();
                input["url"] = Value::String(url.into());
                input["pattern"] = Value::String(pattern.into());
                format!("Searched {url} for \"{pattern}\"")
            }
            _ => format!("Searched the web for \"{query}\""),
        };
        self.tool_use(
            ToolUse {
                id: id.clone(),
                name: "WebSearch".into(),
                kind: ToolKind::Fetch,
                input,
                diff: None,
            },
            out,
        );
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id,
            content: Value::String(summary),
            is_error: false,
        }));
    }

    fn todo_list(&mut self, item: &Value, out: &mut Vec<Event>) {
        let item_id = str_at(item, "id").unwrap_or("todo").to_string();
        let todos: Vec<Value> = item
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| {
                let text = str_at(t, "text").unwrap_or_default();
                let done = t.get("completed").and_then(Value::as_bool).unwrap_or(false);
                json!({
                    "content": text,
                    "status": if done { "completed" } else { "pending" },
                    "activeForm": text,
                })
            })
            .collect();
        let todos = Value::Array(todos);
        let version = match self.todos.get(&item_id) {
            Some((last, _)) if *last == todos => return,
            Some((_, v)) => v + 1,
            None => 1,
        };
        self.todos.insert(item_id.clone(), (todos.clone(), version));
        let base = self.tool_id(&item_id);
        let id = if version == 1 {
            base
        } else {
            format!("{base}_v{version}")
        };
        self.tool_use(
            ToolUse {
                id: id.clone(),
                name: "TodoWrite".into(),
                kind: ToolKind::Think,
                input: json!({"todos": todos}),
                diff: None,
            },
            out,
        );
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id,
            content: Value::String("Plan updated".into()),
            is_error: false,
        }));
    }

    fn collab(&mut self, completed: bool, item: &Value, out: &mut Vec<Event>) {
        let id = self.tool_id(str_at(item, "id").unwrap_or("agent"));
        if !self.started_tools.contains(&id) {
            let mut input = Map::new();
            for (k, v) in item.as_object().into_iter().flatten() {
                if !matches!(k.as_str(), "id" | "type" | "status" | "agents_states") {
                    input.insert(k.clone(), v.clone());
                }
            }
            self.tool_use(
                ToolUse {
                    id: id.clone(),
                    name: "Agent".into(),
                    kind: ToolKind::Think,
                    input: Value::Object(input),
                    diff: None,
                },
                out,
            );
        }
        if completed {
            let status = str_at(item, "status").unwrap_or("completed");
            let content = match item.get("agents_states") {
                Some(states) if !states.is_null() => states.to_string(),
                _ => status.to_string(),
            };
            out.push(Event::ToolResult(ToolResult {
                tool_use_id: id,
                content: Value::String(content),
                is_error: status == "failed",
            }));
        }
    }

    fn item(&mut self, phase: &str, item: &Value, out: &mut Vec<Event>) {
        let completed = phase == "item.completed";
        match str_at(item, "type").unwrap_or_default() {
            "agent_message" if completed => self.agent_message(item, out),
            "reasoning" if completed => self.reasoning(item, out),
            "command_execution" => self.command(completed, item, out),
            "file_change" if completed => self.file_change(item, out),
            "mcp_tool_call" => self.mcp(completed, item, out),
            "web_search" if completed => self.web_search(item, out),
            "todo_list" => self.todo_list(item, out),
            "collab_tool_call" => self.collab(completed, item, out),
            "error" if completed => out.push(Event::warning(
                "codex_warning",
                str_at(item, "message").unwrap_or("Codex reported an error item"),
            )),
            "agent_message" | "reasoning" | "file_change" | "web_search" | "error" => {}
            other if completed => out.push(Event::warning(
                "unknown_item",
                format!("Codex reported an item of a type this bridge does not know: `{other}`"),
            )),
            _ => {}
        }
    }

    fn top_level_error(&mut self, line: &Value, out: &mut Vec<Event>) {
        let message = str_at(line, "message").unwrap_or("Codex reported an error");
        if let Some(rest) = message.strip_prefix("Reconnecting...") {
            // "Reconnecting... 2/5 (reason)"
            let counts = rest.split_whitespace().next().unwrap_or_default();
            let (attempt, max) = counts
                .split_once('/')
                .map(|(a, m)| (a.parse().ok(), m.parse().ok()))
                .unwrap_or((None, None));
            out.push(Event::Status(Status {
                kind: StatusKind::Reconnect,
                message: message.to_string(),
                attempt,
                max_attempts: max,
            }));
            return;
        }
        // Either the error `turn.failed` repeats next (reported once, as the error), or a notice
        // the turn survives (reported as a warning when the turn completes).
        if let Some(earlier) = self.pending_error.replace(message.to_string()) {
            out.push(Event::warning("codex_error", earlier));
        }
    }

    fn turn_completed(&mut self, line: &Value, out: &mut Vec<Event>) {
        if let Some(notice) = self.pending_error.take() {
            out.push(Event::warning("codex_error", notice));
        }
        let usage = line.get("usage").filter(|u| u.is_object()).map(|usage| {
            let total = TokenTotals::from_json(usage);
            let turn = match self.baseline {
                Some(base) => total.since(base),
                None => {
                    out.push(Event::warning(
                        "usage_baseline_unknown",
                        "the thread's usage before this turn is unknown (its rollout was not \
                         found); reporting the thread's running total as the turn's usage",
                    ));
                    total
                }
            };
            // `last_token_usage` is the context the model saw on its last call (what the
            // plugin's context ring shows); only the rollout has it. Without the rollout, the
            // turn's usage stands in (equal when the turn made one model call).
            TurnUsage {
                turn,
                total,
                last_call: self.rollout.last_call.take().unwrap_or(turn),
                context_window: self.rollout.context_window,
            }
        });
        self.complete_turn(usage, out);
    }

    /// The turn completed: its usage (and the token_count `[MESSAGE]`), then the successful
    /// turn end with the last agent message. Shared by both transports.
    pub(crate) fn complete_turn(&mut self, usage: Option<TurnUsage>, out: &mut Vec<Event>) {
        if let Some(usage) = usage {
            let mut turn_usage = usage.turn.to_usage();
            turn_usage.context_window = usage.context_window;
            // The context the model saw on its last call, and what it answered.
            turn_usage.context_tokens =
                Some(usage.last_call.input.saturating_add(usage.last_call.output));
            out.push(Event::Usage(turn_usage));
            let mut info = json!({
                "total_token_usage": usage.total.to_json(),
                "last_token_usage": usage.last_call.to_json(),
            });
            if let Some(window) = usage.context_window {
                info["model_context_window"] = json!(window);
            }
            out.push(Event::Message {
                message: json!({
                    "type": "event_msg",
                    "payload": {"type": "token_count", "info": info},
                }),
            });
        }
        if self.last_agent_message.is_none() {
            out.push(Event::warning(
                "no_text_response",
                "Codex completed the turn without a text response",
            ));
        }
        self.ended = true;
        out.push(Event::TurnEnd(TurnEnd {
            success: true,
            stop_reason: StopReason::EndTurn,
            session_id: self.thread_id.clone(),
            result: self.last_agent_message.clone(),
            error: None,
        }));
    }

    pub(crate) fn fail(&mut self, message: String, out: &mut Vec<Event>) {
        self.ended = true;
        fail_turn(ErrorCode::Provider, message, self.thread_id.clone(), out);
    }

    /// The thread's id is known (`thread.started`; the app-server's `thread/start` answer).
    pub(crate) fn thread_started(&mut self, id: &str, out: &mut Vec<Event>) {
        if !id.is_empty() && self.thread_id.as_deref() != Some(id) {
            self.thread_id = Some(id.to_string());
            out.push(Event::SessionId { id: id.to_string() });
        }
    }

    /// An item in `codex exec`'s vocabulary (`phase` is `item.started` or `item.completed`).
    pub(crate) fn exec_item(&mut self, phase: &str, item: &Value, out: &mut Vec<Event>) {
        self.item(phase, item, out);
    }

    /// A piece of streamed assistant text (`first` for the first piece of an item) or, with
    /// `thinking`, of reasoning.
    pub(crate) fn streamed(
        &mut self,
        first: bool,
        thinking: bool,
        text: &str,
        out: &mut Vec<Event>,
    ) {
        if first {
            self.segment(out);
        }
        let text = text.to_string();
        out.push(if thinking {
            Event::ThinkingDelta { text }
        } else {
            Event::TextDelta { text }
        });
    }

    /// A streamed assistant message (or, with `thinking`, reasoning) is complete: its
    /// Claude-shaped `[MESSAGE]`, as `codex exec` gives it.
    pub(crate) fn streamed_done(&mut self, thinking: bool, text: &str, out: &mut Vec<Event>) {
        if text.is_empty() {
            return;
        }
        if thinking {
            out.push(assistant_message(
                json!({"type": "thinking", "thinking": text, "text": text}),
            ));
        } else {
            out.push(assistant_message(json!({"type": "text", "text": text})));
            self.last_agent_message = Some(text.to_string());
        }
    }

    /// What a file change does, per path, ahead of its `file_change` item (the app-server
    /// sends the diffs itself; for `codex exec` the rollout does).
    pub(crate) fn file_change_contents(&mut self, changes: HashMap<String, Change>) {
        self.rollout.file_changes.push(FileChangeDetail {
            changes,
            stdout: None,
        });
    }

    /// The tool id of a Codex item id (with this turn's prefix).
    pub(crate) fn tool_id_of(&self, item_id: &str) -> String {
        self.tool_id(item_id)
    }

    /// Whether the turn's end was decided.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Handles one line of the thread's rollout file. `historic` lines were written before this
    /// turn (a resumed thread's earlier turns): only their usage totals matter. Pure, like
    /// [`Normalizer::line`].
    pub fn rollout_line(&mut self, line: &str, historic: bool, out: &mut Vec<Event>) {
        // Most rollout lines (prompts, tool schemas, reasoning) matter to nobody here: skip them
        // before parsing.
        let bytes = line.as_bytes();
        let interesting = |needle: &str| memchr::memmem::find(bytes, needle.as_bytes()).is_some();
        if !(interesting("token_count")
            || interesting("model_context_window")
            || (!historic
                && (interesting("\"item_completed\"")
                    || interesting("\"item_started\"")
                    || interesting("call\"")
                    || interesting("call_output\""))))
        {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let Some(payload) = value.get("payload") else {
            return;
        };
        match (str_at(&value, "type"), str_at(payload, "type")) {
            (Some("event_msg"), Some("token_count")) => {
                let info = payload.get("info").unwrap_or(&Value::Null);
                if let Some(total) = info.get("total_token_usage").filter(|t| t.is_object()) {
                    self.rollout.total = Some(TokenTotals::from_json(total));
                }
                // A resumed thread's earlier calls are not this turn's context.
                if !historic
                    && let Some(last) = info.get("last_token_usage").filter(|t| t.is_object())
                {
                    self.rollout.last_call = Some(TokenTotals::from_json(last));
                }
                if let Some(window) = context_window(info) {
                    self.rollout.context_window = Some(window);
                }
            }
            (Some("turn_context"), _) => {
                if let Some(window) = context_window(payload) {
                    self.rollout.context_window = Some(window);
                }
            }
            _ if historic => {}
            (Some("event_msg"), Some(phase @ ("item_started" | "item_completed"))) => {
                let Some(item) = payload.get("item") else {
                    return;
                };
                if let Some(id) = str_at(item, "id") {
                    self.rollout.items.insert(id.to_string());
                }
                if phase == "item_completed" && str_at(item, "type") == Some("FileChange") {
                    self.rollout.file_changes.push(file_change_detail(item));
                }
            }
            (Some("response_item"), Some("function_call" | "custom_tool_call")) => {
                let Some(call_id) = str_at(payload, "call_id") else {
                    return;
                };
                let input = match payload.get("arguments") {
                    Some(Value::String(args)) => {
                        serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.clone()))
                    }
                    Some(other) => other.clone(),
                    None => payload.get("input").cloned().unwrap_or(Value::Null),
                };
                self.rollout.calls.insert(
                    call_id.to_string(),
                    RolloutCall {
                        name: str_at(payload, "name").unwrap_or("tool").to_string(),
                        input,
                    },
                );
            }
            (Some("response_item"), Some("function_call_output" | "custom_tool_call_output")) => {
                let Some(call_id) = str_at(payload, "call_id") else {
                    return;
                };
                let Some(call) = self.rollout.calls.remove(call_id) else {
                    return;
                };
                if self.rollout.items.contains(call_id) {
                    return;
                }
                let output = output_text(payload.get("output").unwrap_or(&Value::Null));
                self.unshown_call(call_id, &call, &output, out);
            }
            _ => {}
        }
    }

    /// A tool call that produced no exec item, shown from the rollout: a call Codex refused
    /// before running it (any tool), or a shell command that ran without Codex printing its
    /// `command_execution` item (it drops the item of a command that fails at once, e.g. a
    /// write in a read-only sandbox).
    fn unshown_call(
        &mut self,
        call_id: &str,
        call: &RolloutCall,
        output: &str,
        out: &mut Vec<Event>,
    ) {
        let refused = refusal(output);
        let base = self.tool_id(call_id);
        let mut tools: Vec<(String, &'static str, Value, ToolKind, _)> = Vec::new();
        let mut content = output.to_string();
        let mut is_error = true;
        // Warnings go between the tool use and its result, as for a `command_execution` item.
        let mut warnings = Vec::new();
        match call.name.as_str() {
            "apply_patch" if refused.is_some() => {
                let patch = match &call.input {
                    Value::String(s) => s.clone(),
                    other => str_at(other, "input").unwrap_or_default().to_string(),
                };
                let ops = parse_apply_patch(&patch);
                let many = ops.len() > 1;
                for (i, (path, kind, change)) in ops.iter().enumerate() {
                    let (name, input, tool_kind, diff) = tool_for(path, kind, Some(change));
                    let id = if many {
                        format!("{base}_{i}")
                    } else {
                        base.clone()
                    };
                    tools.push((id, name, input, tool_kind, diff));
                }
            }
            "exec_command" | "shell" | "shell_command" | "local_shell" => {
                let command = shell_command_of(&call.input);
                if refused.is_none() {
                    let (exit, body) = exec_output(output);
                    is_error = exit.is_some_and(|c| c != 0);
                    content = match exit.filter(|c| *c != 0) {
                        Some(code) => format!("Exit code {code}\n{body}"),
                        None => body.to_string(),
                    };
                    if is_error && body.contains("Read-only file system") {
                        warnings.push(Event::warning(
                            "sandbox_denied",
                            format!("the sandbox refused a write: `{command}` failed with `Read-only file system`"),
                        ));
                    }
                }
                let tool = classify(&command);
                tools.push((
                    base.clone(),
                    tool.name,
                    tool.input,
                    command_kind(tool.name),
                    None,
                ));
            }
            _ if refused == Some(true) => {
                let input = json!({"tool": call.name, "input": call.input});
                tools.push((base, "Tool", input, ToolKind::Other, None));
            }
            _ => return,
        }
        if refused == Some(true) {
            warnings.push(Event::warning(
                "permission_denied",
                format!("Codex refused the {} call: {output}", call.name),
            ));
        }
        for (id, name, input, kind, diff) in tools {
            self.tool_use(
                ToolUse {
                    id: id.clone(),
                    name: name.into(),
                    kind,
                    input,
                    diff,
                },
                out,
            );
            out.append(&mut warnings);
            out.push(Event::ToolResult(ToolResult {
                tool_use_id: id,
                content: Value::String(content.clone()),
                is_error,
            }));
        }
    }
}

/// The tool kind of a [`classify`]d command.
pub(crate) fn command_kind(name: &str) -> ToolKind {
    match name {
        "Read" => ToolKind::Read,
        "Glob" | "Grep" => ToolKind::Search,
        _ => ToolKind::Execute,
    }
}

/// A positive `model_context_window` of a rollout object.
fn context_window(object: &Value) -> Option<u64> {
    object
        .get("model_context_window")
        .and_then(Value::as_u64)
        .filter(|w| *w > 0)
}

/// The command of a shell tool call's input (`cmd`, or `command` as a string or argv).
fn shell_command_of(input: &Value) -> String {
    match input.get("cmd").or_else(|| input.get("command")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(words)) => display_command(
            &words
                .iter()
                .filter_map(Value::as_str)
                .map(|w| {
                    if w.contains(char::is_whitespace) || w.is_empty() {
                        format!("'{}'", w.replace('\'', "'\\''"))
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => String::new(),
    }
}

/// Splits a shell tool output as Codex gives it to the model (`Chunk ID: …`, `Wall time: …`,
/// `Process exited with code N`, `Original token count: …`, `Output:`, then the output) into
/// the exit code and the output; text without that header is all output.
///
/// ```
/// use bridge_codex::normalize::exec_output;
/// let (code, body) = exec_output("Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 1\nOutput:\nboom\n");
/// assert_eq!((code, body), (Some(1), "boom\n"));
/// assert_eq!(exec_output("plain"), (None, "plain"));
/// ```
pub fn exec_output(text: &str) -> (Option<i64>, &str) {
    let mut exit = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "Output:" {
            return (exit, &text[offset + line.len()..]);
        }
        if let Some(code) = l
            .strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
        {
            exit = code.trim().parse().ok();
        } else if ![
            "Chunk ID:",
            "Wall time:",
            "Original token count:",
            "Process running",
        ]
        .iter()
        .any(|k| l.starts_with(k))
        {
            break;
        }
        offset += line.len();
    }
    (None, text)
}

/// Reads a rollout `FileChange` item: `changes` is `{path: {type, content | unified_diff, move_path}}`.
fn file_change_detail(item: &Value) -> FileChangeDetail {
    FileChangeDetail {
        changes: file_changes(item),
        stdout: str_at(item, "stdout").map(str::to_string),
    }
}

/// The changes of a rollout `FileChange` item, by path.
pub(crate) fn file_changes(item: &Value) -> HashMap<String, Change> {
    let mut changes = HashMap::new();
    for (path, change) in item
        .get("changes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let content = str_at(change, "content").unwrap_or_default().to_string();
        let parsed = match str_at(change, "type") {
            Some("add") => Change::Add { content },
            Some("delete") => Change::Delete { content },
            _ => Change::Update {
                unified_diff: str_at(change, "unified_diff")
                    .unwrap_or_default()
                    .to_string(),
                move_path: str_at(change, "move_path").map(str::to_string),
            },
        };
        changes.insert(path.clone(), parsed);
    }
    changes
}

impl Normalizer for CodexNormalizer {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let Some(value) = json_event("codex", line, out) else {
            return;
        };
        if self.ended {
            return;
        }
        match str_at(&value, "type").unwrap_or_default() {
            "thread.started" => {
                if let Some(id) = str_at(&value, "thread_id") {
                    self.thread_started(id, out);
                }
            }
            phase @ ("item.started" | "item.updated" | "item.completed") => {
                if let Some(item) = value.get("item") {
                    self.item(phase, item, out);
                }
            }
            "turn.completed" => self.turn_completed(&value, out),
            "turn.failed" => {
                let message = value
                    .get("error")
                    .and_then(|e| str_at(e, "message"))
                    .map(str::to_string)
                    .or_else(|| self.pending_error.clone())
                    .unwrap_or_else(|| "Codex reported that the turn failed".into());
                self.fail(message, out);
            }
            "error" => self.top_level_error(&value, out),
            _ => {}
        }
    }

    fn session_id(&self) -> Option<String> {
        self.thread_id.clone()
    }

    fn finish(&mut self, _exit: Option<&std::process::ExitStatus>, out: &mut Vec<Event>) {
        // Codex printed its error but died before `turn.failed`: that error is the reason.
        if !self.ended
            && let Some(message) = self.pending_error.take()
        {
            self.fail(message, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use bridge_core::normalize::turn_end;

    use super::*;

    fn run(normalizer: &mut CodexNormalizer, lines: &[&str]) -> Vec<Event> {
        let mut out = Vec::new();
        for line in lines {
            normalizer.line(line, &mut out);
        }
        out
    }

    #[test]
    fn duplicate_id_key_of_web_search_is_accepted() {
        let mut n = CodexNormalizer::new();
        let events = run(
            &mut n,
            &[
                r#"{"type":"item.completed","item":{"id":"item_0","type":"web_search","id":"ws_1","query":"q","action":{"type":"search","query":"q"}}}"#,
            ],
        );
        let Event::ToolUse(tool) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(
            (tool.id.as_str(), tool.name.as_str()),
            ("ws_1", "WebSearch")
        );
        assert_eq!(tool.input["query"], "q");
    }

    #[test]
    fn usage_is_the_difference_to_the_baseline() {
        let mut n = CodexNormalizer::resumed();
        n.set_usage_baseline(TokenTotals {
            input: 2468,
            cached_input: 2000,
            cache_write_input: 0,
            output: 112,
            reasoning_output: 14,
        });
        let events = run(
            &mut n,
            &[
                r#"{"type":"thread.started","thread_id":"t"}"#,
                r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hi"}}"#,
                r#"{"type":"turn.completed","usage":{"input_tokens":3702,"cached_input_tokens":3000,"cache_write_input_tokens":0,"output_tokens":168,"reasoning_output_tokens":21}}"#,
            ],
        );
        let usage = events
            .iter()
            .find_map(|e| match e {
                Event::Usage(u) => Some(u.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens
            ),
            (234, 1000, 56)
        );
        assert_eq!(usage.reasoning_tokens, Some(7));
        let end = turn_end(&events);
        assert!(end.success);
        assert_eq!(end.result.as_deref(), Some("Hi"));
        assert_eq!(end.session_id.as_deref(), Some("t"));
    }

    #[test]
    fn token_count_carries_the_last_call_and_the_context_window_from_the_rollout() {
        let mut n = CodexNormalizer::new();
        let mut out = Vec::new();
        for (input, cached) in [(1234, 1000), (1234, 1000)] {
            n.rollout_line(
                &format!(
                    r#"{{"type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{input}}},"last_token_usage":{{"input_tokens":{input},"cached_input_tokens":{cached},"output_tokens":56}},"model_context_window":258400}}}}}}"#
                ),
                false,
                &mut out,
            );
        }
        n.line(
            r#"{"type":"turn.completed","usage":{"input_tokens":2468,"cached_input_tokens":2000,"output_tokens":112}}"#,
            &mut out,
        );
        let info = out
            .iter()
            .find_map(|e| match e {
                Event::Message { message } if message["type"] == "event_msg" => {
                    Some(message["payload"]["info"].clone())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(info["last_token_usage"]["input_tokens"], 1234, "{info}");
        assert_eq!(info["last_token_usage"]["cached_input_tokens"], 1000);
        assert_eq!(info["total_token_usage"]["input_tokens"], 2468);
        assert_eq!(info["model_context_window"], 258400);
    }

    #[test]
    fn unknown_baseline_is_reported() {
        let mut n = CodexNormalizer::resumed();
        let events = run(
            &mut n,
            &[r#"{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":1}}"#],
        );
        assert!(
            events.iter().any(
                |e| matches!(e, Event::Warning { code, .. } if code == "usage_baseline_unknown")
            )
        );
    }

    #[test]
    fn error_then_exit_without_turn_failed_is_a_failure_with_that_message() {
        let mut n = CodexNormalizer::new();
        let mut events = run(
            &mut n,
            &[
                r#"{"type":"thread.started","thread_id":"t"}"#,
                r#"{"type":"error","message":"Missing environment variable: `X`."}"#,
            ],
        );
        assert!(!events.iter().any(|e| matches!(e, Event::TurnEnd(_))));
        n.finish(None, &mut events);
        let end = turn_end(&events);
        assert!(!end.success);
        assert_eq!(
            end.error.as_deref(),
            Some("Missing environment variable: `X`.")
        );
    }

    #[test]
    fn a_silent_exit_ends_nothing() {
        let mut n = CodexNormalizer::new();
        let mut events = run(&mut n, &[r#"{"type":"turn.started"}"#]);
        n.finish(None, &mut events);
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn reconnects_are_statuses() {
        let mut n = CodexNormalizer::new();
        let events = run(
            &mut n,
            &[r#"{"type":"error","message":"Reconnecting... 2/5 (stream closed)"}"#],
        );
        let Event::Status(s) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(
            (s.kind, s.attempt, s.max_attempts),
            (StatusKind::Reconnect, Some(2), Some(5))
        );
    }

    #[test]
    fn failed_commands_carry_the_exit_code_and_declined_ones_a_warning() {
        let mut n = CodexNormalizer::new().with_id_prefix("t1");
        let events = run(
            &mut n,
            &[
                r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'false'","aggregated_output":"boom\n","exit_code":1,"status":"failed"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"rm x","aggregated_output":"","exit_code":null,"status":"declined"}}"#,
            ],
        );
        let results: Vec<&ToolResult> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolResult(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(results[0].tool_use_id, "t1_item_1");
        assert_eq!(results[0].content, "Exit code 1\nboom\n");
        assert!(results[0].is_error && results[1].is_error);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Warning { code, .. } if code == "permission_denied"))
        );
    }

    #[test]
    fn rollout_fills_in_file_change_content() {
        let mut n = CodexNormalizer::new();
        let mut out = Vec::new();
        n.rollout_line(
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"FileChange","id":"call_1","changes":{"/w/a.txt":{"type":"update","unified_diff":"@@ -1,2 +1,2 @@\n one\n-two\n+2\n","move_path":null},"/w/b.txt":{"type":"add","content":"new\n"}},"status":"completed","stdout":"Success. Updated the following files:\nA b.txt\nM a.txt\n"}}}"#,
            false,
            &mut out,
        );
        assert!(out.is_empty());
        n.line(
            r#"{"type":"item.completed","item":{"id":"item_0","type":"file_change","changes":[{"path":"/w/a.txt","kind":"update"},{"path":"/w/b.txt","kind":"add"}],"status":"completed"}}"#,
            &mut out,
        );
        let tools: Vec<&ToolUse> = out
            .iter()
            .filter_map(|e| match e {
                Event::ToolUse(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(tools[0].name, "Edit");
        assert_eq!(tools[0].input["old_string"], "one\ntwo");
        assert_eq!(tools[1].name, "Write");
        assert_eq!(tools[1].input["content"], "new\n");
        assert_eq!(tools[1].id, "item_0_1");
        assert!(out.iter().any(|e| matches!(e, Event::ToolResult(r)
            if r.content == "Success. Updated the following files:\nA b.txt\nM a.txt")));
    }

    #[test]
    fn rollout_shows_refused_calls_and_ignores_history() {
        let call = r#"{"type":"response_item","payload":{"type":"custom_tool_call","call_id":"call_9","name":"apply_patch","input":"*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}}"#;
        let output = r#"{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_9","output":"patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"}}"#;
        let mut n = CodexNormalizer::new();
        let mut out = Vec::new();
        n.rollout_line(call, true, &mut out);
        n.rollout_line(output, true, &mut out);
        assert!(out.is_empty(), "history is not replayed: {out:?}");
        n.rollout_line(call, false, &mut out);
        n.rollout_line(output, false, &mut out);
        let Some(Event::ToolUse(tool)) = out.iter().find(|e| matches!(e, Event::ToolUse(_))) else {
            panic!("{out:?}")
        };
        assert_eq!(tool.name, "Write");
        assert_eq!(tool.input["content"], "hi\n");
        assert!(
            out.iter()
                .any(|e| matches!(e, Event::ToolResult(r) if r.is_error))
        );
        assert!(
            out.iter()
                .any(|e| matches!(e, Event::Warning { code, .. } if code == "permission_denied"))
        );
    }

    #[test]
    fn rollout_shows_a_shell_command_codex_printed_no_item_for() {
        let mut n = CodexNormalizer::new();
        let mut out = Vec::new();
        n.rollout_line(
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"touch x\"}","call_id":"call_2"}}"#,
            false,
            &mut out,
        );
        n.rollout_line(
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_2","output":"Chunk ID: 1\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 9\nOutput:\ntouch: cannot touch 'x': Read-only file system\n"}}"#,
            false,
            &mut out,
        );
        let Some(Event::ToolResult(result)) =
            out.iter().find(|e| matches!(e, Event::ToolResult(_)))
        else {
            panic!("{out:?}")
        };
        assert!(result.is_error);
        assert_eq!(
            result.content,
            "Exit code 1\ntouch: cannot touch 'x': Read-only file system\n"
        );
        assert!(
            out.iter()
                .any(|e| matches!(e, Event::Warning { code, .. } if code == "sandbox_denied"))
        );
        // A command that did get an item is not shown twice.
        let mut out = Vec::new();
        n.rollout_line(
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_3"}}"#,
            false,
            &mut out,
        );
        n.rollout_line(
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_3"}}}"#,
            false,
            &mut out,
        );
        n.rollout_line(
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_3","output":"Output:\nx\n"}}"#,
            false,
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn history_totals_become_the_baseline() {
        let mut n = CodexNormalizer::resumed();
        let mut out = Vec::new();
        n.rollout_line(
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10}}}}"#,
            true,
            &mut out,
        );
        n.rollout_history_done();
        n.line(
            r#"{"type":"turn.completed","usage":{"input_tokens":150,"cached_input_tokens":0,"output_tokens":15}}"#,
            &mut out,
        );
        let Some(Event::Usage(u)) = out.iter().find(|e| matches!(e, Event::Usage(_))) else {
            panic!("{out:?}")
        };
        assert_eq!((u.input_tokens, u.output_tokens), (50, 5));
    }

    #[test]
    fn todo_list_is_emitted_once_per_distinct_plan() {
        let mut n = CodexNormalizer::new();
        let a = r#"{"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[{"text":"A","completed":true},{"text":"B","completed":false}]}}"#;
        let b = r#"{"type":"item.completed","item":{"id":"item_0","type":"todo_list","items":[{"text":"A","completed":true},{"text":"B","completed":true}]}}"#;
        let events = run(&mut n, &[a, a, b]);
        let ids: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolUse(t) => Some(t.id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["item_0", "item_0_v2"]);
    }
}
