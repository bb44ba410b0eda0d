//! The plugin's query commands end to end (`bridge <provider> getSession …`, `listModels`):
//! real CLIs and their real files, the project's mock model server where a model answers,
//! inside a loopback-only network namespace. Every reply is read the way the plugin's Java
//! side reads it: the last stdout line that is a JSON object ([`run_query`]).

mod common;

use common::*;
use serde_json::{Value, json};

/// The text of a Claude session entry's message (a string, or its text blocks joined).
fn entry_text(entry: &Value) -> String {
    let content = &entry["message"]["content"];
    match content.as_str() {
        Some(text) => text.to_string(),
        None => content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
    }
}

/// The first content block of type `kind` in the history rows.
fn first_block(messages: &[Value], kind: &str) -> Option<Value> {
    messages
        .iter()
        .flat_map(|m| m["message"]["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == kind)
        .cloned()
}

/// The role and text of each history row that has text.
fn role_texts(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| (m["type"].as_str().unwrap().to_string(), entry_text(m)))
        .filter(|(_, text)| !text.is_empty())
        .collect()
}

#[test]
fn claude_history_of_a_three_turn_session_is_its_chain_in_order() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let prompts = [
        "MOCK:text first turn",
        "MOCK:recall turn 2",
        "MOCK:recall turn 3",
    ];
    let lines: String = prompts
        .iter()
        .map(|p| format!("{}\n", json!({"message": p})))
        .collect();
    let out = run_with_stdin(as_session_in(&send, "jsonl"), &lines);
    assert!(out.status.success(), "{out:?}");
    let events = jsonl_events(&String::from_utf8_lossy(&out.stdout));
    let ends = of_type(&events, "turn_end");
    assert_eq!(ends.len(), 3, "{events:?}");
    assert!(ends.iter().all(|e| e["success"] == true), "{ends:?}");
    let session = ends[0]["session_id"].as_str().unwrap().to_string();
    let answers: Vec<&str> = ends.iter().map(|e| e["result"].as_str().unwrap()).collect();
    assert!(answers[2].contains("first turn"), "{answers:?}");

    let cwd = std::fs::canonicalize(sandbox.work()).unwrap();
    let cwd = cwd.to_str().unwrap();
    let history = run_query(as_query(&send, "getSession", &[&session, cwd]));
    assert_eq!(history.code, Some(0), "{history:?}");
    assert_eq!(history.json["success"], true, "{history:?}");
    let messages = history.json["messages"].as_array().expect("messages");
    // Exactly the user and assistant entries of the chain, in order, as Claude Code wrote
    // them (its attachments and queue bookkeeping left out).
    let seen: Vec<(String, String)> = messages
        .iter()
        .map(|m| (m["type"].as_str().unwrap().to_string(), entry_text(m)))
        .collect();
    let expected: Vec<(String, String)> = prompts
        .iter()
        .zip(&answers)
        .flat_map(|(p, a)| {
            [
                ("user".into(), p.to_string()),
                ("assistant".into(), a.to_string()),
            ]
        })
        .collect();
    assert_eq!(seen, expected);
    let mut uuids: Vec<&str> = messages
        .iter()
        .map(|m| m["uuid"].as_str().unwrap())
        .collect();
    assert!(messages.iter().all(|m| m["sessionId"] == session.as_str()));
    uuids.dedup();
    assert_eq!(uuids.len(), messages.len(), "each entry once");
    assert!(!history.stderr.contains("[WARNING]"), "{}", history.stderr);

    let latest = run_query(as_query(&send, "getLatestUserMessage", &[&session, cwd]));
    assert_eq!(latest.code, Some(0), "{latest:?}");
    assert_eq!(latest.json["success"], true);
    assert_eq!(latest.json["message"]["type"], "user");
    assert_eq!(entry_text(&latest.json["message"]), prompts[2]);

    // A session that has no file yet, and the same command for another cwd: no history.
    for (id, dir) in [("0000-none", cwd), (session.as_str(), "/elsewhere")] {
        let empty = run_query(as_query(&send, "getSession", &[id, dir]));
        assert_eq!(empty.json, json!({"success": true, "messages": []}));
        let none = run_query(as_query(&send, "getLatestUserMessage", &[id, dir]));
        assert_eq!(none.json, json!({"success": true, "message": null}));
    }
}

