//! ACP messages → [`Event`]s. Pure: no I/O, no clock, so recorded transcripts replay as snapshot
//! tests ([`replay`]).
//!
//! | ACP | event |
//! |---|---|
//! | `session/new` / `session/load` result | [`Event::SessionId`] |
//! | `agent_message_chunk` (text) | [`Event::TextDelta`] ([`Event::BlockReset`] first when a tool ran since the last text) |
//! | `agent_thought_chunk` (text) | [`Event::ThinkingDelta`] |
//! | `tool_call`, `tool_call_update`, the `toolCall` of `session/request_permission` | one [`Event::ToolUse`] per call, Claude-shaped (`Bash`, `Read`, `Edit`, `Write`, `Grep`, `WebFetch`, …), with the ACP kind and the `diff` content as [`FileDiff`]; sent once the call is running, asks for approval, or the turn ends, so its input is complete |
//! | `tool_call_update` with status `completed` / `failed` | [`Event::ToolResult`] (text content, else the diff paths, else `rawOutput`) |
//! | `plan` | a `TodoWrite` [`Event::ToolUse`] (kind `think`, `{"todos":[…]}`) and its result |
//! | `usage_update` `{used, size, cost}` | [`Event::Usage`], scope message: `input_tokens` = context tokens used, `cost_usd` when in USD |
//! | `_meta.usage` on a chunk (Qwen), prompt result `usage`, `_meta.quota.token_count` (Gemini) | [`Event::Usage`] (message scope for the first, turn scope for the others) |
//! | `session/request_permission` | [`Event::PermissionRequest`] (options mapped to [`DecisionKind`]s) |
//! | prompt result `stopReason` | [`Event::TurnEnd`] |
//!
//! `user_message_chunk` (history replayed by `session/load`), `available_commands_update`,
//! `current_mode_update`, `config_option_update` and `session_info_update` carry nothing a
//! client renders and are dropped.

use std::collections::{HashMap, HashSet};

use bridge_core::event::{
    Event, FileDiff, Status, StatusKind, StopReason, ToolKind, ToolResult, ToolUse, TurnEnd, Usage,
    UsageScope,
};
use bridge_core::normalize::{fail_turn, str_at};
use bridge_core::permission::{DecisionKind, PermissionRequest, RequestKind};
use serde_json::{Map, Value, json};

use crate::rpc::{Id, Incoming, RpcError, parse};

/// The normalized kind of an ACP tool kind string.
///
/// ```
/// use bridge_acp::normalize::tool_kind;
/// use bridge_core::event::ToolKind;
/// assert_eq!(tool_kind("execute"), ToolKind::Execute);
/// assert_eq!(tool_kind("something_new"), ToolKind::Other);
/// ```
pub fn tool_kind(kind: &str) -> ToolKind {
    match kind {
        "read" => ToolKind::Read,
        "edit" => ToolKind::Edit,
        "delete" => ToolKind::Delete,
        "move" => ToolKind::Move,
        "search" => ToolKind::Search,
        "execute" => ToolKind::Execute,
        "think" => ToolKind::Think,
        "fetch" => ToolKind::Fetch,
        "switch_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The ACP spelling of a [`ToolKind`].
fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        ToolKind::Other => "other",
    }
}

/// Longest final `result` text kept (the streamed deltas carry all of it).
pub const RESULT_MAX_BYTES: usize = 256 * 1024;

/// What the bridge knows about one tool call, merged from every message that mentions it.
#[derive(Debug, Clone, Default)]
struct ToolState {
    title: String,
    kind: Option<String>,
    raw_input: Option<Value>,
    locations: Vec<String>,
    diff: Option<FileDiff>,
    provider_name: Option<String>,
    /// The input came from streamed argument text, not `rawInput`.
    streamed_input: bool,
    announced: bool,
    finished: bool,
}

