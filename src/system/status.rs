//! `bridge system status`: probe every provider, render a table or one JSON document.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sdk_probe::{
    AuthKind, ProbeEnv, ProbeError, ProbeReport, ProbeSpec, Prober, Source, Status, VersionCache,
    login_shell_path, resolve,
};
use serde_json::{Value, json};

use super::{LoginShellMode, Options};

/// The result of `bridge system status`.
#[derive(Debug)]
pub struct StatusReport {
    /// One report per provider, in [`super::specs`] order.
    pub providers: Vec<ProbeReport>,
    /// Whether and how the login shell's PATH was consulted.
    pub login_shell: LoginShellReport,
    /// The version cache.
    pub cache: CacheReport,
    /// The per-provider deadline.
    pub timeout: Duration,
    /// Wall time of the whole status run.
    pub elapsed: Duration,
    cache_handle: Option<Arc<VersionCache>>,
}

/// What happened with the login shell's PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginShellReport {
    /// The outcome.
    pub status: LoginShellStatus,
    /// `$SHELL`, when set.
    pub shell: Option<PathBuf>,
    /// Directories on the login shell's PATH that this process's PATH lacks (what a
    /// GUI-launched IDE would miss).
    pub added_dirs: Vec<PathBuf>,
    /// Why it failed, or why it was not available.
    pub detail: Option<String>,
}

/// The outcome of the login-shell step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginShellStatus {
    /// Not run: every provider was found through an env override or PATH.
    NotNeeded,
    /// Not run: `BRIDGE_LOGIN_SHELL=0`.
    Disabled,
    /// Ran and printed its PATH.
    Ok,
    /// No `$SHELL` (or not a Unix system).
    Unavailable,
    /// Did not answer before its deadline (killed).
    TimedOut,
    /// Ran but printed no PATH, or could not be started.
    Failed,
}

impl LoginShellStatus {
    /// The camelCase JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            LoginShellStatus::NotNeeded => "notNeeded",
            LoginShellStatus::Disabled => "disabled",
            LoginShellStatus::Ok => "ok",
            LoginShellStatus::Unavailable => "unavailable",
            LoginShellStatus::TimedOut => "timedOut",
            LoginShellStatus::Failed => "failed",
        }
    }
}

/// The version cache as used by one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReport {
    /// Cached versions were allowed (`BRIDGE_NO_CACHE` unset).
    pub enabled: bool,
    /// The cache file (`None`: no HOME nor XDG_CACHE_HOME, nothing persisted).
    pub file: Option<PathBuf>,
    /// How many providers' versions came from the cache.
    pub hits: usize,
}

/// Probes every spec in parallel (each with its own deadline), consulting the login shell when
/// [`Options::login_shell`] says so and the version cache when [`Options::use_cache`] allows.
///
/// Providers found through an env override or PATH are probed at once; the login shell (which
/// only matters for the others, as it comes after PATH in the search order) runs concurrently,
/// and the remaining providers are probed with its PATH as soon as it answers.
pub async fn status(specs: &[ProbeSpec], options: &Options) -> StatusReport {
    let started = Instant::now();
    let cache = options.cache_dir.as_ref().map(|dir| {
        let cache = VersionCache::with_dir(dir);
        if !options.use_cache {
            cache.clear();
        }
        Arc::new(cache)
    });
    let prober = |env: ProbeEnv| {
        let p = Prober::new(env).timeout(options.timeout);
        match &cache {
            Some(cache) => p.cache(cache.clone()),
            None => p,
        }
    };

    let env = options.env.clone();
    type Indexed = Vec<(usize, ProbeSpec)>;
    let (early, late): (Indexed, Indexed) = specs
        .iter()
        .copied()
        .enumerate()
        .partition(|(_, s)| found_on_env_or_path(s, &env));
    let early_specs: Vec<ProbeSpec> = early.iter().map(|(_, s)| *s).collect();
    let late_specs: Vec<ProbeSpec> = late.iter().map(|(_, s)| *s).collect();
    let run_login = !late_specs.is_empty() || options.login_shell == LoginShellMode::Always;

    let early_prober = prober(env.clone());
    let (early_reports, (late_reports, login_shell)) =
        tokio::join!(early_prober.probe_all(&early_specs), async {
            let (login_path, report) = login_path(options, run_login).await;
            let late_env = match login_path {
                Some(p) => env.clone().with_login_path(p),
                None => env.clone(),
            };
            (prober(late_env).probe_all(&late_specs).await, report)
        });

    let mut slots: Vec<Option<ProbeReport>> = vec![None; specs.len()];
    for ((i, _), r) in early
        .iter()
        .zip(early_reports)
        .chain(late.iter().zip(late_reports))
    {
        slots[*i] = Some(r);
    }
    let mut providers: Vec<ProbeReport> = slots.into_iter().flatten().collect();
    for report in &mut providers {
        if report.status == Status::TimedOut
            && let Some(path) = &report.path
        {
            report.fix = Some(format!(
                "check that `{} --version` finishes (it did not within {}); if it is only \
                 slow, raise BRIDGE_PROBE_TIMEOUT (seconds)",
                path.display(),
                fmt_secs(options.timeout)
            ));
        }
    }
    let hits = providers.iter().filter(|r| r.cached).count();
    StatusReport {
        providers,
        login_shell,
        cache: CacheReport {
            enabled: options.use_cache,
            file: cache.as_ref().and_then(|c| c.file().map(PathBuf::from)),
            hits,
        },
        timeout: options.timeout,
        elapsed: started.elapsed(),
        cache_handle: cache,
    }
}

