//! Replays the recorded real-CLI transcripts in `tests/corpus/codex/<version>/*.stdout` (Codex CLI
//! 0.171.0, `codex exec --json`) through the normalizer and snapshots what users would see, in
//! both wire formats.

use bridge_channel_codex::CodexNormalizer;
use bridge_channel_codex::normalize::TokenTotals;
use bridge_core::encode::{MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::Event;
use bridge_core::turn::Normalizer;

/// The recorded resumes continue the thread of `codex-tool-bypass` (running total 2468 input
/// tokens, …) and then of `codex-resume` (3702): those totals are their baselines.
fn normalizer_for(name: &str) -> CodexNormalizer {
    let baseline = |input, cached, output, reasoning| TokenTotals {
        input,
        cached_input: cached,
        cache_write_input: 0,
        output,
        reasoning_output: reasoning,
    };
    match name {
        "codex-resume" => {
            let mut n = CodexNormalizer::resumed();
            n.set_usage_baseline(baseline(2468, 2000, 112, 14));
            n
        }
        "codex-resume-cd" => {
            let mut n = CodexNormalizer::resumed();
            n.set_usage_baseline(baseline(3702, 3000, 168, 21));
            n
        }
        "codex-resume-badid" => CodexNormalizer::resumed(),
        _ => CodexNormalizer::new(),
    }
}

fn normalize(name: &str, text: &str) -> Vec<Event> {
    let mut normalizer = normalizer_for(name);
    let mut events = captures::normalize_lines("codex", &mut normalizer, text);
    if !events.iter().any(|e| matches!(e, Event::TurnEnd(_))) {
        // What the engine does when stdout ends: ask the normalizer, else report an early exit.
        let mut tail = Vec::new();
        normalizer.finish(None, &mut tail);
        events.extend(tail);
    }
    events
}

#[test]
fn every_codex_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("codex", 30) {
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
    for (capture, message) in [
        ("codex-err401", "401 Unauthorized"),
        ("codex-err429", "429 Too Many Requests"),
        ("codex-err429quota", "Quota exceeded"),
        ("codex-err500", "high demand"),
        ("codex-err500-default-retries", "high demand"),
        ("codex-failed", "The mock model failed mid-stream."),
        ("codex-drop", "stream closed before response.completed"),
        (
            "codex-drop-default-retries",
            "stream closed before response.completed",
        ),
        ("codex-missing-env-key", "Missing environment variable"),
    ] {
        let events = normalize(capture, &captures::stdout(capture));
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

#[test]
fn startup_failures_print_nothing_and_are_left_to_the_engine() {
    // Bad resume id, untrusted approval policy, chat wire API: plain text on stderr, nothing on
    // stdout. The normalizer must not invent an ending (the engine reports the early exit with
    // the stderr tail).
    for capture in [
        "codex-resume-badid",
        "codex-write-cfg-untrusted",
        "codex-wire-chat",
    ] {
        let events = normalize(capture, &captures::stdout(capture));
        assert!(end_of(&events).is_none(), "{capture}: {events:?}");
    }
}

#[test]
fn a_stream_that_ends_before_turn_completed_is_never_a_success() {
    let text = captures::stdout("codex-tool-bypass");
    let cut: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("turn.completed"))
        .collect();
    let events = normalize("cut", &cut.join("\n"));
    assert!(end_of(&events).is_none(), "{events:?}");
}

#[test]
fn successful_turns_end_with_the_last_agent_message_and_the_turn_delta() {
    let events = normalize("codex-tool-bypass", &captures::stdout("codex-tool-bypass"));
    let end = end_of(&events).unwrap();
    assert!(end.success);
    assert_eq!(
        end.result.as_deref(),
        Some(
            "The tool returned: Chunk ID: 9a2415 Wall time: 0.1781 seconds Process exited with code 0 Original token count: 2 Output: hello"
        )
    );
    let markers = encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::THREAD));
    let last: serde_json::Value = serde_json::from_str(markers.lines().last().unwrap()).unwrap();
    assert_eq!(last["threadId"], "01a22f17-85d7-79d0-a276-640ebb5c78a4");
    assert_eq!(last["success"], true);

    let resumed = normalize("codex-resume", &captures::stdout("codex-resume"));
    let usage = resumed
        .iter()
        .find_map(|e| match e {
            Event::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .unwrap();
    // 3702 - 2468 input of which 3000 - 2000 cached; 168 - 112 output.
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens
        ),
        (234, 1000, 56)
    );
}
