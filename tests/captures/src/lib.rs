//! The recorded real-CLI outputs (`shared/captures/<name>.stdout`, `.stderr`, …, next to the
//! repository), for the channel crates' normalizer snapshot tests: one place that knows where
//! they are and how they are named.
//!
//! ```no_run
//! for name in captures::names("pi-") {
//!     let stdout = captures::read(&name, "stdout");
//!     assert!(!stdout.is_empty() || name.ends_with("-drop"));
//! }
//! ```

#![deny(missing_docs)]

use std::path::PathBuf;

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

/// The text of capture `name`'s `extension` file (`stdout`, `stderr`, `stdin`); empty when it
/// does not exist.
pub fn read(name: &str, extension: &str) -> String {
    std::fs::read_to_string(dir().join(format!("{name}.{extension}"))).unwrap_or_default()
}
