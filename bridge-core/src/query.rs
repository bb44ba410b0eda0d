//! Query commands: the plugin's commands besides `send` (a conversation's history, the model
//! list, …), which answer with one JSON object instead of a turn.
//!
//! A provider declares its queries as data, [`Query`] values returned by
//! [`crate::Channel::queries`]: a name, what it reads ([`Input`]: positional arguments after the
//! command, or a JSON object on stdin), the stderr tag its errors carry and the function that
//! answers. [`run`] is the one place that turns an answer into what the JetBrains plugin parses
//! (`ai-bridge-protocol.md` §3.4, §7):
//!
//! * stdout: exactly one JSON object, one line, last: the reply (`{"success":true,…}`) or
//!   `{"success":false,"error":"…"}`; a reply may put tagged lines before it (the MCP
//!   queries' `[MCP_SERVER_STATUS]…` line, [`QueryReply::with_stdout_line`]);
//! * stderr: the reply's notes (a corrupt line skipped, say) as `[WARNING] <query>: …` lines,
//!   and a failure once more behind the query's tag (`[GET_SESSION_ERROR] …`) where it has one;
//! * exit code 0 when the JSON line carries the answer, failures included (they are in-band,
//!   as for `send`); 1 with `[COMMAND_ERROR]` on stderr when the command line is wrong
//!   (missing or extra arguments).
//!
//! `listModels` is a query every provider answers: one that declares none gets
//! `{"success":false,"error":"<provider> cannot list its models"}` ([`find`]); the reply's
//! shape is [`ModelList`].

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::channel::Channel;

/// How long a query may take when the command line sets no `--timeout`: below the 50 s the
/// plugin waits for a model list, so the error reaches it.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(45);

/// How long a query that reads stdin waits for its end (the plugin writes the JSON and closes
/// stdin at once; ai-bridge gives up after 5 s too and goes on without it).
pub const STDIN_WAIT: Duration = Duration::from_secs(5);

/// How long past its deadline a query may take to report that the deadline passed.
const OVERRUN: Duration = Duration::from_secs(2);

/// Most of a CLI's stdout a query keeps.
pub const CLI_OUTPUT_CAP: usize = 8 * 1024 * 1024;

/// The name of the model-listing query.
pub const LIST_MODELS: &str = "listModels";

/// What a query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Nothing (stdin is not read).
    Nothing,
    /// Exactly these positional arguments after the command, in this order (their names, for
    /// usage messages).
    Args(&'static [&'static str]),
    /// An optional JSON object on stdin.
    StdinJson,
}

/// The function that answers a query.
pub type QueryFn = fn(QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>>;

/// One query command a provider accepts (see the [module docs](self)).
#[derive(Clone, Copy)]
pub struct Query {
    /// The command name on the command line (`getSession`).
    pub name: &'static str,
    /// What it reads.
    pub input: Input,
    /// One line for command listings.
    pub summary: &'static str,
    /// The stderr tag a failure is also written behind (`[GET_SESSION_ERROR]`), if any.
    pub error_tag: Option<&'static str>,
    /// Answers it.
    pub run: QueryFn,
}

impl Query {
    /// A query without an error tag.
    pub const fn new(
        name: &'static str,
        input: Input,
        summary: &'static str,
        run: QueryFn,
    ) -> Self {
        Query {
            name,
            input,
            summary,
            error_tag: None,
            run,
        }
    }

    /// A provider's `listModels` ([`LIST_MODELS`], reading nothing), answered by `run`.
    pub const fn list_models(summary: &'static str, run: QueryFn) -> Self {
        Query::new(LIST_MODELS, Input::Nothing, summary, run)
    }

    /// The same query, whose failures are also written to stderr behind `tag`.
    pub const fn error_tag(mut self, tag: &'static str) -> Self {
        self.error_tag = Some(tag);
        self
    }

    /// How it is called: `getSession <sessionId> <cwd>`, `listModels`.
    pub fn usage(&self) -> String {
        match self.input {
            Input::Args(names) if !names.is_empty() => {
                let args: Vec<String> = names.iter().map(|n| format!("<{n}>")).collect();
                format!("{} {}", self.name, args.join(" "))
            }
            Input::StdinJson => format!("{} < JSON", self.name),
            _ => self.name.to_string(),
        }
    }
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("name", &self.name)
            .field("input", &self.input)
            .field("error_tag", &self.error_tag)
            .finish_non_exhaustive()
    }
}

