//! Replays the recorded real-CLI transcripts in `tests/corpus/claude/<version>/*.stdout` through the
//! normalizer and snapshots what users would see, in both wire formats.

use std::path::PathBuf;

use bridge_channel_claude::ClaudeNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::event::Event;
use captures::{WireSnapshots, streamed_text};

fn normalize(text: &str) -> Vec<Event> {
    captures::normalize_lines("claude", &mut ClaudeNormalizer::new(), text)
}

/// Markers lines can carry the whole `init` message (tool lists, paths): keep snapshots
/// readable by cutting long `[MESSAGE]` payloads; the typed JSONL snapshot is complete.
fn snapshots(events: &[Event]) -> WireSnapshots {
    WireSnapshots::of(events, MarkerDialect::SESSION).with_short_messages()
}

#[test]
fn every_claude_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("claude", 28) {
        let events = normalize(&captures::stdout(&name));
        captures::assert_wire_snapshots!(&name, snapshots(&events));
    }
}

#[test]
fn api_errors_end_the_turn_as_failures_with_the_cli_message() {
    for (capture, message) in [
        ("claude-err401", "Invalid API key"),
        ("claude-err429", "429"),
        ("claude-err500", "500"),
        ("claude-resume-badid", "No conversation found"),
    ] {
        let events = normalize(&captures::stdout(capture));
        let Some(Event::TurnEnd(end)) =
            events.iter().rev().find(|e| matches!(e, Event::TurnEnd(_)))
        else {
            panic!("{capture}: no turn end");
        };
        assert!(!end.success, "{capture} must fail");
        assert!(
            end.error.as_deref().unwrap_or("").contains(message),
            "{capture}: {:?}",
            end.error
        );
    }
}

#[test]
fn successful_captures_stream_the_same_text_as_the_result() {
    for capture in [
        "claude-text",
        "claude-tool-allowed",
        "claude-thinking",
        "claude-midstream",
    ] {
        let events = normalize(&captures::stdout(capture));
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("{capture}: last event is not a turn end");
        };
        assert!(end.success, "{capture}");
        let streamed = streamed_text(&events);
        let result = end.result.clone().unwrap_or_default();
        assert!(
            streamed.ends_with(&result),
            "{capture}: streamed {streamed:?}, result {result:?}"
        );
    }
}

/// Transcripts the e2e suite recorded itself from the pinned CLI against the project's mock
/// (`BRIDGE_RECORD_TRANSCRIPTS=1 cargo test --test claude`, inside `tests/netns-run`).
#[test]
fn every_recorded_transcript_normalizes_to_a_stable_event_stream() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/transcripts is committed")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 8,
        "expected the recorded transcripts, found {}",
        paths.len()
    );
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let events = normalize(&std::fs::read_to_string(&path).unwrap());
        assert!(
            matches!(events.last(), Some(Event::TurnEnd(_))),
            "{name}: a recorded turn ends with the CLI's own result"
        );
        captures::assert_wire_snapshots!(&format!("transcript-{name}"), snapshots(&events));
    }
}
