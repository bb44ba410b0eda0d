//! Checks shared by the normalizer fuzz targets: whatever a normalizer emits must encode to
//! valid wire lines (every JSONL line a JSON object with `v`, `seq` and `type`; every marker
//! line a known tag with a well-formed payload; no raw CR or LF).

use bridge_core::encode::{Encoder, JsonlEncoder, MarkerDialect, MarkerEncoder};
use bridge_core::event::Event;
use serde_json::Value;

const TAGS: &[&str] = &[
    "[THREAD_ID]",
    "[PERMISSION_REQUEST]",
    "[PERMISSION_DECISION]",
    "[MESSAGE_START]",
    "[STREAM_START]",
    "[SESSION_ID]",
    "[CONTENT_DELTA]",
    "[THINKING_DELTA]",
    "[MESSAGE]",
    "[TOOL_RESULT]",
    "[USAGE]",
    "[SEND_ERROR]",
    "[BLOCK_RESET]",
    "[STREAM_END]",
    "[MESSAGE_END]",
];

pub fn check_marker_line(line: &str, last_of_turn_end: bool) {
    assert!(!line.contains(['\n', '\r']), "raw line break in {line:?}");
    if last_of_turn_end {
        let value: Value = serde_json::from_str(line).expect("final line is JSON");
        assert!(value["success"].is_boolean(), "{line}");
        return;
    }
    let tag = TAGS
        .iter()
        .find(|t| line == **t || line.starts_with(&format!("{t} ")))
        .unwrap_or_else(|| panic!("unknown marker line {line:?}"));
    let payload = line[tag.len()..].trim_start();
    match *tag {
        "[CONTENT_DELTA]" | "[THINKING_DELTA]" => {
            serde_json::from_str::<String>(payload).expect("delta payload is a JSON string");
        }
        "[MESSAGE]"
        | "[TOOL_RESULT]"
        | "[USAGE]"
        | "[SEND_ERROR]"
        | "[PERMISSION_REQUEST]"
        | "[PERMISSION_DECISION]" => {
            let value: Value = serde_json::from_str(payload).expect("payload is JSON");
            assert!(value.is_object(), "{line}");
        }
        _ => {}
    }
}

/// Encodes `events` in both formats (markers with `dialect`) and checks every line.
pub fn check_events(events: &[Event], dialect: MarkerDialect) {
    let mut jsonl = JsonlEncoder::new(true);
    let mut markers = MarkerEncoder::new(dialect);
    let mut lines = Vec::new();
    for (seq, event) in events.iter().enumerate() {
        lines.clear();
        jsonl.encode(event, &mut lines);
        assert_eq!(lines.len(), 1, "one JSONL line per event");
        let line = &lines[0];
        assert!(!line.contains(['\n', '\r']), "raw line break in {line:?}");
        let value: Value = serde_json::from_str(line).expect("JSONL line is JSON");
        assert_eq!(value["v"], 1);
        assert_eq!(value["seq"], seq as u64);
        assert!(value["type"].is_string());

        lines.clear();
        markers.encode(event, &mut lines);
        let is_end = matches!(event, Event::TurnEnd(_));
        let n = lines.len();
        for (i, line) in lines.iter().enumerate() {
            check_marker_line(line, is_end && i + 1 == n);
        }
    }
}
