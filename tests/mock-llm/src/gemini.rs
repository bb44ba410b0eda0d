//! The Gemini API dialect (what Gemini CLI speaks): `POST …/models/{model}:streamGenerateContent`
//! (SSE, `alt=sse`), `:generateContent` (one JSON body), `:countTokens`, and `GET …/models`.
//!
//! [`conversation`] reads a request body into a dialect-neutral [`Conversation`]; the crate-private
//! `render` writes a [`Reply`] back as this dialect's `data:` chunks, JSON body or error body.
//!
//! Facts this follows (Gemini CLI 0.61.0 against `GOOGLE_GEMINI_BASE_URL`):
//!
//! * streamed chunks are `data: {"candidates":[{"content":{"role":"model","parts":[…]}}]}` lines
//!   without SSE event names; the last one carries `finishReason` and `usageMetadata`;
//! * thinking is a text part with `"thought": true`; function calls carry a `thoughtSignature`
//!   (Gemini 3 models require one on every `functionCall` part they get back);
//! * a mid-stream failure is a `data:` line holding an `{"error":{code,message,status}}` object;
//! * the CLI's model router sends a non-streamed `generateContent` with a `responseJsonSchema`
//!   whose types are upper-case (`OBJECT`, `INTEGER`): answered with a conforming value;
//! * the first user content is the CLI's own session context (date, OS, directory listing), not
//!   user-typed text.

use std::time::Duration;

use serde_json::{Value, json};

use crate::response::{Frame, Ids, Response};
use crate::scenario::{
    ApiError, Conversation, ErrorKind, Reply, Step, StopReason, THINKING_SIGNATURE, ToolResult,
    Turn,
};

/// What a Gemini API path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `:streamGenerateContent` (SSE).
    Stream,
    /// `:generateContent` (one JSON body).
    Generate,
    /// `:countTokens`.
    CountTokens,
}

/// The model and method of a Gemini API path (`/v1beta/models/gemini-2.5-pro:generateContent`,
/// any API version prefix), or `None` when the path is not one.
pub fn route(path: &str) -> Option<(String, Method)> {
    let (_, rest) = path.split_once("/models/")?;
    let (model, method) = rest.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    let method = match method {
        "streamGenerateContent" => Method::Stream,
        "generateContent" => Method::Generate,
        "countTokens" => Method::CountTokens,
        _ => return None,
    };
    Some((model.to_string(), method))
}

/// User texts that Gemini CLI injects (session context, reminders): context, not user-typed.
const INJECTED_PREFIXES: &[&str] = &[
    "<session_context>",
    "This is the Gemini CLI.",
    "<system-reminder>",
    "<state_snapshot>",
];

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
}

fn part_texts(content: &Value) -> impl Iterator<Item = &str> {
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
}

/// The working directory stated in the CLI's context ("I'm currently working in the directory:
/// /x", "Working directory: /x").
fn cwd_in(text: &str) -> Option<String> {
    const KEYS: &[&str] = &[
        "working in the directory:",
        "Primary working directory:",
        "Current working directory:",
        "Working directory:",
        "workspace directories:",
    ];
    for line in text.lines() {
        for key in KEYS {
            if let Some(pos) = line.find(key) {
                let dir = line[pos + key.len()..].trim().trim_end_matches('.');
                if dir.starts_with('/') {
                    return Some(dir.to_string());
                }
            }
        }
    }
    // The directory on the line after the key ("…workspace directories:\n  /x").
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end().ends_with("directories:")
            && let Some(next) = lines.next()
        {
            let dir = next.trim();
            if dir.starts_with('/') {
                return Some(dir.to_string());
            }
        }
    }
    None
}

