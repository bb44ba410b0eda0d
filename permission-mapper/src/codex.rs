//! Codex: `skipGitRepoCheck`, `sandbox` and `approvalPolicy`.
//!
//! The mapping (reference §5.2, `CodexPermissionMapper.toProvider`). "ws" is `workspace-write`, or
//! `danger-full-access` on Windows:
//!
//! | requested | skipGitRepoCheck | sandbox | approvalPolicy |
//! |---|---|---|---|
//! | bypassPermissions | true | ws | never |
//! | acceptEdits / autoEdit | true | ws | on-request |
//! | plan / sandbox | true | read-only | on-request |
//! | yolo | true | danger-full-access | never |
//! | default / unknown / null | true | ws | on-request |
//!
//! `untrusted` is never produced and is rejected when parsed ([`ParseError::UntrustedApproval`]):
//! Codex CLI 0.149+ refuses it.
//!
//! **Overrides.** The JetBrains plugin sets `CODEX_SANDBOX_MODE` / `CODEX_SANDBOX` (the sandbox the
//! user configured) and `CODEX_APPROVAL_POLICY` on the bridge. [`CodexOverrides`] reads them and
//! [`apply_overrides`] applies the valid ones; invalid ones are ignored with a reason. The channel
//! must then remove every name in [`STRIPPED_ENV`] from the Codex child's environment.
//!
//! **`codex exec` caveat.** `exec` has no `-a` flag and always runs with approval `never`; the
//! approval policy here tells the channel whether to bridge approvals itself (after the fact), and
//! is what `app-server`'s `thread/start` takes.
//!
//! ```
//! use permission_mapper::{codex::{self, CodexApproval, CodexSandbox, CodexSettings}, Platform, PermissionMode};
//!
//! assert_eq!(
//!     codex::to_provider(PermissionMode::Yolo, Platform::Unix),
//!     CodexSettings {
//!         skip_git_repo_check: true,
//!         sandbox: CodexSandbox::DangerFullAccess,
//!         approval_policy: CodexApproval::Never,
//!     }
//! );
//! assert_eq!(codex::from_provider(Some("read-only")), PermissionMode::Sandbox);
//! ```

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::cli_enum::cli_enum;
use crate::effective::{Effective, Note, NoteKind};
use crate::mode::truncate;
use crate::{ParseError, PermissionMode, Platform, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "codex";

/// Override: the configured sandbox (checked first).
pub const SANDBOX_MODE_VAR: &str = "CODEX_SANDBOX_MODE";
/// Override: the configured sandbox (checked when [`SANDBOX_MODE_VAR`] is unset or invalid).
pub const SANDBOX_VAR: &str = "CODEX_SANDBOX";
/// Override: the approval policy.
pub const APPROVAL_POLICY_VAR: &str = "CODEX_APPROVAL_POLICY";

/// Env vars the bridge reads (or that leak from a parent Codex) and must not pass to the Codex
/// child: Codex treats `CODEX_SANDBOX*` as "already inside a sandbox" and `CODEX_CI` as CI mode.
pub const STRIPPED_ENV: [&str; 5] = [
    APPROVAL_POLICY_VAR,
    SANDBOX_MODE_VAR,
    SANDBOX_VAR,
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_CI",
];

cli_enum! {
    /// A Codex sandbox policy (`-s/--sandbox`, `sandbox_mode`, app-server `sandbox`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum CodexSandbox {
        /// `read-only`.
        ReadOnly => "read-only",
        /// `workspace-write`: writes inside the cwd only (not available on Windows).
        WorkspaceWrite => "workspace-write",
        /// `danger-full-access`: no sandbox.
        DangerFullAccess => "danger-full-access",
    }
    /// Every value, in order.
    const ALL;
    /// Case-insensitive, whitespace trimmed.
    impl FromStr else ParseError::UnknownCodexSandbox;
}

