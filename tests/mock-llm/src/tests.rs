//! Server tests over real loopback TCP with hand-written HTTP requests.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::*;
use crate::scenario::{HELLO_TEXT, SIDE_REQUEST_TEXT};

/// A response as read off the wire.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The body ended as its framing says (terminating chunk / full length).
    complete: bool,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// `(event name, data)` of each SSE event.
    fn events(&self) -> Vec<(String, Value)> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|e| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in e.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_string();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).unwrap();
                    }
                }
                (name, data)
            })
            .collect()
    }

    fn text_deltas(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == "text_delta")
            .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
            .collect()
    }
}

async fn read_line(r: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = String::new();
    match r.read_line(&mut line).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
    }
}

/// Reads one response (skipping `100 Continue`).
async fn read_response(r: &mut BufReader<TcpStream>) -> Raw {
    let (status, headers) = loop {
        let status_line = read_line(r).await.expect("status line");
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        while let Some(l) = read_line(r).await {
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        if status != 100 {
            break (status, headers);
        }
    };
    let mut body = Vec::new();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let complete = if chunked {
        loop {
            let Some(size) = read_line(r).await else {
                break false;
            };
            let size = usize::from_str_radix(&size, 16).unwrap();
            if size == 0 {
                read_line(r).await;
                break true;
            }
            let mut chunk = vec![0; size + 2];
            if r.read_exact(&mut chunk).await.is_err() {
                break false;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        body.resize(len, 0);
        r.read_exact(&mut body).await.is_ok()
    };
    Raw {
        status,
        headers,
        body,
        complete,
    }
}

fn request(method: &str, path: &str, body: &Value, extra: &str) -> Vec<u8> {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         x-api-key: sk-ant-secret\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn connect(server: &MockServer) -> BufReader<TcpStream> {
    BufReader::new(TcpStream::connect(server.addr()).await.unwrap())
}

/// One request on a fresh connection.
async fn post(server: &MockServer, path: &str, body: &Value) -> Raw {
    let mut conn = connect(server).await;
    conn.get_mut()
        .write_all(&request("POST", path, body, ""))
        .await
        .unwrap();
    read_response(&mut conn).await
}

/// A Claude-Code-like Messages request with `text` as the user text.
fn messages(text: &str, stream: bool) -> Value {
    json!({
        "model": "claude-opus-4-8",
        "stream": stream,
        "max_tokens": 64000,
        "system": [{"type": "text", "text": " - Primary working directory: /tmp/work"}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}},
                  {"name": "Read", "input_schema": {"type": "object"}},
                  {"name": "Write", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>\n"},
                {"type": "text", "text": text}
            ]},
            {"role": "system", "content": "Available agent types"}
        ]
    })
}

async fn server() -> MockServer {
    MockServer::start(Config::default().event_delay(Duration::ZERO))
        .await
        .unwrap()
}

#[tokio::test]
async fn text_scenario_sse_framing() {
    let server = server().await;
    let r = post(
        &server,
        "/v1/messages?beta=true",
        &messages("MOCK:text hi", true),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.complete);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.header("request-id").unwrap().starts_with("req_mock_"));
    let names: Vec<String> = r.events().into_iter().map(|(n, _)| n).collect();
    let mut expected = vec!["message_start", "ping", "content_block_start"];
    expected.extend(["content_block_delta"; 5]);
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);
    for (name, data) in r.events() {
        assert_eq!(data["type"], name.as_str(), "event name matches data.type");
    }
    let deltas = r.text_deltas();
    assert!(deltas.len() >= 3);
    assert_eq!(deltas.concat(), HELLO_TEXT);
    let events = r.events();
    assert_eq!(events[0].1["message"]["model"], "claude-opus-4-8");
    assert!(
        events[0].1["message"]["id"]
            .as_str()
            .unwrap()
            .starts_with("msg_")
    );
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "end_turn"
    );
    let logged = server.requests();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].scenario.as_deref(), Some("text"));
    assert_eq!(logged[0].path, "/v1/messages?beta=true");
    assert_eq!(logged[0].path_only(), "/v1/messages");
}

