//! Versioned NDJSON: one JSON object per line, `{"v":1,"seq":N,"type":"…",…}`.
//!
//! # Format
//!
//! Every line is one [`Event`] serialized with its `type` tag, preceded by two envelope
//! fields: `v` (the [`PROTOCOL_VERSION`]) and `seq` (0, 1, 2, … within one bridge run). The
//! JSON Schema of the event model is printed by `bridge schema`.
//!
//! [`Event::Message`] (Claude-shaped transcript messages, for the markers format) and
//! [`Event::Raw`] are only written when raw output was requested: their content is already
//! carried by the typed events.

use serde_json::{Map, Value};

use super::Encoder;
use crate::event::{Event, PROTOCOL_VERSION};

/// Encodes [`Event`]s as versioned JSONL.
#[derive(Debug, Default)]
pub struct JsonlEncoder {
    seq: u64,
    raw: bool,
}

impl JsonlEncoder {
    /// A new encoder. With `raw`, provider-native lines and Claude-shaped messages are included.
    pub fn new(raw: bool) -> Self {
        JsonlEncoder { seq: 0, raw }
    }
}

impl Encoder for JsonlEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<String>) {
        if !self.raw && matches!(event, Event::Message { .. } | Event::Raw { .. }) {
            return;
        }
        let mut line = Map::new();
        line.insert("v".into(), Value::from(PROTOCOL_VERSION));
        line.insert("seq".into(), Value::from(self.seq));
        self.seq += 1;
        match serde_json::to_value(event) {
            Ok(Value::Object(fields)) => line.extend(fields),
            // The event model only has struct-like variants; keep the line valid regardless.
            Ok(other) => {
                line.insert("type".into(), Value::from("unknown"));
                line.insert("value".into(), other);
            }
            Err(error) => {
                line.insert("type".into(), Value::from("warning"));
                line.insert("code".into(), Value::from("encode_failed"));
                line.insert("message".into(), Value::from(error.to_string()));
            }
        }
        out.push(Value::Object(line).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{StopReason, TurnEnd};

    #[test]
    fn lines_carry_version_and_sequence() {
        let mut encoder = JsonlEncoder::new(false);
        let mut out = Vec::new();
        encoder.encode(
            &Event::TurnStart {
                provider: "claude".into(),
            },
            &mut out,
        );
        encoder.encode(
            &Event::Message {
                message: Value::Null,
            },
            &mut out,
        );
        encoder.encode(
            &Event::TextDelta {
                text: "a\nb".into(),
            },
            &mut out,
        );
        encoder.encode(
            &Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: StopReason::EndTurn,
                session_id: Some("s".into()),
                result: None,
                error: None,
            }),
            &mut out,
        );
        insta::assert_snapshot!(out.join("\n"), @r#"
        {"v":1,"seq":0,"type":"turn_start","provider":"claude"}
        {"v":1,"seq":1,"type":"text_delta","text":"a\nb"}
        {"v":1,"seq":2,"type":"turn_end","success":true,"stop_reason":"end_turn","session_id":"s"}
        "#);
    }

    #[test]
    fn raw_mode_keeps_messages() {
        let mut encoder = JsonlEncoder::new(true);
        let mut out = Vec::new();
        encoder.encode(&Event::Raw { line: "x".into() }, &mut out);
        assert_eq!(
            out,
            vec![r#"{"v":1,"seq":0,"type":"raw","line":"x"}"#.to_string()]
        );
    }
}
