//! `getMcpServerStatus` and `getMcpServerTools` for Claude Code: the MCP servers Claude Code
//! is configured with for the request's `cwd` (its own files, [`global_config`] and
//! `<cwd>/.mcp.json`), each verified by connecting to it ([`bridge_mcp_probe`]).
//!
//! Output, as ai-bridge writes it and the plugin's `ClaudeMcpQueryService` reads it (the tagged
//! line first, the last JSON line as its fallback):
//!
//! * status: `[MCP_SERVER_STATUS][{name,status,serverInfo?,error?}…]` (no space), then
//!   `{"success":true,"servers":[…]}` (plus `configErrors` when a file could not be read);
//! * tools: `[MCP_SERVER_TOOLS] {success,serverId,serverName,tools,error?}` (one space), then
//!   the same object as the JSON line.

use std::path::PathBuf;

use bridge_core::query::{Input, Query, QueryError, QueryReply, QueryRequest};
use bridge_mcp_probe::config::{self, ClaudeFiles, Loaded};
use bridge_mcp_probe::{ServerStatus, ToolsReply};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

/// `getMcpServerStatus` (stdin `{cwd, skipVerify?}`).
pub const STATUS: Query = Query::new(
    "getMcpServerStatus",
    Input::StdinJson,
    "the MCP servers configured for {cwd}, each verified by connecting to it",
    status,
)
.error_tag("[GET_MCP_SERVER_STATUS_ERROR]");

/// `getMcpServerTools` (stdin `{serverId, cwd}`).
pub const TOOLS: Query = Query::new(
    "getMcpServerTools",
    Input::StdinJson,
    "the tools of the MCP server {serverId} configured for {cwd}",
    tools,
)
.error_tag("[GET_MCP_SERVER_TOOLS_ERROR]");

/// Claude Code's global state file, where `claude mcp add` writes user and local servers:
/// `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
pub fn global_config(env: &sdk_probe::ProbeEnv) -> Option<PathBuf> {
    if let Some(dir) = env.var_non_empty("CLAUDE_CONFIG_DIR") {
        return Some(PathBuf::from(dir).join(".claude.json"));
    }
    env.home().map(|home| home.join(".claude.json"))
}

/// The string field `key` of the stdin object (absent or empty: `None`).
fn field<'a>(
    stdin: &'a Option<Map<String, Value>>,
    key: &str,
) -> Result<Option<&'a str>, QueryError> {
    match stdin.as_ref().and_then(|s| s.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(QueryError::Invalid(format!("{key} must be a string"))),
    }
}

/// The configuration for the request's `cwd` (`None`: the user scope only, with a note).
fn load(request: &QueryRequest) -> Result<(Loaded, Vec<String>), QueryError> {
    let mut notes = Vec::new();
    let project = match field(&request.stdin, "cwd")? {
        Some(cwd) => {
            let cwd = PathBuf::from(cwd);
            if !cwd.is_absolute() {
                return Err(QueryError::Invalid(format!(
                    "cwd must be an absolute path, got {}",
                    cwd.display()
                )));
            }
            Some(cwd)
        }
        None => {
            notes.push("no cwd given: only the user's MCP servers are read".into());
            None
        }
    };
    let env = sdk_probe::ProbeEnv::from_process();
    let global_config = global_config(&env).ok_or_else(|| {
        QueryError::Failed(
            "cannot find Claude Code's configuration: neither CLAUDE_CONFIG_DIR nor HOME is set"
                .into(),
        )
    })?;
    let files = ClaudeFiles {
        global_config,
        project,
    };
    let loaded = config::claude_servers(&files, &|name| std::env::var(name).ok());
    notes.extend(loaded.errors.iter().map(ToString::to_string));
    Ok((loaded, notes))
}

fn status(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let (loaded, notes) = load(&request)?;
        let skip: Vec<String> = request
            .stdin
            .as_ref()
            .and_then(|s| s.get("skipVerify"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let deadline = bridge_mcp_probe::per_server_deadline(request.deadline);
        let servers: Vec<ServerStatus> =
            bridge_mcp_probe::status(&loaded.servers, &skip, deadline).await;
        let array = serde_json::to_string(&servers)
            .map_err(|e| QueryError::Failed(format!("cannot serialize the status: {e}")))?;
        let mut body = Map::new();
        body.insert("servers".into(), json!(servers));
        if !loaded.errors.is_empty() {
            let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
            body.insert("configErrors".into(), json!(errors));
        }
        Ok(QueryReply::success(body)
            .with_stdout_line(format!("{}{array}", bridge_mcp_probe::STATUS_MARKER))
            .with_notes(notes))
    })
}

fn tools(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let Some(server_id) = field(&request.stdin, "serverId")?.map(str::to_string) else {
            return Err(QueryError::Invalid("serverId is required".into()));
        };
        let (loaded, notes) = load(&request)?;
        let reply = match loaded.find(&server_id) {
            None => {
                let mut error = format!("no MCP server named {server_id:?} is configured");
                if let Some(cwd) = field(&request.stdin, "cwd")? {
                    error.push_str(&format!(" for {cwd}"));
                }
                for e in &loaded.errors {
                    error.push_str(&format!("; {e}"));
                }
                ToolsReply::failed(&server_id, error)
            }
            Some(server) if server.disabled => {
                ToolsReply::failed(&server_id, "Server is disabled".into())
            }
            Some(server) => match &server.config {
                Err(reason) => ToolsReply::failed(&server_id, format!("Invalid config: {reason}")),
                Ok(config) => {
                    let deadline = bridge_mcp_probe::per_server_deadline(request.deadline);
                    bridge_mcp_probe::tools(&server_id, config, deadline).await
                }
            },
        };
        Ok(reply.query_reply(" ")?.with_notes(notes))
    })
}
