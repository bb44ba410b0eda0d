//! Replays the recorded real-CLI transcripts in `../shared/captures/grok-*.stdout`
//! (`@vibe-kit/grok-cli` 0.0.34 against the reference mock; every run exited 0) through the
//! normalizer and snapshots what users would see, in both wire formats.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_grok_cli::GrokCliNormalizer;
use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::{Event, TurnEnd};
use bridge_core::turn::Normalizer;

fn run(name: &str) -> (Vec<Event>, TurnEnd) {
    let text = std::fs::read_to_string(captures::dir().join(format!("{name}.stdout"))).unwrap();
    let mut normalizer = GrokCliNormalizer::new();
    let mut events = vec![Event::TurnStart {
        provider: "grok-cli".into(),
    }];
    for line in text.lines() {
        normalizer.line(line, &mut events);
    }
    normalizer.finish(Some(&ExitStatus::from_raw(0)), &mut events);
    let Some(Event::TurnEnd(end)) = events.last().cloned() else {
        panic!("{name}: no turn end");
    };
    (events, end)
}

#[test]
fn every_grok_capture_normalizes_to_a_stable_event_stream() {
    let mut names: Vec<String> = std::fs::read_dir(captures::dir())
        .expect("../shared/captures is present")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("grok-") && n.ends_with(".stdout"))
        .map(|n| n.trim_end_matches(".stdout").to_string())
        .collect();
    names.sort();
    assert!(
        names.len() >= 8,
        "expected the grok captures, found {names:?}"
    );
    for name in names {
        let (events, _) = run(&name);
        insta::assert_snapshot!(
            format!("{name}.jsonl"),
            encode_all(&events, &mut JsonlEncoder::new(false))
        );
        insta::assert_snapshot!(
            format!("{name}.markers"),
            encode_all(&events, &mut MarkerEncoder::new(MarkerDialect::SESSION))
        );
    }
}

#[test]
fn api_errors_fail_although_the_cli_exited_zero() {
    for (capture, message) in [
        ("grok-err401", "401 Incorrect API key"),
        ("grok-err429", "429 Rate limit"),
        ("grok-err500", "500 The server had an error"),
    ] {
        let (_, end) = run(capture);
        assert!(!end.success, "{capture}");
        assert!(
            end.error.as_deref().unwrap().contains(message),
            "{capture}: {:?}",
            end.error
        );
    }
}

#[test]
fn successful_captures_end_with_the_last_assistant_text() {
    for (capture, result) in [
        ("grok-text", "Hello from the mock model."),
        ("grok-reasoning", "Hello from the mock model."),
        ("grok-failed", "Hello from the mock model."),
        ("grok-tool", "The tool returned: hello"),
        ("grok-write", "The tool returned: hello"),
    ] {
        let (events, end) = run(capture);
        assert!(end.success, "{capture}");
        assert_eq!(end.result.as_deref(), Some(result));
        assert_eq!(end.session_id, None);
        let thinking = events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }));
        assert!(!thinking, "the CLI drops reasoning");
    }
    let (events, _) = run("grok-tool");
    let ids: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolUse(t) => Some(("use".into(), t.id.clone())),
            Event::ToolResult(t) => Some(("result".into(), t.tool_use_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0].1, ids[1].1);
}