impl ToolState {
    fn merge(&mut self, call: &Value) {
        if let Some(title) = str_at(call, "title").filter(|t| !t.is_empty()) {
            self.title = title.to_string();
        }
        if let Some(kind) = str_at(call, "kind") {
            self.kind = Some(kind.to_string());
        }
        if let Some(raw) = call.get("rawInput").filter(|v| !v.is_null()) {
            // Later updates complete the input (opencode sends `{cwd}` first, the command later).
            match (&mut self.raw_input, raw) {
                (Some(Value::Object(old)), Value::Object(new)) => {
                    for (k, v) in new {
                        old.insert(k.clone(), v.clone());
                    }
                }
                (slot, raw) => *slot = Some(raw.clone()),
            }
        }
        if let Some(locations) = call.get("locations").and_then(Value::as_array)
            && !locations.is_empty()
        {
            self.locations = locations
                .iter()
                .filter_map(|l| str_at(l, "path").map(str::to_string))
                .collect();
        }
        // Agents that send no `rawInput` (Kimi) stream the arguments as the running call's text
        // content: keep the last complete JSON object as the input.
        if call.get("rawInput").is_none_or(Value::is_null)
            && str_at(call, "status") == Some("in_progress")
            && let Some(Value::Object(args)) =
                first_text(call).and_then(|t| serde_json::from_str(t).ok())
        {
            self.raw_input = Some(Value::Object(args));
            self.streamed_input = true;
        }
        if let Some(diff) = call
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| str_at(c, "type") == Some("diff"))
        {
            self.diff = Some(FileDiff {
                path: str_at(diff, "path").unwrap_or_default().to_string(),
                old_text: str_at(diff, "oldText")
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
                new_text: str_at(diff, "newText").map(str::to_string),
            });
        }
        if let Some(name) = call
            .get("_meta")
            .and_then(|m| str_at(m, "toolName"))
            .or_else(|| call.get("_meta").and_then(|m| str_at(m, "tool_name")))
        {
            self.provider_name = Some(name.to_string());
        }
    }

    fn kind(&self) -> ToolKind {
        self.kind
            .as_deref()
            .map(tool_kind)
            .unwrap_or(ToolKind::Other)
    }

    /// The Claude-style tool name plugins render from.
    fn name(&self) -> String {
        match self.kind() {
            ToolKind::Execute => "Bash".into(),
            ToolKind::Read => "Read".into(),
            ToolKind::Edit => match &self.diff {
                Some(diff) if diff.old_text.is_none() => "Write".into(),
                _ => "Edit".into(),
            },
            ToolKind::Delete => "Delete".into(),
            ToolKind::Move => "Move".into(),
            ToolKind::Search => "Grep".into(),
            ToolKind::Fetch => "WebFetch".into(),
            ToolKind::Think => "Task".into(),
            ToolKind::SwitchMode => "ExitPlanMode".into(),
            ToolKind::Other => self
                .provider_name
                .clone()
                .or_else(|| {
                    // Kimi titles a running call `Name: <argument preview>`.
                    let title = match self.title.split_once(": ") {
                        Some((name, _)) if self.streamed_input => name,
                        _ => self.title.as_str(),
                    };
                    (!title.is_empty()).then(|| title.to_string())
                })
                .unwrap_or_else(|| "Tool".into()),
        }
    }

    /// The Claude-shaped input: the agent's `rawInput` plus the keys Claude's tools use.
    fn input(&self) -> Value {
        let mut input: Map<String, Value> = match &self.raw_input {
            Some(Value::Object(obj)) => obj.clone(),
            Some(other) => {
                let mut m = Map::new();
                m.insert("input".into(), other.clone());
                m
            }
            None => Map::new(),
        };
        let path = self
            .diff
            .as_ref()
            .map(|d| d.path.clone())
            .or_else(|| self.locations.first().cloned())
            .or_else(|| {
                ["file_path", "absolute_path", "path", "filePath"]
                    .iter()
                    .find_map(|k| input.get(*k).and_then(Value::as_str).map(str::to_string))
            });
        let mut set = |key: &str, value: Value| {
            input.entry(key.to_string()).or_insert(value);
        };
        match self.kind() {
            ToolKind::Execute => {
                let command = self
                    .raw_input
                    .as_ref()
                    .and_then(|r| str_at(r, "command").or_else(|| str_at(r, "cmd")))
                    .map(str::to_string)
                    .unwrap_or_else(|| self.title.clone());
                if command != self.title && !self.title.is_empty() {
                    set("description", json!(self.title));
                }
                set("command", json!(command));
            }
            ToolKind::Edit => {
                if let Some(path) = path {
                    set("file_path", json!(path));
                }
                if let Some(diff) = &self.diff {
                    match &diff.old_text {
                        Some(old) => {
                            set("old_string", json!(old));
                            set(
                                "new_string",
                                json!(diff.new_text.clone().unwrap_or_default()),
                            );
                        }
                        None => set("content", json!(diff.new_text.clone().unwrap_or_default())),
                    }
                }
            }
            ToolKind::Read | ToolKind::Delete | ToolKind::Move => {
                if let Some(path) = path {
                    set("file_path", json!(path));
                }
            }
            ToolKind::Search => set("pattern", json!(self.title)),
            ToolKind::Fetch => set("url", json!(self.title)),
            _ => {
                if !self.title.is_empty() {
                    set("description", json!(self.title));
                }
            }
        }
        Value::Object(input)
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = self.locations.clone();
        if let Some(diff) = &self.diff
            && !paths.contains(&diff.path)
        {
            paths.push(diff.path.clone());
        }
        paths
    }
}

