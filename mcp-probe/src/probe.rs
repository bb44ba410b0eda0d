//! Connecting to one server: the MCP handshake, `tools/list`, and the child or connection gone
//! afterwards.

use std::collections::HashMap;
use std::time::Duration;

use bridge_core::process::{ChildProcess, CommandSpec, StdinMode};
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

use crate::config::{HttpServer, ServerConfig, StdioServer};

/// How long a stdio server's stderr may take to reach its end once the server has failed, so
/// that its last words make it into the error.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// Why a server could not be verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The stdio server's program could not be started.
    #[error("cannot start {command}: {message}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error.
        message: String,
    },
    /// The server did not complete the MCP handshake (it closed the connection, exited,
    /// answered something else, or an HTTP request failed).
    #[error("MCP handshake failed: {message}{}", stderr_suffix(.stderr))]
    Handshake {
        /// What went wrong.
        message: String,
        /// The last lines a stdio server wrote to stderr.
        stderr: String,
    },
    /// The stdio server exited before completing the handshake (it crashed at start).
    #[error("the server exited ({status}) before completing the MCP handshake{}", stderr_suffix(.stderr))]
    Exited {
        /// How it exited (`exit code 3`, `killed by signal 9`).
        status: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The server connected but `tools/list` failed.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// The server did not answer within the deadline (it was stopped).
    #[error("no answer to {stage} within {}{}", seconds(.after), stderr_suffix(.stderr))]
    Timeout {
        /// What it was asked (`initialize`, `tools/list`).
        stage: &'static str,
        /// The deadline.
        after: Duration,
        /// The last lines a stdio server wrote to stderr.
        stderr: String,
    },
    /// The HTTP client could not be built, or a header is not valid HTTP.
    #[error("{0}")]
    Http(String),
    /// The server's transport is one this bridge cannot reach.
    #[error("{0}")]
    Unsupported(String),
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(" (stderr: {})", stderr.trim())
    }
}

fn seconds(duration: &Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// What connecting to a server found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    /// The server's `serverInfo` from its `initialize` answer (`name`, `version`, …).
    pub server_info: Option<Value>,
    /// Its tools as `tools/list` gave them (every page), when they were asked for.
    pub tools: Option<Vec<Value>>,
}

/// The client's name and version in `initialize`.
fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bridge", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// A connected client and what keeps its server alive.
struct Session {
    service: RunningService<RoleClient, ClientConfig>,
    // Held for its Drop: the stdio server's process group is killed with it.
    _child: Option<ChildProcess>,
}

/// Connects to `config` (the handshake), reads its `serverInfo` and, when `with_tools`, its
/// tools, all within `deadline`; the server is stopped before this returns (a stdio server's
/// whole process group is killed, an HTTP connection dropped).
///
/// # Cancel safety
///
/// Cancel safe: dropping the future drops the connection and kills a stdio server's process
/// group at once; nothing is left running.
pub async fn probe(
    config: &ServerConfig,
    deadline: Duration,
    with_tools: bool,
) -> Result<Probed, ProbeError> {
    let stderr_of = |child: &Option<ChildProcess>| {
        child
            .as_ref()
            .map(ChildProcess::stderr_tail)
            .unwrap_or_default()
    };
    let started = tokio::time::Instant::now();
    let mut child = None;
    let connected = tokio::time::timeout(deadline, connect(config, &mut child)).await;
    let session = match connected {
        Ok(Ok(session)) => session,
        Ok(Err(mut error)) => {
            if let (ProbeError::Handshake { stderr, .. }, Some(c)) = (&mut error, child.as_mut()) {
                // A server that exited says so, whichever way the handshake noticed (a closed
                // stdout, or a broken pipe when the request was written).
                let exited = c.wait_timeout(STDERR_SETTLE).await;
                *stderr = tail(&c.settled_stderr_tail(STDERR_SETTLE).await);
                if let Some(status) = exited {
                    error = ProbeError::Exited {
                        status: bridge_core::process::describe_exit(&status),
                        stderr: std::mem::take(stderr),
                    };
                }
                // Reaped or not, whatever it started goes with its group.
                c.sweep_group();
            }
            return Err(error);
        }
        Err(_) => {
            return Err(ProbeError::Timeout {
                stage: "initialize",
                after: deadline,
                stderr: tail(&stderr_of(&child)),
            });
        }
    };
    let session = Session {
        service: session,
        _child: child,
    };
    let server_info = session
        .service
        .peer_info()
        .and_then(|info| info.server_info.clone())
        .and_then(|info| serde_json::to_value(info).ok());
    let tools = if with_tools {
        let left = deadline.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, session.service.list_all_tools()).await {
            Ok(Ok(tools)) => Some(
                tools
                    .into_iter()
                    .filter_map(|t| serde_json::to_value(t).ok())
                    .collect(),
            ),
            Ok(Err(e)) => return Err(ProbeError::ListTools(e.to_string())),
            Err(_) => {
                return Err(ProbeError::Timeout {
                    stage: "tools/list",
                    after: deadline,
                    stderr: tail(&stderr_of(&session._child)),
                });
            }
        }
    } else {
        None
    };
    drop(session);
    Ok(Probed { server_info, tools })
}

