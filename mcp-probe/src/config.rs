//! Which MCP servers a CLI is configured with, and how to reach each one.
//!
//! * [`claude_servers`]: Claude Code's own files for a working directory, with Claude Code's
//!   precedence (local over project over user).
//! * [`codex_server`]: one Codex `[mcp_servers.<id>]` table, as the plugin sends it (JSON).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// How to reach one MCP server.
#[derive(Clone, PartialEq, Eq)]
pub enum ServerConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio(StdioServer),
    /// A streamable HTTP endpoint (`type` `http` or `streamable-http`).
    Http(HttpServer),
    /// A legacy HTTP+SSE endpoint (`type` `sse`: a GET event stream plus POSTs).
    Sse(HttpServer),
}

/// A stdio server: what to run.
#[derive(Clone, PartialEq, Eq)]
pub struct StdioServer {
    /// The program (looked up on `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set on top of the bridge's scrubbed environment.
    pub env: BTreeMap<String, String>,
    /// Its working directory, when the configuration names one.
    pub cwd: Option<PathBuf>,
}

/// An HTTP server (streamable HTTP or SSE): where, and the headers sent with every request.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpServer {
    /// The endpoint URL.
    pub url: String,
    /// Headers sent with every request (`Authorization` included): secrets, never printed.
    pub headers: BTreeMap<String, String>,
}

impl ServerConfig {
    /// Every value of this configuration that may be a secret (environment values, header
    /// values and their bearer tokens, a URL's query string), for redacting messages that
    /// could echo one.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            ServerConfig::Stdio(s) => s.env.values().map(String::as_str).collect(),
            ServerConfig::Http(h) | ServerConfig::Sse(h) => {
                let mut secrets: Vec<&str> = Vec::new();
                for value in h.headers.values() {
                    secrets.push(value);
                    if let Some(token) = value.strip_prefix("Bearer ") {
                        secrets.push(token);
                    }
                }
                if let Some((_, query)) = h.url.split_once('?') {
                    secrets.push(query);
                }
                secrets
            }
        }
    }

    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerConfig::Stdio(_) => "stdio",
            ServerConfig::Http(_) => "http",
            ServerConfig::Sse(_) => "sse",
        }
    }
}

// Debug never shows environment or header values: they are where tokens live.
impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerConfig::Stdio(s) => f
                .debug_struct("Stdio")
                .field("command", &s.command)
                .field("args", &s.args)
                .field("env", &s.env.keys().collect::<Vec<_>>())
                .field("cwd", &s.cwd)
                .finish(),
            ServerConfig::Http(h) | ServerConfig::Sse(h) => f
                .debug_struct(if matches!(self, ServerConfig::Http(_)) {
                    "Http"
                } else {
                    "Sse"
                })
                .field("url", &h.url)
                .field("headers", &h.headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Where a Claude Code server is configured, in Claude Code's order of precedence (a name in
/// an earlier scope hides the same name in a later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `projects[<cwd>].mcpServers` in `.claude.json` (`claude mcp add --scope local`).
    Local,
    /// `<cwd>/.mcp.json` (`--scope project`, shared through the repository).
    Project,
    /// The top-level `mcpServers` of `.claude.json` (`--scope user`).
    User,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedServer {
    /// Its name (the key in `mcpServers`).
    pub name: String,
    /// Where it was configured.
    pub scope: Scope,
    /// How to reach it, or why its entry is unusable (`Missing command or url`).
    pub config: Result<ServerConfig, String>,
    /// Turned off in Claude Code (`/mcp` disable: `disabledMcpServers`,
    /// `disabledMcpjsonServers`): reported, never started.
    pub disabled: bool,
}

/// Why a configuration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {message}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// The file is not valid JSON (its servers are left out; the file is not touched).
    #[error("{path} is not valid JSON ({message}); its MCP servers are left out")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The parser's error (line and column).
        message: String,
    },
    /// The file is JSON, but `mcpServers` (or `projects`) is not an object.
    #[error("{path}: {message}")]
    BadShape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A server table the plugin sent is unusable.
    #[error("invalid MCP server configuration: {0}")]
    Invalid(String),
}

/// The files [`claude_servers`] reads.
#[derive(Debug, Clone)]
pub struct ClaudeFiles {
    /// Claude Code's global state file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
    pub global_config: PathBuf,
    /// The project directory (the request's `cwd`), whose `.mcp.json` and `projects` entry
    /// apply; `None` reads the user scope only.
    pub project: Option<PathBuf>,
}

