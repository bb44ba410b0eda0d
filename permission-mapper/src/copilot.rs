//! GitHub Copilot CLI's one-shot JSON mode (`copilot --output-format json`): tool permissions.
//!
//! In prompt mode Copilot CLI cannot ask anyone: a tool call that needs approval fails with
//! `tool.execution_complete {success:false, error:{code:"denied"}}` and the turn goes on
//! (Copilot CLI 1.0.102; `shared/reference/real-clis-anthropic-gemini.md` §5). It has no
//! approval mode flag, only allow and deny rules: `--allow-all-tools`, `--allow-all` (tools,
//! paths and URLs), `--allow-tool <rule>`, `--deny-tool <rule>` (deny wins over allow; the
//! rule `shell` covers every command, `write` every file change). `COPILOT_ALLOW_ALL` in the
//! environment also allows everything, so the channel sets it to `false` for the modes that do
//! not.
//!
//! | requested | flags | exact? |
//! |---|---|---|
//! | default | (none) | no: tools that need approval are denied, not asked |
//! | acceptEdits / autoEdit | `--allow-tool write` | no: commands are denied, not asked |
//! | plan | `--deny-tool shell --deny-tool write` | no: no plan mode in prompt mode; read-only tools |
//! | sandbox | `--deny-tool shell --deny-tool write` | yes |
//! | bypassPermissions | `--allow-all-tools` | yes (path and URL checks still apply) |
//! | yolo | `--allow-all` | yes |
//!
//! ```
//! use permission_mapper::{copilot, PermissionMode};
//!
//! assert_eq!(copilot::to_provider(PermissionMode::Yolo).args(), ["--allow-all"]);
//! assert_eq!(
//!     copilot::to_provider(PermissionMode::Sandbox).args(),
//!     ["--deny-tool", "shell", "--deny-tool", "write"]
//! );
//! assert_eq!(copilot::to_provider(PermissionMode::Default).env(), [("COPILOT_ALLOW_ALL", "false")]);
//! ```

use serde::Serialize;

use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "copilot";

/// The permission rules that cover commands and file changes.
pub const WRITING_RULES: &[&str] = &["shell", "write"];

/// How much Copilot CLI allows without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CopilotAllow {
    /// Only what needs no approval (and the [`CopilotSettings::allow_tools`] rules).
    Rules,
    /// `--allow-all-tools`.
    AllTools,
    /// `--allow-all`: tools, paths and URLs.
    All,
}

/// What the Copilot JSON transport passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CopilotSettings {
    /// How much is allowed.
    pub allow: CopilotAllow,
    /// `--allow-tool` rules.
    pub allow_tools: &'static [&'static str],
    /// `--deny-tool` rules (they win over every allow).
    pub deny_tools: &'static [&'static str],
}

impl CopilotSettings {
    /// The argv fragment.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        match self.allow {
            CopilotAllow::Rules => {}
            CopilotAllow::AllTools => args.push("--allow-all-tools".to_string()),
            CopilotAllow::All => args.push("--allow-all".to_string()),
        }
        for rule in self.allow_tools {
            args.extend(["--allow-tool".to_string(), rule.to_string()]);
        }
        for rule in self.deny_tools {
            args.extend(["--deny-tool".to_string(), rule.to_string()]);
        }
        args
    }

    /// Variables for the child: `COPILOT_ALLOW_ALL=false` unless everything is allowed, so an
    /// inherited `COPILOT_ALLOW_ALL` cannot widen the requested mode.
    pub fn env(&self) -> Vec<(&'static str, &'static str)> {
        match self.allow {
            CopilotAllow::Rules => vec![("COPILOT_ALLOW_ALL", "false")],
            CopilotAllow::AllTools | CopilotAllow::All => Vec::new(),
        }
    }
}

/// Maps a unified mode to Copilot CLI's prompt-mode settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> CopilotSettings {
    let (allow, allow_tools, deny_tools): (_, &'static [&'static str], &'static [&'static str]) =
        match mode {
            PermissionMode::Default => (CopilotAllow::Rules, &[], &[]),
            PermissionMode::AcceptEdits => (CopilotAllow::Rules, &["write"], &[]),
            PermissionMode::Plan | PermissionMode::Sandbox => {
                (CopilotAllow::Rules, &[], WRITING_RULES)
            }
            PermissionMode::BypassPermissions => (CopilotAllow::AllTools, &[], &[]),
            PermissionMode::Yolo => (CopilotAllow::All, &[], &[]),
        };
    CopilotSettings {
        allow,
        allow_tools,
        deny_tools,
    }
}

