//! MCP servers for tests/mcp.rs. [`serve_stdio`]: one over stdio (newline-delimited JSON-RPC)
//! in one of three modes, `healthy` (serverInfo `stdio-fixture` 1.2.3, tools `echo` and `add`),
//! `silent` (reads every line, never answers), `crash` (a line on stderr with
//! `$FIXTURE_TOKEN` in it, exit code 3); with `MCP_FIXTURE_ENV_DUMP` set it first writes its
//! environment there as JSON. [`McpHttp`]: over HTTP on 127.0.0.1: streamable HTTP (`POST /mcp`, JSON
//! answers, a session id) and the legacy HTTP+SSE transport (`GET /sse` with its `endpoint`
//! event, `POST /messages`, answers on the event stream), `POST /hang`, which never answers,
//! and `POST /unauthorized`, which
//! answers 401 with the request's `Authorization` header in its body (so a test can check the
//! bridge never echoes it). One thread per connection, `Connection: close` on every answer.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One request the server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

#[derive(Default)]
struct Shared {
    seen: Vec<Seen>,
    sse: Option<TcpStream>,
}

/// A running server (it lives until the test process ends).
pub struct McpHttp {
    pub port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl McpHttp {
    pub fn start() -> McpHttp {
        super::require_loopback_only_network();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the MCP test server");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let accept = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accept.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        McpHttp { port, shared }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().seen.clone()
    }
}

/// The tools of the HTTP fixture.
pub fn http_tools() -> Value {
    json!([
        {
            "name": "search_docs",
            "description": "Search the documentation",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"]
            }
        }
    ])
}

/// The variable whose value makes the tests/mcp.rs binary serve MCP on stdio in that mode.
pub const FIXTURE_ENV: &str = "BRIDGE_MCP_FIXTURE";

/// The tools of the stdio fixture.
pub fn stdio_tools() -> Value {
    json!([
        {
            "name": "echo",
            "description": "Echo the text back",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "what to echo"}},
                "required": ["text"]
            }
        },
        {
            "name": "add",
            "description": "Add two numbers",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            }
        }
    ])
}

/// Serves MCP on stdin/stdout in `mode` (see the module docs) until stdin ends.
pub fn serve_stdio(mode: &str) {
    if let Some(path) = std::env::var_os("MCP_FIXTURE_ENV_DUMP") {
        let env: serde_json::Map<String, Value> = std::env::vars()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        std::fs::write(path, Value::Object(env).to_string()).unwrap();
    }
    if mode == "crash" {
        let token = std::env::var("FIXTURE_TOKEN").unwrap_or_default();
        eprintln!("fixture crashed on purpose, token={token}");
        std::process::exit(3);
    }
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if mode == "silent" {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(reply) = answer(&message, ("stdio-fixture", "1.2.3"), stdio_tools()) {
            let mut out = stdout.lock();
            let _ = writeln!(out, "{reply}");
            let _ = out.flush();
        }
    }
}

/// The JSON-RPC answer to `message` of a server called `name` (version `version`) with
/// `tools` (`None` for a notification).
fn answer(message: &Value, (name, version): (&str, &str), tools: Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let result = match message["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": version}
        }),
        "tools/list" => json!({"tools": tools}),
        "ping" => json!({}),
        other => {
            return Some(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {other}")}}));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let seen = Seen {
        method: method.clone(),
        path: path.clone(),
        headers,
    };
    let authorization = seen.header("authorization").unwrap_or("").to_string();
    shared.lock().unwrap().seen.push(seen);
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match (method.as_str(), path.split('?').next().unwrap_or("")) {
        ("POST", "/mcp") => match answer(&message, ("http-fixture", "2.0.0"), http_tools()) {
            Some(reply) => respond(
                &mut stream,
                "200 OK",
                &[
                    ("Content-Type", "application/json"),
                    ("Mcp-Session-Id", "fixture-session-1"),
                ],
                reply.to_string().as_bytes(),
            ),
            None => respond(&mut stream, "202 Accepted", &[], b""),
        },
        ("DELETE", "/mcp") => respond(&mut stream, "200 OK", &[], b""),
        ("GET", "/sse") => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\nevent: endpoint\ndata: /messages?sessionId=fixture\n\n";
            if stream.write_all(head.as_bytes()).is_ok() {
                let _ = stream.flush();
                shared.lock().unwrap().sse = Some(stream);
            }
        }
        ("POST", "/messages") => {
            respond(&mut stream, "202 Accepted", &[], b"");
            if let Some(reply) = answer(&message, ("sse-fixture", "2.0.0"), http_tools()) {
                let mut shared = shared.lock().unwrap();
                if let Some(sse) = shared.sse.as_mut() {
                    let _ = sse.write_all(format!("event: message\ndata: {reply}\n\n").as_bytes());
                    let _ = sse.flush();
                }
            }
        }
        // Reads the request and never answers (the connection stays open).
        ("POST", "/hang") => {
            std::thread::sleep(std::time::Duration::from_secs(600));
        }
        ("POST", "/unauthorized") => respond(
            &mut stream,
            "401 Unauthorized",
            &[("Content-Type", "text/plain")],
            format!("denied: {authorization}").as_bytes(),
        ),
        _ => respond(&mut stream, "405 Method Not Allowed", &[], b""),
    }
}
