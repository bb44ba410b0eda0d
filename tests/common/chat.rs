//! A running `bridge <provider> session --format jsonl`, driven line by line as a client would.

use std::io::Write;
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::{CANARY_KEY, as_session_in, children_of, spawn_piped};

/// `cmd` (a `bridge <provider> send …` command) as `bridge <provider> session --format jsonl`.
pub fn as_session(cmd: &Command) -> Command {
    as_session_in(cmd, "jsonl")
}

/// A running `bridge … session`, driven line by line as a client would.
pub struct Chat {
    /// The bridge.
    pub child: Child,
    /// Its stdin, until closed.
    pub stdin: Option<ChildStdin>,
    /// Its stdout lines.
    pub lines: mpsc::Receiver<String>,
    /// Every stdout line so far.
    pub seen: Vec<String>,
}

impl Chat {
    pub fn start(cmd: &Command) -> Chat {
        let mut cmd = as_session(cmd);
        let (child, stdin, lines) = spawn_piped(&mut cmd);
        Chat {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, line: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write a session line");
        stdin.flush().expect("flush");
    }

    /// The next event (panics after two minutes of silence).
    pub fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no output for 120 s; so far:\n{}", self.seen.join("\n")));
        assert!(!line.contains(CANARY_KEY), "the API key leaked: {line}");
        self.seen.push(line.clone());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSONL ({e}): {line}"))
    }

    /// Sends `request` and reads its turn up to `turn_end`; `on_event` sees every event and may
    /// answer with a control line.
    pub fn turn_with(
        &mut self,
        request: Value,
        mut on_event: impl FnMut(&Value) -> Option<Value>,
    ) -> Vec<Value> {
        self.send(&request);
        let mut events = Vec::new();
        loop {
            let event = self.next();
            if let Some(answer) = on_event(&event) {
                self.send(&answer);
            }
            let end = event["type"] == "turn_end";
            events.push(event);
            if end {
                assert_eq!(events[0]["type"], "turn_start", "{events:?}");
                return events;
            }
        }
    }

    pub fn turn(&mut self, request: Value) -> Vec<Value> {
        self.turn_with(request, |_| None)
    }

    /// The CLI processes the bridge runs now (its direct children).
    pub fn cli_pids(&self) -> Vec<i32> {
        children_of(self.child.id())
    }

    /// Closes stdin and waits for the bridge to exit; returns its exit code.
    pub fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait bridge");
        status.code()
    }
}