#[test]
fn claude_history_refuses_bad_ids_and_arguments_and_survives_a_corrupt_file() {
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, "http://127.0.0.1:9", &[]);
    let cwd = "/some/project";
    for id in ["../x", "a/b", ".hidden", ""] {
        let bad = run_query(as_query(&send, "getSession", &[id, cwd]));
        assert_eq!(bad.json["success"], false, "{id}: {bad:?}");
        assert!(bad.stderr.contains("[GET_SESSION_ERROR]"), "{bad:?}");
        assert_eq!(bad.code, Some(0), "in-band");
    }
    let missing = run_query(as_query(&send, "getSession", &["abc"]));
    assert_eq!(missing.json["success"], false);
    assert!(missing.stderr.contains("[COMMAND_ERROR]"), "{missing:?}");
    assert_eq!(missing.code, Some(1));

    // A file with a corrupt line between two good ones.
    let dir = sandbox.home().join(".claude/projects/-some-project");
    std::fs::create_dir_all(&dir).unwrap();
    let user = json!({"type": "user", "uuid": "u1", "parentUuid": null,
                      "message": {"role": "user", "content": "hello"}});
    let answer = json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1",
                        "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}});
    std::fs::write(
        dir.join("s-1.jsonl"),
        format!("{user}\n{{\"type\":\"user\",\"uu\n{answer}\n"),
    )
    .unwrap();
    let history = run_query(as_query(&send, "getSession", &["s-1", cwd]));
    assert_eq!(
        history.json,
        json!({"success": true, "messages": [user, answer]})
    );
    assert!(
        history
            .stderr
            .contains("[WARNING] getSession: line 2 is not JSON"),
        "{}",
        history.stderr
    );

    // An unreadable file is an error, not an empty history (root reads anything: a directory
    // in the file's place stands in for it).
    std::fs::create_dir_all(dir.join("s-2.jsonl")).unwrap();
    let unreadable = run_query(as_query(&send, "getSession", &["s-2", cwd]));
    assert_eq!(unreadable.json["success"], false, "{unreadable:?}");
    assert!(
        unreadable
            .stderr
            .contains("[GET_SESSION_ERROR] cannot read")
    );
}

#[test]
fn claude_lists_the_models_of_its_initialize_reply() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    let reply = &run.json;
    assert_eq!(reply["success"], true, "{run:?}");
    assert_eq!(reply["provider"], "claude");
    assert_eq!(reply["defaultModel"], "default");
    let models = reply["models"].as_array().unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().unwrap()).collect();
    // What Claude Code 2.1.197's own model picker offers.
    assert_eq!(
        ids,
        ["default", "opus[1m]", "sonnet", "sonnet[1m]", "haiku"]
    );
    assert!(
        models
            .iter()
            .all(|m| m["label"].is_string() && m["description"].is_string())
    );
    // Listing asks no model anything.
    assert!(mock.model_requests().is_empty());
    // The second listing comes from the cache (same binary, settings and credentials).
    let again = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(again.json["cached"], true, "{again:?}");
    assert_eq!(again.json["models"], run.json["models"]);
}

#[test]
fn a_provider_that_cannot_list_models_says_so_and_unknown_commands_list_the_known_ones() {
    let sandbox = Sandbox::new();
    let mut cmd = bridge();
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .args(["grok-cli", "listModels"]);
    let run = run_query(cmd);
    assert_eq!(
        run.json,
        json!({"success": false, "error": "grok-cli cannot list its models"})
    );
    // Usage the CLI cannot tell is said so, in-band, never made up.
    for (query, what) in [
        ("getContextUsage", "tell how full its context window is"),
        ("getUsage", "tell what a conversation has spent"),
    ] {
        let mut cmd = bridge();
        cmd.env_clear()
            .env("HOME", sandbox.home())
            .args(["codex", query]);
        let run = run_query_with(cmd, &json!({"sessionId": "t-1"}));
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(
            run.json,
            json!({"success": false, "error": format!("codex cannot {what}")})
        );
    }

    let mut cmd = bridge();
    cmd.env_clear()
        .env("HOME", sandbox.home())
        .args(["claude", "getHistory"]);
    let run = run_query(cmd);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.json,
        json!({"success": false, "error": "Unknown Claude Code command: getHistory"})
    );
    assert!(
        run.stderr.contains(
            "[COMMAND_ERROR] unknown command; claude accepts: send, sendWithAttachments, session, getSession <sessionId> <cwd>, getLatestUserMessage <sessionId> <cwd>, listSessions < JSON, listModels, getContextUsage < JSON, getUsage < JSON, rewindFiles < JSON, getMcpServerStatus < JSON, getMcpServerTools < JSON"
        ),
        "{}",
        run.stderr
    );
}