#[tokio::test]
async fn scenario_selection_marker_default_and_fallback() {
    let server = MockServer::start(
        Config::default()
            .scenario("thinking")
            .event_delay(Duration::ZERO),
    )
    .await
    .unwrap();
    // No marker: the configured default.
    let r = post(&server, "/v1/messages", &messages("hello", true)).await;
    let events = r.events();
    assert_eq!(events[2].1["content_block"]["type"], "thinking");
    assert!(
        events
            .iter()
            .any(|(_, d)| d["delta"]["type"] == "signature_delta")
    );
    assert_eq!(r.text_deltas().concat(), "After thinking: hello!");
    // A marker wins over the default; markers inside system reminders do not count.
    let mut body = messages("MOCK:text please", true);
    body["messages"][0]["content"][0]["text"] =
        json!("<system-reminder>MOCK:err500</system-reminder>");
    let r = post(&server, "/v1/messages", &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text_deltas().concat(), HELLO_TEXT);
    // No default configured, no marker: text.
    let plain = MockServer::start(Config::default().event_delay(Duration::ZERO))
        .await
        .unwrap();
    let r = post(&plain, "/v1/messages", &messages("hello", true)).await;
    assert_eq!(r.text_deltas().concat(), HELLO_TEXT);
    let scen: Vec<_> = server.requests().into_iter().map(|r| r.scenario).collect();
    assert_eq!(
        scen,
        [Some("thinking".to_string()), Some("text".to_string())]
    );
}

#[tokio::test]
async fn tool_round_trip() {
    let server = server().await;
    let first = messages("MOCK:tool run it", true);
    let r = post(&server, "/v1/messages?beta=true", &first).await;
    let events = r.events();
    let start = events
        .iter()
        .find(|(_, d)| d["content_block"]["type"] == "tool_use")
        .expect("a tool_use block");
    let tool_id = start.1["content_block"]["id"].as_str().unwrap().to_string();
    assert!(tool_id.starts_with("toolu_"));
    assert_eq!(start.1["content_block"]["name"], "Bash");
    let input: String = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(
        input,
        json!({"command": "echo hello", "description": "Print hello"})
    );
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "tool_use"
    );

    let mut second = first.clone();
    let msgs = second["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "assistant", "content": [
        {"type": "text", "text": "I will run a command."},
        {"type": "tool_use", "id": tool_id, "name": "Bash", "input": input}]}));
    msgs.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_id, "content": "hello", "is_error": false}]}));
    let r = post(&server, "/v1/messages?beta=true", &second).await;
    assert_eq!(r.text_deltas().concat(), "Tool finished. Output was: hello");
    let events = r.events();
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "end_turn"
    );
    assert_eq!(server.requests()[1].scenario.as_deref(), Some("tool"));
}

