//! The recorded real-CLI outputs (`shared/captures/<name>.stdout`, `.stderr`, …, next to the
//! repository), for the channel crates' normalizer snapshot tests and benches: one place that
//! knows where they are, how they are named, how a replayed capture is snapshotted
//! ([`assert_wire_snapshots!`]) and how a benchmark transcript is built from them ([`mod@bench`]).
//!
//! ```no_run
//! use bridge_core::encode::MarkerDialect;
//!
//! for name in captures::names_at_least("pi-", 1) {
//!     let events = captures::normalize_lines("pi", &mut MyNormalizer, &captures::stdout(&name));
//!     captures::assert_wire_snapshots!(&name, &events, MarkerDialect::SESSION);
//! }
//! # struct MyNormalizer;
//! # impl bridge_core::turn::Normalizer for MyNormalizer {
//! #     fn line(&mut self, _: &str, _: &mut Vec<bridge_core::event::Event>) {}
//! #     fn session_id(&self) -> Option<String> { None }
//! # }
//! ```

#![deny(missing_docs)]

pub mod bench;
mod snapshot;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;

use bridge_core::event::{Event, TurnEnd};
use bridge_core::turn::Normalizer;

pub use snapshot::WireSnapshots;

/// Insta, for [`assert_wire_snapshots!`]: the macro expands in the calling test, so the
/// snapshots keep that test file's names and directory.
#[doc(hidden)]
pub use insta;

/// The captures directory (`../shared/captures` from the repository root).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures")
}

/// The names (without extension) of the captures whose name starts with `prefix` and that have
/// a `.stdout` file, sorted.
///
/// # Panics
/// When the captures directory is missing (the tests need it).
pub fn names(prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap_or_else(|e| panic!("{} is present: {e}", dir().display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".stdout"))
        .map(|n| n.trim_end_matches(".stdout").to_string())
        .collect();
    names.sort();
    names
}

/// [`names`], checked to hold at least `at_least` captures: fewer means recordings are missing
/// and the snapshot test would pass without testing them.
///
/// # Panics
/// When fewer captures start with `prefix`.
pub fn names_at_least(prefix: &str, at_least: usize) -> Vec<String> {
    let names = names(prefix);
    assert!(
        names.len() >= at_least,
        "expected at least {at_least} {prefix}* captures, found {names:?}"
    );
    names
}

/// The text of capture `name`'s `extension` file (`stdout`, `stderr`, `stdin`); empty when it
/// does not exist.
pub fn read(name: &str, extension: &str) -> String {
    std::fs::read_to_string(dir().join(format!("{name}.{extension}"))).unwrap_or_default()
}

/// The text of capture `name`'s `extension` file, which the test needs.
///
/// # Panics
/// When the file does not exist.
pub fn read_required(name: &str, extension: &str) -> String {
    let path = dir().join(format!("{name}.{extension}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of capture `name`'s stdout ([`read_required`]).
///
/// # Panics
/// When the capture does not exist.
pub fn stdout(name: &str) -> String {
    read_required(name, "stdout")
}

/// The status of a process that exited with `code`, to finish a replayed turn the way the
/// recorded CLI ended.
pub fn exited(code: i32) -> ExitStatus {
    ExitStatus::from_raw(code << 8)
}

/// A turn start for `provider`, then what `normalizer` makes of every line of `stdout`: what
/// the engine has while the CLI still runs (no stderr, no [`Normalizer::finish`]; for a whole
/// recorded turn use [`bridge_core::normalize::replay`]).
pub fn normalize_lines(
    provider: &str,
    normalizer: &mut dyn Normalizer,
    stdout: &str,
) -> Vec<Event> {
    let mut events = vec![Event::TurnStart {
        provider: provider.into(),
    }];
    for line in stdout.lines() {
        normalizer.line(line, &mut events);
    }
    events
}

/// The replayed `events` of capture `name` with the turn end they close with.
///
/// # Panics
/// When the last event is not a turn end.
pub fn with_turn_end(name: &str, events: Vec<Event>) -> (Vec<Event>, TurnEnd) {
    let Some(Event::TurnEnd(end)) = events.last().cloned() else {
        panic!("{name}: the last event is not a turn end");
    };
    (events, end)
}

/// Asserts that capture `name`'s replayed turn (`events`, ending with `end`) failed with an
/// error containing `message`, reported by exactly one [`Event::Error`].
#[track_caller]
pub fn assert_failed_with(name: &str, events: &[Event], end: &TurnEnd, message: &str) {
    assert!(!end.success, "{name} must fail");
    assert!(
        end.error.as_deref().unwrap_or("").contains(message),
        "{name}: {:?}",
        end.error
    );
    let errors = events
        .iter()
        .filter(|e| matches!(e, Event::Error(_)))
        .count();
    assert_eq!(errors, 1, "{name}: exactly one error before the end");
}

/// The answer text the user saw streamed: every [`Event::TextDelta`] joined.
pub fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasoning the user saw streamed: every [`Event::ThinkingDelta`] joined.
pub fn streamed_thinking(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
