//! The Anthropic Messages dialect: `POST /v1/messages` (streamed as SSE or one JSON body),
//! `POST /v1/messages/count_tokens` and `GET /v1/models`.
//!
//! [`conversation`] reads a request body into a dialect-neutral [`Conversation`]; the
//! crate-private `render` writes a [`Reply`] back as this dialect's SSE events, JSON message or
//! error body.

use std::time::Duration;

use serde_json::{Value, json};

use crate::response::{Frame, Ids, Response};
use crate::scenario::{
    ApiError, Conversation, ErrorKind, Reply, Step, StopReason, THINKING_SIGNATURE, ToolResult,
    Turn,
};

/// The model name reported when the request names none.
const DEFAULT_MODEL: &str = "claude-mock";

/// Characters of tool-input JSON per `input_json_delta`.
const JSON_DELTA_CHARS: usize = 12;

/// Text that clients inject into user turns; it is context, not user-typed text.
const INJECTED_PREFIXES: &[&str] = &["<system-reminder>"];

/// Usage reported by `message_start` (and the non-streamed message).
fn start_usage() -> Value {
    json!({
        "input_tokens": 100,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0
    })
}

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
}

/// Texts of `content` (a string or a list of blocks), with user-typed and injected text apart.
fn typed_texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) if !is_injected(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .filter(|t| !is_injected(t))
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// All text of a block list or string (for tool results and system prompts).
fn all_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The working directory stated in a system prompt ("Primary working directory: /x").
fn cwd_in(text: &str) -> Option<String> {
    for key in ["Primary working directory:", "Working directory:"] {
        for line in text.lines() {
            if let Some(pos) = line.find(key) {
                let dir = line[pos + key.len()..].trim();
                if dir.starts_with('/') {
                    return Some(dir.to_string());
                }
            }
        }
    }
    None
}

/// Reads a Messages API request body into a [`Conversation`].
pub fn conversation(body: &Value) -> Conversation {
    let empty = Vec::new();
    let messages = body["messages"].as_array().unwrap_or(&empty);
    let mut conv = Conversation {
        message_count: messages.len(),
        stream: body["stream"].as_bool().unwrap_or(false),
        model: body["model"].as_str().map(str::to_string),
        tools: body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        ..Conversation::default()
    };

    let mut latest_user = None;
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "user" {
            continue;
        }
        let texts = typed_texts(&m["content"]);
        if !texts.is_empty() {
            latest_user = Some(i);
            conv.latest_user_text = Some(texts.join("\n"));
            conv.user_texts.extend(texts);
        }
    }
    let after = latest_user.map_or(0, |i| i + 1);
    conv.model_turns_since_user = messages[after.min(messages.len())..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();

    // Clients may append mid-conversation system messages after a tool result
    // (Claude Code: "## Exited Plan Mode"); the result still ends the conversation.
    if let Some(last) = messages
        .iter()
        .rev()
        .find(|m| m["role"] != "system")
        .filter(|m| m["role"] == "user")
    {
        conv.last_tool_result = last["content"].as_array().and_then(|blocks| {
            blocks
                .iter()
                .find(|b| b["type"] == "tool_result")
                .map(|b| ToolResult {
                    content: all_text(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                })
        });
    }

    conv.output_schema = [
        &body["output_config"]["format"]["schema"],
        &body["output_format"]["schema"],
    ]
    .into_iter()
    .find(|s| s.is_object())
    .cloned();

    let system = all_text(&body["system"]);
    let system_messages: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| all_text(&m["content"]))
        .collect();
    conv.cwd = std::iter::once(&system)
        .chain(system_messages.iter())
        .find_map(|t| cwd_in(t));
    let last_text = messages
        .last()
        .map(|m| all_text(&m["content"]))
        .unwrap_or_default();
    conv.wants_json =
        conv.tools.is_empty() && (system.contains("JSON") || last_text.contains("JSON"));
    conv
}

/// The HTTP status and Anthropic error type of `kind`.
pub fn error_status(kind: ErrorKind) -> (u16, &'static str) {
    match kind {
        ErrorKind::InvalidRequest => (400, "invalid_request_error"),
        ErrorKind::Authentication => (401, "authentication_error"),
        ErrorKind::NotFound => (404, "not_found_error"),
        ErrorKind::RateLimit => (429, "rate_limit_error"),
        ErrorKind::Server => (500, "api_error"),
        ErrorKind::Overloaded => (529, "overloaded_error"),
    }
}

/// The JSON body of an Anthropic error.
pub fn error_body(err: &ApiError, request_id: &str) -> Value {
    let (_, ty) = error_status(err.kind);
    json!({
        "type": "error",
        "error": { "type": ty, "message": err.message },
        "request_id": request_id
    })
}

/// An HTTP error response in this dialect.
pub(crate) fn error_response(err: &ApiError, ids: &Ids) -> Response {
    let request_id = ids.next("req_mock_");
    let (status, _) = error_status(err.kind);
    Response::json(status, &error_body(err, &request_id)).with_header("request-id", request_id)
}

fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
    }
}

