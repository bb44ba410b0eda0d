//! `getSession` and `listSessions` for ACP agents. `getSession`: a conversation's history as
//! the agent replays it on
//! `session/load`, in the rows of the plugin's `getSession` reply (Claude Code's transcript
//! entries: `type` `user`/`assistant`, `message.content` blocks `text`, `thinking`,
//! `tool_use`, `tool_result`), which is also what `bridge acp <provider>` replays on its own
//! `session/load`.
//!
//! The bridge starts the agent, runs the handshake with `session/load` of the session in its
//! directory (never `session/resume`, which replays nothing), folds the replayed
//! `session/update`s into rows ([`Transcript`]) and closes the agent; no prompt is sent. Tool
//! calls are named as the live stream names them: the updates go through the turn's own
//! [`AcpNormalizer`].
//!
//! Only for providers whose `session/load` keeps the conversation intact
//! ([`AcpProvider::resume_broken`] is refused before anything runs).
//!
//! `listSessions`: the agent's own `session/list` (every page, filtered by `cwd` where one is
//! given), asked of an agent started without a session ([`AcpSession::connect`]), as
//! [`SessionSummary`]s newest first.

use std::time::Duration;

use bridge_core::event::Event;
use bridge_core::normalize::str_at;
use bridge_core::query::{QueryError, QueryReply, QueryRequest, SessionSummary};
use bridge_core::request::Request;
use bridge_core::turn::{TurnContext, TurnLimits};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::normalize::AcpNormalizer;
use crate::{AcpProvider, AcpSession};

/// The rows of a replayed conversation, built one `session/update` at a time. Pure.
///
/// ```
/// use serde_json::json;
/// let mut transcript = bridge_acp::history::Transcript::default();
/// for update in [
///     json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
///     json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
///     json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
/// ] {
///     transcript.push(&update);
/// }
/// let rows = transcript.finish();
/// assert_eq!(rows[0]["type"], "user");
/// assert_eq!(rows[0]["message"]["content"][0]["text"], "hi");
/// assert_eq!(rows[1]["message"]["content"][0]["text"], "Hello");
/// ```
#[derive(Debug, Default)]
pub struct Transcript {
    rows: Vec<Value>,
    /// The row being built: its role and blocks.
    open: Option<(&'static str, Vec<Value>)>,
    normalizer: AcpNormalizer,
}

impl Transcript {
    /// A transcript of an agent whose tools without a `kind` have these kinds by name (see
    /// [`AcpProvider::tool_kinds`]).
    pub fn with_tool_kinds(kinds: &'static [(&'static str, bridge_core::event::ToolKind)]) -> Self {
        Transcript {
            normalizer: AcpNormalizer::new().with_tool_kinds(kinds),
            ..Transcript::default()
        }
    }

    /// Adds one replayed update (the `update` of a `session/update`).
    pub fn push(&mut self, update: &Value) {
        if str_at(update, "sessionUpdate") == Some("user_message_chunk") {
            // A new user message: what the agent did before it is complete.
            self.flush_tools();
            if let Some(text) = chunk_text(update) {
                self.append("user", "text", text);
            }
            return;
        }
        let mut events = Vec::new();
        self.normalizer
            .update(&json!({ "update": update }), &mut events);
        self.events(events);
    }

    /// The rows, oldest first (pending tool calls announced).
    pub fn finish(mut self) -> Vec<Value> {
        self.flush_tools();
        self.close_row();
        self.rows
    }

    fn flush_tools(&mut self) {
        let mut events = Vec::new();
        self.normalizer.flush(&mut events);
        self.events(events);
        // Tool bookkeeping is per turn; a new user message starts one.
        self.normalizer.begin_turn();
    }

    fn events(&mut self, events: Vec<Event>) {
        for event in events {
            match event {
                Event::TextDelta { text } | Event::Text { text } => {
                    self.append("assistant", "text", &text);
                }
                Event::ThinkingDelta { text } => self.append("assistant", "thinking", &text),
                Event::BlockReset => self.close_row(),
                Event::ToolUse(call) => {
                    let block = json!({"type": "tool_use", "id": call.id, "name": call.name,
                                       "input": call.input});
                    self.block("assistant", block);
                }
                Event::ToolResult(result) => {
                    let mut block = json!({"type": "tool_result", "tool_use_id": result.tool_use_id,
                                           "content": result.content});
                    if result.is_error {
                        block["is_error"] = json!(true);
                    }
                    self.block("user", block);
                }
                _ => {}
            }
        }
    }

    /// Appends `text` to the open row's last block of `kind`, or starts one.
    fn append(&mut self, role: &'static str, kind: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some((open_role, blocks)) = self.open.as_mut()
            && *open_role == role
            && let Some(last) = blocks.last_mut()
            && last["type"] == kind
            && let Some(Value::String(so_far)) = last.get_mut(kind)
        {
            so_far.push_str(text);
            return;
        }
        self.block(role, json!({"type": kind, kind: text}));
    }

    /// Adds a block to the open row of `role` (a row of the other role is closed first).
    fn block(&mut self, role: &'static str, block: Value) {
        if self.open.as_ref().is_some_and(|(open, _)| *open != role) {
            self.close_row();
        }
        self.open.get_or_insert((role, Vec::new())).1.push(block);
    }

    fn close_row(&mut self) {
        if let Some((role, blocks)) = self.open.take() {
            let n = self.rows.len();
            self.rows.push(json!({
                "type": role,
                "uuid": format!("acp-{n}"),
                "message": {"role": role, "content": blocks},
            }));
        }
    }
}