/// The ids of a `listModels` reply (after checking its shape: success, the provider, every
/// model with an id and a label).
fn model_ids(reply: &Value, provider: &str) -> Vec<String> {
    assert_eq!(reply["success"], true, "{reply}");
    assert_eq!(reply["provider"], provider, "{reply}");
    let models = reply["models"].as_array().expect("models");
    assert!(
        models
            .iter()
            .all(|m| m["id"].is_string() && m["label"].is_string()),
        "{reply}"
    );
    models
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs one `MOCK:text` turn with `cmd` (a `bridge <provider> send …` with `--format jsonl`)
/// and returns its turn end.
/// Two turns of one session with the request fields `common`: `MOCK:text hi`, then
/// `MOCK:tool run it` resumed in `bypassPermissions`; both succeed. The session id.
fn text_then_tool(send: impl Fn() -> std::process::Command, common: Value) -> String {
    let with = |fields: Value| {
        let mut request = common.clone();
        for (key, value) in fields.as_object().unwrap() {
            request[key] = value.clone();
        }
        request
    };
    let first = one_turn(send(), with(json!({"message": "MOCK:text hi"})));
    assert_eq!(first["success"], true, "{first}");
    let session = first["session_id"]
        .as_str()
        .expect("a session id")
        .to_string();
    let second = one_turn(
        send(),
        with(json!({"message": "MOCK:tool run it", "sessionId": session,
                    "permissionMode": "bypassPermissions"})),
    );
    assert_eq!(second["success"], true, "{second}");
    session
}

fn one_turn(cmd: std::process::Command, request: Value) -> Value {
    let out = run_with_stdin(cmd, &request.to_string());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let events = jsonl_events(&stdout);
    of_type(&events, "turn_end")
        .last()
        .map(|e| (*e).clone())
        .unwrap_or_else(|| panic!("no turn end: {stdout}"))
}

#[test]
fn pi_lists_the_models_of_its_table_and_a_listed_one_runs() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = pi_command(&sandbox, &[]);
    // Without credentials pi has no model to offer: an empty list, never an invented one.
    let none = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(
        model_ids(&none.json, "pi"),
        Vec::<String>::new(),
        "{none:?}"
    );
    assert!(
        none.stderr.contains("No models available"),
        "{}",
        none.stderr
    );

    write_pi_models(&sandbox, &mock.api_base());
    std::fs::write(
        sandbox.home().join(".pi/agent/settings.json"),
        r#"{"defaultProvider":"mock","defaultModel":"mock-model"}"#,
    )
    .unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    let ids = model_ids(&run.json, "pi");
    assert_eq!(ids, ["mock/mock-model", "mockresp/mock-model"]);
    assert_eq!(run.json["defaultModel"], "mock/mock-model");
    assert_eq!(
        run.json["models"][0]["description"],
        "mock · context 128K · max-out 8.2K · thinking yes · images yes"
    );
    let end = one_turn(
        pi_command(&sandbox, &["--format", "jsonl", "--model", &ids[1]]),
        json!({"message": "MOCK:text hi"}),
    );
    assert_eq!(end["success"], true, "{end}");
    assert_eq!(end["result"], "Hello from the mock model.");
    // pi asked the listed provider's endpoint (the Responses API of `mockresp`).
    let asked = mock.model_requests();
    assert!(
        asked.last().is_some_and(|r| r.path.contains("responses")),
        "{:?}",
        asked.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
}

#[test]
fn opencode_lists_the_models_of_opencode_models() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send =
        common::acp::acp_command(common::acp::Provider::Opencode, &sandbox, &mock.url(), &[]);
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    let ids = model_ids(&run.json, "opencode");
    // The configured provider's models, after opencode's built-in ones.
    assert!(
        ids.ends_with(&["mock/mock-model".to_string(), "mock/mock-small".to_string()]),
        "{ids:?}"
    );
    assert!(ids.iter().all(|id| id.contains('/')), "{ids:?}");
    assert_eq!(run.json["defaultModel"], "mock/mock-model");
    let small = &run.json["models"][ids.len() - 1];
    assert_eq!(small["label"], "mock-small");
    assert_eq!(small["description"], "mock");
}

