//! A reader of the bridge's marker output that follows the JetBrains plugin's own Java rules,
//! to check what the plugin would show, not just what the bridge prints.
//!
//! The rules come from the plugin's sources (jetbrains-cc-gui at 09db2c89, the commit
//! `shared/reference/ai-bridge-protocol.md` describes; §4.1-4.4):
//!
//! * line routing: `ClaudeProcessInvoker` + `ClaudeStreamAdapter` (Claude per-process),
//!   `CodexSDKBridge.processOutputLine` (Codex), `MarkerCliBridge` on `BaseSDKBridge` (the
//!   generic CLI path: pi, kimi, opencode, grok). stderr is merged into stdout (the plugin uses
//!   `redirectErrorStream(true)`); the order of the two is not known here, so stderr lines are
//!   read after stdout (a stderr line starting with a recognised tag would still be misread);
//! * the outcome after EOF: `[SEND_ERROR]` seen or not, and the exit code;
//! * the handlers that turn callbacks into the chat: `ClaudeMessageHandler` (Claude) and
//!   `CodexMessageHandler` (Codex and the generic CLI path), with `TokenUsageUtils` for the
//!   context ring. The handlers are reduced to what the chat shows: the assistant messages
//!   (text, thinking and tool cards, merged by tool id as `MessageMerger` does), the context
//!   ring (used / max tokens), the per-turn usage, status lines and the error bubbles.
//!
//! Written from those rules, not translated from the Java.

use serde_json::{Value, json};

/// Which of the plugin's Java paths reads the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginPath {
    /// `ClaudeProcessInvoker` → `ClaudeStreamAdapter` → `ClaudeMessageHandler`.
    Claude,
    /// `CodexSDKBridge` → `CodexMessageHandler`.
    Codex,
    /// `MarkerCliBridge`/`BaseSDKBridge` → `CodexMessageHandler` (provider name for messages).
    Cli(&'static str),
}

/// One chat entry as the webview would render it.
#[derive(Debug, Clone, Default)]
struct Entry {
    role: &'static str,
    /// The handler's `content` (what the message list shows when there are no blocks).
    content: String,
    /// The raw Claude-shaped message the webview renders blocks from (assistant only).
    blocks: Vec<Value>,
    /// `usage` the handler attached (context snapshot).
    usage: Option<Value>,
    /// `turnUsage` the handler attached.
    turn_usage: Option<Value>,
}

/// What the plugin assembled from one turn.
#[derive(Debug, Default)]
pub struct PluginView {
    path: Option<PluginPath>,
    entries: Vec<Entry>,
    current: Option<usize>,
    accumulated: String,
    streaming: bool,
    /// `SDKResult.finalResult` (the bridge class's own text accumulator).
    final_result: String,
    session_id: Option<String>,
    statuses: Vec<String>,
    /// The context ring: (used tokens, max tokens or "model default").
    context: Option<(u64, Option<u64>)>,
    errors: Vec<String>,
    completed: Option<bool>,
    node_logs: Vec<String>,
    send_error_seen: bool,
    last_node_error: Option<String>,
}

fn int(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// `decodeJsonStringPayload`: exactly one leading space dropped, then a JSON string; the raw
/// text when that fails.
fn decode_string_payload(raw: &str) -> String {
    let json = raw.strip_prefix(' ').unwrap_or(raw);
    serde_json::from_str::<String>(json).unwrap_or_else(|_| json.to_string())
}

fn rest<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.strip_prefix(tag)
}

impl PluginView {
    /// Reads a finished turn: `stdout` and `stderr` of the bridge and its exit code.
    pub fn read(path: PluginPath, stdout: &str, stderr: &str, exit_code: i32) -> PluginView {
        let mut view = PluginView {
            path: Some(path),
            ..PluginView::default()
        };
        // BufferedReader.readLine: \n, \r and \r\n all end a line.
        let merged = format!("{stdout}\n{stderr}");
        for line in merged.split(['\n', '\r']) {
            if line.is_empty() {
                continue;
            }
            match path {
                PluginPath::Claude => view.claude_line(line),
                PluginPath::Codex => view.codex_family_line(line, false),
                PluginPath::Cli(_) => view.codex_family_line(line, true),
            }
        }
        view.outcome(exit_code);
        view
    }