/// The text of a chunk's `content` (a `text` block).
fn chunk_text(update: &Value) -> Option<&str> {
    let content = update.get("content")?;
    (str_at(content, "type") == Some("text"))
        .then(|| str_at(content, "text"))
        .flatten()
}

/// The history of `provider`'s session `session_id` in `cwd` (see the [module docs](self)),
/// under `deadline`: rows, none when the agent replayed nothing.
pub async fn read_history(
    provider: &'static AcpProvider,
    program: std::path::PathBuf,
    session_id: &str,
    cwd: &str,
    deadline: Duration,
) -> Result<Vec<Value>, QueryError> {
    if let Some(why) = provider.resume_broken {
        return Err(QueryError::Failed(format!(
            "{} cannot read a session back over ACP: {why}",
            provider.id()
        )));
    }
    let mut request = Request::from_prompt("(getSession)");
    request.session_id = Some(session_id.to_string());
    request.cwd = Some(cwd.into());
    let mut launch = crate::launch(provider, program, &request);
    launch.config.handshake_timeout = launch.config.handshake_timeout.min(deadline);
    launch.config.keep_history = true;
    // The handshake's events (status, warnings) are not the reply.
    let (events, mut drain) = tokio::sync::mpsc::channel(64);
    let drained = tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let ctx = TurnContext::new(events, CancellationToken::new(), TurnLimits::default());
    let started = tokio::time::timeout(
        deadline,
        AcpSession::start(&launch.command, launch.config, &ctx),
    )
    .await;
    let result = match started {
        Err(_) => Err(QueryError::Failed(format!(
            "{} did not load session {session_id} within {} s",
            provider.id(),
            deadline.as_secs()
        ))),
        Ok(Err(info)) => Err(QueryError::Failed(
            info.map_or_else(|| "stopped".to_string(), |i| i.message),
        )),
        Ok(Ok(mut session)) => {
            let rows = session.take_history();
            session.close(ctx.limits).await;
            Ok(rows)
        }
    };
    drop(ctx);
    let _ = drained.await;
    result
}

/// At most this many `session/list` pages are read (an agent whose cursor never ends is cut
/// there).
pub const MAX_LIST_PAGES: usize = 50;

/// The sessions of one `session/list` answer, as summaries (entries without an id or a cwd
/// are skipped), and its `nextCursor`.
pub fn listed(answer: &Value) -> (Vec<SessionSummary>, Option<String>) {
    let sessions = answer
        .get("sessions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            Some(SessionSummary {
                session_id: str_at(entry, "sessionId")?.to_string(),
                cwd: str_at(entry, "cwd")?.to_string(),
                title: str_at(entry, "title").and_then(SessionSummary::title_of),
                updated_at: str_at(entry, "updatedAt").map(str::to_string),
            })
        })
        .collect();
    let next = str_at(answer, "nextCursor")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    (sessions, next)
}