/// The servers Claude Code would use in `files.project`, and the files that could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The servers, local scope first, then project, then user; in file order within a scope.
    pub servers: Vec<NamedServer>,
    /// Files whose servers are missing because they could not be read or parsed.
    pub errors: Vec<ConfigError>,
}

impl Loaded {
    /// The server called `name`.
    pub fn find(&self, name: &str) -> Option<&NamedServer> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// Reads `path` as a JSON object: `Ok(None)` when it does not exist.
fn read_json(path: &Path) -> Result<Option<Map<String, Value>>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Unreadable {
                path: path.into(),
                message: e.to_string(),
            });
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(ConfigError::BadShape {
            path: path.into(),
            message: "the file is not a JSON object".into(),
        }),
        Err(e) => Err(ConfigError::NotJson {
            path: path.into(),
            message: e.to_string(),
        }),
    }
}

fn object<'a>(
    value: Option<&'a Value>,
    path: &Path,
    what: &str,
) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(ConfigError::BadShape {
            path: path.into(),
            message: format!("{what} must be an object"),
        }),
    }
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The `projects` entry of `cwd`: the exact key, else one that differs only by a trailing
/// `/` or by `\` separators (a config written on Windows).
fn project_entry<'a>(
    projects: &'a Map<String, Value>,
    cwd: &Path,
) -> Option<&'a Map<String, Value>> {
    let wanted = cwd.to_string_lossy();
    let wanted = wanted.trim_end_matches('/');
    if let Some(Value::Object(entry)) = projects.get(wanted) {
        return Some(entry);
    }
    projects.iter().find_map(|(key, value)| {
        let key = key.replace('\\', "/");
        (key.trim_end_matches('/') == wanted)
            .then(|| value.as_object())
            .flatten()
    })
}

/// The MCP servers Claude Code is configured with for `files.project` (see [`Scope`] for the
/// precedence). `${VAR}` and `${VAR:-default}` in commands, arguments, environment values,
/// URLs and headers are expanded from `environment`, as Claude Code does. A file that cannot
/// be read or parsed is reported in [`Loaded::errors`] and the other files still count; no
/// file is ever written.
pub fn claude_servers(files: &ClaudeFiles, environment: &dyn Fn(&str) -> Option<String>) -> Loaded {
    let mut loaded = Loaded::default();
    let mut local: Option<Map<String, Value>> = None;
    let mut user: Option<Map<String, Value>> = None;
    let mut disabled: Vec<String> = Vec::new();
    let mut disabled_mcpjson: Vec<String> = Vec::new();
    let global = &files.global_config;
    match read_json(global) {
        Ok(None) => {}
        Ok(Some(config)) => {
            let shape = (|| {
                user = object(config.get("mcpServers"), global, "mcpServers")?.cloned();
                if let (Some(cwd), Some(projects)) = (
                    &files.project,
                    object(config.get("projects"), global, "projects")?,
                ) && let Some(entry) = project_entry(projects, cwd)
                {
                    local = object(entry.get("mcpServers"), global, "the project's mcpServers")?
                        .cloned();
                    disabled = string_list(entry.get("disabledMcpServers"));
                    disabled_mcpjson = string_list(entry.get("disabledMcpjsonServers"));
                }
                Ok::<(), ConfigError>(())
            })();
            if let Err(e) = shape {
                loaded.errors.push(e);
            }
        }
        Err(e) => loaded.errors.push(e),
    }
    let mut project: Option<Map<String, Value>> = None;
    if let Some(cwd) = &files.project {
        let path = cwd.join(".mcp.json");
        let read = read_json(&path).and_then(|config| {
            let Some(config) = config else {
                return Ok(None);
            };
            Ok(object(config.get("mcpServers"), &path, "mcpServers")?.cloned())
        });
        match read {
            Ok(servers) => project = servers,
            Err(e) => loaded.errors.push(e),
        }
    }
    let scopes = [
        (Scope::Local, local),
        (Scope::Project, project),
        (Scope::User, user),
    ];
    for (scope, servers) in scopes {
        for (name, entry) in servers.into_iter().flatten() {
            if loaded.find(&name).is_some() {
                continue;
            }
            let off = disabled.contains(&name)
                || (scope == Scope::Project && disabled_mcpjson.contains(&name));
            loaded.servers.push(NamedServer {
                config: claude_entry(&entry, files.project.as_deref(), environment),
                name,
                scope,
                disabled: off,
            });
        }
    }
    loaded
}

