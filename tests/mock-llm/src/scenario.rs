//! Dialect-neutral scripted model behaviour.
//!
//! A wire dialect (see [`crate::anthropic`]) turns an HTTP request into a [`Conversation`]: what a
//! model would see, minus the wire format. [`respond`] picks the scenario for it and returns a
//! [`Reply`]: either an API error or one model [`Turn`], a list of [`Step`]s (text deltas,
//! thinking deltas, tool calls, pauses, a mid-stream error, a dropped connection). The dialect then
//! renders that turn in its own format (SSE events or one JSON body).
//!
//! Scenarios are multi-turn aware: a tool scenario answers the first request with a tool call and
//! the request that carries the tool result with a final text that quotes it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// The marker that selects a scenario from the latest user-typed text: `MOCK:<name>`.
pub const MARKER: &str = "MOCK:";

/// The scenario used when neither the request nor the server configuration names one.
pub const FALLBACK_SCENARIO: &str = "text";

/// The plain text of the `text` scenario (and of `midstream`/`cut` once they succeed).
pub const HELLO_TEXT: &str = "Hello from the mock model.";

/// The text answered to requests that declare no tools (titles, classifiers, summaries).
pub const SIDE_REQUEST_TEXT: &str = "Mock title";

/// The shell command of the `tool` scenario.
pub const TOOL_COMMAND: &str = "echo hello";

/// The shell command of the `danger` scenario: it writes, so no default permission mode allows it.
pub const DANGER_COMMAND: &str = "touch mock-created.txt && echo created";

/// The content the `write` scenario writes.
pub const WRITE_CONTENT: &str = "written by mock\n";

/// The thinking text of the `thinking` scenario.
pub const THINKING_TEXT: &str = "Let me think about this step by step. The user wants a greeting.";

/// The final text of the `thinking` scenario.
pub const AFTER_THINKING_TEXT: &str = "After thinking: hello!";

/// The signature sent with every thinking block (base64 of `mock-signature`).
pub const THINKING_SIGNATURE: &str = "bW9jay1zaWduYXR1cmU=";

/// The plan text of the `plan` scenario.
pub const PLAN_TEXT: &str = "1. Create mock-plan.txt containing 'planned'.\n2. Report the result.";

/// Every built-in scenario, in the order `--help` and error messages list them.
pub const BUILTIN_SCENARIOS: &[(&str, &str)] = &[
    (
        "text",
        "plain text \"Hello from the mock model.\" in 5 deltas",
    ),
    (
        "thinking",
        "a thinking block (deltas + signature), then text",
    ),
    (
        "tool",
        "text, then a shell tool call `echo hello`; after the result a final text quoting it",
    ),
    (
        "read",
        "a Read tool call of <cwd>/hello.txt; then a final text quoting the result",
    ),
    (
        "write",
        "a Write tool call creating <cwd>/mock-written.txt; then a final text",
    ),
    (
        "danger",
        "a shell call `touch mock-created.txt && echo created`; then a final text",
    ),
    (
        "recall",
        "text: the number of messages and every user-typed text (trimmed, 60 chars each)",
    ),
    (
        "spell",
        "text: the rest of the latest user text after `MOCK:spell `, streamed 3 characters a delta",
    ),
    ("ask", "an AskUserQuestion tool call; then a final text"),
    ("plan", "an ExitPlanMode tool call; then a final text"),
    ("err401", "HTTP 401 authentication_error"),
    ("err429", "HTTP 429 rate_limit_error"),
    ("err500", "HTTP 500 api_error"),
    ("err529", "HTTP 529 overloaded_error"),
    (
        "midstream",
        "streams the first delta, then an SSE error event (overloaded); non-stream: text",
    ),
    (
        "cut",
        "streams two deltas, then drops the TCP connection mid-block; non-stream: dropped too",
    ),
    (
        "cut-after-block",
        "streams a two-delta text block, closes it, then drops the connection; non-stream: text",
    ),
    (
        "slow",
        "40 deltas `word0 ` … `word39`, 150 ms apart (configurable)",
    ),
    (
        "relay-cumulative",
        "relay dialect: a thinking and a text block whose deltas are cumulative snapshots",
    ),
    (
        "relay-late",
        "relay dialect: cumulative snapshots whose first ones look like increments (\"He\", \"Hel\", …)",
    ),
    (
        "relay-corrective",
        "relay dialect: cumulative snapshots with a corrective one (`Hello wrold` → `Hello world`)",
    ),
    (
        "relay-repeat",
        "standard increments whose text repeats itself: `a`, `a`, ` ha` ×3, a delta equal to the previous one",
    ),
    (
        "relay-err401",
        "HTTP 401 with a relay-style message (MiniMax-like, code 1004)",
    ),
    (
        "relay-err529",
        "HTTP 529 with a relay-style message (overloaded cluster, code 2064)",
    ),
];

