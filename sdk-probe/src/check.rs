//! The cheap version check a channel runs before a turn: is the resolved CLI inside the range
//! the channel is tested with? Uses the on-disk version cache `bridge system status` fills, so
//! a repeat costs a `stat`, not a process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{ProbeEnv, ProbeSpec, VersionCache, probe_version_in};

/// Where the version cache lives: `$XDG_CACHE_HOME/bridge` (absolute only) or `~/.cache/bridge`.
pub fn default_cache_dir(env: &ProbeEnv) -> Option<PathBuf> {
    if let Some(xdg) = env.var_non_empty("XDG_CACHE_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Some(xdg.join("bridge"));
    }
    env.home().map(|home| home.join(".cache").join("bridge"))
}

/// How long a channel's background version check may run `<cli> --version`.
pub const TURN_VERSION_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// What a channel checks next to a turn: [`untested_version_warning`] for the CLI it resolved
/// from `resolved`, in this process's environment. `None` (no check) when the user named the
/// binary through an env override: that choice is not second-guessed.
pub fn turn_version_check(
    spec: ProbeSpec,
    resolved: &crate::Resolved,
) -> Option<impl std::future::Future<Output = Option<String>> + Send + 'static> {
    if matches!(resolved.source, crate::Source::Env { .. }) {
        return None;
    }
    let path = resolved.path.clone();
    Some(async move {
        let env = ProbeEnv::from_process();
        untested_version_warning(&spec, &path, &env, TURN_VERSION_CHECK_TIMEOUT).await
    })
}

/// A warning when the CLI at `path` is outside `spec`'s tested range (or its version cannot be
/// read within `timeout`); `None` when it is in range or the spec claims no range.
pub async fn untested_version_warning(
    spec: &ProbeSpec,
    path: &Path,
    env: &ProbeEnv,
    timeout: Duration,
) -> Option<String> {
    let range = spec.tested?;
    let cache = match default_cache_dir(env) {
        Some(dir) => VersionCache::with_dir(dir),
        None => VersionCache::in_memory(),
    };
    let output = match cache.lookup(path) {
        Some(output) => output,
        None => match probe_version_in(env, path, spec.version_args, timeout).await {
            Ok(output) => {
                if !output.hung {
                    cache.store(path, &output);
                    let _ = cache.save();
                }
                output
            }
            Err(error) => {
                return Some(format!(
                    "could not read the {} version ({error}); it is tested with {range}",
                    spec.display_name
                ));
            }
        },
    };
    (!range.contains(output.version)).then(|| {
        format!(
            "{} {} is outside the tested range {range}; if something breaks, install a tested version ({})",
            spec.display_name,
            output.version,
            spec.install_hint
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dir_prefers_absolute_xdg() {
        let env = ProbeEnv::empty().with_home("/h");
        assert_eq!(
            default_cache_dir(&env),
            Some(PathBuf::from("/h/.cache/bridge"))
        );
        let env = env.with_var("XDG_CACHE_HOME", "/x");
        assert_eq!(default_cache_dir(&env), Some(PathBuf::from("/x/bridge")));
        let env = env.with_var("XDG_CACHE_HOME", "rel");
        assert_eq!(
            default_cache_dir(&env),
            Some(PathBuf::from("/h/.cache/bridge"))
        );
        assert_eq!(default_cache_dir(&ProbeEnv::empty()), None);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn warns_outside_the_range_and_caches() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("fakecli");
        std::fs::write(&bin, "#!/bin/sh\necho 'fakecli 9.9.9'\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut spec = ProbeSpec::new("fake", "Fake CLI", &["fakecli"]);
        spec.tested = Some(crate::VersionRange::new(
            crate::Version::new(1, 0, 0),
            crate::Version::new(2, 0, 0),
        ));
        let env = ProbeEnv::empty()
            .with_home(tmp.path())
            .with_var("PATH", "/usr/bin:/bin");
        let warning = untested_version_warning(&spec, &bin, &env, Duration::from_secs(5))
            .await
            .expect("9.9.9 is untested");
        assert!(
            warning.contains("9.9.9") && warning.contains("1.0.0"),
            "{warning}"
        );
        assert!(
            tmp.path().join(".cache/bridge").is_dir(),
            "the version was cached"
        );
        spec.tested = Some(crate::VersionRange::new(
            crate::Version::new(9, 0, 0),
            crate::Version::new(10, 0, 0),
        ));
        assert_eq!(
            untested_version_warning(&spec, &bin, &env, Duration::from_secs(5)).await,
            None
        );
    }
}

/// Where a channel's CLI is, with what the user should know about the search.
#[derive(Debug, Clone)]
pub struct Located {
    /// The binary to run.
    pub resolved: crate::Resolved,
    /// Problems seen on the way (an override that points nowhere).
    pub warnings: Vec<String>,
}

/// Finds `spec`'s CLI for a turn, or explains in one message why it cannot be run: which
/// binary, which package installs it, which variable can point at it, and any override that
/// was set but unusable.
pub fn locate(spec: &ProbeSpec, env: &ProbeEnv) -> Result<Located, String> {
    let resolution = crate::resolve(spec, env);
    match resolution.found {
        Some(resolved) => Ok(Located {
            resolved,
            warnings: resolution.warnings,
        }),
        None => {
            let binary = spec.binaries.first().copied().unwrap_or(spec.id);
            let mut message = format!(
                "{} CLI (`{binary}`) not found on PATH or in the usual install directories; install it with `{}`",
                spec.display_name, spec.install_hint
            );
            if let Some(var) = spec.env_overrides.first() {
                message.push_str(&format!(" or set {var} to its path"));
            }
            for warning in resolution.warnings {
                message.push_str(&format!(" ({warning})"));
            }
            Err(message)
        }
    }
}
