//! `bridge gemini send` end to end: the real Gemini CLI (pinned by tests/install-clis.sh)
//! against the project's mock Gemini API, inside a loopback-only network namespace, through
//! both transports: ACP (`gemini --acp`, the default) and the headless JSON mode
//! (`--transport json`, `gemini --output-format stream-json`), which also runs every resumed
//! turn. The ACP scenarios are shared by every ACP provider (tests/common/acp.rs).

mod common;

use common::acp::*;
use common::*;
use serde_json::{Value, json};

const P: Provider = Provider::Gemini;

acp_scenarios!(P, http_401: "invalid x-api-key");
json_scenarios!(P, http_401: "invalid x-api-key");

// ---------------------------------------------------------------------------------------------
// Resume: ACP cannot load sessions in Gemini CLI 0.61.0, so a resumed turn runs headless.

fn jsonl_lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn warning<'a>(lines: &'a [Value], code: &str) -> Option<&'a Value> {
    lines
        .iter()
        .find(|l| l["type"] == "warning" && l["code"] == code)
}

/// Turn 1 over ACP (the default), turn 2 with its session id and no transport: the bridge runs
/// it on the json transport, says so, and the model sees turn 1.
#[test]
fn a_session_started_over_acp_resumes_on_json_and_the_model_sees_turn_one() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let first = run(
        P,
        &sandbox,
        &mock,
        json!({"message": "MOCK:text first turn"}),
        &[],
    );
    assert_eq!(final_line(&first)["success"], true, "{first}");
    assert!(first.contains("[SESSION_ID]"), "{first}");
    let session = final_line(&first)["sessionId"]
        .as_str()
        .expect("turn 1 reports its session")
        .to_string();
    let second = run(
        P,
        &sandbox,
        &mock,
        json!({"message": "MOCK:recall what did I say?", "sessionId": session}),
        &["--format", "jsonl"],
    );
    let lines = jsonl_lines(&second);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "turn_end", "{second}");
    assert_eq!(end["success"], true, "{second}");
    assert_eq!(end["session_id"], session.as_str());
    let result = end["result"].as_str().unwrap_or_default();
    assert!(
        result.contains("MOCK:text first turn") && result.contains("MOCK:recall what did I say?"),
        "the model did not see turn 1: {result}"
    );
    let why = warning(&lines, "transport").expect("the transport switch is reported");
    assert!(why["message"].as_str().unwrap().contains("json"), "{why}");
    // A third turn resumes the same conversation again.
    let third = run(
        P,
        &sandbox,
        &mock,
        json!({"message": "MOCK:recall and now?", "sessionId": session}),
        &[],
    );
    let last = final_line(&third);
    assert_eq!(last["success"], true, "{third}");
    assert!(
        last["result"]
            .as_str()
            .unwrap_or_default()
            .contains("what did I say?"),
        "{third}"
    );
}

/// Naming the acp transport with a session id still refuses, without calling `session/load`
/// (which would overwrite the saved conversation).
#[test]
fn resume_over_acp_named_explicitly_is_refused_with_the_reason() {
    resume_refused_with_reason(
        Target {
            provider: P,
            transport: Some("acp"),
        },
        "No previous sessions found",
    );
}

#[test]
fn an_unknown_session_is_an_error_naming_it() {
    unknown_session_is_an_error(P);
}

// ---------------------------------------------------------------------------------------------
// The json transport.

/// One turn on the json transport with its own mock and sandbox.
fn json_turn(request: Value, extra: &[&str]) -> (String, Sandbox) {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let out = run(P.json(), &sandbox, &mock, request, extra);
    (out, sandbox)
}

/// Headless Gemini prints no thoughts: the answer streams, and no thinking is made up.
#[test]
fn json_thinking_scenario_gives_the_answer_without_thoughts() {
    let (out, sandbox) = json_turn(json!({"message": "MOCK:thinking think first"}), &[]);
    assert_eq!(final_line(&out)["success"], true, "{out}");
    assert_eq!(content_text(&out), mock_llm::scenario::AFTER_THINKING_TEXT);
    assert!(!out.contains("[THINKING_DELTA]"), "{out}");
    insta::assert_snapshot!(
        "gemini-json-thinking.markers",
        acp_markers_view(&out, &sandbox)
    );
}

