//! Running `--version` (and the login shell) safely: stdin null, capped output, a deadline, and
//! the whole process group killed when it passes.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bridge_core::process::is_scrubbed_env;
use bridge_core::process::{Captured, CommandSpec, run_captured};
use serde::{Deserialize, Serialize};

use crate::env::is_secret_name;
use crate::version::strip_ansi;
use crate::{ProbeEnv, Version};

/// How much of each of stdout and stderr is kept (the rest is read and dropped).
pub const OUTPUT_CAP: usize = 64 * 1024;

/// Longest line kept in a report.
const LINE_CAP: usize = 200;

/// Why a probe could not produce a version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The version argument list was empty: running a CLI bare can have side effects (Kimi
    /// downloads an installer), so the probe refuses.
    #[error("refusing to run {} without a version argument", path.display())]
    NoVersionArgs {
        /// The binary.
        path: PathBuf,
    },
    /// The process could not be started.
    #[error("could not run {}: {source}", path.display())]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// No version (or, for the login shell, no PATH) before the deadline; the process group was
    /// killed.
    #[error("`{command}` timed out after {}", fmt_duration(*after))]
    Timeout {
        /// What was run (`claude --version`).
        command: String,
        /// The deadline.
        after: Duration,
    },
    /// It ran but printed nothing that looks like a version.
    #[error("`{command}` printed no version (first line: {first_line:?}{})", exit_note(*exit_code))]
    Unparseable {
        /// What was run.
        command: String,
        /// The first non-empty output line, sanitized, at most 200 chars, secrets redacted.
        first_line: String,
        /// Its exit code, if it exited normally.
        exit_code: Option<i32>,
    },
    /// The login shell printed no PATH.
    #[error("`{command}` did not print a PATH{}", exit_note(*exit_code))]
    NoPath {
        /// What was run.
        command: String,
        /// Its exit code, if it exited normally.
        exit_code: Option<i32>,
    },
    /// Not available here (no `SHELL`, or Windows for the login-shell PATH).
    #[error("{0}")]
    Unsupported(&'static str),
}

fn exit_note(code: Option<i32>) -> String {
    match code {
        Some(0) => String::new(),
        Some(c) => format!(", exit code {c}"),
        None => ", killed by a signal".to_owned(),
    }
}

/// `5s`, `1.5s`, `250ms`.
pub(crate) fn fmt_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A version read from a CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionOutput {
    /// The parsed version.
    pub version: Version,
    /// The output line it came from (sanitized, at most 200 chars, secrets redacted).
    pub line: String,
    /// `true` when the CLI printed the version but did not exit before the deadline (it was
    /// killed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hung: bool,
}