/// The last few stderr lines, on one line.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

async fn connect(
    config: &ServerConfig,
    child: &mut Option<ChildProcess>,
) -> Result<RunningService<RoleClient, ClientConfig>, ProbeError> {
    let handshake = |e: rmcp::service::ClientInitializeError| ProbeError::Handshake {
        message: e.to_string(),
        stderr: String::new(),
    };
    match config {
        ServerConfig::Stdio(server) => {
            let mut process = spawn(server)?;
            let stdout = process.take_stdout();
            let stdin = process.take_stdin();
            *child = Some(process);
            let (Some(stdout), Some(stdin)) = (stdout, stdin) else {
                return Err(ProbeError::Spawn {
                    command: server.command.clone(),
                    message: "its stdio could not be piped".into(),
                });
            };
            client_info()
                .serve((stdout, stdin))
                .await
                .map_err(handshake)
        }
        ServerConfig::Http(server) => {
            let transport = http_transport(server)?;
            client_info().serve(transport).await.map_err(handshake)
        }
        ServerConfig::Sse(server) => {
            let transport = crate::sse::SseTransport::connect(server).await?;
            client_info().serve(transport).await.map_err(handshake)
        }
    }
}

/// Starts a stdio server through the bridge's process runner: its own process group, the
/// bridge's environment with the project's scrub list applied
/// ([`bridge_core::process::is_scrubbed_env`]), then the server's own `env`.
fn spawn(server: &StdioServer) -> Result<ChildProcess, ProbeError> {
    let cwd = server.cwd.clone().filter(|c| c.is_dir());
    // `./bin/server` in a project's config means the project's, not the bridge's.
    let program = std::path::Path::new(&server.command);
    let program = match &cwd {
        Some(dir) if program.is_relative() && program.components().count() > 1 => dir.join(program),
        _ => program.to_path_buf(),
    };
    let mut spec = CommandSpec::new(program);
    spec.args = server.args.iter().map(Into::into).collect();
    for (key, value) in &server.env {
        spec.env(key, value);
    }
    spec.cwd = cwd;
    spec.stdin = StdinMode::Piped;
    ChildProcess::spawn(&spec).map_err(|e| ProbeError::Spawn {
        command: server.command.clone(),
        message: e.source.to_string(),
    })
}

/// Installs rustls' `ring` provider as the process default once (reqwest is built without a
/// provider of its own, so that no C toolchain beyond `cc` is needed).
fn crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The HTTP client every request of one probe shares (no redirects across origins, the
/// platform's trust roots).
pub(crate) fn http_client() -> Result<reqwest::Client, ProbeError> {
    crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|e| ProbeError::Http(format!("cannot build an HTTP client: {e}")))
}