impl CodexSandbox {
    /// The sandbox the plugin calls "ws": `workspace-write`, or `danger-full-access` on Windows.
    pub const fn workspace(platform: Platform) -> Self {
        match platform {
            Platform::Windows => CodexSandbox::DangerFullAccess,
            Platform::Unix => CodexSandbox::WorkspaceWrite,
        }
    }
}

cli_enum! {
    /// A Codex approval policy. There is deliberately no `untrusted`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum CodexApproval {
        /// `never`: never ask.
        Never => "never",
        /// `on-request`: the model asks when it needs to escalate.
        OnRequest => "on-request",
        /// `on-failure`: ask when a sandboxed command fails (accepted in overrides; never produced).
        OnFailure => "on-failure",
    }
    /// `VALID_APPROVAL_POLICIES`: every value this crate accepts.
    const ALL;
}

impl FromStr for CodexApproval {
    type Err = ParseError;

    /// Case-insensitive, whitespace trimmed; `untrusted` is [`ParseError::UntrustedApproval`].
    ///
    /// ```
    /// use permission_mapper::{codex::CodexApproval, ParseError};
    /// assert_eq!("on-request".parse(), Ok(CodexApproval::OnRequest));
    /// assert_eq!("untrusted".parse::<CodexApproval>(), Err(ParseError::UntrustedApproval));
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("untrusted") {
            return Err(ParseError::UntrustedApproval);
        }
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParseError::UnknownCodexApproval(truncate(s, 64)))
    }
}

/// Codex's native permission settings, serialized as the plugin's
/// `{"skipGitRepoCheck","sandbox","approvalPolicy"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodexSettings {
    /// Pass `--skip-git-repo-check` (always `true` from [`to_provider`]).
    pub skip_git_repo_check: bool,
    /// The sandbox.
    pub sandbox: CodexSandbox,
    /// The approval policy.
    pub approval_policy: CodexApproval,
}

impl CodexSettings {
    /// The `codex exec` argv fragment: `[--skip-git-repo-check] --sandbox <sandbox>`.
    ///
    /// The approval policy is not part of it: `exec` has no `-a` and always runs with `never`.
    ///
    /// ```
    /// use permission_mapper::{codex, Platform, PermissionMode};
    /// let s = codex::to_provider(PermissionMode::Plan, Platform::Unix);
    /// assert_eq!(s.exec_args(), ["--skip-git-repo-check", "--sandbox", "read-only"]);
    /// ```
    pub fn exec_args(&self) -> Vec<&'static str> {
        let mut args = Vec::with_capacity(3);
        if self.skip_git_repo_check {
            args.push("--skip-git-repo-check");
        }
        args.extend(["--sandbox", self.sandbox.as_str()]);
        args
    }
}

/// Maps a unified mode to Codex settings (the table in the module docs).
pub const fn to_provider(mode: PermissionMode, platform: Platform) -> CodexSettings {
    let ws = CodexSandbox::workspace(platform);
    let (sandbox, approval_policy) = match mode {
        PermissionMode::BypassPermissions => (ws, CodexApproval::Never),
        PermissionMode::AcceptEdits | PermissionMode::Default => (ws, CodexApproval::OnRequest),
        PermissionMode::Plan | PermissionMode::Sandbox => {
            (CodexSandbox::ReadOnly, CodexApproval::OnRequest)
        }
        PermissionMode::Yolo => (CodexSandbox::DangerFullAccess, CodexApproval::Never),
    };
    CodexSettings {
        skip_git_repo_check: true,
        sandbox,
        approval_policy,
    }
}

/// Reads a Codex `sandbox` setting back: `read-only` → sandbox, `danger-full-access` → yolo,
/// `workspace-write`, anything else or nothing → default.
///
/// ```
/// use permission_mapper::{codex, PermissionMode};
/// assert_eq!(codex::from_provider(Some("danger-full-access")), PermissionMode::Yolo);
/// assert_eq!(codex::from_provider(Some("workspace-write")), PermissionMode::Default);
/// assert_eq!(codex::from_provider(None), PermissionMode::Default);
/// ```
pub fn from_provider(sandbox: Option<&str>) -> PermissionMode {
    match sandbox.map(str::parse::<CodexSandbox>) {
        Some(Ok(s)) => from_sandbox(s),
        _ => PermissionMode::Default,
    }
}