#[test]
fn kimi_lists_the_models_of_its_config_and_a_listed_one_runs() {
    use common::acp::{Provider, acp_command};
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = acp_command(Provider::Kimi.json(), &sandbox, &mock.url(), &[]);
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_ids(&run.json, "kimi"), ["mock"]);
    assert_eq!(run.json["defaultModel"], "mock");
    assert_eq!(
        run.json["models"][0]["description"],
        "mock · mock-model · context 128000"
    );
    let end = one_turn(
        acp_command(
            Provider::Kimi.json(),
            &sandbox,
            &mock.url(),
            &["--format", "jsonl", "--model", "mock"],
        ),
        json!({"message": "MOCK:text hi"}),
    );
    assert_eq!(end["success"], true, "{end}");
    assert_eq!(end["result"], "Hello from the mock model.");

    // No config: kimi's own default, `auto`.
    std::fs::remove_file(sandbox.home().join(".kimi/config.toml")).unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(model_ids(&run.json, "kimi"), ["auto"]);
    assert_eq!(run.json["defaultModel"], "auto");
}

#[test]
fn codex_lists_its_config_and_catalog_and_codex_runs_with_them() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = codex_command(&sandbox, &["--format", "jsonl"]);
    let codex_home = sandbox.home().join(".codex");
    // OpenAI's provider and no catalog: nothing to list, the configured default named.
    std::fs::write(codex_home.join("config.toml"), "model = \"gpt-5.5\"\n").unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(model_ids(&run.json, "codex"), Vec::<String>::new());
    assert_eq!(run.json["defaultModel"], "gpt-5.5");

    // A catalog in the schema Codex itself parses (it refuses to start on a wrong one).
    let entry = |slug: &str, name: &str, visibility: &str| {
        json!({"slug": slug, "display_name": name, "description": format!("{name} via the mock"),
               "visibility": visibility, "supported_reasoning_levels": [], "shell_type": "default",
               "supported_in_api": true, "priority": 1, "support_verbosity": false,
               "truncation_policy": {"mode": "bytes", "limit": 10000},
               "experimental_supported_tools": [], "base_instructions": "You are a coding agent."})
    };
    let catalog = json!({"models": [
        entry("gpt-5.5", "GPT-5.5", "list"),
        entry("mock-mini", "Mock Mini", "list"),
        entry("retired", "Retired", "hide"),
    ]});
    std::fs::write(codex_home.join("catalog.json"), catalog.to_string()).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        "model = \"gpt-5.5\"\nmodel_catalog_json = \"catalog.json\"\n",
    )
    .unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_ids(&run.json, "codex"), ["gpt-5.5", "mock-mini"]);
    assert_eq!(run.json["defaultModel"], "gpt-5.5");
    assert_eq!(run.json["models"][1]["label"], "Mock Mini");
    assert_eq!(
        run.json["models"][1]["description"],
        "Mock Mini via the mock"
    );
    // Codex takes the same config and runs a listed model.
    let end = one_turn(
        codex_command(&sandbox, &["--format", "jsonl"]),
        json!({"message": "MOCK:text hi", "cwd": sandbox.work(), "model": "mock-mini",
               "baseUrl": mock.api_base(), "apiKey": CANARY_KEY}),
    );
    assert_eq!(end["success"], true, "{end}");
    assert_eq!(end["result"], "Hello from the mock model.");
    let asked = mock.model_requests();
    assert_eq!(
        asked.last().map(|r| r.body["model"].clone()),
        Some(json!("mock-mini"))
    );

    // A config Codex could not read either is an error.
    std::fs::write(codex_home.join("config.toml"), "model = ").unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.json["success"], false, "{run:?}");
}

