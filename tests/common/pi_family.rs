//! The scenarios pi and oh-my-pi (omp) share: the two CLIs print the same event stream and
//! take the same flags, so `tests/pi.rs` and `tests/omp.rs` run one set of turns through a
//! [`PiFlavor`] and add only what differs (error texts, tool sets, pi's fake CLIs, omp's bun).

use std::process::Command;

use serde_json::{Value, json};

use super::*;

/// The model every pi/omp scenario picks (`mock` provider of the written model config).
pub const PI_FAMILY_MODEL: &str = "mock/mock-model";

/// How one member of the pi family is set up and run in a test.
pub struct PiFlavor {
    /// Writes the CLI's model config into a sandbox, pointing at the mock's API base.
    pub write_models: fn(&Sandbox, &str),
    /// `bridge <provider> send` with a clean environment and the pinned CLI.
    pub command: fn(&Sandbox, &[&str]) -> Command,
    /// Replaces run-specific values (call ids, timings) before snapshots.
    pub stable: fn(String) -> String,
}

/// pi: `~/.pi/agent/models.json`, `PI_BIN`, call ids of both OpenAI dialects.
pub const PI: PiFlavor = PiFlavor {
    write_models: write_pi_models,
    command: pi_command,
    stable: pi_stable,
};

/// omp: `~/.omp/agent/models.yml`, `OMP_BIN`, plus the wall time its bash tool appends.
pub const OMP: PiFlavor = PiFlavor {
    write_models: write_omp_models,
    command: omp_command,
    stable: omp_stable,
};

fn pi_stable(text: String) -> String {
    let call = Regex::new(r"(call|fc|resp)_[0-9a-f]{24}").unwrap();
    call.replace_all(&text, "${1}_[id]").into_owned()
}

