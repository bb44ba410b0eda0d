//! The request a client sends on stdin: one JSON object with the ai-bridge fields.
//!
//! The JetBrains plugin writes it without a trailing newline and closes stdin; other clients may
//! keep stdin open and send control lines after it. [`read_request`] therefore stops at the end
//! of the first complete JSON value instead of waiting for EOF, and hands back what followed.
//!
//! ```
//! use bridge_core::request::Request;
//! let req = Request::from_json(br#"{"message":"hi","sessionId":"abc","unknown":1}"#).unwrap();
//! assert_eq!(req.message, "hi");
//! assert_eq!(req.session_id.as_deref(), Some("abc"));
//! ```

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Longest accepted request (the message may embed large pasted context).
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Model names that mean "let the CLI use its configured default" (no `--model` flag).
pub const DEFAULT_MODEL_TOKENS: &[&str] = &[
    "__config_default__",
    "auto",
    "default",
    "(default)",
    "config-default",
    "config_default",
];

/// A string that must never be printed: `Debug` and `Display` show `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The secret itself, to hand to a child process environment.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// An attachment, in either shape the plugin sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Attachment {
    /// `{fileName, mediaType, data}`: base64 data (or a `data:` URL).
    Inline {
        /// Original file name, if given.
        file_name: Option<String>,
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64 payload or `data:` URL.
        data: String,
    },
    /// `{type:"local_image", path}`: an image file on disk (Codex path).
    LocalImage {
        /// Path of the image.
        path: PathBuf,
    },
}

/// An MCP server a client offers a session (ACP's `mcpServers` of `session/new`), for the
/// CLI to start or connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name (the CLI names its tools after it, e.g. `mcp__<name>__<tool>`).
    pub name: String,
    /// How the CLI reaches it.
    pub transport: McpTransport,
}

/// How a CLI reaches an [`McpServer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A process the CLI starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, in order.
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers of every request, in order.
        headers: Vec<(String, String)>,
    },
    /// Server-sent events.
    Sse {
        /// The endpoint.
        url: String,
        /// Headers of every request, in order.
        headers: Vec<(String, String)>,
    },
}

impl McpTransport {
    /// The transport's name: `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
            McpTransport::Sse { .. } => "sse",
        }
    }
}

/// Which [`McpTransport`]s a channel passes on to its CLI
/// ([`crate::channel::Channel::mcp_support`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpSupport {
    /// Servers the CLI starts.
    pub stdio: bool,
    /// Streamable HTTP servers.
    pub http: bool,
    /// SSE servers.
    pub sse: bool,
}

impl McpSupport {
    /// Every transport.
    pub const ALL: McpSupport = McpSupport {
        stdio: true,
        http: true,
        sse: true,
    };

    /// Whether `transport` is one of these.
    pub fn takes(&self, transport: &McpTransport) -> bool {
        match transport {
            McpTransport::Stdio { .. } => self.stdio,
            McpTransport::Http { .. } => self.http,
            McpTransport::Sse { .. } => self.sse,
        }
    }
}

