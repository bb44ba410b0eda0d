//! The OpenAI Responses dialect (Codex CLI): `POST …/responses`, streamed as named SSE events
//! (`response.created` … `response.completed`) or one `response` JSON body.
//!
//! [`conversation`] reads a request body into a dialect-neutral [`Conversation`]; [`respond`]
//! picks the reply (the shared scenarios plus the Responses-only ones below); the crate-private
//! `render` writes it back as this dialect's events, JSON body or error body.
//!
//! # What Codex sends (0.171.0)
//!
//! `input` is the whole history on every request: `message` items (roles `developer`, `user`,
//! `assistant`; parts `input_text`, `input_image`, `output_text`), `reasoning` items,
//! `function_call` / `custom_tool_call` items and their `function_call_output` /
//! `custom_tool_call_output`. The user message that states the environment
//! (`<environment_context>` with `<cwd>`) and image wrappers (`<image …>`, `</image>`) are
//! context, not user-typed text. Tools: `exec_command{cmd}` (the shell), `apply_patch` as a
//! `custom` (freeform) tool, `update_plan` when enabled, `web_search`, and others.
//!
//! # Rendering
//!
//! Each neutral [`Step`] becomes one output item: text → `message` (`output_text.delta`s),
//! thinking → `reasoning` (`reasoning_summary_text.delta`s), a tool call → `function_call`
//! (`function_call_arguments.delta`s) or `custom_tool_call` (`custom_tool_call_input.delta`s).
//! Scenario tool calls are Claude-shaped (`Bash{command}`, `Write{file_path,content}`,
//! `ExitPlanMode{plan}`, `Read{file_path}`); when the client does not declare that tool they are
//! translated to what it does declare: the shell tool (`exec_command{cmd}`, `shell_command`,
//! `shell{command:[…]}`), an `apply_patch` that adds the file, `update_plan`, or `cat`.
//! A [`Step::StreamError`] is `response.failed`; a [`Step::Cut`] drops the connection before
//! `response.completed`. HTTP errors have the OpenAI body `{"error":{message,type,param,code}}`
//! (429 with `Retry-After: 1`).
//!
//! Tool outputs are read back without Codex's execution header (`Chunk ID`, `Wall time`, `Process
//! exited with code N`, `Output:`), so a final text that quotes them is deterministic; a
//! non-zero exit code marks the result as an error.
//!
//! # Responses-only scenarios
//!
//! | name | reply |
//! |---|---|
//! | `websearch` | a `web_search_call` item searching `rust async traits`, then the `text` answer |
//! | `patch` | an `apply_patch` call that updates `hello.txt` (`hello` → `hello, patched`) and adds `mock-patch.txt`; then a final text quoting the result |
//! | `drop` | the `text` answer, then the stream ends cleanly without `response.completed` (`cut` drops the connection mid-item instead) |

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::response::{Frame, Ids, Response};
use crate::scenario::{
    self, ApiError, Conversation, ErrorKind, HELLO_TEXT, Reply, Script, Settings, Step, StopReason,
    ToolResult, Turn,
};

/// The model name reported when the request names none.
const DEFAULT_MODEL: &str = "mock-model";

/// Characters of tool arguments per `…arguments.delta` / `…input.delta` event.
const ARGUMENT_CHARS: usize = 24;

/// The query of the `websearch` scenario.
pub const SEARCH_QUERY: &str = "rust async traits";

/// The patch of the `patch` scenario (paths relative to the client's cwd).
pub const PATCH: &str = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello, patched\n*** Add File: mock-patch.txt\n+patched by mock\n*** End Patch\n";

/// Responses-only scenarios, for help texts.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "websearch",
        "a web_search_call item (`rust async traits`), then text (OpenAI Responses only)",
    ),
    (
        "patch",
        "an apply_patch call updating hello.txt and adding mock-patch.txt (OpenAI Responses only)",
    ),
    (
        "drop",
        "text, then the stream ends without response.completed (OpenAI Responses only)",
    ),
    (
        "escalate",
        "a shell call writing mock_escalated.txt that asks to run outside the sandbox (`sandbox_permissions: require_escalated`, Codex's approval path); then text (OpenAI Responses only)",
    ),
];

/// The command of the `escalate` scenario.
pub const ESCALATE_COMMAND: &str = "echo escalated > mock_escalated.txt && cat mock_escalated.txt";