/// The text the `relay-*` snapshot scenarios stream (once de-duplicated).
pub const RELAY_TEXT: &str = "Hello from the relay: aa ha ha!";

/// The thinking of the `relay-cumulative` scenario.
pub const RELAY_THINKING: &str = "The user wants a greeting, so greet.";

/// The text of the `relay-repeat` scenario (increments: `a`, `a`, ` ha`, ` ha`, ` ha`, `!`,
/// `!`).
pub const RELAY_REPEAT_TEXT: &str = "aa ha ha ha!!";

/// The text of the `relay-corrective` scenario, after its correction.
pub const RELAY_CORRECTED_TEXT: &str = "Hello world, corrected.";

/// The message of the `relay-err401` scenario.
pub const RELAY_401_MESSAGE: &str = "login fail: Please carry the API secret key in the 'Authorization' field of the request header (1004)";

/// The message of the `relay-err529` scenario.
pub const RELAY_529_MESSAGE: &str =
    "The server cluster is currently under high load. Please retry after a short wait (2064)";

/// `text` as the cumulative snapshots a relay sends: the text up to the end of each word.
pub fn snapshots(text: &str) -> Vec<String> {
    let mut so_far = String::new();
    words(text)
        .into_iter()
        .map(|word| {
            so_far.push_str(&word);
            so_far.clone()
        })
        .collect()
}

/// A tool result found at the end of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The result's text (text parts joined with a newline).
    pub content: String,
    /// Whether the client flagged the result as an error (a denial, a failed command).
    pub is_error: bool,
}

/// A request, as a model would see it, independent of the wire dialect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// Every user-typed text, oldest first. Text blocks that the client injects
    /// (`<system-reminder>` context) and tool results are not user-typed.
    pub user_texts: Vec<String>,
    /// The user-typed text of the latest message that has some (its parts joined by `\n`).
    pub latest_user_text: Option<String>,
    /// Number of messages in the request, of every role.
    pub message_count: usize,
    /// Names of the tools the request declares.
    pub tools: Vec<String>,
    /// Number of model turns after the latest user-typed message (0 on the first request of a
    /// user turn, 1 after one tool round trip, …).
    pub model_turns_since_user: usize,
    /// The tool result the request ends with, if it ends with one.
    pub last_tool_result: Option<ToolResult>,
    /// A JSON schema the answer must conform to (structured output).
    pub output_schema: Option<Value>,
    /// The request asks for JSON in prose ("respond in JSON") without giving a schema.
    pub wants_json: bool,
    /// The client's working directory, when its system prompt states it.
    pub cwd: Option<String>,
    /// Whether the client asked for a streamed answer.
    pub stream: bool,
    /// The model name the client asked for.
    pub model: Option<String>,
}

/// Why a turn ended, as the model reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model waits for tool results.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
}

/// The kinds of API error a scenario can produce; each dialect maps them to its status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed (Anthropic 400 `invalid_request_error`).
    InvalidRequest,
    /// Bad credentials (401 `authentication_error`).
    Authentication,
    /// No such route or model (404 `not_found_error`).
    NotFound,
    /// Too many requests (429 `rate_limit_error`).
    RateLimit,
    /// Internal error (500 `api_error`).
    Server,
    /// Capacity exhausted (Anthropic 529 `overloaded_error`; 503 in other dialects).
    Overloaded,
}