/// Found through an env override or PATH: the login shell's PATH cannot change the answer.
fn found_on_env_or_path(spec: &ProbeSpec, env: &ProbeEnv) -> bool {
    resolve(spec, env)
        .found
        .is_some_and(|f| matches!(f.source, Source::Env { .. } | Source::Path))
}

/// Runs the login shell when `needed` (or always / never, per the options) and returns its PATH.
pub(super) async fn login_path(
    options: &Options,
    needed: bool,
) -> (Option<OsString>, LoginShellReport) {
    let env = &options.env;
    let mut report = LoginShellReport {
        status: LoginShellStatus::NotNeeded,
        shell: env.var_non_empty("SHELL").map(PathBuf::from),
        added_dirs: Vec::new(),
        detail: None,
    };
    match options.login_shell {
        LoginShellMode::Off => {
            report.status = LoginShellStatus::Disabled;
            return (None, report);
        }
        LoginShellMode::Auto if !needed => return (None, report),
        _ => {}
    }
    match login_shell_path(env, options.login_shell_timeout).await {
        Ok(path) => {
            report.status = LoginShellStatus::Ok;
            report.added_dirs = added_dirs(env.path(), &path);
            (Some(path), report)
        }
        Err(e) => {
            report.status = match e {
                ProbeError::Unsupported(_) => LoginShellStatus::Unavailable,
                ProbeError::Timeout { .. } => LoginShellStatus::TimedOut,
                _ => LoginShellStatus::Failed,
            };
            report.detail = Some(e.to_string());
            (None, report)
        }
    }
}

