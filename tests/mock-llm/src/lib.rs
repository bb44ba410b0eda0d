//! The project's mock model server, for driving real coding-agent CLIs offline.
//!
//! It listens on `127.0.0.1` only and answers model API requests with scripted, deterministic
//! *scenarios*. A test picks the scenario by writing a `MOCK:<name>` marker in the prompt it sends
//! to the CLI (or sets [`Config::default_scenario`]); the CLI forwards the prompt to the model API,
//! and the mock answers accordingly: streamed text, thinking, a tool call and then a final text,
//! an HTTP error, a stream that fails half-way, a dropped connection, a slow stream.
//! See [`scenario::BUILTIN_SCENARIOS`] for the list.
//!
//! Dialects spoken: the Anthropic Messages API (`POST /v1/messages`, streamed and not,
//! `POST /v1/messages/count_tokens`, `GET /v1/models`), the Gemini API ([`gemini`]:
//! `POST …/models/{m}:streamGenerateContent|generateContent|countTokens`) and OpenAI Chat
//! Completions ([`openai_chat`]: `POST …/chat/completions`) and OpenAI Responses
//! ([`openai_responses`]: `POST …/responses`, Codex). The scenario layer ([`scenario`]) knows
//! nothing of wire formats, so other dialects plug
//! in as one more module that reads a request into a [`scenario::Conversation`] and renders a
//! [`scenario::Reply`].
//!
//! Every request is kept in memory ([`MockServer::requests`]) and, when [`Config::log_path`] is
//! set, appended to that file as one JSON line, with API keys redacted.
//!
//! # Driving Claude Code against it
//!
//! Install the pinned CLI with `tests/install-clis.sh`, then run CLI *and* mock inside one
//! loopback-only network namespace (`tests/netns-run`), so nothing can leave the machine:
//!
//! ```text
//! env -i PATH=$BRIDGE_CLI_PATH:/usr/bin:/bin HOME=$H CLAUDE_CONFIG_DIR=$H/.claude TMPDIR=$H/tmp \
//!   LANG=C.UTF-8 ANTHROPIC_BASE_URL=<base_url> ANTHROPIC_API_KEY=sk-ant-mock-0000 \
//!   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
//!   DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_MAX_RETRIES=1 \
//!   claude -p --input-format stream-json --output-format stream-json --verbose
//! ```
//!
//! with `{"type":"user","message":{"role":"user","content":"MOCK:tool hi"},…}` written to a
//! *pipe* on stdin (Claude Code 2.1.197 prints nothing and exits 0 when stdin is a regular file).
//! Claude Code first sends `HEAD /`, then `POST /v1/messages?beta=true` with `stream: true`;
//! after a stream that fails inside an open content block it retries the same request without
//! `stream` (the `midstream` and `cut` scenarios exercise that).
//!
//! ```no_run
//! let server = mock_llm::MockServer::start_in_thread(mock_llm::Config::default())?;
//! // ANTHROPIC_BASE_URL=<server.base_url()> claude -p "MOCK:tool run it" …
//! println!("{}", server.base_url());
//! assert!(server.requests().is_empty());
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

pub mod anthropic;
pub mod gemini;
mod http;
pub mod openai_chat;
pub mod openai_responses;
mod response;
pub mod scenario;
pub mod schema;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::http::{Chunked, ReadError, Request};
use crate::response::{Frame, Ids, Response};
use crate::scenario::{ApiError, ErrorKind, Script, Settings};

/// Headers whose values never reach a log.
const SECRET_HEADERS: &[&str] = &[
    "x-api-key",
    "authorization",
    "proxy-authorization",
    "x-goog-api-key",
    "api-key",
];

/// What redacted header values are replaced with.
pub const REDACTED: &str = "[redacted]";