/// Renders `reply` to a request that asked for `conv` (streamed or not).
pub(crate) fn render(
    reply: &Reply,
    conv: &Conversation,
    ids: &Ids,
    event_delay: Duration,
) -> Response {
    let turn = match reply {
        Reply::Error(err) => return error_response(err, ids),
        Reply::Turn(turn) => turn,
    };
    let model = conv.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let request_id = ids.next("req_mock_");
    let response = if conv.stream {
        Response::Stream {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            frames: stream_frames(turn, model, ids, turn.delta_delay.unwrap_or(event_delay)),
        }
    } else {
        match message_json(turn, model, ids) {
            Ok(body) => Response::json(200, &body),
            Err(Some(err)) => return error_response(&err, ids),
            Err(None) => Response::Drop,
        }
    };
    response.with_header("request-id", request_id)
}

/// The whole turn as one non-streamed message. `Err(Some)` when the turn fails with an API error,
/// `Err(None)` when it cuts the connection.
fn message_json(turn: &Turn, model: &str, ids: &Ids) -> Result<Value, Option<ApiError>> {
    let mut content = Vec::new();
    for step in &turn.steps {
        match step {
            Step::Text(deltas) => content.push(json!({ "type": "text", "text": deltas.concat() })),
            Step::Thinking(deltas) => content.push(json!({
                "type": "thinking", "thinking": deltas.concat(), "signature": THINKING_SIGNATURE
            })),
            Step::ToolCall { name, input } => content.push(json!({
                "type": "tool_use", "id": ids.next("toolu_"), "name": name, "input": input
            })),
            Step::Pause(_) | Step::EndBlock => {}
            Step::StreamError(err) => return Err(Some(err.clone())),
            Step::Cut => return Err(None),
        }
    }
    let mut usage = start_usage();
    usage["output_tokens"] = json!(20);
    Ok(json!({
        "id": ids.next("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(turn.stop),
        "stop_sequence": null,
        "usage": usage
    }))
}

/// One SSE event: `event: <type>` and a `data:` line with `data`.
fn event(frames: &mut Vec<Frame>, data: Value) {
    let ty = data["type"].as_str().unwrap_or("message").to_string();
    frames.push(Frame::Event(format!("event: {ty}\ndata: {data}\n\n")));
}

/// Splits `s` into pieces of at most `n` characters.
fn char_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The SSE frames of a streamed turn: `message_start`, `ping`, per block `content_block_start`,
/// deltas and `content_block_stop`, then `message_delta` and `message_stop`. `delay` is waited
/// after each delta.
pub(crate) fn stream_frames(turn: &Turn, model: &str, ids: &Ids, delay: Duration) -> Vec<Frame> {
    let mut f = Vec::new();
    let pause = |f: &mut Vec<Frame>| {
        if !delay.is_zero() {
            f.push(Frame::Pause(delay));
        }
    };
    event(
        &mut f,
        json!({
            "type": "message_start",
            "message": {
                "id": ids.next("msg_"), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage()
            }
        }),
    );
    event(&mut f, json!({ "type": "ping" }));
    // The index of the block still open. A block is closed when the next one starts or the turn
    // ends normally, so a `StreamError` or `Cut` right after a block interrupts it mid-block (as
    // a real failure does, and as clients treat differently from a failure between blocks).
    let mut open: Option<usize> = None;
    let mut next_index = 0;
    for step in &turn.steps {
        if matches!(
            step,
            Step::Text(_) | Step::Thinking(_) | Step::ToolCall { .. }
        ) {
            if let Some(i) = open.take() {
                event(&mut f, json!({"type": "content_block_stop", "index": i}));
            }
            open = Some(next_index);
            next_index += 1;
        }
        let index = open.unwrap_or(0);
        match step {
            Step::Text(deltas) => {
                event(
                    &mut f,
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                );
                for d in deltas {
                    event(
                        &mut f,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": d}}),
                    );
                    pause(&mut f);
                }
            }
            Step::Thinking(deltas) => {
                event(
                    &mut f,
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                );
                for d in deltas {
                    event(
                        &mut f,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "thinking_delta", "thinking": d}}),
                    );
                    pause(&mut f);
                }
                event(
                    &mut f,
                    json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "signature_delta", "signature": THINKING_SIGNATURE}}),
                );
            }
            Step::ToolCall { name, input } => {
                event(
                    &mut f,
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": ids.next("toolu_"),
                                             "name": name, "input": {}}}),
                );
                for piece in char_chunks(&input.to_string(), JSON_DELTA_CHARS) {
                    event(
                        &mut f,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                    pause(&mut f);
                }
            }
            Step::Pause(d) => f.push(Frame::Pause(*d)),
            Step::EndBlock => {
                if let Some(i) = open.take() {
                    event(&mut f, json!({"type": "content_block_stop", "index": i}));
                }
            }
            Step::StreamError(err) => {
                let (_, ty) = error_status(err.kind);
                event(
                    &mut f,
                    json!({"type": "error", "error": {"type": ty, "message": err.message}}),
                );
                return f;
            }
            Step::Cut => {
                f.push(Frame::Cut);
                return f;
            }
        }
    }
    if let Some(i) = open {
        event(&mut f, json!({"type": "content_block_stop", "index": i}));
    }
    event(
        &mut f,
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(turn.stop), "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    );
    event(&mut f, json!({"type": "message_stop"}));
    f
}

