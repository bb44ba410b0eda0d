//! The plugin's MCP commands end to end: `bridge claude getMcpServerStatus` /
//! `getMcpServerTools` (stdin `{cwd}` / `{serverId, cwd}`) and `bridge codex
//! getMcpServerTools` (stdin `{serverId, serverConfig}`), driven with the plugin's argv and
//! stdin against MCP servers the tests start (tests/common/mcp.rs): a healthy stdio server,
//! one that never answers `initialize`, one that crashes at start (this test binary itself,
//! started with `BRIDGE_MCP_FIXTURE=<mode>`: its own harness, [`main`], serves MCP on stdio
//! instead of running the tests), and streamable HTTP and SSE servers on 127.0.0.1, inside the
//! loopback-only network namespace. Outputs are read the way `ClaudeMcpQueryService` reads them: the tagged line
//! (`line.substring(tag.length()).trim()`), else the last JSON line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mcp::{McpHttp, http_tools};
use common::*;
use serde_json::{Value, json};

/// The per-server deadline the tests give (the hanging server is reported after it).
const TIMEOUT: &str = "3";
/// A secret in a stdio server's `env`, which its crash message prints.
const ENV_SECRET: &str = "fixture-env-secret-5d8e2b";
/// A secret in an HTTP server's headers.
const HEADER_SECRET: &str = "fixture-header-secret-9a41c7";

/// The tests, run by libtest-mimic (so that this binary can also be the stdio fixture).
fn main() {
    if let Ok(mode) = std::env::var(common::mcp::FIXTURE_ENV) {
        common::mcp::serve_stdio(&mode);
        return;
    }
    macro_rules! trials {
        ($($test:ident),* $(,)?) => {
            vec![$(libtest_mimic::Trial::test(stringify!($test), || {
                $test();
                Ok(())
            })),*]
        };
    }
    let tests = trials![
        claude_status_of_a_mixed_config_reports_every_server_and_leaves_nothing_running,
        claude_skip_verify_servers_are_failed_without_being_started,
        claude_tools_of_the_stdio_http_and_sse_servers,
        claude_tools_of_an_unknown_server_and_bad_input_are_clear_errors,
        claude_status_without_a_cwd_reads_the_user_scope_only,
        claude_config_in_home_and_local_scope_wins_over_project,
        claude_config_that_is_not_json_is_reported_and_the_other_files_still_count,
        stdio_servers_get_the_scrubbed_environment_plus_their_own,
        codex_tools_of_stdio_and_http_server_tables,
        the_command_lists_name_the_mcp_commands,
    ];
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), tests).exit();
}

/// A stdio server entry running this binary as the fixture in `mode` with `env`; `tag` (the
/// sandbox) is its argument, so a test can find its own processes.
fn stdio_with(mode: &str, tag: &Path, env: Value) -> Value {
    let mut vars = json!({common::mcp::FIXTURE_ENV: mode});
    vars.as_object_mut()
        .unwrap()
        .extend(env.as_object().cloned().unwrap_or_default());
    json!({
        "command": std::env::current_exe().expect("the test binary"),
        "args": [tag],
        "env": vars,
    })
}

/// [`stdio_with`] without extra variables.
fn stdio(mode: &str, tag: &Path) -> Value {
    stdio_with(mode, tag, json!({}))
}

