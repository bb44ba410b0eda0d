//! What a provider crate declares about its CLI.

use crate::{Version, VersionRange};

/// The version argument every known CLI accepts.
pub const DEFAULT_VERSION_ARGS: &[&str] = &["--version"];

/// How to find, identify and judge one provider's CLI. Pure data, `const`-constructible, so a
/// channel crate can declare it next to its argv:
///
/// ```
/// use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};
///
/// pub const KIMI: ProbeSpec = ProbeSpec {
///     env_overrides: &["KIMI_BIN"],
///     install_dirs: &[".kimi-code/bin"],
///     tested: Some(VersionRange::exactly(Version::new(1, 51, 0))),
///     install_hint: "pipx install kimi-cli==1.51.0",
///     auth: &[AuthSource::Env("KIMI_API_KEY"), AuthSource::File(".kimi/config.toml")],
///     ..ProbeSpec::new("kimi", "Kimi CLI", &["kimi"])
/// };
/// assert_eq!(KIMI.version_args, ["--version"]);
/// ```
///
/// **Never** set `version_args` to something with side effects: the probe runs exactly
/// `<binary> <version_args…>` (Kimi without arguments downloads an installer, so the probe also
/// refuses an empty argument list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSpec {
    /// Provider id (`"claude"`), also the key in reports.
    pub id: &'static str,
    /// Human name (`"Claude Code"`).
    pub display_name: &'static str,
    /// Executable names to look for, in preference order (without `.exe`/`.cmd`: `which` adds
    /// them on Windows).
    pub binaries: &'static [&'static str],
    /// Env vars that may name the executable (or a directory holding it), checked first, in
    /// order (`GROK_CLI_PATH`, `KIMI_BIN`, `PI_BIN`, …). A leading `~/` is expanded.
    pub env_overrides: &'static [&'static str],
    /// Provider-specific install dirs, relative to HOME (`.claude/bin`, `.grok/bin`, …), searched
    /// before the generic ones. Absolute paths are used as they are.
    pub install_dirs: &'static [&'static str],
    /// Arguments that print the version ([`DEFAULT_VERSION_ARGS`]).
    pub version_args: &'static [&'static str],
    /// Extra env for the version run (for example an auto-updater switch).
    pub version_env: &'static [(&'static str, &'static str)],
    /// The versions the channel is tested with; `None` if it has no claim.
    pub tested: Option<VersionRange>,
    /// The one command that installs it (`npm i -g @anthropic-ai/claude-code`).
    pub install_hint: &'static str,
    /// Where credentials could come from (reported as present/absent, never read).
    pub auth: &'static [AuthSource],
}

impl ProbeSpec {
    /// A spec with the given names, `--version`, and everything else empty.
    pub const fn new(
        id: &'static str,
        display_name: &'static str,
        binaries: &'static [&'static str],
    ) -> Self {
        ProbeSpec {
            id,
            display_name,
            binaries,
            env_overrides: &[],
            install_dirs: &[],
            version_args: DEFAULT_VERSION_ARGS,
            version_env: &[],
            tested: None,
            install_hint: "",
            auth: &[],
        }
    }

    /// Whether `v` is in the tested range (`None` when there is no range).
    pub fn is_tested(&self, v: Version) -> Option<bool> {
        self.tested.map(|r| r.contains(v))
    }

    /// The install hint, pinned to the newest tested version when it is a JavaScript package
    /// manager's global install of an unversioned package (`npm i -g pkg` → `npm i -g
    /// pkg@2.1.332`); otherwise the hint as it is (empty when the spec has none).
    ///
    /// ```
    /// use sdk_probe::{ProbeSpec, Version, VersionRange};
    /// let spec = ProbeSpec {
    ///     tested: Some(VersionRange::exactly(Version::new(0, 171, 0))),
    ///     install_hint: "npm i -g @openai/codex",
    ///     ..ProbeSpec::new("codex", "Codex", &["codex"])
    /// };
    /// assert_eq!(spec.pinned_install_hint(), "npm i -g @openai/codex@0.171.0");
    /// let pinned = ProbeSpec { install_hint: "npm i -g @openai/codex@0.170.0", ..spec };
    /// assert_eq!(pinned.pinned_install_hint(), "npm i -g @openai/codex@0.170.0");
    /// let script = ProbeSpec { install_hint: "curl -fsSL https://x.ai/cli/install.sh | bash", ..spec };
    /// assert_eq!(script.pinned_install_hint(), script.install_hint);
    /// ```
    pub fn pinned_install_hint(&self) -> String {
        let hint = self.install_hint.trim();
        let Some(range) = self.tested else {
            return hint.to_owned();
        };
        let words: Vec<&str> = hint.split_whitespace().collect();
        let js_global = matches!(words.first(), Some(&("npm" | "pnpm" | "bun" | "yarn")))
            && words
                .iter()
                .any(|w| matches!(*w, "-g" | "--global" | "global"));
        let Some(last) = words.last().filter(|_| js_global && words.len() >= 3) else {
            return hint.to_owned();
        };
        let unversioned = !last.starts_with('-')
            && !last.trim_start_matches('@').contains('@')
            && !matches!(*last, "-g" | "--global" | "global");
        if unversioned {
            format!("{hint}@{}", range.max)
        } else {
            hint.to_owned()
        }
    }
}

/// A place credentials may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthSource {
    /// An environment variable (`ANTHROPIC_API_KEY`): present when set and non-empty.
    Env(&'static str),
    /// A file, relative to HOME unless absolute (`.claude/.credentials.json`): present when it
    /// exists.
    File(&'static str),
}
