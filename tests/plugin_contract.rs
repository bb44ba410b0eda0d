//! Contract tests: the bridge's output as the JetBrains plugin's own Java reads it, one per
//! provider path (Claude per-process, Codex, the generic CLI path `MarkerCliBridge`), against
//! the real CLIs and the mock model, inside a loopback-only network namespace.
//!
//! [`common::plugin::PluginView`] reads stdout (and stderr, which the plugin merges) with the
//! plugin's rules and assembles what its chat would show: the assistant text, thinking, tool
//! cards, the context ring (used / window), the per-turn usage, statuses and the error bubbles.
//! Each test runs a streamed turn with IDE context (`openedFiles`), the same turn with
//! `"streaming": false`, and a failure, and snapshots what the plugin assembled.

mod common;

use std::process::Output;

use common::pi_family::PI;
use common::plugin::{PluginPath, PluginView};
use common::*;
use regex::Regex;
use serde_json::{Value, json};

fn read(path: PluginPath, out: &Output) -> PluginView {
    PluginView::read(
        path,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.code().unwrap_or(-1),
    )
}

/// The plugin's `openedFiles` for the sandbox's `hello.txt`, line 1 selected.
fn opened_files(sandbox: &Sandbox) -> Value {
    let work = sandbox.work();
    json!({
        "active": format!("{}/hello.txt#L1-1", work.display()),
        "selection": {"startLine": 1, "endLine": 1, "selectedText": "hello"},
        "others": [format!("{}/notes.md", work.display())],
    })
}

/// The IDE context reached the model: some request body holds the block with the active file
/// and the selection.
fn assert_ide_context_reached_the_model(mock: &Mock, sandbox: &Sandbox) {
    let bodies: Vec<String> = mock
        .model_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let active = format!("{}/hello.txt#L1-1", sandbox.work().display());
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("<ide-context>") && b.contains(&active) && b.contains("notes.md")),
        "no model request carried the IDE context"
    );
}

/// No streaming markers in a `"streaming": false` turn.
fn assert_not_streamed(stdout: &str) {
    for tag in [
        "[STREAM_START]",
        "[STREAM_END]",
        "[CONTENT_DELTA]",
        "[THINKING_DELTA]",
        "[BLOCK_RESET]",
    ] {
        assert!(
            !stdout.lines().any(|l| l.starts_with(tag)),
            "{tag} in a non-streaming turn:\n{stdout}"
        );
    }
    assert!(
        stdout.lines().any(|l| l.starts_with("[CONTENT] ")),
        "{stdout}"
    );
}

/// One snapshot of several runs: `== name` and what the plugin assembled, each.
fn summaries(runs: &[(&str, &PluginView, &Sandbox)]) -> String {
    runs.iter()
        .map(|(name, v, sb)| format!("== {name}\n{}", v.summary(|t| stable(t, sb))))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stable(text: &str, sandbox: &Sandbox) -> String {
    let ids = Regex::new(r"(call|fc|resp|item|ws)_[0-9a-zA-Z_]+").unwrap();
    let turn = Regex::new(r"codex_[0-9a-f]{8}_").unwrap();
    let text = redact(text, sandbox);
    let text = turn.replace_all(&text, "");
    ids.replace_all(&text, "${1}_[id]").into_owned()
}

#[test]
fn claude_path_shows_text_tools_usage_and_one_error() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
    let request = |extra: Value| {
        request_with(
            json!({"message": "MOCK:read explain this", "cwd": sandbox.work(), "permissionMode": "default", "openedFiles": opened_files(&sandbox)}),
            extra,
        )
    };
    let streamed = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &request(json!({})),
    );
    assert_ide_context_reached_the_model(&mock, &sandbox);
    let streamed_view = read(PluginPath::Claude, &streamed);
    assert!(
        streamed_view.errors().is_empty(),
        "{:?}",
        streamed_view.errors()
    );
    assert_eq!(streamed_view.completed(), Some(true));
    assert!(
        streamed_view.tools().iter().any(|t| t.starts_with("Read ")),
        "{:?}",
        streamed_view.tools()
    );

    let whole = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &request(json!({"streaming": false})),
    );
    let whole_stdout = String::from_utf8_lossy(&whole.stdout).into_owned();
    assert_not_streamed(&whole_stdout);
    let whole_view = read(PluginPath::Claude, &whole);
    assert_eq!(whole_view.texts(), streamed_view.texts(), "{whole_stdout}");
    assert!(whole_view.errors().is_empty(), "{:?}", whole_view.errors());

    let failed = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &request(json!({"message": "MOCK:err401 hi"})),
    );
    let failed_view = read(PluginPath::Claude, &failed);
    assert_eq!(failed_view.errors().len(), 1, "{:?}", failed_view.errors());

    let invalid = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        r#"{"message":"hi","cwd":"/nonexistent/dir"}"#,
    );
    assert_eq!(invalid.status.code(), Some(0));
    let invalid_view = read(PluginPath::Claude, &invalid);
    assert_eq!(
        invalid_view.errors().len(),
        1,
        "{:?}",
        invalid_view.errors()
    );

    insta::assert_snapshot!(
        "claude",
        summaries(&[
            ("streamed", &streamed_view, &sandbox),
            ("streaming false", &whole_view, &sandbox),
            ("HTTP 401", &failed_view, &sandbox),
            ("invalid request", &invalid_view, &sandbox),
        ])
    );
}

