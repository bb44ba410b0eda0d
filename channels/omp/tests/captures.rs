//! Replays the recorded real-CLI transcripts in `tests/corpus/omp/<version>/*.stdout` (oh-my-pi
//! 18.2.3 against the project's mock, recorded by `scripts/record omp`) through the pi-family
//! normalizer and snapshots what users would see, in both wire formats. Each turn ends with the
//! exit the recording filed: omp exits 1 after an API error, where pi exits 0.

use bridge_core::encode::MarkerDialect;
use bridge_core::normalize::replay;
use bridge_pi_family::PiNormalizer;
use captures::streamed_text;

fn end_of(name: &str) -> (Vec<bridge_core::event::Event>, bridge_core::event::TurnEnd) {
    let stdout = captures::stdout(name);
    let exit = captures::recorded_exit(name)
        .unwrap_or_else(|| panic!("{name}: the recorder files every omp capture's exit"));
    let events = replay("omp", &mut PiNormalizer::new("omp"), &stdout, "", exit);
    captures::with_turn_end(name, events)
}

#[test]
fn every_omp_capture_normalizes_to_a_stable_event_stream() {
    for name in captures::names_at_least("omp", 10) {
        let (events, _) = end_of(&name);
        captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
    }
}

#[test]
fn successful_turns_stream_their_result_and_errors_fail() {
    for name in [
        "omp-text",
        "omp-thinking",
        "omp-tool-allowed",
        "omp-resume-turn2",
    ] {
        let (events, end) = end_of(name);
        assert!(end.success, "{name}: {:?}", end.error);
        let result = end.result.clone().unwrap_or_default();
        assert!(!result.is_empty(), "{name}");
        assert!(streamed_text(&events).ends_with(&result), "{name}");
    }
    let (events, end) = end_of("omp-err401");
    captures::assert_failed_with("omp-err401", &events, &end, "401 invalid x-api-key");
}