/// One `send` request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The prompt text.
    pub message: String,
    /// Conversation to resume (`sessionId`, or `threadId` for Codex); `None` starts a new one.
    pub session_id: Option<String>,
    /// Working directory of the agent.
    pub cwd: Option<PathBuf>,
    /// Requested permission mode, verbatim (`default`, `plan`, `acceptEdits`, `bypassPermissions`, …).
    pub permission_mode: Option<String>,
    /// Model name; `None` when absent or one of [`DEFAULT_MODEL_TOKENS`].
    pub model: Option<String>,
    /// `low|medium|high|xhigh|max`.
    pub reasoning_effort: Option<String>,
    /// API base URL to point the CLI at.
    pub base_url: Option<String>,
    /// API key for the CLI (child environment only; never printed).
    pub api_key: Option<Secret>,
    /// Images and files.
    pub attachments: Vec<Attachment>,
    /// Extra system instructions (`agentPrompt`).
    pub agent_prompt: Option<String>,
    /// Ask the provider not to think.
    pub disable_thinking: bool,
    /// `streaming`: `Some(false)` asks for whole text blocks instead of deltas (the plugin's
    /// streaming setting; see [`crate::encode::markers`]); `None` streams.
    pub streaming: Option<bool>,
    /// `openedFiles`: what the user has open in the IDE (see [`crate::ide_context`]).
    pub opened_files: Option<crate::ide_context::OpenedFiles>,
    /// Which of the provider's transports to use (`acp`, `json`, …); `None` is the provider's
    /// default. See [`crate::channel::Transports`].
    pub transport: Option<String>,
    /// `env`: variables for this request's CLI process (the daemon's per-request environment,
    /// ai-bridge protocol §4.6), in the order sent. Set on the child only, never on the
    /// bridge's own environment; a variable the bridge scrubs from every child (`NODE_OPTIONS`,
    /// `LD_*`, … [`crate::process::is_scrubbed_env`]) or one a request field controls
    /// ([`REQUEST_CONTROLLED_ENV`]) is dropped when the request is parsed. The variables the
    /// channel sets itself (the request's key, endpoint) win over these.
    pub env: Vec<(String, String)>,
    /// MCP servers for the CLI (`bridge acp`'s sessions; not a request field of `send`),
    /// passed on where the channel takes them ([`crate::channel::Channel::mcp_support`]).
    pub mcp_servers: Vec<McpServer>,
    /// Fields this version does not interpret, kept for channels that do.
    pub extra: Map<String, Value>,
}

/// Variables a request's `env` may not set because a request field says what they mean
/// (model routing, effort, thinking budget, the 1M context switch): the plugin's daemon skips
/// them too, and letting them through would make `model` or `reasoningEffort` lie.
pub const REQUEST_CONTROLLED_ENV: &[&str] = &[
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "CLAUDE_CODE_EFFORT_LEVEL",
    "MAX_THINKING_TOKENS",
    "CLAUDE_CODE_DISABLE_1M_CONTEXT",
];

/// Whether a request's `env` may set `key` (see [`Request::env`]).
///
/// ```
/// use bridge_core::request::request_env_allowed;
/// assert!(request_env_allowed("IDEA_PROJECT_PATH"));
/// assert!(!request_env_allowed("NODE_OPTIONS"));
/// assert!(!request_env_allowed("LD_PRELOAD"));
/// assert!(!request_env_allowed("MAX_THINKING_TOKENS"));
/// assert!(!request_env_allowed(""));
/// ```
pub fn request_env_allowed(key: &str) -> bool {
    !key.is_empty()
        && !key.contains(['=', '\0'])
        && !crate::process::is_scrubbed_env(key)
        && !REQUEST_CONTROLLED_ENV.contains(&key)
}

/// The `env` object of a request: string values as they are, numbers and booleans as text
/// (`String(value)` in the Node daemon), `null` skipped; variables
/// [`request_env_allowed`] refuses are dropped. The one reading of `env` (requests, and the
/// daemon's per-process commands).
pub fn parse_env(value: Option<Value>) -> Result<Vec<(String, String)>, RequestError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(RequestError::WrongType {
                field: "env",
                expected: "an object of strings",
                got: type_name(&other),
            });
        }
    };
    let mut env = Vec::with_capacity(object.len());
    for (key, value) in object {
        let value = match value {
            Value::Null => continue,
            Value::String(s) => s,
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(RequestError::WrongType {
                    field: "env",
                    expected: "an object of strings",
                    got: type_name(&other),
                });
            }
        };
        if request_env_allowed(&key) && !value.contains('\0') {
            env.push((key, value));
        }
    }
    Ok(env)
}