/// The justification the `escalate` scenario gives (Codex shows it as the approval's reason).
pub const ESCALATE_REASON: &str = "Mock model wants to run outside the sandbox";

/// Text parts that clients inject into user messages: context, not user-typed text.
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md",
    "<image",
    "</image>",
    "<turn_aborted>",
    "<user_shell_command>",
];

/// Whether `path` is a Responses endpoint (`/v1/responses`, any prefix).
pub fn is_responses_path(path: &str) -> bool {
    path.ends_with("/responses")
}

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
}

/// User-typed texts of a user message (`input_text` parts that are not context, and not the
/// placeholder Codex puts inside an `<image>` wrapper).
fn typed_texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) if !is_injected(s) => vec![s.clone()],
        Value::Array(parts) => {
            let mut out = Vec::new();
            let mut in_image = false;
            for part in parts {
                let Some(text) = part["text"].as_str() else {
                    continue;
                };
                let t = text.trim_start();
                if t.starts_with("<image") {
                    in_image = true;
                } else if t.starts_with("</image>") {
                    in_image = false;
                } else if !in_image && !is_injected(text) {
                    out.push(text.to_string());
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// All text of a content value (a string or a list of parts).
fn all_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The `<cwd>` of an `<environment_context>` text.
fn cwd_in(text: &str) -> Option<String> {
    let start = text.find("<cwd>")? + "<cwd>".len();
    let end = text[start..].find("</cwd>")? + start;
    let dir = text[start..end].trim();
    dir.starts_with('/').then(|| dir.to_string())
}

/// A tool output as the model should see it: Codex's execution header (`Chunk ID: …`,
/// `Wall time: …`, `Process exited with code N`, `Original token count: …`, `Exit code: N`,
/// then `Output:`) removed; an error when the exit code is not zero.
pub fn tool_output(output: &Value) -> ToolResult {
    let text = all_text(output);
    let text = if text.is_empty() && !output.is_string() && !output.is_null() {
        output.to_string()
    } else {
        text
    };
    let mut exit = None;
    let mut body_start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "Output:" {
            body_start = Some(offset + line.len());
            break;
        }
        let known = ["Chunk ID:", "Wall time:", "Original token count:"]
            .iter()
            .any(|k| l.starts_with(k));
        if let Some(code) = l
            .strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
        {
            exit = code.trim().parse::<i64>().ok();
        } else if !known {
            break;
        }
        offset += line.len();
    }
    match body_start {
        Some(start) => ToolResult {
            content: text[start..].to_string(),
            is_error: exit.is_some_and(|c| c != 0),
        },
        None => ToolResult {
            content: text,
            is_error: false,
        },
    }
}

/// Reads a Responses API request body into a [`Conversation`].
pub fn conversation(body: &Value) -> Conversation {
    let empty = Vec::new();
    let input = match &body["input"] {
        Value::Array(items) => items,
        _ => &empty,
    };
    let mut conv = Conversation {
        stream: body["stream"].as_bool().unwrap_or(false),
        model: body["model"].as_str().map(str::to_string),
        tools: tool_names(body),
        ..Conversation::default()
    };
    if let Some(text) = body["input"].as_str() {
        conv.user_texts.push(text.to_string());
        conv.latest_user_text = Some(text.to_string());
        conv.message_count = 1;
    }
    let mut latest_user = None;
    for (i, item) in input.iter().enumerate() {
        let is_message =
            item["type"] == "message" || (item["type"].is_null() && item["role"].is_string());
        if !is_message {
            continue;
        }
        conv.message_count += 1;
        if item["role"] != "user" {
            continue;
        }
        let text = all_text(&item["content"]);
        if conv.cwd.is_none() {
            conv.cwd = cwd_in(&text);
        }
        let texts = typed_texts(&item["content"]);
        if !texts.is_empty() {
            latest_user = Some(i);
            conv.latest_user_text = Some(texts.join("\n"));
            conv.user_texts.extend(texts);
        }
    }
    let after = latest_user.map_or(0, |i| i + 1);
    conv.model_turns_since_user = input[after.min(input.len())..]
        .iter()
        .filter(|i| {
            matches!(
                i["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count();
    if let Some(last) = input.last()
        && matches!(
            last["type"].as_str(),
            Some("function_call_output" | "custom_tool_call_output")
        )
    {
        conv.last_tool_result = Some(tool_output(&last["output"]));
    }
    let format = &body["text"]["format"];
    if format["type"] == "json_schema" && format["schema"].is_object() {
        conv.output_schema = Some(format["schema"].clone());
    }
    conv
}

/// Names of the declared tools (`name`, or `type` for built-ins such as `web_search`).
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().or_else(|| t["type"].as_str()))
        .map(str::to_string)
        .collect()
}

/// The reply of scenario `name`: the Responses-only scenarios first, then the shared ones.
pub fn respond(
    name: &str,
    conv: &Conversation,
    settings: &Settings,
    scripts: &BTreeMap<String, Script>,
) -> Reply {
    if !scripts.contains_key(name) && !conv.tools.is_empty() && conv.last_tool_result.is_none() {
        match name {
            "websearch" => {
                return Reply::Turn(Turn::end_turn(vec![
                    Step::ToolCall {
                        name: "web_search".into(),
                        input: json!({ "query": SEARCH_QUERY }),
                    },
                    Step::Text(scenario::words(HELLO_TEXT)),
                ]));
            }
            "patch" => {
                return Reply::Turn(Turn::tool_use(vec![Step::ToolCall {
                    name: "apply_patch".into(),
                    input: Value::String(PATCH.into()),
                }]));
            }
            "escalate" => {
                return Reply::Turn(Turn::tool_use(vec![Step::ToolCall {
                    name: "shell".into(),
                    input: json!({
                        "command": ESCALATE_COMMAND,
                        "sandbox_permissions": "require_escalated",
                        "justification": ESCALATE_REASON,
                    }),
                }]));
            }
            _ => {}
        }
    }
    if name == "drop" && !scripts.contains_key(name) {
        return scenario::respond("text", conv, settings, scripts);
    }
    if matches!(name, "websearch" | "patch" | "escalate") && !scripts.contains_key(name) {
        // After the tool round trip (or without tools): what the shared scenarios answer.
        return scenario::respond("tool", conv, settings, scripts);
    }
    scenario::respond(name, conv, settings, scripts)
}

/// How the client declared one tool.
#[derive(Debug, Clone, PartialEq)]
enum Declared {
    Function { parameters: Value },
    Custom,
    Builtin,
}

fn declared(body: &Value, name: &str) -> Option<Declared> {
    body["tools"].as_array()?.iter().find_map(|t| {
        let matches = t["name"] == name || (t["name"].is_null() && t["type"] == name);
        if !matches {
            return None;
        }
        Some(match t["type"].as_str() {
            Some("function") => Declared::Function {
                parameters: t["parameters"].clone(),
            },
            Some("custom") => Declared::Custom,
            _ => Declared::Builtin,
        })
    })
}

/// One output item to render.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Message(Vec<String>),
    Reasoning(Vec<String>),
    FunctionCall { name: String, arguments: String },
    CustomCall { name: String, input: String },
    WebSearch { query: String },
}

/// `path` relative to `cwd` when it lies inside it.
fn relative(path: &str, cwd: Option<&str>) -> String {
    cwd.and_then(|c| path.strip_prefix(&format!("{}/", c.trim_end_matches('/'))))
        .unwrap_or(path)
        .to_string()
}

/// Shell command arguments for the client's shell tool; `input`'s `sandbox_permissions` and
/// `justification` go along where the tool declares them.
fn shell_item(body: &Value, command: &str, input: &Value) -> Item {
    for name in ["exec_command", "shell_command", "shell", "local_shell"] {
        let Some(Declared::Function { parameters }) = declared(body, name) else {
            continue;
        };
        let props = &parameters["properties"];
        let mut arguments = if props["cmd"].is_object() {
            json!({ "cmd": command })
        } else if props["command"]["type"] == "array" {
            json!({ "command": ["bash", "-lc", command] })
        } else {
            json!({ "command": command })
        };
        for key in ["sandbox_permissions", "justification"] {
            if props[key].is_object() && !input[key].is_null() {
                arguments[key] = input[key].clone();
            }
        }
        return Item::FunctionCall {
            name: name.into(),
            arguments: arguments.to_string(),
        };
    }
    Item::FunctionCall {
        name: "shell".into(),
        arguments: json!({ "command": ["bash", "-lc", command] }).to_string(),
    }
}

fn patch_item(body: &Value, patch: &str) -> Item {
    match declared(body, "apply_patch") {
        Some(Declared::Function { .. }) => Item::FunctionCall {
            name: "apply_patch".into(),
            arguments: json!({ "input": patch }).to_string(),
        },
        _ => Item::CustomCall {
            name: "apply_patch".into(),
            input: patch.to_string(),
        },
    }
}

/// A scenario tool call, in terms of the tools the client declared.
fn call_item(body: &Value, conv: &Conversation, name: &str, input: &Value) -> Item {
    let cwd = conv.cwd.as_deref();
    match (name, declared(body, name)) {
        ("web_search", _) => Item::WebSearch {
            query: input["query"].as_str().unwrap_or_default().to_string(),
        },
        ("apply_patch", _) => patch_item(body, input.as_str().unwrap_or_default()),
        (_, Some(Declared::Custom)) => Item::CustomCall {
            name: name.into(),
            input: input
                .as_str()
                .map_or_else(|| input.to_string(), str::to_string),
        },
        (_, Some(_)) => Item::FunctionCall {
            name: name.into(),
            arguments: input.to_string(),
        },
        (_, None) => {
            if let Some(command) = input["command"].as_str() {
                shell_item(body, command, input)
            } else if let (Some(path), Some(content)) =
                (input["file_path"].as_str(), input["content"].as_str())
            {
                let mut patch = format!("*** Begin Patch\n*** Add File: {}\n", relative(path, cwd));
                for line in content.lines() {
                    patch.push('+');
                    patch.push_str(line);
                    patch.push('\n');
                }
                patch.push_str("*** End Patch\n");
                patch_item(body, &patch)
            } else if name == "ExitPlanMode" && declared(body, "update_plan").is_some() {
                let steps: Vec<Value> = input["plan"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .enumerate()
                    .map(|(i, l)| {
                        let step = l
                            .trim()
                            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                            .trim();
                        let status = if i == 0 { "in_progress" } else { "pending" };
                        json!({ "step": step, "status": status })
                    })
                    .collect();
                Item::FunctionCall {
                    name: "update_plan".into(),
                    arguments: json!({ "explanation": "mock plan", "plan": steps }).to_string(),
                }
            } else if let Some(path) = input["file_path"].as_str() {
                shell_item(body, &format!("cat {path}"), &Value::Null)
            } else {
                Item::FunctionCall {
                    name: name.into(),
                    arguments: input.to_string(),
                }
            }
        }
    }
}

/// The HTTP status, error type and code of `kind`.
pub fn error_status(kind: ErrorKind) -> (u16, &'static str, &'static str) {
    match kind {
        ErrorKind::InvalidRequest => (400, "invalid_request_error", "invalid_request"),
        ErrorKind::Authentication => (401, "invalid_request_error", "invalid_api_key"),
        ErrorKind::NotFound => (404, "invalid_request_error", "not_found"),
        ErrorKind::RateLimit => (429, "requests", "rate_limit_exceeded"),
        ErrorKind::Server => (500, "server_error", "server_error"),
        ErrorKind::Overloaded => (503, "server_error", "overloaded"),
    }
}

/// The JSON body of an OpenAI error.
pub fn error_body(err: &ApiError) -> Value {
    let (_, ty, code) = error_status(err.kind);
    json!({ "error": { "message": err.message, "type": ty, "param": null, "code": code } })
}

/// An HTTP error response in this dialect (429 carries `Retry-After: 1`).
pub(crate) fn error_response(err: &ApiError) -> Response {
    let (status, _, _) = error_status(err.kind);
    let response = Response::json(status, &error_body(err));
    if err.kind == ErrorKind::RateLimit {
        response.with_header("retry-after", "1".into())
    } else {
        response
    }
}

/// Usage reported by every completed response.
fn usage(thinking: bool) -> Value {
    json!({
        "input_tokens": 1200,
        "input_tokens_details": { "cached_tokens": 1000 },
        "output_tokens": 40,
        "output_tokens_details": { "reasoning_tokens": if thinking { 8 } else { 0 } },
        "total_tokens": 1240
    })
}

/// Renders `reply` of scenario `name` to a request with `body` (streamed or not).
pub(crate) fn render(
    name: &str,
    reply: &Reply,
    conv: &Conversation,
    body: &Value,
    ids: &Ids,
    event_delay: Duration,
) -> Response {
    let turn = match reply {
        Reply::Error(err) => return error_response(err),
        Reply::Turn(turn) => turn,
    };
    let model = conv.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let request_id = ids.next("req_");
    let response = if conv.stream {
        Response::Stream {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            frames: Stream::new(model, ids, turn.delta_delay.unwrap_or(event_delay))
                .completes(name != "drop")
                .frames(turn, conv, body),
        }
    } else {
        match response_json(turn, conv, body, model, ids) {
            Ok(json) => Response::json(200, &json),
            Err(Some(err)) => return error_response(&err),
            Err(None) => Response::Drop,
        }
    };
    response.with_header("x-request-id", request_id)
}

/// An item as it is when done (`output_item.done`, non-streamed output).
fn done_item(item: &Item, id: &str, call_id: &str) -> Value {
    match item {
        Item::Message(deltas) => json!({
            "type": "message", "id": id, "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": deltas.concat(), "annotations": [] }]
        }),
        Item::Reasoning(deltas) => json!({
            "type": "reasoning", "id": id,
            "summary": [{ "type": "summary_text", "text": deltas.concat() }]
        }),
        Item::FunctionCall { name, arguments } => json!({
            "type": "function_call", "id": id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"
        }),
        Item::CustomCall { name, input } => json!({
            "type": "custom_tool_call", "id": id, "call_id": call_id, "name": name,
            "input": input, "status": "completed"
        }),
        Item::WebSearch { query } => json!({
            "type": "web_search_call", "id": id, "status": "completed",
            "action": { "type": "search", "query": query }
        }),
    }
}

fn id_prefix(item: &Item) -> &'static str {
    match item {
        Item::Message(_) => "msg_",
        Item::Reasoning(_) => "rs_",
        Item::FunctionCall { .. } => "fc_",
        Item::CustomCall { .. } => "ctc_",
        Item::WebSearch { .. } => "ws_",
    }
}

fn base_response(id: &str, model: &str, status: &str) -> Value {
    json!({
        "id": id, "object": "response", "created_at": 1_700_000_000, "model": model,
        "status": status, "output": [], "usage": null
    })
}

/// The whole turn as one non-streamed response. `Err(Some)` for an API error, `Err(None)` for a
/// dropped connection.
fn response_json(
    turn: &Turn,
    conv: &Conversation,
    body: &Value,
    model: &str,
    ids: &Ids,
) -> Result<Value, Option<ApiError>> {
    let mut output = Vec::new();
    let mut thinking = false;
    for step in &turn.steps {
        let item = match step {
            Step::Text(d) => Item::Message(d.clone()),
            Step::Thinking(d) => {
                thinking = true;
                Item::Reasoning(d.clone())
            }
            Step::ToolCall { name, input } => call_item(body, conv, name, input),
            Step::Pause(_) | Step::EndBlock => continue,
            Step::StreamError(err) => return Err(Some(err.clone())),
            Step::Cut => return Err(None),
        };
        output.push(done_item(
            &item,
            &ids.next(id_prefix(&item)),
            &ids.next("call_"),
        ));
    }
    let mut response = base_response(&ids.next("resp_"), model, "completed");
    response["output"] = Value::Array(output);
    response["usage"] = usage(thinking);
    Ok(response)
}

fn char_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Builds the SSE frames of one streamed response.
struct Stream<'a> {
    frames: Vec<Frame>,
    seq: u64,
    ids: &'a Ids,
    delay: Duration,
    response_id: String,
    model: String,
    done: Vec<Value>,
    /// Closing events of the item still open, and its final form.
    open: Option<(Vec<Value>, Value)>,
    thinking: bool,
    complete: bool,
}

