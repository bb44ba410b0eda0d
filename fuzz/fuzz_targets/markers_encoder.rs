//! The wire encoders' inverses. Arbitrary event sequences (strings full of CR, LF, quotes,
//! control and non-ASCII characters) must give:
//!
//! * markers: lines without a raw CR or LF; a `[CONTENT_DELTA]` / `[THINKING_DELTA]` payload
//!   that decodes back to exactly the text; `[SEND_ERROR]`, `[MESSAGE]`, `[TOOL_RESULT]`,
//!   `[USAGE]` and the final line carrying exactly what the event said;
//! * JSONL: one line per event that deserializes back to the same event (the JSONL encoder
//!   is lossless), with `v` = 1 and `seq` counting from 0.
#![no_main]

use arbitrary::{Result, Unstructured};
use bridge_core::encode::markers::TOOL_RESULT_MAX_CHARS;
use bridge_core::encode::{Encoder, JsonlEncoder, MarkerDialect, MarkerEncoder};
use bridge_core::event::{
    ErrorCode, ErrorInfo, Event, FileDiff, Status, StatusKind, StopReason, ToolKind, ToolResult,
    ToolUse, TurnEnd, Usage, UsageScope,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fn string(u: &mut Unstructured) -> Result<String> {
    // Bias towards the characters that break line protocols.
    if u.ratio(1, 4)? {
        let pieces = [
            "\n",
            "\r",
            "\r\n",
            "\"",
            "\\",
            "\u{2028}",
            "\0",
            "[STREAM_END]",
            "é",
            "\u{1F600}",
            " ",
        ];
        let mut s = String::new();
        for _ in 0..u.int_in_range(0..=8)? {
            s.push_str(u.choose(&pieces)?);
            s.push_str(&u.arbitrary::<String>()?);
        }
        return Ok(s);
    }
    u.arbitrary()
}

fn opt_string(u: &mut Unstructured) -> Result<Option<String>> {
    Ok(if u.arbitrary()? {
        Some(string(u)?)
    } else {
        None
    })
}

/// JSON without floats (float text round trips are not the encoders' business).
fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let max = if depth >= 3 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=max)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => Value::String(string(u)?),
        4 => Value::Array(
            (0..u.int_in_range(0..=4)?)
                .map(|_| value(u, depth + 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=4)? {
                map.insert(string(u)?, value(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

fn object(u: &mut Unstructured) -> Result<Value> {
    let mut map = Map::new();
    if u.arbitrary()? {
        let kind = *u.choose(&["assistant", "user", "system", "result"])?;
        map.insert("type".into(), Value::from(kind));
    }
    for _ in 0..u.int_in_range(0..=3)? {
        map.insert(string(u)?, value(u, 1)?);
    }
    Ok(Value::Object(map))
}

fn stop_reason(u: &mut Unstructured) -> Result<StopReason> {
    Ok(match u.int_in_range(0..=6)? {
        0 => StopReason::EndTurn,
        1 => StopReason::MaxTokens,
        2 => StopReason::MaxTurns,
        3 => StopReason::Refusal,
        4 => StopReason::Interrupted,
        5 => StopReason::Error,
        _ => StopReason::Other(string(u)?),
    })
}

fn event(u: &mut Unstructured) -> Result<Event> {
    Ok(match u.int_in_range(0..=14)? {
        0 => Event::TurnStart {
            provider: string(u)?,
        },
        1 => Event::SessionId { id: string(u)? },
        2 => Event::TextDelta { text: string(u)? },
        3 => Event::ThinkingDelta { text: string(u)? },
        4 => Event::Text { text: string(u)? },
        5 => Event::BlockReset,
        6 => Event::ToolUse(ToolUse {
            id: string(u)?,
            name: string(u)?,
            kind: *u.choose(&[
                ToolKind::Read,
                ToolKind::Edit,
                ToolKind::Delete,
                ToolKind::Move,
                ToolKind::Search,
                ToolKind::Execute,
                ToolKind::Think,
                ToolKind::Fetch,
                ToolKind::SwitchMode,
                ToolKind::Other,
            ])?,
            input: value(u, 0)?,
            diff: if u.arbitrary()? {
                Some(FileDiff {
                    path: string(u)?,
                    old_text: opt_string(u)?,
                    new_text: opt_string(u)?,
                })
            } else {
                None
            },
        }),
        7 => Event::ToolResult(ToolResult {
            tool_use_id: string(u)?,
            content: if u.ratio(1, 32)? {
                // Long enough to be cut in the markers format.
                Value::String(
                    string(u)?.repeat(u.int_in_range(1..=3)?) + &"x".repeat(TOOL_RESULT_MAX_CHARS),
                )
            } else {
                value(u, 0)?
            },
            is_error: u.arbitrary()?,
        }),
        8 => Event::Usage(Usage {
            scope: if u.arbitrary()? {
                UsageScope::Message
            } else {
                UsageScope::Turn
            },
            input_tokens: u.arbitrary()?,
            output_tokens: u.arbitrary()?,
            cache_read_input_tokens: u.arbitrary()?,
            cache_creation_input_tokens: u.arbitrary()?,
            reasoning_tokens: u.arbitrary()?,
            // Few significant digits: exact through any decimal round trip.
            cost_usd: if u.arbitrary()? {
                Some(f64::from(u.arbitrary::<u32>()?) / 1000.0)
            } else {
                None
            },
            context_window: u.arbitrary()?,
            context_tokens: u.arbitrary()?,
        }),
        9 => Event::Message {
            message: object(u)?,
        },
        10 => Event::Status(Status {
            kind: *u.choose(&[
                StatusKind::Retry,
                StatusKind::Reconnect,
                StatusKind::Requesting,
                StatusKind::Other,
            ])?,
            message: string(u)?,
            attempt: u.arbitrary()?,
            max_attempts: u.arbitrary()?,
        }),
        11 => Event::Warning {
            code: string(u)?,
            message: string(u)?,
        },
        12 => Event::Error(ErrorInfo {
            code: *u.choose(&[
                ErrorCode::InvalidRequest,
                ErrorCode::CliNotFound,
                ErrorCode::SpawnFailed,
                ErrorCode::Provider,
                ErrorCode::ExitedEarly,
                ErrorCode::IdleTimeout,
                ErrorCode::WallTimeout,
                ErrorCode::Interrupted,
                ErrorCode::Internal,
            ])?,
            message: string(u)?,
            stderr_tail: opt_string(u)?,
        }),
        13 => Event::Raw { line: string(u)? },
        _ => Event::TurnEnd(TurnEnd {
            success: u.arbitrary()?,
            stop_reason: stop_reason(u)?,
            session_id: opt_string(u)?,
            result: opt_string(u)?,
            error: opt_string(u)?,
        }),
    })
}

fn payload<'a>(line: &'a str, tag: &str) -> &'a str {
    line.strip_prefix(tag)
        .and_then(|rest| rest.strip_prefix(' '))
        .unwrap_or_else(|| panic!("expected {tag}, got {line:?}"))
}

fn json(line: &str, tag: &str) -> Value {
    serde_json::from_str(payload(line, tag))
        .unwrap_or_else(|e| panic!("{tag} payload: {e}: {line:?}"))
}

/// Tool ids carried by a Claude-shaped message (the encoder does not repeat those).
fn message_tool_ids(message: &Value, block_type: &str, key: &str) -> Vec<String> {
    message
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some(block_type))
        .filter_map(|b| b.get(key).and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn check_markers(dialect: MarkerDialect, events: &[Event]) {
    let mut encoder = MarkerEncoder::new(dialect);
    let mut send_error_written = false;
    let mut ended = false;
    let mut tool_uses_seen: Vec<String> = Vec::new();
    let mut tool_results_seen: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    for event in events {
        lines.clear();
        encoder.encode(event, &mut lines);
        for line in &lines {
            assert!(!line.contains(['\n', '\r']), "raw line break in {line:?}");
        }
        match event {
            Event::TurnStart { .. } => assert_eq!(lines, ["[MESSAGE_START]", "[STREAM_START]"]),
            Event::SessionId { id } => {
                assert_eq!(lines.len(), 1);
                assert_eq!(
                    payload(&lines[0], dialect.id_tag),
                    id.replace(['\r', '\n'], " ")
                );
            }
            Event::TextDelta { text } | Event::Text { text } => {
                assert_eq!(lines.len(), 1);
                let decoded: String =
                    serde_json::from_str(payload(&lines[0], "[CONTENT_DELTA]")).unwrap();
                assert_eq!(&decoded, text, "CONTENT_DELTA does not decode back");
            }
            Event::ThinkingDelta { text } => {
                assert_eq!(lines.len(), 1);
                let decoded: String =
                    serde_json::from_str(payload(&lines[0], "[THINKING_DELTA]")).unwrap();
                assert_eq!(&decoded, text, "THINKING_DELTA does not decode back");
            }
            Event::BlockReset => assert_eq!(lines, ["[BLOCK_RESET]"]),
            Event::ToolUse(tool) => {
                if tool_uses_seen.contains(&tool.id) {
                    assert!(lines.is_empty(), "tool_use repeated: {lines:?}");
                } else {
                    assert_eq!(lines.len(), 1);
                    let message = json(&lines[0], "[MESSAGE]");
                    let block = &message["message"]["content"][0];
                    assert_eq!(message["type"], "assistant");
                    assert_eq!(block["type"], "tool_use");
                    assert_eq!(block["id"], tool.id.as_str());
                    assert_eq!(block["name"], tool.name.as_str());
                    assert_eq!(block["input"], tool.input);
                }
            }
            Event::ToolResult(result) => {
                let last = lines.last().expect("a TOOL_RESULT line");
                let block = json(last, "[TOOL_RESULT]");
                assert_eq!(block["tool_use_id"], result.tool_use_id.as_str());
                assert_eq!(block["is_error"], result.is_error);
                match &result.content {
                    Value::String(s) if s.chars().count() > TOOL_RESULT_MAX_CHARS => {
                        // 65 % head, 35 % tail, a note between (as ai-bridge does).
                        let cut = block["content"].as_str().expect("cut content is a string");
                        let head: String =
                            s.chars().take(TOOL_RESULT_MAX_CHARS * 65 / 100).collect();
                        let tail_len = TOOL_RESULT_MAX_CHARS - TOOL_RESULT_MAX_CHARS * 65 / 100;
                        let tail: String = s.chars().skip(s.chars().count() - tail_len).collect();
                        assert!(
                            cut.starts_with(&head) && cut.ends_with(&tail),
                            "head and tail kept"
                        );
                        assert!(
                            cut.chars().count() <= TOOL_RESULT_MAX_CHARS + 64,
                            "cut to the limit"
                        );
                    }
                    content => assert_eq!(&block["content"], content),
                }
                let expected = if tool_results_seen.contains(&result.tool_use_id) {
                    1
                } else {
                    2
                };
                assert_eq!(lines.len(), expected, "{lines:?}");
                if expected == 2 {
                    let message = json(&lines[0], "[MESSAGE]");
                    assert_eq!(message["message"]["content"][0], block);
                }
            }
            Event::Usage(usage) => match usage.scope {
                UsageScope::Message => {
                    assert_eq!(lines.len(), 1);
                    let u = json(&lines[0], "[USAGE]");
                    assert_eq!(u["input_tokens"], usage.input_tokens);
                    assert_eq!(u["output_tokens"], usage.output_tokens);
                    assert_eq!(u["cache_read_input_tokens"], usage.cache_read_input_tokens);
                    assert_eq!(
                        u["cache_creation_input_tokens"],
                        usage.cache_creation_input_tokens
                    );
                }
                UsageScope::Turn if dialect.turn_usage_message => {
                    assert_eq!(lines.len(), 1);
                    let m = json(&lines[0], "[MESSAGE]");
                    assert_eq!(m["usage"]["output_tokens"], usage.output_tokens);
                }
                UsageScope::Turn => assert!(lines.is_empty()),
            },
            Event::Message { message } => {
                assert_eq!(lines.len(), 1);
                assert_eq!(&json(&lines[0], "[MESSAGE]"), message);
                tool_uses_seen.extend(message_tool_ids(message, "tool_use", "id"));
                tool_results_seen.extend(message_tool_ids(message, "tool_result", "tool_use_id"));
            }
            Event::Status(status) => {
                if dialect.status_messages && status.kind != StatusKind::Requesting {
                    assert_eq!(lines.len(), 1);
                    let m = json(&lines[0], "[MESSAGE]");
                    assert_eq!(m["message"], status.message.as_str());
                } else {
                    assert!(lines.is_empty());
                }
            }
            Event::Warning { .. } | Event::Raw { .. } => assert!(lines.is_empty(), "{lines:?}"),
            Event::Error(info) => {
                assert_eq!(lines.len(), 1);
                let e = json(&lines[0], "[SEND_ERROR]");
                assert_eq!(e["success"], false);
                let expected = match &info.stderr_tail {
                    Some(tail) if !tail.is_empty() => {
                        format!("{}\n\nCLI stderr (last lines):\n{}", info.message, tail)
                    }
                    _ => info.message.clone(),
                };
                assert_eq!(e["error"], expected.as_str());
                send_error_written = true;
            }
            Event::TurnEnd(end) => {
                if ended {
                    assert!(lines.is_empty(), "a second turn end: {lines:?}");
                    continue;
                }
                ended = true;
                let n = lines.len();
                let with_error = !end.success
                    && !send_error_written
                    && end.stop_reason != StopReason::Interrupted;
                assert_eq!(n, if with_error { 4 } else { 3 }, "{lines:?}");
                if with_error {
                    let e = json(&lines[0], "[SEND_ERROR]");
                    assert_eq!(
                        e["error"],
                        end.error.as_deref().unwrap_or("The turn failed")
                    );
                    send_error_written = true;
                }
                assert_eq!(lines[n - 3], "[STREAM_END]");
                assert_eq!(lines[n - 2], "[MESSAGE_END]");
                let last: Value = serde_json::from_str(&lines[n - 1]).expect("final line is JSON");
                assert_eq!(last["success"], end.success);
                let field = |key: &str, want: &Option<String>| match want {
                    Some(w) => assert_eq!(last[key], w.as_str(), "{key}"),
                    None => assert!(last.get(key).is_none(), "{key}"),
                };
                field(dialect.id_key, &end.session_id);
                field("result", &end.result);
                field("error", &end.error);
            }
            // Events added to the model later: at least no raw line breaks (checked above).
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}

fn check_jsonl(events: &[Event], raw: bool) {
    let mut encoder = JsonlEncoder::new(raw);
    let mut lines = Vec::new();
    let mut seq = 0u64;
    for event in events {
        lines.clear();
        encoder.encode(event, &mut lines);
        if !raw && matches!(event, Event::Message { .. } | Event::Raw { .. }) {
            assert!(lines.is_empty());
            continue;
        }
        assert_eq!(lines.len(), 1, "one line per event");
        assert!(
            !lines[0].contains(['\n', '\r']),
            "raw line break in {:?}",
            lines[0]
        );
        let Value::Object(mut fields) =
            serde_json::from_str(&lines[0]).expect("JSONL line is JSON")
        else {
            panic!("JSONL line is not an object: {}", lines[0]);
        };
        assert_eq!(fields.remove("v"), Some(Value::from(1)));
        assert_eq!(fields.remove("seq"), Some(Value::from(seq)));
        seq += 1;
        let back: Event = serde_json::from_value(Value::Object(fields))
            .unwrap_or_else(|e| panic!("JSONL line does not deserialize back: {e}: {}", lines[0]));
        assert_eq!(&back, event, "JSONL does not round-trip");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut events = Vec::new();
    while !u.is_empty() && events.len() < 64 {
        match event(&mut u) {
            Ok(event) => events.push(event),
            Err(_) => break,
        }
    }
    check_markers(MarkerDialect::SESSION, &events);
    check_markers(MarkerDialect::THREAD, &events);
    check_jsonl(&events, true);
    check_jsonl(&events, false);
});
