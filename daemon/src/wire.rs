//! The daemon's wire: what one stdin line asks for and every line written to stdout.
//!
//! The shapes are the Node daemon's (`ai-bridge/daemon.js`, ai-bridge protocol §4.6), which
//! the plugin's `DaemonBridge.java` parses:
//!
//! | line | shape |
//! |---|---|
//! | request (stdin) | `{"id":"7","method":"claude.send","params":{…,"env":{…}}}` |
//! | output of a request | `{"id":"7","line":"[CONTENT_DELTA] \"hi\""}` |
//! | diagnostics of a request | `{"id":"7","stderr":"[WARNING] …"}` |
//! | end of a request (exactly one) | `{"id":"7","done":true,"success":true}` / `{…,"success":false,"error":"…"}` |
//! | heartbeat reply | `{"id":"hb-1","type":"heartbeat","ts":…,"sdkPreloaded":true,"memoryUsage":…}` |
//! | status reply | `{"id":"3","type":"status","version":…,"pid":…,"uptime":…,"sessions":[…],…}` |
//! | lifecycle | `{"type":"daemon","event":"starting"\|"ready"\|"shutdown"\|…,…}` |
//!
//! Every request gets its `done`, heartbeats and status queries too (after their reply line):
//! the plugin ignores a `done` nobody waits for, and a client written against this protocol
//! never waits forever.

use serde::Serialize;
use serde_json::{Map, Value};

/// The version reported in `starting` and `status` (the wire's, not the binary's).
pub const PROTOCOL_VERSION: &str = "1.0.0";

/// One request line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// The request id (a number is taken as its decimal text); `None` when the line has none.
    pub id: Option<String>,
    /// `<provider>.<command>` or one of the daemon's own methods.
    pub method: String,
    /// The request object (`{}` when absent).
    pub params: Map<String, Value>,
}

/// Why a line is not a request; the `done` that answers it says this.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// The id, when the line had a readable one.
    pub id: Option<String>,
    /// What is wrong.
    pub error: String,
}

impl Incoming {
    /// Parses one stdin line (one JSON object).
    ///
    /// ```
    /// use bridge_daemon::wire::Incoming;
    /// let request = Incoming::parse(r#"{"id":1,"method":"heartbeat"}"#).unwrap();
    /// assert_eq!((request.id.as_deref(), request.method.as_str()), (Some("1"), "heartbeat"));
    /// assert!(Incoming::parse("not json").is_err());
    /// ```
    pub fn parse(line: &str) -> Result<Incoming, BadLine> {
        let value: Value = serde_json::from_str(line).map_err(|e| BadLine {
            id: None,
            error: format!("request line is not valid JSON: {e}"),
        })?;
        let Value::Object(mut object) = value else {
            return Err(BadLine {
                id: None,
                error: "request line must be a JSON object".into(),
            });
        };
        let id = match object.remove("id") {
            Some(Value::String(id)) => Some(id),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let method = match object.remove("method") {
            Some(Value::String(method)) if !method.trim().is_empty() => method,
            _ => {
                return Err(BadLine {
                    id,
                    error: "request has no `method` (e.g. \"claude.send\")".into(),
                });
            }
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => {
                return Err(BadLine {
                    id,
                    error: "request `params` must be a JSON object".into(),
                });
            }
        };
        Ok(Incoming { id, method, params })
    }

    /// `(provider, command)` of a `<provider>.<command>` method.
    pub fn provider_command(&self) -> Option<(&str, &str)> {
        self.method
            .split_once('.')
            .filter(|(provider, command)| !provider.is_empty() && !command.is_empty())
    }
}

/// The daemon's own methods (the rest are `<provider>.<command>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// Liveness: answered at once, even while turns run.
    Heartbeat,
    /// The daemon and its sessions: answered at once.
    Status,
    /// Interrupts every running request.
    Abort,
    /// Ends the daemon after closing every session.
    Shutdown,
}

impl Special {
    /// The special method `method` names, if it is one.
    pub fn of(method: &str) -> Option<Special> {
        match method {
            "heartbeat" => Some(Special::Heartbeat),
            "status" => Some(Special::Status),
            "abort" => Some(Special::Abort),
            "shutdown" => Some(Special::Shutdown),
            _ => None,
        }
    }
}

