//! `bridge omp send` end to end: the real oh-my-pi CLI (18.2.3, on bun 1.3.14, pinned by
//! tests/install-clis.sh) against the project's mock model server (Chat Completions), inside a
//! loopback-only network namespace. omp's model config (`~/.omp/agent/models.yml` in a scratch
//! HOME) points at the mock; the model is picked with the request's `model` (`mock/mock-model`).

mod common;

use common::pi_family::OMP;
use common::*;
use serde_json::json;

#[test]
fn text_streams_deltas_and_ends_with_the_session_and_result() {
    OMP.text_scenario();
}

#[test]
fn thinking_streams_before_the_text_and_reasoning_effort_becomes_the_thinking_level() {
    OMP.thinking_scenario();
}

#[test]
fn a_tool_call_runs_and_its_result_comes_back_before_the_final_text() {
    OMP.tool_scenario();
}

#[test]
fn sandbox_mode_offers_read_only_tools_and_refuses_the_rest() {
    let mock = Mock::start();
    let sandbox = OMP.tools_offered(&mock, "sandbox", "MOCK:tool run it");
    assert_eq!(sandbox.tools, ["glob", "grep", "read"]);
    assert!(sandbox.warnings.is_empty(), "{:?}", sandbox.warnings);
    // The mock still asks for a shell; omp refuses a tool it does not offer.
    let results = of_type(&sandbox.events, "tool_result");
    assert_eq!(results.len(), 1, "{:?}", sandbox.events);
    assert_eq!(results[0]["is_error"], true, "{:?}", sandbox.events);
}

#[test]
fn default_mode_keeps_omp_s_configuration_and_says_what_that_means() {
    let mock = Mock::start();
    let default = OMP.tools_offered(&mock, "default", "MOCK:text hi");
    assert_eq!(default.warnings.len(), 1, "{:?}", default.events);
    assert!(
        default.warnings[0].contains("cannot ask for approval"),
        "{:?}",
        default.warnings
    );
    assert_eq!(default.events.last().unwrap()["success"], true);
}

#[test]
fn resume_keeps_the_session_and_the_model_sees_the_earlier_turn() {
    OMP.resume_scenario();
}

#[test]
fn an_unknown_session_is_a_failure_with_omp_s_message() {
    let error = OMP.unknown_session_scenario("99999999-nope");
    assert!(
        error.contains(r#"Session \"99999999-nope\" not found"#),
        "{error}"
    );
}

#[test]
fn an_http_error_is_a_failure_with_the_provider_s_message() {
    // omp exits 1 here; the stream's own message is what is reported.
    let last = OMP.http_error_scenario();
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .starts_with("401 invalid x-api-key"),
        "{last}"
    );
}

#[test]
fn without_bun_the_turn_fails_saying_how_to_install_it() {
    let sandbox = Sandbox::new();
    // A PATH with the omp launcher but no bun, and a HOME without ~/.bun.
    let launcher_dir = sandbox.root().join("omp-only");
    std::fs::create_dir_all(&launcher_dir).unwrap();
    let omp = launcher_dir.join("omp");
    std::os::unix::fs::symlink(cli_path("omp"), &omp).unwrap();
    let mut cmd = bridge();
    cmd.env_clear()
        .args(["omp", "send"])
        .env("PATH", format!("{}:/usr/bin:/bin", launcher_dir.display()))
        .env("HOME", sandbox.home())
        .env("OMP_BIN", &omp)
        .current_dir(sandbox.work());
    let out = run_with_stdin(cmd, &json!({"message": "hi"}).to_string());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let error = stdout
        .lines()
        .find(|l| l.starts_with("[SEND_ERROR] "))
        .expect("a send error");
    assert!(error.contains("needs `bun` on PATH"), "{error}");
    assert!(error.contains("npm i -g bun@1.3.14"), "{error}");
}