/// What a query is asked.
#[derive(Debug, Clone)]
pub struct QueryRequest {
    /// The provider key it runs for (`claude`).
    pub provider: &'static str,
    /// The query's name (`getSession`).
    pub query: &'static str,
    /// The positional arguments, checked against [`Input::Args`].
    pub args: Vec<String>,
    /// The JSON object on stdin ([`Input::StdinJson`]), if one came.
    pub stdin: Option<Map<String, Value>>,
    /// The deadline for everything the query runs (a CLI it spawns included).
    pub deadline: Duration,
}

impl QueryRequest {
    /// The positional argument `index` (empty when absent; [`run`] checks the count first).
    pub fn arg(&self, index: usize) -> &str {
        self.args.get(index).map(String::as_str).unwrap_or_default()
    }

    /// The `<sessionId> <cwd>` of a history query (`getSession`), the id checked as `send`
    /// checks it and the cwd not empty.
    pub fn session_and_cwd(&self) -> Result<(&str, &str), QueryError> {
        let (session_id, cwd) = (self.arg(0), self.arg(1));
        crate::request::check_session_id(session_id)
            .map_err(|e| QueryError::Invalid(e.to_string()))?;
        if cwd.is_empty() {
            return Err(QueryError::Invalid(
                "the cwd argument must not be empty".into(),
            ));
        }
        Ok((session_id, cwd))
    }

    /// The optional `cwd` of a `listSessions` stdin object (absent or null: every directory;
    /// anything but a non-empty string is invalid).
    pub fn cwd_filter(&self) -> Result<Option<String>, QueryError> {
        match self.stdin.as_ref().and_then(|m| m.get("cwd")) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(cwd)) if !cwd.is_empty() => Ok(Some(cwd.clone())),
            Some(_) => Err(QueryError::Invalid("cwd must be a non-empty string".into())),
        }
    }
}

/// A successful answer: one JSON object (with `"success":true`) and notes for stderr.
#[derive(Debug)]
pub struct QueryReply {
    body: Box<RawValue>,
    notes: Vec<String>,
    lines: Vec<String>,
}