/// A line of a request's output.
#[derive(Debug, Serialize)]
pub struct OutputLine<'a> {
    /// The request.
    pub id: &'a str,
    /// One line the request wrote (a marker line, or a JSONL event).
    pub line: &'a str,
}

/// A diagnostic line of a request.
#[derive(Debug, Serialize)]
pub struct StderrLine<'a> {
    /// The request.
    pub id: &'a str,
    /// The text.
    pub stderr: &'a str,
}

/// The end of a request.
#[derive(Debug, Serialize)]
pub struct Done<'a> {
    /// The request (`null` for a line without a readable id).
    pub id: Option<&'a str>,
    /// Always `true`.
    pub done: bool,
    /// Whether the request did what it asked (a send: whether the turn succeeded).
    pub success: bool,
    /// Why not, when `success` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

/// One session in a `status` reply.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// Provider key.
    pub provider: String,
    /// The conversation id (`null` until its first turn reports one).
    pub session_id: Option<String>,
    /// The warm CLI's pid (`null` when no process runs between turns).
    pub pid: Option<u32>,
    /// Seconds since its last turn ended (0 while one runs).
    pub idle_seconds: u64,
    /// Whether a turn of it runs now.
    pub busy: bool,
    /// Turns it ran.
    pub turns: u64,
    /// Resident memory of its CLI's process tree, in bytes.
    pub rss_bytes: Option<u64>,
}

/// A lifecycle event line.
pub fn lifecycle(event: &str, fields: Value) -> Value {
    let mut line = Map::new();
    line.insert("type".into(), "daemon".into());
    line.insert("event".into(), event.into());
    if let Value::Object(fields) = fields {
        line.extend(fields);
    }
    Value::Object(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_bad_lines() {
        let ok = Incoming::parse(
            r#"{"id":"7","method":"claude.send","params":{"message":"hi","env":{"A":"1"}}}"#,
        )
        .unwrap();
        assert_eq!(ok.provider_command(), Some(("claude", "send")));
        assert_eq!(ok.params["message"], "hi");
        let no_method = Incoming::parse(r#"{"id":"8"}"#).unwrap_err();
        assert_eq!(no_method.id.as_deref(), Some("8"));
        assert!(no_method.error.contains("method"), "{no_method:?}");
        let bad_params = Incoming::parse(r#"{"id":9,"method":"x.y","params":[1]}"#).unwrap_err();
        assert_eq!(bad_params.id.as_deref(), Some("9"));
        assert!(Incoming::parse("[1]").unwrap_err().error.contains("object"));
        let dotless = Incoming::parse(r#"{"id":"1","method":"send"}"#).unwrap();
        assert_eq!(dotless.provider_command(), None);
        assert_eq!(Special::of("heartbeat"), Some(Special::Heartbeat));
        assert_eq!(Special::of("claude.send"), None);
    }

    #[test]
    fn reply_shapes() {
        let done = Done {
            id: Some("3"),
            done: true,
            success: false,
            error: Some("boom"),
        };
        insta::assert_snapshot!(serde_json::to_string(&done).unwrap(), @r#"{"id":"3","done":true,"success":false,"error":"boom"}"#);
        let ok = Done {
            id: None,
            done: true,
            success: true,
            error: None,
        };
        insta::assert_snapshot!(serde_json::to_string(&ok).unwrap(), @r#"{"id":null,"done":true,"success":true}"#);
        let line = OutputLine {
            id: "3",
            line: "[CONTENT_DELTA] \"hi\"",
        };
        insta::assert_snapshot!(serde_json::to_string(&line).unwrap(), @r#"{"id":"3","line":"[CONTENT_DELTA] \"hi\""}"#);
        insta::assert_snapshot!(
            lifecycle("ready", serde_json::json!({"pid": 1, "sdkPreloaded": true})).to_string(),
            @r#"{"type":"daemon","event":"ready","pid":1,"sdkPreloaded":true}"#
        );
    }
}