/// The answer to `POST /v1/messages/count_tokens`: a rough, deterministic estimate.
pub fn count_tokens(body: &Value) -> Value {
    json!({ "input_tokens": (body.to_string().len() / 4).max(1) })
}

/// The answer to `GET /v1/models` (and `GET /v1/models/{id}` when `id` is given).
pub fn models(id: Option<&str>) -> Value {
    let model = |id: &str| {
        json!({
            "type": "model", "id": id, "display_name": "Mock model",
            "created_at": "2025-01-01T00:00:00Z"
        })
    };
    match id {
        Some(id) => model(id),
        None => json!({
            "data": [model(DEFAULT_MODEL)],
            "has_more": false,
            "first_id": DEFAULT_MODEL,
            "last_id": DEFAULT_MODEL
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request shaped like Claude Code 2.1.197's: system blocks stating the cwd, a
    /// `<system-reminder>` text block before the typed text, a mid-conversation system message.
    fn claude_like(messages: Value) -> Value {
        json!({
            "model": "claude-opus-4-8",
            "stream": true,
            "system": [
                {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
                {"type": "text", "text": "Env\n - Primary working directory: /tmp/w\n - Platform: linux"}
            ],
            "tools": [{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}],
            "messages": messages
        })
    }

    #[test]
    fn reads_claude_code_request() {
        let body = claude_like(json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nMOCK:err401 in context\n</system-reminder>\n"},
                {"type": "text", "text": "MOCK:tool hi", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": "Available agent types"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "hello", "is_error": false},
                {"type": "text", "text": "<system-reminder>later</system-reminder>"}
            ]},
            {"role": "system", "content": "## Exited Plan Mode"}
        ]));
        let c = conversation(&body);
        assert_eq!(c.latest_user_text.as_deref(), Some("MOCK:tool hi"));
        assert_eq!(c.user_texts, ["MOCK:tool hi"]);
        assert_eq!(c.message_count, 5);
        assert_eq!(c.model_turns_since_user, 1);
        assert_eq!(c.tools, ["Bash", "Read"]);
        assert_eq!(c.cwd.as_deref(), Some("/tmp/w"));
        assert_eq!(
            c.last_tool_result,
            Some(ToolResult {
                content: "hello".into(),
                is_error: false
            })
        );
        assert!(c.stream);
        assert_eq!(crate::scenario::select(&c, None), "tool");
    }

    #[test]
    fn reads_structured_output_and_string_content() {
        let body = json!({
            "messages": [{"role": "user", "content": "MOCK:text title for this"}],
            "output_format": {"type": "json_schema", "schema": {"type": "object"}}
        });
        let c = conversation(&body);
        assert_eq!(
            c.latest_user_text.as_deref(),
            Some("MOCK:text title for this")
        );
        assert!(c.tools.is_empty());
        assert_eq!(c.output_schema, Some(json!({"type": "object"})));
        assert!(!c.stream);
        assert_eq!(c.last_tool_result, None);
    }

    #[test]
    fn tool_input_streams_as_json_pieces() {
        let ids = Ids::new();
        let turn = Turn::tool_use(vec![Step::ToolCall {
            name: "Bash".into(),
            input: json!({"command": "echo héllo wörld"}),
        }]);
        let frames = stream_frames(&turn, "m", &ids, Duration::ZERO);
        let mut json_text = String::new();
        for fr in &frames {
            let Frame::Event(e) = fr else { continue };
            let data: Value =
                serde_json::from_str(e.lines().nth(1).unwrap().strip_prefix("data: ").unwrap())
                    .unwrap();
            if data["delta"]["type"] == "input_json_delta" {
                json_text.push_str(data["delta"]["partial_json"].as_str().unwrap());
            }
        }
        let v: Value = serde_json::from_str(&json_text).unwrap();
        assert_eq!(v["command"], "echo héllo wörld");
    }
}
