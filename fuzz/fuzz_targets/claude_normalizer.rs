//! The Claude stream-json normalizer fed arbitrary lines: never panics, and everything it
//! emits encodes to valid wire lines (every JSONL line is a JSON object with `v`, `seq` and
//! `type`; every marker line is a known tag with a well-formed payload; no raw CR or LF).
#![no_main]

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_claude::ClaudeNormalizer;
use bridge_core::encode::{Encoder, JsonlEncoder, MarkerDialect, MarkerEncoder};
use bridge_core::event::Event;
use bridge_core::turn::Normalizer;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TAGS: &[&str] = &[
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

fn check_marker_line(line: &str, last_of_turn_end: bool) {
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
        "[MESSAGE]" | "[TOOL_RESULT]" | "[USAGE]" | "[SEND_ERROR]" => {
            let value: Value = serde_json::from_str(payload).expect("payload is JSON");
            assert!(value.is_object(), "{line}");
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut normalizer = ClaudeNormalizer::new();
    let mut events = Vec::new();
    for line in text.split('\n') {
        normalizer.line(line, &mut events);
    }
    normalizer.finish(Some(&ExitStatus::from_raw(0)), &mut events);
    let _ = normalizer.session_id();

    let mut jsonl = JsonlEncoder::new(true);
    let mut markers = MarkerEncoder::new(MarkerDialect::SESSION);
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
});