/// The first text content block of a tool call.
fn first_text(call: &Value) -> Option<&str> {
    call.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| str_at(c, "type") == Some("content"))
        .and_then(|c| c.get("content"))
        .and_then(|c| str_at(c, "text"))
}

/// Text of ACP tool-call content (`content` blocks' text, else the diffs' paths).
fn content_text(call: &Value) -> String {
    let mut texts = Vec::new();
    let mut diffs = Vec::new();
    for item in call
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match str_at(item, "type") {
            Some("content") => {
                if let Some(text) = item.get("content").and_then(|c| str_at(c, "text")) {
                    texts.push(text.to_string());
                }
            }
            Some("diff") => {
                if let Some(path) = str_at(item, "path") {
                    diffs.push(format!("Updated {path}"));
                }
            }
            Some("terminal") => {
                if let Some(id) = str_at(item, "terminalId") {
                    texts.push(format!("[terminal {id}]"));
                }
            }
            _ => {}
        }
    }
    if !texts.is_empty() {
        return texts.join("\n");
    }
    if !diffs.is_empty() {
        return diffs.join("\n");
    }
    match call.get("rawOutput") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(obj)) => ["output", "content", "result", "error"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| Value::Object(obj.clone()).to_string()),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn u64_at(value: &Value, keys: &[&str]) -> u64 {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_u64))
        .unwrap_or(0)
}

/// Usage from an ACP usage object (`{inputTokens, outputTokens, cachedReadTokens, …}`) or a
/// Gemini `token_count` (`{input_tokens, output_tokens}`).
fn usage_from(value: &Value, scope: UsageScope) -> Option<Usage> {
    if !value.is_object() {
        return None;
    }
    let input = u64_at(value, &["inputTokens", "input_tokens"]);
    let output = u64_at(value, &["outputTokens", "output_tokens"]);
    if input == 0 && output == 0 {
        return None;
    }
    let thought = u64_at(
        value,
        &["thoughtTokens", "thought_tokens", "reasoningTokens"],
    );
    Some(Usage {
        scope,
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: u64_at(value, &["cachedReadTokens", "cached_read_tokens"]),
        cache_creation_input_tokens: u64_at(value, &["cachedWriteTokens", "cached_write_tokens"]),
        reasoning_tokens: (thought > 0).then_some(thought),
        cost_usd: None,
        context_window: None,
        context_tokens: None,
    })
}

/// The [`DecisionKind`] an ACP permission option kind stands for.
pub fn option_decision(kind: &str) -> Option<DecisionKind> {
    match kind {
        "allow_once" => Some(DecisionKind::AllowOnce),
        "allow_always" => Some(DecisionKind::AllowSession),
        "reject_once" | "reject_always" => Some(DecisionKind::Deny),
        _ => None,
    }
}

/// Agents that report retries and API errors as ordinary message text (Copilot CLI: an
/// `agent_message_chunk` `Info: … Retrying...`, then `Error: …` and `end_turn`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextNotices {
    /// A chunk starting with this is a retry status, not answer text.
    pub status_prefix: Option<&'static str>,
    /// The turn's last chunk starting with this, in a prompt result without `usage`, is the
    /// turn's error.
    pub error_prefix: Option<&'static str>,
}

/// Normalizer state for one ACP session (across its turns).
#[derive(Debug, Default)]
pub struct AcpNormalizer {
    notices: TextNotices,
    /// Kinds of the agent's tools by name, for agents whose tool calls carry no `kind`.
    tool_kinds: &'static [(&'static str, ToolKind)],
    /// Anything at all was emitted for the current turn (text, thinking, tools, plans).
    output_seen: bool,
    /// The last text chunk of the turn, when it starts with the error prefix.
    error_text: Option<String>,
    session_id: Option<String>,
    tools: HashMap<String, ToolState>,
    /// Tool ids in the order they were first seen (for a deterministic flush).
    order: Vec<String>,
    text: String,
    /// `text` reached [`RESULT_MAX_BYTES`]: later chunks are not kept (the result stays a
    /// prefix of what was streamed).
    text_capped: bool,
    after_tool: bool,
    last_message_id: Option<String>,
    plans: u32,
    /// Ids of this turn's plan tool calls (made up by the bridge).
    plan_ids: HashSet<String>,
    /// Agent tool call ids that equal one of `plan_ids`, and the id they go out with.
    renamed: HashMap<String, String>,
}

