//! Queries answered by one stream-json control request to a Claude Code process started for
//! them: `getContextUsage` (`get_context_usage`), `getUsage` (`get_usage`) and `rewindFiles`
//! (`rewind_files`), besides the model list's `initialize` ([`crate::models`]).
//!
//! The bridge starts `claude --input-format stream-json --output-format stream-json
//! --verbose [--resume <sessionId>] [--model <m>]` in the conversation's cwd, writes the control
//! request and closes stdin. Claude Code answers with a `control_response` carrying the request
//! id and exits; no model turn runs. A resumed session that does not exist makes it print why
//! and end with an error `result` instead, which the query reports.

use std::path::PathBuf;

use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::query::{Input, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

/// The environment variable that makes Claude Code keep file checkpoints outside its
/// interactive UI (what the Agent SDK's `enableFileCheckpointing` sets); `rewind_files` needs
/// them.
pub const FILE_CHECKPOINTING_ENV: &str = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING";

/// The id the bridge gives the control request of a query.
const REQUEST_ID: &str = "bridge-query";

/// `getContextUsage`, `getUsage` and `rewindFiles`.
pub const QUERIES: [Query; 3] = [
    Query::new(
        bridge_core::query::CONTEXT_USAGE,
        Input::StdinJson,
        "how full a conversation's context window is ({sessionId?, cwd?, model?} on stdin)",
        get_context_usage,
    ),
    Query::new(
        bridge_core::query::USAGE,
        Input::StdinJson,
        "what a warm conversation has spent (daemon sessions only)",
        get_usage,
    ),
    Query::new(
        "rewindFiles",
        Input::StdinJson,
        "restores the files Claude changed since a user message ({sessionId, userMessageId, cwd} on stdin)",
        rewind_files,
    )
    .error_tag("[REWIND_ERROR]"),
];

/// One stream-json control request line (with its newline).
pub fn request_line(request_id: &str, request: &Value) -> String {
    let line = json!({"type": "control_request", "request_id": request_id, "request": request});
    format!("{line}\n")
}

/// The answer to the control request `request_id` in Claude Code's stdout: the `response` of
/// its successful `control_response`, or why there is none (a refusal, a resumed session that
/// does not exist, no answer at all).
pub fn find_response(stdout: &str, request_id: &str) -> Result<Value, String> {
    let mut said = None;
    for line in stdout.lines() {
        let Ok(mut value) = serde_json::from_str::<Value>(line) else {
            if !line.trim().is_empty() {
                said = Some(line.trim().to_string());
            }
            continue;
        };
        if value["type"] == "result" && value["is_error"] == true && said.is_none() {
            said = value["result"].as_str().map(str::to_string);
        }
        if value["type"] != "control_response" || value["response"]["request_id"] != request_id {
            continue;
        }
        let response = &mut value["response"];
        if response["subtype"] != "success" {
            let why = response["error"].as_str().unwrap_or("no reason given");
            return Err(format!("Claude Code refused it: {why}"));
        }
        return Ok(response["response"].take());
    }
    Err(match said {
        Some(text) => format!("Claude Code did not answer: {text}"),
        None => "Claude Code did not answer".into(),
    })
}

/// What a control query runs against.
#[derive(Debug, Default)]
pub struct Target {
    /// The conversation to resume, if any.
    pub session_id: Option<String>,
    /// Where Claude Code runs (the conversation's project).
    pub cwd: Option<PathBuf>,
    /// The model (it sets the context window).
    pub model: Option<String>,
    /// Variables for the CLI.
    pub env: Vec<(&'static str, &'static str)>,
}

/// A string field of the query's stdin object (absent, `null` or blank is `None`; another
/// type is an error).
fn field(request: &QueryRequest, name: &str) -> Result<Option<String>, QueryError> {
    match request.stdin.as_ref().and_then(|s| s.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(QueryError::Invalid(format!("`{name}` must be a string"))),
    }
}

/// A required string field.
fn required(request: &QueryRequest, name: &str) -> Result<String, QueryError> {
    field(request, name)?.ok_or_else(|| {
        QueryError::Invalid(format!(
            "{name} is required (a JSON object on stdin with `{name}`)"
        ))
    })
}

impl Target {
    /// The target the query's stdin names: `sessionId` (checked as `send` checks it), `cwd`
    /// (an existing directory), `model`; `need_session` makes the session id required.
    pub fn of(request: &QueryRequest, need_session: bool) -> Result<Target, QueryError> {
        let session_id = if need_session {
            Some(required(request, "sessionId")?)
        } else {
            field(request, "sessionId")?
        };
        if let Some(id) = &session_id {
            bridge_core::request::check_session_id(id)
                .map_err(|e| QueryError::Invalid(e.to_string()))?;
        }
        let cwd = field(request, "cwd")?.map(PathBuf::from);
        if let Some(dir) = &cwd
            && !dir.is_dir()
        {
            return Err(QueryError::Invalid(format!(
                "cwd {} is not a directory",
                dir.display()
            )));
        }
        Ok(Target {
            session_id,
            cwd,
            model: field(request, "model")?,
            env: Vec::new(),
        })
    }
}

/// Sends `request` (a control request body) to a Claude Code process started for `target` and
/// returns its answer, under `deadline`.
pub async fn ask(
    target: &Target,
    request: &Value,
    deadline: std::time::Duration,
) -> Result<(Value, Vec<String>), QueryError> {
    let located = crate::resolve_cli().map_err(QueryError::Failed)?;
    let mut command = CommandSpec::new(located.resolved.path);
    for arg in crate::STREAM_JSON_ARGS {
        command.arg(arg);
    }
    if let Some(id) = &target.session_id {
        command.arg("--resume").arg(id);
    }
    if let Some(model) = &target.model {
        command.arg("--model").arg(model);
    }
    for (key, value) in &target.env {
        command.env(key, value);
    }
    command.cwd = target.cwd.clone();
    command.stdin = StdinMode::Piped;
    let input = request_line(REQUEST_ID, request);
    let output =
        bridge_core::query::run_cli("Claude Code", &command, input.as_bytes(), deadline).await?;
    let subtype = request["subtype"].as_str().unwrap_or("control");
    let answer = find_response(&output.stdout, REQUEST_ID).map_err(|why| {
        let tail = output.stderr.lines().rfind(|l| !l.trim().is_empty());
        QueryError::Failed(match tail {
            Some(tail) => format!("{subtype}: {why} ({})", tail.trim()),
            None => format!("{subtype}: {why}"),
        })
    })?;
    Ok((answer, located.warnings.into_iter().collect()))
}

/// `{"success":true,"data":<answer>}`, the shape the plugin's daemon client reads.
pub fn data_reply(answer: Value) -> QueryReply {
    let mut fields = Map::new();
    fields.insert("data".into(), answer);
    QueryReply::success(fields)
}

fn get_context_usage(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let target = Target::of(&request, false)?;
        let (answer, notes) = ask(
            &target,
            &json!({"subtype": "get_context_usage"}),
            request.deadline,
        )
        .await?;
        Ok(data_reply(answer).with_notes(notes))
    })
}

