//! The recorder of the transcript corpus (`tests/corpus`, README there): runs each provider's
//! declared scenarios with its REAL CLI against the project's mock model server, inside the
//! loopback-only network namespace, through `bridge <provider> send --record`, and files what
//! passed between the bridge and the CLI (stdout, stderr, stdin, argv, exit) under
//! `tests/corpus/<provider>/<cli version>/`, with a `manifest.json`.
//!
//! Not part of the test suite (every test here is `#[ignore]`): `scripts/record [PROVIDER…]`
//! runs it, with the CLI found on PATH, or the one in `BRIDGE_RECORD_CLI_DIR` when that is set
//! (how another version is recorded), and only the scenarios named in `BRIDGE_RECORD_ONLY`
//! (comma-separated) when that is set: the others keep their files and manifest entries. What is written never holds a machine path (the sandbox
//! becomes `/SANDBOX`, the mock's port `<port>`, `$HOME` and the checkout are replaced) or a key
//! (the canary key is redacted by the bridge itself, and checked here).

mod common;

use std::path::Path;
use std::process::Command;

use common::acp::{Provider, acp_command};
use common::*;
use serde_json::{Value, json};

/// One recorded run: a scenario name and the request the bridge gets on stdin. A `resume`
/// scenario runs after `turn1` of the same provider and continues its session.
struct Scenario {
    name: &'static str,
    request: Value,
    resume: bool,
    /// How the client answers while the turn runs (stdin kept open).
    client: Client,
}

/// What the recorder's client does during a turn.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    /// Writes the request and closes stdin (nobody answers approvals).
    Closed,
    /// Answers every permission request with this decision.
    Answers(&'static str),
    /// Sends `{"type":"interrupt"}` at the first streamed text.
    Interrupts,
}

fn scenario(name: &'static str, request: Value) -> Scenario {
    Scenario {
        name,
        request,
        resume: false,
        client: Client::Closed,
    }
}

/// The scenarios every provider records (those its CLI supports), named as the corpus names
/// them. `mode` is the permission mode under which a tool runs without an approval.
fn core_scenarios(tool_mode: &str) -> Vec<Scenario> {
    let ask = |message: &str| json!({"message": message, "permissionMode": "default"});
    vec![
        scenario("text", ask("MOCK:text say hello")),
        scenario("thinking", ask("MOCK:thinking think first")),
        scenario(
            "tool-allowed",
            json!({"message": "MOCK:tool run it", "permissionMode": tool_mode}),
        ),
        scenario(
            "tool-refused",
            json!({"message": "MOCK:tool run it", "permissionMode": "plan"}),
        ),
        scenario("resume-turn1", ask("MOCK:text first turn")),
        Scenario {
            name: "resume-turn2",
            request: ask("MOCK:recall what did I say?"),
            resume: true,
            client: Client::Closed,
        },
        Scenario {
            client: Client::Answers("allow"),
            ..scenario("approval-allowed", ask("MOCK:danger make a file"))
        },
        Scenario {
            client: Client::Answers("deny"),
            ..scenario("approval-denied", ask("MOCK:danger make a file"))
        },
        Scenario {
            client: Client::Interrupts,
            ..scenario("interrupt", ask("MOCK:slow talk"))
        },
        scenario("err401", ask("MOCK:err401 hi")),
        scenario("err429", ask("MOCK:err429 hi")),
        scenario("err500", ask("MOCK:err500 hi")),
        scenario("midstream", ask("MOCK:midstream go")),
    ]
}

/// A resumed turn naming a session the CLI does not have (a well-formed id nobody created).
fn resume_badid() -> Scenario {
    scenario(
        "resume-badid",
        json!({"message": "MOCK:text hello again", "permissionMode": "default",
               "sessionId": "00000000-0000-4000-8000-000000000000"}),
    )
}

/// The core scenarios and a resume with a bad id.
fn core_and_badid(tool_mode: &str) -> Vec<Scenario> {
    let mut scenarios = core_scenarios(tool_mode);
    scenarios.push(resume_badid());
    scenarios
}