    // ---- line routing ------------------------------------------------------------------

    fn claude_line(&mut self, line: &str) {
        const NODE_ERRORS: &[&str] = &[
            "[UNCAUGHT_ERROR]",
            "[UNHANDLED_REJECTION]",
            "[COMMAND_ERROR]",
            "[STARTUP_ERROR]",
            "[ERROR]",
            "[STDIN_ERROR]",
            "[STDIN_PARSE_ERROR]",
            "[GET_SESSION_ERROR]",
            "[PERSIST_ERROR]",
        ];
        if NODE_ERRORS.iter().any(|t| line.starts_with(t)) {
            self.last_node_error = Some(line.to_string());
        }
        if let Some(payload) = rest(line, "[SEND_ERROR]") {
            self.send_error_seen = true;
            let message = error_of(payload.trim());
            // The invoker appends "Environment Diagnostics" (node path, SDK dir): left out.
            self.on_error(message);
            return;
        }
        const ADAPTER: &[&str] = &[
            "[MESSAGE]",
            "[CONTENT]",
            "[CONTENT_DELTA]",
            "[THINKING]",
            "[THINKING_DELTA]",
            "[STREAM_START]",
            "[STREAM_END]",
            "[SESSION_ID]",
            "[TOOL_RESULT]",
            "[USAGE]",
            "[MESSAGE_START]",
            "[MESSAGE_END]",
        ];
        if !ADAPTER.iter().any(|t| line.starts_with(t)) {
            self.node_logs.push(line.to_string());
            return;
        }
        // ClaudeStreamAdapter: the longer tags first (startsWith on "[CONTENT]" also matches
        // "[CONTENT_DELTA]" only because the adapter checks in this order).
        if let Some(json) = rest(line, "[MESSAGE]") {
            if let Ok(msg) = serde_json::from_str::<Value>(json.trim()) {
                let ty = msg["type"].as_str().unwrap_or("unknown").to_string();
                self.claude_message(&ty, &msg);
            }
        } else if let Some(p) = rest(line, "[CONTENT_DELTA]") {
            let delta = decode_string_payload(p);
            self.final_result.push_str(&delta);
            self.claude_content(&delta);
        } else if let Some(p) = rest(line, "[CONTENT]") {
            let text = p.trim().to_string();
            self.final_result.push_str(&text);
            self.claude_content(&text);
        } else if let Some(p) = rest(line, "[THINKING_DELTA]") {
            self.thinking_delta(&decode_string_payload(p));
        } else if line.starts_with("[STREAM_START]") {
            self.streaming = true;
            self.current = None;
            self.accumulated.clear();
        } else if line.starts_with("[STREAM_END]") {
            self.streaming = false;
        } else if let Some(id) = rest(line, "[SESSION_ID]") {
            self.session_id = Some(id.trim().to_string());
        } else if let Some(json) = rest(line, "[TOOL_RESULT]") {
            if let Ok(block) = serde_json::from_str::<Value>(json.trim())
                && block.get("tool_use_id").is_some()
            {
                self.attach_tool_result(&block);
            }
        } else if let Some(json) = rest(line, "[USAGE]") {
            let json = json.trim();
            if json.starts_with('{')
                && let Ok(usage) = serde_json::from_str::<Value>(json)
            {
                self.context = Some((context_tokens(&usage, false), None));
                let i = self.ensure_assistant();
                self.entries[i].usage = Some(usage);
            }
        }
    }

