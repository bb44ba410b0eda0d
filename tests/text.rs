//! `--format text`, the terminal view, end to end with the real Claude Code CLI against the
//! mock, in the loopback namespace: the answer alone on stdout, progress on stderr, approvals
//! answered by typing `y` / `n` on stdin, errors with exit code 1.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use common::*;

fn mock() -> mock_llm::MockServer {
    require_loopback_only_network();
    mock_llm::MockServer::start_in_thread(mock_llm::Config::default()).expect("mock")
}

struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

/// `bridge claude send --format text PROMPT` with stdin closed at once.
fn run(sandbox: &Sandbox, url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--format", "text"];
    all.extend(args);
    let out = claude_command(sandbox, url, &all)
        .stdin(Stdio::null())
        .output()
        .expect("run bridge");
    let run = Run {
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
        code: out.status.code(),
    };
    assert!(!run.stdout.contains(CANARY_KEY) && !run.stderr.contains(CANARY_KEY));
    run
}

#[test]
fn the_answer_alone_is_on_stdout_and_the_session_on_stderr() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let r = run(&sandbox, &mock.base_url(), &["MOCK:text say hello"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, format!("{}\n", mock_llm::scenario::HELLO_TEXT));
    // `session <id> · <in> in / <out> out tokens[ · $cost]`
    let last = r.stderr.lines().last().unwrap_or_default();
    let mut parts = last.split(" · ");
    let id = parts
        .next()
        .and_then(|p| p.strip_prefix("session "))
        .expect("the session id to resume");
    assert_eq!(id.len(), 36, "{last}");
    let tokens = parts.next().expect("the token use");
    assert!(
        tokens.ends_with(" out tokens") && tokens.contains(" in / "),
        "{last}"
    );
    assert!(!r.stderr.contains("[MESSAGE"), "{}", r.stderr);
}

#[test]
fn a_tool_call_and_its_output_show_on_stderr() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let r = run(
        &sandbox,
        &mock.base_url(),
        &["--permission-mode", "bypassPermissions", "MOCK:tool run it"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("> Bash echo hello\n"), "{}", r.stderr);
    assert!(r.stderr.contains("\n  hello\n"), "{}", r.stderr);
    assert!(
        r.stdout.ends_with("Tool finished. Output was: hello\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("> Bash"), "{}", r.stdout);
}

#[test]
fn an_http_error_is_on_stderr_with_exit_code_1() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let r = run(&sandbox, &mock.base_url(), &["MOCK:err401 hi"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains("HTTP 401"),
        "the retry shows: {}",
        r.stderr
    );
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("error: ") && l.contains("Invalid API key")),
        "{}",
        r.stderr
    );
}

/// The approval prompt's start for `provider`'s shell tool.
const CLAUDE_ASKS: &str = "? allow Bash";

/// Runs `MOCK:danger make a file` through `command` (a `bridge … send` in the text format),
/// typing `answer` when a line starting with `asks` shows; returns stderr and the exit code.
fn typed_approval(mut command: Command, asks: &str, answer: &str) -> (String, Option<i32>) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bridge");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    let mut stderr = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with(asks) {
            // A wrong key first: the bridge says what it takes and keeps waiting.
            writeln!(stdin, "maybe").unwrap();
            writeln!(stdin, "{answer}").unwrap();
        }
        stderr.push_str(&line);
        stderr.push('\n');
    }
    drop(stdin);
    let code = child.wait().unwrap().code();
    let stdout = reader.join().unwrap();
    assert!(!stdout.contains("? allow"), "{stdout}");
    (stderr, code)
}

/// `bridge claude send --format text "MOCK:danger make a file"`.
fn claude_danger(sandbox: &Sandbox, mock: &mock_llm::MockServer) -> Command {
    claude_command(
        sandbox,
        &mock.base_url(),
        &["--format", "text", "MOCK:danger make a file"],
    )
}

#[test]
fn typing_y_allows_the_command() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let (stderr, code) = typed_approval(claude_danger(&sandbox, &mock), CLAUDE_ASKS, "y");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("[y]es"), "{stderr}");
    assert!(
        stderr.contains("answer y (yes), a (always), n (no)"),
        "{stderr}"
    );
    assert!(stderr.contains("  allowed (client)"), "{stderr}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command did not run:\n{stderr}"
    );
}

#[test]
fn typing_n_denies_the_command() {
    let mock = mock();
    let sandbox = Sandbox::new();
    let (stderr, _) = typed_approval(claude_danger(&sandbox, &mock), CLAUDE_ASKS, "n");
    assert!(stderr.contains("  denied (client)"), "{stderr}");
    assert!(
        !sandbox.work().join("mock-created.txt").exists(),
        "the denied command ran:\n{stderr}"
    );
}

/// The same typed approval through the ACP engine (the real Qwen Code over `qwen --acp`).
#[test]
fn typing_y_allows_the_command_over_acp() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let command = acp::acp_command(
        acp::Provider::Qwen,
        &sandbox,
        &mock.url(),
        &["--format", "text", "MOCK:danger make a file"],
    );
    let (stderr, code) = typed_approval(command, "? allow ", "y");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("  allowed (client)"), "{stderr}");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the allowed command did not run:\n{stderr}"
    );
}