#[tokio::test]
async fn write_read_and_danger_target_the_cwd() {
    let server = server().await;
    for (scenario, tool, key, value) in [
        ("write", "Write", "file_path", "/tmp/work/mock-written.txt"),
        ("read", "Read", "file_path", "/tmp/work/hello.txt"),
        (
            "danger",
            "Bash",
            "command",
            "touch mock-created.txt && echo created",
        ),
    ] {
        let r = post(
            &server,
            "/v1/messages",
            &messages(&format!("MOCK:{scenario}"), false),
        )
        .await;
        let body = r.json();
        let call = body["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "tool_use")
            .unwrap();
        assert_eq!(call["name"], tool, "{scenario}");
        assert_eq!(call["input"][key], value, "{scenario}");
        assert_eq!(body["stop_reason"], "tool_use");
    }
}

#[tokio::test]
async fn error_statuses() {
    let server = server().await;
    for (scenario, status, ty) in [
        ("err401", 401, "authentication_error"),
        ("err429", 429, "rate_limit_error"),
        ("err500", 500, "api_error"),
        ("err529", 529, "overloaded_error"),
        ("no-such-scenario", 400, "invalid_request_error"),
    ] {
        let r = post(
            &server,
            "/v1/messages?beta=true",
            &messages(&format!("MOCK:{scenario}"), true),
        )
        .await;
        assert_eq!(r.status, status, "{scenario}");
        let body = r.json();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], ty, "{scenario}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        let rid = r.header("request-id").unwrap();
        assert!(rid.starts_with("req_mock_"));
        assert_eq!(body["request_id"], rid);
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn keep_alive_serves_two_requests_on_one_connection() {
    let server = server().await;
    let mut conn = connect(&server).await;
    conn.get_mut()
        .write_all(&request(
            "POST",
            "/v1/messages?beta=true",
            &messages("MOCK:text", true),
            "",
        ))
        .await
        .unwrap();
    let first = read_response(&mut conn).await;
    assert!(first.complete);
    assert_eq!(first.header("connection"), Some("keep-alive"));
    assert_eq!(first.text_deltas().concat(), HELLO_TEXT);
    conn.get_mut()
        .write_all(&request(
            "POST",
            "/v1/messages",
            &messages("MOCK:text", false),
            "",
        ))
        .await
        .unwrap();
    let second = read_response(&mut conn).await;
    assert_eq!(second.status, 200);
    assert_eq!(second.json()["content"][0]["text"], HELLO_TEXT);
    // `connection: close` is honoured.
    conn.get_mut()
        .write_all(&request(
            "GET",
            "/v1/models",
            &Value::Null,
            "connection: close\r\n",
        ))
        .await
        .unwrap();
    let third = read_response(&mut conn).await;
    assert_eq!(third.header("connection"), Some("close"));
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn non_streaming_message_json() {
    let server = server().await;
    let r = post(&server, "/v1/messages", &messages("MOCK:thinking", false)).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["content"][0]["type"], "thinking");
    assert_eq!(body["content"][0]["signature"], "bW9jay1zaWduYXR1cmU=");
    assert_eq!(body["content"][1]["text"], "After thinking: hello!");
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["usage"]["output_tokens"], 20);
}

#[tokio::test]
async fn midstream_error_event_then_non_stream_retry_succeeds() {
    let server = server().await;
    let r = post(&server, "/v1/messages", &messages("MOCK:midstream", true)).await;
    assert_eq!(r.status, 200);
    assert!(r.complete, "the stream ends cleanly after the error event");
    let events = r.events();
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(data["error"]["type"], "overloaded_error");
    assert_eq!(r.text_deltas(), ["Hello "]);
    // The error interrupts the open text block: Claude Code then retries without streaming
    // (after a closed block it would keep the partial text and fail instead).
    assert!(
        !events
            .iter()
            .any(|(n, _)| n == "content_block_stop" || n == "message_stop")
    );
    // What Claude Code does next: the same request without `stream`.
    let r = post(&server, "/v1/messages", &messages("MOCK:midstream", false)).await;
    assert_eq!(r.json()["content"][0]["text"], HELLO_TEXT);
}

#[tokio::test]
async fn cut_drops_the_connection_mid_stream() {
    let server = server().await;
    let r = post(&server, "/v1/messages", &messages("MOCK:cut", true)).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete, "no terminating chunk");
    assert_eq!(r.text_deltas(), ["Hello ", "from "]);
    assert!(
        !r.events()
            .iter()
            .any(|(n, _)| n == "content_block_stop" || n == "message_stop")
    );
    // The non-streamed retry is dropped too: no response at all.
    let mut conn = connect(&server).await;
    conn.get_mut()
        .write_all(&request(
            "POST",
            "/v1/messages",
            &messages("MOCK:cut", false),
            "",
        ))
        .await
        .unwrap();
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn cut_after_block_closes_the_block_first() {
    let server = server().await;
    let r = post(
        &server,
        "/v1/messages",
        &messages("MOCK:cut-after-block", true),
    )
    .await;
    assert!(!r.complete);
    let names: Vec<String> = r.events().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.last().map(String::as_str), Some("content_block_stop"));
    assert_eq!(r.text_deltas(), ["Hello ", "from "]);
    let r = post(
        &server,
        "/v1/messages",
        &messages("MOCK:cut-after-block", false),
    )
    .await;
    assert_eq!(r.json()["content"][0]["text"], HELLO_TEXT);
}

#[tokio::test]
async fn slow_scenario_paces_deltas() {
    let mut config = Config::default().event_delay(Duration::ZERO);
    config.settings.slow_deltas = 5;
    config.settings.slow_delay = Duration::from_millis(40);
    let server = MockServer::start(config).await.unwrap();
    let t0 = Instant::now();
    let r = post(&server, "/v1/messages", &messages("MOCK:slow", true)).await;
    assert!(
        t0.elapsed() >= Duration::from_millis(160),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(r.text_deltas().concat(), "word0 word1 word2 word3 word4");
}

#[tokio::test]
async fn chunked_body_and_expect_continue() {
    let server = server().await;
    let body = messages("MOCK:text", false).to_string();
    let (a, b) = body.split_at(body.len() / 2);
    let raw = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\
         expect: 100-continue\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let mut conn = connect(&server).await;
    conn.get_mut().write_all(raw.as_bytes()).await.unwrap();
    let r = read_response(&mut conn).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["content"][0]["text"], HELLO_TEXT);
}

#[tokio::test]
async fn side_requests_without_tools() {
    let server = server().await;
    let mut body = messages("MOCK:tool title for this", false);
    body.as_object_mut().unwrap().remove("tools");
    let r = post(&server, "/v1/messages", &body).await;
    assert_eq!(r.json()["content"][0]["text"], SIDE_REQUEST_TEXT);
    body["output_format"] = json!({"type": "json_schema", "schema": {"type": "object",
        "properties": {"title": {"type": "string"}, "branch": {"type": "string"}},
        "required": ["title", "branch"]}});
    let r = post(&server, "/v1/messages", &body).await;
    let text = r.json()["content"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"title": "mock", "branch": "mock"})
    );
}