impl QueryReply {
    /// `{"success":true, …fields}`.
    pub fn success(fields: Map<String, Value>) -> Self {
        let mut body = Map::new();
        body.insert("success".into(), Value::Bool(true));
        body.extend(fields.into_iter().filter(|(k, _)| k != "success"));
        let body = serde_json::value::to_raw_value(&body).expect("a JSON map serializes");
        QueryReply {
            body,
            notes: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// `body`, serialized as it is: it must be a JSON object with a `success` field (for replies
    /// too large to build as a [`Value`] first, such as a session's messages, and for answers
    /// that report a failure in their own shape, such as an MCP server's tools that could not
    /// be listed: `success` false and the fields the plugin reads).
    pub fn serialized<T: Serialize>(body: &T) -> Result<Self, QueryError> {
        let body = serde_json::value::to_raw_value(body)
            .map_err(|e| QueryError::Failed(format!("cannot serialize the reply: {e}")))?;
        Ok(QueryReply {
            body,
            notes: Vec::new(),
            lines: Vec::new(),
        })
    }

    /// The same reply with `line` written to stdout before its JSON line (a tagged line the
    /// plugin looks for first, such as `[MCP_SERVER_STATUS][…]`). It must not hold a line
    /// break.
    pub fn with_stdout_line(mut self, line: String) -> Self {
        self.lines.push(one_line(&line));
        self
    }

    /// The stdout lines written before the JSON line.
    pub fn stdout_lines(&self) -> &[String] {
        &self.lines
    }

    /// The same reply with `notes` for stderr.
    pub fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes.extend(notes);
        self
    }

    /// The reply's JSON text (one line).
    pub fn json(&self) -> &str {
        self.body.get()
    }

    /// The notes for stderr.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// Why a query failed. Every variant but [`QueryError::Usage`] is answered in-band.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The command line is wrong (missing or extra arguments): exit code 1.
    #[error("{0}")]
    Usage(String),
    /// The input is invalid (a malformed session id, stdin that is not a JSON object).
    #[error("{0}")]
    Invalid(String),
    /// The query could not be answered (a CLI failed or timed out, a file is unreadable).
    #[error("{0}")]
    Failed(String),
    /// The provider cannot do this at all.
    #[error("{provider} cannot {what}")]
    Unsupported {
        /// The provider key.
        provider: String,
        /// What it cannot do (`list its models`).
        what: &'static str,
    },
}

/// What [`run`] produced, for the binary to print.
#[derive(Debug)]
pub struct Outcome {
    /// Stdout lines before the JSON line (without their newlines).
    pub stdout_before: Vec<String>,
    /// The stdout line (one JSON object, without the newline).
    pub stdout: String,
    /// Lines for stderr.
    pub stderr: Vec<String>,
    /// The process exit code.
    pub exit_code: u8,
}

/// The query `name` of `channel`: one it declares, or, for [`LIST_MODELS`] and the usage
/// queries ([`CONTEXT_USAGE`], [`USAGE`]), the answer that it cannot tell.
pub fn find(channel: &dyn Channel, name: &str) -> Option<Query> {
    if let Some(query) = channel.queries().iter().find(|q| q.name == name) {
        return Some(*query);
    }
    [CANNOT_LIST_MODELS, CANNOT_CONTEXT_USAGE, CANNOT_USAGE]
        .into_iter()
        .find(|q| q.name == name)
}

/// The name of the context-window query.
pub const CONTEXT_USAGE: &str = "getContextUsage";

/// The name of the spending query.
pub const USAGE: &str = "getUsage";

const CANNOT_LIST_MODELS: Query =
    Query::list_models("list the models (this provider cannot)", cannot_tell);

const CANNOT_CONTEXT_USAGE: Query = Query::new(
    CONTEXT_USAGE,
    Input::StdinJson,
    "how full the context window is (this provider cannot tell)",
    cannot_tell,
);

const CANNOT_USAGE: Query = Query::new(
    USAGE,
    Input::StdinJson,
    "what a conversation has spent (this provider cannot tell)",
    cannot_tell,
);

/// The answer of a provider that cannot answer the query it was asked.
fn cannot_tell(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    let what = match request.query {
        LIST_MODELS => "list its models",
        CONTEXT_USAGE => "tell how full its context window is",
        USAGE => "tell what a conversation has spent",
        _ => "answer this",
    };
    let provider = request.provider.to_string();
    Box::pin(async move { Err(QueryError::Unsupported { provider, what }) })
}

/// Every command `channel` accepts, for listings: its sends, `session`, then its queries with
/// their arguments (`getSession <sessionId> <cwd>`) and `listModels`.
pub fn command_list(channel: &dyn Channel) -> Vec<String> {
    let mut commands: Vec<String> = channel.commands().iter().map(|c| c.to_string()).collect();
    commands.push("session".into());
    commands.extend(channel.queries().iter().map(Query::usage));
    if !channel.queries().iter().any(|q| q.name == LIST_MODELS) {
        commands.push(LIST_MODELS.into());
    }
    commands
}

#[cfg(test)]
mod fallback_tests {
    use super::*;

