//! `getMcpServerTools` for Codex: the tools of the server table the plugin sends
//! (`{serverId, serverConfig}`, `serverConfig` being a Codex `[mcp_servers.<id>]` table as
//! JSON), listed by connecting to it ([`bridge_mcp_probe`]).
//!
//! Output, as ai-bridge writes it: `[MCP_SERVER_TOOLS]{success,serverId,serverName,tools,error?}`
//! (Codex's marker has **no** space), then the same object as the last JSON line.

use bridge_core::query::{Input, Query, QueryError, QueryReply, QueryRequest};
use bridge_mcp_probe::ToolsReply;
use futures_util::future::BoxFuture;
use serde_json::Value;

/// `getMcpServerTools` (stdin `{serverId, serverConfig}`).
pub const TOOLS: Query = Query::new(
    "getMcpServerTools",
    Input::StdinJson,
    "the tools of the MCP server table {serverId, serverConfig}",
    tools,
)
.error_tag("[GET_MCP_SERVER_TOOLS_ERROR]");

fn tools(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let stdin = request.stdin.unwrap_or_default();
        let server_id = match stdin.get("serverId") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            None | Some(Value::Null) | Some(Value::String(_)) => {
                return Err(QueryError::Invalid("serverId is required".into()));
            }
            Some(_) => return Err(QueryError::Invalid("serverId must be a string".into())),
        };
        let Some(table) = stdin.get("serverConfig") else {
            return Err(QueryError::Invalid("serverConfig is required".into()));
        };
        let reply =
            match bridge_mcp_probe::config::codex_server(table, &|name| std::env::var(name).ok()) {
                Ok(config) => {
                    let deadline = bridge_mcp_probe::per_server_deadline(request.deadline);
                    bridge_mcp_probe::tools(&server_id, &config, deadline).await
                }
                Err(error) => ToolsReply::failed(&server_id, error.to_string()),
            };
        reply.query_reply("")
    })
}
