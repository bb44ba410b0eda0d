//! The recorded real-CLI outputs of the project's corpus (`tests/corpus/<provider>/<version>/
//! <scenario>.stdout`, `.stderr`, …), for the channel crates' normalizer snapshot tests and benches: one place that
//! knows where they are, how they are named, how a replayed capture is snapshotted
//! ([`assert_wire_snapshots!`]) and how a benchmark transcript is built from them ([`mod@bench`]).
//!
//! ```no_run
//! use bridge_core::encode::MarkerDialect;
//!
//! for name in captures::names_at_least("pi", 1) {
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

/// The corpus directory, `tests/corpus` of the repository: one directory per provider, one
/// per CLI version inside it (`tests/corpus/README.md`).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// The CLI version whose captures are named without a version: the one the e2e suite runs
/// (`tests/corpus/versions`, checked against `tests/install-clis.sh` by a test).
///
/// # Panics
/// When the provider has no line in `tests/corpus/versions`.
pub fn pinned_version(provider: &str) -> String {
    let path = dir().join("versions");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is present: {e}", path.display()));
    pinned_versions(&text)
        .into_iter()
        .find(|(p, _)| p == provider)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("{}: no line for provider {provider}", path.display()))
}

/// The `(provider, version)` lines of a `versions` file (`#` starts a comment).
pub fn pinned_versions(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect()
}

/// The CLI versions recorded for `provider`, sorted.
pub fn versions(provider: &str) -> Vec<String> {
    let mut versions: Vec<String> = std::fs::read_dir(dir().join(provider))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    versions
}

/// The names of `provider`'s capture `scenario` in every recorded CLI version (at least two:
/// a test that compares the versions must have both).
///
/// # Panics
/// When fewer than two versions of `provider` are recorded.
pub fn in_every_version(provider: &str, scenario: &str) -> Vec<String> {
    let versions = versions(provider);
    assert!(versions.len() >= 2, "{provider}: versions {versions:?}");
    versions
        .iter()
        .map(|v| name(provider, v, scenario))
        .collect()
}

/// The name of `provider`'s capture `scenario` recorded with CLI `version`:
/// `<provider>-<scenario>` for the pinned version, `<provider>@<version>-<scenario>` for others.
pub fn name(provider: &str, version: &str, scenario: &str) -> String {
    if version == pinned_version(provider) {
        format!("{provider}-{scenario}")
    } else {
        format!("{provider}@{version}-{scenario}")
    }
}

/// The file of capture `name` with `extension`: the provider directory is the longest one
/// whose id starts the name (so `grok-cli-text` is grok-cli's, not grok's).
fn path(name: &str, extension: &str) -> PathBuf {
    let mut providers: Vec<String> = std::fs::read_dir(dir())
        .unwrap_or_else(|e| panic!("{} is present: {e}", dir().display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    providers.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for provider in providers {
        let Some(rest) = name.strip_prefix(provider.as_str()) else {
            continue;
        };
        let (version, scenario) = if let Some(scenario) = rest.strip_prefix('-') {
            (pinned_version(&provider), scenario)
        } else if let Some(versioned) = rest.strip_prefix('@') {
            match versioned.split_once('-') {
                Some((version, scenario)) => (version.to_string(), scenario),
                None => continue,
            }
        } else {
            continue;
        };
        return dir()
            .join(&provider)
            .join(version)
            .join(format!("{scenario}.{extension}"));
    }
    panic!(
        "{name}: no provider directory in {} names it",
        dir().display()
    )
}

/// The names of every capture of `provider` (every recorded version) that has a `.stdout`
/// file, sorted ([`name`] says how they are spelt).
pub fn names(provider: &str) -> Vec<String> {
    let mut names = Vec::new();
    for version in versions(provider) {
        let version_dir = dir().join(provider).join(&version);
        let entries = std::fs::read_dir(&version_dir)
            .unwrap_or_else(|e| panic!("{} is readable: {e}", version_dir.display()));
        for entry in entries.filter_map(|e| e.ok()) {
            let file = entry.file_name().to_string_lossy().into_owned();
            if let Some(scenario) = file.strip_suffix(".stdout") {
                names.push(name(provider, &version, scenario));
            }
        }
    }
    names.sort();
    names
}

/// [`names`], checked to hold at least `at_least` captures: fewer means recordings are missing
/// and the snapshot test would pass without testing them.
///
/// # Panics
/// When `provider` has fewer captures.
pub fn names_at_least(provider: &str, at_least: usize) -> Vec<String> {
    let names = names(provider);
    assert!(
        names.len() >= at_least,
        "expected at least {at_least} {provider} captures, found {names:?}"
    );
    names
}

/// The text of capture `name`'s `extension` file (`stdout`, `stderr`, `stdin`); empty when it
/// does not exist.
pub fn read(name: &str, extension: &str) -> String {
    std::fs::read_to_string(path(name, extension)).unwrap_or_default()
}

/// The text of capture `name`'s `extension` file, which the test needs.
///
/// # Panics
/// When the file does not exist.
pub fn read_required(name: &str, extension: &str) -> String {
    let path = path(name, extension);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of capture `name`'s stdout ([`read_required`]).
///
/// # Panics
/// When the capture does not exist.
pub fn stdout(name: &str) -> String {
    read_required(name, "stdout")
}

/// How the CLI of capture `name` ended, as the recorder filed it in the version's
/// `manifest.json` (`exit code 75`, `signal 15 (SIGTERM)`); `None` for captures without a
/// manifest entry (those recorded before the recorder existed).
pub fn recorded_exit(name: &str) -> Option<ExitStatus> {
    let stdout = path(name, "stdout");
    let scenario = stdout.file_stem()?.to_string_lossy().into_owned();
    let manifest = std::fs::read_to_string(stdout.parent()?.join("manifest.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest).ok()?;
    let how = manifest["scenarios"][&scenario]["exit"].as_str()?;
    if let Some(code) = how.strip_prefix("exit code ") {
        return code.trim().parse().ok().map(exited);
    }
    let signal: i32 = how
        .strip_prefix("signal ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(ExitStatus::from_raw(signal))
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