    struct Bare;
    impl Channel for Bare {
        fn id(&self) -> &'static str {
            "bare"
        }
        fn display_name(&self) -> &'static str {
            "Bare"
        }
        fn send(
            &self,
            _request: crate::Request,
            _ctx: crate::turn::TurnContext,
        ) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    #[tokio::test]
    async fn a_provider_that_cannot_tell_its_usage_says_so() {
        for (name, error) in [
            (
                CONTEXT_USAGE,
                "bare cannot tell how full its context window is",
            ),
            (USAGE, "bare cannot tell what a conversation has spent"),
        ] {
            let query = find(&Bare, name).unwrap();
            let outcome = run(
                &query,
                "bare",
                Vec::new(),
                Some(&b"{}"[..]),
                Duration::from_secs(1),
            )
            .await;
            assert_eq!(outcome.exit_code, 0);
            assert_eq!(
                serde_json::from_str::<Value>(&outcome.stdout).unwrap(),
                serde_json::json!({"success": false, "error": error})
            );
        }
        assert!(find(&Bare, "getHistory").is_none());
    }
}

/// Runs `query` for `provider` with the positional `args` and, for a query that reads stdin,
/// `stdin` (`None` when stdin is a terminal), under `deadline`; see the [module docs](self)
/// for what the outcome holds.
pub async fn run<R: AsyncRead + Unpin>(
    query: &Query,
    provider: &'static str,
    args: Vec<String>,
    stdin: Option<R>,
    deadline: Duration,
) -> Outcome {
    let answer = async {
        check_args(query, &args)?;
        let stdin = match (query.input, stdin) {
            (Input::StdinJson, Some(stdin)) => read_json_object(stdin, STDIN_WAIT).await?,
            _ => None,
        };
        let request = QueryRequest {
            provider,
            query: query.name,
            args,
            stdin,
            deadline,
        };
        // The query's own deadline fires first, with its own message (a CLI that hung).
        match tokio::time::timeout(deadline + OVERRUN, (query.run)(request)).await {
            Ok(answer) => answer,
            Err(_) => Err(QueryError::Failed(format!(
                "{} did not finish within {}",
                query.name,
                seconds(deadline)
            ))),
        }
    };
    outcome(query, answer.await)
}

fn outcome(query: &Query, answer: Result<QueryReply, QueryError>) -> Outcome {
    match answer {
        Ok(reply) => Outcome {
            stdout_before: reply.lines.clone(),
            stderr: reply
                .notes
                .iter()
                .map(|note| format!("[WARNING] {}: {}", query.name, one_line(note)))
                .collect(),
            stdout: reply.body.get().to_string(),
            exit_code: 0,
        },
        Err(error) => {
            let message = error.to_string();
            let line = serde_json::json!({"success": false, "error": message}).to_string();
            let (tag, exit_code) = match &error {
                QueryError::Usage(_) => (Some("[COMMAND_ERROR]"), 1),
                _ => (query.error_tag, 0),
            };
            Outcome {
                stdout_before: Vec::new(),
                stdout: line,
                stderr: tag
                    .map(|tag| format!("{tag} {}", one_line(&message)))
                    .into_iter()
                    .collect(),
                exit_code,
            }
        }
    }
}

/// `45 s`, `0.3 s`.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

fn check_args(query: &Query, args: &[String]) -> Result<(), QueryError> {
    let expected = match query.input {
        Input::Args(names) => names.len(),
        Input::Nothing | Input::StdinJson => 0,
    };
    if args.len() == expected {
        return Ok(());
    }
    Err(QueryError::Usage(if expected == 0 {
        format!(
            "{} takes no arguments (usage: {})",
            query.name,
            query.usage()
        )
    } else {
        format!(
            "{} takes {expected} argument{} (usage: {}), got {}",
            query.name,
            if expected == 1 { "" } else { "s" },
            query.usage(),
            args.len()
        )
    }))
}