/// Why `getUsage` has no per-process answer.
pub const USAGE_NEEDS_A_WARM_SESSION: &str = "getUsage reports what a running Claude Code process has spent; a process started for the query has spent nothing, so only a warm daemon session of that sessionId can answer";

fn get_usage(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        Target::of(&request, false)?;
        Err(QueryError::Failed(USAGE_NEEDS_A_WARM_SESSION.into()))
    })
}

/// What Claude Code says when the message has no checkpoint of its own.
const NO_CHECKPOINT: &str = "No file checkpoint found";

/// The prompt of `message_id`'s turn that has a checkpoint, read from the session file, when
/// it is another entry than `message_id` itself.
async fn checkpointed_prompt(target: &Target, message_id: &str) -> Option<String> {
    let env = sdk_probe::ProbeEnv::from_process();
    let dir = crate::history::config_dir(&env)?;
    let cwd = std::fs::canonicalize(target.cwd.as_ref()?).ok()?;
    let file = crate::history::session_file(&dir, cwd.to_str()?, target.session_id.as_ref()?);
    let wanted = message_id.to_string();
    let found = tokio::task::spawn_blocking(move || {
        let reader = std::io::BufReader::new(std::fs::File::open(file).ok()?);
        crate::history::checkpointed_prompt(reader, &wanted).ok()?
    })
    .await
    .ok()??;
    (found != message_id).then_some(found)
}