    /// `CodexSDKBridge.processOutputLine` (`cli == false`) and `MarkerCliBridge`
    /// (`cli == true`): the same routing, except for the id tag, the node-error tags, statuses
    /// (Codex only) and how `[CONTENT]` joins the result text.
    fn codex_family_line(&mut self, line: &str, cli: bool) {
        let node_errors: &[&str] = if cli {
            &[
                "[UNCAUGHT_ERROR]",
                "[UNHANDLED_REJECTION]",
                "[COMMAND_ERROR]",
                "[STARTUP_ERROR]",
                "[ERROR]",
            ]
        } else {
            &[
                "[UNCAUGHT_ERROR]",
                "[UNHANDLED_REJECTION]",
                "[COMMAND_ERROR]",
            ]
        };
        if node_errors.iter().any(|t| line.starts_with(t)) {
            self.last_node_error = Some(line.to_string());
        }
        let id_tag = if cli { "[SESSION_ID]" } else { "[THREAD_ID]" };
        if line.starts_with("[STREAM_START]") {
            self.codex_stream_start();
        } else if line.starts_with("[STREAM_END]") {
            self.codex_stream_end();
        } else if let Some(id) = rest(line, id_tag) {
            self.session_id = Some(id.trim().to_string());
        } else if let Some(json) = rest(line, "[MESSAGE]") {
            let Ok(msg) = serde_json::from_str::<Value>(json.trim()) else {
                return;
            };
            let ty = msg["type"].as_str().unwrap_or("unknown").to_string();
            if !cli && ty == "status" {
                let status = match &msg["message"] {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                if !status.trim().is_empty() {
                    self.statuses.push(status);
                }
                return;
            }
            if !cli && ty == "assistant" {
                self.final_result.push_str(&text_of(&msg, "\n"));
            }
            self.codex_message(&ty, &msg);
        } else if let Some(p) = rest(line, "[CONTENT_DELTA]") {
            let delta = decode_string_payload(p);
            self.final_result.push_str(&delta);
            self.codex_content(&delta);
        } else if let Some(p) = rest(line, "[THINKING_DELTA]") {
            self.thinking_delta(&decode_string_payload(p));
        } else if let Some(p) = rest(line, "[CONTENT]") {
            // Codex: trimmed, added unless already in the result; the CLI path: one space
            // dropped, added only when nothing was accumulated yet.
            let text = if cli {
                p.strip_prefix(' ').unwrap_or(p).to_string()
            } else {
                p.trim().to_string()
            };
            let add = if cli {
                self.final_result.is_empty()
            } else {
                !self.final_result.contains(&text)
            };
            if add {
                self.final_result.push_str(&text);
            }
            self.codex_content(&text);
        } else if let Some(payload) = rest(line, "[SEND_ERROR]") {
            self.send_error_seen = true;
            self.on_error(error_of(payload.trim()));
        }
        // `[USAGE]` (CLI path) goes to the handler as "usage", which CodexMessageHandler
        // does not handle; `[TOOL_RESULT]`, `[BLOCK_RESET]`, `[THINKING]` are not parsed.
    }

    /// `BaseSDKBridge` / `CodexSDKBridge` / `ClaudeProcessInvoker` after EOF (never interrupted
    /// here).
    fn outcome(&mut self, exit_code: i32) {
        let path = self.path.unwrap();
        if !self.send_error_seen {
            if exit_code == 0 {
                self.completed = Some(true);
            } else {
                let message = match path {
                    PluginPath::Claude => format!("Process exited with code: {exit_code}"),
                    PluginPath::Codex => format!("Codex process exited with code: {exit_code}"),
                    PluginPath::Cli(name) => {
                        format!("{name} process exited with code: {exit_code}")
                    }
                };
                self.on_error(message);
            }
            return;
        }
        match path {
            PluginPath::Claude => self.completed = Some(exit_code == 0),
            PluginPath::Codex => {}
            PluginPath::Cli(_) => {
                // BaseSDKBridge reports the send error a second time on a non-zero exit.
                if exit_code != 0
                    && let Some(last) = self.errors.last().cloned()
                {
                    self.errors.push(last);
                }
            }
        }
    }

    fn on_error(&mut self, message: String) {
        // ClaudeMessageHandler drops an identical repeat within the turn; the Codex handler
        // shows every call.
        if self.path == Some(PluginPath::Claude) && self.errors.last() == Some(&message) {
            return;
        }
        self.errors.push(message);
    }

    // ---- handlers ----------------------------------------------------------------------

    fn ensure_assistant(&mut self) -> usize {
        if let Some(i) = self.current {
            return i;
        }
        self.entries.push(Entry {
            role: "assistant",
            ..Entry::default()
        });
        let i = self.entries.len() - 1;
        self.current = Some(i);
        i
    }

    fn thinking_delta(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let i = self.ensure_assistant();
        let blocks = &mut self.entries[i].blocks;
        match blocks.last_mut() {
            Some(last) if last["type"] == "thinking" => {
                let next = format!("{}{delta}", last["thinking"].as_str().unwrap_or(""));
                last["thinking"] = json!(next);
            }
            _ => blocks.push(json!({"type": "thinking", "thinking": delta})),
        }
    }

    /// ClaudeMessageHandler: `content` (non-streaming) and `content_delta`.
    fn claude_content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.accumulated.push_str(text);
        let i = self.ensure_assistant();
        self.entries[i].content = self.accumulated.clone();
    }

