//! `bridge minimax send`, `bridge zcode send` and a relay declared in `providers.toml`, end to
//! end: the real Claude Code CLI pointed at the project's mock model server (speaking the
//! relays' dialect: cumulative and corrective snapshots, repeating increments, relay-style
//! errors), inside a loopback-only network namespace.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};

/// A key that must never reach a relay: the user's Anthropic key, set next to the relay's.
const ANTHROPIC_KEY: &str = "sk-ant-not-for-relays-4d2b8e";

/// One relay under test: provider id, key variable, the path its base URL has on the mock,
/// and the models the mock must see for it.
struct Relay {
    id: &'static str,
    key_env: &'static str,
    prefix: &'static str,
    models: &'static [&'static str],
}

const MINIMAX: Relay = Relay {
    id: "minimax",
    key_env: "MINIMAX_API_KEY",
    prefix: "/anthropic",
    models: &["MiniMax-M2"],
};

const ZCODE: Relay = Relay {
    id: "zcode",
    key_env: "ZAI_API_KEY",
    prefix: "/api/anthropic",
    models: &["glm-4.6", "glm-4.5-air"],
};

/// Declared in the sandbox's `providers.toml` by [`relay_command`].
const INHOUSE: Relay = Relay {
    id: "inhouse",
    key_env: "INHOUSE_RELAY_KEY",
    prefix: "/inhouse",
    models: &["inhouse-large", "inhouse-small"],
};

const PROVIDERS_TOML: &str = r#"[providers.inhouse]
display_name = "In-house relay"
base_url = "https://relay.invalid/inhouse"
key_env = "INHOUSE_RELAY_KEY"
deltas = "cumulative"
models = { main = "inhouse-large", opus = "inhouse-large", sonnet = "inhouse-large", haiku = "inhouse-small", small_fast = "inhouse-small" }
"#;

/// Writes `text` as the sandbox's `providers.toml`; returns its `XDG_CONFIG_HOME`.
fn write_providers(sandbox: &Sandbox, text: &str) -> std::path::PathBuf {
    let config = sandbox.root().join("config");
    std::fs::create_dir_all(config.join("bridge")).unwrap();
    std::fs::write(config.join("bridge/providers.toml"), text).unwrap();
    config
}

/// The bridge with a clean environment: HOME in the sandbox, its `providers.toml`.
fn bridge_with_providers(sandbox: &Sandbox, config: &std::path::Path) -> Command {
    let mut cmd = bridge();
    cmd.env_clear()
        .env("XDG_CONFIG_HOME", config)
        .env("HOME", sandbox.home());
    cmd
}

/// `bridge <relay> send` with a clean environment: the relay's key in its variable (the
/// canary), an Anthropic key that must not be used, `providers.toml` in the sandbox's
/// `XDG_CONFIG_HOME`. The endpoint is the mock, under the relay's path, through `baseUrl`
/// (the vendors' default URLs are unreachable here).
fn relay_command(sandbox: &Sandbox, relay: &Relay, extra_args: &[&str]) -> Command {
    let config = write_providers(sandbox, PROVIDERS_TOML);
    let mut cmd = bridge_with_providers(sandbox, &config);
    cmd.arg(relay.id)
        .arg("send")
        .args(extra_args)
        .current_dir(sandbox.work())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLAUDE_CONFIG_DIR", sandbox.home().join(".claude"))
        .env("TMPDIR", sandbox.root().join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("CLAUDE_CODE_PATH", cli_path("claude"))
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env(relay.key_env, CANARY_KEY);
    cmd
}

fn request(mock: &Mock, relay: &Relay, message: &str) -> Value {
    json!({"message": message, "permissionMode": "default",
           "baseUrl": format!("{}{}", mock.url(), relay.prefix)})
}

/// Runs one turn and checks what every relay turn must satisfy: neither key in any output, the
/// relay's key (and only it) at the mock, only the relay's models asked for.
fn run(mock: &Mock, relay: &Relay, format: &str, request: &Value) -> (String, Sandbox) {
    let sandbox = Sandbox::new();
    mock.server.clear_requests();
    let out = run_with_stdin(
        relay_command(&sandbox, relay, &["--format", format]),
        &request.to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains(ANTHROPIC_KEY) && !stderr.contains(ANTHROPIC_KEY),
        "{stdout}{stderr}"
    );
    let requests = mock.model_requests();
    assert!(!requests.is_empty(), "no model request: {stdout}\n{stderr}");
    for r in &requests {
        assert_eq!(
            r.api_key.as_deref(),
            Some(CANARY_KEY),
            "{}: the relay's key must reach it",
            r.path
        );
        assert!(r.path.starts_with(relay.prefix), "{}", r.path);
        let model = r.model().unwrap_or_default();
        assert!(
            relay.models.contains(&model),
            "{}: the mock saw model {model:?}, not one of {:?}",
            relay.id,
            relay.models
        );
    }
    // The main loop (the request with tools) uses the relay's main model.
    assert!(
        requests.iter().any(
            |r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty())
                && r.model() == Some(relay.models[0])
        ),
        "{}: no main-loop request with {}",
        relay.id,
        relay.models[0]
    );
    (stdout, sandbox)
}