/// An API error: an HTTP error response, or an error event inside a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The human-readable message.
    pub message: String,
}

impl ApiError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// One step of a scripted model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A text block, streamed as these deltas.
    Text(Vec<String>),
    /// A thinking block, streamed as these deltas, then its signature.
    Thinking(Vec<String>),
    /// A tool call.
    ToolCall {
        /// Tool name, as declared by the client.
        name: String,
        /// Tool input.
        input: Value,
    },
    /// Wait this long before the next event (streaming only).
    Pause(Duration),
    /// Close the open content block now (streaming only). Blocks otherwise close when the next
    /// one starts or the turn ends normally; use this before a [`Step::StreamError`] or
    /// [`Step::Cut`] that should fail *between* blocks.
    EndBlock,
    /// Streaming: send this error as an in-stream error event and end the stream. The content
    /// block before it is left open (no `content_block_stop`): the stream fails mid-block.
    /// Non-streaming: answer with this error as an HTTP error response.
    StreamError(ApiError),
    /// Drop the TCP connection here, without finishing the response (mid-block, like
    /// [`Step::StreamError`]).
    Cut,
}

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The stop reason reported at the end.
    pub stop: StopReason,
    /// Delay after each streamed delta; `None` uses the server's [`crate::Config::event_delay`].
    pub delta_delay: Option<Duration>,
}

impl Turn {
    /// A turn that ends normally after `steps`.
    pub fn end_turn(steps: Vec<Step>) -> Self {
        Self {
            steps,
            stop: StopReason::EndTurn,
            delta_delay: None,
        }
    }

    /// A turn that ends with `steps` and waits for tool results.
    pub fn tool_use(steps: Vec<Step>) -> Self {
        Self {
            steps,
            stop: StopReason::ToolUse,
            delta_delay: None,
        }
    }

    /// A one-block text turn; the text is streamed word by word.
    pub fn text(text: &str) -> Self {
        Self::end_turn(vec![Step::Text(words(text))])
    }

    /// The text of all text blocks, concatenated (what a client shows as the answer).
    pub fn full_text(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            if let Step::Text(deltas) = step {
                out.extend(deltas.iter().map(String::as_str));
            }
        }
        out
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A model turn.
    Turn(Turn),
    /// An HTTP error response.
    Error(ApiError),
}

/// A custom scenario registered in [`crate::Config::scripts`]: one [`Turn`] per model turn of a
/// user turn. Request `n` after the latest user message gets `turns[n]`; requests past the end get
/// the last turn. Text deltas may contain `{tool_result}`, replaced by the content of the tool
/// result the request ends with (empty when there is none).
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// Knobs of the built-in scenarios.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Number of deltas of the `slow` scenario.
    pub slow_deltas: usize,
    /// Delay between the deltas of the `slow` scenario.
    pub slow_delay: Duration,
    /// File the `read` scenario reads, relative to the client's cwd unless absolute.
    pub read_file: String,
    /// File the `write` scenario writes, relative to the client's cwd unless absolute.
    pub write_file: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            slow_deltas: 40,
            slow_delay: Duration::from_millis(150),
            read_file: "hello.txt".into(),
            write_file: "mock-written.txt".into(),
        }
    }
}