/// Why a request was rejected. The message tells the client what to fix.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RequestError {
    /// Nothing arrived on stdin.
    #[error(
        "no request on stdin: expected one JSON object such as {{\"message\":\"…\"}}, or a prompt argument"
    )]
    Empty,
    /// stdin stayed open without a complete JSON value.
    #[error(
        "no complete request JSON on stdin after {0:?}: write one JSON object (a trailing newline is optional) or close stdin"
    )]
    Timeout(Duration),
    /// The JSON did not parse.
    #[error("request is not valid JSON: {0}")]
    Malformed(String),
    /// The JSON is not an object.
    #[error("request must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// A field has the wrong type.
    #[error("request field `{field}` must be {expected}, got {got}")]
    WrongType {
        /// Field name as sent.
        field: &'static str,
        /// What was expected.
        expected: &'static str,
        /// The JSON type that arrived.
        got: &'static str,
    },
    /// A required field is missing or empty.
    #[error("request field `{0}` is required and must not be empty")]
    Missing(&'static str),
    /// The session id has characters no provider uses (path separators, `..`, control chars).
    #[error(
        "request field `sessionId` has invalid characters: use letters, digits, `-`, `_`, `.` or `:` (no `..`, no `/`)"
    )]
    BadSessionId,
    /// The working directory does not exist.
    #[error("request field `cwd` is not an existing directory: {0}")]
    BadCwd(String),
    /// `transport` names a transport the provider does not have.
    #[error(
        "request field `transport`: {provider} has no transport `{transport}` ({})",
        if available.is_empty() { "it has one way to run its CLI; leave `transport` out".to_string() } else { format!("available: {}", available.join(", ")) }
    )]
    UnknownTransport {
        /// The provider's display name.
        provider: String,
        /// The transport asked for.
        transport: String,
        /// The provider's transports, the default first (empty: it has only one).
        available: Vec<String>,
    },
    /// The request is larger than [`MAX_REQUEST_BYTES`].
    #[error("request is larger than {} MiB", MAX_REQUEST_BYTES / (1024 * 1024))]
    TooLarge,
    /// Reading stdin failed.
    #[error("could not read stdin: {0}")]
    Io(String),
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn take_string(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, RequestError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(RequestError::WrongType {
            field,
            expected: "a string",
            got: type_name(&other),
        }),
    }
}

fn take_bool(object: &mut Map<String, Value>, field: &'static str) -> Result<bool, RequestError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => Err(RequestError::WrongType {
            field,
            expected: "a boolean",
            got: type_name(&other),
        }),
    }
}

fn parse_attachments(value: Option<Value>) -> Result<Vec<Attachment>, RequestError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(RequestError::WrongType {
                field: "attachments",
                expected: "an array",
                got: type_name(&other),
            });
        }
    };
    let wrong = |got| RequestError::WrongType {
        field: "attachments",
        expected: "an array of {fileName, mediaType, data} or {type:\"local_image\", path} objects",
        got,
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Object(mut item) = item else {
                return Err(wrong(type_name(&item)));
            };
            if let Some(path) = take_string(&mut item, "path")? {
                return Ok(Attachment::LocalImage { path: path.into() });
            }
            let data = take_string(&mut item, "data")?
                .ok_or(wrong("an object without `data` or `path`"))?;
            let media_type = take_string(&mut item, "mediaType")?
                .or_else(|| data_url_media_type(&data))
                .unwrap_or_else(|| "application/octet-stream".into());
            Ok(Attachment::Inline {
                file_name: take_string(&mut item, "fileName")?,
                media_type,
                data,
            })
        })
        .collect()
}

fn data_url_media_type(data: &str) -> Option<String> {
    let rest = data.strip_prefix("data:")?;
    let end = rest.find([';', ','])?;
    Some(rest[..end].to_string())
}

/// Checks a session id the way a request's `sessionId` is checked (letters, digits, `-_.:`,
/// no `..`, at most 256 characters), for commands that take one outside a request (the
/// plugin's `getSession <sessionId> <cwd>`). An empty id is [`RequestError::Missing`].
///
/// ```
/// use bridge_core::request::{check_session_id, RequestError};
/// assert_eq!(check_session_id("0199a-b_c"), Ok(()));
/// assert_eq!(check_session_id("../x"), Err(RequestError::BadSessionId));
/// ```
pub fn check_session_id(id: &str) -> Result<(), RequestError> {
    if id.is_empty() {
        return Err(RequestError::Missing("sessionId"));
    }
    if valid_session_id(id) {
        Ok(())
    } else {
        Err(RequestError::BadSessionId)
    }
}