/// A thread of two `codex exec` turns (a text, a command) read back with `getSession`: the
/// prompts, answers and the command with its output, none of the context Codex injects; and
/// `listSessions` lists it with its first prompt, filtered by `cwd`.
#[test]
fn codex_history_of_a_thread_is_its_items_and_list_sessions_finds_it() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = || codex_command(&sandbox, &["--format", "jsonl"]);
    let thread = text_then_tool(
        send,
        json!({"cwd": sandbox.work(), "model": "gpt-5.5", "baseUrl": mock.api_base(),
               "apiKey": CANARY_KEY}),
    );
    let cwd = sandbox.work().to_str().unwrap().to_string();
    let history = run_query(as_query(&send(), "getSession", &[&thread, &cwd]));
    assert_eq!(history.code, Some(0), "{history:?}");
    let messages = history.json["messages"].as_array().expect("messages");
    let texts = role_texts(messages);
    let texts: Vec<(&str, &str)> = texts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        texts,
        [
            ("user", "MOCK:text hi"),
            ("assistant", mock_llm::scenario::HELLO_TEXT),
            ("user", "MOCK:tool run it"),
            ("assistant", "I will run a command."),
            ("assistant", "Tool finished. Output was: hello"),
        ],
        "{messages:#?}"
    );
    let block = |kind: &str| first_block(messages, kind);
    let call = block("tool_use").expect("the command");
    assert_eq!(call["name"], "Bash");
    assert_eq!(call["input"]["command"], mock_llm::scenario::TOOL_COMMAND);
    let result = block("tool_result").expect("its result");
    assert_eq!(result["tool_use_id"], call["id"]);
    assert_eq!(result["content"], "hello\n");
    assert!(
        !history.stdout.contains("environment_context"),
        "{}",
        history.stdout
    );

    let list =
        |cwd: Value| run_query_with(as_query(&send(), "listSessions", &[]), &json!({"cwd": cwd}));
    let here = list(json!(cwd));
    let sessions = here.json["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{here:?}");
    assert_eq!(sessions[0]["sessionId"], thread);
    assert_eq!(sessions[0]["title"], "MOCK:text hi");
    assert_eq!(list(json!("/elsewhere")).json["sessions"], json!([]));
    let unknown = run_query(as_query(&send(), "getSession", &["no-such-thread", &cwd]));
    assert_eq!(unknown.json["messages"], json!([]), "{unknown:?}");
    let bad = run_query(as_query(&send(), "getSession", &["../escape", &cwd]));
    assert_eq!(bad.json["success"], false, "{bad:?}");
    let no_cwd = run_query(as_query(&send(), "getSession", &[&thread, ""]));
    assert_eq!(no_cwd.json["success"], false, "{no_cwd:?}");
    assert_eq!(list(json!(5)).json["success"], false);
}

/// The uuid of the first user entry of a Claude session file whose text is `prompt`.
fn user_message_id(sandbox: &Sandbox, session: &str, prompt: &str) -> String {
    let cwd = std::fs::canonicalize(sandbox.work()).unwrap();
    let cwd = cwd.to_str().unwrap();
    let send = claude_command(sandbox, "http://127.0.0.1:9", &[]);
    let history = run_query(as_query(&send, "getSession", &[session, cwd]));
    history.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "user" && entry_text(m) == prompt)
        .and_then(|m| m["uuid"].as_str())
        .unwrap_or_else(|| panic!("no user entry {prompt:?}: {history:?}"))
        .to_string()
}

