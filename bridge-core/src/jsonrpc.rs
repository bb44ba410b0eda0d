//! JSON-RPC 2.0 framing: one JSON object per line (NDJSON) over a child's stdio, as ACP agents
//! and `codex app-server` speak it.
//!
//! Written by hand on `serde_json::Value` rather than with a JSON-RPC crate: the bridge reads
//! the child's stdout with its own bounded [`crate::lines::LineReader`] (the ACP SDK buffers
//! lines without a bound, rust-sdk#342), tolerates the unknown fields and extension methods
//! real agents send (`_meta`, `_x.ai/…`), and speaks both dialects: ACP's, with the `jsonrpc`
//! field, and Codex's app-server, which omits it ([`Framing`]). Parsing accepts either.

use serde_json::{Map, Value, json};

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC request id (a number or a string, echoed back verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// A numeric id.
    Number(i64),
    /// A string id.
    Text(String),
}

impl Id {
    fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Number(n) => n.as_i64().map(Id::Number),
            Value::String(s) => Some(Id::Text(s.clone())),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => json!(n),
            Id::Text(s) => json!(s),
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::Text(s) => f.write_str(s),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Extra data, if any.
    pub data: Option<Value>,
}

impl RpcError {
    /// The message plus any string details found in `data` (agents put the real cause there).
    pub fn describe(&self) -> String {
        let detail = match &self.data {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(obj)) => ["details", "message", "error", "reason"]
                .iter()
                .find_map(|k| obj.get(*k))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
            Some(Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        match detail {
            Some(d) if !d.is_empty() && !self.message.contains(d.as_str()) => {
                format!("{}: {d}", self.message)
            }
            _ => self.message.clone(),
        }
    }
}

/// One message the agent sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of our requests.
    Response {
        /// Our request's id.
        id: Id,
        /// `result`, or the `error` object.
        outcome: Result<Value, RpcError>,
    },
    /// The agent asks us something (`session/request_permission`, `fs/read_text_file`, …).
    Request {
        /// Its id, to answer with.
        id: Id,
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// A notification (`session/update`).
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON.
    NotJson,
    /// JSON, but not a JSON-RPC message object.
    NotRpc,
}

/// Parses one line of the agent's stdout.
///
/// ```
/// use bridge_core::jsonrpc::{parse, Incoming, Id};
/// let m = parse(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#).unwrap();
/// assert!(matches!(m, Incoming::Response { id: Id::Number(1), outcome: Ok(_) }));
/// assert!(parse("Ripgrep is not available.").is_err());
/// ```
pub fn parse(line: &str) -> Result<Incoming, ParseError> {
    let value: Value = serde_json::from_str(line.trim()).map_err(|_| ParseError::NotJson)?;
    let Value::Object(mut obj) = value else {
        return Err(ParseError::NotRpc);
    };
    let id = obj.get("id").and_then(Id::from_value);
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(ParseError::NotRpc),
        None => {
            let id = id.ok_or(ParseError::NotRpc)?;
            if let Some(error) = obj.remove("error") {
                let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_string();
                let data = error.get("data").cloned();
                return Ok(Incoming::Response {
                    id,
                    outcome: Err(RpcError {
                        code,
                        message,
                        data,
                    }),
                });
            }
            match obj.remove("result") {
                Some(result) => Ok(Incoming::Response {
                    id,
                    outcome: Ok(result),
                }),
                None => Err(ParseError::NotRpc),
            }
        }
    }
}

/// How messages are written: with the `"jsonrpc":"2.0"` member (JSON-RPC 2.0, ACP) or without
/// it (`codex app-server`, whose wire omits it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    version_field: bool,
}

impl Framing {
    /// JSON-RPC 2.0 as specified: every message carries `"jsonrpc":"2.0"`.
    pub const JSONRPC_2_0: Framing = Framing {
        version_field: true,
    };
    /// The `codex app-server` dialect: the same messages without the `jsonrpc` member.
    pub const WITHOUT_VERSION: Framing = Framing {
        version_field: false,
    };

