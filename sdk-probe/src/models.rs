//! A cache of model lists (`listModels`), kept per CLI binary like the version cache.
//!
//! A list is stored with a fingerprint of what it was made from: the binary's canonical path,
//! modification time and size, the same of each configuration file the listing reads (or that
//! it is missing), and the variables it depends on (their values hashed, never stored). The
//! next listing whose fingerprint matches, within [`MODEL_CACHE_MAX_AGE`], is answered from the
//! file without starting the CLI; anything else runs the CLI again. One file per provider
//! (`<cache dir>/models-<provider>.json`), written atomically. `BRIDGE_MODELS_CACHE=off`
//! bypasses it.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bridge_core::query::{ModelList, QueryError, QueryReply};
use serde::{Deserialize, Serialize};

use crate::ProbeEnv;

/// How long a cached model list is used (a CLI that fetches its catalog from a server may
/// learn new models without changing its binary).
pub const MODEL_CACHE_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What a model list is made from (see the [module docs](crate::list_models_cached)).
#[derive(Debug, Clone, Default)]
pub struct ModelSource {
    /// The CLI binary that lists them.
    pub binary: PathBuf,
    /// The configuration files the listing reads.
    pub files: Vec<PathBuf>,
    /// The variables it depends on (credentials, endpoints).
    pub env: Vec<&'static str>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    v: u32,
    fingerprint: String,
    stored_unix_s: u64,
    list: ModelList,
}

/// `path`'s canonical form, modification time (ns) and size, or `missing`.
fn file_key(path: &Path) -> String {
    let stat = path.canonicalize().ok().and_then(|canon| {
        let meta = std::fs::metadata(&canon).ok()?;
        let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(format!(
            "{}|{}|{}",
            canon.display(),
            mtime.as_nanos(),
            meta.len()
        ))
    });
    stat.unwrap_or_else(|| format!("{}|missing", path.display()))
}

impl ModelSource {
    /// The source of a listing by `binary` that reads the files `names` in `dir` (none when
    /// the directory is unknown) and the variables `env`.
    pub fn in_dir(
        binary: PathBuf,
        dir: Option<PathBuf>,
        names: &[&str],
        env: &[&'static str],
    ) -> Self {
        ModelSource {
            binary,
            files: dir
                .map(|dir| names.iter().map(|name| dir.join(name)).collect())
                .unwrap_or_default(),
            env: env.to_vec(),
        }
    }

    /// The fingerprint of the source as it is now; `None` when the binary cannot be read.
    pub fn fingerprint(&self, env: &ProbeEnv) -> Option<String> {
        let binary = file_key(&self.binary);
        if binary.ends_with("|missing") {
            return None;
        }
        let mut parts = vec![binary];
        parts.extend(self.files.iter().map(|f| file_key(f)));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for name in &self.env {
            name.hash(&mut hasher);
            env.var(name).hash(&mut hasher);
        }
        parts.push(format!("env {:016x}", hasher.finish()));
        Some(parts.join("\n"))
    }
}

fn cache_file(env: &ProbeEnv, provider: &str) -> Option<PathBuf> {
    let off = env
        .var("BRIDGE_MODELS_CACHE")
        .is_some_and(|v| v == "off" || v == "0");
    if off {
        return None;
    }
    crate::default_cache_dir(env).map(|dir| dir.join(format!("models-{provider}.json")))
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The cached list of `provider` for `source` as it is now, if there is a fresh one.
pub fn cached_models(env: &ProbeEnv, provider: &str, source: &ModelSource) -> Option<ModelList> {
    let file = cache_file(env, provider)?;
    let entry: Entry = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    let fresh = now_s().saturating_sub(entry.stored_unix_s) < MODEL_CACHE_MAX_AGE.as_secs();
    (entry.v == 1 && fresh && Some(entry.fingerprint) == source.fingerprint(env))
        .then_some(entry.list)
}

/// Remembers `list` for `source` (a failure to write is ignored: the next listing runs the
/// CLI again).
pub fn store_models(env: &ProbeEnv, provider: &str, source: &ModelSource, list: &ModelList) {
    let (Some(file), Some(fingerprint)) = (cache_file(env, provider), source.fingerprint(env))
    else {
        return;
    };
    let entry = Entry {
        v: 1,
        fingerprint,
        stored_unix_s: now_s(),
        list: list.clone(),
    };
    let Ok(json) = serde_json::to_vec(&entry) else {
        return;
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".models-{provider}.{}.tmp", std::process::id()));
    let _ = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, json))
        .and_then(|()| std::fs::rename(&tmp, &file));
}

/// The `listModels` reply of `provider` for `source`: from the cache when it holds a fresh list
/// for the source as it is now (the reply then says `"cached":true`), else from `list` (an
/// empty list is not cached: the CLI may be configured next).
pub async fn list_models_cached<F>(
    env: &ProbeEnv,
    provider: &str,
    source: &ModelSource,
    list: F,
) -> Result<QueryReply, QueryError>
where
    F: std::future::Future<Output = Result<(ModelList, Vec<String>), QueryError>>,
{
    if let Some(cached) = cached_models(env, provider, source) {
        return Ok(cached.cached_reply());
    }
    let (fresh, notes) = list.await?;
    if !fresh.models.is_empty() {
        store_models(env, provider, source, &fresh);
    }
    Ok(fresh.reply().with_notes(notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_core::query::ModelInfo;

    #[tokio::test]
    async fn a_second_listing_is_cached_until_the_binary_or_a_config_changes() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("cli");
        let config = dir.path().join("config.yml");
        std::fs::write(&binary, "v1").unwrap();
        let env = ProbeEnv::empty()
            .with_var("HOME", dir.path())
            .with_var("KEY", "a");
        let source = ModelSource {
            binary: binary.clone(),
            files: vec![config.clone()],
            env: vec!["KEY"],
        };
        let list = ModelList {
            provider: "demo".into(),
            default_model: None,
            models: vec![ModelInfo::new("m1")],
        };
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let listing = || async {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok((list.clone(), Vec::new()))
        };
        let first = list_models_cached(&env, "demo", &source, listing())
            .await
            .unwrap();
        assert!(!first.json().contains("cached"));
        let second = list_models_cached(&env, "demo", &source, listing())
            .await
            .unwrap();
        assert!(
            second.json().contains(r#""cached":true"#),
            "{}",
            second.json()
        );
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A config file that appears, a changed key, a changed binary: the CLI runs again.
        std::fs::write(&config, "models: []").unwrap();
        list_models_cached(&env, "demo", &source, listing())
            .await
            .unwrap();
        let env2 = env.clone().with_var("KEY", "b");
        list_models_cached(&env2, "demo", &source, listing())
            .await
            .unwrap();
        std::fs::write(&binary, "version 2").unwrap();
        list_models_cached(&env2, "demo", &source, listing())
            .await
            .unwrap();
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 4);
        let off = env2.with_var("BRIDGE_MODELS_CACHE", "off");
        list_models_cached(&off, "demo", &source, listing())
            .await
            .unwrap();
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 5);
        // The file holds no variable's value.
        let text =
            std::fs::read_to_string(dir.path().join(".cache/bridge/models-demo.json")).unwrap();
        assert!(!text.contains("\"b\"") && text.contains("m1"), "{text}");
    }
}