/// The answer a plugin assembles from marker lines (`[BLOCK_RESET]` starts a new segment; the
/// answer is the last one), and the final line's result.
fn markers_answer(stdout: &str) -> (String, Value) {
    let mut segment = String::new();
    for line in stdout.lines() {
        if line == "[BLOCK_RESET]" {
            segment.clear();
        } else if let Some(payload) = line.strip_prefix("[CONTENT_DELTA] ") {
            segment.push_str(&serde_json::from_str::<String>(payload).unwrap());
        }
    }
    (segment, final_line(stdout))
}

/// The same for JSONL: the last segment of `text_delta`s, and the `turn_end` event.
fn jsonl_answer(stdout: &str) -> (String, Value) {
    let events = jsonl_events(stdout);
    let mut segment = String::new();
    for event in &events {
        match event["type"].as_str() {
            Some("block_reset") => segment.clear(),
            Some("text_delta") => segment.push_str(event["text"].as_str().unwrap()),
            _ => {}
        }
    }
    let end = events.last().cloned().unwrap_or_default();
    assert_eq!(end["type"], "turn_end", "{stdout}");
    (segment, end)
}

/// One scenario through `relay` in both formats: the text assembled, the final result and the
/// JSONL `turn_end` all equal `expected`; with `snapshot`, both views are snapshotted.
fn exact_text(relay: &Relay, scenario: &str, expected: &str, snapshot: bool) {
    let mock = Mock::start();
    let req = request(&mock, relay, &format!("MOCK:{scenario} say it"));
    let name = format!("{}-{scenario}", relay.id);
    let check = |markers: &str, jsonl: &str| {
        let (text, last) = markers_answer(markers);
        assert_eq!(text, expected, "{name} markers:\n{markers}");
        assert_eq!(last["success"], true, "{name}: {markers}");
        assert_eq!(last["result"], expected, "{name}: {markers}");
        let (text, end) = jsonl_answer(jsonl);
        assert_eq!(text, expected, "{name} jsonl:\n{jsonl}");
        assert_eq!(end["success"], true, "{name}: {jsonl}");
        assert_eq!(end["result"], expected, "{name}: {jsonl}");
    };
    if snapshot {
        let (markers, jsonl) = snapshot_both_formats(
            &name,
            |args| {
                let format = if args.is_empty() { "markers" } else { "jsonl" };
                run(&mock, relay, format, &req)
            },
            |view| view,
        );
        check(&markers, &jsonl);
    } else {
        let (markers, _) = run(&mock, relay, "markers", &req);
        let (jsonl, _) = run(&mock, relay, "jsonl", &req);
        check(&markers, &jsonl);
    }
}

#[test]
fn minimax_cumulative_snapshots_arrive_once() {
    exact_text(
        &MINIMAX,
        "relay-cumulative",
        mock_llm::scenario::RELAY_TEXT,
        true,
    );
}

#[test]
fn minimax_repeated_increments_keep_every_character() {
    exact_text(
        &MINIMAX,
        "relay-repeat",
        mock_llm::scenario::RELAY_REPEAT_TEXT,
        true,
    );
}

#[test]
fn zcode_snapshots_learned_late_are_corrected_with_a_block_reset() {
    exact_text(&ZCODE, "relay-late", mock_llm::scenario::RELAY_TEXT, true);
}

#[test]
fn zcode_repeated_increments_keep_every_character() {
    exact_text(
        &ZCODE,
        "relay-repeat",
        mock_llm::scenario::RELAY_REPEAT_TEXT,
        false,
    );
}

