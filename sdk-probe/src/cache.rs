//! Version cache keyed by (binary path, mtime, size).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::VersionOutput;

/// Remembers versions so a repeat probe does not run `--version` again.
///
/// The key is the binary's canonical path (symlinks resolved, so re-pointing
/// `~/.local/bin/claude` to a new version invalidates it) plus its modification time and size.
/// Only clean results are stored (not timeouts, not versions from a CLI that hung).
///
/// In memory by default; [`VersionCache::with_dir`] also loads and [`VersionCache::save`]s a JSON
/// file in a directory the caller chooses. A missing or corrupt file is an empty cache.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let cache = sdk_probe::VersionCache::with_dir(dir.path());
/// assert!(cache.is_empty());
/// cache.save().unwrap();
/// assert!(dir.path().join(sdk_probe::VersionCache::FILE_NAME).exists());
/// ```
#[derive(Debug, Default)]
pub struct VersionCache {
    entries: Mutex<HashMap<Key, VersionOutput>>,
    file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Key {
    path: PathBuf,
    mtime_ns: u128,
    size: u64,
}

#[derive(Serialize, Deserialize)]
struct FileFormat {
    v: u32,
    entries: Vec<FileEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileEntry {
    path: PathBuf,
    /// Nanoseconds since the epoch, as a string (JSON numbers are not exact past 2^53).
    mtime_ns: String,
    size: u64,
    version: VersionOutput,
}

impl VersionCache {
    /// The file name used in the cache directory.
    pub const FILE_NAME: &'static str = "sdk-probe-versions.json";

    /// An empty in-memory cache.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A cache persisted as `dir/`[`Self::FILE_NAME`]; loads it now if it exists.
    pub fn with_dir(dir: impl AsRef<Path>) -> Self {
        let file = dir.as_ref().join(Self::FILE_NAME);
        let entries = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<FileFormat>(&bytes).ok())
            .filter(|f| f.v == 1)
            .map(|f| {
                f.entries
                    .into_iter()
                    .filter_map(|e| {
                        let key = Key {
                            path: e.path,
                            mtime_ns: e.mtime_ns.parse().ok()?,
                            size: e.size,
                        };
                        Some((key, e.version))
                    })
                    .collect()
            })
            .unwrap_or_default();
        VersionCache {
            entries: Mutex::new(entries),
            file: Some(file),
        }
    }

    fn key(path: &Path) -> Option<Key> {
        let canon = path.canonicalize().ok()?;
        let meta = std::fs::metadata(&canon).ok()?;
        let mtime_ns = meta
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(Key {
            path: canon,
            mtime_ns,
            size: meta.len(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, VersionOutput>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached version for the binary at `path`, if it has not changed since.
    pub fn lookup(&self, path: &Path) -> Option<VersionOutput> {
        let key = Self::key(path)?;
        self.lock().get(&key).cloned()
    }

    /// Remembers `version` for the binary at `path` as it is now. Ignored for a hung result.
    pub fn store(&self, path: &Path, version: &VersionOutput) {
        if version.hung {
            return;
        }
        if let Some(key) = Self::key(path) {
            let mut map = self.lock();
            // Drop stale entries for the same binary.
            map.retain(|k, _| k.path != key.path);
            map.insert(key, version.clone());
        }
    }

    /// The file this cache is persisted to (`None` in memory).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets everything (the file is rewritten on the next [`Self::save`]).
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Writes the cache file (atomically: a temporary file, then a rename), creating the
    /// directory if needed; entries whose binary no longer exists are left out. A no-op for an
    /// in-memory cache.
    pub fn save(&self) -> io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let entries = self
            .lock()
            .iter()
            // Binaries that are gone (uninstalled, temporary dirs) are dropped from the file.
            .filter(|(k, _)| k.path.to_str().is_some() && k.path.exists())
            .map(|(k, v)| FileEntry {
                path: k.path.clone(),
                mtime_ns: k.mtime_ns.to_string(),
                size: k.size,
                version: v.clone(),
            })
            .collect();
        let json = serde_json::to_vec_pretty(&FileFormat { v: 1, entries })?;
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{}.{}.tmp", Self::FILE_NAME, std::process::id()));
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, file)
    }
}