    fn claude_message(&mut self, ty: &str, msg: &Value) {
        match ty {
            "assistant" => {
                let i = self.ensure_assistant();
                merge_blocks(&mut self.entries[i].blocks, msg);
                let full = text_of(
                    &json!({"message": {"content": self.entries[i].blocks}}),
                    "\n",
                );
                // Non-streaming: the content is rebuilt from the message; streaming: only
                // when the message's text is longer than what the deltas gave.
                if !self.streaming || full.len() > self.accumulated.len() {
                    self.accumulated = full;
                    self.entries[i].content = self.accumulated.clone();
                }
                if let Some(usage) = msg.pointer("/message/usage").filter(|u| u.is_object()) {
                    self.context = Some((context_tokens(usage, false), None));
                    self.entries[i].usage = Some(usage.clone());
                }
            }
            "user" => self.user_message(msg),
            "result" => {
                if let (Some(usage), Some(i)) =
                    (msg.get("usage").filter(|u| u.is_object()), self.current)
                {
                    self.entries[i].turn_usage = Some(usage.clone());
                    if self.entries[i].usage.is_none() {
                        self.context = Some((context_tokens(usage, false), None));
                    }
                }
            }
            _ => {}
        }
    }

    fn user_message(&mut self, msg: &Value) {
        let content = msg
            .pointer("/message/content")
            .cloned()
            .unwrap_or(Value::Null);
        let results: Vec<&Value> = content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect();
        if results.is_empty() {
            return;
        }
        for block in results {
            self.attach_tool_result(block);
        }
    }

    /// A tool card gets its result (the webview pairs them by id).
    fn attach_tool_result(&mut self, block: &Value) {
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        for entry in self.entries.iter_mut().rev() {
            for b in entry.blocks.iter_mut() {
                if b["type"] == "tool_use" && b["id"] == id {
                    b["result_is_error"] = block["is_error"].clone();
                    return;
                }
            }
        }
    }

    fn codex_stream_start(&mut self) {
        self.streaming = true;
        self.current = None;
        self.accumulated.clear();
    }

    fn codex_stream_end(&mut self) {
        self.streaming = false;
        self.current = None;
        self.accumulated.clear();
    }