/// `bridge <provider> <query>` with a clean environment rooted in `sandbox`.
fn mcp_command(sandbox: &Sandbox, provider: &str, query: &str) -> Command {
    let mut cmd = bridge();
    cmd.env_clear()
        .args([provider, query])
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("CLAUDE_CONFIG_DIR", sandbox.home().join(".claude"))
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("BRIDGE_MCP_TIMEOUT", TIMEOUT);
    cmd
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// Claude Code's global config file under `CLAUDE_CONFIG_DIR`.
fn claude_json(sandbox: &Sandbox) -> PathBuf {
    sandbox.home().join(".claude/.claude.json")
}

/// The project directory (canonical, as the plugin sends it).
fn project(sandbox: &Sandbox) -> String {
    std::fs::canonicalize(sandbox.work())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

/// The payload of the first stdout line tagged `tag`, as Java takes it.
fn tagged(run: &QueryRun, tag: &str) -> Value {
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with(tag))
        .unwrap_or_else(|| panic!("no {tag} line: {run:?}"));
    serde_json::from_str(line[tag.len()..].trim()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The `name` of every object of `list`.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

/// Runs `bridge <provider> <query>` with `stdin` and checks that its only answer is
/// `{"success":false,"error":error}`.
fn assert_query_error(sandbox: &Sandbox, provider: &str, query: &str, stdin: Value, error: &str) {
    let run = run_query_with(mcp_command(sandbox, provider, query), &stdin);
    assert_eq!(
        run.json,
        json!({"success": false, "error": error}),
        "{run:?}"
    );
    assert_eq!(run.stdout.lines().count(), 1, "no tagged line: {run:?}");
}

fn entry<'a>(servers: &'a Value, name: &str) -> &'a Value {
    servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {servers}"))
}

/// Processes whose command line mentions `tag` (the fixtures of one test).
fn processes_tagged(tag: &Path) -> Vec<String> {
    let tag = tag.to_string_lossy();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&*tag))
        .collect()
}

fn assert_no_secret(run: &QueryRun) {
    for secret in [ENV_SECRET, HEADER_SECRET] {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "a secret leaked: {run:?}"
        );
    }
}

/// User scope: the three stdio fixtures and an invalid entry; project scope (`.mcp.json`):
/// the HTTP and SSE servers (with a secret header) and a disabled one.
fn mixed_config(sandbox: &Sandbox, http: &McpHttp) {
    let tag = sandbox.root();
    let crash = stdio_with("crash", tag, json!({"FIXTURE_TOKEN": ENV_SECRET}));
    write_json(
        &claude_json(sandbox),
        &json!({
            "mcpServers": {
                "healthy": stdio("healthy", tag),
                "silent": stdio("silent", tag),
                "crashing": crash,
                "broken-entry": {"type": "stdio"}
            },
            "projects": {
                project(sandbox): {"disabledMcpjsonServers": ["turned-off"]}
            }
        }),
    );
    write_json(
        &sandbox.work().join(".mcp.json"),
        &json!({"mcpServers": {
            "web": {"type": "http", "url": http.url("/mcp"), "headers": {"X-Api-Key": HEADER_SECRET}},
            "events": {"type": "sse", "url": http.url("/sse")},
            "web-hang": {"type": "http", "url": http.url("/hang")},
            "turned-off": stdio("healthy", tag)
        }}),
    );
}