/// Splits `text` into word deltas, each word keeping the whitespace that follows it, so the
/// deltas concatenate back to `text` exactly.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_space = false;
    for ch in text.chars() {
        if ch.is_whitespace() {
            in_space = true;
        } else if in_space {
            out.push(std::mem::take(&mut cur));
            in_space = false;
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The scenario name in a `MOCK:<name>` marker of `text` (the last marker wins).
/// Names are ASCII letters, digits, `_` and `-`.
pub fn marker_in(text: &str) -> Option<&str> {
    let mut found = None;
    let mut rest = text;
    while let Some(pos) = rest.find(MARKER) {
        let after = &rest[pos + MARKER.len()..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(after.len());
        if len > 0 {
            found = Some(&after[..len]);
        }
        rest = after;
    }
    found
}

/// The scenario for `conv`: the marker in the latest user-typed text, else `default`, else
/// [`FALLBACK_SCENARIO`].
pub fn select(conv: &Conversation, default: Option<&str>) -> String {
    conv.latest_user_text
        .as_deref()
        .and_then(marker_in)
        .or(default)
        .unwrap_or(FALLBACK_SCENARIO)
        .to_string()
}

/// Whether `name` is a built-in scenario.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_SCENARIOS.iter().any(|(n, _)| *n == name)
}

/// The reply of scenario `name` to `conv`. Custom `scripts` take precedence over built-ins of the
/// same name. An unknown name answers HTTP 400 naming the known scenarios.
pub fn respond(
    name: &str,
    conv: &Conversation,
    settings: &Settings,
    scripts: &BTreeMap<String, Script>,
) -> Reply {
    if let Some(script) = scripts.get(name) {
        return Reply::Turn(run_script(script, conv));
    }
    if let Some(err) = error_scenario(name) {
        return Reply::Error(err);
    }
    if !is_builtin(name) {
        let known: Vec<&str> = BUILTIN_SCENARIOS
            .iter()
            .map(|(n, _)| *n)
            .chain(scripts.keys().map(String::as_str))
            .collect();
        return Reply::Error(ApiError::new(
            ErrorKind::InvalidRequest,
            format!(
                "mock-llm: unknown scenario `{name}`; known: {}",
                known.join(", ")
            ),
        ));
    }
    if conv.tools.is_empty() {
        return Reply::Turn(side_request(conv));
    }
    if let Some(result) = &conv.last_tool_result {
        // The plan tool's answer names a plan file with a random name: quote its first line only,
        // so the final text stays deterministic.
        return Reply::Turn(after_tool(result, name == "plan"));
    }
    Reply::Turn(builtin_turn(name, conv, settings))
}

/// The HTTP error of an `err*` scenario.
fn error_scenario(name: &str) -> Option<ApiError> {
    let (kind, message) = match name {
        "err401" => (ErrorKind::Authentication, "invalid x-api-key"),
        "err429" => (
            ErrorKind::RateLimit,
            "Number of requests has exceeded your rate limit",
        ),
        "err500" => (ErrorKind::Server, "Internal server error"),
        "err529" => (ErrorKind::Overloaded, "Overloaded"),
        "relay-err401" => (ErrorKind::Authentication, RELAY_401_MESSAGE),
        "relay-err529" => (ErrorKind::Overloaded, RELAY_529_MESSAGE),
        _ => return None,
    };
    Some(ApiError::new(kind, message))
}

/// Answer to a request without tools: a schema-conforming JSON value, `{"title": …}` when JSON is
/// asked for in prose, else a short text.
fn side_request(conv: &Conversation) -> Turn {
    if let Some(schema) = &conv.output_schema {
        return Turn::end_turn(vec![Step::Text(vec![
            crate::schema::fill(schema).to_string(),
        ])]);
    }
    if conv.wants_json {
        return Turn::end_turn(vec![Step::Text(vec![
            json!({ "title": SIDE_REQUEST_TEXT }).to_string(),
        ])]);
    }
    Turn::text(SIDE_REQUEST_TEXT)
}

/// The final text after a tool round trip, quoting (the start of) the tool's output: its first
/// 200 characters, or only its first line when `first_line` is set.
fn after_tool(result: &ToolResult, first_line: bool) -> Turn {
    let flag = if result.is_error {
        " (tool reported is_error)"
    } else {
        ""
    };
    let mut output = result.content.trim();
    if first_line {
        output = output.lines().next().unwrap_or("");
    }
    let output: String = output.chars().take(200).collect();
    Turn::text(&format!("Tool finished{flag}. Output was: {output}"))
}

fn run_script(script: &Script, conv: &Conversation) -> Turn {
    let Some(last) = script.turns.len().checked_sub(1) else {
        return Turn::end_turn(Vec::new());
    };
    let mut turn = script.turns[conv.model_turns_since_user.min(last)].clone();
    let result = conv
        .last_tool_result
        .as_ref()
        .map(|r| r.content.as_str())
        .unwrap_or("");
    for step in &mut turn.steps {
        if let Step::Text(deltas) = step {
            for d in deltas.iter_mut() {
                if d.contains("{tool_result}") {
                    *d = d.replace("{tool_result}", result);
                }
            }
        }
    }
    turn
}

/// Picks the first declared tool among `candidates`, else the first candidate.
fn pick_tool(conv: &Conversation, candidates: &[&str]) -> String {
    candidates
        .iter()
        .find(|c| conv.tools.iter().any(|t| t == *c))
        .unwrap_or(&candidates[0])
        .to_string()
}

const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "bash",
    "shell",
    "run_shell_command",
    "shell_command",
    "Shell",
];
const READ_TOOLS: &[&str] = &["Read", "read_file", "read", "view", "ReadFile"];
const WRITE_TOOLS: &[&str] = &["Write", "write_file", "write", "create", "WriteFile"];

/// `file` resolved against the client's cwd (left relative when the cwd is unknown).
fn in_cwd(conv: &Conversation, file: &str) -> String {
    match &conv.cwd {
        Some(cwd) if !file.starts_with('/') => format!("{}/{file}", cwd.trim_end_matches('/')),
        _ => file.to_string(),
    }
}

fn shell_call(conv: &Conversation, command: &str, description: &str) -> Step {
    Step::ToolCall {
        name: pick_tool(conv, SHELL_TOOLS),
        input: json!({ "command": command, "description": description }),
    }
}

fn builtin_turn(name: &str, conv: &Conversation, settings: &Settings) -> Turn {
    match name {
        "thinking" => Turn::end_turn(vec![
            Step::Thinking(words(THINKING_TEXT)),
            Step::Text(words(AFTER_THINKING_TEXT)),
        ]),
        "tool" => Turn::tool_use(vec![
            Step::Text(words("I will run a command.")),
            shell_call(conv, TOOL_COMMAND, "Print hello"),
        ]),
        "danger" => Turn::tool_use(vec![shell_call(conv, DANGER_COMMAND, "Create a file")]),
        "read" => {
            let name = pick_tool(conv, READ_TOOLS);
            let path = in_cwd(conv, &settings.read_file);
            let input = if name == "Read" {
                json!({ "file_path": path })
            } else {
                json!({ "file_path": path, "absolute_path": path, "path": path })
            };
            Turn::tool_use(vec![Step::ToolCall { name, input }])
        }
        "write" => {
            let name = pick_tool(conv, WRITE_TOOLS);
            let path = in_cwd(conv, &settings.write_file);
            let input = if name == "Write" {
                json!({ "file_path": path, "content": WRITE_CONTENT })
            } else {
                json!({ "file_path": path, "path": path, "content": WRITE_CONTENT })
            };
            Turn::tool_use(vec![Step::ToolCall { name, input }])
        }
        "ask" => Turn::tool_use(vec![Step::ToolCall {
            name: "AskUserQuestion".into(),
            input: json!({ "questions": [{
                "question": "Which color should the mock use?",
                "header": "Color",
                "options": [
                    { "label": "Red", "description": "A warm color" },
                    { "label": "Blue", "description": "A cool color" }
                ],
                "multiSelect": false
            }]}),
        }]),
        "plan" => Turn::tool_use(vec![Step::ToolCall {
            name: "ExitPlanMode".into(),
            input: json!({ "plan": PLAN_TEXT }),
        }]),
        "recall" => {
            let seen: Vec<String> = conv
                .user_texts
                .iter()
                .map(|t| Value::String(t.trim().chars().take(60).collect()).to_string())
                .collect();
            Turn::text(&format!(
                "I received {} messages; user texts seen: [{}]",
                conv.message_count,
                seen.join(", ")
            ))
        }
        "spell" => {
            let latest = conv.latest_user_text.clone().unwrap_or_default();
            let rest = latest
                .split_once("MOCK:spell")
                .map_or("", |(_, rest)| rest)
                .trim();
            let chars: Vec<char> = rest.chars().collect();
            let deltas = chars.chunks(3).map(|c| c.iter().collect()).collect();
            Turn::end_turn(vec![Step::Text(deltas)])
        }
        "slow" => {
            let deltas = (0..settings.slow_deltas)
                .map(|i| {
                    if i + 1 == settings.slow_deltas {
                        format!("word{i}")
                    } else {
                        format!("word{i} ")
                    }
                })
                .collect();
            Turn {
                steps: vec![Step::Text(deltas)],
                stop: StopReason::EndTurn,
                delta_delay: Some(settings.slow_delay),
            }
        }
        "relay-cumulative" => Turn::end_turn(vec![
            Step::Thinking(snapshots(RELAY_THINKING)),
            Step::Text(snapshots(RELAY_TEXT)),
        ]),
        "relay-late" => {
            let mut deltas: Vec<String> = ["He", "Hel", "Hello"].map(String::from).to_vec();
            deltas.extend(snapshots(RELAY_TEXT).into_iter().skip(1));
            Turn::end_turn(vec![Step::Text(deltas)])
        }
        "relay-corrective" => Turn::end_turn(vec![Step::Text(
            [
                "Hello",
                "Hello wrold",
                "Hello world,",
                "Hello world, corrected.",
            ]
            .map(String::from)
            .to_vec(),
        )]),
        "relay-repeat" => Turn::end_turn(vec![Step::Text(
            ["a", "a", " ha", " ha", " ha", "!", "!"]
                .map(String::from)
                .to_vec(),
        )]),
        "midstream" if conv.stream => Turn::end_turn(vec![
            Step::Text(words(HELLO_TEXT)[..1].to_vec()),
            Step::StreamError(ApiError::new(
                ErrorKind::Overloaded,
                "Overloaded (mid-stream)",
            )),
        ]),
        // Every attempt is dropped: streamed ones mid-block after two deltas (which makes Claude
        // Code retry without streaming), non-streamed ones before any answer.
        "cut" => Turn::end_turn(vec![Step::Text(words(HELLO_TEXT)[..2].to_vec()), Step::Cut]),
        // The first block completes, then the connection drops: Claude Code keeps the partial
        // text and fails without retrying. Non-streamed: the whole text.
        "cut-after-block" if conv.stream => Turn::end_turn(vec![
            Step::Text(words(HELLO_TEXT)[..2].to_vec()),
            Step::EndBlock,
            Step::Cut,
        ]),
        // "text", and "midstream"/"cut-after-block" when not streamed.
        _ => Turn::text(HELLO_TEXT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv_with(text: &str) -> Conversation {
        Conversation {
            user_texts: vec![text.to_string()],
            latest_user_text: Some(text.to_string()),
            message_count: 1,
            tools: vec!["Bash".into(), "Read".into(), "Write".into()],
            stream: true,
            ..Conversation::default()
        }
    }

    #[test]
    fn words_round_trip() {
        let w = words("Hello from the mock model.");
        assert_eq!(w, ["Hello ", "from ", "the ", "mock ", "model."]);
        assert_eq!(words("  a  b ").concat(), "  a  b ");
        assert!(words("").is_empty());
    }

    #[test]
    fn marker_parsing() {
        assert_eq!(marker_in("MOCK:tool please"), Some("tool"));
        assert_eq!(marker_in("x MOCK:err401."), Some("err401"));
        assert_eq!(marker_in("MOCK:text then MOCK:slow"), Some("slow"));
        assert_eq!(marker_in("MOCK: nothing"), None);
        assert_eq!(marker_in("no marker"), None);
        assert_eq!(marker_in("MOCK:my-script_2!"), Some("my-script_2"));
    }

    #[test]
    fn selection_prefers_marker_then_default_then_text() {
        let c = conv_with("MOCK:thinking hi");
        assert_eq!(select(&c, Some("tool")), "thinking");
        let c = conv_with("hi");
        assert_eq!(select(&c, Some("tool")), "tool");
        assert_eq!(select(&c, None), "text");
    }

    #[test]
    fn tool_scenario_then_final_text() {
        let settings = Settings::default();
        let scripts = BTreeMap::new();
        let mut c = conv_with("MOCK:tool");
        let Reply::Turn(t) = respond("tool", &c, &settings, &scripts) else {
            panic!("expected a turn");
        };
        assert_eq!(t.stop, StopReason::ToolUse);
        assert!(t.steps.iter().any(|s| matches!(s,
            Step::ToolCall { name, input } if name == "Bash" && input["command"] == TOOL_COMMAND)));
        c.last_tool_result = Some(ToolResult {
            content: "hello\n".into(),
            is_error: false,
        });
        c.model_turns_since_user = 1;
        let Reply::Turn(t) = respond("tool", &c, &settings, &scripts) else {
            panic!("expected a turn");
        };
        assert_eq!(t.full_text(), "Tool finished. Output was: hello");
        assert_eq!(t.stop, StopReason::EndTurn);
    }

    #[test]
    fn plan_final_text_quotes_first_line_only() {
        let mut c = conv_with("MOCK:plan");
        c.last_tool_result = Some(ToolResult {
            content: "User has approved your plan.\n\nSaved to: /h/plans/random-name.md".into(),
            is_error: false,
        });
        let Reply::Turn(t) = respond("plan", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        assert_eq!(
            t.full_text(),
            "Tool finished. Output was: User has approved your plan."
        );
    }

    #[test]
    fn write_uses_cwd() {
        let mut c = conv_with("MOCK:write");
        c.cwd = Some("/w/d/".into());
        let Reply::Turn(t) = respond("write", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!("expected a turn");
        };
        let Step::ToolCall { name, input } = &t.steps[0] else {
            panic!("expected a tool call");
        };
        assert_eq!(name, "Write");
        assert_eq!(input["file_path"], "/w/d/mock-written.txt");
        assert_eq!(input.as_object().map(|o| o.len()), Some(2));
    }

    #[test]
    fn no_tools_gets_side_answer_and_schema_json() {
        let mut c = conv_with("MOCK:tool title please");
        c.tools.clear();
        let r = respond("tool", &c, &Settings::default(), &BTreeMap::new());
        let Reply::Turn(t) = r else { panic!() };
        assert_eq!(t.full_text(), SIDE_REQUEST_TEXT);
        c.output_schema = Some(json!({"type":"object","properties":{"title":{"type":"string"}}}));
        let Reply::Turn(t) = respond("tool", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        let v: Value = serde_json::from_str(&t.full_text()).unwrap();
        assert!(v["title"].is_string());
    }

    #[test]
    fn errors_and_unknown() {
        let c = conv_with("x");
        let s = Settings::default();
        let m = BTreeMap::new();
        for (name, kind) in [
            ("err401", ErrorKind::Authentication),
            ("err429", ErrorKind::RateLimit),
            ("err500", ErrorKind::Server),
            ("err529", ErrorKind::Overloaded),
        ] {
            assert!(matches!(respond(name, &c, &s, &m), Reply::Error(e) if e.kind == kind));
        }
        let Reply::Error(e) = respond("nope", &c, &s, &m) else {
            panic!()
        };
        assert_eq!(e.kind, ErrorKind::InvalidRequest);
        assert!(e.message.contains("nope") && e.message.contains("midstream"));
    }

    #[test]
    fn midstream_and_cut_only_break_streams() {
        let s = Settings::default();
        let m = BTreeMap::new();
        let mut c = conv_with("MOCK:midstream");
        let Reply::Turn(t) = respond("midstream", &c, &s, &m) else {
            panic!()
        };
        assert!(matches!(t.steps.last(), Some(Step::StreamError(_))));
        let Reply::Turn(t) = respond("cut", &c, &s, &m) else {
            panic!()
        };
        assert_eq!(t.steps.last(), Some(&Step::Cut));
        let Reply::Turn(t) = respond("cut-after-block", &c, &s, &m) else {
            panic!()
        };
        assert_eq!(&t.steps[1..], [Step::EndBlock, Step::Cut]);
        c.stream = false;
        let Reply::Turn(t) = respond("cut", &c, &s, &m) else {
            panic!()
        };
        assert_eq!(t.steps.last(), Some(&Step::Cut));
        for name in ["midstream", "cut-after-block"] {
            let Reply::Turn(t) = respond(name, &c, &s, &m) else {
                panic!()
            };
            assert_eq!(t.full_text(), HELLO_TEXT);
        }
    }

    #[test]
    fn relay_scenarios_stream_snapshots_and_repetitions() {
        let c = conv_with("MOCK:relay-cumulative");
        let (s, m) = (Settings::default(), BTreeMap::new());
        let Reply::Turn(t) = respond("relay-cumulative", &c, &s, &m) else {
            panic!()
        };
        let Step::Text(deltas) = &t.steps[1] else {
            panic!()
        };
        assert_eq!(deltas.last().map(String::as_str), Some(RELAY_TEXT));
        assert!(deltas.windows(2).all(|w| w[1].starts_with(w[0].as_str())));
        let Reply::Turn(t) = respond("relay-repeat", &c, &s, &m) else {
            panic!()
        };
        assert_eq!(t.full_text(), RELAY_REPEAT_TEXT);
        let Reply::Turn(t) = respond("relay-late", &c, &s, &m) else {
            panic!()
        };
        let Step::Text(deltas) = &t.steps[0] else {
            panic!()
        };
        assert_eq!(&deltas[..4], ["He", "Hel", "Hello", "Hello from "]);
        assert_eq!(deltas.last().map(String::as_str), Some(RELAY_TEXT));
        for (name, message) in [
            ("relay-err401", RELAY_401_MESSAGE),
            ("relay-err529", RELAY_529_MESSAGE),
        ] {
            assert!(matches!(respond(name, &c, &s, &m), Reply::Error(e) if e.message == message));
        }
    }

    #[test]
    fn recall_lists_messages_and_texts() {
        let mut c = conv_with("MOCK:recall second");
        c.user_texts.insert(0, "first \"q\"".into());
        c.message_count = 4;
        let Reply::Turn(t) = respond("recall", &c, &Settings::default(), &BTreeMap::new()) else {
            panic!()
        };
        assert_eq!(
            t.full_text(),
            r#"I received 4 messages; user texts seen: ["first \"q\"", "MOCK:recall second"]"#
        );
    }

    #[test]
    fn scripts_follow_model_turns() {
        let mut scripts = BTreeMap::new();
        scripts.insert(
            "two".to_string(),
            Script {
                turns: vec![
                    Turn::tool_use(vec![Step::ToolCall {
                        name: "Bash".into(),
                        input: json!({"command": "true"}),
                    }]),
                    Turn::end_turn(vec![Step::Text(vec!["got: {tool_result}".into()])]),
                ],
            },
        );
        let mut c = conv_with("MOCK:two");
        let Reply::Turn(t) = respond("two", &c, &Settings::default(), &scripts) else {
            panic!()
        };
        assert_eq!(t.stop, StopReason::ToolUse);
        c.model_turns_since_user = 3;
        c.last_tool_result = Some(ToolResult {
            content: "ok".into(),
            is_error: false,
        });
        let Reply::Turn(t) = respond("two", &c, &Settings::default(), &scripts) else {
            panic!()
        };
        assert_eq!(t.full_text(), "got: ok");
    }
}