/// [`from_provider`] on typed settings (only the sandbox matters).
pub const fn from_settings(settings: &CodexSettings) -> PermissionMode {
    from_sandbox(settings.sandbox)
}

const fn from_sandbox(sandbox: CodexSandbox) -> PermissionMode {
    match sandbox {
        CodexSandbox::ReadOnly => PermissionMode::Sandbox,
        CodexSandbox::DangerFullAccess => PermissionMode::Yolo,
        CodexSandbox::WorkspaceWrite => PermissionMode::Default,
    }
}

/// The raw override values, as found in the bridge's environment.
///
/// ```
/// use permission_mapper::codex::CodexOverrides;
/// let o = CodexOverrides::from_env(|k| (k == "CODEX_SANDBOX_MODE").then(|| "read-only".into()));
/// assert_eq!(o.sandbox_mode.as_deref(), Some("read-only"));
/// assert_eq!(o.approval_policy, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodexOverrides {
    /// `CODEX_SANDBOX_MODE`.
    pub sandbox_mode: Option<String>,
    /// `CODEX_SANDBOX`.
    pub sandbox: Option<String>,
    /// `CODEX_APPROVAL_POLICY`.
    pub approval_policy: Option<String>,
}

impl CodexOverrides {
    /// Reads the three variables through `lookup` (inject it in tests).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Self {
        CodexOverrides {
            sandbox_mode: lookup(SANDBOX_MODE_VAR),
            sandbox: lookup(SANDBOX_VAR),
            approval_policy: lookup(APPROVAL_POLICY_VAR),
        }
    }

    /// Reads the three variables from this process's environment (non-UTF-8 values are ignored).
    pub fn from_process_env() -> Self {
        Self::from_env(|k| std::env::var(k).ok())
    }

    /// Validates the values. Empty values count as unset; `CODEX_SANDBOX_MODE` wins over
    /// `CODEX_SANDBOX` when both are valid.
    pub fn resolve(&self) -> ResolvedOverrides {
        let mut out = ResolvedOverrides::default();
        for (var, value) in [
            (SANDBOX_MODE_VAR, &self.sandbox_mode),
            (SANDBOX_VAR, &self.sandbox),
        ] {
            let Some(value) = value.as_deref().filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            match value.parse::<CodexSandbox>() {
                Ok(s) => {
                    out.sandbox = Some((var, s));
                    break;
                }
                Err(reason) => out.ignored.push(IgnoredOverride::new(var, value, reason)),
            }
        }
        if let Some(value) = self
            .approval_policy
            .as_deref()
            .filter(|v| !v.trim().is_empty())
        {
            match value.parse::<CodexApproval>() {
                Ok(a) => out.approval_policy = Some((APPROVAL_POLICY_VAR, a)),
                Err(reason) => {
                    out.ignored
                        .push(IgnoredOverride::new(APPROVAL_POLICY_VAR, value, reason))
                }
            }
        }
        out
    }
}

/// Validated overrides: what will be applied, and what was ignored and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedOverrides {
    /// The sandbox override and the variable it came from.
    pub sandbox: Option<(&'static str, CodexSandbox)>,
    /// The approval override and the variable it came from.
    pub approval_policy: Option<(&'static str, CodexApproval)>,
    /// Invalid values, ignored.
    pub ignored: Vec<IgnoredOverride>,
}

/// An override value that was not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredOverride {
    /// The variable name.
    pub var: &'static str,
    /// Its value (truncated to 64 chars).
    pub value: String,
    /// Why it was rejected.
    pub reason: ParseError,
}

