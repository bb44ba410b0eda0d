//! `bridge claude send` end to end: the real Claude Code CLI (pinned by tests/install-clis.sh)
//! against the project's mock model server, inside a loopback-only network namespace.

mod common;

use common::*;
use serde_json::json;

fn request(message: &str) -> String {
    json!({"message": message, "permissionMode": "default"}).to_string()
}

/// With `BRIDGE_RECORD_TRANSCRIPTS=1`, keeps the real CLI's raw lines of a scenario in
/// `channels/claude/tests/transcripts/` (sandbox paths redacted), where the normalizer's
/// snapshot tests replay them.
fn record_transcript(name: &str, jsonl_with_raw: &str, sandbox: &Sandbox) {
    if std::env::var_os("BRIDGE_RECORD_TRANSCRIPTS").is_none() {
        return;
    }
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("channels/claude/tests/transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    let root = sandbox.root().to_string_lossy().into_owned();
    let lines: String = jsonl_with_raw
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "raw")
        .map(|v| {
            format!(
                "{}\n",
                v["line"].as_str().unwrap().replace(&root, "/sandbox")
            )
        })
        .collect();
    std::fs::write(dir.join(format!("{name}.jsonl")), lines).unwrap();
}

/// Runs one scenario in both formats and snapshots what a plugin / integrator would see.
fn scenario_both_formats(name: &str, prompt: &str) -> (String, String) {
    scenario_run(name, prompt, true)
}