/// Session ids are passed to CLIs as arguments and used in file names: allow only safe characters.
fn valid_session_id(id: &str) -> bool {
    id.len() <= 256
        && !id.contains("..")
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The fields of a request a CLI takes only when it starts (its working directory, endpoint
/// and key, reasoning effort, system prompt, thinking switch, transport): a warm session
/// whose next request changes one of them restarts the CLI (and resumes), since it cannot
/// change them live. `Debug` shows no key.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSettings {
    cwd: Option<PathBuf>,
    base_url: Option<String>,
    api_key: Option<Secret>,
    reasoning_effort: Option<String>,
    agent_prompt: Option<String>,
    disable_thinking: bool,
    transport: Option<String>,
    env: Vec<(String, String)>,
    mcp_servers: Vec<McpServer>,
}

impl LaunchSettings {
    /// The names of the fields that differ between `self` and `other` (`cwd`, `baseUrl`, …).
    pub fn changed(&self, other: &LaunchSettings) -> Vec<&'static str> {
        [
            ("cwd", self.cwd != other.cwd),
            ("baseUrl", self.base_url != other.base_url),
            ("apiKey", self.api_key != other.api_key),
            (
                "reasoningEffort",
                self.reasoning_effort != other.reasoning_effort,
            ),
            ("agentPrompt", self.agent_prompt != other.agent_prompt),
            (
                "disableThinking",
                self.disable_thinking != other.disable_thinking,
            ),
            ("transport", self.transport != other.transport),
            ("env", self.env != other.env),
            ("mcpServers", self.mcp_servers != other.mcp_servers),
        ]
        .into_iter()
        .filter_map(|(name, differs)| differs.then_some(name))
        .collect()
    }
}

impl Request {
    /// What of this request a CLI takes only at launch ([`LaunchSettings`]).
    pub fn launch_settings(&self) -> LaunchSettings {
        LaunchSettings {
            cwd: self.cwd.clone(),
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            agent_prompt: self.agent_prompt.clone(),
            disable_thinking: self.disable_thinking,
            transport: self.transport.clone(),
            env: self.env.clone(),
            mcp_servers: self.mcp_servers.clone(),
        }
    }

    /// Fills the settings this request leaves out from `earlier` (the turn before in a
    /// session): permission mode, model, working directory, endpoint and key, reasoning
    /// effort, system prompt, transport, `env` and the MCP servers (when this request has none). The message, attachments and IDE context are the
    /// turn's own.
    pub fn inherit(&mut self, earlier: &Request) {
        fn keep<T: Clone>(field: &mut Option<T>, earlier: &Option<T>) {
            if field.is_none() {
                field.clone_from(earlier);
            }
        }
        keep(&mut self.permission_mode, &earlier.permission_mode);
        keep(&mut self.model, &earlier.model);
        keep(&mut self.cwd, &earlier.cwd);
        keep(&mut self.base_url, &earlier.base_url);
        keep(&mut self.api_key, &earlier.api_key);
        keep(&mut self.reasoning_effort, &earlier.reasoning_effort);
        keep(&mut self.agent_prompt, &earlier.agent_prompt);
        keep(&mut self.transport, &earlier.transport);
        if self.env.is_empty() {
            self.env.clone_from(&earlier.env);
        }
        if self.mcp_servers.is_empty() {
            self.mcp_servers.clone_from(&earlier.mcp_servers);
        }
    }

    /// This request's settings without its message, attachments and IDE context (what a later
    /// turn [`Request::inherit`]s).
    pub fn settings_only(&self) -> Request {
        // Field by field: cloning the attachments (base64 images) only to drop them is waste.
        Request {
            message: String::new(),
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            permission_mode: self.permission_mode.clone(),
            model: self.model.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            attachments: Vec::new(),
            agent_prompt: self.agent_prompt.clone(),
            disable_thinking: self.disable_thinking,
            streaming: self.streaming,
            opened_files: None,
            transport: self.transport.clone(),
            env: self.env.clone(),
            mcp_servers: self.mcp_servers.clone(),
            extra: self.extra.clone(),
        }
    }

    /// A request with just a prompt (what `bridge <provider> send "text"` builds).
    pub fn from_prompt(message: impl Into<String>) -> Self {
        Request {
            message: message.into(),
            session_id: None,
            cwd: None,
            permission_mode: None,
            model: None,
            reasoning_effort: None,
            base_url: None,
            api_key: None,
            attachments: Vec::new(),
            agent_prompt: None,
            disable_thinking: false,
            streaming: None,
            opened_files: None,
            transport: None,
            env: Vec::new(),
            mcp_servers: Vec::new(),
            extra: Map::new(),
        }
    }

