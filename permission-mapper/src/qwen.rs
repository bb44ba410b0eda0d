//! Qwen Code's one-shot JSON mode (`qwen --output-format stream-json`): `--approval-mode`.
//!
//! Headless Qwen Code cannot ask anyone: in `default` mode it does not even offer the model
//! the tools that need approval (shell commands, file edits, web fetches), and refuses them
//! with a `tool_result` error plus a `permission_denials` entry when they are called anyway
//! (Qwen Code 0.15.10; `shared/reference/real-clis-anthropic-gemini.md` §4). So:
//!
//! | requested | `--approval-mode` | exact? |
//! |---|---|---|
//! | default | `default` | no: tools that need approval are refused, not asked |
//! | acceptEdits / autoEdit | `auto-edit` | no: edits run, commands are refused, not asked |
//! | plan | `plan` | yes |
//! | sandbox | `default` | yes: only the read-only tools run headless |
//! | bypassPermissions | `yolo` | yes |
//! | yolo | `yolo` | yes |
//!
//! (The ACP transport asks the client instead, and maps `sandbox` to `plan`.)
//!
//! ```
//! use permission_mapper::{qwen, PermissionMode};
//!
//! assert_eq!(qwen::to_provider(PermissionMode::Yolo).args(), ["--approval-mode", "yolo"]);
//! assert_eq!(qwen::from_provider(qwen::QwenApproval::AutoEdit), PermissionMode::AcceptEdits);
//! assert!(!qwen::effective(&PermissionMode::parse("default")).exact);
//! ```

use serde::Serialize;

use crate::cli_enum::cli_enum;
use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "qwen";

cli_enum! {
    /// Qwen Code's approval modes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum QwenApproval {
        /// `default`: ask (headless: refuse) before anything that needs approval.
        Default => "default",
        /// `auto-edit`: edits run without asking.
        AutoEdit => "auto-edit",
        /// `plan`: plan only.
        Plan => "plan",
        /// `yolo`: everything runs without asking.
        Yolo => "yolo",
    }
    /// Every value.
    const ALL;
}

/// What the Qwen JSON transport passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QwenSettings {
    /// `--approval-mode`.
    pub approval_mode: QwenApproval,
}

impl QwenSettings {
    /// The argv fragment.
    pub fn args(&self) -> Vec<String> {
        vec!["--approval-mode".into(), self.approval_mode.as_str().into()]
    }
}

/// Maps a unified mode to Qwen Code's headless settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> QwenSettings {
    let approval_mode = match mode {
        PermissionMode::Default | PermissionMode::Sandbox => QwenApproval::Default,
        PermissionMode::AcceptEdits => QwenApproval::AutoEdit,
        PermissionMode::Plan => QwenApproval::Plan,
        PermissionMode::BypassPermissions | PermissionMode::Yolo => QwenApproval::Yolo,
    };
    QwenSettings { approval_mode }
}

/// The mode an approval mode amounts to headless (`default` refuses what needs approval, so it
/// reads back as `sandbox`).
pub const fn from_provider(approval: QwenApproval) -> PermissionMode {
    match approval {
        QwenApproval::Default => PermissionMode::Sandbox,
        QwenApproval::AutoEdit => PermissionMode::AcceptEdits,
        QwenApproval::Plan => PermissionMode::Plan,
        QwenApproval::Yolo => PermissionMode::Yolo,
    }
}

/// The effective-mode report for a headless Qwen Code run.
///
/// ```
/// use permission_mapper::{qwen, NoteKind, PermissionMode};
/// let eff = qwen::effective(&PermissionMode::parse("acceptEdits"));
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// assert!(eff.notes[0].message.contains("refused"));
/// assert!(qwen::effective(&PermissionMode::parse("sandbox")).exact);
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<QwenSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default => Some(
            "Qwen Code's one-shot JSON mode cannot ask for approval: tools that need it (shell \
             commands, file edits, web fetches) are refused instead; use acceptEdits for edits, \
             bypassPermissions or yolo to run everything, or the ACP transport to be asked",
        ),
        PermissionMode::AcceptEdits => Some(
            "Qwen Code's one-shot JSON mode cannot ask for approval: edits run without asking \
             as requested, but shell commands are refused instead of asked; use bypassPermissions \
             or yolo to run them, or the ACP transport to be asked",
        ),
        PermissionMode::Plan
        | PermissionMode::Sandbox
        | PermissionMode::BypassPermissions
        | PermissionMode::Yolo => None,
    };
    Effective::substituted(PROVIDER, requested, settings, substitution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoteKind;
    use crate::test_support::assert_mapping_table;

    #[test]
    fn mapping_table() {
        // (mode, --approval-mode, exact)
        let table = [
            (PermissionMode::Default, "default", false),
            (PermissionMode::AcceptEdits, "auto-edit", false),
            (PermissionMode::Plan, "plan", true),
            (PermissionMode::Sandbox, "default", true),
            (PermissionMode::BypassPermissions, "yolo", true),
            (PermissionMode::Yolo, "yolo", true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, approval| {
            assert_eq!(settings.args(), ["--approval-mode", approval], "{mode}");
        });
    }

    #[test]
    fn reading_back_never_gives_a_more_permissive_mode() {
        for mode in PermissionMode::ALL {
            let back = from_provider(to_provider(mode).approval_mode);
            match mode {
                PermissionMode::Default | PermissionMode::Sandbox => {
                    assert_eq!(back, PermissionMode::Sandbox, "{mode}")
                }
                PermissionMode::BypassPermissions => assert_eq!(back, PermissionMode::Yolo),
                other => assert_eq!(back, other),
            }
        }
    }

    #[test]
    fn unknown_modes_are_reported_before_the_substitution() {
        let eff = effective(&PermissionMode::parse("auto"));
        assert_eq!(eff.notes[0].kind, NoteKind::UnknownMode);
        assert_eq!(eff.notes[1].kind, NoteKind::Substituted);
        assert_eq!(eff.settings.approval_mode, QwenApproval::Default);
    }
}