    /// CodexMessageHandler: `content` and `content_delta` are handled alike.
    fn codex_content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.accumulated.push_str(text);
        let i = self.ensure_assistant();
        self.entries[i].content = self.accumulated.clone();
    }

    fn codex_message(&mut self, ty: &str, msg: &Value) {
        match ty {
            "assistant" => {
                let content = text_of(msg, "\n");
                match self.current {
                    Some(i) => {
                        merge_blocks(&mut self.entries[i].blocks, msg);
                        self.entries[i].content = content.clone();
                        self.accumulated = content;
                    }
                    // A whole message while nothing streams: a new entry, and it does not
                    // become the current one.
                    None => {
                        let mut entry = Entry {
                            role: "assistant",
                            content,
                            ..Entry::default()
                        };
                        merge_blocks(&mut entry.blocks, msg);
                        self.entries.push(entry);
                    }
                }
            }
            "user" => self.user_message(msg),
            "event_msg" => {
                let Some(info) = msg
                    .pointer("/payload/info")
                    .filter(|_| msg.pointer("/payload/type") == Some(&json!("token_count")))
                else {
                    return;
                };
                let Some(last) = info.get("last_token_usage").filter(|l| l.is_object()) else {
                    return;
                };
                let mut usage = json!({
                    "input_tokens": int(last, "input_tokens"),
                    "output_tokens": int(last, "output_tokens"),
                    "cache_read_input_tokens": int(last, "cached_input_tokens"),
                    "cache_creation_input_tokens": 0,
                });
                let window = int(info, "model_context_window");
                if window > 0 {
                    usage["model_context_window"] = json!(window);
                }
                self.context = Some((context_tokens(&usage, true), (window > 0).then_some(window)));
                if let Some(entry) = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| e.role == "assistant")
                {
                    entry.usage = Some(usage);
                }
            }
            "result" => {
                let Some(usage) = msg.get("usage").filter(|u| u.is_object()) else {
                    return;
                };
                let input = int(usage, "input_tokens");
                let cached = usage
                    .get("cache_read_input_tokens")
                    .or_else(|| usage.get("cached_input_tokens"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let turn = json!({
                    "input_tokens": input.saturating_sub(cached),
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cached,
                    "output_tokens": int(usage, "output_tokens"),
                });
                if let Some(entry) = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| e.role == "assistant")
                {
                    entry.turn_usage = Some(turn);
                }
            }
            _ => {}
        }
    }

    // ---- views -------------------------------------------------------------------------

    /// The text of every assistant entry, as the chat shows it (blocks when the entry has
    /// text blocks, else the handler's content), one entry per line.
    pub fn texts(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.role == "assistant")
            .map(|e| {
                let from_blocks = text_of(&json!({"message": {"content": e.blocks}}), "\n");
                if from_blocks.is_empty() {
                    e.content.clone()
                } else {
                    from_blocks
                }
            })
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// The error bubbles.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// The context ring: used tokens and the window (`None`: the model's static default).
    pub fn context(&self) -> Option<(u64, Option<u64>)> {
        self.context
    }

    /// The per-turn usage the last assistant entry carries.
    pub fn turn_usage(&self) -> Option<&Value> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| e.turn_usage.as_ref())
    }

    /// Tool cards: `name input` (input keys the cards use), with the result state.
    pub fn tools(&self) -> Vec<String> {
        let mut out = Vec::new();
        for entry in &self.entries {
            for b in &entry.blocks {
                if b["type"] != "tool_use" {
                    continue;
                }
                let mut input = b["input"].clone();
                if let Some(o) = input.as_object_mut() {
                    o.retain(|k, _| {
                        matches!(
                            k.as_str(),
                            "command"
                                | "file_path"
                                | "path"
                                | "pattern"
                                | "offset"
                                | "limit"
                                | "description"
                        )
                    });
                }
                let state = match b.get("result_is_error") {
                    Some(Value::Bool(true)) => "error",
                    Some(_) => "done",
                    None => "pending",
                };
                out.push(format!(
                    "{} {} [{state}]",
                    b["name"].as_str().unwrap_or("?"),
                    input
                ));
            }
        }
        out
    }

    /// Whether the turn completed (`onComplete`), failed (`onError` only) or neither.
    pub fn completed(&self) -> Option<bool> {
        self.completed
    }

    /// Lines the Claude path forwards to the webview console (`node_log`).
    pub fn node_logs(&self) -> &[String] {
        &self.node_logs
    }

    /// Everything above as one stable text for a snapshot; `redact` cleans ids and paths.
    pub fn summary(&self, redact: impl Fn(&str) -> String) -> String {
        let mut out = Vec::new();
        out.push(format!(
            "session: {}",
            if self.session_id.is_some() {
                "set"
            } else {
                "none"
            }
        ));
        for (i, text) in self.texts().iter().enumerate() {
            out.push(format!(
                "assistant[{i}]: {}",
                redact(text).replace('\n', "\\n")
            ));
        }
        for entry in &self.entries {
            for b in &entry.blocks {
                if b["type"] == "thinking" {
                    out.push(format!(
                        "thinking: {}",
                        b["thinking"].as_str().unwrap_or("")
                    ));
                }
            }
        }
        for tool in self.tools() {
            out.push(format!("tool: {}", redact(&tool)));
        }
        for status in &self.statuses {
            out.push(format!("status: {}", redact(status)));
        }
        match self.context {
            Some((used, Some(max))) => out.push(format!("context: {used} / {max}")),
            Some((used, None)) => out.push(format!("context: {used} / (model default)")),
            None => out.push("context: none".into()),
        }
        match self.turn_usage() {
            Some(u) => {
                let tokens: Vec<String> = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                    "output_tokens",
                ]
                .iter()
                .map(|k| format!("{k}={}", int(u, k)))
                .collect();
                out.push(format!("turn usage: {}", tokens.join(" ")))
            }
            None => out.push("turn usage: none".into()),
        }
        out.push(format!(
            "final result: {}",
            redact(&self.final_result).replace('\n', "\\n")
        ));
        for error in &self.errors {
            out.push(format!(
                "error shown: {}",
                redact(error).replace('\n', "\\n")
            ));
        }
        out.push(format!(
            "outcome: {}",
            match self.completed {
                Some(true) => "onComplete(success=true)",
                Some(false) => "onComplete(success=false)",
                None => "no onComplete",
            }
        ));
        out.join("\n")
    }
}