#[test]
fn claude_rewind_files_restores_what_a_turn_wrote_through_the_cli_checkpoints() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let written = sandbox.work().join("mock-written.txt");
    // Turn 1 writes nothing, turn 2 makes Claude write a file, turn 3 only talks.
    let prompts = [
        "MOCK:text nothing yet",
        "MOCK:write make the file",
        "MOCK:text after the write",
    ];
    let lines: String = prompts
        .iter()
        .map(|p| {
            format!(
                "{}\n",
                json!({"message": p, "permissionMode": "bypassPermissions"})
            )
        })
        .collect();
    let out = run_with_stdin(as_session_in(&send, "jsonl"), &lines);
    let events = jsonl_events(&String::from_utf8_lossy(&out.stdout));
    let ends = of_type(&events, "turn_end");
    assert!(
        ends.len() == 3 && ends.iter().all(|e| e["success"] == true),
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written by mock\n"
    );
    let session = ends[0]["session_id"].as_str().unwrap().to_string();
    let cwd = std::fs::canonicalize(sandbox.work()).unwrap();

    // Rewinding to the third prompt keeps the file (it was written before it) ...
    let third = user_message_id(&sandbox, &session, prompts[2]);
    let keep = run_query_with(
        as_query(&send, "rewindFiles", &[]),
        &json!({"sessionId": session, "userMessageId": third, "cwd": cwd}),
    );
    assert_eq!(keep.json["success"], true, "{keep:?}");
    assert!(
        written.exists(),
        "rewinding to after the write removed the file"
    );
    // ... rewinding to the write's prompt restores the project as it was: no file.
    let second = user_message_id(&sandbox, &session, prompts[1]);
    let rewind = run_query_with(
        as_query(&send, "rewindFiles", &[]),
        &json!({"sessionId": session, "userMessageId": second, "cwd": cwd}),
    );
    assert_eq!(rewind.code, Some(0), "{rewind:?}");
    assert_eq!(
        rewind.json,
        json!({"success": true, "message": "Files restored successfully",
               "sessionId": session, "targetMessageId": second})
    );
    assert!(!written.exists(), "the file the turn wrote is still there");

    // The plugin may name another entry of that turn (here its tool result): the rewind is
    // the checkpoint of the turn's prompt.
    std::fs::write(&written, "made again by hand\n").unwrap();
    let tool_result = {
        let cwd = cwd.to_str().unwrap();
        let history = run_query(as_query(&send, "getSession", &[&session, cwd]));
        history.json["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["message"]["content"][0]["type"] == "tool_result")
            .and_then(|m| m["uuid"].as_str())
            .expect("the write's tool result entry")
            .to_string()
    };
    let via = run_query_with(
        as_query(&send, "rewindFiles", &[]),
        &json!({"sessionId": session, "userMessageId": tool_result, "cwd": cwd}),
    );
    assert_eq!(via.json["success"], true, "{via:?}");
    assert_eq!(via.json["targetMessageId"], second.as_str(), "{via:?}");
    assert!(
        via.stderr.contains("has no checkpoint of its own"),
        "{via:?}"
    );
    assert!(
        !written.exists(),
        "the rewind through the turn's prompt kept the file"
    );
    // The rewind itself asks no model.
    let before = mock.model_requests().len();

    // A message without a checkpoint, an unknown session, bad input: clear errors.
    let none = run_query_with(
        as_query(&send, "rewindFiles", &[]),
        &json!({"sessionId": session, "userMessageId": "no-such-message", "cwd": cwd}),
    );
    assert_eq!(none.json["success"], false, "{none:?}");
    assert!(
        error_of(&none).contains("No file checkpoint found"),
        "{none:?}"
    );
    assert!(none.stderr.contains("[REWIND_ERROR]"), "{none:?}");
    let unknown = run_query_with(
        as_query(&send, "rewindFiles", &[]),
        &json!({"sessionId": "6f1c0f4e-0000-4000-8000-000000000000", "userMessageId": second, "cwd": cwd}),
    );
    assert_eq!(unknown.json["success"], false, "{unknown:?}");
    assert!(
        error_of(&unknown).contains("No conversation found"),
        "{unknown:?}"
    );
    for (stdin, expected) in [
        (
            json!({"sessionId": "../x", "userMessageId": second, "cwd": cwd}),
            "invalid characters",
        ),
        (
            json!({"sessionId": session, "cwd": cwd}),
            "userMessageId is required",
        ),
        (
            json!({"sessionId": session, "userMessageId": second}),
            "cwd is required",
        ),
        (
            json!({"sessionId": session, "userMessageId": second, "cwd": "/no/such/dir"}),
            "not a directory",
        ),
    ] {
        let bad = run_query_with(as_query(&send, "rewindFiles", &[]), &stdin);
        assert_eq!(bad.code, Some(0), "in-band: {bad:?}");
        assert!(error_of(&bad).contains(expected), "{expected}: {bad:?}");
    }
    let garbage = query_of_text(as_query(&send, "rewindFiles", &[]), "{not json");
    assert!(
        garbage["error"]
            .as_str()
            .unwrap()
            .starts_with("stdin is not valid JSON")
    );
    assert_eq!(
        mock.model_requests().len(),
        before,
        "the errors asked a model"
    );
}

/// The error of a failed query's reply (after checking it failed).
fn error_of(run: &QueryRun) -> &str {
    assert_eq!(run.json["success"], false, "{run:?}");
    run.json["error"].as_str().expect("an error")
}