/// The sessions `provider`'s agent lists (see the [module docs](self)), those of `cwd` only
/// where given, newest first, under `deadline`.
pub async fn list_sessions(
    provider: &'static AcpProvider,
    program: std::path::PathBuf,
    cwd: Option<&str>,
    deadline: Duration,
) -> Result<Vec<SessionSummary>, QueryError> {
    // The agent runs where the bridge does: `cwd` is the list's filter, and may not exist. The
    // bridge starts its sessions in resolved directories, so the agents recorded those.
    let resolved = |path: &str| {
        std::fs::canonicalize(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.to_string())
    };
    let cwd = cwd.map(resolved);
    let cwd = cwd.as_deref();
    let request = Request::from_prompt("(listSessions)");
    let mut launch = crate::launch(provider, program, &request);
    launch.config.handshake_timeout = launch.config.handshake_timeout.min(deadline);
    let (events, mut drain) = tokio::sync::mpsc::channel(64);
    let drained = tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let ctx = TurnContext::new(events, CancellationToken::new(), TurnLimits::default());
    let listing = async {
        let mut agent = AcpSession::connect(&launch.command, launch.config, &ctx)
            .await
            .map_err(|info| {
                QueryError::Failed(info.map_or_else(|| "stopped".to_string(), |i| i.message))
            })?;
        let mut sessions = Vec::new();
        let mut cursor: Option<String> = None;
        let mut outcome = Ok(());
        for _ in 0..MAX_LIST_PAGES {
            let mut params = serde_json::Map::new();
            if let Some(cwd) = cwd {
                params.insert("cwd".into(), json!(cwd));
            }
            if let Some(cursor) = &cursor {
                params.insert("cursor".into(), json!(cursor));
            }
            match agent
                .call(&ctx, "session/list", Value::Object(params))
                .await
            {
                Ok(answer) => {
                    let (page, next) = listed(&answer);
                    sessions.extend(page);
                    match next {
                        Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                        _ => break,
                    }
                }
                Err(info) => {
                    outcome = Err(QueryError::Failed(
                        info.map_or_else(|| "stopped".to_string(), |i| i.message),
                    ));
                    break;
                }
            }
        }
        agent.close(ctx.limits).await;
        outcome.map(|()| sessions)
    };
    let result = match tokio::time::timeout(deadline, listing).await {
        Ok(result) => result,
        Err(_) => Err(QueryError::Failed(format!(
            "{} did not list its sessions within {} s",
            provider.id(),
            deadline.as_secs()
        ))),
    };
    drop(ctx);
    let _ = drained.await;
    let mut sessions = result?;
    if let Some(cwd) = cwd {
        // An agent that does not filter by itself.
        sessions.retain(|s| resolved(&s.cwd) == cwd);
    }
    // Newest first (ISO 8601 times sort as text; undated ones last).
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    Ok(sessions)
}

/// The `listSessions < {cwd?}` reply for `provider`: `{"sessions": [...]}`.
pub async fn answer_list(
    provider: &'static AcpProvider,
    request: QueryRequest,
) -> Result<QueryReply, QueryError> {
    let cwd = request.cwd_filter()?;
    let env = sdk_probe::ProbeEnv::from_process();
    let located = sdk_probe::locate(&provider.probe, &env).map_err(QueryError::Failed)?;
    let sessions = list_sessions(
        provider,
        located.resolved.path.clone(),
        cwd.as_deref(),
        request.deadline,
    )
    .await?;
    let mut body = Map::new();
    body.insert("sessions".into(), json!(sessions));
    Ok(QueryReply::success(body))
}

/// The `getSession <sessionId> <cwd>` reply for `provider`: `{"messages": rows}`.
pub async fn answer(
    provider: &'static AcpProvider,
    request: QueryRequest,
) -> Result<QueryReply, QueryError> {
    let (session_id, cwd) = request.session_and_cwd()?;
    let env = sdk_probe::ProbeEnv::from_process();
    let located = sdk_probe::locate(&provider.probe, &env).map_err(QueryError::Failed)?;
    let rows = read_history(
        provider,
        located.resolved.path.clone(),
        session_id,
        cwd,
        request.deadline,
    )
    .await?;
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(rows));
    Ok(QueryReply::success(body))
}

/// Declares `getSession` for an ACP provider: `get_session_query!(PROVIDER)` is a
/// [`bridge_core::query::Query`] answered by [`answer`].
#[macro_export]
macro_rules! get_session_query {
    ($provider:path) => {
        bridge_core::query::Query::new(
            "getSession",
            bridge_core::query::Input::Args(&["sessionId", "cwd"]),
            "the messages of a session, as the agent replays it on session/load",
            |request| Box::pin($crate::history::answer(&$provider, request)),
        )
        .error_tag("[GET_SESSION_ERROR]")
    };
}

