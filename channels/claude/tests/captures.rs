//! Replays the recorded real-CLI transcripts in `../shared/captures/claude-*.stdout` through the
//! normalizer and snapshots what users would see, in both wire formats.

use std::path::PathBuf;

use bridge_channel_claude::ClaudeNormalizer;
use bridge_core::encode::{Encoder, JsonlEncoder, MarkerDialect, MarkerEncoder};
use bridge_core::event::Event;
use bridge_core::turn::Normalizer;

fn captures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures")
}

fn normalize(text: &str) -> Vec<Event> {
    let mut normalizer = ClaudeNormalizer::new();
    let mut events = vec![Event::TurnStart {
        provider: "claude".into(),
    }];
    for line in text.lines() {
        normalizer.line(line, &mut events);
    }
    events
}

fn encode(events: &[Event], encoder: &mut dyn Encoder) -> String {
    let mut lines = Vec::new();
    for event in events {
        encoder.encode(event, &mut lines);
    }
    lines.join("\n")
}

/// Markers lines can carry the whole `init` message (tool lists, paths): keep snapshots
/// readable by cutting long `[MESSAGE]` payloads; the typed JSONL snapshot is complete.
fn shorten(markers: &str) -> String {
    markers
        .lines()
        .map(|line| {
            if line.starts_with("[MESSAGE] ") && line.len() > 160 {
                let mut cut = 160;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}…", &line[..cut])
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_claude_capture_normalizes_to_a_stable_event_stream() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(captures_dir())
        .expect("../shared/captures is present")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("claude-") && name.ends_with(".stdout")
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 30,
        "expected the Claude captures, found {}",
        names.len()
    );
    for path in names {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let events = normalize(&text);
        let jsonl = encode(&events, &mut JsonlEncoder::new(false));
        let markers = shorten(&encode(
            &events,
            &mut MarkerEncoder::new(MarkerDialect::SESSION),
        ));
        insta::assert_snapshot!(format!("{name}.jsonl"), jsonl);
        insta::assert_snapshot!(format!("{name}.markers"), markers);
    }
}

#[test]
fn api_errors_end_the_turn_as_failures_with_the_cli_message() {
    for (capture, message) in [
        ("claude-err401", "Invalid API key"),
        ("claude-err429", "429"),
        ("claude-err500", "500"),
        ("claude-resume-missing", "No conversation found"),
    ] {
        let text =
            std::fs::read_to_string(captures_dir().join(format!("{capture}.stdout"))).unwrap();
        let events = normalize(&text);
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
        "claude-text-partial",
        "claude-tool-partial",
        "claude-thinking",
        "claude-midstream",
    ] {
        let path = captures_dir().join(format!("{capture}.stdout"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let events = normalize(&text);
        let Some(Event::TurnEnd(end)) = events.last() else {
            panic!("{capture}: last event is not a turn end");
        };
        assert!(end.success, "{capture}");
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
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
        let jsonl = encode(&events, &mut JsonlEncoder::new(false));
        let markers = shorten(&encode(
            &events,
            &mut MarkerEncoder::new(MarkerDialect::SESSION),
        ));
        insta::assert_snapshot!(format!("transcript-{name}.jsonl"), jsonl);
        insta::assert_snapshot!(format!("transcript-{name}.markers"), markers);
    }
}