fn codex_request(mock: &Mock, sandbox: &Sandbox, message: &str, extra: Value) -> String {
    request_with(
        json!({
            "message": message,
            "cwd": sandbox.work(),
            "model": "gpt-5.5",
            "baseUrl": mock.api_base(),
            "apiKey": CANARY_KEY,
            "openedFiles": opened_files(sandbox),
        }),
        extra,
    )
}

#[test]
fn codex_path_shows_cards_turn_usage_and_the_context_window() {
    let mock = Mock::start();
    let run = |message: &str, extra: Value| {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
        let out = run_with_stdin(
            codex_command(&sandbox, &[]),
            &codex_request(&mock, &sandbox, message, extra),
        );
        (out, sandbox)
    };
    let (streamed, sandbox) = run("MOCK:read explain this", json!({}));
    assert_ide_context_reached_the_model(&mock, &sandbox);
    let streamed_view = read(PluginPath::Codex, &streamed);
    let stdout = String::from_utf8_lossy(&streamed.stdout).into_owned();
    assert!(
        streamed_view.errors().is_empty(),
        "{:?}\n{stdout}",
        streamed_view.errors()
    );
    // The read is a Read card, not Bash.
    assert!(
        streamed_view
            .tools()
            .iter()
            .any(|t| t.starts_with("Read ") && t.contains("hello.txt")),
        "{:?}",
        streamed_view.tools()
    );
    // Turn usage as the handler computes it: input without the cached part, not 0.
    let turn = streamed_view.turn_usage().expect("turn usage").clone();
    assert!(turn["input_tokens"].as_u64().unwrap() > 0, "{turn}");
    // The context ring: the last model call, inside the window Codex reports.
    let (used, window) = streamed_view.context().expect("context usage");
    let window = window.expect("model_context_window from the rollout");
    assert!(used > 0 && used < window, "{used} / {window}");
    let total_input = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix("[MESSAGE] ")
                .filter(|j| j.contains("token_count"))
        })
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
        .map(|v| {
            v["payload"]["info"]["total_token_usage"]["input_tokens"]
                .as_u64()
                .unwrap()
        })
        .unwrap();
    assert!(
        used < total_input,
        "two model calls: the last one is {used}, not the sum {total_input}"
    );

    let (whole, whole_sandbox) = run("MOCK:read explain this", json!({"streaming": false}));
    let whole_stdout = String::from_utf8_lossy(&whole.stdout).into_owned();
    assert_not_streamed(&whole_stdout);
    let whole_view = read(PluginPath::Codex, &whole);
    assert_eq!(whole_view.texts(), streamed_view.texts(), "{whole_stdout}");

    let (failed, failed_sandbox) = run("MOCK:err401 hi", json!({}));
    let failed_view = read(PluginPath::Codex, &failed);
    assert_eq!(failed_view.errors().len(), 1, "{:?}", failed_view.errors());

    insta::assert_snapshot!(
        "codex",
        summaries(&[
            ("streamed", &streamed_view, &sandbox),
            ("streaming false", &whole_view, &whole_sandbox),
            ("HTTP 401", &failed_view, &failed_sandbox),
        ])
    );
}

#[test]
fn generic_cli_path_shows_one_error_per_failure() {
    let mock = Mock::start();
    let sandbox = PI.sandbox(&mock);
    std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap();
    let path = PluginPath::Cli("pi");
    let request = |message: &str, extra: Value| {
        let mut extra = extra;
        extra["openedFiles"] = opened_files(&sandbox);
        PI.request(&sandbox, message, extra)
    };
    let streamed = run_with_stdin(
        pi_command(&sandbox, &[]),
        &request("MOCK:tool run it", json!({})),
    );
    assert_ide_context_reached_the_model(&mock, &sandbox);
    let streamed_view = read(path, &streamed);
    assert!(
        streamed_view.errors().is_empty(),
        "{:?}",
        streamed_view.errors()
    );
    assert_eq!(streamed_view.completed(), Some(true));

    let whole = run_with_stdin(
        pi_command(&sandbox, &[]),
        &request("MOCK:tool run it", json!({"streaming": false})),
    );
    let whole_stdout = String::from_utf8_lossy(&whole.stdout).into_owned();
    assert_not_streamed(&whole_stdout);
    let whole_view = read(path, &whole);
    // Streamed, the handler keeps only the text after the tool call in its message (the text
    // before it was shown live as deltas); whole, both texts stay in the message.
    let last = streamed_view
        .texts()
        .last()
        .cloned()
        .expect("streamed text");
    assert!(
        whole_view.texts().join("\n").ends_with(&last),
        "{whole_stdout}"
    );

    let failed = run_with_stdin(
        pi_command(&sandbox, &[]),
        &request("MOCK:err401 hi", json!({})),
    );
    let failed_view = read(path, &failed);
    assert_eq!(failed_view.errors().len(), 1, "{:?}", failed_view.errors());

    // A request that fails validation: one error bubble (BaseSDKBridge repeats the error when
    // the exit code is not 0).
    let invalid = run_with_stdin(
        pi_command(&sandbox, &[]),
        r#"{"message":"hi","cwd":"/nonexistent/dir"}"#,
    );
    let invalid_view = read(path, &invalid);
    assert_eq!(
        invalid_view.errors().len(),
        1,
        "{:?}",
        invalid_view.errors()
    );

    insta::assert_snapshot!(
        "generic_cli",
        summaries(&[
            ("streamed", &streamed_view, &sandbox),
            ("streaming false", &whole_view, &sandbox),
            ("HTTP 401", &failed_view, &sandbox),
            ("invalid request", &invalid_view, &sandbox),
        ])
    );
}