/// Server configuration. `Config::default()` listens on an ephemeral port, uses the `text`
/// scenario when a request names none, and logs only in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Port on 127.0.0.1; 0 picks a free one (read it back with [`MockServer::port`]).
    pub port: u16,
    /// Scenario for requests without a `MOCK:<name>` marker; `None` means `text`.
    pub default_scenario: Option<String>,
    /// Append every request as one JSON line to this file.
    pub log_path: Option<PathBuf>,
    /// Pause after each streamed delta (the `slow` scenario has its own).
    pub event_delay: Duration,
    /// Knobs of the built-in scenarios (slow stream, read/write file names).
    pub settings: Settings,
    /// Custom scenarios by name; they take precedence over built-ins of the same name.
    pub scripts: BTreeMap<String, Script>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            port: 0,
            default_scenario: None,
            log_path: None,
            event_delay: Duration::from_millis(5),
            settings: Settings::default(),
            scripts: BTreeMap::new(),
        }
    }
}

impl Config {
    /// Sets [`Config::default_scenario`].
    pub fn scenario(mut self, name: impl Into<String>) -> Self {
        self.default_scenario = Some(name.into());
        self
    }

    /// Sets [`Config::log_path`].
    pub fn log_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_path = Some(path.into());
        self
    }

    /// Sets [`Config::port`].
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Sets [`Config::event_delay`].
    pub fn event_delay(mut self, delay: Duration) -> Self {
        self.event_delay = delay;
        self
    }

    /// Registers a custom scenario.
    pub fn script(mut self, name: impl Into<String>, script: Script) -> Self {
        self.scripts.insert(name.into(), script);
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// 1-based arrival number.
    pub seq: u64,
    /// Arrival time, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// HTTP method.
    pub method: String,
    /// Request target: path and query (`/v1/messages?beta=true`).
    pub path: String,
    /// Headers, names lower-cased; repeated headers joined with `, `; secrets replaced by
    /// [`REDACTED`].
    pub headers: BTreeMap<String, String>,
    /// The body: parsed JSON, a string when it is not JSON, `null` when empty.
    pub body: Value,
    /// The API dialect that answered (`anthropic`), if any.
    pub dialect: Option<String>,
    /// The scenario that answered, for model requests.
    pub scenario: Option<String>,
    /// The API key the request carried (`x-api-key`, or the token of
    /// `authorization: Bearer …`), so a test can check which key reached the model. Kept in
    /// memory only: never written to [`Config::log_path`].
    #[serde(skip)]
    pub api_key: Option<String>,
}

impl LoggedRequest {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The path without the query string.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// The model the request body names.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }
}

/// The API key of a request: `x-api-key`, else the token of `authorization: Bearer …`.
fn api_key_of(req: &Request) -> Option<String> {
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
    };
    header("x-api-key")
        .or_else(|| {
            header("authorization").and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
        })
        .map(str::to_string)
}

/// The Anthropic route of `path` under a relay's prefix: `/anthropic/v1/messages` and
/// `/api/anthropic/v1/messages` (how MiniMax and Z.ai mount the API) answer as
/// `/v1/messages`.
fn anthropic_route(path: &str) -> &str {
    ["/v1/messages", "/v1/models"]
        .iter()
        .find_map(|route| path.find(route).filter(|at| *at > 0).map(|at| &path[at..]))
        .unwrap_or(path)
}

/// State shared by all connections of one server.
struct Shared {
    config: Config,
    ids: Ids,
    seq: AtomicU64,
    requests: Mutex<Vec<LoggedRequest>>,
    log: Mutex<Option<File>>,
}

impl Shared {
    fn new(config: Config) -> std::io::Result<Self> {
        let log = match &config.log_path {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
            None => None,
        };
        Ok(Self {
            config,
            ids: Ids::new(),
            seq: AtomicU64::new(0),
            requests: Mutex::new(Vec::new()),
            log: Mutex::new(log),
        })
    }

