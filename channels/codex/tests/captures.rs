//! Replays the recorded real-CLI transcripts in `tests/corpus/codex/<version>/*.stdout` (Codex CLI
//! 0.169.1 and 0.171.0, `codex exec --json`, against the project's mock, made by
//! `scripts/record codex`) through the normalizer and snapshots what users would see, in both
//! wire formats.

use bridge_channel_codex::CodexNormalizer;
use bridge_channel_codex::normalize::TokenTotals;
use bridge_core::encode::{MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::Event;
use bridge_core::turn::Normalizer;
use serde_json::Value;

/// The `codex exec` captures (the `appserver-` ones have tests/app_server_captures.rs).
fn exec_names() -> Vec<String> {
    let names: Vec<String> = captures::names("codex")
        .into_iter()
        .filter(|n| !n.contains("-appserver-"))
        .collect();
    assert!(
        names.len() >= 30,
        "expected the codex exec captures: {names:?}"
    );
    names
}

/// The last `turn.completed` usage of capture `name` (Codex reports the thread's running
/// total).
fn running_total(name: &str) -> TokenTotals {
    let stdout = captures::stdout(name);
    let usage = stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "turn.completed")
        .unwrap_or_else(|| panic!("{name}: no turn.completed"))["usage"]
        .clone();
    let n = |key: &str| usage[key].as_u64().unwrap_or(0);
    TokenTotals {
        input: n("input_tokens"),
        cached_input: n("cached_input_tokens"),
        cache_write_input: n("cache_write_input_tokens"),
        output: n("output_tokens"),
        reasoning_output: n("reasoning_output_tokens"),
    }
}

/// A resumed turn's normalizer: `resume-turn2` continues the thread of `resume-turn1`, whose
/// running total is its baseline (the engine reads it from the rollout file).
fn normalizer_for(name: &str) -> CodexNormalizer {
    if let Some(first) = name.strip_suffix("-resume-turn2") {
        let mut n = CodexNormalizer::resumed();
        n.set_usage_baseline(running_total(&format!("{first}-resume-turn1")));
        return n;
    }
    if name.ends_with("-resume-badid") {
        return CodexNormalizer::resumed();
    }
    CodexNormalizer::new()
}

fn normalize(name: &str, text: &str) -> Vec<Event> {
    let mut normalizer = normalizer_for(name);
    let mut events = captures::normalize_lines("codex", &mut normalizer, text);
    if !events.iter().any(|e| matches!(e, Event::TurnEnd(_))) {
        let mut tail = Vec::new();
        normalizer.finish(None, &mut tail);
        events.extend(tail);
    }
    events
}

#[test]
fn every_codex_capture_normalizes_to_a_stable_event_stream() {
    for name in exec_names() {
        let events = normalize(&name, &captures::stdout(&name));
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::THREAD);
    }
}

fn end_of(events: &[Event]) -> Option<&bridge_core::event::TurnEnd> {
    events.iter().rev().find_map(|e| match e {
        Event::TurnEnd(end) => Some(end),
        _ => None,
    })
}

#[test]
fn failures_carry_the_cli_message_and_never_succeed() {
    for (scenario, message) in [
        ("err401", "401 Unauthorized"),
        ("err429", "429 Too Many Requests"),
        ("err500", "high demand"),
        ("midstream", "stream disconnected before completion"),
    ] {
        for capture in captures::in_every_version("codex", scenario) {
            let events = normalize(&capture, &captures::stdout(&capture));
            let end = end_of(&events).unwrap_or_else(|| panic!("{capture}: no turn end"));
            assert!(!end.success, "{capture} must fail");
            assert!(
                end.error.as_deref().unwrap_or("").contains(message),
                "{capture}: {:?}",
                end.error
            );
            let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::THREAD));
            assert_eq!(
                markers.matches("[SEND_ERROR]").count(),
                1,
                "{capture}: one send error\n{markers}"
            );
        }
    }
}

/// An unknown thread: `codex exec resume` fails on stderr and prints nothing on stdout.
#[test]
fn startup_failures_print_nothing_and_are_left_to_the_engine() {
    for capture in captures::in_every_version("codex", "resume-badid") {
        let events = normalize(&capture, &captures::stdout(&capture));
        assert!(end_of(&events).is_none(), "{capture}: {events:?}");
        assert!(
            captures::read(&capture, "stderr").contains("no rollout found"),
            "{capture}"
        );
    }
}

#[test]
fn a_stream_that_ends_before_turn_completed_is_never_a_success() {
    let text = captures::stdout("codex-tool-allowed");
    let cut: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("turn.completed"))
        .collect();
    let events = normalize("cut", &cut.join("\n"));
    assert!(end_of(&events).is_none(), "{events:?}");
}

/// What capture `name`'s stdout says: its thread id and the text of its last agent message.
fn thread_and_last_message(name: &str) -> (String, String) {
    let lines: Vec<Value> = captures::stdout(name)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let thread = lines
        .iter()
        .find(|v| v["type"] == "thread.started")
        .and_then(|v| v["thread_id"].as_str())
        .unwrap_or_else(|| panic!("{name}: no thread id"));
    let message = lines
        .iter()
        .rev()
        .find(|v| v["type"] == "item.completed" && v["item"]["type"] == "agent_message")
        .and_then(|v| v["item"]["text"].as_str())
        .unwrap_or_else(|| panic!("{name}: no agent message"));
    (thread.to_string(), message.to_string())
}

#[test]
fn successful_turns_end_with_the_last_agent_message_and_the_turn_delta() {
    for capture in [
        "tool-allowed",
        "websearch",
        "patch-allowed",
        "patch-refused",
    ]
    .into_iter()
    .flat_map(|scenario| captures::in_every_version("codex", scenario))
    {
        let events = normalize(&capture, &captures::stdout(&capture));
        let end = end_of(&events).unwrap();
        assert!(end.success, "{capture}");
        let (thread, message) = thread_and_last_message(&capture);
        assert_eq!(end.result.as_deref(), Some(message.as_str()), "{capture}");
        let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::THREAD));
        let last: Value = serde_json::from_str(markers.lines().last().unwrap()).unwrap();
        assert_eq!(last["threadId"], thread.as_str(), "{capture}");
        assert_eq!(last["success"], true, "{capture}");
    }

    // The resumed turn reports its own usage: the thread's total minus the first turn's.
    for resumed in captures::in_every_version("codex", "resume-turn2") {
        let before = running_total(&resumed.replace("-resume-turn2", "-resume-turn1"));
        let after = running_total(&resumed);
        let events = normalize(&resumed, &captures::stdout(&resumed));
        let usage = events
            .iter()
            .find_map(|e| match e {
                Event::Usage(u) => Some(u.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{resumed}: no usage"));
        let cached = after.cached_input - before.cached_input;
        assert!(after.output > before.output, "{resumed}");
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens
            ),
            (
                after.input - before.input - cached,
                cached,
                after.output - before.output
            ),
            "{resumed}"
        );
    }
}