/// The reply of a query whose stdin is `text` (not JSON).
fn query_of_text(cmd: std::process::Command, text: &str) -> Value {
    let out = run_with_stdin(cmd, text);
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn claude_context_usage_per_process_resumes_the_session_and_get_usage_says_why_not() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = claude_command(&sandbox, &mock.url(), &[]);
    let turn = one_turn(
        claude_command(&sandbox, &mock.url(), &["--format", "jsonl"]),
        json!({"message": "MOCK:text count me"}),
    );
    let session = turn["session_id"].as_str().unwrap().to_string();
    let cwd = std::fs::canonicalize(sandbox.work()).unwrap();
    let run = run_query_with(
        as_query(&send, "getContextUsage", &[]),
        &json!({"sessionId": session, "cwd": cwd}),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.json["success"], true, "{run:?}");
    let data = &run.json["data"];
    // The mock's turn reported 100 input tokens: what the resumed conversation holds.
    assert_eq!(data["totalTokens"], 100, "{data}");
    assert!(
        data["maxTokens"].as_u64().is_some_and(|m| m >= 100_000),
        "{data}"
    );
    assert!(
        data["categories"].as_array().is_some_and(|c| !c.is_empty()),
        "{data}"
    );

    let usage = run_query_with(
        as_query(&send, "getUsage", &[]),
        &json!({"sessionId": session, "cwd": cwd}),
    );
    assert!(
        error_of(&usage).contains("warm daemon session"),
        "{usage:?}"
    );
    let bad = run_query_with(
        as_query(&send, "getContextUsage", &[]),
        &json!({"sessionId": "../x"}),
    );
    assert!(error_of(&bad).contains("invalid characters"), "{bad:?}");
    let missing = run_query_with(
        as_query(&send, "getContextUsage", &[]),
        &json!({"sessionId": session, "cwd": "/no/such/dir"}),
    );
    assert!(
        error_of(&missing).contains("not a directory"),
        "{missing:?}"
    );
}

#[test]
fn omp_lists_the_models_of_its_config_once_and_then_from_the_cache() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = omp_command(&sandbox, &[]);
    write_omp_models(&sandbox, &mock.api_base());
    // The default role, with a thinking level: the default is the listed model.
    std::fs::write(
        sandbox.home().join(".omp/agent/config.yml"),
        format!("modelRoles:\n  default: mock/{PI_MOCK_MODEL}:high\n"),
    )
    .unwrap();
    let run = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(run.code, Some(0), "{run:?}");
    let ids = model_ids(&run.json, "omp");
    assert_eq!(ids, [format!("mock/{PI_MOCK_MODEL}")], "{run:?}");
    assert_eq!(run.json["models"][0]["label"], "Mock Model");
    assert_eq!(run.json["defaultModel"], ids[0].as_str(), "{run:?}");
    assert!(run.json.get("cached").is_none(), "{run:?}");

    // The second listing is the cache's (it says so), with the same models.
    let again = run_query(as_query(&send, "listModels", &[]));
    assert_eq!(again.json["cached"], true, "{again:?}");
    assert_eq!(again.json["models"], run.json["models"]);
    assert_eq!(again.json["defaultModel"], run.json["defaultModel"]);

    // A changed model config is listed afresh, and a listed model runs.
    let config = sandbox.home().join(".omp/agent/models.yml");
    let yaml = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, yaml.replace("name: Mock Model", "name: Renamed")).unwrap();
    let renamed = run_query(as_query(&send, "listModels", &[]));
    assert!(renamed.json.get("cached").is_none(), "{renamed:?}");
    assert_eq!(renamed.json["models"][0]["label"], "Renamed");
    let end = one_turn(
        omp_command(&sandbox, &["--format", "jsonl", "--model", &ids[0]]),
        json!({"message": "MOCK:text hi"}),
    );
    assert_eq!(end["success"], true, "{end}");
}

/// `bridge <provider> listModels` with the environment of the harness's ACP sends.
fn acp_list(
    provider: common::acp::Provider,
    sandbox: &Sandbox,
    mock: &Mock,
) -> std::process::Command {
    let send = common::acp::acp_command(provider, sandbox, &mock.url(), &[]);
    as_query(&send, "listModels", &[])
}

