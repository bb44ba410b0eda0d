//! The environment a probe looks at, injectable so tests never touch the real one.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment a probe resolves binaries and runs `--version` in: env vars (HOME and PATH
/// among them), the working directory, the absolute system dirs to search, and optionally the
/// login shell's PATH.
///
/// [`ProbeEnv::from_process`] snapshots the real process; tests build one from
/// [`ProbeEnv::empty`]. Cheap to clone. Its `Debug` output lists variable *names* only, never
/// values.
///
/// ```
/// use sdk_probe::ProbeEnv;
/// let env = ProbeEnv::empty()
///     .with_home("/home/u")
///     .with_path("/usr/bin:/bin")
///     .with_var("ANTHROPIC_API_KEY", "sk-secret");
/// assert_eq!(env.home().unwrap(), std::path::Path::new("/home/u"));
/// assert!(!format!("{env:?}").contains("sk-secret"));
/// ```
#[derive(Clone)]
pub struct ProbeEnv {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    vars: BTreeMap<OsString, OsString>,
    cwd: PathBuf,
    system_dirs: Vec<PathBuf>,
    login_path: Option<OsString>,
}

/// Absolute dirs searched after the per-user ones on this platform.
pub fn default_system_dirs() -> Vec<PathBuf> {
    if cfg!(windows) {
        Vec::new()
    } else {
        [
            "/opt/homebrew/bin",
            "/home/linuxbrew/.linuxbrew/bin",
            "/usr/local/bin",
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect()
    }
}

impl ProbeEnv {
    /// A snapshot of this process: its env vars, cwd and the platform's system dirs.
    pub fn from_process() -> Self {
        ProbeEnv {
            inner: Arc::new(Inner {
                vars: std::env::vars_os().collect(),
                cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
                system_dirs: default_system_dirs(),
                login_path: None,
            }),
        }
    }

    /// Nothing at all: no vars, no system dirs, cwd `/`. Build up with the `with_*` methods.
    pub fn empty() -> Self {
        ProbeEnv {
            inner: Arc::new(Inner {
                vars: BTreeMap::new(),
                cwd: PathBuf::from("/"),
                system_dirs: Vec::new(),
                login_path: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Sets a variable.
    pub fn with_var(self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        let (k, v) = (key.into(), value.into());
        self.edit(|i| {
            i.vars.insert(k, v);
        })
    }

    /// Removes a variable.
    pub fn without_var(self, key: impl AsRef<OsStr>) -> Self {
        let k = key.as_ref().to_owned();
        self.edit(|i| {
            i.vars.remove(&k);
        })
    }

    /// Sets HOME (and USERPROFILE on Windows).
    pub fn with_home(self, home: impl AsRef<Path>) -> Self {
        let h = home.as_ref().as_os_str().to_owned();
        let env = self.with_var("HOME", h.clone());
        if cfg!(windows) {
            env.with_var("USERPROFILE", h)
        } else {
            env
        }
    }

    /// Sets PATH.
    pub fn with_path(self, path: impl Into<OsString>) -> Self {
        self.with_var("PATH", path)
    }

    /// Sets the working directory (only used to resolve relative PATH entries).
    pub fn with_cwd(self, cwd: impl Into<PathBuf>) -> Self {
        let c = cwd.into();
        self.edit(|i| i.cwd = c)
    }

    /// Replaces the absolute system dirs (default: [`default_system_dirs`]).
    pub fn with_system_dirs(self, dirs: Vec<PathBuf>) -> Self {
        self.edit(|i| i.system_dirs = dirs)
    }

    /// Adds the login shell's PATH (see [`crate::login_shell_path`]), searched after PATH.
    pub fn with_login_path(self, path: impl Into<OsString>) -> Self {
        let p = path.into();
        self.edit(|i| i.login_path = Some(p))
    }

    /// A variable's value. Case-insensitive on Windows.
    pub fn var(&self, key: &str) -> Option<&OsStr> {
        if let Some(v) = self.inner.vars.get(OsStr::new(key)) {
            return Some(v);
        }
        if cfg!(windows) {
            return self
                .inner
                .vars
                .iter()
                .find(|(k, _)| k.to_string_lossy().eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_os_str());
        }
        None
    }

    /// A variable's value when set and not empty.
    pub fn var_non_empty(&self, key: &str) -> Option<&OsStr> {
        self.var(key).filter(|v| !v.is_empty())
    }

    /// HOME (USERPROFILE on Windows when HOME is unset), if set and absolute.
    pub fn home(&self) -> Option<&Path> {
        let h = self.var_non_empty("HOME").or_else(|| {
            if cfg!(windows) {
                self.var_non_empty("USERPROFILE")
            } else {
                None
            }
        })?;
        Some(Path::new(h)).filter(|p| p.is_absolute())
    }

    /// PATH.
    pub fn path(&self) -> Option<&OsStr> {
        self.var("PATH")
    }

    /// The login shell's PATH, if one was added.
    pub fn login_path(&self) -> Option<&OsStr> {
        self.inner.login_path.as_deref()
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.inner.cwd
    }

    /// The absolute system dirs.
    pub fn system_dirs(&self) -> &[PathBuf] {
        &self.inner.system_dirs
    }

    /// All variables.
    pub fn vars(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.inner
            .vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    /// `~/x` or a HOME-relative path → absolute; absolute paths unchanged; `None` without HOME.
    pub(crate) fn home_join(&self, rel: &str) -> Option<PathBuf> {
        let rel = rel.strip_prefix("~/").unwrap_or(rel);
        let p = Path::new(rel);
        if p.is_absolute() {
            return Some(p.to_owned());
        }
        Some(self.home()?.join(p))
    }
}

impl fmt::Debug for ProbeEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeEnv")
            .field("vars", &self.inner.vars.keys().collect::<Vec<_>>())
            .field("cwd", &self.inner.cwd)
            .field("system_dirs", &self.inner.system_dirs)
            .field("login_path", &self.inner.login_path.is_some())
            .finish()
    }
}

/// Whether an env var name looks like it holds a credential. Such vars are never passed to a
/// version probe and their values are redacted from anything captured.
pub fn is_secret_name(name: &str) -> bool {
    const MARKERS: [&str; 8] = [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "PRIVATE",
    ];
    let upper = name.to_ascii_uppercase();
    MARKERS.iter().any(|m| upper.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_join_handles_tilde_relative_absolute_and_missing_home() {
        let env = ProbeEnv::empty().with_home("/h");
        assert_eq!(env.home_join("~/.x/bin"), Some(PathBuf::from("/h/.x/bin")));
        assert_eq!(env.home_join(".x/bin"), Some(PathBuf::from("/h/.x/bin")));
        assert_eq!(env.home_join("/abs"), Some(PathBuf::from("/abs")));
        assert_eq!(ProbeEnv::empty().home_join(".x"), None);
        assert_eq!(ProbeEnv::empty().with_home("rel").home(), None);
    }

    #[test]
    fn clones_are_independent() {
        let a = ProbeEnv::empty().with_var("A", "1");
        let b = a.clone().with_var("A", "2").without_var("NOPE");
        assert_eq!(a.var("A"), Some(OsStr::new("1")));
        assert_eq!(b.var("A"), Some(OsStr::new("2")));
    }

    #[test]
    fn secret_names() {
        for n in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "client_secret",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["HOME", "PATH", "NVM_DIR", "LANG"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
