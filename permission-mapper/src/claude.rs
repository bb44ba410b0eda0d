//! Claude Code: the `--permission-mode` flag.
//!
//! | requested | `--permission-mode` | exact? |
//! |---|---|---|
//! | default | `default` | yes |
//! | acceptEdits / autoEdit | `acceptEdits` | yes |
//! | plan | `plan` | yes |
//! | sandbox | `plan` | no: Claude has no read-only sandbox; plan mode (no edits, no commands until a plan is approved) is the nearest |
//! | bypassPermissions | `bypassPermissions` | yes |
//! | yolo | `bypassPermissions` | yes |
//!
//! Reading back ([`from_provider`], for the `permissionMode` of Claude's `init` event) is the
//! identity on the four shared names; the CLI's own `dontAsk` reads back as `sandbox` and `auto`
//! as `default`.
//!
//! **Root.** Claude Code refuses `bypassPermissions` when it runs as root ("cannot be used with
//! root/sudo privileges") unless `IS_SANDBOX=1` is set. When the caller says it runs as root
//! ([`ClaudeContext::running_as_root`]), [`ClaudeSettings::needs_sandbox_env`] is `true` and
//! [`ClaudeSettings::env`] returns [`SANDBOX_ENV`]: the channel must add it to the child's env.
//!
//! ```
//! use permission_mapper::{claude, PermissionMode};
//!
//! let s = claude::settings(PermissionMode::Yolo, claude::ClaudeContext { running_as_root: true });
//! assert_eq!(s.args(), ["--permission-mode", "bypassPermissions"]);
//! assert_eq!(s.env(), [("IS_SANDBOX", "1")]);
//! assert_eq!(claude::from_provider("acceptEdits"), Ok(PermissionMode::AcceptEdits));
//! ```

use serde::{Deserialize, Serialize};

use crate::cli_enum::cli_enum;
use crate::effective::{Effective, Note, NoteKind};
use crate::{ParseError, PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "claude";

/// The env var (and value) that lets Claude Code run `bypassPermissions` as root.
pub const SANDBOX_ENV: (&str, &str) = ("IS_SANDBOX", "1");

cli_enum! {
    /// A value of the Claude CLI's `--permission-mode` flag (and of `permissionMode` in its `init`
    /// event). [`to_provider`] only produces the first four.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum ClaudeMode {
        /// `default`: ask before edits and commands.
        Default => "default",
        /// `acceptEdits`: edits without asking, commands still ask.
        AcceptEdits => "acceptEdits",
        /// `plan`: read-only until a plan is approved.
        Plan => "plan",
        /// `bypassPermissions`: never ask.
        BypassPermissions => "bypassPermissions",
        /// `dontAsk`: never ask, deny whatever is not pre-approved. Read back only; never produced.
        DontAsk => "dontAsk",
        /// `auto`: a classifier decides instead of asking. Read back only; never produced.
        Auto => "auto",
    }
    /// Every value the CLI accepts (its `--permission-mode` choices).
    const ALL;
    /// Case-insensitive; only the CLI's own values (not `autoEdit`, `sandbox` or `yolo`).
    impl FromStr else ParseError::UnknownClaudeMode;
}

impl ClaudeMode {
    /// The unified mode this Claude mode corresponds to: the identity on the shared names;
    /// `dontAsk` (nothing unapproved runs, nothing asks) reads back as `sandbox`, and `auto`
    /// (a classifier still guards each action) as `default`. Both are lossy.
    pub const fn to_unified(self) -> PermissionMode {
        match self {
            ClaudeMode::Default => PermissionMode::Default,
            ClaudeMode::AcceptEdits => PermissionMode::AcceptEdits,
            ClaudeMode::Plan => PermissionMode::Plan,
            ClaudeMode::BypassPermissions => PermissionMode::BypassPermissions,
            ClaudeMode::DontAsk => PermissionMode::Sandbox,
            ClaudeMode::Auto => PermissionMode::Default,
        }
    }
}

/// Facts about the run that change how a mode is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClaudeContext {
    /// The Claude child will run with effective uid 0.
    pub running_as_root: bool,
}

/// What the Claude channel passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeSettings {
    /// The `--permission-mode` value.
    pub permission_mode: ClaudeMode,
    /// The child needs [`SANDBOX_ENV`] (`IS_SANDBOX=1`): bypass as root.
    pub needs_sandbox_env: bool,
}

impl ClaudeSettings {
    /// The argv fragment: `["--permission-mode", <mode>]`.
    pub const fn args(&self) -> [&'static str; 2] {
        ["--permission-mode", self.permission_mode.as_str()]
    }