/// Codex's: the core scenarios, a resume with a bad id, and the Responses-only tools the mock
/// scripts (a web search; a patch applied, and one in `plan`'s read-only sandbox).
fn codex_scenarios(tool_mode: &str) -> Vec<Scenario> {
    let mut scenarios = core_and_badid(tool_mode);
    scenarios.extend([
        scenario(
            "websearch",
            json!({"message": "MOCK:websearch look it up", "permissionMode": tool_mode}),
        ),
        scenario(
            "patch-allowed",
            json!({"message": "MOCK:patch edit it", "permissionMode": tool_mode}),
        ),
        scenario(
            "patch-refused",
            json!({"message": "MOCK:patch edit it", "permissionMode": "plan"}),
        ),
    ]);
    scenarios
}

/// Codex's app-server transport: the core scenarios with approvals that Codex really asks for
/// (a command escalating out of the workspace sandbox, allowed, denied, and with nobody to
/// answer; a patch under `sandbox`'s read-only sandbox, allowed), and a resume with a bad id.
fn app_server_scenarios(tool_mode: &str) -> Vec<Scenario> {
    let escalate = json!({"message": "MOCK:escalate write it", "permissionMode": "default"});
    let mut scenarios: Vec<Scenario> = core_and_badid(tool_mode)
        .into_iter()
        .map(|s| {
            if s.name.starts_with("approval-") {
                Scenario {
                    request: escalate.clone(),
                    ..s
                }
            } else {
                s
            }
        })
        .collect();
    scenarios.extend([
        scenario("approval-unanswered", escalate.clone()),
        Scenario {
            client: Client::Answers("allow"),
            ..scenario(
                "patch-approval",
                json!({"message": "MOCK:patch edit it", "permissionMode": "sandbox"}),
            )
        },
    ]);
    scenarios
}

/// What a second dialect of the same CLI is recorded with (pi on the Responses API): a text,
/// a thinking and a tool turn.
fn dialect_scenarios(tool_mode: &str) -> Vec<Scenario> {
    let keep = ["text", "thinking", "tool-allowed"];
    core_scenarios(tool_mode)
        .into_iter()
        .filter(|s| keep.contains(&s.name))
        .collect()
}

/// How the recorder starts the bridge for one provider.
struct Target {
    /// Corpus directory name (the provider id).
    corpus: &'static str,
    /// The CLI executable, whose `--version` names the corpus version directory.
    cli: &'static str,
    /// `bridge <provider> send …` for a sandbox the recorder made with `prepare`.
    command: fn(&Sandbox, &Mock) -> Command,
    /// Writes the CLI's config into a fresh sandbox (model files pointing at the mock).
    prepare: fn(&Sandbox, &Mock),
    /// Fields every request of this provider carries (model, endpoint, cwd).
    request: fn(&Sandbox, &Mock) -> Value,
    /// A scenario name prefix (`acp-` for a second transport recorded next to the first).
    prefix: &'static str,
    /// `(what --version prints, package version)` for CLIs whose `--version` is not their
    /// package's version (the corpus, like the installer, is keyed by the package version).
    reports: Option<(&'static str, &'static str)>,
    tool_mode: &'static str,
    /// The scenarios recorded ([`core_scenarios`] unless the provider needs more).
    scenarios: fn(&str) -> Vec<Scenario>,
}

impl Target {
    fn new(
        corpus: &'static str,
        cli: &'static str,
        command: fn(&Sandbox, &Mock) -> Command,
        tool_mode: &'static str,
    ) -> Target {
        Target {
            corpus,
            cli,
            command,
            prepare: |_, _| {},
            request: |_, _| json!({}),
            prefix: "",
            reports: None,
            tool_mode,
            scenarios: core_scenarios,
        }
    }
}

fn codex(sandbox: &Sandbox, _: &Mock) -> Command {
    codex_command(sandbox, &["--format", "jsonl", "--transport", "exec"])
}

fn codex_app_server(sandbox: &Sandbox, _: &Mock) -> Command {
    codex_command(sandbox, &["--format", "jsonl"])
}

fn pi(sandbox: &Sandbox, _: &Mock) -> Command {
    pi_command(sandbox, &["--format", "jsonl"])
}

fn omp(sandbox: &Sandbox, _: &Mock) -> Command {
    omp_command(sandbox, &["--format", "jsonl"])
}

fn grok_cli(sandbox: &Sandbox, _: &Mock) -> Command {
    grok_cli_command(sandbox, &["--format", "jsonl"])
}