impl AcpNormalizer {
    /// A fresh normalizer.
    pub fn new() -> Self {
        AcpNormalizer::default()
    }

    /// A normalizer for an agent that reports notices as text.
    pub fn with_notices(notices: TextNotices) -> Self {
        AcpNormalizer {
            notices,
            ..AcpNormalizer::default()
        }
    }

    /// Sets the kinds of the agent's tools by name (for calls that carry no `kind`).
    pub fn with_tool_kinds(mut self, kinds: &'static [(&'static str, ToolKind)]) -> Self {
        self.tool_kinds = kinds;
        self
    }

    /// Whether the current turn produced any output (text, thinking, tool calls, plans).
    pub fn output_seen(&self) -> bool {
        self.output_seen
    }

    /// The session id, once known.
    pub fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    /// The agent text of the current turn so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Starts a new turn on the same session (text and tool bookkeeping are per turn).
    pub fn begin_turn(&mut self) {
        self.text.clear();
        self.text_capped = false;
        self.plan_ids.clear();
        self.renamed.clear();
        self.tools.clear();
        self.order.clear();
        self.after_tool = false;
        self.last_message_id = None;
        self.error_text = None;
        self.output_seen = false;
    }

    /// Records the session id and emits it.
    pub fn session(&mut self, id: &str, out: &mut Vec<Event>) {
        if self.session_id.as_deref() != Some(id) {
            self.session_id = Some(id.to_string());
            out.push(Event::SessionId { id: id.to_string() });
        }
    }

    /// The id an agent's tool call goes out with: its own, unless the bridge already used it
    /// for a plan in this turn (a wire id must name one call).
    fn agent_tool_id(&mut self, id: &str) -> String {
        if let Some(alias) = self.renamed.get(id) {
            return alias.clone();
        }
        if !self.plan_ids.contains(id) {
            return id.to_string();
        }
        let mut alias = format!("{id}-agent");
        while self.plan_ids.contains(&alias) || self.tools.contains_key(&alias) {
            alias.push('_');
        }
        self.renamed.insert(id.to_string(), alias.clone());
        alias
    }

    fn tool(&mut self, id: &str) -> &mut ToolState {
        if !self.tools.contains_key(id) {
            self.order.push(id.to_string());
        }
        self.tools.entry(id.to_string()).or_default()
    }

    fn announce(&mut self, id: &str, out: &mut Vec<Event>) {
        let kinds = self.tool_kinds;
        let Some(state) = self.tools.get_mut(id) else {
            return;
        };
        if state.announced {
            return;
        }
        state.announced = true;
        self.output_seen = true;
        if state.kind.is_none() {
            let name = state.name();
            if let Some((_, kind)) = kinds.iter().find(|(n, _)| *n == name) {
                state.kind = Some(kind_name(*kind).to_string());
            }
        }
        out.push(Event::ToolUse(ToolUse {
            id: id.to_string(),
            name: state.name(),
            kind: state.kind(),
            input: state.input(),
            diff: state.diff.clone(),
        }));
        self.after_tool = true;
    }

    fn finish_tool(&mut self, id: &str, content: String, is_error: bool, out: &mut Vec<Event>) {
        self.announce(id, out);
        let Some(state) = self.tools.get_mut(id) else {
            return;
        };
        if state.finished {
            return;
        }
        state.finished = true;
        out.push(Event::ToolResult(ToolResult {
            tool_use_id: id.to_string(),
            content: Value::String(content),
            is_error,
        }));
        self.after_tool = true;
    }

    fn text_chunk(&mut self, update: &Value, thinking: bool, out: &mut Vec<Event>) {
        let Some(text) = update
            .get("content")
            .filter(|c| str_at(c, "type") == Some("text"))
            .and_then(|c| str_at(c, "text"))
        else {
            return;
        };
        // Gemini CLI formats each thought part as `**<subject>**\n<text>`; a streamed part
        // without a subject comes out as an empty `****\n` prefix, which is noise.
        let text = if thinking {
            text.strip_prefix("****\n").unwrap_or(text)
        } else {
            text
        };
        if text.is_empty() {
            return;
        }
        if !thinking {
            if let Some(prefix) = self.notices.status_prefix
                && text.starts_with(prefix)
            {
                out.push(Event::Status(Status {
                    kind: StatusKind::Retry,
                    message: text.to_string(),
                    attempt: None,
                    max_attempts: None,
                }));
                return;
            }
            self.error_text = self
                .notices
                .error_prefix
                .filter(|p| text.starts_with(p))
                .map(|_| text.to_string());
        }
        let message_id = str_at(update, "messageId").map(str::to_string);
        let new_message = message_id.is_some()
            && self.last_message_id.is_some()
            && message_id != self.last_message_id;
        if self.after_tool || new_message {
            out.push(Event::BlockReset);
            self.after_tool = false;
        }
        if message_id.is_some() {
            self.last_message_id = message_id;
        }
        self.output_seen = true;
        if thinking {
            out.push(Event::ThinkingDelta {
                text: text.to_string(),
            });
        } else {
            // The text is kept for the final line's `result`; past RESULT_MAX_BYTES only the
            // deltas carry it (a flood must not grow memory without bound).
            if !self.text_capped {
                let room = RESULT_MAX_BYTES - self.text.len();
                if text.len() <= room {
                    self.text.push_str(text);
                } else {
                    let mut cut = room;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.text.push_str(&text[..cut]);
                    self.text_capped = true;
                }
            }
            out.push(Event::TextDelta {
                text: text.to_string(),
            });
        }
    }

    /// Handles the params of one `session/update` notification.
    pub fn update(&mut self, params: &Value, out: &mut Vec<Event>) {
        let Some(update) = params.get("update") else {
            return;
        };
        match str_at(update, "sessionUpdate") {
            Some("agent_message_chunk") => {
                self.text_chunk(update, false, out);
                if let Some(usage) = update
                    .get("_meta")
                    .and_then(|m| m.get("usage"))
                    .and_then(|u| usage_from(u, UsageScope::Message))
                {
                    out.push(Event::Usage(usage));
                }
            }
            Some("agent_thought_chunk") => self.text_chunk(update, true, out),
            Some(kind @ ("tool_call" | "tool_call_update")) => {
                let Some(id) = str_at(update, "toolCallId").map(|id| self.agent_tool_id(id)) else {
                    return;
                };
                self.tool(&id).merge(update);
                let status = str_at(update, "status");
                match status {
                    Some("completed") | Some("failed") => {
                        let text = content_text(update);
                        self.finish_tool(&id, text, status == Some("failed"), out);
                    }
                    // A call whose kind and input are still unknown (Kimi streams its arguments)
                    // is announced when it completes or asks for approval.
                    Some("in_progress") => {
                        let state = self.tool(&id);
                        if state.kind.is_some() && !state.streamed_input {
                            self.announce(&id, out);
                        }
                    }
                    // A new call that is not pending (Gemini in yolo mode) is running already.
                    Some(s) if kind == "tool_call" && s != "pending" => self.announce(&id, out),
                    _ => {}
                }
            }
            Some("plan") => {
                let todos: Vec<Value> = update
                    .get("entries")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        let content = str_at(e, "content").unwrap_or_default();
                        json!({
                            "content": content,
                            "status": str_at(e, "status").unwrap_or("pending"),
                            "activeForm": content,
                            "priority": str_at(e, "priority").unwrap_or("medium"),
                        })
                    })
                    .collect();
                // An id no call of this turn has (the agent's ids are its own choice).
                self.plans += 1;
                while self.tools.contains_key(&format!("acp-plan-{}", self.plans)) {
                    self.plans += 1;
                }
                self.output_seen = true;
                let id = format!("acp-plan-{}", self.plans);
                self.plan_ids.insert(id.clone());
                out.push(Event::ToolUse(ToolUse {
                    id: id.clone(),
                    name: "TodoWrite".into(),
                    kind: ToolKind::Think,
                    input: json!({ "todos": todos }),
                    diff: None,
                }));
                out.push(Event::ToolResult(ToolResult {
                    tool_use_id: id,
                    content: Value::String("Plan updated".into()),
                    is_error: false,
                }));
                self.after_tool = true;
            }
            Some("usage_update") => {
                let used = update.get("used").and_then(Value::as_u64).unwrap_or(0);
                let cost = update.get("cost").and_then(|c| {
                    let usd =
                        str_at(c, "currency").is_none_or(|cur| cur.eq_ignore_ascii_case("USD"));
                    c.get("amount").and_then(Value::as_f64).filter(|_| usd)
                });
                out.push(Event::Usage(Usage {
                    scope: UsageScope::Message,
                    input_tokens: used,
                    output_tokens: 0,
                    cache_read_input_tokens: 0,
                    cache_creation_input_tokens: 0,
                    reasoning_tokens: None,
                    cost_usd: cost,
                    context_window: update
                        .get("size")
                        .and_then(Value::as_u64)
                        .filter(|n| *n > 0),
                    context_tokens: Some(used),
                }));
            }
            _ => {}
        }
    }

    /// Handles a `session/request_permission` request: announces its tool call and returns the
    /// unified request (also pushed to `out` as [`Event::PermissionRequest`]).
    pub fn permission_request(
        &mut self,
        id: &Id,
        params: &Value,
        out: &mut Vec<Event>,
    ) -> PermissionRequest {
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let tool_call_id = str_at(&call, "toolCallId")
            .map(|t| self.agent_tool_id(t))
            .unwrap_or_else(|| format!("acp-permission-{id}"));
        self.tool(&tool_call_id).merge(&call);
        self.announce(&tool_call_id, out);
        let state = self.tools.get(&tool_call_id).cloned().unwrap_or_default();
        let native = params.get("options").cloned().unwrap_or(json!([]));
        let mut options: Vec<DecisionKind> = Vec::new();
        for option in native.as_array().into_iter().flatten() {
            if let Some(kind) = str_at(option, "kind").and_then(option_decision)
                && !options.contains(&kind)
            {
                options.push(kind);
            }
        }
        options.push(DecisionKind::Cancel);
        let request = PermissionRequest {
            request_id: format!("acp-{id}"),
            kind: if state.kind() == ToolKind::SwitchMode {
                RequestKind::PlanApproval
            } else {
                RequestKind::Tool
            },
            tool_name: state.name(),
            tool_kind: state.kind(),
            input: state.input(),
            description: (!state.title.is_empty()).then(|| state.title.clone()),
            paths: state.paths(),
            tool_use_id: Some(tool_call_id),
            options,
            native: Some(native),
        };
        out.push(Event::PermissionRequest(request.clone()));
        request
    }

    /// A tool call was refused (or its approval cancelled): its result, unless the agent already
    /// sent one.
    pub fn refused(&mut self, tool_call_id: &str, message: &str, out: &mut Vec<Event>) {
        if self.tools.contains_key(tool_call_id) {
            self.finish_tool(tool_call_id, message.to_string(), true, out);
        }
    }

    /// Announces tool calls that never got past `pending` (so none is lost at the turn's end).
    pub fn flush(&mut self, out: &mut Vec<Event>) {
        for id in self.order.clone() {
            self.announce(&id, out);
        }
    }

    /// The turn's end from the `session/prompt` result. `interrupted` says whether the bridge
    /// asked the agent to cancel.
    pub fn prompt_result(&mut self, result: &Value, interrupted: bool, out: &mut Vec<Event>) {
        self.flush(out);
        let usage = result
            .get("usage")
            .and_then(|u| usage_from(u, UsageScope::Turn))
            .or_else(|| {
                result
                    .get("_meta")
                    .and_then(|m| m.get("quota"))
                    .and_then(|q| q.get("token_count"))
                    .and_then(|u| usage_from(u, UsageScope::Turn))
            });
        if let Some(usage) = usage {
            out.push(Event::Usage(usage));
        }
        let reason = str_at(result, "stopReason").unwrap_or("end_turn");
        let stop = StopReason::from_provider(reason);
        if !interrupted
            && result.get("usage").is_none()
            && let Some(message) = self.error_text.take()
        {
            fail_turn(
                bridge_core::event::ErrorCode::Provider,
                message,
                self.session_id.clone(),
                out,
            );
            return;
        }
        let end = if interrupted || stop == StopReason::Interrupted {
            TurnEnd {
                success: false,
                stop_reason: StopReason::Interrupted,
                session_id: self.session_id.clone(),
                result: None,
                error: Some(if interrupted {
                    "User interrupted".into()
                } else {
                    "the agent cancelled the turn".into()
                }),
            }
        } else {
            TurnEnd {
                success: true,
                stop_reason: stop,
                session_id: self.session_id.clone(),
                result: Some(self.text.clone()),
                error: None,
            }
        };
        out.push(Event::TurnEnd(end));
    }
}