    /// Env vars the channel must set on the child (empty unless [`Self::needs_sandbox_env`]).
    pub fn env(&self) -> &'static [(&'static str, &'static str)] {
        if self.needs_sandbox_env {
            &[SANDBOX_ENV]
        } else {
            &[]
        }
    }
}

/// Maps a unified mode to the Claude `--permission-mode` value.
///
/// ```
/// use permission_mapper::{claude::{self, ClaudeMode}, PermissionMode};
/// assert_eq!(claude::to_provider(PermissionMode::Sandbox), ClaudeMode::Plan);
/// ```
pub const fn to_provider(mode: PermissionMode) -> ClaudeMode {
    match mode {
        PermissionMode::Default => ClaudeMode::Default,
        PermissionMode::AcceptEdits => ClaudeMode::AcceptEdits,
        PermissionMode::Plan | PermissionMode::Sandbox => ClaudeMode::Plan,
        PermissionMode::BypassPermissions | PermissionMode::Yolo => ClaudeMode::BypassPermissions,
    }
}

/// Maps a unified mode to the full Claude settings for a given context.
pub const fn settings(mode: PermissionMode, ctx: ClaudeContext) -> ClaudeSettings {
    let permission_mode = to_provider(mode);
    ClaudeSettings {
        permission_mode,
        needs_sandbox_env: ctx.running_as_root
            && matches!(permission_mode, ClaudeMode::BypassPermissions),
    }
}

/// Reads a Claude mode string (for example `permissionMode` from the CLI's `init` event) back
/// into a unified mode (see [`ClaudeMode::to_unified`]).
///
/// ```
/// use permission_mapper::{claude, ParseError, PermissionMode};
/// assert_eq!(claude::from_provider("plan"), Ok(PermissionMode::Plan));
/// assert_eq!(claude::from_provider("dontAsk"), Ok(PermissionMode::Sandbox));
/// assert!(matches!(claude::from_provider("yolo"), Err(ParseError::UnknownClaudeMode(_))));
/// ```
pub fn from_provider(mode: &str) -> Result<PermissionMode, ParseError> {
    mode.parse::<ClaudeMode>().map(ClaudeMode::to_unified)
}

/// The effective-mode report for a Claude run.
///
/// ```
/// use permission_mapper::{claude, NoteKind, PermissionMode};
/// let eff = claude::effective(
///     &PermissionMode::parse("bypassPermissions"),
///     claude::ClaudeContext { running_as_root: true },
/// );
/// assert!(eff.exact);
/// assert!(eff.settings.needs_sandbox_env);
/// assert_eq!(eff.notes[0].kind, NoteKind::Requirement);
/// ```
pub fn effective(requested: &RequestedMode, ctx: ClaudeContext) -> Effective<ClaudeSettings> {
    let s = settings(requested.mode, ctx);
    let mut notes = Vec::new();
    if requested.mode == PermissionMode::Sandbox {
        notes.push(Note::new(
            NoteKind::Substituted,
            "Claude Code has no sandbox mode; applied plan mode instead (read-only: no edits or \
             commands until a plan is approved)",
        ));
    }
    if s.needs_sandbox_env {
        notes.push(Note::new(
            NoteKind::Requirement,
            "Claude Code refuses bypassPermissions as root unless IS_SANDBOX=1; the child gets \
             IS_SANDBOX=1",
        ));
    }
    Effective::new(PROVIDER, requested, s, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_provider_is_left_inverse_of_to_provider_on_produced_modes() {
        for m in ClaudeMode::ALL {
            let back = to_provider(from_provider(m.as_str()).unwrap());
            match m {
                ClaudeMode::DontAsk => assert_eq!(back, ClaudeMode::Plan),
                ClaudeMode::Auto => assert_eq!(back, ClaudeMode::Default),
                _ => assert_eq!(back, m),
            }
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
    }

    #[test]
    fn from_provider_rejects_non_cli_values() {
        for bad in ["", "autoEdit", "sandbox", "yolo", "bypass"] {
            assert_eq!(
                from_provider(bad),
                Err(ParseError::UnknownClaudeMode(bad.to_owned())),
                "{bad}"
            );
        }
        assert_eq!(
            from_provider("BypassPermissions"),
            Ok(PermissionMode::BypassPermissions)
        );
    }

    #[test]
    fn sandbox_env_only_for_bypass_as_root() {
        for mode in PermissionMode::ALL {
            for root in [false, true] {
                let s = settings(
                    mode,
                    ClaudeContext {
                        running_as_root: root,
                    },
                );
                let expect = root && mode.unified() == crate::UnifiedMode::Yolo;
                assert_eq!(s.needs_sandbox_env, expect, "{mode} root={root}");
                assert_eq!(s.env().is_empty(), !expect);
            }
        }
    }
}