/// The mode settings amount to: denying both writing rules is `sandbox`; allowing everything is
/// `yolo` (`bypassPermissions` for tools only); allowing `write` is `acceptEdits`; nothing is
/// `default`.
///
/// ```
/// use permission_mapper::{copilot, PermissionMode};
/// let s = copilot::to_provider(PermissionMode::Plan);
/// assert_eq!(copilot::from_provider(&s), PermissionMode::Sandbox);
/// ```
pub fn from_provider(settings: &CopilotSettings) -> PermissionMode {
    let denies_writing = WRITING_RULES
        .iter()
        .all(|rule| settings.deny_tools.contains(rule));
    if denies_writing {
        return PermissionMode::Sandbox;
    }
    match settings.allow {
        CopilotAllow::All => PermissionMode::Yolo,
        CopilotAllow::AllTools => PermissionMode::BypassPermissions,
        CopilotAllow::Rules if settings.allow_tools.contains(&"write") => {
            PermissionMode::AcceptEdits
        }
        CopilotAllow::Rules => PermissionMode::Default,
    }
}

/// The effective-mode report for a Copilot CLI prompt-mode run.
///
/// ```
/// use permission_mapper::{copilot, NoteKind, PermissionMode};
/// let eff = copilot::effective(&PermissionMode::parse("default"));
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// assert!(copilot::effective(&PermissionMode::parse("yolo")).exact);
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<CopilotSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default => Some(
            "Copilot CLI's one-shot JSON mode cannot ask for approval: tools that need it (shell \
             commands, file changes) are denied instead; use acceptEdits for edits, \
             bypassPermissions or yolo to run everything, or the ACP transport to be asked",
        ),
        PermissionMode::AcceptEdits => Some(
            "Copilot CLI's one-shot JSON mode cannot ask for approval: file changes are allowed \
             as requested, but shell commands are denied instead of asked; use bypassPermissions \
             or yolo to run them, or the ACP transport to be asked",
        ),
        PermissionMode::Plan => Some(
            "Copilot CLI has no plan mode in one-shot prompt mode: applied read-only tools \
             instead (shell commands and file changes are denied)",
        ),
        PermissionMode::Sandbox | PermissionMode::BypassPermissions | PermissionMode::Yolo => None,
    };
    Effective::substituted(PROVIDER, requested, settings, substitution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::assert_mapping_table;

    #[test]
    fn mapping_table() {
        // (mode, args, exact)
        let table: [(PermissionMode, &[&str], bool); 6] = [
            (PermissionMode::Default, &[], false),
            (
                PermissionMode::AcceptEdits,
                &["--allow-tool", "write"],
                false,
            ),
            (
                PermissionMode::Plan,
                &["--deny-tool", "shell", "--deny-tool", "write"],
                false,
            ),
            (
                PermissionMode::Sandbox,
                &["--deny-tool", "shell", "--deny-tool", "write"],
                true,
            ),
            (
                PermissionMode::BypassPermissions,
                &["--allow-all-tools"],
                true,
            ),
            (PermissionMode::Yolo, &["--allow-all"], true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, args| {
            assert_eq!(settings.args(), *args, "{mode}");
            let allows_all = settings.allow != CopilotAllow::Rules;
            assert_eq!(settings.env().is_empty(), allows_all, "{mode}");
        });
    }

    #[test]
    fn read_only_modes_deny_every_writing_rule_and_allow_nothing() {
        for mode in PermissionMode::ALL {
            let settings = to_provider(mode);
            if mode.unified() == crate::UnifiedMode::Sandbox {
                assert_eq!(settings.allow, CopilotAllow::Rules, "{mode}");
                assert!(settings.allow_tools.is_empty(), "{mode}");
                assert_eq!(settings.deny_tools, WRITING_RULES, "{mode}");
            }
        }
    }

    #[test]
    fn reading_back_gives_the_mode_or_its_read_only_core() {
        for mode in PermissionMode::ALL {
            let back = from_provider(&to_provider(mode));
            let expected = match mode {
                PermissionMode::Plan => PermissionMode::Sandbox,
                other => other,
            };
            assert_eq!(back, expected, "{mode}");
        }
    }
}