impl IgnoredOverride {
    fn new(var: &'static str, value: &str, reason: ParseError) -> Self {
        IgnoredOverride {
            var,
            value: truncate(value, 64),
            reason,
        }
    }
}

/// Applies the valid overrides to `settings`; returns the result and one note per change or
/// ignored value.
///
/// ```
/// use permission_mapper::{codex::{self, CodexOverrides, CodexSandbox, CodexApproval}, Platform, PermissionMode};
/// let base = codex::to_provider(PermissionMode::Default, Platform::Unix);
/// let overrides = CodexOverrides {
///     sandbox_mode: Some("danger-full-access".into()),
///     approval_policy: Some("untrusted".into()),
///     ..Default::default()
/// };
/// let (s, notes) = codex::apply_overrides(base, &overrides);
/// assert_eq!(s.sandbox, CodexSandbox::DangerFullAccess);
/// assert_eq!(s.approval_policy, CodexApproval::OnRequest); // untrusted ignored
/// assert_eq!(notes.len(), 2);
/// ```
pub fn apply_overrides(
    mut settings: CodexSettings,
    overrides: &CodexOverrides,
) -> (CodexSettings, Vec<Note>) {
    let resolved = overrides.resolve();
    let mut notes = Vec::new();
    for ig in &resolved.ignored {
        notes.push(Note::new(
            NoteKind::IgnoredOverride,
            format!("ignored {}={:?}: {}", ig.var, ig.value, ig.reason),
        ));
    }
    if let Some((var, sandbox)) = resolved.sandbox
        && sandbox != settings.sandbox
    {
        notes.push(Note::new(
            NoteKind::Override,
            format!(
                "{var}={sandbox} overrides the sandbox {} the mode maps to",
                settings.sandbox
            ),
        ));
        settings.sandbox = sandbox;
    }
    if let Some((var, approval)) = resolved.approval_policy
        && approval != settings.approval_policy
    {
        notes.push(Note::new(
            NoteKind::Override,
            format!(
                "{var}={approval} overrides the approval policy {} the mode maps to",
                settings.approval_policy
            ),
        ));
        settings.approval_policy = approval;
    }
    (settings, notes)
}

