//! Finding the executable: env overrides, PATH, login-shell PATH, then the usual install dirs.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{ProbeEnv, ProbeSpec, Version};

/// Where a binary was found.
///
/// Serialized with a `kind` tag: `{"kind":"env","var":"KIMI_BIN"}`, `{"kind":"path"}`,
/// `{"kind":"loginShell"}`, `{"kind":"installDir","dir":"/home/u/.bun/bin","via":"bun"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Source {
    /// An env override named it.
    Env {
        /// The variable.
        var: String,
    },
    /// The PATH of the probing process (as given by the [`ProbeEnv`]).
    Path,
    /// The login shell's PATH (for GUI-launched processes that did not inherit it).
    LoginShell,
    /// One of the usual install dirs, not on PATH.
    InstallDir {
        /// The directory.
        dir: PathBuf,
        /// Which installer it belongs to (`nvm`, `bun`, `provider`, …).
        via: &'static str,
    },
}

/// A resolved executable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Resolved {
    /// Full path, as found (not canonicalized, so an npm shim stays a shim).
    pub path: PathBuf,
    /// How it was found.
    pub source: Source,
}

/// Everything [`resolve`] learned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// The binary to use.
    pub found: Option<Resolved>,
    /// Other installs found later in the search order (shadowed), distinct after canonicalizing.
    pub also_found: Vec<PathBuf>,
    /// Problems worth telling the user (an override that points nowhere).
    pub warnings: Vec<String>,
}

/// One directory of the install-dir search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    /// The directory.
    pub dir: PathBuf,
    /// Which installer it belongs to.
    pub via: &'static str,
}

/// Finds the binary for `spec`, or `None`. See [`resolve`] for the order.
///
/// ```no_run
/// use sdk_probe::{resolve_binary, ProbeEnv, ProbeSpec};
/// const CLAUDE: ProbeSpec = ProbeSpec::new("claude", "Claude Code", &["claude"]);
/// if let Some(r) = resolve_binary(&CLAUDE, &ProbeEnv::from_process()) {
///     println!("{} ({:?})", r.path.display(), r.source);
/// }
/// ```
pub fn resolve_binary(spec: &ProbeSpec, env: &ProbeEnv) -> Option<Resolved> {
    resolve(spec, env).found
}

/// Searches, in order:
///
/// 1. the spec's env overrides (a file, or a directory holding one of the binaries);
/// 2. PATH (with `which`, so PATHEXT and `.cmd` shims work on Windows);
/// 3. the login shell's PATH, when the env has one;
/// 4. [`install_dirs`]: the spec's own dirs, then the usual per-user and system dirs.
///
/// Within each step, the spec's binary names are tried in order. Only the filesystem is read;
/// nothing is executed.
pub fn resolve(spec: &ProbeSpec, env: &ProbeEnv) -> Resolution {
    let mut acc = Acc::default();
    let cwd = env.cwd();

    for &var in spec.env_overrides {
        let Some(value) = env.var_non_empty(var) else {
            continue;
        };
        let Some(p) = expand(env, value) else {
            acc.warnings.push(format!(
                "{var} is set to a relative path; it needs an absolute one"
            ));
            continue;
        };
        let source = || Source::Env {
            var: var.to_owned(),
        };
        if p.is_dir() {
            let before = acc.count();
            for b in spec.binaries {
                if let Ok(found) = which::which_in(b, Some(p.as_os_str()), cwd) {
                    acc.add(found, source());
                }
            }
            if acc.count() == before {
                acc.warnings.push(format!(
                    "{var} names the directory {}, which holds none of: {}",
                    p.display(),
                    spec.binaries.join(", ")
                ));
            }
        } else if is_executable_file(&p) {
            acc.add(p, source());
        } else {
            acc.warnings.push(format!(
                "{var} is set to {}, which is not an executable file; ignored",
                p.display()
            ));
        }
    }

    for (list, source) in [
        (env.path(), Source::Path),
        (env.login_path(), Source::LoginShell),
    ] {
        let Some(list) = list.filter(|l| !l.is_empty()) else {
            continue;
        };
        for b in spec.binaries {
            if let Ok(all) = which::which_in_all(b, Some(list), cwd) {
                for found in all {
                    acc.add(found, source.clone());
                }
            }
        }
    }

    for SearchDir { dir, via } in install_dirs(spec, env) {
        for b in spec.binaries {
            if let Ok(found) = which::which_in(b, Some(dir.as_os_str()), cwd) {
                acc.add(
                    found,
                    Source::InstallDir {
                        dir: dir.clone(),
                        via,
                    },
                );
            }
        }
    }

    Resolution {
        found: acc.found,
        also_found: acc.also,
        warnings: acc.warnings,
    }
}

#[derive(Default)]
struct Acc {
    found: Option<Resolved>,
    also: Vec<PathBuf>,
    seen: Vec<PathBuf>,
    warnings: Vec<String>,
}

impl Acc {
    fn count(&self) -> usize {
        self.seen.len()
    }

    fn add(&mut self, path: PathBuf, source: Source) {
        let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
        if self.seen.contains(&canon) {
            return;
        }
        self.seen.push(canon);
        if self.found.is_none() {
            self.found = Some(Resolved { path, source });
        } else {
            self.also.push(path);
        }
    }
}

