//! One report per provider, probed in parallel.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::resolve::{Source, resolve};
use crate::run::{ProbeError, VersionOutput, run_version};
use crate::{AuthSource, ProbeEnv, ProbeSpec, Version, VersionCache, VersionRange};

/// The default per-provider deadline for `--version` (Gemini takes over 2 s on a warm machine).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the probe found for one provider.
///
/// JSON (camelCase), one object per provider:
///
/// | field | type | meaning |
/// |---|---|---|
/// | `provider` | string | spec id (`"claude"`) |
/// | `displayName` | string | `"Claude Code"` |
/// | `installed` | bool | an executable was found |
/// | `path` | string or null | where |
/// | `source` | object or null | how: `{"kind":"env","var":…}`, `{"kind":"path"}`, `{"kind":"loginShell"}`, `{"kind":"installDir","dir":…,"via":…}` |
/// | `alsoFound` | string[] | other installs, shadowed by `path` |
/// | `version` | string or null | `"2.1.197"` |
/// | `versionLine` | string or null | the output line it was read from |
/// | `testedRange` | `{"min","max"}` or null | what the channel is tested with |
/// | `inTestedRange` | bool or null | null when version or range is unknown |
/// | `auth` | `[{"name","kind":"env"\|"file","present"}]` | where credentials could come from; never values |
/// | `cached` | bool | the version came from the cache |
/// | `elapsedMs` | number | wall time of this probe |
/// | `status` | string | `"ready"`, `"notInstalled"`, `"timedOut"`, `"versionUnknown"`, `"untested"` (see [`Status`]) |
/// | `problem` | string or null | what is wrong, when it will not work as tested |
/// | `fix` | string or null | the one thing to do about `problem` |
/// | `warnings` | string[] | anything else worth knowing (no credentials seen, shadowed installs, a CLI that hung after printing its version, an env override that points nowhere) |
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    /// Spec id.
    pub provider: String,
    /// Human name.
    pub display_name: String,
    /// An executable was found.
    pub installed: bool,
    /// Where.
    pub path: Option<PathBuf>,
    /// How it was found.
    pub source: Option<Source>,
    /// Other installs, shadowed by `path`.
    pub also_found: Vec<PathBuf>,
    /// The version, when one was read.
    pub version: Option<Version>,
    /// The line the version was read from.
    pub version_line: Option<String>,
    /// The tested range, if the spec has one.
    pub tested_range: Option<VersionRange>,
    /// Whether the version is in the tested range (`None`: unknown version or no range).
    pub in_tested_range: Option<bool>,
    /// Credential sources, present or absent.
    pub auth: Vec<AuthHint>,
    /// The version came from the cache.
    pub cached: bool,
    /// Wall time of this probe, in milliseconds.
    pub elapsed_ms: u64,
    /// The verdict.
    pub status: Status,
    /// What is wrong: not installed, or why the version is a concern.
    pub problem: Option<String>,
    /// The one thing to do about [`Self::problem`] (install, upgrade or downgrade command, …).
    pub fix: Option<String>,
    /// Other things worth knowing.
    pub warnings: Vec<String>,
}

impl ProbeReport {
    /// Installed, version known and inside the tested range (or no range claimed), no problem.
    pub fn is_ok(&self) -> bool {
        self.installed && self.problem.is_none()
    }

    /// Whether at least one credential source is present (`None` when the spec lists none).
    pub fn auth_present(&self) -> Option<bool> {
        (!self.auth.is_empty()).then(|| self.auth.iter().any(|a| a.present))
    }
}

/// The verdict of a [`ProbeReport`], serialized in camelCase (`"notInstalled"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// Installed, version read, inside the tested range (or the spec claims no range).
    Ready,
    /// No executable found.
    NotInstalled,
    /// Found, but `--version` printed nothing before the deadline.
    TimedOut,
    /// Found, but no version could be read (printed garbage, failed to start).
    VersionUnknown,
    /// Found, version read, outside the tested range.
    Untested,
}

impl Status {
    /// The camelCase name used in JSON (`"notInstalled"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::NotInstalled => "notInstalled",
            Status::TimedOut => "timedOut",
            Status::VersionUnknown => "versionUnknown",
            Status::Untested => "untested",
        }
    }
}

/// Whether a credential source is present. Never carries the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthHint {
    /// The variable name, or the file path (`~/…` when under HOME).
    pub name: String,
    /// Env var or file.
    pub kind: AuthKind,
    /// Set and non-empty (env), or exists (file).
    pub present: bool,
}

/// The kind of an [`AuthHint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthKind {
    /// Environment variable.
    Env,
    /// File.
    File,
}