fn claude_status_of_a_mixed_config_reports_every_server_and_leaves_nothing_running() {
    let sandbox = Sandbox::new();
    let http = McpHttp::start();
    mixed_config(&sandbox, &http);
    let run = run_query_with(
        mcp_command(&sandbox, "claude", "getMcpServerStatus"),
        &json!({"cwd": project(&sandbox)}),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.starts_with("[MCP_SERVER_STATUS]["),
        "the tag, no space, then the array: {run:?}"
    );
    let servers = tagged(&run, "[MCP_SERVER_STATUS]");
    // The JSON line (ai-bridge's fallback) carries the same list.
    assert_eq!(run.json["success"], true);
    assert_eq!(run.json["servers"], servers);
    let listed = names(&servers);
    // Project scope before user scope, each in file order.
    assert_eq!(
        listed,
        [
            "web",
            "events",
            "web-hang",
            "turned-off",
            "healthy",
            "silent",
            "crashing",
            "broken-entry"
        ]
    );
    for server in servers.as_array().unwrap() {
        assert!(
            server["status"] == "connected" || server["status"] == "failed",
            "{server}"
        );
        assert_eq!(
            server["error"].is_string(),
            server["status"] == "failed",
            "{server}"
        );
    }
    assert_eq!(
        entry(&servers, "healthy")["serverInfo"],
        json!({"name": "stdio-fixture", "version": "1.2.3"})
    );
    assert_eq!(entry(&servers, "web")["serverInfo"]["name"], "http-fixture");
    assert_eq!(
        entry(&servers, "events")["serverInfo"]["name"],
        "sse-fixture"
    );
    assert_eq!(entry(&servers, "silent")["status"], "failed");
    assert!(
        entry(&servers, "silent")["error"]
            .as_str()
            .unwrap()
            .contains("no answer to initialize within 3 s"),
        "{servers}"
    );
    assert_eq!(
        entry(&servers, "web-hang")["error"],
        "no answer to initialize within 3 s"
    );
    let crashing = entry(&servers, "crashing")["error"].as_str().unwrap();
    assert!(
        crashing.contains("fixture crashed on purpose"),
        "{crashing}"
    );
    assert!(crashing.contains("token=[redacted]"), "{crashing}");
    assert_eq!(entry(&servers, "turned-off")["error"], "Server is disabled");
    assert_eq!(
        entry(&servers, "broken-entry")["error"],
        "Invalid config: Missing command or url"
    );
    // The HTTP server got its header; the output never shows it.
    let posts: Vec<_> = http
        .seen()
        .into_iter()
        .filter(|s| s.path == "/mcp" && s.method == "POST")
        .collect();
    assert!(!posts.is_empty());
    assert!(
        posts
            .iter()
            .all(|s| s.header("x-api-key") == Some(HEADER_SECRET))
    );
    assert_no_secret(&run);
    assert!(
        processes_tagged(sandbox.root()).is_empty(),
        "fixtures left running: {:?}",
        processes_tagged(sandbox.root())
    );
    insta::assert_json_snapshot!("mcp_status_mixed", servers);
}

