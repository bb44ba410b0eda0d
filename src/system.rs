//! The `system` provider: `bridge system status [--json]`, the doctor every provider shares, and
//! the ai-bridge compatibility commands `getSdkStatus`, `checkClaudeSdk`, `checkCodexSdk`.
//!
//! | command | stdout | exit |
//! |---|---|---|
//! | `status` | a table: per provider installed?, version, in the tested range?, path and how it was found, auth hints, and for each problem the one thing to do | 0 when the probe ran (also when a provider is missing or untested) |
//! | `status --json` | one JSON document, see [`StatusReport::to_json`] | same |
//! | `getSdkStatus` | `{"success":true,"data":{"claude":{"installed":bool,"path":"…"},"codex":{"installed":bool,"path":"…"}}}` | 0 |
//! | `checkClaudeSdk`, `checkCodexSdk` | `{"success":true,"available":bool}` | 0 |
//! | anything else | `{"success":false,"error":"Unknown System command: X"}` | 1 |
//!
//! Every provider in [`specs`] is probed in parallel, each with its own deadline (see
//! [`Options::from_env`] for the environment variables that tune it). Versions are cached per
//! binary (canonical path, mtime, size) in `$XDG_CACHE_HOME/bridge` or `~/.cache/bridge`, so a
//! repeat call does not run any `--version`. Secrets are never printed: credential sources are
//! reported as present or absent, and the values of credential-like variables are redacted from
//! everything written.
//!
//! The compatibility commands only resolve the executables (no `--version` run): like ai-bridge,
//! which checked that the SDK directory exists, they answer in milliseconds.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sdk_probe::{ProbeEnv, ProbeSpec};

mod compat;
mod status;

pub use compat::{SdkStatus, expected_path, sdk_status};
pub use status::{CacheReport, LoginShellReport, LoginShellStatus, StatusReport, status};

/// The system commands, for help texts.
pub const COMMANDS: &[&str] = &["status", "getSdkStatus", "checkClaudeSdk", "checkCodexSdk"];

/// Every provider `bridge system` reports on: [`crate::probe_specs`] (one spec per channel),
/// or only those named in `BRIDGE_PROVIDERS` (comma-separated ids, e.g. `claude,codex`).
pub fn specs() -> Vec<ProbeSpec> {
    let all = crate::probe_specs();
    match std::env::var("BRIDGE_PROVIDERS") {
        Ok(list) if !list.trim().is_empty() => {
            let wanted: Vec<&str> = list.split(',').map(str::trim).collect();
            all.into_iter().filter(|s| wanted.contains(&s.id)).collect()
        }
        _ => all,
    }
}

/// When to ask the login shell for its PATH (`BRIDGE_LOGIN_SHELL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginShellMode {
    /// Only when a provider is not found through an env override or PATH (the default): a
    /// GUI-launched process (an IDE started from the dock) lacks what the shell profile adds.
    Auto,
    /// Always (`1`, `on`, `always`): also reports the directories it adds.
    Always,
    /// Never (`0`, `off`, `never`).
    Off,
}

/// How `bridge system` probes. [`Options::from_env`] reads the environment; library users can
/// build one directly.
#[derive(Debug, Clone)]
pub struct Options {
    /// Deadline of each provider's `--version` (each provider has its own).
    pub timeout: Duration,
    /// Deadline of the login shell (`$SHELL -l -c`).
    pub login_shell_timeout: Duration,
    /// When to consult the login shell.
    pub login_shell: LoginShellMode,
    /// Directory of the version cache (`None`: no file, nothing remembered across runs).
    pub cache_dir: Option<PathBuf>,
    /// Whether cached versions may be used (when `false`, every `--version` runs again and the
    /// fresh results replace the cache).
    pub use_cache: bool,
    /// The environment to resolve and probe in.
    pub env: ProbeEnv,
}

impl Options {
    /// Reads the process environment:
    ///
    /// | variable | effect | default |
    /// |---|---|---|
    /// | `BRIDGE_PROBE_TIMEOUT` | seconds (decimals allowed) each `--version` may take | `10` |
    /// | `BRIDGE_NO_CACHE` | `1`: ignore cached versions, run every `--version` again (the results refresh the cache) | unset |
    /// | `BRIDGE_LOGIN_SHELL` | `0`/`off`: never run `$SHELL -l -c`; `1`/`always`: always; otherwise only when a provider is not found via an env override or PATH. Its deadline is the probe timeout, at most 5 s | auto |
    /// | `BRIDGE_PROBE_SYSTEM_DIRS` | replaces the absolute dirs searched last (`/opt/homebrew/bin`, linuxbrew, `/usr/local/bin`); a PATH-style list, empty for none | unset |
    /// | `XDG_CACHE_HOME` / `HOME` | the cache lives in `$XDG_CACHE_HOME/bridge` or `~/.cache/bridge` | |
    ///
    /// Unparseable values are reported on stderr and the default is used.
    pub fn from_env() -> Self {
        let mut env = ProbeEnv::from_process();
        if let Some(dirs) = std::env::var_os("BRIDGE_PROBE_SYSTEM_DIRS") {
            env = env.with_system_dirs(
                std::env::split_paths(&dirs)
                    .filter(|p| p.is_absolute())
                    .collect(),
            );
        }
        let timeout = match std::env::var("BRIDGE_PROBE_TIMEOUT") {
            Ok(v) if !v.trim().is_empty() => parse_secs(&v).unwrap_or_else(|| {
                diag(&format!(
                    "BRIDGE_PROBE_TIMEOUT={v:?} is not a number of seconds; using {}s",
                    sdk_probe::DEFAULT_TIMEOUT.as_secs()
                ));
                sdk_probe::DEFAULT_TIMEOUT
            }),
            _ => sdk_probe::DEFAULT_TIMEOUT,
        };
        let login_shell = match std::env::var("BRIDGE_LOGIN_SHELL")
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "0" | "off" | "never" | "false" | "no" => LoginShellMode::Off,
            "1" | "on" | "always" | "true" | "yes" => LoginShellMode::Always,
            _ => LoginShellMode::Auto,
        };
        let use_cache = !truthy(std::env::var_os("BRIDGE_NO_CACHE"));
        Options {
            timeout,
            login_shell_timeout: timeout.min(Duration::from_secs(5)),
            login_shell,
            cache_dir: cache_dir(&env),
            use_cache,
            env,
        }
    }
}

