//! The OpenAI Chat Completions dialect (Qwen Code, Copilot CLI's `openai` provider, opencode's
//! `@ai-sdk/openai-compatible`, Kimi CLI): `POST …/chat/completions`, streamed as SSE `data:`
//! chunks ending with `data: [DONE]`, or one `chat.completion` JSON body.
//!
//! [`conversation`] reads a request body into a dialect-neutral [`Conversation`]; the crate-private
//! `render` writes a [`Reply`] back as this dialect's chunks, JSON body or error body.
//!
//! Rendering: the first chunk carries `role: "assistant"`; text is `delta.content`, thinking is
//! `delta.reasoning_content` (the field Qwen, Kimi and DeepSeek-style servers use); a tool call is
//! a `delta.tool_calls` entry with `id`, `type` and `function.name`, then `function.arguments`
//! fragments; the finish chunk has `finish_reason` `stop`, `tool_calls` or `length`; a usage
//! chunk (`choices: []`) follows when `stream_options.include_usage` is set. A mid-stream
//! failure is a `data: {"error":{…}}` chunk with no `[DONE]` after it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::response::{Frame, Ids, Response};
use crate::scenario::{ApiError, Conversation, ErrorKind, Reply, Step, StopReason, ToolResult};

/// The model name reported when the request names none.
const DEFAULT_MODEL: &str = "mock-model";

/// Characters of tool-argument JSON per `function.arguments` fragment.
const ARGUMENT_CHARS: usize = 16;

/// Text that clients inject into user turns; it is context, not user-typed text.
const INJECTED_PREFIXES: &[&str] = &["<system-reminder>", "<environment_context>"];

/// Whether `path` is a Chat Completions endpoint (`/v1/chat/completions`, any prefix).
pub fn is_chat_path(path: &str) -> bool {
    path.ends_with("/chat/completions")
}

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
}

/// The typed part of a user text: Copilot CLI prefixes every prompt with
/// `<current_datetime>…</current_datetime>\n\n`.
fn typed_part(text: &str) -> &str {
    match text.trim_start().strip_prefix("<current_datetime>") {
        Some(rest) => rest
            .split_once("</current_datetime>")
            .map_or(text, |(_, typed)| typed.trim_start()),
        None => text,
    }
}

/// Texts of a message `content` (a string or a list of parts).
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text" || p["type"].is_null())
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The working directory stated in a system prompt or context message.
fn cwd_in(text: &str) -> Option<String> {
    const KEYS: &[&str] = &[
        "Primary working directory:",
        "Current working directory:",
        "current working directory:",
        "Working directory:",
        "working directory is",
        "working in the directory:",
        "<cwd>",
        "cwd:",
    ];
    for line in text.lines() {
        for key in KEYS {
            if let Some(pos) = line.find(key) {
                let dir = line[pos + key.len()..]
                    .trim()
                    .trim_start_matches('`')
                    .split(['`', '<', ' '])
                    .next()
                    .unwrap_or("")
                    .trim_end_matches('.');
                if dir.starts_with('/') {
                    return Some(dir.to_string());
                }
            }
        }
    }
    None
}

/// Reads a Chat Completions request body into a [`Conversation`].
pub fn conversation(body: &Value) -> Conversation {
    let empty = Vec::new();
    let messages = body["messages"].as_array().unwrap_or(&empty);
    let mut conv = Conversation {
        message_count: messages.len(),
        stream: body["stream"].as_bool().unwrap_or(false),
        model: body["model"].as_str().map(str::to_string),
        tools: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or_else(|| t["name"].as_str())
                    .map(str::to_string)
            })
            .collect(),
        ..Conversation::default()
    };
    let mut latest_user = None;
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "user" {
            continue;
        }
        let typed: Vec<String> = texts(&m["content"])
            .into_iter()
            .filter(|t| !is_injected(t))
            .map(|t| typed_part(&t).to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if !typed.is_empty() {
            latest_user = Some(i);
            conv.latest_user_text = Some(typed.join("\n"));
            conv.user_texts.extend(typed);
        }
    }
    let after = latest_user.map_or(0, |i| i + 1);
    conv.model_turns_since_user = messages[after.min(messages.len())..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    if let Some(last) = messages.last().filter(|m| m["role"] == "tool") {
        conv.last_tool_result = Some(ToolResult {
            content: texts(&last["content"]).join("\n"),
            is_error: false,
        });
    }
    let format = &body["response_format"];
    conv.output_schema = Some(&format["json_schema"]["schema"])
        .filter(|s| s.is_object())
        .cloned();
    let context: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer" || m["role"] == "user")
        .flat_map(|m| texts(&m["content"]))
        .collect();
    conv.cwd = context.iter().find_map(|t| cwd_in(t));
    let last_text = messages
        .last()
        .map(|m| texts(&m["content"]).join("\n"))
        .unwrap_or_default();
    let system_json = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .any(|m| texts(&m["content"]).iter().any(|t| t.contains("JSON")));
    conv.wants_json = conv.tools.is_empty()
        && (format["type"] == "json_object" || system_json || last_text.contains("JSON"));
    conv
}

