//! `getSession` and `listSessions` for Codex: a thread's history and the threads Codex keeps,
//! read back from its rollout files under [`crate::codex_home`]
//! ([`bridge_codex::history`]). Codex is not started. The plugin's `getSession` reply shape
//! (Claude-shaped transcript rows) is what `bridge acp codex` replays on `session/load`.

use bridge_codex::history::{list_threads, transcript_of};
use bridge_codex::rollout::find_rollout;
use bridge_core::query::{Input, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

/// `getSession <sessionId> <cwd>`: the thread's rows (none for an unknown thread).
pub const GET_SESSION: Query = Query::new(
    "getSession",
    Input::Args(&["sessionId", "cwd"]),
    "the messages of a thread, from Codex's rollout file",
    get_session,
)
.error_tag("[GET_SESSION_ERROR]");

/// `listSessions < {"cwd"?}`: Codex's threads, newest first.
pub const LIST_SESSIONS: Query = Query::new(
    "listSessions",
    Input::StdinJson,
    "the threads Codex keeps (optional {\"cwd\"}: of that directory), newest first",
    list_sessions,
);

fn home() -> Result<std::path::PathBuf, QueryError> {
    crate::codex_home().ok_or_else(|| {
        QueryError::Failed(
            "cannot find Codex's directory: neither CODEX_HOME nor HOME is set".into(),
        )
    })
}

fn get_session(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        // The thread id names the file; the cwd is checked as the plugin's command has it.
        let (thread, _cwd) = request.session_and_cwd()?;
        let messages = match find_rollout(&home()?, thread) {
            Some(path) => transcript_of(&path)
                .map_err(|e| QueryError::Failed(format!("cannot read {}: {e}", path.display())))?,
            None => Vec::new(),
        };
        let mut body = Map::new();
        body.insert("messages".into(), Value::Array(messages));
        Ok(QueryReply::success(body))
    })
}

fn list_sessions(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let cwd = request.cwd_filter()?;
        let sessions = list_threads(&home()?, cwd.as_deref());
        let mut body = Map::new();
        body.insert("sessions".into(), json!(sessions));
        Ok(QueryReply::success(body))
    })
}