/// `${VAR}` and `${VAR:-default}` in `text`, from `environment`; an unset variable without a
/// default stays as it is written (visible, never silently empty).
pub fn expand(text: &str, environment: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (environment(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => out.push_str(&rest[start..start + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn string_map(
    value: Option<&Value>,
    what: &str,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), expand(s, environment))),
                Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                _ => Err(format!("{what} values must be strings")),
            })
            .collect(),
        Some(_) => Err(format!("{what} must be an object")),
    }
}

fn string_args(
    value: Option<&Value>,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(expand(s, environment)),
                Value::Number(_) | Value::Bool(_) => Ok(v.to_string()),
                _ => Err("args must be strings".to_string()),
            })
            .collect(),
        Some(_) => Err("args must be an array".into()),
    }
}

fn non_empty_str<'a>(entry: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// One Claude Code `mcpServers` entry.
fn claude_entry(
    entry: &Value,
    project: Option<&Path>,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    let Some(entry) = entry.as_object() else {
        return Err("Invalid config structure".into());
    };
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
    match (
        kind,
        non_empty_str(entry, "command"),
        non_empty_str(entry, "url"),
    ) {
        ("" | "stdio", Some(command), _) => Ok(ServerConfig::Stdio(StdioServer {
            command: expand(command, environment),
            args: string_args(entry.get("args"), environment)?,
            env: string_map(entry.get("env"), "env", environment)?,
            cwd: non_empty_str(entry, "cwd")
                .map(|c| project.map_or_else(|| PathBuf::from(c), |p| p.join(c)))
                .or_else(|| project.map(Path::to_path_buf)),
        })),
        ("" | "http" | "streamable-http" | "sse", None, Some(url)) => {
            let server = HttpServer {
                url: expand(url, environment),
                headers: string_map(entry.get("headers"), "headers", environment)?,
            };
            Ok(if kind == "sse" {
                ServerConfig::Sse(server)
            } else {
                ServerConfig::Http(server)
            })
        }
        ("stdio" | "", None, None) | ("http" | "streamable-http" | "sse", _, None) => {
            Err("Missing command or url".into())
        }
        ("ws", _, _) => Err("WebSocket servers are not supported".into()),
        (kind, _, _) => Err(format!("unknown server type {kind:?}")),
    }
}