/// The HTTP status, OpenAI error `type` and `code` of `kind`.
pub fn error_status(kind: ErrorKind) -> (u16, &'static str, &'static str) {
    match kind {
        ErrorKind::InvalidRequest => (400, "invalid_request_error", "invalid_request"),
        ErrorKind::Authentication => (401, "invalid_request_error", "invalid_api_key"),
        ErrorKind::NotFound => (404, "invalid_request_error", "model_not_found"),
        ErrorKind::RateLimit => (429, "rate_limit_error", "rate_limit_exceeded"),
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

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
    }
}

fn usage() -> Value {
    json!({ "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 })
}

/// Splits `s` into pieces of at most `n` characters.
fn char_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Renders `reply` to a request that asked for `conv` (streamed or not).
pub(crate) fn render(
    reply: &Reply,
    conv: &Conversation,
    include_usage: bool,
    ids: &Ids,
    event_delay: Duration,
) -> Response {
    let turn = match reply {
        Reply::Error(err) => return error_response(err),
        Reply::Turn(turn) => turn,
    };
    let model = conv.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let id = ids.next("chatcmpl-");
    if conv.stream {
        let delay = turn.delta_delay.unwrap_or(event_delay);
        return Response::Stream {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            frames: stream_frames(turn, model, &id, include_usage, ids, delay),
        };
    }
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for step in &turn.steps {
        match step {
            Step::Text(d) => text.push_str(&d.concat()),
            Step::Thinking(d) => reasoning.push_str(&d.concat()),
            Step::ToolCall { name, input } => calls.push(json!({
                "id": ids.next("call_"), "type": "function",
                "function": { "name": name, "arguments": input.to_string() }
            })),
            Step::StreamError(err) => return error_response(err),
            Step::Cut => return Response::Drop,
            Step::Pause(_) | Step::EndBlock => {}
        }
    }
    let mut message = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) } });
    if !reasoning.is_empty() {
        message["reasoning_content"] = Value::String(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Response::json(
        200,
        &json!({
            "id": id, "object": "chat.completion", "created": 1_735_689_600, "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason(turn.stop) }],
            "usage": usage()
        }),
    )
}

/// The `data:` frames of a streamed turn. `delay` is waited after each delta.
pub(crate) fn stream_frames(
    turn: &crate::scenario::Turn,
    model: &str,
    id: &str,
    include_usage: bool,
    ids: &Ids,
    delay: Duration,
) -> Vec<Frame> {
    let mut f = Vec::new();
    let mut first = true;
    let mut chunk = |f: &mut Vec<Frame>, mut delta: Value, finish: Option<&str>| {
        if first {
            delta["role"] = json!("assistant");
            first = false;
        }
        let data = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_735_689_600, "model": model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
        });
        f.push(Frame::Event(format!("data: {data}\n\n")));
    };
    let pause = |f: &mut Vec<Frame>| {
        if !delay.is_zero() {
            f.push(Frame::Pause(delay));
        }
    };
    let mut call_index = 0;
    for step in &turn.steps {
        match step {
            Step::Text(deltas) => {
                for d in deltas {
                    chunk(&mut f, json!({ "content": d }), None);
                    pause(&mut f);
                }
            }
            Step::Thinking(deltas) => {
                for d in deltas {
                    chunk(&mut f, json!({ "reasoning_content": d }), None);
                    pause(&mut f);
                }
            }
            Step::ToolCall { name, input } => {
                chunk(
                    &mut f,
                    json!({ "tool_calls": [{ "index": call_index, "id": ids.next("call_"), "type": "function",
                                             "function": { "name": name, "arguments": "" } }] }),
                    None,
                );
                for piece in char_chunks(&input.to_string(), ARGUMENT_CHARS) {
                    chunk(
                        &mut f,
                        json!({ "tool_calls": [{ "index": call_index, "function": { "arguments": piece } }] }),
                        None,
                    );
                    pause(&mut f);
                }
                call_index += 1;
            }
            Step::Pause(d) => f.push(Frame::Pause(*d)),
            Step::EndBlock => {}
            Step::StreamError(err) => {
                f.push(Frame::Event(format!("data: {}\n\n", error_body(err))));
                return f;
            }
            Step::Cut => {
                f.push(Frame::Cut);
                return f;
            }
        }
    }
    chunk(&mut f, json!({}), Some(finish_reason(turn.stop)));
    if include_usage {
        let data = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_735_689_600, "model": model,
            "choices": [], "usage": usage()
        });
        f.push(Frame::Event(format!("data: {data}\n\n")));
    }
    f.push(Frame::Event("data: [DONE]\n\n".into()));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Settings, Turn, respond, select};
    use std::collections::BTreeMap;

    #[test]
    fn reads_a_qwen_like_request() {
        let body = json!({
            "model": "mock-qwen-model", "stream": true, "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "run_shell_command"}}],
            "messages": [
                {"role": "system", "content": "You are Qwen Code.\nCurrent working directory: /tmp/w"},
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>MOCK:err401</system-reminder>"},
                                               {"type": "text", "text": "MOCK:tool go"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "run_shell_command", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "hello"}
            ]
        });
        let c = conversation(&body);
        assert_eq!(c.user_texts, ["MOCK:tool go"]);
        assert_eq!(select(&c, None), "tool");
        assert_eq!(c.model_turns_since_user, 1);
        assert_eq!(c.cwd.as_deref(), Some("/tmp/w"));
        assert_eq!(c.last_tool_result.as_ref().unwrap().content, "hello");
        let Reply::Turn(t) = respond("tool", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        assert_eq!(t.full_text(), "Tool finished. Output was: hello");
    }

    fn chunks(frames: &[Frame]) -> Vec<String> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => Some(e.trim().strip_prefix("data: ").unwrap().to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn tool_call_arguments_stream_in_fragments_and_end_with_done() {
        let turn = Turn::tool_use(vec![
            Step::Thinking(vec!["hm".into()]),
            Step::Text(vec!["I will.".into()]),
            Step::ToolCall {
                name: "bash".into(),
                input: json!({"command": "echo héllo wörld"}),
            },
        ]);
        let c = chunks(&stream_frames(
            &turn,
            "m",
            "chatcmpl-1",
            true,
            &Ids::new(),
            Duration::ZERO,
        ));
        assert_eq!(c.last().unwrap(), "[DONE]");
        let parsed: Vec<Value> = c[..c.len() - 1]
            .iter()
            .map(|s| serde_json::from_str(s).unwrap())
            .collect();
        assert_eq!(parsed[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(parsed[0]["choices"][0]["delta"]["reasoning_content"], "hm");
        let args: String = parsed
            .iter()
            .filter_map(|p| {
                p["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap()["command"],
            "echo héllo wörld"
        );
        let finish = &parsed[parsed.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(parsed.last().unwrap()["usage"]["prompt_tokens"], 100);
    }

    #[test]
    fn errors_and_rate_limit_header() {
        let Response::Full {
            status, headers, ..
        } = error_response(&ApiError::new(ErrorKind::RateLimit, "slow down"))
        else {
            panic!()
        };
        assert_eq!(status, 429);
        assert!(headers.iter().any(|(k, v)| k == "retry-after" && v == "1"));
    }
}