#[test]
fn a_user_defined_relay_handles_a_corrective_snapshot() {
    exact_text(
        &INHOUSE,
        "relay-corrective",
        mock_llm::scenario::RELAY_CORRECTED_TEXT,
        true,
    );
}

#[test]
fn a_user_defined_relay_streams_cumulative_thinking_and_text() {
    exact_text(
        &INHOUSE,
        "relay-cumulative",
        mock_llm::scenario::RELAY_TEXT,
        false,
    );
}

#[test]
fn relay_errors_carry_the_relays_message() {
    for relay in [&MINIMAX, &ZCODE, &INHOUSE] {
        for (scenario, message) in [
            ("relay-err401", mock_llm::scenario::RELAY_401_MESSAGE),
            ("relay-err529", mock_llm::scenario::RELAY_529_MESSAGE),
        ] {
            let mock = Mock::start();
            let req = request(&mock, relay, &format!("MOCK:{scenario} hi"));
            let (markers, _) = run(&mock, relay, "markers", &req);
            let error = markers
                .lines()
                .find_map(|l| l.strip_prefix("[SEND_ERROR] "))
                .unwrap_or_else(|| panic!("{} {scenario}: no send error:\n{markers}", relay.id));
            assert!(
                error.contains(message),
                "{} {scenario}: the relay's message is lost: {error}",
                relay.id
            );
            assert_eq!(final_line(&markers)["success"], false);
            let (jsonl, _) = run(&mock, relay, "jsonl", &req);
            let end = jsonl_events(&jsonl).pop().unwrap();
            assert_eq!(end["success"], false, "{jsonl}");
            assert!(
                end["error"].as_str().is_some_and(|e| e.contains(message)),
                "{} {scenario}: {end}",
                relay.id
            );
        }
    }
}

#[test]
fn a_relay_without_a_key_fails_before_claude_starts() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = relay_command(&sandbox, &ZCODE, &[]);
    cmd.env_remove(ZCODE.key_env);
    let out = run_with_stdin(cmd, &request(&mock, &ZCODE, "MOCK:text hi").to_string());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let error = stdout
        .lines()
        .find_map(|l| l.strip_prefix("[SEND_ERROR] "))
        .unwrap_or_else(|| panic!("no send error:\n{stdout}"));
    assert!(error.contains("ZAI_API_KEY"), "{error}");
    assert!(mock.model_requests().is_empty(), "the CLI must not run");
}

#[test]
fn an_approval_round_trip_through_a_relay() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = relay_command(&sandbox, &MINIMAX, &[]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn bridge");
    let mut stdin = child.stdin.take();
    let req = request(&mock, &MINIMAX, "MOCK:danger make a file");
    writeln!(stdin.as_mut().unwrap(), "{req}").unwrap();
    let mut out = String::new();
    let mut asked = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(payload) = line.strip_prefix("[PERMISSION_REQUEST] ") {
            asked += 1;
            let request: Value = serde_json::from_str(payload).unwrap();
            assert_eq!(request["toolName"], "Bash");
            let reply = json!({"type": "permission_response", "requestId": request["requestId"],
                               "decision": "allow"});
            writeln!(stdin.as_mut().unwrap(), "{reply}").unwrap();
        }
        if line.starts_with('{') && line.contains("\"success\"") {
            stdin.take();
        }
        out.push_str(&line);
        out.push('\n');
    }
    drop(stdin);
    child.wait().unwrap();
    assert!(!out.contains(CANARY_KEY) && !out.contains(ANTHROPIC_KEY));
    assert_eq!(asked, 1, "{out}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command did not run:\n{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("[TOOL_RESULT]") && l.contains("created")),
        "{out}"
    );
    assert_eq!(final_line(&out)["success"], true, "{out}");
    for r in mock.model_requests() {
        assert_eq!(r.api_key.as_deref(), Some(CANARY_KEY));
    }
}

#[test]
fn resume_through_a_relay_keeps_the_session() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run_with_stdin(
        relay_command(&sandbox, &ZCODE, &[]),
        &request(&mock, &ZCODE, "MOCK:relay-cumulative first turn").to_string(),
    );
    let first_out = String::from_utf8_lossy(&first.stdout);
    let session = final_line(&first_out)["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {first_out}"))
        .to_string();
    let mut second_request = request(&mock, &ZCODE, "MOCK:recall what did I say?");
    second_request["sessionId"] = json!(session);
    let second = run_with_stdin(
        relay_command(&sandbox, &ZCODE, &[]),
        &second_request.to_string(),
    );
    let second_out = String::from_utf8_lossy(&second.stdout);
    let last = final_line(&second_out);
    assert_eq!(last["success"], true, "{second_out}");
    assert_eq!(last["sessionId"], session.as_str());
    let (text, _) = markers_answer(&second_out);
    assert!(
        text.contains("first turn"),
        "the model did not see turn 1: {text}"
    );
    for r in mock.model_requests() {
        assert_eq!(r.api_key.as_deref(), Some(CANARY_KEY));
    }
}