/// Replays a recorded ACP transcript (the agent's stdout, one JSON-RPC message per line) into
/// events, the way the engine would have produced them: a `sessionId` result starts the
/// session, `session/update` and `session/request_permission` are normalized, a `stopReason`
/// result ends a turn. Lines that are not JSON-RPC become `unparsed_line` warnings.
pub fn replay<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Event> {
    let mut n = AcpNormalizer::new();
    let mut out = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        match parse(line) {
            Ok(Incoming::Response {
                outcome: Ok(result),
                ..
            }) => {
                if let Some(id) = str_at(&result, "sessionId") {
                    n.session(id, &mut out);
                } else if result.get("stopReason").is_some() {
                    n.prompt_result(&result, false, &mut out);
                    n.begin_turn();
                }
            }
            Ok(Incoming::Response {
                outcome: Err(error),
                ..
            }) => out.push(Event::warning("rpc_error", describe(&error))),
            Ok(Incoming::Notification { method, params }) if method == "session/update" => {
                n.update(&params, &mut out);
            }
            Ok(Incoming::Request { id, method, params })
                if method == "session/request_permission" =>
            {
                n.permission_request(&id, &params, &mut out);
            }
            Ok(_) => {}
            Err(_) => out.push(Event::warning("unparsed_line", line.to_string())),
        }
    }
    out
}