    /// The IDE context block of `openedFiles` ([`crate::ide_context`]), if any.
    pub fn ide_context(&self) -> Option<String> {
        self.opened_files.as_ref()?.prompt_block()
    }

    /// What to append to the system prompt, for CLIs that take one: the `agentPrompt`, then the
    /// IDE context block of `openedFiles`; `None` when the request has neither.
    ///
    /// ```
    /// use bridge_core::request::Request;
    /// let request = Request::from_json(
    ///     br#"{"message":"explain this","agentPrompt":"Be brief.","openedFiles":{"active":"/p/a.rs"}}"#,
    /// ).unwrap();
    /// let instructions = request.instructions().unwrap();
    /// assert!(instructions.starts_with("Be brief.\n\n<ide-context>\n"));
    /// assert!(instructions.contains("`/p/a.rs`"));
    /// assert_eq!(Request::from_prompt("hi").instructions(), None);
    /// ```
    pub fn instructions(&self) -> Option<String> {
        let agent = self
            .agent_prompt
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .map(str::to_string);
        match (agent, self.ide_context()) {
            (Some(a), Some(c)) => Some(format!("{a}\n\n{c}")),
            (a, c) => a.or(c),
        }
    }

    /// For CLIs that take one text prompt and have no system-prompt option: the IDE context
    /// block of `openedFiles` first, then the message, then the `agentPrompt` under a heading.
    ///
    /// ```
    /// use bridge_core::request::Request;
    /// let request = Request {
    ///     agent_prompt: Some("Be brief.".into()),
    ///     ..Request::from_prompt("hi")
    /// };
    /// assert_eq!(
    ///     request.message_with_agent_prompt(),
    ///     "hi\n\n## Agent Role and Instructions\n\nBe brief."
    /// );
    /// assert_eq!(Request::from_prompt("hi").message_with_agent_prompt(), "hi");
    /// let with_context = Request::from_json(br#"{"message":"hi","openedFiles":{"active":"/a"}}"#).unwrap();
    /// assert!(with_context.message_with_agent_prompt().ends_with("</ide-context>\n\nhi"));
    /// ```
    pub fn message_with_agent_prompt(&self) -> String {
        let mut message = match self.ide_context() {
            Some(context) => format!("{context}\n\n{}", self.message),
            None => self.message.clone(),
        };
        if let Some(prompt) = self
            .agent_prompt
            .as_deref()
            .filter(|p| !p.trim().is_empty())
        {
            message.push_str("\n\n## Agent Role and Instructions\n\n");
            message.push_str(prompt);
        }
        message
    }

    /// Parses one request JSON object. Unknown fields are kept in [`Request::extra`].
    pub fn from_json(bytes: &[u8]) -> Result<Request, RequestError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(RequestError::Empty);
        }
        // Same rules as [`read_request`]: strict UTF-8, JSON whitespace only.
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| RequestError::Malformed(e.to_string()))?;
        Request::from_value(value)
    }

    /// Builds a request from an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Request, RequestError> {
        let mut object = match value {
            Value::Object(object) => object,
            other => return Err(RequestError::NotAnObject(type_name(&other))),
        };
        let message = match object.remove("message").or_else(|| object.remove("prompt")) {
            Some(Value::String(s)) if !s.trim().is_empty() => s,
            None | Some(Value::Null) | Some(Value::String(_)) => {
                return Err(RequestError::Missing("message"));
            }
            Some(other) => {
                return Err(RequestError::WrongType {
                    field: "message",
                    expected: "a string",
                    got: type_name(&other),
                });
            }
        };
        let session_id = match take_string(&mut object, "sessionId")? {
            Some(id) => Some(id),
            None => take_string(&mut object, "threadId")?,
        };
        if let Some(id) = &session_id
            && !valid_session_id(id)
        {
            return Err(RequestError::BadSessionId);
        }
        let model = take_string(&mut object, "model")?
            .filter(|m| !DEFAULT_MODEL_TOKENS.contains(&m.trim().to_ascii_lowercase().as_str()));
        Ok(Request {
            message,
            session_id,
            cwd: take_string(&mut object, "cwd")?.map(PathBuf::from),
            permission_mode: take_string(&mut object, "permissionMode")?,
            model,
            reasoning_effort: take_string(&mut object, "reasoningEffort")?,
            base_url: take_string(&mut object, "baseUrl")?,
            api_key: take_string(&mut object, "apiKey")?.map(Secret::new),
            attachments: parse_attachments(object.remove("attachments"))?,
            agent_prompt: take_string(&mut object, "agentPrompt")?,
            disable_thinking: take_bool(&mut object, "disableThinking")?,
            streaming: match object.remove("streaming") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(b)) => Some(b),
                Some(other) => {
                    return Err(RequestError::WrongType {
                        field: "streaming",
                        expected: "a boolean",
                        got: type_name(&other),
                    });
                }
            },
            opened_files: crate::ide_context::OpenedFiles::from_request(
                object.remove("openedFiles"),
            )?,
            transport: take_string(&mut object, "transport")?,
            env: parse_env(object.remove("env"))?,
            mcp_servers: Vec::new(),
            extra: object,
        })
    }

    /// Checks the whole request as it will be run, including fields set after parsing (e.g.
    /// from command-line flags): a safe session id, an existing working directory.
    pub fn validate(&self) -> Result<(), RequestError> {
        if let Some(id) = &self.session_id
            && !valid_session_id(id)
        {
            return Err(RequestError::BadSessionId);
        }
        if let Some(cwd) = &self.cwd
            && !cwd.is_dir()
        {
            return Err(RequestError::BadCwd(cwd.display().to_string()));
        }
        Ok(())
    }
}