/// Declares `listSessions` for an ACP provider: `list_sessions_query!(PROVIDER)` is a
/// [`bridge_core::query::Query`] answered by [`answer_list`].
#[macro_export]
macro_rules! list_sessions_query {
    ($provider:path) => {
        bridge_core::query::Query::new(
            "listSessions",
            bridge_core::query::Input::StdinJson,
            "the sessions the agent lists (session/list; optional {\"cwd\"}: of that directory), newest first",
            |request| Box::pin($crate::history::answer_list(&$provider, request)),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(updates: &[Value]) -> Vec<Value> {
        let mut transcript = Transcript::default();
        for update in updates {
            transcript.push(update);
        }
        transcript.finish()
    }

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    #[test]
    fn turns_with_thoughts_and_a_tool_become_claude_shaped_rows() {
        let rows = rows_of(&[
            chunk("user_message_chunk", "run it"),
            chunk("agent_thought_chunk", "I should "),
            chunk("agent_thought_chunk", "run it"),
            chunk("agent_message_chunk", "Running."),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "echo hello",
                   "kind": "execute", "status": "pending", "rawInput": {"command": "echo hello"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "hello"}}]}),
            chunk("agent_message_chunk", "It said hello."),
            chunk("user_message_chunk", "thanks"),
            chunk("agent_message_chunk", "You are welcome."),
        ]);
        let shape: Vec<(String, Vec<String>)> = rows
            .iter()
            .map(|row| {
                let kinds = row["message"]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b["type"].as_str().unwrap().to_string())
                    .collect();
                (row["type"].as_str().unwrap().to_string(), kinds)
            })
            .collect();
        let expect = |role: &str, kinds: &[&str]| {
            (
                role.to_string(),
                kinds.iter().map(|k| k.to_string()).collect(),
            )
        };
        assert_eq!(
            shape,
            [
                expect("user", &["text"]),
                expect("assistant", &["thinking", "text", "tool_use"]),
                expect("user", &["tool_result"]),
                expect("assistant", &["text"]),
                expect("user", &["text"]),
                expect("assistant", &["text"]),
            ]
        );
        let content = |row: usize, block: usize| &rows[row]["message"]["content"][block];
        assert_eq!(content(1, 0)["thinking"], "I should run it");
        assert_eq!(content(1, 2)["name"], "Bash");
        assert_eq!(content(1, 2)["input"]["command"], "echo hello");
        assert_eq!(content(2, 0)["tool_use_id"], content(1, 2)["id"]);
        assert_eq!(content(2, 0)["content"], "hello");
        assert_eq!(content(3, 0)["text"], "It said hello.");
        assert_eq!(content(4, 0)["text"], "thanks");
    }

    #[test]
    fn a_failed_call_is_an_error_result_and_a_pending_one_is_still_listed() {
        let rows = rows_of(&[
            chunk("user_message_chunk", "go"),
            json!({"sessionUpdate": "tool_call", "toolCallId": "a", "title": "rm x",
                   "kind": "execute", "status": "pending", "rawInput": {"command": "rm x"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "failed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "denied"}}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "b", "title": "ls",
                   "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}}),
        ]);
        let blocks: Vec<&Value> = rows
            .iter()
            .flat_map(|r| r["message"]["content"].as_array().unwrap())
            .collect();
        let result = blocks.iter().find(|b| b["type"] == "tool_result").unwrap();
        assert_eq!(result["is_error"], true);
        let calls: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["input"]["command"].as_str().unwrap())
            .collect();
        assert_eq!(calls, ["rm x", "ls"]);
    }

    #[test]
    fn a_list_page_becomes_summaries_and_its_cursor() {
        let (sessions, next) = listed(&json!({"sessions": [
            {"sessionId": "a", "cwd": "/w", "title": "fix\nthe   test", "updatedAt": "2026-12-04T10:00:00Z"},
            {"sessionId": "b", "cwd": "/w"},
            {"cwd": "/w", "title": "no id"},
            {"sessionId": "c"}
        ], "nextCursor": "p2"}));
        assert_eq!(
            sessions,
            [
                SessionSummary {
                    session_id: "a".into(),
                    cwd: "/w".into(),
                    title: Some("fix the test".into()),
                    updated_at: Some("2026-12-04T10:00:00Z".into()),
                },
                SessionSummary {
                    session_id: "b".into(),
                    cwd: "/w".into(),
                    title: None,
                    updated_at: None,
                },
            ]
        );
        assert_eq!(next.as_deref(), Some("p2"));
        assert_eq!(listed(&json!({"sessions": [], "nextCursor": ""})).1, None);
        assert!(listed(&json!({})).0.is_empty());
    }

    #[test]
    fn nothing_replayed_is_no_rows_and_other_updates_are_skipped() {
        assert!(rows_of(&[]).is_empty());
        let rows = rows_of(&[
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "image", "data": "x"}}),
        ]);
        assert!(rows.is_empty(), "{rows:?}");
    }
}