/// Lower-cases the `type` keywords of a Gemini schema (`OBJECT` → `object`) so the generic filler
/// understands it.
fn lower_types(schema: &Value) -> Value {
    match schema {
        Value::Object(obj) => Value::Object(
            obj.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("type", Value::String(t)) => Value::String(t.to_ascii_lowercase()),
                        _ => lower_types(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(lower_types).collect()),
        other => other.clone(),
    }
}

/// Reads a Gemini API request body into a [`Conversation`]; `model` and `stream` come from the
/// path.
pub fn conversation(body: &Value, model: &str, stream: bool) -> Conversation {
    let empty = Vec::new();
    let contents = body["contents"].as_array().unwrap_or(&empty);
    let mut conv = Conversation {
        message_count: contents.len(),
        stream,
        model: Some(model.to_string()),
        tools: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
            .filter_map(|f| f["name"].as_str().map(str::to_string))
            .collect(),
        ..Conversation::default()
    };
    let mut latest_user = None;
    for (i, c) in contents.iter().enumerate() {
        if c["role"] != "user" {
            continue;
        }
        let texts: Vec<String> = part_texts(c)
            .filter(|t| !is_injected(t))
            .map(str::to_string)
            .collect();
        if !texts.is_empty() {
            latest_user = Some(i);
            conv.latest_user_text = Some(texts.join("\n"));
            conv.user_texts.extend(texts);
        }
    }
    let after = latest_user.map_or(0, |i| i + 1);
    conv.model_turns_since_user = contents[after.min(contents.len())..]
        .iter()
        .filter(|c| c["role"] == "model")
        .count();
    if let Some(last) = contents.last().filter(|c| c["role"] == "user") {
        conv.last_tool_result = last["parts"].as_array().and_then(|parts| {
            parts
                .iter()
                .find_map(|p| p.get("functionResponse"))
                .map(|r| {
                    let response = &r["response"];
                    let is_error = response.get("error").is_some();
                    let content = match response.get("output").or_else(|| response.get("error")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => response.to_string(),
                    };
                    ToolResult { content, is_error }
                })
        });
    }
    let config = &body["generationConfig"];
    conv.output_schema = [&config["responseJsonSchema"], &config["responseSchema"]]
        .into_iter()
        .find(|s| s.is_object())
        .map(lower_types);
    if conv.output_schema.is_none() && config["responseMimeType"] == "application/json" {
        conv.wants_json = true;
    }
    let system: Vec<&str> = part_texts(&body["systemInstruction"]).collect();
    let context: Vec<&str> = contents
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(part_texts)
        .filter(|t| is_injected(t))
        .collect();
    conv.cwd = system.iter().chain(context.iter()).find_map(|t| cwd_in(t));
    conv
}

/// The HTTP status and Google RPC status of `kind`.
pub fn error_status(kind: ErrorKind) -> (u16, &'static str) {
    match kind {
        ErrorKind::InvalidRequest => (400, "INVALID_ARGUMENT"),
        ErrorKind::Authentication => (401, "UNAUTHENTICATED"),
        ErrorKind::NotFound => (404, "NOT_FOUND"),
        ErrorKind::RateLimit => (429, "RESOURCE_EXHAUSTED"),
        ErrorKind::Server => (500, "INTERNAL"),
        ErrorKind::Overloaded => (503, "UNAVAILABLE"),
    }
}

/// The JSON body of a Gemini API error.
pub fn error_body(err: &ApiError) -> Value {
    let (code, status) = error_status(err.kind);
    json!({ "error": { "code": code, "message": err.message, "status": status } })
}

/// An HTTP error response in this dialect.
pub(crate) fn error_response(err: &ApiError) -> Response {
    let (code, _) = error_status(err.kind);
    Response::json(code, &error_body(err))
}

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn | StopReason::ToolUse => "STOP",
        StopReason::MaxTokens => "MAX_TOKENS",
    }
}