    fn record(&self, req: &Request, body: &Value, dialect: Option<&str>, scenario: Option<&str>) {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in &req.headers {
            let v = if SECRET_HEADERS.contains(&k.as_str()) {
                REDACTED
            } else {
                v.as_str()
            };
            headers
                .entry(k.clone())
                .and_modify(|prev| {
                    prev.push_str(", ");
                    prev.push_str(v);
                })
                .or_insert_with(|| v.to_string());
        }
        let entry = LoggedRequest {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            method: req.method.clone(),
            path: req.target.clone(),
            headers,
            body: body.clone(),
            dialect: dialect.map(str::to_string),
            scenario: scenario.map(str::to_string),
            api_key: api_key_of(req),
        };
        if let Some(file) = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            && let Ok(line) = serde_json::to_string(&entry)
        {
            // A failing log write must not fail the request; the in-memory copy stays.
            let _ = writeln!(file, "{line}").and_then(|()| file.flush());
        }
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }

    /// Routes one request and records it.
    fn handle(&self, req: &Request) -> Response {
        let body = parse_body(&req.body);
        let path = anthropic_route(req.path());
        match (req.method.as_str(), path) {
            ("POST", "/v1/messages") => {
                let Value::Object(_) = body else {
                    self.record(req, &body, Some("anthropic"), None);
                    let err = ApiError::new(
                        ErrorKind::InvalidRequest,
                        "mock-llm: the body must be a JSON object",
                    );
                    return anthropic::error_response(&err, &self.ids);
                };
                let conv = anthropic::conversation(&body);
                let name = scenario::select(&conv, self.config.default_scenario.as_deref());
                self.record(req, &body, Some("anthropic"), Some(&name));
                let reply =
                    scenario::respond(&name, &conv, &self.config.settings, &self.config.scripts);
                anthropic::render(&reply, &conv, &self.ids, self.config.event_delay)
            }
            ("POST", p) if openai_responses::is_responses_path(p) => {
                let conv = openai_responses::conversation(&body);
                let name = scenario::select(&conv, self.config.default_scenario.as_deref());
                self.record(req, &body, Some("openai-responses"), Some(&name));
                let reply = openai_responses::respond(
                    &name,
                    &conv,
                    &self.config.settings,
                    &self.config.scripts,
                );
                let delay = self.config.event_delay;
                openai_responses::render(&name, &reply, &conv, &body, &self.ids, delay)
            }
            ("POST", p) if openai_chat::is_chat_path(p) => {
                let conv = openai_chat::conversation(&body);
                let name = scenario::select(&conv, self.config.default_scenario.as_deref());
                self.record(req, &body, Some("openai-chat"), Some(&name));
                let reply =
                    scenario::respond(&name, &conv, &self.config.settings, &self.config.scripts);
                let include_usage = body["stream_options"]["include_usage"] == true;
                openai_chat::render(
                    &reply,
                    &conv,
                    include_usage,
                    &self.ids,
                    self.config.event_delay,
                )
            }
            ("POST", p) if gemini::route(p).is_some() => {
                let Some((model, method)) = gemini::route(p) else {
                    unreachable!("checked by the guard")
                };
                if method == gemini::Method::CountTokens {
                    self.record(req, &body, Some("gemini"), None);
                    return Response::json(200, &gemini::count_tokens(&body));
                }
                let stream = method == gemini::Method::Stream;
                let conv = gemini::conversation(&body, &model, stream);
                let name = scenario::select(&conv, self.config.default_scenario.as_deref());
                self.record(req, &body, Some("gemini"), Some(&name));
                let reply =
                    scenario::respond(&name, &conv, &self.config.settings, &self.config.scripts);
                gemini::render(&reply, &model, stream, &self.ids, self.config.event_delay)
            }
            ("GET", p) if p.ends_with("/models") && p.contains("beta") => {
                self.record(req, &body, Some("gemini"), None);
                Response::json(200, &gemini::models())
            }
            ("POST", "/v1/messages/count_tokens") => {
                self.record(req, &body, Some("anthropic"), None);
                Response::json(200, &anthropic::count_tokens(&body))
            }
            ("GET", "/v1/models") => {
                self.record(req, &body, Some("anthropic"), None);
                Response::json(200, &anthropic::models(None))
            }
            ("GET", p) if p.starts_with("/v1/models/") => {
                self.record(req, &body, Some("anthropic"), None);
                Response::json(200, &anthropic::models(Some(&p["/v1/models/".len()..])))
            }
            ("GET", "/" | "/health") => {
                self.record(req, &body, None, None);
                Response::json(200, &json!({ "ok": true }))
            }
            ("HEAD", _) => {
                self.record(req, &body, None, None);
                Response::empty(200)
            }
            (method, path) => {
                self.record(req, &body, None, None);
                let err = ApiError::new(
                    ErrorKind::NotFound,
                    format!("mock-llm: no route for {method} {path}"),
                );
                anthropic::error_response(&err, &self.ids)
            }
        }
    }
}