fn expand(env: &ProbeEnv, value: &OsStr) -> Option<PathBuf> {
    let p = Path::new(value);
    if p.is_absolute() {
        return Some(p.to_owned());
    }
    let s = value.to_str()?;
    if s == "~" {
        return env.home().map(Path::to_owned);
    }
    if s.starts_with("~/") {
        return env.home_join(s);
    }
    None
}

/// A regular file (after following symlinks) that this user may execute.
pub(crate) fn is_executable_file(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The install dirs searched after PATH, in order, without duplicates:
///
/// - the spec's own dirs (`provider`);
/// - `~/.local/bin` (`user-local`: pip/pipx, Claude's native installer) and `$PIPX_BIN_DIR`;
/// - npm's global prefix: `$NPM_CONFIG_PREFIX/bin` (`npm-prefix`), `~/.npm-global/bin`,
///   `~/.npm-packages/bin`, `%APPDATA%\npm` on Windows (`npm-global`);
/// - pnpm: `$PNPM_HOME`, `~/.local/share/pnpm`, `~/Library/pnpm`;
/// - nvm: `$NVM_BIN`, then `$NVM_DIR` (default `~/.nvm`) `/versions/node/*/bin`, newest first;
/// - fnm: `$FNM_MULTISHELL_PATH/bin`, then each fnm dir's `aliases/default/bin` and
///   `node-versions/*/installation/bin`, newest first (`$FNM_DIR`, `~/.local/share/fnm`, `~/.fnm`,
///   `~/Library/Application Support/fnm`);
/// - volta: `$VOLTA_HOME/bin`, `~/.volta/bin`;
/// - bun: `$BUN_INSTALL/bin`, `~/.bun/bin`;
/// - cargo: `$CARGO_HOME/bin`, `~/.cargo/bin`;
/// - mise and asdf shims;
/// - the env's system dirs (`/opt/homebrew/bin`, linuxbrew, `/usr/local/bin`).
///
/// Directories that do not exist are left out.
pub fn install_dirs(spec: &ProbeSpec, env: &ProbeEnv) -> Vec<SearchDir> {
    let mut out: Vec<SearchDir> = Vec::new();
    let mut push = |dir: Option<PathBuf>, via: &'static str| {
        if let Some(dir) = dir
            && dir.is_absolute()
            && !out.iter().any(|d| d.dir == dir)
            && dir.is_dir()
        {
            out.push(SearchDir { dir, via });
        }
    };
    let home = |rel: &str| env.home_join(rel);
    let var = |k: &str| env.var_non_empty(k).map(PathBuf::from);
    let var_bin = |k: &str| var(k).map(|p| p.join("bin"));

    for d in spec.install_dirs {
        push(home(d), "provider");
    }
    push(home(".local/bin"), "user-local");
    push(var("PIPX_BIN_DIR"), "pipx");

    push(var_bin("NPM_CONFIG_PREFIX"), "npm-prefix");
    push(var_bin("npm_config_prefix"), "npm-prefix");
    if cfg!(windows) {
        push(var("APPDATA").map(|a| a.join("npm")), "npm-global");
    }
    push(home(".npm-global/bin"), "npm-global");
    push(home(".npm-packages/bin"), "npm-global");

    push(var("PNPM_HOME"), "pnpm");
    push(home(".local/share/pnpm"), "pnpm");
    push(home("Library/pnpm"), "pnpm");

    push(var("NVM_BIN"), "nvm");
    for root in [var("NVM_DIR"), home(".nvm")].into_iter().flatten() {
        for d in versions_newest_first(&root.join("versions/node")) {
            push(Some(d.join("bin")), "nvm");
        }
    }

    push(var_bin("FNM_MULTISHELL_PATH"), "fnm");
    let fnm_roots = [
        var("FNM_DIR"),
        var("XDG_DATA_HOME").map(|x| x.join("fnm")),
        home(".local/share/fnm"),
        home(".fnm"),
        home("Library/Application Support/fnm"),
    ];
    for root in fnm_roots.into_iter().flatten() {
        push(Some(root.join("aliases/default/bin")), "fnm");
        for d in versions_newest_first(&root.join("node-versions")) {
            push(Some(d.join("installation/bin")), "fnm");
        }
    }

    push(var_bin("VOLTA_HOME"), "volta");
    push(home(".volta/bin"), "volta");
    push(var_bin("BUN_INSTALL"), "bun");
    push(home(".bun/bin"), "bun");
    push(var_bin("CARGO_HOME"), "cargo");
    push(home(".cargo/bin"), "cargo");
    push(home(".local/share/mise/shims"), "mise");
    push(home(".asdf/shims"), "asdf");

    for d in env.system_dirs() {
        push(Some(d.clone()), "system");
    }
    out
}

/// Subdirectories of `dir` named like versions (`v20.11.1`), newest first; others after, by name.
fn versions_newest_first(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<(Option<Version>, PathBuf)> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let v = p
                .file_name()
                .and_then(OsStr::to_str)
                .and_then(Version::parse_lenient);
            (v, p)
        })
        .collect();
    entries.sort_by(|(va, pa), (vb, pb)| vb.cmp(va).then_with(|| pa.cmp(pb)));
    entries.into_iter().map(|(_, p)| p).collect()
}