impl<'a> Stream<'a> {
    fn new(model: &str, ids: &'a Ids, delay: Duration) -> Self {
        Stream {
            frames: Vec::new(),
            seq: 0,
            ids,
            delay,
            response_id: ids.next("resp_"),
            model: model.to_string(),
            done: Vec::new(),
            open: None,
            thinking: false,
            complete: true,
        }
    }

    /// Whether the stream ends with `response.completed` (`false`: it just ends).
    fn completes(mut self, complete: bool) -> Self {
        self.complete = complete;
        self
    }

    fn event(&mut self, mut data: Value) {
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        let ty = data["type"].as_str().unwrap_or("message").to_string();
        self.frames
            .push(Frame::Event(format!("event: {ty}\ndata: {data}\n\n")));
    }

    fn pause(&mut self) {
        if !self.delay.is_zero() {
            self.frames.push(Frame::Pause(self.delay));
        }
    }

    fn close_open(&mut self) {
        if let Some((closing, item)) = self.open.take() {
            for event in closing {
                self.event(event);
            }
            self.done.push(item);
        }
    }

    fn base(&self, status: &str) -> Value {
        base_response(&self.response_id, &self.model, status)
    }

    fn item(&mut self, item: &Item) {
        self.close_open();
        let index = self.done.len();
        let id = self.ids.next(id_prefix(item));
        let call_id = self.ids.next("call_");
        let done = done_item(item, &id, &call_id);
        let mut started = done.clone();
        let mut closing = Vec::new();
        match item {
            Item::Message(deltas) => {
                started["status"] = json!("in_progress");
                started["content"] = json!([]);
                self.event(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                self.event(json!({"type": "response.content_part.added", "item_id": id,
                    "output_index": index, "content_index": 0, "part": part}));
                for d in deltas {
                    self.event(json!({"type": "response.output_text.delta", "item_id": id,
                        "output_index": index, "content_index": 0, "delta": d, "logprobs": []}));
                    self.pause();
                }
                let text = deltas.concat();
                closing.push(json!({"type": "response.output_text.done", "item_id": id,
                    "output_index": index, "content_index": 0, "text": text, "logprobs": []}));
                closing.push(json!({"type": "response.content_part.done", "item_id": id,
                    "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": text, "annotations": []}}));
            }
            Item::Reasoning(deltas) => {
                self.thinking = true;
                started["summary"] = json!([]);
                self.event(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
                self.event(
                    json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                    "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                );
                for d in deltas {
                    self.event(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                        "output_index": index, "summary_index": 0, "delta": d}),
                    );
                    self.pause();
                }
                let text = deltas.concat();
                closing.push(
                    json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                    "output_index": index, "summary_index": 0, "text": text}),
                );
                closing.push(
                    json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                    "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": text}}),
                );
            }
            Item::FunctionCall { arguments, .. } => {
                started["arguments"] = json!("");
                started["status"] = json!("in_progress");
                self.event(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
                for piece in char_chunks(arguments, ARGUMENT_CHARS) {
                    self.event(json!({"type": "response.function_call_arguments.delta",
                        "item_id": id, "output_index": index, "delta": piece}));
                    self.pause();
                }
                closing.push(json!({"type": "response.function_call_arguments.done",
                    "item_id": id, "output_index": index, "arguments": arguments}));
            }
            Item::CustomCall { input, .. } => {
                started["input"] = json!("");
                started["status"] = json!("in_progress");
                self.event(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
                for piece in char_chunks(input, ARGUMENT_CHARS) {
                    self.event(json!({"type": "response.custom_tool_call_input.delta",
                        "item_id": id, "output_index": index, "delta": piece}));
                    self.pause();
                }
                closing.push(json!({"type": "response.custom_tool_call_input.done",
                    "item_id": id, "output_index": index, "input": input}));
            }
            Item::WebSearch { .. } => {
                started["status"] = json!("in_progress");
                if let Some(o) = started.as_object_mut() {
                    o.remove("action");
                }
                self.event(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
                for phase in ["in_progress", "searching", "completed"] {
                    self.event(json!({"type": format!("response.web_search_call.{phase}"),
                        "item_id": id, "output_index": index}));
                    self.pause();
                }
            }
        }
        closing.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        );
        self.open = Some((closing, done));
    }

    fn frames(mut self, turn: &Turn, conv: &Conversation, body: &Value) -> Vec<Frame> {
        let created = self.base("in_progress");
        self.event(json!({"type": "response.created", "response": created}));
        let in_progress = self.base("in_progress");
        self.event(json!({"type": "response.in_progress", "response": in_progress}));
        for step in &turn.steps {
            match step {
                Step::Text(deltas) => self.item(&Item::Message(deltas.clone())),
                Step::Thinking(deltas) => self.item(&Item::Reasoning(deltas.clone())),
                Step::ToolCall { name, input } => {
                    let item = call_item(body, conv, name, input);
                    self.item(&item);
                }
                Step::Pause(d) => self.frames.push(Frame::Pause(*d)),
                Step::EndBlock => self.close_open(),
                Step::StreamError(err) => {
                    let (_, _, code) = error_status(err.kind);
                    let mut failed = self.base("failed");
                    failed["error"] = json!({"code": code, "message": err.message});
                    self.event(json!({"type": "response.failed", "response": failed}));
                    return self.frames;
                }
                Step::Cut => {
                    self.frames.push(Frame::Cut);
                    return self.frames;
                }
            }
        }
        self.close_open();
        if !self.complete {
            return self.frames;
        }
        let mut completed = self.base("completed");
        completed["output"] = Value::Array(std::mem::take(&mut self.done));
        completed["usage"] = usage(self.thinking);
        if turn.stop == StopReason::MaxTokens {
            completed["status"] = json!("incomplete");
            completed["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        self.event(json!({"type": "response.completed", "response": completed}));
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request shaped like Codex 0.171.0's.
    fn codex_like(input: Value) -> Value {
        json!({
            "model": "gpt-5.5",
            "stream": true,
            "input": input,
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {
                    "type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
                {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
                {"type": "function", "name": "update_plan", "parameters": {}},
                {"type": "web_search"}
            ]
        })
    }

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    #[test]
    fn reads_a_codex_request() {
        let body = codex_like(json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex"}]},
            user("<environment_context>\n  <cwd>/tmp/w</cwd>\n</environment_context>"),
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<image name=[Image #1] path=\"/i.png\">"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
                {"type": "input_text", "text": "image content omitted"},
                {"type": "input_text", "text": "</image>"},
                {"type": "input_text", "text": "MOCK:tool run it"}
            ]},
            {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"echo hello\"}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": "Chunk ID: ab12\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello\n"}
        ]));
        let c = conversation(&body);
        assert_eq!(c.latest_user_text.as_deref(), Some("MOCK:tool run it"));
        assert_eq!(c.user_texts, ["MOCK:tool run it"]);
        assert_eq!(c.cwd.as_deref(), Some("/tmp/w"));
        assert_eq!(c.message_count, 3);
        assert_eq!(c.model_turns_since_user, 1);
        assert_eq!(
            c.tools,
            ["exec_command", "apply_patch", "update_plan", "web_search"]
        );
        assert_eq!(
            c.last_tool_result,
            Some(ToolResult {
                content: "hello\n".into(),
                is_error: false
            })
        );
        assert!(c.stream);
    }

    #[test]
    fn tool_outputs_lose_the_header_and_keep_failures() {
        let r = tool_output(&json!("Exit code: 1\nWall time: 0 seconds\nOutput:\nboom"));
        assert_eq!(
            r,
            ToolResult {
                content: "boom".into(),
                is_error: true
            }
        );
        let r = tool_output(&json!("patch rejected: writing is blocked"));
        assert_eq!(r.content, "patch rejected: writing is blocked");
        let r = tool_output(
            &json!([{"type": "input_text", "text": "Wall time: 0.1 seconds\nOutput:"}, {"type": "input_text", "text": "echo: hi"}]),
        );
        assert_eq!(r.content, "echo: hi");
    }

    #[test]
    fn scenario_calls_become_the_tools_codex_declares() {
        let body = codex_like(json!([user("x")]));
        let conv = Conversation {
            cwd: Some("/w".into()),
            ..conversation(&body)
        };
        assert_eq!(
            call_item(&body, &conv, "Bash", &json!({"command": "echo hello"})),
            Item::FunctionCall {
                name: "exec_command".into(),
                arguments: r#"{"cmd":"echo hello"}"#.into()
            }
        );
        let Item::CustomCall { name, input } = call_item(
            &body,
            &conv,
            "Write",
            &json!({"file_path": "/w/a.txt", "content": "x\n"}),
        ) else {
            panic!()
        };
        assert_eq!(name, "apply_patch");
        assert_eq!(
            input,
            "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"
        );
        let Item::FunctionCall { name, arguments } = call_item(
            &body,
            &conv,
            "ExitPlanMode",
            &json!({"plan": "1. A.\n2. B."}),
        ) else {
            panic!()
        };
        assert_eq!(name, "update_plan");
        let args: Value = serde_json::from_str(&arguments).unwrap();
        assert_eq!(
            args["plan"][0],
            json!({"step": "A.", "status": "in_progress"})
        );
        assert_eq!(args["plan"][1]["status"], "pending");
    }

    fn events(frames: &[Frame]) -> Vec<Value> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => {
                    let data = e.lines().nth(1)?.strip_prefix("data: ")?;
                    serde_json::from_str(data).ok()
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn streams_items_in_order_and_completes() {
        let ids = Ids::new();
        let body = codex_like(json!([user("MOCK:thinking hi")]));
        let conv = conversation(&body);
        let Reply::Turn(turn) = respond("thinking", &conv, &Settings::default(), &BTreeMap::new())
        else {
            panic!()
        };
        let frames = Stream::new("m", &ids, Duration::ZERO).frames(&turn, &conv, &body);
        let evs = events(&frames);
        let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"response.created"));
        assert_eq!(types.last(), Some(&"response.completed"));
        assert!(types.contains(&"response.reasoning_summary_text.delta"));
        let done: Vec<&Value> = evs
            .iter()
            .filter(|e| e["type"] == "response.output_item.done")
            .map(|e| &e["item"])
            .collect();
        assert_eq!(done[0]["type"], "reasoning");
        assert_eq!(done[1]["content"][0]["text"], scenario::AFTER_THINKING_TEXT);
        let seqs: Vec<u64> = evs
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(
            evs.last().unwrap()["response"]["usage"]["output_tokens_details"]["reasoning_tokens"],
            8
        );
    }

    #[test]
    fn responses_only_scenarios_and_failures() {
        let ids = Ids::new();
        let body = codex_like(json!([user("MOCK:websearch")]));
        let conv = conversation(&body);
        let s = Settings::default();
        let m = BTreeMap::new();
        let Reply::Turn(turn) = respond("websearch", &conv, &s, &m) else {
            panic!()
        };
        let evs = events(&Stream::new("m", &ids, Duration::ZERO).frames(&turn, &conv, &body));
        let search = evs
            .iter()
            .find(|e| e["type"] == "response.output_item.done")
            .unwrap();
        assert_eq!(search["item"]["type"], "web_search_call");
        assert_eq!(search["item"]["action"]["query"], SEARCH_QUERY);

        let Reply::Turn(turn) = respond("patch", &conv, &s, &m) else {
            panic!()
        };
        let evs = events(&Stream::new("m", &ids, Duration::ZERO).frames(&turn, &conv, &body));
        assert!(evs.iter().any(|e| e["type"] == "response.custom_tool_call_input.done" && e["input"] == PATCH));

        let Reply::Turn(turn) = respond("midstream", &conv, &s, &m) else {
            panic!()
        };
        let evs = events(&Stream::new("m", &ids, Duration::ZERO).frames(&turn, &conv, &body));
        assert_eq!(evs.last().unwrap()["type"], "response.failed");
        assert!(
            !evs.iter().any(|e| e["type"] == "response.output_item.done"),
            "fails mid-item"
        );

        let Reply::Turn(turn) = respond("cut-after-block", &conv, &s, &m) else {
            panic!()
        };
        let frames = Stream::new("m", &ids, Duration::ZERO).frames(&turn, &conv, &body);
        assert_eq!(frames.last(), Some(&Frame::Cut));
        assert!(
            events(&frames)
                .iter()
                .any(|e| e["type"] == "response.output_item.done")
        );

        let Reply::Turn(turn) = respond("drop", &conv, &s, &m) else {
            panic!()
        };
        let frames = Stream::new("m", &ids, Duration::ZERO)
            .completes(false)
            .frames(&turn, &conv, &body);
        let evs = events(&frames);
        assert_eq!(evs.last().unwrap()["type"], "response.output_item.done");
        assert!(!frames.contains(&Frame::Cut));

        let mut after = conv.clone();
        after.last_tool_result = Some(ToolResult {
            content: "ok".into(),
            is_error: false,
        });
        let Reply::Turn(turn) = respond("patch", &after, &s, &m) else {
            panic!()
        };
        assert_eq!(turn.full_text(), "Tool finished. Output was: ok");
    }

    #[test]
    fn errors_have_the_openai_shape() {
        let Response::Full {
            status,
            headers,
            body,
        } = error_response(&ApiError::new(ErrorKind::RateLimit, "slow down"))
        else {
            panic!()
        };
        assert_eq!(status, 429);
        assert!(headers.iter().any(|(k, v)| k == "retry-after" && v == "1"));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["message"], "slow down");
        assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    }
}