/// One Codex `[mcp_servers.<id>]` table as JSON, as the plugin sends it (`serverConfig`):
/// `command`, `args`, `env`, `cwd` for a stdio server; `url` with `http_headers` (values),
/// `env_http_headers` (header → the variable holding its value) and `bearer_token_env_var`
/// for a streamable HTTP one (`type: "sse"` selects SSE). Variables are read from
/// `environment`; a variable that is named but unset is an error naming it.
pub fn codex_server(
    table: &Value,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, ConfigError> {
    let invalid = ConfigError::Invalid;
    let Some(entry) = table.as_object() else {
        return Err(invalid("serverConfig must be an object".into()));
    };
    let no_env = |_: &str| None;
    if let Some(command) = non_empty_str(entry, "command") {
        return Ok(ServerConfig::Stdio(StdioServer {
            command: command.to_string(),
            args: string_args(entry.get("args"), &no_env).map_err(invalid)?,
            env: string_map(entry.get("env"), "env", &no_env).map_err(invalid)?,
            cwd: non_empty_str(entry, "cwd").map(PathBuf::from),
        }));
    }
    let Some(url) = non_empty_str(entry, "url") else {
        return Err(invalid("serverConfig has neither command nor url".into()));
    };
    let mut headers =
        string_map(entry.get("http_headers"), "http_headers", &no_env).map_err(invalid)?;
    let from_env =
        string_map(entry.get("env_http_headers"), "env_http_headers", &no_env).map_err(invalid)?;
    for (header, var) in from_env {
        let value = environment(&var).ok_or_else(|| {
            invalid(format!(
                "environment variable {var} (env_http_headers {header}) is not set"
            ))
        })?;
        headers.insert(header, value);
    }
    if let Some(var) = non_empty_str(entry, "bearer_token_env_var") {
        let token = environment(var).ok_or_else(|| {
            invalid(format!(
                "environment variable {var} (bearer_token_env_var) is not set"
            ))
        })?;
        headers.insert("Authorization".into(), format!("Bearer {token}"));
    }
    let server = HttpServer {
        url: url.to_string(),
        headers,
    };
    Ok(match entry.get("type").and_then(Value::as_str) {
        Some("sse") => ServerConfig::Sse(server),
        _ => ServerConfig::Http(server),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "HOME_DIR" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn write(path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    struct Dirs {
        _tmp: tempfile::TempDir,
        files: ClaudeFiles,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let files = ClaudeFiles {
            global_config: tmp.path().join("config/.claude.json"),
            project: Some(tmp.path().join("proj")),
        };
        std::fs::create_dir_all(files.project.as_ref().unwrap()).unwrap();
        Dirs { _tmp: tmp, files }
    }

    fn names(loaded: &Loaded) -> Vec<(String, Scope)> {
        loaded
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.scope))
            .collect()
    }

    #[test]
    fn local_beats_project_beats_user_and_each_name_appears_once() {
        let d = dirs();
        let proj = d.files.project.clone().unwrap();
        write(
            &d.files.global_config,
            &json!({
                "mcpServers": {
                    "shared": {"command": "user-cmd"},
                    "only-user": {"type": "http", "url": "http://u/mcp"}
                },
                "projects": {
                    proj.to_str().unwrap(): {
                        "mcpServers": {"shared": {"command": "local-cmd"}},
                        "disabledMcpServers": ["only-user"]
                    },
                    "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}
                }
            }),
        );
        write(
            &proj.join(".mcp.json"),
            &json!({"mcpServers": {
                "shared": {"command": "project-cmd"},
                "only-project": {"type": "sse", "url": "http://p/sse"}
            }}),
        );
        let loaded = claude_servers(&d.files, &env);
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        assert_eq!(
            names(&loaded),
            [
                ("shared".into(), Scope::Local),
                ("only-project".into(), Scope::Project),
                ("only-user".into(), Scope::User),
            ]
        );
        let Ok(ServerConfig::Stdio(shared)) = &loaded.servers[0].config else {
            panic!("{:?}", loaded.servers[0]);
        };
        assert_eq!(shared.command, "local-cmd");
        assert_eq!(shared.cwd.as_deref(), Some(proj.as_path()));
        assert!(matches!(loaded.servers[1].config, Ok(ServerConfig::Sse(_))));
        assert!(loaded.servers[2].disabled, "disabledMcpServers");
        assert!(!loaded.servers[0].disabled);
    }

    #[test]
    fn without_a_project_only_the_user_scope_counts() {
        let mut d = dirs();
        let proj = d.files.project.take().unwrap();
        write(
            &d.files.global_config,
            &json!({
                "mcpServers": {"u": {"command": "u"}},
                "projects": {proj.to_str().unwrap(): {"mcpServers": {"l": {"command": "l"}}}}
            }),
        );
        write(
            &proj.join(".mcp.json"),
            &json!({"mcpServers": {"p": {"command": "p"}}}),
        );
        let loaded = claude_servers(&d.files, &env);
        assert_eq!(names(&loaded), [("u".into(), Scope::User)]);
    }

    #[test]
    fn a_broken_file_is_reported_and_the_others_still_count() {
        let d = dirs();
        let proj = d.files.project.clone().unwrap();
        std::fs::create_dir_all(d.files.global_config.parent().unwrap()).unwrap();
        std::fs::write(&d.files.global_config, "{ \"mcpServers\": {").unwrap();
        write(
            &proj.join(".mcp.json"),
            &json!({"mcpServers": {"p": {"command": "p"}}}),
        );
        let loaded = claude_servers(&d.files, &env);
        assert_eq!(names(&loaded), [("p".into(), Scope::Project)]);
        assert!(
            matches!(&loaded.errors[..], [ConfigError::NotJson { path, .. }] if *path == d.files.global_config),
            "{:?}",
            loaded.errors
        );
        assert_eq!(
            std::fs::read_to_string(&d.files.global_config).unwrap(),
            "{ \"mcpServers\": {",
            "never rewritten"
        );
        std::fs::write(&d.files.global_config, r#"{"mcpServers": []}"#).unwrap();
        let loaded = claude_servers(&d.files, &env);
        assert_eq!(
            loaded.errors[0].to_string(),
            format!(
                "{}: mcpServers must be an object",
                d.files.global_config.display()
            )
        );
    }

    #[test]
    fn no_files_no_servers() {
        let d = dirs();
        let loaded = claude_servers(&d.files, &env);
        assert!(loaded.servers.is_empty() && loaded.errors.is_empty());
    }

    #[test]
    fn entries_are_typed_and_expanded_and_bad_ones_say_why() {
        let d = dirs();
        write(
            &d.files.global_config,
            &json!({"mcpServers": {
                "a": {"command": "${HOME_DIR}/bin/srv", "args": ["--t", "${TOKEN}", 3],
                      "env": {"K": "${MISSING:-fallback}", "N": "${MISSING}"}},
                "b": {"type": "http", "url": "http://h/${NOPE:-x}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "c": {"type": "stdio"},
                "d": {"type": "ws", "url": "ws://x"},
                "e": "nonsense",
                "f": {"command": "x", "args": "not-a-list"}
            }}),
        );
        let loaded = claude_servers(&d.files, &env);
        let config = |i: usize| loaded.servers[i].config.clone();
        let Ok(ServerConfig::Stdio(a)) = config(0) else {
            panic!()
        };
        assert_eq!(a.command, "/home/u/bin/srv");
        assert_eq!(a.args, ["--t", "s3cret", "3"]);
        assert_eq!(a.env["K"], "fallback");
        assert_eq!(a.env["N"], "${MISSING}");
        let Ok(ServerConfig::Http(b)) = config(1) else {
            panic!()
        };
        assert_eq!(b.url, "http://h/x");
        assert_eq!(b.headers["Authorization"], "Bearer s3cret");
        assert!(
            !format!("{:?}", config(1)).contains("s3cret"),
            "Debug hides headers"
        );
        assert_eq!(
            config(1).unwrap().secrets(),
            ["Bearer s3cret", "s3cret"],
            "the token alone too"
        );
        let with_query = ServerConfig::Http(HttpServer {
            url: "http://h/mcp?key=abc".into(),
            headers: BTreeMap::new(),
        });
        assert_eq!(with_query.secrets(), ["key=abc"]);
        assert_eq!(config(2), Err("Missing command or url".into()));
        assert_eq!(config(3), Err("WebSocket servers are not supported".into()));
        assert_eq!(config(4), Err("Invalid config structure".into()));
        assert_eq!(config(5), Err("args must be an array".into()));
    }

    #[test]
    fn a_windows_or_slash_terminated_project_key_matches() {
        let d = dirs();
        let proj = d.files.project.clone().unwrap();
        let key = format!("{}/", proj.display());
        write(
            &d.files.global_config,
            &json!({"projects": {key: {"mcpServers": {"l": {"command": "l"}}}}}),
        );
        assert_eq!(
            names(&claude_servers(&d.files, &env)),
            [("l".into(), Scope::Local)]
        );
    }

    #[test]
    fn codex_tables_become_configs() {
        let stdio = codex_server(
            &json!({"command": "srv", "args": ["a"], "env": {"K": "v"}}),
            &env,
        )
        .unwrap();
        assert_eq!(
            stdio,
            ServerConfig::Stdio(StdioServer {
                command: "srv".into(),
                args: vec!["a".into()],
                env: [("K".to_string(), "v".to_string())].into(),
                cwd: None,
            })
        );
        let http = codex_server(
            &json!({"url": "http://127.0.0.1:1/mcp", "http_headers": {"X-A": "1"},
                    "env_http_headers": {"X-B": "TOKEN"}, "bearer_token_env_var": "TOKEN"}),
            &env,
        )
        .unwrap();
        let ServerConfig::Http(h) = http else {
            panic!()
        };
        assert_eq!(h.headers["X-A"], "1");
        assert_eq!(h.headers["X-B"], "s3cret");
        assert_eq!(h.headers["Authorization"], "Bearer s3cret");
        assert!(matches!(
            codex_server(&json!({"type": "sse", "url": "http://x/sse"}), &env),
            Ok(ServerConfig::Sse(_))
        ));
        assert_eq!(
            codex_server(
                &json!({"url": "http://x", "bearer_token_env_var": "UNSET"}),
                &env
            )
            .unwrap_err()
            .to_string(),
            "invalid MCP server configuration: environment variable UNSET (bearer_token_env_var) is not set"
        );
        assert!(codex_server(&json!({"args": []}), &env).is_err());
        assert!(codex_server(&json!("x"), &env).is_err());
    }
}