fn gemini_json(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Gemini.json(),
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

fn gemini_acp(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Gemini,
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

fn copilot_json(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Copilot.json(),
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

fn opencode_json(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Opencode.json(),
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

fn claude(sandbox: &Sandbox, mock: &Mock) -> Command {
    claude_command(sandbox, &mock.url(), &["--format", "jsonl"])
}

fn qwen_json(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Qwen.json(),
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

fn kimi_json(sandbox: &Sandbox, mock: &Mock) -> Command {
    acp_command(
        Provider::Kimi.json(),
        sandbox,
        &mock.url(),
        &["--format", "jsonl"],
    )
}

/// The recorded version of `cli`: the first `x.y.z` its `--version` prints.
fn cli_version(cli: &str) -> String {
    let out = Command::new(cli_path(cli))
        .arg("--version")
        .env("PI_OFFLINE", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // Copilot CLI 1.0.92 otherwise runs (and reports) a newer copilot it finds cached under
        // $HOME; the bridge runs it with auto-update off too.
        .env("COPILOT_AUTO_UPDATE", "false")
        .output()
        .expect("run --version");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = regex::Regex::new(r"\d+\.\d+\.\d+").unwrap();
    version
        .find(&text)
        .unwrap_or_else(|| panic!("{cli} --version printed no version: {text}"))
        .as_str()
        .to_string()
}

/// Today's date, `YYYY-MM-DD` (UTC), for the manifest.
fn today() -> String {
    bridge_core::permission_ipc::now_iso8601()[..10].to_string()
}

/// `text` with everything machine-specific replaced: the sandbox, the mock's port, `$HOME`,
/// the checkout.
fn scrub(text: &str, sandbox: &Sandbox) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut text = text.replace(&sandbox.root().to_string_lossy().into_owned(), "/SANDBOX");
    // A temp dir may also appear through its canonical path.
    if let Ok(real) = sandbox.root().canonicalize() {
        text = text.replace(&real.to_string_lossy().into_owned(), "/SANDBOX");
    }
    text = text.replace(&repo, "/REPO");
    if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
        text = text.replace(&format!("{}/", home.to_string_lossy()), "/HOME/");
    }
    // The request the manifest keeps carries the (canary) key: never filed.
    text = text.replace(CANARY_KEY, "[redacted]");
    let port = regex::Regex::new(r"127\.0\.0\.1:[0-9]+").unwrap();
    port.replace_all(&text, "127.0.0.1:<port>").into_owned()
}

/// Runs every scenario of `target` and files them into the corpus.
fn record(target: Target) {
    require_loopback_only_network();
    if let Some(dir) = std::env::var_os("BRIDGE_RECORD_CLI_DIR") {
        let mut path = dir;
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        // SAFETY: nextest runs each test in a process of its own; nothing else reads the
        // environment concurrently at this point.
        unsafe { std::env::set_var("PATH", path) };
    }
    let mut version = cli_version(target.cli);
    if let Some((reported, package)) = target.reports
        && version == reported
    {
        version = package.to_string();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(target.corpus)
        .join(&version);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest_path = dir.join("manifest.json");
    let mut manifest: Value = std::fs::read_to_string(&manifest_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    manifest["provider"] = json!(target.corpus);
    manifest["cli"] = json!(target.cli);
    manifest["version"] = json!(version);
    manifest["recorder"] = json!("scripts/record (tests/record.rs)");
    if !manifest["scenarios"].is_object() {
        manifest["scenarios"] = json!({});
    }

    let mock = Mock::start();
    let mut session: Option<String> = None;
    let mut recorded = json!({});
    let only: Option<Vec<String>> = std::env::var("BRIDGE_RECORD_ONLY")
        .ok()
        .map(|names| names.split(',').map(|n| n.trim().to_string()).collect());
    let scenarios = (target.scenarios)(target.tool_mode)
        .into_iter()
        .filter(|s| {
            only.as_ref()
                .is_none_or(|only| only.iter().any(|n| n == s.name))
        });
    for scenario in scenarios {
        if scenario.resume && session.is_none() {
            // The CLI has no sessions (grok-cli): nothing to resume.
            eprintln!(
                "{}: skipped, the first turn reported no session",
                scenario.name
            );
            continue;
        }
        // A resumed turn must run where the first one did (the CLIs keep sessions per HOME).
        let sandbox = match scenario.resume {
            true => RESUME_SANDBOX
                .with(|s| s.borrow_mut().take())
                .unwrap_or_else(|| panic!("{}: no sandbox from the turn before", scenario.name)),
            false => {
                let sandbox = Sandbox::new();
                (target.prepare)(&sandbox, &mock);
                sandbox
            }
        };
        let mut request = scenario.request.clone();
        if let (Some(fields), Some(base)) = (
            (target.request)(&sandbox, &mock).as_object(),
            request.as_object_mut(),
        ) {
            for (key, value) in fields {
                base.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        if scenario.resume {
            let Some(id) = &session else {
                panic!("{}: no session from the turn before", scenario.name);
            };
            request["sessionId"] = json!(id);
        }
        let prefix = sandbox.root().join("recording");
        let mut cmd = (target.command)(&sandbox, &mock);
        // CLIs that retry 429/500 for minutes are stopped; the recording keeps what they printed
        // until then (the replay tests expect such a turn to have no terminal event).
        cmd.arg("--record")
            .arg(&prefix)
            .args(["--timeout", "90", "--idle-timeout", "45"]);
        let stdout = match scenario.client {
            Client::Closed => {
                let out = run_with_stdin(cmd, &request.to_string());
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
            client => {
                let mut interrupted = false;
                let child = common::acp::start(cmd, &request);
                let (out, _, _) = common::acp::drive(child, |line, stdin| {
                    let Ok(event) = serde_json::from_str::<Value>(line) else {
                        return;
                    };
                    match client {
                        Client::Answers(decision) if event["type"] == "permission_request" => {
                            let reply = json!({"type": "permission_response", "requestId": event["requestId"], "decision": decision});
                            let _ = writeln!(stdin, "{reply}");
                        }
                        Client::Interrupts if event["type"] == "text_delta" && !interrupted => {
                            interrupted = true;
                            let _ = writeln!(stdin, "{}", json!({"type": "interrupt"}));
                        }
                        _ => {}
                    }
                });
                out
            }
        };
        let end = jsonl_events(&stdout)
            .into_iter()
            .find(|e| e["type"] == "turn_end")
            .unwrap_or_else(|| panic!("{}: no turn end in {stdout}", scenario.name));
        if scenario.name == "resume-turn1" {
            session = end["session_id"].as_str().map(str::to_string);
        }

        let name = format!("{}{}", target.prefix, scenario.name);
        for extension in ["stdout", "stderr", "stdin"] {
            let target_file = dir.join(format!("{name}.{extension}"));
            let _ = std::fs::remove_file(&target_file);
            let recorded = std::fs::read(prefix.with_extension(extension));
            // A CLI that printed nothing on stdout still has the scenario (an empty stdout).
            let recorded = match (recorded, extension) {
                (Err(_), "stdout") => Ok(Vec::new()),
                (recorded, _) => recorded,
            };
            if let Ok(bytes) = recorded {
                let raw = String::from_utf8_lossy(&bytes);
                // The bridge redacts its recordings itself; the scrub below would hide a leak.
                assert!(!raw.contains(CANARY_KEY), "{}: key recorded", scenario.name);
                let text = scrub(&raw, &sandbox);
                std::fs::write(&target_file, text).unwrap();
            }
        }
        let read = |extension: &str| {
            std::fs::read_to_string(prefix.with_extension(extension)).unwrap_or_default()
        };
        let command: Vec<Value> = read("command")
            .lines()
            .filter_map(|l| serde_json::from_str(&scrub(l, &sandbox)).ok())
            .collect();
        let entry = json!({
            "request": serde_json::from_str::<Value>(&scrub(&request.to_string(), &sandbox))
                .unwrap_or(Value::Null),
            "command": command,
            "exit": read("exit").lines().last().unwrap_or(""),
            "bridge_result": {"success": end["success"], "error": end["error"]},
            "recorded": today(),
        });
        // Errors quote the mock's address: scrubbed like the files.
        recorded[&name] = serde_json::from_str(&scrub(&entry.to_string(), &sandbox)).unwrap();
        if scenario.name == "resume-turn1" {
            RESUME_SANDBOX.with(|s| *s.borrow_mut() = Some(sandbox));
        }
    }
    // Another target of the same version (gemini's two transports) may have written the
    // manifest meanwhile: start from the file as it is now, with this run's scenarios replaced.
    if let Some(current) = std::fs::read_to_string(&manifest_path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        && current["scenarios"].is_object()
    {
        manifest["scenarios"] = current["scenarios"].clone();
    }
    for (name, entry) in recorded.as_object().into_iter().flatten() {
        manifest["scenarios"][name] = entry.clone();
    }
    let text = serde_json::to_string_pretty(&manifest).unwrap();
    std::fs::write(&manifest_path, format!("{text}\n")).unwrap();
    eprintln!(
        "recorded {} {version} into {}",
        target.corpus,
        dir.display()
    );
}

thread_local! {
    /// The sandbox of `resume-turn1`, reused by `resume-turn2`.
    static RESUME_SANDBOX: std::cell::RefCell<Option<Sandbox>> = const { std::cell::RefCell::new(None) };
}

/// One `#[ignore]`d recorder test per target: `scripts/record <name>` runs `record_<name>`.
macro_rules! recorders {
    ($($name:ident => $target:expr;)*) => {$(
        #[test]
        #[ignore = "the recorder: run by scripts/record"]
        fn $name() {
            record($target);
        }
    )*};
}

fn pi_family_request(sandbox: &Sandbox, _: &Mock) -> Value {
    json!({"cwd": sandbox.work(), "model": common::pi_family::PI_FAMILY_MODEL})
}

recorders! {
    record_claude => Target {
        scenarios: core_and_badid,
        ..Target::new("claude", "claude", claude, "bypassPermissions")
    };
    record_qwen => Target::new("qwen", "qwen", qwen_json, "yolo");
    record_kimi => Target::new("kimi", "kimi", kimi_json, "yolo");
    record_codex => Target {
        request: |sandbox, mock| json!({
            "cwd": sandbox.work(), "model": "gpt-5.5", "baseUrl": mock.api_base(), "apiKey": CANARY_KEY,
        }),
        // The file the mock's patch updates.
        prepare: |sandbox, _| std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap(),
        scenarios: codex_scenarios,
        ..Target::new("codex", "codex", codex, "bypassPermissions")
    };
    record_codex_app_server => Target {
        request: |sandbox, mock| json!({
            "cwd": sandbox.work(), "model": "gpt-5.5", "baseUrl": mock.api_base(), "apiKey": CANARY_KEY,
        }),
        prepare: |sandbox, _| std::fs::write(sandbox.work().join("hello.txt"), "hello\n").unwrap(),
        prefix: "appserver-",
        scenarios: app_server_scenarios,
        ..Target::new("codex", "codex", codex_app_server, "bypassPermissions")
    };
    record_gemini => Target {
        scenarios: core_and_badid,
        ..Target::new("gemini", "gemini", gemini_json, "yolo")
    };
    record_gemini_acp => Target {
        prefix: "acp-",
        ..Target::new("gemini", "gemini", gemini_acp, "bypassPermissions")
    };
    record_copilot => Target::new("copilot", "copilot", copilot_json, "bypassPermissions");
    record_opencode => Target {
        scenarios: core_and_badid,
        ..Target::new("opencode", "opencode", opencode_json, "bypassPermissions")
    };
    record_pi => Target {
        prepare: |sandbox, mock| write_pi_models(sandbox, &mock.api_base()),
        request: pi_family_request,
        scenarios: core_and_badid,
        ..Target::new("pi", "pi", pi, "bypassPermissions")
    };
    // pi on the OpenAI Responses API (its `mockresp` provider): other stream events in pi.
    record_pi_responses => Target {
        prepare: |sandbox, mock| write_pi_models(sandbox, &mock.api_base()),
        request: |sandbox, _| json!({"cwd": sandbox.work(), "model": "mockresp/mock-model"}),
        prefix: "responses-",
        scenarios: dialect_scenarios,
        ..Target::new("pi", "pi", pi, "bypassPermissions")
    };
    record_omp => Target {
        prepare: |sandbox, mock| write_omp_models(sandbox, &mock.api_base()),
        request: pi_family_request,
        ..Target::new("omp", "omp", omp, "bypassPermissions")
    };
    record_grok_cli => Target {
        // @vibe-kit/grok-cli 0.0.34 prints 1.0.1 (tests/install-clis.sh, `reports=`).
        reports: Some(("1.0.1", "0.0.34")),
        request: |sandbox, mock| json!({
            "cwd": sandbox.work(), "model": "mock-model",
            "baseUrl": format!("{}/v1", mock.server.base_url()), "apiKey": CANARY_KEY,
        }),
        ..Target::new("grok-cli", "grok-cli", grok_cli, "bypassPermissions")
    };
}
