//! JSON Schemas of the wire, generated from the Rust types so they cannot drift.
//!
//! * [`jsonl_line_schema`]: one line of `--format jsonl` output (`{"v":1,"seq":N,"type":…}`);
//! * [`control_line_schema`]: one control line a client writes on stdin after the request.
//!
//! `bridge schema [events|control]` prints them; the committed copies in `bridge-core/schema/`
//! are checked against the generated ones by a test.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;
use crate::permission::PermissionDecision;

/// One JSONL output line: the envelope plus one [`Event`].
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "bridge JSONL event line, protocol version 1")]
pub struct JsonlLine {
    /// Protocol version; always 1 for this schema.
    pub v: u32,
    /// 0, 1, 2, … within one bridge run.
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// One control line on stdin.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "bridge stdin control line, protocol version 1")]
pub enum ControlLine {
    /// Interrupt the turn (gracefully first, then the process group is stopped).
    Interrupt,
    /// Answer a `permission_request`.
    PermissionResponse {
        /// The `requestId` of the request.
        #[serde(rename = "requestId")]
        request_id: String,
        /// The decision: a string (`allow`, `allow_once`, `allow_session`, `deny`, `cancel`) or
        /// an object.
        decision: DecisionWire,
    },
    /// In a session: the permission mode of the next turns (`default`, `acceptEdits`, `plan`,
    /// `bypassPermissions`, …), applied live where the CLI can, by a restart with resume where
    /// it cannot.
    SetPermissionMode {
        /// The mode.
        mode: String,
    },
    /// In a session: the model of the next turns.
    SetModel {
        /// The model id.
        model: String,
    },
}

/// The two accepted shapes of a decision.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DecisionWire {
    /// `allow`, `allow_once`, `allow_session`, `allow_always`, `deny`, `cancel`.
    Kind(String),
    /// A full decision.
    Full(Box<PermissionDecision>),
}

/// The schema of one JSONL output line.
pub fn jsonl_line_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(JsonlLine)).unwrap_or(Value::Null)
}

/// The schema of one stdin control line.
pub fn control_line_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(ControlLine)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, generated: Value) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("schema")
            .join(name);
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        if std::env::var_os("BRIDGE_UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{} is stale: run `BRIDGE_UPDATE_SCHEMA=1 cargo test -p bridge-core schema` and commit it",
            path.display()
        );
    }

    #[test]
    fn committed_schemas_match_the_types() {
        check("events.v1.schema.json", jsonl_line_schema());
        check("control.v1.schema.json", control_line_schema());
    }

    #[test]
    fn encoded_lines_read_back_as_the_schema_type() {
        use crate::encode::{Encoder, JsonlEncoder};
        let mut encoder = JsonlEncoder::new(true);
        let mut out = Vec::new();
        encoder.encode(&Event::TextDelta { text: "hi".into() }, &mut out);
        let line: JsonlLine = serde_json::from_str(&out[0]).unwrap();
        assert_eq!(line.v, 1);
        assert_eq!(line.event, Event::TextDelta { text: "hi".into() });
    }
}
