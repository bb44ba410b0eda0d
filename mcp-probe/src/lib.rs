//! MCP servers verified by connecting to them: the JetBrains plugin's `getMcpServerStatus` and
//! `getMcpServerTools` (`ai-bridge-protocol.md` §1.2, §3.2, §7.5).
//!
//! * [`config`]: which servers a CLI is configured with ([`config::claude_servers`] reads
//!   Claude Code's own files for a working directory; [`config::codex_server`] reads one Codex
//!   server table), never writing a file.
//! * [`probe::probe`]: one server, connected for real under a deadline: the MCP `initialize`
//!   handshake (its `serverInfo`) and, when asked, `tools/list`; the server is stopped after.
//! * [`status`]: every server of a configuration at once, in parallel, each under its own
//!   deadline ([`per_server_deadline`]); a server that fails, hangs or crashes is `failed` with
//!   its error and never holds up the others.
//!
//! The MCP client is [`rmcp`], the official Rust SDK:
//!
//! * **stdio**: rmcp's async read/write transport over the pipes of a child that the bridge's
//!   own process runner starts ([`bridge_core::process::ChildProcess`]): its own process group
//!   (killed whole when the probe ends, fails or is cancelled), the bridge's environment minus
//!   the project's one scrub list ([`bridge_core::process::is_scrubbed_env`]), then the
//!   server's `env`. rmcp's own child-process transport is not used: it would be a second
//!   spawner with its own environment and kill rules.
//! * **streamable HTTP**: rmcp's reqwest client transport (stateless servers accepted).
//!   reqwest is built with rustls and the `ring` provider (no OpenSSL, no aws-lc/cmake).
//! * **SSE** (the 2024-11-05 HTTP+SSE transport): rmcp 3 no longer ships a client for it, so
//!   `sse.rs` is a small one (GET the event stream, its `endpoint` event, POST each message)
//!   served through rmcp's sink/stream adapter.
//! * WebSocket servers (`type: "ws"`) are reported as failed: neither the CLIs' plugin side
//!   nor rmcp speaks it.
//!
//! Nothing secret reaches the output: header and environment values are redacted from every
//! error ([`ServerStatus::failed`] callers pass [`config::ServerConfig::secrets`]), and the
//! configuration types' `Debug` shows only names.
//!
//! Not done: Claude Code's approval of `.mcp.json` servers (`enabledMcpjsonServers`,
//! `enableAllProjectMcpServers`) is not applied (every configured server is verified; the
//! ones turned off with `disabledMcpServers` / `disabledMcpjsonServers` are reported as
//! disabled); OAuth-protected HTTP servers fail with their HTTP 401.

pub mod config;
pub mod probe;
mod sse;

use std::time::Duration;

use bridge_core::redact::Redactor;
use serde::Serialize;
use serde_json::Value;

pub use config::{ClaudeFiles, ConfigError, NamedServer, Scope, ServerConfig};
pub use probe::{ProbeError, Probed};
pub use sse::SseError;

/// The status marker: `[MCP_SERVER_STATUS]` + the JSON array, no space.
pub const STATUS_MARKER: &str = "[MCP_SERVER_STATUS]";

/// The tools marker: Claude's has one space before the JSON, Codex's none.
pub const TOOLS_MARKER: &str = "[MCP_SERVER_TOOLS]";

/// The variable that sets how long each server gets (seconds, decimals allowed).
pub const TIMEOUT_ENV: &str = "BRIDGE_MCP_TIMEOUT";

/// How long each server gets by default: the plugin waits 65 s for the whole answer and the
/// servers are verified in parallel, so a hanging one is reported well before that.
pub const DEFAULT_PER_SERVER: Duration = Duration::from_secs(30);

/// The deadline of each server: [`TIMEOUT_ENV`], else [`DEFAULT_PER_SERVER`]; never more than
/// `overall` minus a second (so the answer is written before the query's own deadline).
pub fn per_server_deadline(overall: Duration) -> Duration {
    let wanted = bridge_core::turn::seconds_from_env(TIMEOUT_ENV).unwrap_or(DEFAULT_PER_SERVER);
    wanted.min(
        overall
            .saturating_sub(Duration::from_secs(1))
            .max(Duration::from_millis(100)),
    )
}

/// A server's state as the plugin reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The handshake succeeded.
    Connected,
    /// It could not be verified (see the entry's `error`).
    Failed,
}