/// [`scenario_both_formats`] without snapshots, for scenarios whose exact output depends on
/// timing (how many deltas arrive before a connection is cut).
fn scenario_run(name: &str, prompt: &str, snapshot: bool) -> (String, String) {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let markers = run_with_stdin(claude_command(&sandbox, &mock.url(), &[]), &request(prompt));
    let markers_out = String::from_utf8_lossy(&markers.stdout).into_owned();
    let sandbox2 = Sandbox::new();
    let jsonl = run_with_stdin(
        claude_command(&sandbox2, &mock.url(), &["--format", "jsonl", "--raw"]),
        &request(prompt),
    );
    let raw_and_typed = String::from_utf8_lossy(&jsonl.stdout).into_owned();
    record_transcript(name, &raw_and_typed, &sandbox2);
    // The typed stream, as a client without --raw sees it.
    let jsonl_out: String = raw_and_typed
        .lines()
        .filter(|l| !l.contains(r#""type":"raw""#) && !l.contains(r#""type":"message""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let (markers_view, jsonl_view) = (
        markers_view(&markers_out, &sandbox),
        jsonl_view(&jsonl_out, &sandbox2),
    );
    if snapshot {
        insta::assert_snapshot!(format!("{name}.markers"), markers_view);
        insta::assert_snapshot!(format!("{name}.jsonl"), jsonl_view);
    }
    (markers_out, jsonl_out)
}

#[test]
fn text_streams_deltas_and_ends_with_success() {
    let (markers, jsonl) = scenario_both_formats("text", "MOCK:text say hello");
    assert!(
        markers.starts_with("[MESSAGE_START]\n[STREAM_START]\n"),
        "{markers}"
    );
    assert!(
        markers
            .lines()
            .filter(|l| l.starts_with("[CONTENT_DELTA]"))
            .count()
            >= 3
    );
    let last = final_line(&markers);
    assert_eq!(last["success"], true);
    assert!(
        last["sessionId"].as_str().is_some_and(|s| s.len() == 36),
        "{last}"
    );
    assert_eq!(content_text(&markers), last["result"].as_str().unwrap());
    let end = jsonl.lines().last().unwrap();
    assert!(end.contains(r#""type":"turn_end","success":true"#), "{end}");
}

#[test]
fn thinking_comes_before_text() {
    let (markers, _) = scenario_both_formats("thinking", "MOCK:thinking think first");
    let first_thinking = markers.find("[THINKING_DELTA]").expect("thinking deltas");
    let first_text = markers.find("[CONTENT_DELTA]").expect("text deltas");
    assert!(first_thinking < first_text);
    assert_eq!(final_line(&markers)["success"], true);
}

#[test]
fn tool_call_then_result_then_final_text() {
    let (stdout, jsonl) = scenario_both_formats("tool", "MOCK:tool run it");
    let tool_use = stdout
        .lines()
        .find(|l| l.starts_with("[MESSAGE] ") && l.contains(r#""type":"tool_use""#))
        .expect("a Claude-shaped tool_use message");
    assert!(tool_use.contains(r#""name":"Bash""#), "{tool_use}");
    let result = stdout
        .lines()
        .find(|l| l.starts_with("[TOOL_RESULT] "))
        .expect("a tool result");
    assert!(result.contains("hello"), "{result}");
    assert_eq!(final_line(&stdout)["success"], true);
    assert!(
        jsonl.contains(r#""type":"tool_use""#) && jsonl.contains(r#""kind":"execute""#),
        "{jsonl}"
    );
}

#[test]
fn resume_keeps_the_session_and_the_model_sees_the_earlier_turn() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &request("MOCK:text first turn"),
    );
    let first_out = String::from_utf8_lossy(&first.stdout);
    let session = final_line(&first_out)["sessionId"]
        .as_str()
        .expect("first turn reports its session")
        .to_string();
    let second = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &json!({"message": "MOCK:recall what did I say?", "sessionId": session}).to_string(),
    );
    let second_out = String::from_utf8_lossy(&second.stdout);
    let last = final_line(&second_out);
    assert_eq!(last["success"], true, "{second_out}");
    assert_eq!(last["sessionId"], session.as_str());
    let text = content_text(&second_out);
    assert!(
        text.contains("first turn"),
        "the model did not see turn 1: {text}"
    );
}

#[test]
fn unknown_session_id_is_a_clear_error() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &json!({"message": "MOCK:text hi", "sessionId": "00000000-0000-4000-8000-000000000000"})
            .to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let error = stdout
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(error.contains("No conversation found"), "{error}");
    assert_eq!(final_line(&stdout)["success"], false);
    assert!(stdout.contains("[MESSAGE_END]"));
}

#[test]
fn denied_write_in_default_mode_is_reported() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &["--format", "jsonl"]),
        &request("MOCK:write create the file"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !sandbox.work().join("mock-written.txt").exists(),
        "the write must not happen"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(r#""type":"tool_result""#) && l.contains(r#""is_error":true"#)),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(r#""code":"permission_denied""#)),
        "{stdout}"
    );
}

#[test]
fn http_errors_surface_the_cli_message() {
    for (scenario, needle) in [
        ("err401", "Invalid API key"),
        ("err429", "429"),
        ("err500", "500"),
        ("err529", "529"),
    ] {
        let (stdout, jsonl) = scenario_both_formats(scenario, &format!("MOCK:{scenario} hi"));
        let error = stdout
            .lines()
            .find(|l| l.starts_with("[SEND_ERROR] "))
            .unwrap_or_else(|| panic!("{scenario}: no send error in {stdout}"));
        assert!(error.contains(needle), "{scenario}: {error}");
        assert_eq!(final_line(&stdout)["success"], false, "{scenario}");
        assert!(jsonl.contains(r#""type":"error""#), "{scenario}: {jsonl}");
    }
}

#[test]
fn a_stream_cut_midway_is_never_a_silent_success() {
    for scenario in ["cut", "cut-after-block", "midstream"] {
        // How many deltas arrive before the cut depends on timing: asserted, not snapshotted
        // (the recorded transcripts in channels/claude/tests/transcripts pin one run each).
        let (stdout, _) = scenario_run(scenario, &format!("MOCK:{scenario} go"), false);
        let last = final_line(&stdout);
        // Claude Code retries some broken streams; whatever it ends with, the bridge reports
        // what the CLI's own result said, and streamed text matches the result on success.
        if last["success"] == true {
            assert!(
                content_text(&stdout).ends_with(last["result"].as_str().unwrap()),
                "{scenario}: {stdout}"
            );
        } else {
            assert!(stdout.contains("[SEND_ERROR]"), "{scenario}: {stdout}");
        }
    }
}

#[test]
fn recall_after_resume_in_both_formats() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &request("MOCK:text first turn"),
    );
    let session = final_line(&String::from_utf8_lossy(&first.stdout))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for format in ["markers", "jsonl"] {
        let out = run_with_stdin(
            claude_command(&sandbox, &mock.url(), &["--format", format]),
            &json!({"message": "MOCK:recall what did I say?", "sessionId": session}).to_string(),
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let view = if format == "markers" {
            markers_view(&stdout, &sandbox)
        } else {
            jsonl_view(&stdout, &sandbox)
        };
        insta::assert_snapshot!(format!("recall.{format}"), view);
    }
}

enum Stop {
    ControlLine,
    Signal(i32),
}

/// Interrupts a slow stream after the third delta and checks the plugin-visible outcome and
/// that nothing of the CLI's process group is left.
fn interrupt_slow_stream(stop: Stop) {
    use std::io::{BufRead, Write};
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = claude_command(&sandbox, &mock.url(), &[]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(request("MOCK:slow talk").as_bytes())
        .unwrap();
    stdin.write_all(b"\n").unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut seen, mut line, mut deltas) = (String::new(), String::new(), 0);
    let mut groups = Vec::new();
    let mut stopped_at = None;
    while reader.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.starts_with("[CONTENT_DELTA]") {
            deltas += 1;
            if deltas == 3 {
                // The CLI runs as the leader of its own group: its pid is the group id.
                groups = children_of(child.id());
                assert!(!groups.is_empty(), "the CLI is a child of the bridge");
                match stop {
                    Stop::ControlLine => stdin.write_all(b"{\"type\":\"interrupt\"}\n").unwrap(),
                    // SAFETY: signalling our own child process.
                    Stop::Signal(sig) => unsafe {
                        libc::kill(child.id() as i32, sig);
                    },
                }
                stopped_at = Some(std::time::Instant::now());
            }
        }
        line.clear();
    }
    let status = child.wait().unwrap();
    let stopped_at = stopped_at.unwrap_or_else(|| panic!("never reached 3 deltas: {seen}"));
    assert!(stopped_at.elapsed() < std::time::Duration::from_secs(15));
    assert!(deltas < 40, "the stream was not interrupted: {seen}");
    let last = final_line(&seen);
    assert_eq!(last["success"], false);
    assert_eq!(last["error"], "User interrupted");
    assert!(seen.contains("[STREAM_END]\n[MESSAGE_END]\n"), "{seen}");
    assert!(
        !seen.contains("[SEND_ERROR]"),
        "an interrupt is not an error for the plugin: {seen}"
    );
    assert_eq!(status.code(), Some(130));
    for pgid in groups {
        assert!(
            !group_alive(pgid),
            "process group {pgid} outlived the bridge"
        );
    }
}

#[test]
fn interrupt_control_line_during_a_slow_stream_stops_within_seconds() {
    interrupt_slow_stream(Stop::ControlLine);
}

#[test]
fn sigterm_to_the_bridge_stops_the_turn_and_its_process_group() {
    interrupt_slow_stream(Stop::Signal(libc::SIGTERM));
}

#[test]
fn sigint_to_the_bridge_stops_the_turn_and_its_process_group() {
    interrupt_slow_stream(Stop::Signal(libc::SIGINT));
}

#[test]
fn prompt_argument_works_for_terminal_users() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let mut cmd = claude_command(&sandbox, &mock.url(), &["MOCK:text", "hello", "there"]);
    cmd.stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
    assert!(out.status.success());
}

#[test]
fn an_untested_cli_version_is_warned_about_and_the_pinned_one_is_not() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // Found on PATH (not pinned by an env override): the channel checks the version.
    let mut cmd = claude_command(&sandbox, &mock.url(), &["--format", "jsonl"]);
    cmd.env_remove("CLAUDE_CODE_PATH");
    let out = run_with_stdin(cmd, &request("MOCK:text hi"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""success":true"#), "{stdout}");
    assert!(
        !stdout.contains("untested_version"),
        "2.1.197 is tested: {stdout}"
    );

    // A `claude` that reports an old version, first on PATH, wrapping the real one.
    let fake_dir = sandbox.root().join("old-claude");
    std::fs::create_dir_all(&fake_dir).unwrap();
    let real = cli_path("claude");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.0.1 (Claude Code)'; exit 0; fi\nexec '{}' \"$@\"\n",
        real.display()
    );
    let fake = fake_dir.join("claude");
    std::fs::write(&fake, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", fake_dir.display(), std::env::var("PATH").unwrap());
    let mut cmd = claude_command(&sandbox, &mock.url(), &["--format", "jsonl"]);
    cmd.env_remove("CLAUDE_CODE_PATH").env("PATH", path);
    let out = run_with_stdin(cmd, &request("MOCK:slow hi"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let warning = stdout
        .lines()
        .find(|l| l.contains(r#""code":"untested_version""#))
        .unwrap_or_else(|| panic!("no untested-version warning:\n{stdout}"));
    assert!(
        warning.contains("2.0.1") && warning.contains("2.1.197"),
        "{warning}"
    );
}

/// Both attachment shapes the plugin sends reach the model as image blocks next to the prompt:
/// an inline `data:` URL and a `local_image` file (typed from its extension).
#[test]
fn image_attachments_reach_the_model_as_image_blocks() {
    use base64::Engine as _;
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    // A 1x1 GIF (Claude Code drops images it cannot decode).
    let gif = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";
    let local = sandbox.work().join("shot.gif");
    std::fs::write(
        &local,
        base64::engine::general_purpose::STANDARD
            .decode(gif)
            .unwrap(),
    )
    .unwrap();
    let out = run_with_stdin(
        claude_command(&sandbox, &mock.url(), &[]),
        &json!({
            "message": "MOCK:text what is in the pictures?",
            "attachments": [
                {"fileName": "dot.png", "mediaType": "image/png", "data": format!("data:image/png;base64,{png}")},
                {"type": "local_image", "path": local},
            ],
        })
        .to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(final_line(&stdout)["success"], true, "{stdout}");
    let request = &mock.model_requests()[0].body;
    let content = request["messages"].as_array().unwrap()[0]["content"]
        .as_array()
        .expect("content blocks")
        .clone();
    let images: Vec<(String, String)> = content
        .iter()
        .filter(|b| b["type"] == "image")
        .map(|b| {
            (
                b["source"]["media_type"].as_str().unwrap().to_string(),
                b["source"]["data"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        images,
        [
            ("image/png".to_string(), png.to_string()),
            ("image/gif".to_string(), gif.to_string()),
        ]
    );
    assert!(
        content.iter().any(|b| b["type"] == "text"
            && b["text"]
                .as_str()
                .is_some_and(|t| t.contains("what is in the pictures?"))),
        "{content:?}"
    );
}

/// The model repeats the API key it was shown, streamed three characters a delta through the
/// real CLI: no single line holds the whole key, and the text the client puts together shows
/// `[redacted]` in both formats.
#[test]
fn a_key_the_model_streams_in_pieces_is_redacted() {
    let mock = Mock::start();
    for format in ["markers", "jsonl"] {
        let sandbox = Sandbox::new();
        let out = run_with_stdin(
            claude_command(&sandbox, &mock.url(), &["--format", format]),
            &request(&format!("MOCK:spell my key is {CANARY_KEY} ok")),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stdout.contains(CANARY_KEY) && !stderr.contains(CANARY_KEY));
        let deltas: Vec<String> = if format == "markers" {
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix("[CONTENT_DELTA] "))
                .map(|p| serde_json::from_str(p).unwrap())
                .collect()
        } else {
            of_type(&jsonl_events(&stdout), "text_delta")
                .iter()
                .map(|e| e["text"].as_str().unwrap().to_string())
                .collect()
        };
        assert!(deltas.len() > 5, "streamed in pieces: {stdout}");
        assert_eq!(deltas.concat(), "my key is [redacted] ok", "{stdout}");
    }
}