    fn line(self, value: Value) -> Vec<u8> {
        let value = match value {
            // `jsonrpc` first, as the specification's examples (and every agent) write it.
            Value::Object(fields) if self.version_field => {
                let mut obj = Map::with_capacity(fields.len() + 1);
                obj.insert("jsonrpc".into(), json!("2.0"));
                obj.extend(fields);
                Value::Object(obj)
            }
            other => other,
        };
        let mut bytes = value.to_string().into_bytes();
        bytes.push(b'\n');
        bytes
    }

    /// A request line.
    pub fn request(self, id: i64, method: &str, params: Value) -> Vec<u8> {
        self.line(json!({"id": id, "method": method, "params": params}))
    }

    /// A notification line (`params` omitted when `null`).
    pub fn notification(self, method: &str, params: Value) -> Vec<u8> {
        if params.is_null() {
            return self.line(json!({"method": method}));
        }
        self.line(json!({"method": method, "params": params}))
    }

    /// A success response line.
    pub fn response(self, id: &Id, result: Value) -> Vec<u8> {
        self.line(json!({"id": id.to_value(), "result": result}))
    }

    /// An error response line.
    pub fn error_response(self, id: &Id, code: i64, message: &str) -> Vec<u8> {
        self.line(json!({"id": id.to_value(), "error": {"code": code, "message": message}}))
    }
}

/// A JSON-RPC 2.0 request line.
pub fn request(id: i64, method: &str, params: Value) -> Vec<u8> {
    Framing::JSONRPC_2_0.request(id, method, params)
}

/// A JSON-RPC 2.0 notification line.
pub fn notification(method: &str, params: Value) -> Vec<u8> {
    Framing::JSONRPC_2_0.notification(method, params)
}

/// A JSON-RPC 2.0 success response line.
pub fn response(id: &Id, result: Value) -> Vec<u8> {
    Framing::JSONRPC_2_0.response(id, result)
}

/// A JSON-RPC 2.0 error response line.
pub fn error_response(id: &Id, code: i64, message: &str) -> Vec<u8> {
    Framing::JSONRPC_2_0.error_response(id, code, message)
}

/// `params` as an object (an empty one when it is not).
pub fn object(params: &Value) -> Map<String, Value> {
    params.as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let r = parse(
            r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"x":1}}"#,
        )
        .unwrap();
        assert!(
            matches!(r, Incoming::Request { id: Id::Number(0), ref method, .. } if method == "session/request_permission")
        );
        let n = parse(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { .. }));
        let e = parse(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"Authentication required","data":{"details":"run login"}}}"#).unwrap();
        let Incoming::Response {
            id: Id::Text(id),
            outcome: Err(err),
        } = e
        else {
            panic!()
        };
        assert_eq!(id, "a");
        assert_eq!(err.code, -32000);
        assert_eq!(err.describe(), "Authentication required: run login");
        assert_eq!(parse("[1,2]"), Err(ParseError::NotRpc));
        assert_eq!(parse(r#"{"id":3}"#), Err(ParseError::NotRpc));
        assert_eq!(parse("\u{fffd}{"), Err(ParseError::NotJson));
    }

    #[test]
    fn encodes_lines() {
        let l = String::from_utf8(request(7, "initialize", json!({"protocolVersion": 1}))).unwrap();
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}})
        );
        assert!(l.starts_with("{\"jsonrpc\":\"2.0\",") && l.ends_with('\n'));
        let codex = Framing::WITHOUT_VERSION.notification("initialized", Value::Null);
        assert_eq!(codex, b"{\"method\":\"initialized\"}\n");
        let r = String::from_utf8(error_response(
            &Id::Text("x".into()),
            METHOD_NOT_FOUND,
            "no",
        ))
        .unwrap();
        assert!(r.ends_with('\n') && r.contains("-32601"));
    }
}