/// Probes with a shared environment, deadline and optional cache.
///
/// ```no_run
/// # async fn f() {
/// use std::sync::Arc;
/// use sdk_probe::{Prober, ProbeEnv, ProbeSpec, VersionCache};
///
/// const SPECS: &[ProbeSpec] = &[
///     ProbeSpec::new("claude", "Claude Code", &["claude"]),
///     ProbeSpec::new("codex", "Codex", &["codex"]),
/// ];
/// let cache = Arc::new(VersionCache::with_dir("/home/u/.cache/bridge"));
/// let prober = Prober::new(ProbeEnv::from_process()).cache(cache.clone());
/// for r in prober.probe_all(SPECS).await {
///     println!("{}: {:?} {:?}", r.provider, r.version, r.problem);
/// }
/// cache.save().ok();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Prober {
    env: ProbeEnv,
    timeout: Duration,
    cache: Option<Arc<VersionCache>>,
}

impl Prober {
    /// A prober over `env`, with [`DEFAULT_TIMEOUT`] and no cache.
    pub fn new(env: ProbeEnv) -> Self {
        Prober {
            env,
            timeout: DEFAULT_TIMEOUT,
            cache: None,
        }
    }

    /// Sets the per-provider `--version` deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Uses (and fills) `cache`.
    pub fn cache(mut self, cache: Arc<VersionCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Probes one provider: resolve, version (cached or run), range, auth hints.
    pub async fn probe(&self, spec: &ProbeSpec) -> ProbeReport {
        let started = Instant::now();
        let owned_spec = *spec;
        let env = self.env.clone();
        let resolution = tokio::task::spawn_blocking(move || resolve(&owned_spec, &env))
            .await
            .unwrap_or_default();

        let mut report = ProbeReport {
            provider: spec.id.to_owned(),
            display_name: spec.display_name.to_owned(),
            installed: resolution.found.is_some(),
            path: None,
            source: None,
            also_found: resolution.also_found,
            version: None,
            version_line: None,
            tested_range: spec.tested,
            in_tested_range: None,
            auth: auth_hints(spec, &self.env),
            cached: false,
            elapsed_ms: 0,
            status: Status::Ready,
            problem: None,
            fix: None,
            warnings: resolution.warnings,
        };

        match resolution.found {
            None => {
                report.status = Status::NotInstalled;
                report.problem = Some(not_installed(spec));
                report.fix = Some(install_fix(spec));
            }
            Some(found) => {
                report.path = Some(found.path.clone());
                report.source = Some(found.source);
                match self.version_of(spec, &found.path).await {
                    Ok((out, cached)) => {
                        if out.hung {
                            report.warnings.push(format!(
                                "{} printed its version but did not finish within {} (it, or a \
                                 process it started, kept running); killed",
                                spec.display_name,
                                crate::run::fmt_duration(self.timeout)
                            ));
                        }
                        report.cached = cached;
                        report.version = Some(out.version);
                        report.version_line = Some(out.line);
                        report.in_tested_range = spec.is_tested(out.version);
                        if report.in_tested_range == Some(false)
                            && let Some(range) = spec.tested
                        {
                            report.status = Status::Untested;
                            report.problem = Some(format!(
                                "version {} is outside the tested range {range}",
                                out.version
                            ));
                            report.fix = Some(range_fix(spec, out.version, range));
                        }
                    }
                    Err(e) => {
                        let timed_out = matches!(e, ProbeError::Timeout { .. });
                        report.status = if timed_out {
                            Status::TimedOut
                        } else {
                            Status::VersionUnknown
                        };
                        report.fix = Some(if timed_out {
                            format!(
                                "check that `{} {}` finishes (it did not within {}); if it is \
                                 only slow, allow the probe more time",
                                found.path.display(),
                                spec.version_args.join(" "),
                                crate::run::fmt_duration(self.timeout)
                            )
                        } else {
                            format!("reinstall it: {}", reinstall_command(spec))
                        });
                        report.problem = Some(e.to_string());
                    }
                }
                if let Some(warning) = missing_auth_warning(spec, &report.auth) {
                    report.warnings.push(warning);
                }
            }
        }
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        report
    }

    async fn version_of(
        &self,
        spec: &ProbeSpec,
        path: &std::path::Path,
    ) -> Result<(VersionOutput, bool), ProbeError> {
        if let Some(hit) = self.cache.as_ref().and_then(|c| c.lookup(path)) {
            return Ok((hit, true));
        }
        let secret_vars: Vec<&str> = spec
            .auth
            .iter()
            .filter_map(|a| match a {
                AuthSource::Env(v) => Some(*v),
                AuthSource::File(_) => None,
            })
            .collect();
        let out = run_version(
            &self.env,
            path,
            spec.version_args,
            spec.version_env,
            &secret_vars,
            self.timeout,
        )
        .await?;
        if let Some(c) = &self.cache {
            c.store(path, &out);
        }
        Ok((out, false))
    }

    /// Probes every spec concurrently (one task each, each with its own deadline); reports come
    /// back in the order of `specs`.
    pub async fn probe_all(&self, specs: &[ProbeSpec]) -> Vec<ProbeReport> {
        let mut set = tokio::task::JoinSet::new();
        for (i, spec) in specs.iter().copied().enumerate() {
            let prober = self.clone();
            set.spawn(async move { (i, prober.probe(&spec).await) });
        }
        let mut slots: Vec<Option<ProbeReport>> = vec![None; specs.len()];
        while let Some(joined) = set.join_next().await {
            if let Ok((i, report)) = joined {
                slots[i] = Some(report);
            }
        }
        slots
            .into_iter()
            .zip(specs)
            .map(|(slot, spec)| slot.unwrap_or_else(|| failed(spec)))
            .collect()
    }
}

/// Probes one provider with `env` and a deadline, without a cache. See [`Prober::probe`].
pub async fn probe(spec: &ProbeSpec, env: &ProbeEnv, timeout: Duration) -> ProbeReport {
    Prober::new(env.clone()).timeout(timeout).probe(spec).await
}

/// Probes every spec concurrently, without a cache. See [`Prober::probe_all`].
pub async fn probe_all(specs: &[ProbeSpec], env: &ProbeEnv, timeout: Duration) -> Vec<ProbeReport> {
    Prober::new(env.clone())
        .timeout(timeout)
        .probe_all(specs)
        .await
}

fn not_installed(spec: &ProbeSpec) -> String {
    let mut s = format!(
        "{} is not installed (not on PATH nor in the usual install dirs)",
        spec.display_name
    );
    let hint = spec.pinned_install_hint();
    if !hint.is_empty() {
        s.push_str("; install it with: ");
        s.push_str(&hint);
    }
    s
}

fn reinstall_command(spec: &ProbeSpec) -> String {
    let cmd = spec.pinned_install_hint();
    if cmd.is_empty() {
        format!("install {} again", spec.display_name)
    } else {
        cmd
    }
}

fn install_fix(spec: &ProbeSpec) -> String {
    let binary = spec.binaries.first().copied().unwrap_or(spec.id);
    let mut s = match spec.pinned_install_hint() {
        cmd if cmd.is_empty() => {
            format!("install {} and put `{binary}` on PATH", spec.display_name)
        }
        cmd => format!("install it: {cmd}"),
    };
    if let Some(var) = spec.env_overrides.first() {
        s.push_str(&format!(" (or set {var} to an existing `{binary}`)"));
    }
    s
}

fn range_fix(spec: &ProbeSpec, v: Version, range: VersionRange) -> String {
    let verb = if v < range.min {
        "upgrade"
    } else {
        "downgrade"
    };
    match spec.pinned_install_hint() {
        cmd if cmd.is_empty() => format!("{verb} to a tested version ({range})"),
        cmd => format!("{verb} to a tested version ({range}): {cmd}"),
    }
}

fn missing_auth_warning(spec: &ProbeSpec, hints: &[AuthHint]) -> Option<String> {
    if hints.is_empty() || hints.iter().any(|h| h.present) {
        return None;
    }
    let names: Vec<&str> = hints.iter().map(|h| h.name.as_str()).collect();
    let binary = spec.binaries.first().copied().unwrap_or(spec.id);
    let first_env = hints.iter().find(|h| h.kind == AuthKind::Env);
    let action = match first_env {
        Some(env) => format!("set {}, or sign in with `{binary}`", env.name),
        None => format!("sign in with `{binary}`"),
    };
    Some(format!(
        "no credentials seen ({} all absent; a login kept in the OS keychain or a settings file is \
         not visible to this check): {action}",
        names.join(", ")
    ))
}

fn failed(spec: &ProbeSpec) -> ProbeReport {
    ProbeReport {
        provider: spec.id.to_owned(),
        display_name: spec.display_name.to_owned(),
        installed: false,
        path: None,
        source: None,
        also_found: Vec::new(),
        version: None,
        version_line: None,
        tested_range: spec.tested,
        in_tested_range: None,
        auth: Vec::new(),
        cached: false,
        elapsed_ms: 0,
        status: Status::VersionUnknown,
        problem: Some("the probe itself failed (internal error)".to_owned()),
        fix: Some("run the probe again; report a bug if it keeps failing".to_owned()),
        warnings: Vec::new(),
    }
}

fn auth_hints(spec: &ProbeSpec, env: &ProbeEnv) -> Vec<AuthHint> {
    spec.auth
        .iter()
        .map(|a| match *a {
            AuthSource::Env(var) => AuthHint {
                name: var.to_owned(),
                kind: AuthKind::Env,
                present: env.var_non_empty(var).is_some(),
            },
            AuthSource::File(rel) => {
                let path = env.home_join(rel);
                let shown = if std::path::Path::new(rel.trim_start_matches("~/")).is_absolute() {
                    rel.to_owned()
                } else {
                    format!("~/{}", rel.trim_start_matches("~/"))
                };
                AuthHint {
                    name: shown,
                    kind: AuthKind::File,
                    present: path.is_some_and(|p| p.exists()),
                }
            }
        })
        .collect()
}