fn parse_body(raw: &[u8]) -> Value {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    serde_json::from_slice(raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into_owned()))
}

/// Writes `response`; `Ok(false)` when the connection must close afterwards.
async fn write_response(
    stream: &mut TcpStream,
    response: Response,
    keep_alive: bool,
    method: &str,
) -> std::io::Result<bool> {
    match response {
        Response::Full {
            status,
            headers,
            body,
        } => {
            let body: &[u8] = if method == "HEAD" { &[] } else { &body };
            http::write_full(stream, status, &headers, body, keep_alive).await?;
            Ok(keep_alive)
        }
        Response::Stream {
            status,
            headers,
            frames,
        } => {
            let mut out = Chunked::start(stream, status, &headers, keep_alive).await?;
            for frame in frames {
                match frame {
                    Frame::Event(e) => out.chunk(e.as_bytes()).await?,
                    Frame::Pause(d) => out.pause(d).await,
                    Frame::Cut => return Ok(false),
                }
            }
            out.finish().await?;
            Ok(keep_alive)
        }
        Response::Drop => Ok(false),
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut conn = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut conn).await {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Io(_)) => return,
            Err(ReadError::Bad(status, msg)) => {
                let body = json!({ "type": "error", "error": {
                    "type": "invalid_request_error", "message": format!("mock-llm: {msg}") } });
                let headers = [("content-type".to_string(), "application/json".to_string())];
                let _ = http::write_full(
                    conn.get_mut(),
                    status,
                    &headers,
                    body.to_string().as_bytes(),
                    false,
                )
                .await;
                return;
            }
        };
        let keep_alive = req.keep_alive();
        let response = shared.handle(&req);
        match write_response(conn.get_mut(), response, keep_alive, &req.method).await {
            Ok(true) => continue,
            Ok(false) | Err(_) => return,
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: oneshot::Receiver<()>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // Resolves on an explicit stop and when the server handle is dropped.
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // Dropping the set aborts the connections still open (a client mid-stream sees a cut).
    connections.shutdown().await;
}

async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
}

/// A running mock server. Dropping it stops the server and closes its connections.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("own_thread", &self.thread.is_some())
            .finish_non_exhaustive()
    }
}

impl MockServer {
    /// Starts the server on the current tokio runtime.
    ///
    /// # Errors
    /// When the port cannot be bound or the log file cannot be opened.
    pub async fn start(config: Config) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::new(config)?);
        let listener = bind(shared.config.port).await?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = oneshot::channel();
        tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop_rx));
        Ok(Self {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: None,
        })
    }

    /// Starts the server on its own thread with its own single-threaded tokio runtime, for
    /// synchronous tests (`#[test]` functions that spawn processes). Safe to call from inside a
    /// runtime as well.
    ///
    /// # Errors
    /// When the thread or runtime cannot be created, the port cannot be bound or the log file
    /// cannot be opened.
    pub fn start_in_thread(config: Config) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::new(config)?);
        let (stop_tx, stop_rx) = oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mock-llm".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match bind(thread_shared.config.port).await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(listener.local_addr());
                    accept_loop(listener, thread_shared, stop_rx).await;
                });
            })?;
        let addr = match ready_rx.recv() {
            Ok(Ok(addr)) => addr,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(std::io::Error::other("mock-llm server thread died"));
            }
        };
        Ok(Self {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The bound address (always on 127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`, the value for `ANTHROPIC_BASE_URL` and friends.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the requests received so far (the log file keeps them).
    pub fn clear_requests(&self) {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Stops the server and closes its connections (same as dropping it).
    pub fn shutdown(self) {}
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