fn rewind_files(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let mut target = Target::of(&request, true)?;
        let asked = required(&request, "userMessageId")?;
        if target.cwd.is_none() {
            return Err(QueryError::Invalid(
                "cwd is required (the project the session belongs to)".into(),
            ));
        }
        target.env.push((FILE_CHECKPOINTING_ENV, "true"));
        let rewind = |id: &str| json!({"subtype": "rewind_files", "user_message_id": id});
        let started = std::time::Instant::now();
        let mut message_id = asked.clone();
        let mut notes = Vec::new();
        let (answer, warnings) = match ask(&target, &rewind(&asked), request.deadline).await {
            // The plugin may name another entry of the turn (an answer, a tool result): the
            // checkpoint is its prompt's.
            Err(QueryError::Failed(why)) if why.contains(NO_CHECKPOINT) => {
                let Some(prompt) = checkpointed_prompt(&target, &asked).await else {
                    return Err(QueryError::Failed(why));
                };
                notes.push(format!(
                    "message {asked} has no checkpoint of its own; rewinding to the prompt of its turn, {prompt}"
                ));
                let left = request.deadline.saturating_sub(started.elapsed());
                message_id = prompt;
                ask(&target, &rewind(&message_id), left).await?
            }
            other => other?,
        };
        notes.extend(warnings);
        if answer["canRewind"] == false {
            let why = answer["error"]
                .as_str()
                .unwrap_or("Claude Code cannot rewind");
            return Err(QueryError::Failed(why.to_string()));
        }
        let mut fields = Map::new();
        fields.insert("message".into(), json!("Files restored successfully"));
        fields.insert("sessionId".into(), json!(target.session_id));
        fields.insert("targetMessageId".into(), json!(message_id));
        for key in ["filesChanged", "insertions", "deletions"] {
            if let Some(value) = answer.get(key) {
                fields.insert(key.into(), value.clone());
            }
        }
        Ok(QueryReply::success(fields).with_notes(notes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_the_response_of_the_matching_control_response() {
        let stdout = [
            json!({"type": "control_response", "response": {"subtype": "success",
                   "request_id": "other", "response": {"x": 1}}})
            .to_string(),
            "not json".into(),
            json!({"type": "control_response", "response": {"subtype": "success",
                   "request_id": REQUEST_ID, "response": {"totalTokens": 100}}})
            .to_string(),
        ]
        .join("\n");
        assert_eq!(
            find_response(&stdout, REQUEST_ID).unwrap(),
            json!({"totalTokens": 100})
        );
    }

    #[test]
    fn a_refusal_or_a_missing_session_is_an_error_saying_why() {
        let refused = json!({"type": "control_response", "response": {"subtype": "error",
            "request_id": REQUEST_ID, "error": "No file checkpoint found for message m"}});
        assert_eq!(
            find_response(&refused.to_string(), REQUEST_ID).unwrap_err(),
            "Claude Code refused it: No file checkpoint found for message m"
        );
        let missing = format!(
            "No conversation found with session ID: abc\n{}\n",
            json!({"type": "result", "subtype": "error_during_execution", "is_error": true})
        );
        assert_eq!(
            find_response(&missing, REQUEST_ID).unwrap_err(),
            "Claude Code did not answer: No conversation found with session ID: abc"
        );
        assert_eq!(
            find_response("", REQUEST_ID).unwrap_err(),
            "Claude Code did not answer"
        );
    }

    fn request(stdin: Value) -> QueryRequest {
        QueryRequest {
            provider: crate::ID,
            query: "test",
            args: Vec::new(),
            stdin: stdin.as_object().cloned(),
            deadline: std::time::Duration::from_secs(1),
        }
    }

    #[test]
    fn the_target_is_checked_before_any_cli_runs() {
        let bad = |stdin: Value, need: bool| Target::of(&request(stdin), need).unwrap_err();
        assert_eq!(
            bad(json!({"sessionId": "../x"}), false),
            QueryError::Invalid(bridge_core::request::RequestError::BadSessionId.to_string())
        );
        assert!(
            matches!(bad(json!({}), true), QueryError::Invalid(m) if m.starts_with("sessionId is required"))
        );
        assert!(
            matches!(bad(json!({"cwd": "/no/such/dir"}), false), QueryError::Invalid(m) if m.contains("not a directory"))
        );
        assert!(
            matches!(bad(json!({"model": 3}), false), QueryError::Invalid(m) if m.contains("must be a string"))
        );
        let ok = Target::of(
            &request(json!({"sessionId": "abc", "cwd": "/", "model": " "})),
            true,
        )
        .unwrap();
        assert_eq!(ok.session_id.as_deref(), Some("abc"));
        assert_eq!(ok.model, None);
    }
}