fn added_dirs(path: Option<&std::ffi::OsStr>, login: &OsString) -> Vec<PathBuf> {
    let have: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let mut out: Vec<PathBuf> = Vec::new();
    for d in std::env::split_paths(login) {
        if !d.as_os_str().is_empty() && !have.contains(&d) && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

fn fmt_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn source_label(source: &Source) -> String {
    match source {
        Source::Env { var } => format!("env {var}"),
        Source::Path => "PATH".to_owned(),
        Source::LoginShell => "login-shell PATH".to_owned(),
        Source::InstallDir { via, .. } => format!("install dir, {via}"),
    }
}

impl StatusReport {
    /// Every provider is installed, its version read and inside the tested range.
    pub fn ready(&self) -> bool {
        self.providers.iter().all(|r| r.status == Status::Ready)
    }

    /// Writes the version cache file (a no-op without a cache directory).
    pub fn save_cache(&self) -> std::io::Result<()> {
        match &self.cache_handle {
            Some(cache) => cache.save(),
            None => Ok(()),
        }
    }

    /// The JSON document of `bridge system status --json` (schema version `v: 1`; fields are
    /// only ever added within a version):
    ///
    /// ```text
    /// {
    ///   "v": 1,
    ///   "bridgeVersion": "0.1.0",
    ///   "ready": false,                 // every provider has status "ready"
    ///   "timeoutMs": 10000,             // per-provider --version deadline
    ///   "elapsedMs": 312,               // wall time of the whole run
    ///   "cache": {"enabled": true, "file": "/home/u/.cache/bridge/sdk-probe-versions.json" | null, "hits": 1},
    ///   "loginShell": {
    ///     "status": "notNeeded" | "disabled" | "ok" | "unavailable" | "timedOut" | "failed",
    ///     "shell": "/bin/zsh" | null,
    ///     "addedDirs": ["/home/u/.nvm/versions/node/v22.11.0/bin"],  // on the login PATH, not on ours
    ///     "detail": null | "why it failed"
    ///   },
    ///   "providers": [ProbeReport, …]   // one per provider, see below
    /// }
    /// ```
    ///
    /// Each `ProbeReport` (see [`sdk_probe::ProbeReport`]):
    ///
    /// ```text
    /// {
    ///   "provider": "claude", "displayName": "Claude Code",
    ///   "installed": true,
    ///   "path": "/usr/bin/claude" | null,
    ///   "source": {"kind": "env", "var": "CLAUDE_CODE_PATH"} | {"kind": "path"} | {"kind": "loginShell"}
    ///           | {"kind": "installDir", "dir": "/home/u/.local/bin", "via": "user-local"} | null,
    ///   "alsoFound": ["/usr/local/bin/claude"],          // other installs, shadowed
    ///   "version": "2.1.197" | null, "versionLine": "2.1.197 (Claude Code)" | null,
    ///   "testedRange": {"min": "2.1.197", "max": "2.1.332"} | null,
    ///   "inTestedRange": true | false | null,            // null: version or range unknown
    ///   "auth": [{"name": "ANTHROPIC_API_KEY", "kind": "env", "present": false},
    ///            {"name": "~/.claude/.credentials.json", "kind": "file", "present": true}],
    ///   "cached": false, "elapsedMs": 143,
    ///   "status": "ready" | "notInstalled" | "timedOut" | "versionUnknown" | "untested",
    ///   "problem": null | "what is wrong",
    ///   "fix": null | "the one thing to do",
    ///   "warnings": ["no credentials seen (…): set ANTHROPIC_API_KEY, or sign in with `claude`"]
    /// }
    /// ```
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        json!({
            "v": 1,
            "bridgeVersion": env!("CARGO_PKG_VERSION"),
            "ready": self.ready(),
            "timeoutMs": ms(self.timeout),
            "elapsedMs": ms(self.elapsed),
            "cache": {
                "enabled": self.cache.enabled,
                "file": self.cache.file,
                "hits": self.cache.hits,
            },
            "loginShell": {
                "status": self.login_shell.status.as_str(),
                "shell": self.login_shell.shell,
                "addedDirs": self.login_shell.added_dirs,
                "detail": self.login_shell.detail,
            },
            "providers": self.providers,
        })
    }

    /// The human table of `bridge system status`.
    pub fn render_table(&self) -> String {
        let dash = "-".to_owned();
        let header = [
            "PROVIDER",
            "INSTALLED",
            "VERSION",
            "IN RANGE",
            "TESTED",
            "PATH (FOUND VIA)",
        ];
        let mut rows: Vec<[String; 6]> = vec![header.map(str::to_owned)];
        for r in &self.providers {
            let version = match (&r.version, r.cached) {
                (Some(v), true) => format!("{v}*"),
                (Some(v), false) => v.to_string(),
                (None, _) if r.installed => "?".to_owned(),
                (None, _) => dash.clone(),
            };
            let in_range = match r.in_tested_range {
                Some(true) => "yes".to_owned(),
                Some(false) => "NO".to_owned(),
                None if r.tested_range.is_none() => "n/a".to_owned(),
                None if r.installed => "?".to_owned(),
                None => dash.clone(),
            };
            let tested = match r.tested_range {
                Some(range) if range.min == range.max => range.min.to_string(),
                Some(range) => range.to_string(),
                None => dash.clone(),
            };
            let path = match (&r.path, &r.source) {
                (Some(p), Some(s)) => format!("{} ({})", p.display(), source_label(s)),
                (Some(p), None) => p.display().to_string(),
                _ => dash.clone(),
            };
            rows.push([
                r.provider.clone(),
                if r.installed { "yes" } else { "NO" }.to_owned(),
                version,
                in_range,
                tested,
                path,
            ]);
        }
        let mut widths = [0usize; 6];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < row.len() {
                    let pad = widths[i] - cell.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }

        let id_width = self
            .providers
            .iter()
            .map(|r| r.provider.chars().count())
            .max()
            .unwrap_or(0);
        let pad = |id: &str| format!("{id:<id_width$}");

        out.push_str("\nAuth (where credentials could come from; values are never read):\n");
        for r in &self.providers {
            let hints: Vec<String> = r
                .auth
                .iter()
                .map(|h| {
                    let kind = match h.kind {
                        AuthKind::Env => "env",
                        AuthKind::File => "file",
                    };
                    let present = if h.present { "present" } else { "absent" };
                    format!("{} ({kind}) {present}", h.name)
                })
                .collect();
            let hints = if hints.is_empty() {
                "no known sources".to_owned()
            } else {
                hints.join(", ")
            };
            let _ = writeln!(out, "  {}  {hints}", pad(&r.provider));
        }

        let problems: Vec<&ProbeReport> = self
            .providers
            .iter()
            .filter(|r| r.problem.is_some())
            .collect();
        if problems.is_empty() {
            out.push_str("\nTo do: nothing, every provider is ready.\n");
        } else {
            out.push_str("\nTo do:\n");
            for r in &problems {
                let what = match r.status {
                    Status::NotInstalled => {
                        "not installed (not on PATH nor in the usual install dirs)".to_owned()
                    }
                    _ => r.problem.clone().unwrap_or_default(),
                };
                let _ = writeln!(out, "  {}  {what}", pad(&r.provider));
                if let Some(fix) = &r.fix {
                    let _ = writeln!(out, "  {}  -> {fix}", pad(""));
                }
            }
        }

        let mut notes: Vec<(String, String)> = Vec::new();
        for r in &self.providers {
            for w in &r.warnings {
                notes.push((r.provider.clone(), w.clone()));
            }
            if !r.also_found.is_empty() {
                let others: Vec<String> = r
                    .also_found
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                notes.push((
                    r.provider.clone(),
                    format!("also installed (not used): {}", others.join(", ")),
                ));
            }
        }
        if !notes.is_empty() {
            out.push_str("\nNotes:\n");
            for (id, note) in notes {
                let _ = writeln!(out, "  {}  {note}", pad(&id));
            }
        }

        out.push('\n');
        let shell = self
            .login_shell
            .shell
            .as_ref()
            .map(|s| s.display().to_string())
            .unwrap_or_else(|| "$SHELL".to_owned());
        let login = match self.login_shell.status {
            LoginShellStatus::NotNeeded => {
                "not consulted (every provider was found through an env override or PATH)"
                    .to_owned()
            }
            LoginShellStatus::Disabled => "not consulted (BRIDGE_LOGIN_SHELL=0)".to_owned(),
            LoginShellStatus::Ok if self.login_shell.added_dirs.is_empty() => {
                format!("{shell} -l adds nothing to this PATH")
            }
            LoginShellStatus::Ok => {
                let dirs: Vec<String> = self
                    .login_shell
                    .added_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect();
                format!(
                    "{shell} -l adds {} (a GUI-launched IDE may not have these; found there = \"login-shell PATH\")",
                    dirs.join(":")
                )
            }
            _ => format!(
                "unavailable ({})",
                self.login_shell
                    .detail
                    .as_deref()
                    .unwrap_or("unknown error")
            ),
        };
        let _ = writeln!(out, "Login-shell PATH: {login}");
        let _ = writeln!(
            out,
            "Probed {} providers in parallel in {:.2}s (each --version may take {}; \
             BRIDGE_PROBE_TIMEOUT changes it).",
            self.providers.len(),
            self.elapsed.as_secs_f64(),
            fmt_secs(self.timeout)
        );
        let cache = match (&self.cache.file, self.cache.enabled, self.cache.hits) {
            (None, _, _) => "none (neither XDG_CACHE_HOME nor HOME is set)".to_owned(),
            (Some(f), false, _) => format!(
                "{} (bypassed by BRIDGE_NO_CACHE, refreshed with this run)",
                f.display()
            ),
            (Some(f), true, 0) => format!("{} (no hits)", f.display()),
            (Some(f), true, n) => format!(
                "{} ({n} {}, marked * above; BRIDGE_NO_CACHE=1 runs --version again)",
                f.display(),
                if n == 1 { "hit" } else { "hits" }
            ),
        };
        let _ = writeln!(out, "Version cache: {cache}.");
        let ready: Vec<&str> = self
            .providers
            .iter()
            .filter(|r| r.status == Status::Ready)
            .map(|r| r.provider.as_str())
            .collect();
        let not_ready: Vec<String> = self
            .providers
            .iter()
            .filter(|r| r.status != Status::Ready)
            .map(|r| format!("{} ({})", r.provider, status_words(r.status)))
            .collect();
        let _ = writeln!(
            out,
            "Ready: {}. Not ready: {}.",
            if ready.is_empty() {
                "none".to_owned()
            } else {
                ready.join(", ")
            },
            if not_ready.is_empty() {
                "none".to_owned()
            } else {
                not_ready.join(", ")
            }
        );
        out
    }
}

fn status_words(s: Status) -> &'static str {
    match s {
        Status::Ready => "ready",
        Status::NotInstalled => "not installed",
        Status::TimedOut => "--version timed out",
        Status::VersionUnknown => "version unknown",
        Status::Untested => "untested version",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_dirs_are_the_new_ones_in_order() {
        let login = OsString::from("/a:/nvm/bin:/b::/nvm/bin:/brew/bin");
        assert_eq!(
            added_dirs(Some(std::ffi::OsStr::new("/a:/b")), &login),
            [PathBuf::from("/nvm/bin"), PathBuf::from("/brew/bin")]
        );
        assert_eq!(
            added_dirs(None, &OsString::from("/x")),
            [PathBuf::from("/x")]
        );
    }

    #[test]
    fn seconds_display() {
        assert_eq!(fmt_secs(Duration::from_secs(10)), "10s");
        assert_eq!(fmt_secs(Duration::from_millis(1500)), "1.5s");
    }
}