fn omp_stable(text: String) -> String {
    let call = Regex::new(r"call_[0-9a-f]{24}").unwrap();
    // omp's bash tool appends the command's wall time, and the model's final text repeats it
    // as a streamed delta (`"0.19 "`).
    let wall = Regex::new(r"Wall time: [0-9.]+ seconds").unwrap();
    let seconds = Regex::new(r#""[0-9]+\.[0-9]+ ""#).unwrap();
    let text = call.replace_all(&text, "call_[id]");
    let text = wall.replace_all(&text, "Wall time: [t] seconds");
    seconds.replace_all(&text, r#""[t] ""#).into_owned()
}

impl PiFlavor {
    /// A sandbox whose model config points at `mock`.
    pub fn sandbox(&self, mock: &Mock) -> Sandbox {
        let sandbox = Sandbox::new();
        (self.write_models)(&sandbox, &mock.api_base());
        sandbox
    }

    /// A request for `message` in the sandbox's project, on [`PI_FAMILY_MODEL`], tools allowed,
    /// with `extra` fields merged in.
    pub fn request(&self, sandbox: &Sandbox, message: &str, extra: Value) -> String {
        let base = json!({
            "message": message,
            "cwd": sandbox.work(),
            "model": PI_FAMILY_MODEL,
            "permissionMode": "bypassPermissions",
        });
        request_with(base, extra)
    }

    /// Runs one turn and returns the bridge's stdout.
    pub fn run(&self, sandbox: &Sandbox, args: &[&str], request: &str) -> String {
        let out = run_with_stdin((self.command)(sandbox, args), request);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `prompt` in both formats (a sandbox each) and snapshots them as `name`.
    pub fn scenario_both_formats(
        &self,
        name: &str,
        mock: &Mock,
        prompt: &str,
        extra: Value,
    ) -> (String, String) {
        let run_once = |args: &[&str]| {
            let sandbox = self.sandbox(mock);
            let out = self.run(
                &sandbox,
                args,
                &self.request(&sandbox, prompt, extra.clone()),
            );
            (out, sandbox)
        };
        snapshot_both_formats(name, run_once, self.stable)
    }

    /// Plain text: deltas, the session id first, the text as the result. Returns both outputs.
    pub fn text_scenario(&self) -> (String, String) {
        let mock = Mock::start();
        let (markers, jsonl) =
            self.scenario_both_formats("text", &mock, "MOCK:text say hello", json!({}));
        assert!(
            markers.starts_with("[MESSAGE_START]\n[STREAM_START]\n[SESSION_ID] "),
            "{markers}"
        );
        let last = final_line(&markers);
        assert_eq!(last["success"], true, "{markers}");
        assert_eq!(content_text(&markers), "Hello from the mock model.");
        assert_eq!(last["result"], "Hello from the mock model.");
        let events = jsonl_events(&jsonl);
        let end = events.last().unwrap();
        assert_eq!(end["type"], "turn_end");
        assert_eq!(end["success"], true);
        (markers, jsonl)
    }

    /// Thinking deltas come before the text, and `reasoningEffort` reaches the model as the
    /// thinking level.
    pub fn thinking_scenario(&self) {
        let mock = Mock::start();
        let (markers, _) = self.scenario_both_formats(
            "thinking",
            &mock,
            "MOCK:thinking think first",
            json!({"reasoningEffort": "high"}),
        );
        let first_thinking = markers.find("[THINKING_DELTA]").expect("thinking deltas");
        let first_text = markers.find("[CONTENT_DELTA]").expect("text deltas");
        assert!(first_thinking < first_text);
        assert_eq!(final_line(&markers)["success"], true);
        let requests = mock.model_requests();
        assert!(!requests.is_empty());
        for r in requests {
            assert_eq!(r.body["reasoning_effort"], "high", "{}", r.body);
        }
    }

    /// The mock asks for `echo hello` through bash: a Claude-shaped tool use, its result
    /// before the final text, tied by id. Returns both outputs.
    pub fn tool_scenario(&self) -> (String, String) {
        let mock = Mock::start();
        let (markers, jsonl) =
            self.scenario_both_formats("tool", &mock, "MOCK:tool run it", json!({}));
        let lines: Vec<&str> = markers.lines().collect();
        let tool_use = lines
            .iter()
            .position(|l| l.starts_with("[MESSAGE] ") && l.contains(r#""type":"tool_use""#))
            .expect("a Claude-shaped tool_use message");
        assert!(lines[tool_use].contains(r#""name":"bash""#), "{markers}");
        let result = lines
            .iter()
            .position(|l| l.starts_with("[TOOL_RESULT] "))
            .expect("a tool result");
        assert!(lines[result].contains("hello"), "{markers}");
        assert!(tool_use < result);
        assert_eq!(final_line(&markers)["success"], true);
        let events = jsonl_events(&jsonl);
        let tool = of_type(&events, "tool_use");
        assert_eq!(tool.len(), 1, "{jsonl}");
        assert_eq!(tool[0]["name"], "bash");
        assert_eq!(tool[0]["kind"], "execute");
        assert_eq!(tool[0]["input"]["command"], "echo hello");
        let results = of_type(&events, "tool_result");
        assert_eq!(results[0]["tool_use_id"], tool[0]["id"]);
        assert_eq!(results[0]["is_error"], false);
        (markers, jsonl)
    }

    /// The tool names the model was offered in a turn in `mode`, sorted, and the
    /// `permission_mode` warnings of that turn (`prompt` decides what the mock does).
    pub fn tools_offered(&self, mock: &Mock, mode: &str, prompt: &str) -> Offered {
        let sandbox = self.sandbox(mock);
        let before = mock.model_requests().len();
        let out = self.run(
            &sandbox,
            &["--format", "jsonl"],
            &self.request(&sandbox, prompt, json!({"permissionMode": mode})),
        );
        let events = jsonl_events(&out);
        let warnings = of_type(&events, "warning")
            .iter()
            .filter(|w| w["code"] == "permission_mode")
            .map(|w| w["message"].as_str().unwrap().to_string())
            .collect();
        let mut tools: Vec<String> = mock.model_requests()[before].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect();
        tools.sort();
        Offered {
            tools,
            warnings,
            events,
        }
    }

    /// A second turn with the first turn's session id continues it: same id, and the model
    /// sees the earlier turn. Returns the second turn's streamed text.
    pub fn resume_scenario(&self) -> String {
        let mock = Mock::start();
        let sandbox = self.sandbox(&mock);
        let first = self.run(
            &sandbox,
            &[],
            &self.request(&sandbox, "MOCK:text first turn", json!({})),
        );
        let session = final_line(&first)["sessionId"]
            .as_str()
            .expect("first turn reports its session")
            .to_string();
        let second = self.run(
            &sandbox,
            &[],
            &self.request(
                &sandbox,
                "MOCK:recall what did I say?",
                json!({"sessionId": session}),
            ),
        );
        let last = final_line(&second);
        assert_eq!(last["success"], true, "{second}");
        assert_eq!(last["sessionId"], session.as_str());
        let text = content_text(&second);
        assert!(
            text.contains("first turn"),
            "the model did not see turn 1: {text}"
        );
        text
    }

    /// A turn naming a session that does not exist fails without asking the model; returns
    /// the `[SEND_ERROR]` line (the CLI's own message is the caller's to check).
    pub fn unknown_session_scenario(&self, session_id: &str) -> String {
        let mock = Mock::start();
        let sandbox = self.sandbox(&mock);
        let out = self.run(
            &sandbox,
            &[],
            &self.request(&sandbox, "MOCK:text hi", json!({"sessionId": session_id})),
        );
        assert_eq!(final_line(&out)["success"], false, "{out}");
        assert!(mock.model_requests().is_empty());
        out.lines()
            .find(|l| l.starts_with("[SEND_ERROR] "))
            .expect("a send error")
            .to_string()
    }

    /// The mock answers 401: the turn fails with the provider's message (not an exit code),
    /// in both formats. Returns the markers' final line.
    pub fn http_error_scenario(&self) -> Value {
        let mock = Mock::start();
        let (markers, jsonl) =
            self.scenario_both_formats("err401", &mock, "MOCK:err401 hi", json!({}));
        let last = final_line(&markers);
        assert_eq!(last["success"], false, "{markers}");
        assert!(last["error"].as_str().unwrap().starts_with("401"), "{last}");
        let events = jsonl_events(&jsonl);
        let errors = of_type(&events, "error");
        assert_eq!(errors.len(), 1, "{jsonl}");
        assert_eq!(errors[0]["code"], "provider");
        last
    }
}

/// What [`PiFlavor::tools_offered`] saw of one turn.
pub struct Offered {
    /// The tool names in the model request, sorted.
    pub tools: Vec<String>,
    /// The `permission_mode` warnings' messages.
    pub warnings: Vec<String>,
    /// Every JSONL event of the turn.
    pub events: Vec<Value>,
}