/// One entry of `[MCP_SERVER_STATUS]`: `{name, status, serverInfo?, error?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Connected or failed.
    pub status: Status,
    /// The `serverInfo` it sent (`name`, `version`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Value>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ServerStatus {
    /// A failed entry whose `error` is `error` with `secrets` redacted.
    pub fn failed(name: &str, error: &str, secrets: &[&str]) -> Self {
        ServerStatus {
            name: name.to_string(),
            status: Status::Failed,
            server_info: None,
            error: Some(redact(error, secrets)),
        }
    }
}

/// `text` with every one of `secrets` replaced.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut redactor = Redactor::new();
    for secret in secrets {
        redactor.add(secret);
    }
    redactor.redact(text).into_owned()
}

/// Verifies every server of `servers` at once, each within `deadline`; the entries come in
/// the order of `servers`. A disabled server is `failed` with `Server is disabled`, an
/// unusable entry with `Invalid config: …`, a name in `skip` (the plugin's circuit breaker,
/// its `skipVerify`) with `[circuit-open] …` without being started.
///
/// # Cancel safety
///
/// Cancel safe: dropping the future drops every probe, which stops every server it started.
pub async fn status(
    servers: &[NamedServer],
    skip: &[String],
    deadline: Duration,
) -> Vec<ServerStatus> {
    let probes = servers.iter().map(|server| async move {
        let config = match (&server.config, server.disabled) {
            (_, true) => return ServerStatus::failed(&server.name, "Server is disabled", &[]),
            (Err(reason), _) => {
                return ServerStatus::failed(&server.name, &format!("Invalid config: {reason}"), &[]);
            }
            (Ok(config), _) => config,
        };
        if skip.contains(&server.name) {
            return ServerStatus::failed(
                &server.name,
                "[circuit-open] Verification skipped after repeated failures; retried after cooldown",
                &[],
            );
        }
        match probe::probe(config, deadline, false).await {
            Ok(probed) => ServerStatus {
                name: server.name.clone(),
                status: Status::Connected,
                server_info: probed.server_info,
                error: None,
            },
            Err(error) => ServerStatus::failed(&server.name, &error.to_string(), &config.secrets()),
        }
    });
    futures_util::future::join_all(probes).await
}

/// The answer of `getMcpServerTools`:
/// `{success, serverId, serverName, tools:[raw tools/list entries], error?}`, `success` being
/// true when there is no error or some tools were listed (as ai-bridge reports it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsReply {
    /// Whether the tools could be listed.
    pub success: bool,
    /// The server asked for.
    pub server_id: String,
    /// Its name (the same: servers are named by their key).
    pub server_name: String,
    /// Its tools (`name`, `description`, `inputSchema`, …).
    pub tools: Vec<Value>,
    /// Why they could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ToolsReply {
    /// The query reply: `[MCP_SERVER_TOOLS]` + `separator` + this object's JSON, then the same
    /// object as the JSON line.
    pub fn query_reply(
        &self,
        separator: &str,
    ) -> Result<bridge_core::query::QueryReply, bridge_core::query::QueryError> {
        let text = serde_json::to_string(self).map_err(|e| {
            bridge_core::query::QueryError::Failed(format!("cannot serialize the tools: {e}"))
        })?;
        Ok(bridge_core::query::QueryReply::serialized(self)?
            .with_stdout_line(format!("{TOOLS_MARKER}{separator}{text}")))
    }

    /// A reply carrying only `error`.
    pub fn failed(server_id: &str, error: String) -> Self {
        ToolsReply {
            success: false,
            server_id: server_id.to_string(),
            server_name: server_id.to_string(),
            tools: Vec::new(),
            error: Some(error),
        }
    }
}

/// Connects to `config` and lists its tools within `deadline`.
///
/// # Cancel safety
///
/// Cancel safe, as [`probe::probe`].
pub async fn tools(server_id: &str, config: &ServerConfig, deadline: Duration) -> ToolsReply {
    match probe::probe(config, deadline, true).await {
        Ok(probed) => ToolsReply {
            success: true,
            server_id: server_id.to_string(),
            server_name: server_id.to_string(),
            tools: probed.tools.unwrap_or_default(),
            error: None,
        },
        Err(error) => ToolsReply::failed(server_id, redact(&error.to_string(), &config.secrets())),
    }
}