#[test]
fn an_invalid_providers_file_names_file_line_and_field() {
    let sandbox = Sandbox::new();
    let config = write_providers(
        &sandbox,
        "[providers.inhouse]\nbase_url = \"https://relay.invalid\"\nkey_env = \"K\"\ndeltas = \"sometimes\"\n",
    );
    let out = bridge_with_providers(&sandbox, &config)
        .args(["inhouse", "send", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = config.join("bridge/providers.toml");
    let expected = format!("{}:4:10: `providers.inhouse.deltas`", file.display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        stdout.contains("Invalid provider: inhouse") && stdout.contains(&expected),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1));

    // A built-in id is refused.
    write_providers(
        &sandbox,
        "[providers.claude]\nbase_url = \"https://relay.invalid\"\nkey_env = \"K\"\n",
    );
    let out = bridge_with_providers(&sandbox, &config)
        .args(["system", "status", "--json"])
        .env("BRIDGE_PROVIDERS", "claude,minimax")
        .env("BRIDGE_LOGIN_SHELL", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`providers.claude`: `claude` is a built-in provider"),
        "{stderr}"
    );
}

#[test]
fn system_status_lists_the_relays_with_key_presence_only() {
    let sandbox = Sandbox::new();
    let config = write_providers(&sandbox, PROVIDERS_TOML);
    let out = bridge_with_providers(&sandbox, &config)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_CACHE_HOME", sandbox.root().join("cache"))
        .env("BRIDGE_LOGIN_SHELL", "0")
        .env("BRIDGE_PROVIDERS", "minimax,zcode,inhouse")
        .env("MINIMAX_API_KEY", CANARY_KEY)
        .args(["system", "status", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(CANARY_KEY));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let providers = report["providers"].as_array().unwrap();
    let ids: Vec<&str> = providers
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["minimax", "zcode", "inhouse"]);
    let auth = |i: usize| providers[i]["auth"][0].clone();
    assert_eq!(
        auth(0),
        json!({"name": "MINIMAX_API_KEY", "kind": "env", "present": true})
    );
    assert_eq!(
        auth(1),
        json!({"name": "ZAI_API_KEY", "kind": "env", "present": false})
    );
    assert_eq!(
        auth(2),
        json!({"name": "INHOUSE_RELAY_KEY", "kind": "env", "present": false})
    );
    assert_eq!(providers[2]["displayName"], "In-house relay");
    // Claude Code is what a relay runs.
    assert_eq!(providers[0]["installed"], true, "{stdout}");
    assert_eq!(providers[0]["version"], "2.1.197", "{stdout}");
}

/// A relay session keeps one Claude Code process on the relay's endpoint: turn 2 sees turn 1,
/// the relay's key (and only it) reaches the mock, the relay's delta mode still applies.
#[test]
fn a_relay_session_keeps_one_warm_process() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let cmd = as_session_in(&relay_command(&sandbox, &ZCODE, &[]), "jsonl");
    let input = format!(
        "{}\n{}\n",
        request(&mock, &ZCODE, "MOCK:relay-cumulative first turn"),
        request(&mock, &ZCODE, "MOCK:recall what did I say?")
    );
    let out = run_with_stdin(cmd, &input);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains(ANTHROPIC_KEY));
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(ends.len(), 2, "{stdout}");
    assert!(ends.iter().all(|e| e["success"] == true), "{stdout}");
    assert_eq!(ends[0]["session_id"], ends[1]["session_id"]);
    assert!(
        ends[1]["result"]
            .as_str()
            .unwrap_or_default()
            .contains("first turn"),
        "{stdout}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "status" && e["message"] == "conversation: warm process"),
        "{stdout}"
    );
    for r in mock.model_requests() {
        assert_eq!(r.api_key.as_deref(), Some(CANARY_KEY));
        assert!(r.path.starts_with(ZCODE.prefix), "{}", r.path);
    }
}