/// Reads stdin to its end (at most [`crate::request::MAX_REQUEST_BYTES`], waiting at most
/// `wait`): nothing, or a stdin that stays open, is `None`; anything else must be one JSON
/// object.
async fn read_json_object<R: AsyncRead + Unpin>(
    stdin: R,
    wait: Duration,
) -> Result<Option<Map<String, Value>>, QueryError> {
    let limit = crate::request::MAX_REQUEST_BYTES as u64;
    let mut bytes = Vec::new();
    let mut reader = stdin.take(limit + 1);
    match tokio::time::timeout(wait, reader.read_to_end(&mut bytes)).await {
        Err(_) => return Ok(None),
        Ok(Err(error)) => return Err(QueryError::Invalid(format!("cannot read stdin: {error}"))),
        Ok(Ok(_)) => {}
    }
    if bytes.len() as u64 > limit {
        return Err(QueryError::Invalid(
            crate::request::RequestError::TooLarge.to_string(),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err(QueryError::Invalid("stdin must be one JSON object".into())),
        Err(error) => Err(QueryError::Invalid(format!(
            "stdin is not valid JSON: {error}"
        ))),
    }
}

/// The text of the file at `path`, or `None` when it does not exist (a CLI not configured
/// yet); any other failure to read it is a [`QueryError::Failed`] naming the file.
pub fn read_optional(path: &std::path::Path) -> Result<Option<String>, QueryError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(QueryError::Failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// What a CLI a query ran printed (lossily decoded).
#[derive(Debug, Clone, Default)]
pub struct CliOutput {
    /// Its stdout, at most [`CLI_OUTPUT_CAP`] bytes.
    pub stdout: String,
    /// Its stderr lines.
    pub stderr: String,
}

/// Runs the CLI `name` (for messages: `pi`) as `spec`, with `input` on its stdin when `spec`
/// pipes it, under `deadline` (then its group is killed), through the process supervisor
/// ([`crate::process::run_captured`]). A CLI that cannot start, passes the deadline or exits
/// unsuccessfully is a [`QueryError::Failed`] naming its exit and its stderr's last lines.
pub async fn run_cli(
    name: &str,
    spec: &crate::process::CommandSpec,
    input: &[u8],
    deadline: Duration,
) -> Result<CliOutput, QueryError> {
    let captured = crate::process::run_captured(spec, input, deadline, CLI_OUTPUT_CAP)
        .await
        .map_err(|e| QueryError::Failed(e.to_string()))?;
    let output = CliOutput {
        stdout: String::from_utf8_lossy(&captured.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&captured.stderr).into_owned(),
    };
    let tail = || {
        let lines: Vec<&str> = output
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        }
    };
    if captured.timed_out {
        return Err(QueryError::Failed(format!(
            "{name} did not finish within {} and was stopped{}",
            seconds(deadline),
            tail()
        )));
    }
    match captured.status {
        Some(status) if status.success() => Ok(output),
        Some(status) => Err(QueryError::Failed(format!(
            "{name} failed ({}){}",
            crate::process::describe_exit(&status),
            tail()
        ))),
        None => Err(QueryError::Failed(format!(
            "{name} could not be waited for"
        ))),
    }
}

/// The reply of `listModels`:
/// `{"success":true,"provider":…,"defaultModel":…,"models":[{"id","label","description"?}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelList {
    /// The provider key.
    pub provider: String,
    /// The model the CLI uses when none is named, when known.
    pub default_model: Option<String>,
    /// The models, in the CLI's order.
    pub models: Vec<ModelInfo>,
}

/// One conversation a provider's `listSessions` query lists (the reply is
/// `{"success":true,"sessions":[…]}`, newest first; `bridge acp` answers `session/list` with it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The provider's id of the conversation (what `getSession` and a resume take).
    pub session_id: String,
    /// The directory it ran in.
    pub cwd: String,
    /// Its first prompt, cut to [`MAX_TITLE_CHARS`] characters on one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When it was last written (ISO 8601, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// The longest [`SessionSummary::title`], in characters.
pub const MAX_TITLE_CHARS: usize = 120;

impl SessionSummary {
    /// `prompt` as a title: its words on one line, cut to [`MAX_TITLE_CHARS`] (`None` when
    /// it has no words).
    pub fn title_of(prompt: &str) -> Option<String> {
        let line = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
        (!line.is_empty()).then(|| line.chars().take(MAX_TITLE_CHARS).collect())
    }
}

/// One model of a [`ModelList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// What to pass as the request's `model`.
    pub id: String,
    /// What to show.
    pub label: String,
    /// More about it, when the CLI says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ModelInfo {
    /// A model whose label is its id.
    pub fn new(id: impl Into<String>) -> Self {
        let id = id.into();
        ModelInfo {
            label: id.clone(),
            id,
            description: None,
        }
    }
}