fn usage() -> Value {
    json!({ "promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120 })
}

/// The parts of one step (all of its deltas joined), for the non-streamed body.
fn step_parts(step: &Step) -> Vec<Value> {
    match step {
        Step::Text(deltas) => vec![json!({ "text": deltas.concat() })],
        Step::Thinking(deltas) => vec![json!({ "text": deltas.concat(), "thought": true })],
        Step::ToolCall { name, input } => vec![json!({
            "functionCall": { "name": name, "args": input },
            "thoughtSignature": THINKING_SIGNATURE
        })],
        _ => Vec::new(),
    }
}

/// Renders `reply` to a request for `model` (streamed or not).
pub(crate) fn render(
    reply: &Reply,
    model: &str,
    stream: bool,
    ids: &Ids,
    event_delay: Duration,
) -> Response {
    let turn = match reply {
        Reply::Error(err) => return error_response(err),
        Reply::Turn(turn) => turn,
    };
    if stream {
        return Response::Stream {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            frames: stream_frames(turn, model, ids, turn.delta_delay.unwrap_or(event_delay)),
        };
    }
    let mut parts = Vec::new();
    for step in &turn.steps {
        match step {
            Step::StreamError(err) => return error_response(err),
            Step::Cut => return Response::Drop,
            step => parts.extend(step_parts(step)),
        }
    }
    Response::json(
        200,
        &chunk(parts, Some(turn.stop), model, &ids.next("mockresp_")),
    )
}

fn chunk(parts: Vec<Value>, stop: Option<StopReason>, model: &str, response_id: &str) -> Value {
    let mut candidate = json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
    let mut out = json!({ "candidates": [], "modelVersion": model, "responseId": response_id });
    if let Some(stop) = stop {
        candidate["finishReason"] = json!(finish_reason(stop));
        out["usageMetadata"] = usage();
    }
    out["candidates"] = json!([candidate]);
    out
}

fn data(frames: &mut Vec<Frame>, value: &Value) {
    frames.push(Frame::Event(format!("data: {value}\n\n")));
}

/// The `data:` frames of a streamed turn: one chunk per delta (and per tool call), the last one
/// with `finishReason` and usage. `delay` is waited after each delta.
pub(crate) fn stream_frames(turn: &Turn, model: &str, ids: &Ids, delay: Duration) -> Vec<Frame> {
    let response_id = ids.next("mockresp_");
    let mut pending: Option<Vec<Value>> = None;
    let mut f = Vec::new();
    // Each chunk is held back one step so that the last one can carry the finish reason.
    let flush = |f: &mut Vec<Frame>, pending: &mut Option<Vec<Value>>, parts: Vec<Value>| {
        if let Some(prev) = pending.replace(parts) {
            data(f, &chunk(prev, None, model, &response_id));
            if !delay.is_zero() {
                f.push(Frame::Pause(delay));
            }
        }
    };
    for step in &turn.steps {
        match step {
            Step::Text(deltas) => {
                for d in deltas {
                    flush(&mut f, &mut pending, vec![json!({ "text": d })]);
                }
            }
            Step::Thinking(deltas) => {
                for d in deltas {
                    flush(
                        &mut f,
                        &mut pending,
                        vec![json!({ "text": d, "thought": true })],
                    );
                }
            }
            Step::ToolCall { .. } => flush(&mut f, &mut pending, step_parts(step)),
            Step::Pause(d) => {
                if let Some(prev) = pending.take() {
                    data(&mut f, &chunk(prev, None, model, &response_id));
                }
                f.push(Frame::Pause(*d));
            }
            Step::EndBlock => {}
            Step::StreamError(err) => {
                if let Some(prev) = pending.take() {
                    data(&mut f, &chunk(prev, None, model, &response_id));
                }
                data(&mut f, &error_body(err));
                return f;
            }
            Step::Cut => {
                if let Some(prev) = pending.take() {
                    data(&mut f, &chunk(prev, None, model, &response_id));
                }
                f.push(Frame::Cut);
                return f;
            }
        }
    }
    let last = pending.take().unwrap_or_default();
    data(&mut f, &chunk(last, Some(turn.stop), model, &response_id));
    f
}

/// The answer to `:countTokens`: a rough, deterministic estimate.
pub fn count_tokens(body: &Value) -> Value {
    json!({ "totalTokens": (body.to_string().len() / 4).max(1) })
}

/// The answer to `GET …/models`.
pub fn models() -> Value {
    json!({ "models": [{
        "name": "models/gemini-2.5-pro",
        "displayName": "Mock Gemini",
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Settings, respond, select};
    use std::collections::BTreeMap;

    fn gemini_like(contents: Value) -> Value {
        json!({
            "contents": contents,
            "systemInstruction": {"role": "user", "parts": [{"text": "You are an agent."}]},
            "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "run_shell_command"}]}],
            "generationConfig": {"temperature": 1}
        })
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("/v1beta/models/gemini-2.5-pro:streamGenerateContent"),
            Some(("gemini-2.5-pro".into(), Method::Stream))
        );
        assert_eq!(
            route("/v1/models/m:countTokens"),
            Some(("m".into(), Method::CountTokens))
        );
        assert_eq!(route("/v1beta/models/m:embed"), None);
        assert_eq!(route("/v1/messages"), None);
    }

    #[test]
    fn reads_gemini_cli_request() {
        let body = gemini_like(json!([
            {"role": "user", "parts": [{"text": "<session_context>\nI'm currently working in the directory: /tmp/w\nMOCK:err401\n</session_context>"}]},
            {"role": "user", "parts": [{"text": "MOCK:tool run it"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "hello"}}}]}
        ]));
        let c = conversation(&body, "gemini-2.5-pro", true);
        assert_eq!(c.user_texts, ["MOCK:tool run it"]);
        assert_eq!(select(&c, None), "tool");
        assert_eq!(c.model_turns_since_user, 1);
        assert_eq!(c.tools, ["read_file", "run_shell_command"]);
        assert_eq!(c.cwd.as_deref(), Some("/tmp/w"));
        assert_eq!(
            c.last_tool_result,
            Some(ToolResult {
                content: "hello".into(),
                is_error: false
            })
        );
        let Reply::Turn(t) = respond("tool", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        assert_eq!(t.full_text(), "Tool finished. Output was: hello");
    }

    #[test]
    fn router_schema_is_filled_with_lower_cased_types() {
        let body = json!({
            "contents": [{"role": "user", "parts": [{"text": "MOCK:text hi"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
                "type": "OBJECT", "properties": {"complexity_reasoning": {"type": "STRING"},
                "complexity_score": {"type": "INTEGER"}}}}
        });
        let c = conversation(&body, "gemini-3.5-flash-lite", false);
        let Reply::Turn(t) = respond("text", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        let v: Value = serde_json::from_str(&t.full_text()).unwrap();
        assert!(v["complexity_score"].as_i64().unwrap() >= 1, "{v}");
    }

    #[test]
    fn stream_ends_with_finish_reason_and_usage() {
        let ids = Ids::new();
        let turn = Turn::tool_use(vec![
            Step::Thinking(vec!["hm".into()]),
            Step::Text(vec!["a ".into(), "b".into()]),
            Step::ToolCall {
                name: "run_shell_command".into(),
                input: json!({"command": "echo hello"}),
            },
        ]);
        let frames = stream_frames(&turn, "m", &ids, Duration::ZERO);
        let chunks: Vec<Value> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => serde_json::from_str(e.trim().strip_prefix("data: ")?).ok(),
                _ => None,
            })
            .collect();
        assert_eq!(chunks.len(), 4);
        assert_eq!(
            chunks[0]["candidates"][0]["content"]["parts"][0]["thought"],
            true
        );
        let last = &chunks[3];
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["promptTokenCount"], 100);
        assert_eq!(
            last["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
            "run_shell_command"
        );
        assert!(chunks[..3].iter().all(|c| c.get("usageMetadata").is_none()));
    }

    #[test]
    fn errors_use_google_rpc_statuses() {
        let r = render(
            &Reply::Error(ApiError::new(
                ErrorKind::Authentication,
                "API key not valid",
            )),
            "m",
            true,
            &Ids::new(),
            Duration::ZERO,
        );
        let Response::Full { status, body, .. } = r else {
            panic!()
        };
        assert_eq!(status, 401);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["status"], "UNAUTHENTICATED");
    }
}