/// `TokenUsageUtils.extractContextTokens`: Codex's input already holds the cache.
fn context_tokens(usage: &Value, codex: bool) -> u64 {
    let input = int(usage, "input_tokens");
    if codex {
        input
    } else {
        input + int(usage, "cache_creation_input_tokens") + int(usage, "cache_read_input_tokens")
    }
}

/// The `error` string of a `[SEND_ERROR]` payload, or the payload itself.
fn error_of(payload: &str) -> String {
    serde_json::from_str::<Value>(payload)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| payload.to_string())
}

/// The text blocks of a Claude-shaped message, joined.
fn text_of(msg: &Value, sep: &str) -> String {
    msg.pointer("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| {
            matches!(
                b["type"].as_str(),
                Some("text" | "input_text" | "output_text")
            )
        })
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join(sep)
}

/// `MessageMerger`, reduced: blocks with an `id` replace the block with that id; a text or
/// thinking block equal to one already there is not added twice; the rest is appended.
fn merge_blocks(blocks: &mut Vec<Value>, msg: &Value) {
    for block in msg
        .pointer("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(id) = block.get("id").and_then(Value::as_str) {
            match blocks.iter_mut().find(|b| b["id"] == id) {
                Some(existing) => *existing = block.clone(),
                None => blocks.push(block.clone()),
            }
            continue;
        }
        let ty = block["type"].as_str().unwrap_or_default();
        if ty == "thinking"
            && let Some(last) = blocks.iter_mut().rev().find(|b| b["type"] == "thinking")
        {
            // Streamed thinking and the whole block are one block.
            *last = json!({"type": "thinking", "thinking": block["thinking"]});
            continue;
        }
        if blocks.iter().any(|b| b == block) {
            continue;
        }
        blocks.push(block.clone());
    }
}