/// The stream breaks mid-answer: Gemini prints `result {status:"error"}` and exits 0. Never a
/// success.
#[test]
fn json_a_cli_that_exits_zero_after_an_api_error_is_not_a_success() {
    let (out, _) = json_turn(
        json!({"message": "MOCK:midstream hi"}),
        &["--format", "jsonl"],
    );
    let lines = jsonl_lines(&out);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "turn_end", "{out}");
    assert_eq!(end["success"], false, "{out}");
    let error = lines
        .iter()
        .find(|l| l["type"] == "error")
        .unwrap_or_else(|| panic!("an error event: {out}"));
    assert!(
        !error["message"].as_str().unwrap_or_default().is_empty(),
        "{error}"
    );
}

fn danger(mode: &str) -> (String, Sandbox) {
    json_turn(
        json!({"message": "MOCK:danger make a file", "permissionMode": mode}),
        &["--format", "jsonl"],
    )
}

/// yolo: the command runs without asking.
#[test]
fn json_yolo_runs_the_command() {
    let (out, sandbox) = danger("yolo");
    assert!(
        sandbox.work().join("mock-created.txt").exists(),
        "the command did not run: {out}"
    );
    let lines = jsonl_lines(&out);
    let tool = lines
        .iter()
        .find(|l| l["type"] == "tool_use")
        .unwrap_or_else(|| panic!("a tool_use: {out}"));
    assert_eq!(tool["name"], "Bash", "{tool}");
    assert_eq!(tool["kind"], "execute", "{tool}");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "tool_result" && l["is_error"] == false),
        "{out}"
    );
    assert!(warning(&lines, "permission_mode").is_none(), "{out}");
    assert_eq!(lines.last().unwrap()["success"], true, "{out}");
    // The shell's process group id is part of the echoed output.
    let view = regex::Regex::new(r#""text":"\d+\\n""#)
        .unwrap()
        .replace_all(&acp_jsonl_view(&out, &sandbox), r#""text":"[pid]\n""#)
        .into_owned();
    insta::assert_snapshot!("gemini-json-danger-yolo.jsonl", view);
}

/// default: headless Gemini cannot ask, so the command does not run; the turn says why
/// before it starts and when the call is refused.
#[test]
fn json_default_mode_refuses_the_command_and_says_so() {
    let (out, sandbox) = danger("default");
    assert!(
        !sandbox.work().join("mock-created.txt").exists(),
        "the command ran: {out}"
    );
    let lines = jsonl_lines(&out);
    let mode = warning(&lines, "permission_mode").expect("a permission_mode warning");
    assert!(
        mode["message"].as_str().unwrap().contains("cannot ask"),
        "{mode}"
    );
    assert!(
        warning(&lines, "permission_denied").is_some(),
        "the refusal is reported: {out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "tool_result" && l["is_error"] == true),
        "{out}"
    );
    assert_eq!(lines.last().unwrap()["success"], true, "{out}");
}

/// Without `security.auth.selectedType` and with a base URL, headless Gemini exits 41: the
/// error says what to add.
#[test]
fn json_without_an_auth_type_names_the_fix() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let cmd = acp_command(P.json(), &sandbox, &mock.url(), &[]);
    std::fs::remove_file(sandbox.home().join(".gemini/settings.json")).unwrap();
    let out = run_with_stdin(cmd, &json!({"message": "MOCK:text hi"}).to_string());
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(final_line(&out)["success"], false, "{out}");
    let error = out
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(
        error.contains("selectedType") && error.contains("gemini-api-key"),
        "{error}"
    );
    assert!(
        mock.server.requests().is_empty(),
        "nothing reached the model"
    );
}