fn claude_skip_verify_servers_are_failed_without_being_started() {
    let sandbox = Sandbox::new();
    let dump = sandbox.root().join("env.json");
    let healthy = stdio_with(
        "healthy",
        sandbox.root(),
        json!({"MCP_FIXTURE_ENV_DUMP": dump}),
    );
    write_json(
        &claude_json(&sandbox),
        &json!({"mcpServers": {"healthy": healthy}}),
    );
    let run = run_query_with(
        mcp_command(&sandbox, "claude", "getMcpServerStatus"),
        &json!({"cwd": project(&sandbox), "skipVerify": ["healthy"]}),
    );
    let servers = tagged(&run, "[MCP_SERVER_STATUS]");
    assert_eq!(servers[0]["status"], "failed");
    assert!(
        servers[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("[circuit-open]"),
        "{servers}"
    );
    assert!(!dump.exists(), "the skipped server was started");
}

fn claude_tools_of_the_stdio_http_and_sse_servers() {
    let sandbox = Sandbox::new();
    let http = McpHttp::start();
    mixed_config(&sandbox, &http);
    let cwd = project(&sandbox);
    let tools_of = |id: &str| {
        let run = run_query_with(
            mcp_command(&sandbox, "claude", "getMcpServerTools"),
            &json!({"serverId": id, "cwd": cwd}),
        );
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            run.stdout.starts_with("[MCP_SERVER_TOOLS] {"),
            "Claude's tag has one space: {run:?}"
        );
        let reply = tagged(&run, "[MCP_SERVER_TOOLS]");
        assert_eq!(reply, run.json, "the JSON line repeats the tagged reply");
        assert_no_secret(&run);
        reply
    };
    let healthy = tools_of("healthy");
    assert_eq!(healthy["success"], true, "{healthy}");
    assert_eq!(healthy["serverId"], "healthy");
    assert_eq!(healthy["serverName"], "healthy");
    let tools = healthy["tools"].as_array().unwrap();
    assert_eq!(names(&healthy["tools"]), ["echo", "add"]);
    assert_eq!(tools[0]["description"], "Echo the text back");
    assert_eq!(
        tools[0]["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "what to echo"}}, "required": ["text"]})
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(
        healthy["tools"],
        common::mcp::stdio_tools(),
        "as the server sent them"
    );

    for id in ["web", "events"] {
        let reply = tools_of(id);
        assert_eq!(reply["success"], true, "{reply}");
        assert_eq!(reply["tools"], http_tools(), "{id}");
    }

    let silent = tools_of("silent");
    assert_eq!(silent["success"], false);
    assert_eq!(silent["tools"], json!([]));
    assert!(
        silent["error"]
            .as_str()
            .unwrap()
            .contains("no answer to initialize"),
        "{silent}"
    );
    let crashing = tools_of("crashing");
    assert_eq!(crashing["success"], false);
    assert!(
        crashing["error"]
            .as_str()
            .unwrap()
            .contains("crashed on purpose")
    );
    assert!(processes_tagged(sandbox.root()).is_empty());
}

fn claude_tools_of_an_unknown_server_and_bad_input_are_clear_errors() {
    let sandbox = Sandbox::new();
    write_json(
        &claude_json(&sandbox),
        &json!({"mcpServers": {"healthy": stdio("healthy", sandbox.root())}}),
    );
    let cwd = project(&sandbox);
    let tools = || mcp_command(&sandbox, "claude", "getMcpServerTools");

    let unknown = run_query_with(tools(), &json!({"serverId": "nope", "cwd": cwd}));
    assert_eq!(unknown.code, Some(0));
    let reply = tagged(&unknown, "[MCP_SERVER_TOOLS]");
    assert_eq!(reply["success"], false);
    assert_eq!(reply["serverId"], "nope");
    assert_eq!(
        reply["error"],
        format!("no MCP server named \"nope\" is configured for {cwd}")
    );

    let missing = run_query_with(tools(), &json!({"cwd": cwd}));
    assert_eq!(
        missing.json,
        json!({"success": false, "error": "serverId is required"})
    );
    assert_eq!(missing.stdout.lines().count(), 1, "no tagged line");
    assert!(
        missing
            .stderr
            .contains("[GET_MCP_SERVER_TOOLS_ERROR] serverId is required")
    );

    let malformed = query_run_raw(tools(), "{\"serverId\": ");
    assert_eq!(malformed.json["success"], false);
    assert!(
        malformed.json["error"]
            .as_str()
            .unwrap()
            .starts_with("stdin is not valid JSON"),
        "{malformed:?}"
    );
    assert!(!malformed.stdout.contains("[MCP_SERVER_TOOLS]"));

    assert_query_error(
        &sandbox,
        "claude",
        "getMcpServerStatus",
        json!({"cwd": "relative/dir"}),
        "cwd must be an absolute path, got relative/dir",
    );
}

/// `cmd` run with `stdin` written as it is.
fn query_run_raw(cmd: Command, stdin: &str) -> QueryRun {
    let output = run_with_stdin(cmd, stdin);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line: {output:?}"));
    QueryRun {
        json: serde_json::from_str(line).unwrap(),
        stdout: stdout.clone(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code(),
    }
}

fn claude_status_without_a_cwd_reads_the_user_scope_only() {
    let sandbox = Sandbox::new();
    let tag = sandbox.root();
    write_json(
        &claude_json(&sandbox),
        &json!({
            "mcpServers": {"user-one": stdio("healthy", tag)},
            "projects": {project(&sandbox): {"mcpServers": {"local-one": stdio("healthy", tag)}}}
        }),
    );
    write_json(
        &sandbox.work().join(".mcp.json"),
        &json!({"mcpServers": {"project-one": stdio("healthy", tag)}}),
    );
    for stdin in [json!({}), json!({"cwd": ""})] {
        let run = run_query_with(
            mcp_command(&sandbox, "claude", "getMcpServerStatus"),
            &stdin,
        );
        let servers = tagged(&run, "[MCP_SERVER_STATUS]");
        assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
        assert_eq!(servers[0]["name"], "user-one");
        assert_eq!(servers[0]["status"], "connected");
        assert!(run.stderr.contains("no cwd given"), "{}", run.stderr);
    }
    // With the cwd: local, then project, then user.
    let run = run_query_with(
        mcp_command(&sandbox, "claude", "getMcpServerStatus"),
        &json!({"cwd": project(&sandbox)}),
    );
    let servers = tagged(&run, "[MCP_SERVER_STATUS]");
    let listed = names(&servers);
    assert_eq!(listed, ["local-one", "project-one", "user-one"]);
}

fn claude_config_in_home_and_local_scope_wins_over_project() {
    let sandbox = Sandbox::new();
    let tag = sandbox.root();
    // No CLAUDE_CONFIG_DIR: the file is ~/.claude.json.
    write_json(
        &sandbox.home().join(".claude.json"),
        &json!({"projects": {project(&sandbox): {"mcpServers": {"dup": stdio("healthy", tag)}}}}),
    );
    write_json(
        &sandbox.work().join(".mcp.json"),
        &json!({"mcpServers": {"dup": stdio("crash", tag)}}),
    );
    let mut cmd = mcp_command(&sandbox, "claude", "getMcpServerStatus");
    cmd.env_remove("CLAUDE_CONFIG_DIR");
    let run = run_query_with(cmd, &json!({"cwd": project(&sandbox)}));
    let servers = tagged(&run, "[MCP_SERVER_STATUS]");
    assert_eq!(
        servers,
        json!([{"name": "dup", "status": "connected", "serverInfo": {"name": "stdio-fixture", "version": "1.2.3"}}])
    );
}

fn claude_config_that_is_not_json_is_reported_and_the_other_files_still_count() {
    let sandbox = Sandbox::new();
    let broken = "{\"mcpServers\": {\"lost\": {\"command\": \"x\"},";
    std::fs::write(claude_json(&sandbox), broken).unwrap();
    write_json(
        &sandbox.work().join(".mcp.json"),
        &json!({"mcpServers": {"healthy": stdio("healthy", sandbox.root())}}),
    );
    let run = run_query_with(
        mcp_command(&sandbox, "claude", "getMcpServerStatus"),
        &json!({"cwd": project(&sandbox)}),
    );
    let servers = tagged(&run, "[MCP_SERVER_STATUS]");
    assert_eq!(servers.as_array().unwrap().len(), 1);
    assert_eq!(servers[0]["status"], "connected");
    let errors = run.json["configErrors"].as_array().expect("configErrors");
    let error = errors[0].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "{} is not valid JSON",
            claude_json(&sandbox).display()
        )),
        "{error}"
    );
    assert!(
        run.stderr.contains("[WARNING] getMcpServerStatus:"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(claude_json(&sandbox)).unwrap(),
        broken,
        "the file is left as it was"
    );
    // Asking for a server of the broken file says why it is not there.
    let run = run_query_with(
        mcp_command(&sandbox, "claude", "getMcpServerTools"),
        &json!({"serverId": "lost", "cwd": project(&sandbox)}),
    );
    let error = tagged(&run, "[MCP_SERVER_TOOLS]")["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(error.contains("is not valid JSON"), "{error}");
}

fn stdio_servers_get_the_scrubbed_environment_plus_their_own() {
    let sandbox = Sandbox::new();
    let dump = sandbox.root().join("env.json");
    let healthy = stdio_with(
        "healthy",
        sandbox.root(),
        json!({"MCP_FIXTURE_ENV_DUMP": dump, "FROM_CONFIG": "yes"}),
    );
    write_json(
        &claude_json(&sandbox),
        &json!({"mcpServers": {"healthy": healthy}}),
    );
    let mut cmd = mcp_command(&sandbox, "claude", "getMcpServerStatus");
    cmd.env("NODE_OPTIONS", "--max-old-space-size=200")
        .env("npm_config_loglevel", "silly")
        .env("KEPT_BY_BRIDGE", "1");
    let run = run_query_with(cmd, &json!({"cwd": project(&sandbox)}));
    assert_eq!(
        tagged(&run, "[MCP_SERVER_STATUS]")[0]["status"],
        "connected"
    );
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(env["FROM_CONFIG"], "yes");
    assert_eq!(env["KEPT_BY_BRIDGE"], "1");
    assert!(env.get("NODE_OPTIONS").is_none(), "{env}");
    assert!(env.get("npm_config_loglevel").is_none(), "{env}");
}

fn codex_tools_of_stdio_and_http_server_tables() {
    let sandbox = Sandbox::new();
    let http = McpHttp::start();
    let tools = |id: &str, table: Value| {
        let mut cmd = mcp_command(&sandbox, "codex", "getMcpServerTools");
        cmd.env("FIXTURE_BEARER", HEADER_SECRET);
        let run = run_query_with(cmd, &json!({"serverId": id, "serverConfig": table}));
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            run.stdout.starts_with("[MCP_SERVER_TOOLS]{"),
            "Codex's tag has no space: {run:?}"
        );
        let reply = tagged(&run, "[MCP_SERVER_TOOLS]");
        assert_eq!(reply, run.json);
        assert_no_secret(&run);
        reply
    };
    let stdio = tools(
        "local",
        stdio_with("healthy", sandbox.root(), json!({"A": "b"})),
    );
    assert_eq!(stdio["success"], true, "{stdio}");
    assert_eq!(stdio["serverId"], "local");
    let listed = names(&stdio["tools"]);
    assert_eq!(listed, ["echo", "add"]);

    let remote = tools(
        "remote",
        json!({"type": "streamable_http", "url": http.url("/mcp"),
               "bearer_token_env_var": "FIXTURE_BEARER",
               "http_headers": {"X-Static": "on"},
               "env_http_headers": {"X-From-Env": "FIXTURE_BEARER"}}),
    );
    assert_eq!(remote["success"], true, "{remote}");
    assert_eq!(remote["tools"], http_tools());
    let post = http
        .seen()
        .into_iter()
        .find(|s| s.method == "POST" && s.path == "/mcp")
        .unwrap();
    assert_eq!(
        post.header("authorization"),
        Some(format!("Bearer {HEADER_SECRET}").as_str())
    );
    assert_eq!(post.header("x-static"), Some("on"));
    assert_eq!(post.header("x-from-env"), Some(HEADER_SECRET));

    // A server that answers 401 with the token in its body: the error never shows it.
    let denied = tools(
        "denied",
        json!({"url": http.url("/unauthorized"), "http_headers": {"Authorization": format!("Bearer {HEADER_SECRET}")}}),
    );
    assert_eq!(denied["success"], false);
    assert!(
        denied["error"].as_str().unwrap().contains("401"),
        "{denied}"
    );

    let unset = tools(
        "unset",
        json!({"url": http.url("/mcp"), "bearer_token_env_var": "NOT_SET_ANYWHERE"}),
    );
    assert_eq!(
        unset["error"],
        "invalid MCP server configuration: environment variable NOT_SET_ANYWHERE (bearer_token_env_var) is not set"
    );
    assert_query_error(
        &sandbox,
        "codex",
        "getMcpServerTools",
        json!({"serverId": "x"}),
        "serverConfig is required",
    );
    assert!(processes_tagged(sandbox.root()).is_empty());
}

fn the_command_lists_name_the_mcp_commands() {
    for (provider, wanted) in [
        (
            "claude",
            &["getMcpServerStatus < JSON", "getMcpServerTools < JSON"][..],
        ),
        ("codex", &["getMcpServerTools < JSON"][..]),
    ] {
        let out = bridge().args([provider, "noSuchCommand"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let help = bridge().args([provider, "--help"]).output().unwrap();
        assert!(help.status.success());
        let help = String::from_utf8_lossy(&help.stdout);
        let listed = help
            .lines()
            .find(|l| l.starts_with(&format!("Commands of {provider}: ")))
            .unwrap_or_else(|| panic!("{help}"));
        for command in wanted {
            assert!(stderr.contains(command), "{provider}: {stderr}");
            assert!(listed.contains(command), "{provider}: {listed}");
        }
    }
}