/// Runs `path args…` with this process's environment and reads the version from its output.
/// See [`probe_version_in`].
///
/// ```no_run
/// # async fn f() -> Result<(), sdk_probe::ProbeError> {
/// use std::time::Duration;
/// let v = sdk_probe::probe_version("/usr/local/bin/claude".as_ref(), &["--version"], Duration::from_secs(5)).await?;
/// println!("{} from {:?}", v.version, v.line);
/// # Ok(()) }
/// ```
pub async fn probe_version(
    path: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<VersionOutput, ProbeError> {
    probe_version_in(&ProbeEnv::from_process(), path, args, timeout).await
}

/// Runs exactly `path args…` and reads the version from its output.
///
/// - `args` must not be empty ([`ProbeError::NoVersionArgs`]); nothing else is ever run.
/// - stdin is null; stdout and stderr are captured up to [`OUTPUT_CAP`] each; the child runs in
///   `/` in its own process group, with the env's variables minus anything that looks like a
///   credential and minus `NODE_OPTIONS`-style loader hooks, with its own directory prepended to
///   PATH (so an nvm-installed `#!/usr/bin/env node` shim finds its node), and with
///   `NO_COLOR=1`, `NO_UPDATE_NOTIFIER=1`.
/// - At the deadline the whole process group is killed (SIGKILL) and reaped. After a normal
///   exit the group is swept too, so nothing it started survives the probe.
/// - The first `x.y.z` in stdout, then stderr, is the version ([`Version::parse_lenient`]). If
///   it printed one and then hung, the version is still returned, with `hung: true`.
pub async fn probe_version_in(
    env: &ProbeEnv,
    path: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<VersionOutput, ProbeError> {
    run_version(env, path, args, &[], &[], timeout).await
}

pub(crate) async fn run_version(
    env: &ProbeEnv,
    path: &Path,
    args: &[&str],
    extra_env: &[(&str, &str)],
    secret_vars: &[&str],
    timeout: Duration,
) -> Result<VersionOutput, ProbeError> {
    if args.is_empty() {
        return Err(ProbeError::NoVersionArgs {
            path: path.to_owned(),
        });
    }
    let command = display_command(path, args);
    let mut cmd = CommandSpec::new(path);
    for arg in args {
        cmd.arg(arg);
    }
    child_env(&mut cmd, env, path.parent());
    cmd.env("NO_COLOR", "1").env("NO_UPDATE_NOTIFIER", "1");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.cwd = Some(neutral_dir());

    let captured = run_capped(&cmd, timeout, OUTPUT_CAP)
        .await
        .map_err(|source| ProbeError::Spawn {
            path: path.to_owned(),
            source,
        })?;
    let secrets = secret_values(env, secret_vars);
    let stdout = String::from_utf8_lossy(&captured.stdout);
    let stderr = String::from_utf8_lossy(&captured.stderr);
    let lines = || stdout.lines().chain(stderr.lines());

    if let Some((version, line)) = lines().find_map(|l| {
        let clean = sanitize(l);
        Version::parse_lenient(&clean).map(|v| (v, clean))
    }) {
        return Ok(VersionOutput {
            version,
            line: redact(&line, &secrets),
            hung: captured.timed_out,
        });
    }
    if captured.timed_out {
        return Err(ProbeError::Timeout {
            command,
            after: timeout,
        });
    }
    let first_line = lines()
        .map(sanitize)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    Err(ProbeError::Unparseable {
        command,
        first_line: redact(&first_line, &secrets),
        exit_code: captured.status.and_then(|s| s.code()),
    })
}

/// Asks the user's login shell (`$SHELL -l -c`) for its PATH, which a GUI-launched process
/// (an IDE started from the dock) usually lacks: nvm, Homebrew and friends are set up there.
///
/// Same safety as [`probe_version_in`] (stdin null, deadline, process group killed). The result
/// is meant for [`ProbeEnv::with_login_path`]; binaries found through it are reported as
/// [`crate::Source::LoginShell`]. Unix only.
pub async fn login_shell_path(env: &ProbeEnv, timeout: Duration) -> Result<OsString, ProbeError> {
    if cfg!(windows) {
        return Err(ProbeError::Unsupported(
            "the login-shell PATH is a Unix notion",
        ));
    }
    let Some(shell) = env.var_non_empty("SHELL").map(PathBuf::from) else {
        return Err(ProbeError::Unsupported("SHELL is not set"));
    };
    const START: &str = "__SDK_PROBE_PATH_START__";
    const END: &str = "__SDK_PROBE_PATH_END__";
    let script = format!("printf '%s%s%s' '{START}' \"$PATH\" '{END}'");
    let command = format!("{} -l -c …", shell.display());
    let mut cmd = CommandSpec::new(&shell);
    cmd.arg("-l").arg("-c").arg(script);
    child_env(&mut cmd, env, None);
    cmd.cwd = Some(env.home().unwrap_or(Path::new("/")).to_owned());
    let captured = run_capped(&cmd, timeout, OUTPUT_CAP)
        .await
        .map_err(|source| ProbeError::Spawn {
            path: shell.clone(),
            source,
        })?;
    let out = String::from_utf8_lossy(&captured.stdout);
    if let Some(rest) = out.split(START).nth(1)
        && let Some(path) = rest.split(END).next().filter(|_| rest.contains(END))
    {
        return Ok(OsString::from(path));
    }
    if captured.timed_out {
        return Err(ProbeError::Timeout {
            command,
            after: timeout,
        });
    }
    Err(ProbeError::NoPath {
        command,
        exit_code: captured.status.and_then(|s| s.code()),
    })
}

fn display_command(path: &Path, args: &[&str]) -> String {
    let name = path
        .file_name()
        .map(OsStr::to_string_lossy)
        .unwrap_or_else(|| path.to_string_lossy());
    let mut s = name.into_owned();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

fn neutral_dir() -> PathBuf {
    if cfg!(windows) {
        std::env::temp_dir()
    } else {
        PathBuf::from("/")
    }
}

/// env_clear + the env's vars minus secrets and the bridge's scrub list
/// ([`bridge_core::process::is_scrubbed_env`]: loader hooks, `npm_*`, …); `prepend` goes first
/// on PATH.
fn child_env(cmd: &mut CommandSpec, env: &ProbeEnv, prepend: Option<&Path>) {
    cmd.inherit_env = false;
    for (k, v) in env.vars() {
        let Some(name) = k.to_str() else { continue };
        let upper = name.to_ascii_uppercase();
        if is_secret_name(name) || is_scrubbed_env(name) || upper == "PATH" {
            continue;
        }
        cmd.env(k, v);
    }
    let mut dirs: Vec<PathBuf> = prepend.map(Path::to_owned).into_iter().collect();
    if let Some(p) = env.path() {
        dirs.extend(std::env::split_paths(p));
    }
    if let Ok(joined) = std::env::join_paths(dirs) {
        cmd.env("PATH", joined);
    }
}

/// Values to redact: those of secret-looking vars and of `extra` names, at least 4 bytes long.
fn secret_values(env: &ProbeEnv, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = env
        .vars()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| is_secret_name(k) || extra.contains(&k))
        })
        .filter_map(|(_, val)| val.to_str().map(str::to_owned))
        .filter(|val| val.len() >= 4)
        .collect();
    // Longest first, so a secret that contains another is replaced whole.
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v
}

pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    out
}

/// Drops ANSI escape sequences and control characters, trims, caps at [`LINE_CAP`] chars.
fn sanitize(line: &str) -> String {
    let mut out: String = strip_ansi(line)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    out = out.trim().to_owned();
    if let Some((i, _)) = out.char_indices().nth(LINE_CAP) {
        out.truncate(i);
        out.push('…');
    }
    out
}

/// Runs `cmd` through bridge-core's capped runner ([`bridge_core::process::run_captured`]:
/// stdin null, its own process group, the same watchdog and parent-death signal as every CLI
/// the bridge runs, the group killed at the deadline and swept afterwards).
pub(crate) async fn run_capped(
    cmd: &CommandSpec,
    timeout: Duration,
    cap: usize,
) -> io::Result<Captured> {
    run_captured(cmd, &[], timeout, cap)
        .await
        .map_err(|error| error.source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_strips_escapes_and_controls() {
        assert_eq!(sanitize("\u{1b}[1;32m1.2.3\u{1b}[0m\r"), "1.2.3");
        assert_eq!(sanitize("  a\tb \u{7}"), "ab");
        let long = "x".repeat(1000);
        assert_eq!(sanitize(&long).chars().count(), LINE_CAP + 1);
    }

    #[test]
    fn redact_longest_first() {
        let secrets = vec!["sk-canary-123-long".to_owned(), "sk-canary".to_owned()];
        assert_eq!(
            redact("a sk-canary-123-long b sk-canary", &secrets),
            "a *** b ***"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(fmt_duration(Duration::from_secs(5)), "5s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(fmt_duration(Duration::from_millis(250)), "250ms");
    }

    #[test]
    fn display_command_uses_file_name() {
        assert_eq!(
            display_command(Path::new("/a/b/claude"), &["--version"]),
            "claude --version"
        );
    }
}