/// What [`read_request`] found on stdin.
#[derive(Debug)]
pub struct ReadRequest {
    /// The parsed request.
    pub request: Request,
    /// Bytes that followed the request JSON (the start of the control stream).
    pub rest: Vec<u8>,
}

/// Reads the first complete JSON value from `input` (EOF not required), within `timeout`.
///
/// Parsing is attempted only when the buffer ends in `}` (after trailing whitespace) or at EOF,
/// so a large request is not re-parsed for every chunk.
pub async fn read_request<R: AsyncRead + Unpin>(
    input: &mut R,
    timeout: Duration,
) -> Result<ReadRequest, RequestError> {
    let read = async {
        let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = input
                .read(&mut chunk)
                .await
                .map_err(|e| RequestError::Io(e.to_string()))?;
            let eof = n == 0;
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > MAX_REQUEST_BYTES {
                return Err(RequestError::TooLarge);
            }
            let ends_in_brace = buf
                .iter()
                .rev()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| *b == b'}');
            if !(eof || ends_in_brace) {
                continue;
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                if eof {
                    return Err(RequestError::Empty);
                }
                continue;
            }
            let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
            match values.next() {
                Some(Ok(value)) => {
                    let consumed = values.byte_offset();
                    let rest = buf[consumed..].to_vec();
                    return Ok(ReadRequest {
                        request: Request::from_value(value)?,
                        rest,
                    });
                }
                Some(Err(e)) if e.is_eof() && !eof => continue,
                Some(Err(e)) => return Err(RequestError::Malformed(e.to_string())),
                None => return Err(RequestError::Empty),
            }
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(RequestError::Timeout(timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_turn_keeps_the_settings_it_leaves_out_and_its_own_win() {
        let first = Request::from_value(serde_json::json!({
            "message": "one", "cwd": "/p", "permissionMode": "plan", "model": "m1",
            "apiKey": "sk-1", "attachments": [{"fileName": "a.png", "mediaType": "image/png", "data": "iVBORw0KGgo="}],
        }))
        .unwrap();
        let mut second = Request::from_value(
            serde_json::json!({"message": "two", "permissionMode": "acceptEdits"}),
        )
        .unwrap();
        second.inherit(&first.settings_only());
        assert_eq!(second.message, "two");
        assert_eq!(second.permission_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(second.model.as_deref(), Some("m1"));
        assert_eq!(second.cwd.as_deref(), Some(std::path::Path::new("/p")));
        assert!(
            second.attachments.is_empty(),
            "attachments are the turn's own"
        );
        assert!(
            first
                .launch_settings()
                .changed(&second.launch_settings())
                .is_empty()
        );
        let mut third = second.clone();
        third.api_key = Some(Secret::new("sk-2"));
        third.cwd = Some("/q".into());
        assert_eq!(
            second.launch_settings().changed(&third.launch_settings()),
            ["cwd", "apiKey"]
        );
        assert!(!format!("{:?}", third.launch_settings()).contains("sk-2"));
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = Request::from_json(br#"{"message":"hi","cwd":5}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "request field `cwd` must be a string, got a number"
        );
        let err = Request::from_json(br#"{"message":["hi"]}"#).unwrap_err();
        assert!(matches!(
            err,
            RequestError::WrongType {
                field: "message",
                ..
            }
        ));
    }

    #[test]
    fn missing_message_and_non_objects_are_rejected() {
        assert_eq!(
            Request::from_json(br#"{"sessionId":"x"}"#).unwrap_err(),
            RequestError::Missing("message")
        );
        assert_eq!(
            Request::from_json(b"[1]").unwrap_err(),
            RequestError::NotAnObject("an array")
        );
        assert_eq!(
            Request::from_json(b"  \n").unwrap_err(),
            RequestError::Empty
        );
        assert!(matches!(
            Request::from_json(b"{\"message\":").unwrap_err(),
            RequestError::Malformed(_)
        ));
    }

    #[test]
    fn session_ids_with_path_characters_are_rejected() {
        for bad in ["../etc", "a/b", "..", ".hidden", "a\nb", "a b"] {
            let json = serde_json::json!({"message": "hi", "sessionId": bad}).to_string();
            assert_eq!(
                Request::from_json(json.as_bytes()).unwrap_err(),
                RequestError::BadSessionId,
                "{bad:?}"
            );
        }
        let ok = Request::from_json(br#"{"message":"hi","threadId":"0199a-b_c.d:e"}"#).unwrap();
        assert_eq!(ok.session_id.as_deref(), Some("0199a-b_c.d:e"));
    }

    #[test]
    fn validate_rechecks_a_session_id_set_after_parsing() {
        let mut req = Request::from_prompt("hi");
        req.session_id = Some("../../etc/passwd".into());
        assert_eq!(req.validate(), Err(RequestError::BadSessionId));
    }

    #[test]
    fn default_model_tokens_mean_no_model() {
        for token in ["auto", "__config_default__", "Default"] {
            let json = serde_json::json!({"message": "hi", "model": token}).to_string();
            assert_eq!(Request::from_json(json.as_bytes()).unwrap().model, None);
        }
    }

    #[test]
    fn api_key_is_never_debug_printed() {
        let req = Request::from_json(br#"{"message":"hi","apiKey":"sk-canary-42"}"#).unwrap();
        assert!(!format!("{req:?}").contains("sk-canary-42"));
        assert_eq!(req.api_key.unwrap().expose(), "sk-canary-42");
    }

    #[test]
    fn attachments_in_both_shapes() {
        let req = Request::from_json(
            br#"{"message":"hi","attachments":[{"fileName":"a.png","mediaType":"image/png","data":"AAAA"},{"type":"local_image","path":"/tmp/x.png"},{"data":"data:image/jpeg;base64,AA"}]}"#,
        )
        .unwrap();
        assert_eq!(req.attachments.len(), 3);
        assert!(
            matches!(&req.attachments[2], Attachment::Inline { media_type, .. } if media_type == "image/jpeg")
        );
    }

    #[tokio::test]
    async fn reads_without_newline_and_keeps_what_follows() {
        let mut input: &[u8] = b"{\"message\":\"hi\"}{\"type\":\"interrupt\"}\n";
        let read = read_request(&mut input, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(read.request.message, "hi");
        assert_eq!(read.rest, b"{\"type\":\"interrupt\"}\n");
    }

    #[tokio::test]
    async fn open_stdin_without_a_value_times_out() {
        let (_writer, mut reader) = tokio::io::duplex(64);
        let err = read_request(&mut reader, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(err, RequestError::Timeout(Duration::from_millis(50)));
    }

    #[tokio::test]
    async fn request_is_parsed_while_stdin_stays_open() {
        let (mut writer, mut reader) = tokio::io::duplex(1024);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"message\":\"open\"}")
            .await
            .unwrap();
        let read = read_request(&mut reader, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(read.request.message, "open");
        drop(writer);
    }
}