impl ModelList {
    /// The list of `provider`.
    pub fn new(
        provider: impl Into<String>,
        default_model: Option<String>,
        models: Vec<ModelInfo>,
    ) -> Self {
        ModelList {
            provider: provider.into(),
            default_model,
            models,
        }
    }

    /// The query reply.
    pub fn reply(&self) -> QueryReply {
        self.body(false)
    }

    /// The query reply of a list taken from a cache: the same, with `"cached":true`.
    pub fn cached_reply(&self) -> QueryReply {
        self.body(true)
    }

    fn body(&self, cached: bool) -> QueryReply {
        #[derive(Serialize)]
        struct Body<'a> {
            success: bool,
            #[serde(flatten)]
            list: &'a ModelList,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            cached: bool,
        }
        QueryReply::serialized(&Body {
            success: true,
            list: self,
            cached,
        })
        .expect("a model list serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("args".into(), serde_json::json!(request.args));
            fields.insert("stdin".into(), serde_json::json!(request.stdin));
            Ok(QueryReply::success(fields).with_notes(vec!["line 2\nskipped".into()]))
        })
    }

    const ECHO_ARGS: Query = Query::new("echo", Input::Args(&["a", "b"]), "echo", echo);
    const ECHO_STDIN: Query = Query::new("echo", Input::StdinJson, "echo", echo);
    const FAILS: Query = Query::new("fails", Input::Nothing, "fails", |_| {
        Box::pin(async { Err(QueryError::Invalid("bad id\nreally".into())) })
    })
    .error_tag("[FAILS_ERROR]");
    const HANGS: Query = Query::new("hangs", Input::Nothing, "hangs", |_| {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Err(QueryError::Failed("unreachable".into()))
        })
    });

    async fn go(query: &Query, args: &[&str], stdin: Option<&'static [u8]>) -> Outcome {
        let args = args.iter().map(|a| a.to_string()).collect();
        run(query, "demo", args, stdin, Duration::from_secs(5)).await
    }

    fn json(outcome: &Outcome) -> Value {
        serde_json::from_str(&outcome.stdout).unwrap()
    }

    #[tokio::test]
    async fn a_reply_is_one_json_line_and_its_notes_go_to_stderr() {
        let outcome = go(&ECHO_ARGS, &["x", "y"], None).await;
        assert_eq!(outcome.exit_code, 0);
        assert_eq!(
            outcome.stdout,
            r#"{"success":true,"args":["x","y"],"stdin":null}"#
        );
        assert_eq!(outcome.stderr, ["[WARNING] echo: line 2 skipped"]);
    }

    const TAGGED: Query = Query::new("tagged", Input::Nothing, "tagged", |_| {
        Box::pin(async {
            Ok(QueryReply::success(Map::new()).with_stdout_line("[TAG]{\"a\":\n1}".into()))
        })
    });

    #[tokio::test]
    async fn a_tagged_line_comes_before_the_json_line_and_stays_one_line() {
        let outcome = go(&TAGGED, &[], None).await;
        assert_eq!(outcome.stdout_before, [r#"[TAG]{"a": 1}"#]);
        assert_eq!(outcome.stdout, r#"{"success":true}"#);
        let outcome = go(&FAILS, &[], None).await;
        assert!(
            outcome.stdout_before.is_empty(),
            "a failure has only its JSON line"
        );
    }

    #[tokio::test]
    async fn a_wrong_argument_count_is_a_command_error_with_exit_code_1() {
        let outcome = go(&ECHO_ARGS, &["x"], None).await;
        assert_eq!(outcome.exit_code, 1);
        assert_eq!(json(&outcome)["success"], false);
        assert!(
            outcome.stderr[0]
                .starts_with("[COMMAND_ERROR] echo takes 2 arguments (usage: echo <a> <b>), got 1"),
            "{:?}",
            outcome.stderr
        );
    }

    #[tokio::test]
    async fn a_failure_is_in_band_and_tagged_on_stderr_on_one_line() {
        let outcome = go(&FAILS, &[], None).await;
        assert_eq!(outcome.exit_code, 0);
        assert_eq!(
            json(&outcome),
            serde_json::json!({"success": false, "error": "bad id\nreally"})
        );
        assert_eq!(outcome.stderr, ["[FAILS_ERROR] bad id really"]);
    }

    #[tokio::test]
    async fn stdin_is_an_optional_json_object() {
        let outcome = go(&ECHO_STDIN, &[], Some(br#"{"cwd":"/p"}"#)).await;
        assert_eq!(json(&outcome)["stdin"], serde_json::json!({"cwd": "/p"}));
        let outcome = go(&ECHO_STDIN, &[], Some(b"  \n")).await;
        assert_eq!(json(&outcome)["stdin"], Value::Null);
        let outcome = go(&ECHO_STDIN, &[], Some(b"[1]")).await;
        assert_eq!(json(&outcome)["error"], "stdin must be one JSON object");
        let outcome = go(&ECHO_STDIN, &[], Some(b"{nope")).await;
        assert!(
            json(&outcome)["error"]
                .as_str()
                .unwrap()
                .starts_with("stdin is not valid JSON"),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn the_deadline_ends_a_query_with_an_error() {
        let outcome = run(&HANGS, "demo", Vec::new(), None::<&[u8]>, Duration::ZERO).await;
        assert_eq!(
            json(&outcome)["error"],
            "hangs did not finish within 0 s",
            "{outcome:?}"
        );
    }

    fn sh(script: &str) -> crate::process::CommandSpec {
        let mut spec = crate::process::CommandSpec::new("/bin/sh");
        spec.arg("-c").arg(script);
        spec
    }

    #[tokio::test]
    async fn a_cli_past_its_deadline_is_stopped_and_a_failing_one_reported() {
        let started = std::time::Instant::now();
        let error = run_cli(
            "sleeper",
            &sh("echo starting >&2; sleep 30"),
            &[],
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            error,
            QueryError::Failed(
                "sleeper did not finish within 0.3 s and was stopped: starting".into()
            )
        );
        let error = run_cli(
            "failer",
            &sh("echo boom >&2; exit 3"),
            &[],
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error,
            QueryError::Failed("failer failed (exit code 3): boom".into())
        );
        let mut cat = sh("cat");
        cat.stdin = crate::process::StdinMode::Piped;
        let output = run_cli("cat", &cat, b"echoed", Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(output.stdout, "echoed");
    }

    #[test]
    fn a_model_list_has_the_shape_the_plugin_reads() {
        let list = ModelList {
            provider: "pi".into(),
            default_model: None,
            models: vec![
                ModelInfo::new("a/b"),
                ModelInfo {
                    description: Some("fast".into()),
                    ..ModelInfo::new("c")
                },
            ],
        };
        assert_eq!(
            list.reply().json(),
            r#"{"success":true,"provider":"pi","defaultModel":null,"models":[{"id":"a/b","label":"a/b"},{"id":"c","label":"c","description":"fast"}]}"#
        );
    }
}
