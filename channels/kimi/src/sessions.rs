//! Where Kimi CLI keeps its sessions, so a resume of an id it does not have can be refused.
//!
//! `kimi --session <id>` with an id it does not know silently starts a NEW session under that id
//! (exit 0): a client resuming a lost conversation would get an answer without the history and
//! no error. Kimi 1.51.0 looks a session up as
//! `<share>/sessions/<md5 of the work dir>/<id>/context.jsonl`, where `<share>` is
//! `$KIMI_SHARE_DIR` or `~/.kimi` and the work dir is `--work-dir` (or the process's current
//! directory) made absolute and normalized without resolving symlinks (`kaos` `canonical()`:
//! Python's `posixpath.normpath`).

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use sdk_probe::ProbeEnv;

/// Kimi's data directory: `$KIMI_SHARE_DIR`, else `~/.kimi`.
pub fn share_dir(env: &ProbeEnv) -> Option<PathBuf> {
    match env.var_non_empty("KIMI_SHARE_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => env.home().map(|home| home.join(".kimi")),
    }
}

/// The file that holds session `id`'s conversation when kimi runs in `work_dir` (absolute).
///
/// ```
/// use std::path::Path;
/// let file = bridge_channel_kimi::sessions::context_file(
///     Path::new("/home/u/.kimi"),
///     Path::new("/work/./project/"),
///     "36a343e2-0000-4000-8000-000000000000",
/// );
/// // md5("/work/project")
/// assert_eq!(
///     file,
///     Path::new("/home/u/.kimi/sessions/c6d1d7e37329680cad59ac8dfc0c314d/36a343e2-0000-4000-8000-000000000000/context.jsonl")
/// );
/// ```
pub fn context_file(share_dir: &Path, work_dir: &Path, id: &str) -> PathBuf {
    let normalized = normpath(&work_dir.to_string_lossy());
    let hash = Md5::digest(normalized.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    share_dir
        .join("sessions")
        .join(hex)
        .join(id)
        .join("context.jsonl")
}

/// Whether kimi, run in `work_dir` (`None`: `env`'s current directory, which the CLI
/// inherits), would find session `id`. `None` when that cannot be told (no home): the turn then
/// runs as before.
pub fn exists(env: &ProbeEnv, work_dir: Option<&Path>, id: &str) -> Option<bool> {
    let share = share_dir(env)?;
    let work_dir = match work_dir {
        Some(dir) => env.cwd().join(dir),
        None => env.cwd().to_path_buf(),
    };
    Some(context_file(&share, &work_dir, id).is_file())
}

/// Python's `posixpath.normpath`: lexical `.`/`..`/`//` clean-up of an absolute path.
fn normpath(path: &str) -> String {
    // POSIX keeps exactly two leading slashes; one or three and more become one.
    let prefix = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            // `..` at the root stays at the root; in a relative path it is kept.
            ".." if !prefix.is_empty() => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (prefix, joined.is_empty()) {
        ("", true) => ".".to_string(),
        _ => format!("{prefix}{joined}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normpath_matches_python() {
        // Expected values from CPython's posixpath.normpath.
        for (input, expected) in [
            ("/a/b/", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/../b", "/b"),
            ("/../a", "/a"),
            ("//a//b", "//a/b"),
            ("///a", "/a"),
            ("/", "/"),
            ("a/../..", ".."),
            ("", "."),
        ] {
            assert_eq!(normpath(input), expected, "{input}");
        }
    }

    #[test]
    fn a_session_exists_only_in_its_work_dir() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let env = ProbeEnv::empty().with_home(home.path());
        let id = "36a343e2-aaaa-4000-8000-000000000001";
        assert_eq!(exists(&env, Some(work.path()), id), Some(false));
        let file = context_file(&home.path().join(".kimi"), work.path(), id);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        assert_eq!(exists(&env, Some(work.path()), id), Some(true));
        // Another work dir does not see it (kimi keys sessions by directory).
        assert_eq!(exists(&env, Some(home.path()), id), Some(false));
        // KIMI_SHARE_DIR moves the store.
        let env = env.with_var("KIMI_SHARE_DIR", work.path());
        assert_eq!(exists(&env, Some(work.path()), id), Some(false));
        // No home: cannot tell.
        assert_eq!(exists(&ProbeEnv::empty(), None, id), None);
        // A relative work dir is taken from the current directory, as kimi does.
        let env = ProbeEnv::empty()
            .with_home(home.path())
            .with_cwd(work.path());
        std::fs::create_dir_all(work.path().join("sub")).unwrap();
        let nested = context_file(&home.path().join(".kimi"), &work.path().join("sub"), id);
        std::fs::create_dir_all(nested.parent().unwrap()).unwrap();
        std::fs::write(&nested, "").unwrap();
        assert_eq!(exists(&env, Some(Path::new("./sub/")), id), Some(true));
    }
}