/// The effective-mode report for a Codex run: mapping, platform fallback, then overrides.
///
/// ```
/// use permission_mapper::{codex::{self, CodexOverrides, CodexSandbox}, Platform, PermissionMode};
/// let eff = codex::effective(&PermissionMode::parse("acceptEdits"), Platform::Windows, &CodexOverrides::default());
/// assert_eq!(eff.settings.sandbox, CodexSandbox::DangerFullAccess);
/// assert!(!eff.exact); // workspace-write is not available on Windows
/// ```
pub fn effective(
    requested: &RequestedMode,
    platform: Platform,
    overrides: &CodexOverrides,
) -> Effective<CodexSettings> {
    let mapped = to_provider(requested.mode, platform);
    let mut notes = Vec::new();
    if requested.mode == PermissionMode::Plan {
        notes.push(Note::new(
            NoteKind::Substituted,
            "Codex has no plan mode; applied the read-only sandbox instead",
        ));
    }
    if platform == Platform::Windows
        && to_provider(requested.mode, Platform::Unix).sandbox == CodexSandbox::WorkspaceWrite
    {
        notes.push(Note::new(
            NoteKind::Substituted,
            "the workspace-write sandbox is not available on Windows; applied danger-full-access \
             instead",
        ));
    }
    let (settings, override_notes) = apply_overrides(mapped, overrides);
    notes.extend(override_notes);
    Effective::new(PROVIDER, requested, settings, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_spelling_matches_cli() {
        for s in CodexSandbox::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(s.as_str().parse::<CodexSandbox>(), Ok(s));
        }
        for a in CodexApproval::ALL {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
            assert_eq!(a.as_str().parse::<CodexApproval>(), Ok(a));
        }
        assert!(serde_json::from_str::<CodexApproval>("\"untrusted\"").is_err());
    }

    #[test]
    fn settings_json_shape() {
        let s = to_provider(PermissionMode::BypassPermissions, Platform::Unix);
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            serde_json::json!({
                "skipGitRepoCheck": true,
                "sandbox": "workspace-write",
                "approvalPolicy": "never"
            })
        );
    }

    #[test]
    fn empty_override_values_are_unset() {
        let o = CodexOverrides {
            sandbox_mode: Some("".into()),
            sandbox: Some("read-only".into()),
            approval_policy: Some("  ".into()),
        };
        let r = o.resolve();
        assert_eq!(r.sandbox, Some((SANDBOX_VAR, CodexSandbox::ReadOnly)));
        assert_eq!(r.approval_policy, None);
        assert!(r.ignored.is_empty());
    }

    #[test]
    fn invalid_sandbox_mode_falls_back_to_codex_sandbox_and_is_reported() {
        let o = CodexOverrides {
            sandbox_mode: Some("full".into()),
            sandbox: Some("danger-full-access".into()),
            approval_policy: None,
        };
        let r = o.resolve();
        assert_eq!(
            r.sandbox,
            Some((SANDBOX_VAR, CodexSandbox::DangerFullAccess))
        );
        assert_eq!(r.ignored.len(), 1);
        assert_eq!(r.ignored[0].var, SANDBOX_MODE_VAR);
        assert_eq!(
            r.ignored[0].reason,
            ParseError::UnknownCodexSandbox("full".into())
        );
    }

    #[test]
    fn sandbox_mode_wins_over_codex_sandbox() {
        let o = CodexOverrides {
            sandbox_mode: Some("read-only".into()),
            sandbox: Some("danger-full-access".into()),
            approval_policy: None,
        };
        assert_eq!(
            o.resolve().sandbox,
            Some((SANDBOX_MODE_VAR, CodexSandbox::ReadOnly))
        );
    }

    #[test]
    fn override_equal_to_mapping_is_silent_and_exact() {
        let o = CodexOverrides {
            sandbox_mode: Some("workspace-write".into()),
            sandbox: Some("workspace-write".into()),
            approval_policy: Some("on-request".into()),
        };
        let eff = effective(&PermissionMode::parse("default"), Platform::Unix, &o);
        assert!(eff.exact);
        assert!(eff.notes.is_empty(), "{:?}", eff.notes);
    }

    #[test]
    fn override_notes_are_deviations() {
        let o = CodexOverrides {
            approval_policy: Some("never".into()),
            ..Default::default()
        };
        let eff = effective(&PermissionMode::parse("default"), Platform::Unix, &o);
        assert!(!eff.exact);
        assert_eq!(eff.settings.approval_policy, CodexApproval::Never);
        assert_eq!(eff.notes.len(), 1);
        assert_eq!(eff.notes[0].kind, NoteKind::Override);
        assert!(eff.notes[0].message.contains("CODEX_APPROVAL_POLICY=never"));
    }

    #[test]
    fn ignored_override_value_is_truncated() {
        let o = CodexOverrides {
            approval_policy: Some("x".repeat(1000)),
            ..Default::default()
        };
        let (_, notes) = apply_overrides(to_provider(PermissionMode::Default, Platform::Unix), &o);
        assert_eq!(notes[0].kind, NoteKind::IgnoredOverride);
        assert!(notes[0].message.len() < 300, "{}", notes[0].message);
        let r = o.resolve();
        assert_eq!(r.ignored[0].value.chars().count(), 65);
    }

    #[test]
    fn stripped_env_lists_every_override_var() {
        for v in [SANDBOX_MODE_VAR, SANDBOX_VAR, APPROVAL_POLICY_VAR] {
            assert!(STRIPPED_ENV.contains(&v));
        }
        assert!(STRIPPED_ENV.contains(&"CODEX_SANDBOX_NETWORK_DISABLED"));
        assert!(STRIPPED_ENV.contains(&"CODEX_CI"));
    }
}
