//! Following the thread's rollout file while `codex exec` runs.
//!
//! Codex writes every thread to `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`
//! as it goes. That file has what the `--json` stream leaves out: file contents and diffs of
//! file changes, the usage total before a resumed turn, and tool calls refused before they ran.
//! (ai-bridge read the same file for the same reasons.)
//!
//! This module is the engine's I/O side of it: finding the file ([`find_rollout`]) and reading
//! what it gained ([`RolloutFollower`]). The engine ([`crate::RolloutReader`]) reads before each
//! stdout line and pushes the lines it read into the pure [`CodexNormalizer`]
//! ([`CodexNormalizer::rollout_line`]). Codex writes a rollout entry before it prints the
//! matching stdout event, so the content of a file change is known when its `item.completed`
//! arrives. Everything here is best effort: without the file, the normalizer still works and
//! only the extras are missing.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(doc)]
use crate::normalize::CodexNormalizer;

/// Rollout lines longer than this are skipped (a huge tool output, say).
pub const MAX_ROLLOUT_LINE: usize = 16 * 1024 * 1024;

/// Most directory entries looked at when the thread id does not date the file.
const MAX_WALK_ENTRIES: usize = 20_000;

/// The Unix time in milliseconds encoded in a UUIDv7 (`None` for other ids).
///
/// ```
/// use bridge_codex::rollout::uuid_v7_millis;
/// assert_eq!(uuid_v7_millis("01a22f17-7d48-7161-b755-fa62726f29e1"), Some(0x01a2_2f17_7d48));
/// assert_eq!(uuid_v7_millis("00000000-0000-4000-8000-000000000000"), None);
/// ```
pub fn uuid_v7_millis(id: &str) -> Option<u64> {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) || &hex[12..13] != "7" {
        return None;
    }
    u64::from_str_radix(&hex[..12], 16).ok()
}

/// `(year, month, day)` of a day number since 1970-01-01 (proleptic Gregorian, UTC).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn matches(name: &str, suffix: &str) -> bool {
    name.starts_with("rollout-") && name.ends_with(suffix)
}

fn find_in(dir: &Path, suffix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name();
        matches(&name.to_string_lossy(), suffix).then(|| e.path())
    })
}

/// Finds the rollout file of `thread_id` under `codex_home`: first in the date directories the
/// thread id's UUIDv7 timestamp points at (the day before and after too, for time zones), then
/// by a bounded walk of `sessions/`.
pub fn find_rollout(codex_home: &Path, thread_id: &str) -> Option<PathBuf> {
    let sessions = codex_home.join("sessions");
    let suffix = format!("-{thread_id}.jsonl");
    if let Some(ms) = uuid_v7_millis(thread_id) {
        let day = (ms / 86_400_000) as i64;
        for d in [day, day - 1, day + 1] {
            let (y, m, dd) = civil(d);
            let dir = sessions.join(format!("{y:04}/{m:02}/{dd:02}"));
            if let Some(found) = find_in(&dir, &suffix) {
                return Some(found);
            }
        }
    }
    let mut seen = 0usize;
    let mut stack = vec![(sessions, 0u8)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return None;
            }
            let path = entry.path();
            if depth < 3 && path.is_dir() {
                stack.push((path, depth + 1));
            } else if matches(&entry.file_name().to_string_lossy(), &suffix) {
                return Some(path);
            }
        }
    }
    None
}

/// Reads the lines appended to one rollout file, with bounded memory.
#[derive(Debug)]
pub struct RolloutFollower {
    codex_home: PathBuf,
    file: Option<File>,
    partial: Vec<u8>,
    skipping: bool,
}

impl RolloutFollower {
    /// A follower for threads under `codex_home`.
    pub fn new(codex_home: impl Into<PathBuf>) -> Self {
        RolloutFollower {
            codex_home: codex_home.into(),
            file: None,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Whether the file was found and opened.
    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Finds and opens the rollout of `thread_id`; false when it is not there (yet).
    pub fn open(&mut self, thread_id: &str) -> bool {
        if self.file.is_none() {
            self.file = find_rollout(&self.codex_home, thread_id).and_then(|p| File::open(p).ok());
        }
        self.file.is_some()
    }

    /// Calls `each` with every complete line written since the last call.
    pub fn read_lines(&mut self, mut each: impl FnMut(&str)) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let n = match file.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut rest = &chunk[..n];
            while let Some(pos) = memchr::memchr(b'\n', rest) {
                let (head, tail) = rest.split_at(pos);
                rest = &tail[1..];
                if self.skipping {
                    self.skipping = false;
                    continue;
                }
                if self.partial.len() + head.len() > MAX_ROLLOUT_LINE {
                    self.partial.clear();
                    continue;
                }
                if self.partial.is_empty() {
                    each(&String::from_utf8_lossy(head));
                } else {
                    self.partial.extend_from_slice(head);
                    each(&String::from_utf8_lossy(&self.partial));
                    self.partial.clear();
                }
            }
            if !self.skipping {
                if self.partial.len() + rest.len() > MAX_ROLLOUT_LINE {
                    self.partial.clear();
                    self.skipping = true;
                } else {
                    self.partial.extend_from_slice(rest);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(20_513), (2026, 3, 1));
    }

    #[test]
    fn finds_the_file_by_the_uuid_date_and_by_walking() {
        let home = tempfile::tempdir().unwrap();
        let id = "01a22f17-7d48-7161-b755-fa62726f29e1";
        let ms = uuid_v7_millis(id).unwrap();
        let (y, m, d) = civil((ms / 86_400_000) as i64);
        let dir = home.path().join(format!("sessions/{y:04}/{m:02}/{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("rollout-2026-12-01T00-00-00-{id}.jsonl"));
        std::fs::write(&file, "").unwrap();
        assert_eq!(find_rollout(home.path(), id), Some(file));
        let other = home.path().join("sessions/2020/01/01");
        std::fs::create_dir_all(&other).unwrap();
        let plain = other.join("rollout-x-not-a-v7-id.jsonl");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(find_rollout(home.path(), "not-a-v7-id"), Some(plain));
        assert_eq!(find_rollout(home.path(), "missing"), None);
    }

    #[test]
    fn reads_only_complete_lines_and_skips_giant_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut writer = File::create(&path).unwrap();
        let mut follower = RolloutFollower::new(dir.path());
        follower.file = Some(File::open(&path).unwrap());
        let mut seen = Vec::new();
        writer.write_all(b"one\ntw").unwrap();
        follower.read_lines(|l| seen.push(l.to_string()));
        assert_eq!(seen, ["one"]);
        writer.write_all(b"o\n").unwrap();
        follower.read_lines(|l| seen.push(l.to_string()));
        assert_eq!(seen, ["one", "two"]);
        let giant = vec![b'x'; MAX_ROLLOUT_LINE + 10];
        writer.write_all(&giant).unwrap();
        writer.write_all(b"\nthree\n").unwrap();
        follower.read_lines(|l| seen.push(l.chars().take(20).collect()));
        assert_eq!(seen, ["one", "two", "three"]);
    }
}