fn describe(error: &RpcError) -> String {
    format!("{} (code {})", error.describe(), error.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_call_with_a_plan_id_keeps_the_wire_ids_unique() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        let up = |u: Value| json!({"sessionId": "s", "update": u});
        // The agent's call first: the plan takes another id.
        n.update(
            &up(
                json!({"sessionUpdate": "tool_call", "toolCallId": "acp-plan-1", "title": "ls",
                            "kind": "execute", "status": "in_progress"}),
            ),
            &mut out,
        );
        n.update(
            &up(json!({"sessionUpdate": "plan", "entries": []})),
            &mut out,
        );
        // The plan first: the agent's call goes out renamed, its result too.
        n.update(
            &up(
                json!({"sessionUpdate": "tool_call", "toolCallId": "acp-plan-2", "title": "ls",
                            "kind": "execute", "status": "in_progress"}),
            ),
            &mut out,
        );
        n.update(
            &up(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "acp-plan-2",
                            "status": "completed"}),
            ),
            &mut out,
        );
        let uses: Vec<&str> = out
            .iter()
            .filter_map(|e| match e {
                Event::ToolUse(t) => Some(t.id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses, ["acp-plan-1", "acp-plan-2", "acp-plan-2-agent"]);
        let results: Vec<&str> = out
            .iter()
            .filter_map(|e| match e {
                Event::ToolResult(r) => Some(r.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(results, ["acp-plan-2", "acp-plan-2-agent"]);
    }

    #[test]
    fn the_capped_result_is_a_prefix_of_the_streamed_text() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        let chunk = |text: &str| {
            json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": text}}})
        };
        // One byte short of the cap, then a two-byte character that does not fit, then more.
        n.update(&chunk(&"a".repeat(RESULT_MAX_BYTES - 1)), &mut out);
        n.update(&chunk("é"), &mut out);
        n.update(&chunk("b"), &mut out);
        n.prompt_result(&json!({"stopReason": "end_turn"}), false, &mut out);
        let Some(Event::TurnEnd(end)) = out.last() else {
            panic!("{:?}", out.last());
        };
        let result = end.result.as_deref().unwrap();
        assert_eq!(result, "a".repeat(RESULT_MAX_BYTES - 1));
        n.begin_turn();
        n.update(&chunk("next turn"), &mut out);
        assert_eq!(n.text(), "next turn");
    }

    fn update(u: Value) -> Value {
        json!({"sessionId": "s", "update": u})
    }

    #[test]
    fn a_pending_call_is_announced_once_its_input_is_complete() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        n.update(
            &update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash",
                           "kind": "execute", "status": "pending", "rawInput": {"cwd": "/w"}}),
            ),
            &mut out,
        );
        assert!(out.is_empty());
        n.update(
            &update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress",
                           "title": "echo hi", "rawInput": {"command": "echo hi"}})),
            &mut out,
        );
        n.update(
            &update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                           "content": [{"type": "content", "content": {"type": "text", "text": "hi\n"}}]})),
            &mut out,
        );
        n.update(
            &update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}})),
            &mut out,
        );
        let Event::ToolUse(tool) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(tool.name, "Bash");
        assert_eq!(tool.input, json!({"cwd": "/w", "command": "echo hi"}));
        assert!(
            matches!(&out[1], Event::ToolResult(r) if r.content == json!("hi\n") && !r.is_error)
        );
        assert_eq!(out[2], Event::BlockReset);
        assert_eq!(
            out[3],
            Event::TextDelta {
                text: "done".into()
            }
        );
    }

    #[test]
    fn diffs_become_write_or_edit() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        n.update(
            &update(json!({"sessionUpdate": "tool_call", "toolCallId": "w", "title": "Writing", "kind": "edit",
                "status": "in_progress",
                "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "", "newText": "x\n"}]})),
            &mut out,
        );
        n.update(
            &update(json!({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Editing", "kind": "edit",
                "status": "in_progress",
                "content": [{"type": "diff", "path": "/w/b.txt", "oldText": "a", "newText": "b"}]})),
            &mut out,
        );
        let Event::ToolUse(w) = &out[0] else { panic!() };
        assert_eq!(w.name, "Write");
        assert_eq!(w.input["content"], "x\n");
        assert_eq!(w.diff.as_ref().unwrap().old_text, None);
        let Event::ToolUse(e) = &out[1] else { panic!() };
        assert_eq!(e.name, "Edit");
        assert_eq!(e.input["old_string"], "a");
        assert_eq!(e.input["file_path"], "/w/b.txt");
    }

    #[test]
    fn permission_options_map_to_decisions() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        let req = n.permission_request(
            &Id::Number(0),
            &json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "touch x", "kind": "execute", "status": "pending"},
                    "options": [{"optionId": "proceed_always", "kind": "allow_always"},
                                {"optionId": "proceed_once", "kind": "allow_once"},
                                {"optionId": "cancel", "kind": "reject_once"}]}),
            &mut out,
        );
        assert_eq!(req.request_id, "acp-0");
        assert_eq!(req.tool_name, "Bash");
        assert_eq!(req.input["command"], "touch x");
        assert_eq!(
            req.options,
            vec![
                DecisionKind::AllowSession,
                DecisionKind::AllowOnce,
                DecisionKind::Deny,
                DecisionKind::Cancel
            ]
        );
        assert!(matches!(out[0], Event::ToolUse(_)));
        assert!(matches!(out[1], Event::PermissionRequest(_)));
        n.refused("t", "denied", &mut out);
        assert!(matches!(&out[2], Event::ToolResult(r) if r.is_error));
        // A later failure update for the same call does not duplicate the result.
        n.update(
            &update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed"}),
            ),
            &mut out,
        );
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn stop_reasons_and_usage() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        n.session("s1", &mut out);
        n.prompt_result(
            &json!({"stopReason": "max_tokens", "usage": {"inputTokens": 5, "outputTokens": 2, "cachedReadTokens": 1}}),
            false,
            &mut out,
        );
        assert!(
            matches!(&out[1], Event::Usage(u) if u.scope == UsageScope::Turn && u.cache_read_input_tokens == 1)
        );
        assert!(
            matches!(&out[2], Event::TurnEnd(e) if e.success && e.stop_reason == StopReason::MaxTokens && e.session_id.as_deref() == Some("s1"))
        );
        out.clear();
        n.prompt_result(&json!({"stopReason": "cancelled"}), true, &mut out);
        assert!(
            matches!(&out[0], Event::TurnEnd(e) if !e.success && e.error.as_deref() == Some("User interrupted"))
        );
    }

    #[test]
    fn text_notices_become_status_and_error() {
        let notices = TextNotices {
            status_prefix: Some("Info: "),
            error_prefix: Some("Error: "),
        };
        let mut n = AcpNormalizer::with_notices(notices);
        let mut out = Vec::new();
        for text in [
            "Info: Retrying...",
            "Error: Authentication failed (HTTP 401).",
        ] {
            n.update(
                &update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})),
                &mut out,
            );
        }
        n.prompt_result(&json!({"stopReason": "end_turn"}), false, &mut out);
        assert!(matches!(&out[0], Event::Status(s) if s.kind == StatusKind::Retry));
        assert!(matches!(&out[1], Event::TextDelta { .. }));
        assert!(matches!(&out[2], Event::Error(e) if e.message.contains("HTTP 401")));
        assert!(matches!(&out[3], Event::TurnEnd(e) if !e.success));
        // A successful turn (with usage) whose answer starts with the prefix stays a success.
        n.begin_turn();
        out.clear();
        n.update(
            &update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Error: handling explained"}})),
            &mut out,
        );
        n.prompt_result(
            &json!({"stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}}),
            false,
            &mut out,
        );
        assert!(matches!(out.last(), Some(Event::TurnEnd(e)) if e.success));
    }

    #[test]
    fn plans_become_todo_lists() {
        let mut n = AcpNormalizer::new();
        let mut out = Vec::new();
        n.update(
            &update(json!({"sessionUpdate": "plan", "entries": [
                {"content": "Read code", "priority": "high", "status": "completed"},
                {"content": "Fix bug", "priority": "medium", "status": "in_progress"}]})),
            &mut out,
        );
        let Event::ToolUse(t) = &out[0] else { panic!() };
        assert_eq!(t.name, "TodoWrite");
        assert_eq!(t.input["todos"][1]["status"], "in_progress");
        assert!(matches!(&out[1], Event::ToolResult(_)));
    }
}