/// `server`'s headers as HTTP headers (`Authorization` separated: rmcp sends it itself).
pub(crate) fn headers(
    server: &HttpServer,
) -> Result<(HashMap<http::HeaderName, http::HeaderValue>, Option<String>), ProbeError> {
    let mut out = HashMap::new();
    let mut bearer = None;
    for (name, value) in &server.headers {
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            bearer = Some(token.to_string());
            continue;
        }
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|_| ProbeError::Http(format!("header name {name:?} is not valid HTTP")))?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
            ProbeError::Http(format!("the value of header {name} is not valid HTTP"))
        })?;
        out.insert(name, value);
    }
    Ok((out, bearer))
}

fn http_transport(
    server: &HttpServer,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, ProbeError> {
    let (custom, bearer) = headers(server)?;
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).custom_headers(custom);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    // A server that keeps no session (no Mcp-Session-Id) is still a working server.
    config.allow_stateless = true;
    Ok(StreamableHttpClientTransport::with_client(
        http_client()?,
        config,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn sh(script: &str, env: &[(&str, &str)]) -> ServerConfig {
        ServerConfig::Stdio(StdioServer {
            command: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            cwd: None,
        })
    }

    #[tokio::test]
    async fn a_server_that_exits_at_once_is_reported_with_its_exit_and_stderr() {
        let error = probe(
            &sh("echo 'no config' >&2; exit 3", &[]),
            Duration::from_secs(10),
            false,
        )
        .await
        .unwrap_err();
        assert_eq!(
            error,
            ProbeError::Exited {
                status: "exit code 3".into(),
                stderr: "no config".into()
            }
        );
        assert_eq!(
            error.to_string(),
            "the server exited (exit code 3) before completing the MCP handshake (stderr: no config)"
        );
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out_and_its_group_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A grandchild in the same group that would outlive a plain kill of the leader.
        let script = format!(
            "sleep 300 & echo $! > {}; echo waiting >&2; cat > /dev/null",
            pid_file.display()
        );
        let error = probe(&sh(&script, &[]), Duration::from_millis(700), true)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                ProbeError::Timeout { stage: "initialize", after, .. } if *after == Duration::from_millis(700)
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("no answer to initialize within 0.7 s")
        );
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The group was sent SIGKILL; the grandchild is gone (or a zombie awaiting init).
        let mut gone = false;
        for _ in 0..50 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "the grandchild {pid} survived its probe");
    }

    #[tokio::test]
    async fn a_relative_program_runs_from_the_server_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        let script = dir.path().join("bin/server");
        std::fs::write(&script, "#!/bin/sh\necho from-the-project >&2\nexit 4\n").unwrap();
        let mut permissions = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&script, permissions).unwrap();
        let config = ServerConfig::Stdio(StdioServer {
            command: "./bin/server".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: Some(dir.path().to_path_buf()),
        });
        let error = probe(&config, Duration::from_secs(10), false)
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ProbeError::Exited {
                status: "exit code 4".into(),
                stderr: "from-the-project".into()
            }
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let config = ServerConfig::Stdio(StdioServer {
            command: "/nonexistent/mcp-server".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        });
        let error = probe(&config, Duration::from_secs(5), false)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ProbeError::Spawn { command, .. } if command == "/nonexistent/mcp-server"),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn an_unreachable_http_server_fails_the_handshake() {
        // A port nothing listens on: bind one, then drop it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = ServerConfig::Http(HttpServer {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: [("X-Key".to_string(), "v".to_string())].into(),
        });
        let error = probe(&config, Duration::from_secs(10), false)
            .await
            .unwrap_err();
        assert!(matches!(error, ProbeError::Handshake { .. }), "{error:?}");
        let bad = ServerConfig::Http(HttpServer {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: [("bad header".to_string(), "v".to_string())].into(),
        });
        assert_eq!(
            probe(&bad, Duration::from_secs(1), false)
                .await
                .unwrap_err(),
            ProbeError::Http("header name \"bad header\" is not valid HTTP".into())
        );
    }
}