#[test]
fn gemini_and_qwen_list_the_models_of_their_acp_session_and_copilot_says_why_not() {
    use common::acp::Provider;
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // Gemini CLI 0.61.0's own picker: `auto` (its default) and the models behind it.
    let list = acp_list(Provider::Gemini, &sandbox, &mock);
    let gemini = run_query(as_query(&list, "listModels", &[]));
    assert_eq!(gemini.code, Some(0), "{gemini:?}");
    let ids = model_ids(&gemini.json, "gemini");
    assert_eq!(ids[0], "auto", "{gemini:?}");
    assert!(
        ids.len() > 1
            && ids
                .iter()
                .all(|id| id == "auto" || id.starts_with("gemini-")),
        "{ids:?}"
    );
    assert_eq!(gemini.json["defaultModel"], "auto");
    let again = run_query(list);
    assert_eq!(again.json["cached"], true, "{again:?}");
    assert_eq!(again.json["models"], gemini.json["models"]);

    // Qwen Code offers the model its OpenAI-compatible provider is configured with.
    let qwen = run_query(acp_list(Provider::Qwen, &sandbox, &mock));
    let ids = model_ids(&qwen.json, "qwen");
    let configured = ids
        .iter()
        .find(|id| id.contains("mock-qwen-model"))
        .unwrap_or_else(|| panic!("{qwen:?}"));
    assert_eq!(qwen.json["defaultModel"], configured.as_str(), "{qwen:?}");

    // Copilot with a BYOK provider offers no selection: it says so, naming its one model.
    let copilot = run_query(acp_list(Provider::Copilot, &sandbox, &mock));
    assert_eq!(copilot.code, Some(0), "in-band: {copilot:?}");
    let error = error_of(&copilot);
    assert!(
        error.contains("offers no model selection") && error.contains("gpt-4.1"),
        "{copilot:?}"
    );
    // Listing prompts no model.
    assert!(
        mock.model_requests().is_empty(),
        "{:?}",
        mock.model_requests()
    );
}

/// `bridge qwen getSession`: what Qwen Code's own ACP agent replays on `session/load`, as
/// Claude-shaped rows: the prompts, the answers, the shell call named `Bash` with its result;
/// an id the agent does not know is an empty history. `listSessions`: its `session/list`.
#[test]
fn qwen_history_is_what_its_agent_replays() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    let send = || {
        common::acp::acp_command(
            common::acp::Provider::Qwen,
            &sandbox,
            &mock.url(),
            &["--format", "jsonl"],
        )
    };
    let session = text_then_tool(send, json!({}));
    let cwd = std::fs::canonicalize(sandbox.work()).unwrap();
    let cwd = cwd.to_str().unwrap();
    let history = run_query(as_query(&send(), "getSession", &[&session, cwd]));
    assert_eq!(history.code, Some(0), "{history:?}");
    let messages = history.json["messages"].as_array().expect("messages");
    let texts = role_texts(messages);
    let users: Vec<&str> = texts
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(users, ["MOCK:text hi", "MOCK:tool run it"], "{messages:#?}");
    let answers: String = texts
        .iter()
        .filter(|(role, _)| role == "assistant")
        .map(|(_, text)| text.as_str())
        .collect();
    assert!(
        answers.contains(mock_llm::scenario::HELLO_TEXT)
            && answers.contains("Tool finished. Output was: Command: echo hello"),
        "{messages:#?}"
    );
    let call = first_block(messages, "tool_use").expect("the command");
    assert_eq!(call["name"], "Bash", "{call}");
    let result = first_block(messages, "tool_result").expect("its result");
    assert_eq!(result["tool_use_id"], call["id"]);
    assert!(result["content"].to_string().contains("hello"), "{result}");

    let unknown = run_query(as_query(
        &send(),
        "getSession",
        &["00000000-0000-4000-8000-000000000000", cwd],
    ));
    assert_eq!(unknown.code, Some(0), "{unknown:?}");
    assert_eq!(unknown.json["messages"], json!([]), "{unknown:?}");

    // listSessions: the agent's own session/list.
    let list =
        |cwd: Value| run_query_with(as_query(&send(), "listSessions", &[]), &json!({"cwd": cwd}));
    let here = list(json!(cwd));
    assert_eq!(here.code, Some(0), "{here:?}");
    let sessions = here.json["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{here:?}");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert_eq!(sessions[0]["cwd"], cwd);
    assert_eq!(list(json!("/elsewhere")).json["sessions"], json!([]));
    // The same directory through a symlink.
    let link = sandbox.root().join("work-link");
    std::os::unix::fs::symlink(cwd, &link).unwrap();
    let linked = list(json!(link));
    assert_eq!(linked.json["sessions"], here.json["sessions"], "{linked:?}");
}