/// `$XDG_CACHE_HOME/bridge`, else `~/.cache/bridge` (both must be absolute).
pub fn cache_dir(env: &ProbeEnv) -> Option<PathBuf> {
    sdk_probe::default_cache_dir(env)
}

fn truthy(v: Option<OsString>) -> bool {
    v.and_then(|v| v.into_string().ok()).is_some_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no" | "off"
        )
    })
}

fn parse_secs(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0 && secs < 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// One diagnostic line on stderr (never starting with a marker such as `[DIAG-`).
fn diag(msg: &str) {
    let redactor = redactor();
    eprintln!("bridge: {}", redactor.redact(msg));
}

/// Redacts the values of credential-like variables of this process.
fn redactor() -> crate::core::redact::Redactor {
    let mut r = crate::core::redact::Redactor::new();
    for (k, v) in std::env::vars_os() {
        if let (Some(k), Some(v)) = (k.to_str(), v.to_str())
            && (sdk_probe::is_secret_name(k) || crate::core::redact::is_secret_env_name(k))
        {
            r.add(v);
        }
    }
    r
}

/// Writes `text` (redacted) to stdout in one write; `false` if stdout is gone.
fn emit(text: &str) -> bool {
    let redacted = redactor().redact(text).into_owned();
    let mut out = std::io::stdout().lock();
    out.write_all(redacted.as_bytes()).is_ok() && out.flush().is_ok()
}

fn fail(error: &str) -> ExitCode {
    emit(&format!(
        "{}\n",
        serde_json::json!({"success": false, "error": error})
    ));
    ExitCode::from(1)
}

/// Runs `bridge system <command>`; `json` is `--json` (used by `status`).
pub fn run(command: Option<&str>, json: bool) -> ExitCode {
    let Some(command) = command else {
        diag(&format!(
            "usage: bridge system <command> [--json]; commands: {}",
            COMMANDS.join(", ")
        ));
        return fail("No command specified");
    };
    if !COMMANDS.contains(&command) {
        diag(&format!("system commands: {}", COMMANDS.join(", ")));
        return fail(&format!("Unknown System command: {command}"));
    }
    let runtime = match crate::async_runtime() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&format!("cannot start the async runtime: {error}")),
    };
    let options = Options::from_env();
    if let Err(error) = crate::relays::user_relays() {
        diag(&format!("{error} (its relays are not listed)"));
    }
    let specs = specs();
    let text = runtime.block_on(async {
        match command {
            "status" => {
                let report = status(&specs, &options).await;
                if let Err(e) = report.save_cache() {
                    diag(&format!("could not write the version cache: {e}"));
                }
                if json {
                    format!("{}\n", report.to_json())
                } else {
                    report.render_table()
                }
            }
            "getSdkStatus" => {
                let found = sdk_status(&specs, &["claude", "codex"], &options).await;
                let mut data = serde_json::Map::new();
                for s in found {
                    data.insert(
                        s.provider.clone(),
                        serde_json::json!({"installed": s.installed, "path": s.path}),
                    );
                }
                format!("{}\n", serde_json::json!({"success": true, "data": data}))
            }
            _ => {
                let id = if command == "checkClaudeSdk" {
                    "claude"
                } else {
                    "codex"
                };
                let found = sdk_status(&specs, &[id], &options).await;
                let available = found.first().is_some_and(|s| s.installed);
                format!(
                    "{}\n",
                    serde_json::json!({"success": true, "available": available})
                )
            }
        }
    });
    // Do not wait for anything left behind (every probe has killed and reaped its child).
    runtime.shutdown_timeout(Duration::from_millis(100));
    if emit(&text) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_secs(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_secs("0"), None);
        assert_eq!(parse_secs("-1"), None);
        assert_eq!(parse_secs("ten"), None);
        assert_eq!(parse_secs("inf"), None);
    }

    #[test]
    fn truthiness() {
        assert!(truthy(Some("1".into())));
        assert!(truthy(Some("yes".into())));
        assert!(!truthy(Some("0".into())));
        assert!(!truthy(Some("".into())));
        assert!(!truthy(None));
    }

    #[test]
    fn codex_is_added_once() {
        let specs = specs();
        assert_eq!(specs.iter().filter(|s| s.id == "codex").count(), 1);
        assert!(specs.iter().any(|s| s.id == "claude"));
        assert_eq!(
            crate::codex::PROBE.pinned_install_hint(),
            "npm i -g @openai/codex@0.171.0"
        );
    }

    #[test]
    fn cache_dir_prefers_xdg() {
        let env = ProbeEnv::empty().with_home("/h");
        assert_eq!(cache_dir(&env), Some(PathBuf::from("/h/.cache/bridge")));
        let env = env.with_var("XDG_CACHE_HOME", "/x");
        assert_eq!(cache_dir(&env), Some(PathBuf::from("/x/bridge")));
        let env = env.with_var("XDG_CACHE_HOME", "rel");
        assert_eq!(cache_dir(&env), Some(PathBuf::from("/h/.cache/bridge")));
        assert_eq!(cache_dir(&ProbeEnv::empty()), None);
    }
}