#[tokio::test]
async fn log_file_redacts_secrets() {
    let dir = std::env::temp_dir().join(format!("mock-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let server = MockServer::start(Config::default().log_path(&log).event_delay(Duration::ZERO))
        .await
        .unwrap();
    let mut conn = connect(&server).await;
    conn.get_mut()
        .write_all(&request(
            "POST",
            "/v1/messages",
            &messages("MOCK:text", false),
            "authorization: Bearer sk-secret-2\r\n",
        ))
        .await
        .unwrap();
    read_response(&mut conn).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("sk-ant-secret") && !text.contains("sk-secret-2"));
    let lines: Vec<LoggedRequest> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    // The key is kept in memory for the test to check, never in the file.
    let mut in_memory = server.requests()[0].clone();
    assert_eq!(in_memory.api_key.as_deref(), Some("sk-ant-secret"));
    assert_eq!(lines[0].api_key, None);
    in_memory.api_key = None;
    assert_eq!(lines[0], in_memory);
    assert_eq!(lines[0].header("X-Api-Key"), Some(REDACTED));
    assert_eq!(lines[0].header("authorization"), Some(REDACTED));
    assert_eq!(lines[0].body["model"], "claude-opus-4-8");
    assert_eq!(lines[0].dialect.as_deref(), Some("anthropic"));
    assert_eq!(lines[0].seq, 1);
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn relay_prefixes_answer_as_the_messages_api_and_the_bearer_key_is_recorded() {
    let server = server().await;
    for prefix in ["/anthropic", "/api/anthropic"] {
        let mut conn = connect(&server).await;
        let mut body = messages("MOCK:relay-err529", false);
        body["model"] = json!("MiniMax-M2");
        let body = body.to_string();
        // No x-api-key: relays get the key as a bearer token.
        let raw = format!(
            "POST {prefix}/v1/messages?beta=true HTTP/1.1\r\nhost: 127.0.0.1\r\n\
             content-type: application/json\r\nauthorization: Bearer relay-key-1\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        conn.get_mut().write_all(raw.as_bytes()).await.unwrap();
        let r = read_response(&mut conn).await;
        assert_eq!(r.status, 529, "{prefix}");
        assert_eq!(
            r.json()["error"]["message"],
            crate::scenario::RELAY_529_MESSAGE
        );
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.model(), Some("MiniMax-M2"));
        assert_eq!(r.scenario.as_deref(), Some("relay-err529"));
        assert_eq!(r.api_key.as_deref(), Some("relay-key-1"));
        assert_eq!(r.header("authorization"), Some(crate::REDACTED));
    }
}

#[tokio::test]
async fn auxiliary_routes() {
    let server = server().await;
    let r = post(&server, "/v1/messages/count_tokens", &messages("x", false)).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["input_tokens"].as_u64().unwrap() > 0);
    let mut conn = connect(&server).await;
    conn.get_mut()
        .write_all(&request("GET", "/v1/models", &Value::Null, ""))
        .await
        .unwrap();
    let r = read_response(&mut conn).await;
    assert_eq!(r.json()["data"][0]["type"], "model");
    conn.get_mut()
        .write_all(&request("HEAD", "/", &Value::Null, ""))
        .await
        .unwrap();
    let r = read_response(&mut conn).await;
    assert_eq!(r.status, 200);
    let r = post(&server, "/v2/unknown", &json!({})).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "not_found_error");
    let r = post(&server, "/v1/messages", &json!("not an object")).await;
    assert_eq!(r.status, 400);
    let mut conn = connect(&server).await;
    conn.get_mut().write_all(b"garbage\r\n\r\n").await.unwrap();
    assert_eq!(read_response(&mut conn).await.status, 400);
}

#[test]
fn start_in_thread_serves_blocking_clients() {
    use std::io::{Read, Write};
    let server = MockServer::start_in_thread(Config::default()).unwrap();
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert_ne!(server.port(), 0);
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.write_all(&request(
        "POST",
        "/v1/messages",
        &messages("MOCK:text", false),
        "connection: close\r\n",
    ))
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains(HELLO_TEXT));
    assert_eq!(server.requests().len(), 1);
    server.clear_requests();
    assert!(server.requests().is_empty());
    let addr = server.addr();
    server.shutdown();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "stopped servers refuse connections"
    );
}

#[tokio::test]
async fn dropping_the_server_closes_open_streams() {
    let mut config = Config::default();
    config.settings.slow_delay = Duration::from_millis(200);
    let server = MockServer::start(config).await.unwrap();
    let mut conn = connect(&server).await;
    conn.get_mut()
        .write_all(&request(
            "POST",
            "/v1/messages",
            &messages("MOCK:slow", true),
            "",
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(server);
    let r = tokio::time::timeout(Duration::from_secs(5), read_response(&mut conn))
        .await
        .expect("stream ends soon after the drop");
    assert!(!r.complete);
}
