//! Gemini CLI's headless mode (`gemini -p … --output-format stream-json`): `--approval-mode`.
//!
//! Headless Gemini cannot ask for approval: a tool that its approval mode would confirm is not
//! even offered to the model, and a call to it fails with `tool_not_registered` (Gemini CLI
//! 0.61.0; `shared/reference/real-clis-anthropic-gemini.md` §3.6). The ACP transport
//! (`gemini --acp`) is the one with interactive approvals.
//!
//! | requested | flag | what runs without asking | exact? |
//! |---|---|---|---|
//! | default | `--approval-mode default` | reads and searches; edits and commands are refused | no: nothing can be asked |
//! | acceptEdits / autoEdit | `--approval-mode auto_edit` | reads and edits; commands are refused | no: commands cannot be asked |
//! | plan | `--approval-mode plan` | read-only (the agent plans) | yes |
//! | sandbox | `--approval-mode plan` | read-only | yes |
//! | bypassPermissions | `--approval-mode yolo` | everything | yes |
//! | yolo | `--approval-mode yolo` | everything | yes |
//!
//! The deprecated `--allowed-tools` is not used: the approval mode says everything the bridge
//! needs, and an explicit flag overrides the user's `general.defaultApprovalMode`.
//!
//! ```
//! use permission_mapper::{gemini, PermissionMode};
//!
//! assert_eq!(gemini::to_provider(PermissionMode::Yolo).args(), ["--approval-mode", "yolo"]);
//! assert_eq!(gemini::to_provider(PermissionMode::AcceptEdits).args(), ["--approval-mode", "auto_edit"]);
//! assert_eq!(gemini::from_provider("auto_edit"), Ok(PermissionMode::AcceptEdits));
//! ```

use serde::Serialize;

use crate::cli_enum::cli_enum;
use crate::effective::Effective;
use crate::{ParseError, PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "gemini";

cli_enum! {
    /// A value of Gemini CLI's `--approval-mode`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum GeminiApproval {
        /// `default`: tools that need a confirmation are not offered in headless mode.
        Default => "default",
        /// `auto_edit`: edit tools run without asking; commands are not offered.
        AutoEdit => "auto_edit",
        /// `plan`: read-only planning mode.
        Plan => "plan",
        /// `yolo`: every tool runs without asking.
        Yolo => "yolo",
    }
    /// Every value.
    const ALL;
    /// Case-insensitive; only Gemini's own values.
    impl FromStr else ParseError::UnknownMode;
}

impl GeminiApproval {
    /// The unified mode this approval mode amounts to.
    pub const fn to_unified(self) -> PermissionMode {
        match self {
            GeminiApproval::Default => PermissionMode::Default,
            GeminiApproval::AutoEdit => PermissionMode::AcceptEdits,
            GeminiApproval::Plan => PermissionMode::Plan,
            GeminiApproval::Yolo => PermissionMode::Yolo,
        }
    }
}

/// What the gemini JSON transport passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GeminiSettings {
    /// `--approval-mode`.
    pub approval_mode: GeminiApproval,
}

impl GeminiSettings {
    /// The argv fragment (`--approval-mode <m>`).
    pub fn args(&self) -> Vec<String> {
        vec![
            "--approval-mode".to_string(),
            self.approval_mode.as_str().to_string(),
        ]
    }
}

/// Maps a unified mode to Gemini's headless settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> GeminiSettings {
    let approval_mode = match mode {
        PermissionMode::Default => GeminiApproval::Default,
        PermissionMode::AcceptEdits => GeminiApproval::AutoEdit,
        PermissionMode::Plan | PermissionMode::Sandbox => GeminiApproval::Plan,
        PermissionMode::BypassPermissions | PermissionMode::Yolo => GeminiApproval::Yolo,
    };
    GeminiSettings { approval_mode }
}

/// Reads a Gemini approval mode back into a unified mode.
///
/// ```
/// use permission_mapper::{gemini, PermissionMode};
/// assert_eq!(gemini::from_provider("yolo"), Ok(PermissionMode::Yolo));
/// assert!(gemini::from_provider("never").is_err());
/// ```
pub fn from_provider(mode: &str) -> Result<PermissionMode, ParseError> {
    mode.parse::<GeminiApproval>()
        .map(GeminiApproval::to_unified)
}

/// The effective-mode report for a headless Gemini run.
///
/// ```
/// use permission_mapper::{gemini, PermissionMode};
/// assert!(!gemini::effective(&PermissionMode::parse("default")).exact);
/// assert!(gemini::effective(&PermissionMode::parse("bypassPermissions")).exact);
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<GeminiSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default => Some(
            "Gemini CLI cannot ask for approval in headless (JSON) mode: tools that need one \
             (shell commands, file edits, web fetches) are not offered to the model and calls to \
             them are refused; use acceptEdits for edits, bypassPermissions/yolo to run \
             everything, or the acp transport for interactive approvals",
        ),
        PermissionMode::AcceptEdits => Some(
            "Gemini CLI cannot ask for approval in headless (JSON) mode: edits run without \
             asking, shell commands are refused; use bypassPermissions/yolo to run them, or the \
             acp transport for interactive approvals",
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
        // (mode, approval mode, exact)
        let table: [(PermissionMode, &str, bool); 6] = [
            (PermissionMode::Default, "default", false),
            (PermissionMode::AcceptEdits, "auto_edit", false),
            (PermissionMode::Plan, "plan", true),
            (PermissionMode::Sandbox, "plan", true),
            (PermissionMode::BypassPermissions, "yolo", true),
            (PermissionMode::Yolo, "yolo", true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, approval| {
            assert_eq!(settings.args(), ["--approval-mode", approval], "{mode}");
        });
        let unknown = effective(&PermissionMode::parse("auto"));
        assert_eq!(unknown.settings.approval_mode, GeminiApproval::Default);
        assert_eq!(unknown.notes[0].kind, NoteKind::UnknownMode);
    }

    #[test]
    fn approval_modes_round_trip() {
        for m in GeminiApproval::ALL {
            assert_eq!(m.as_str().parse::<GeminiApproval>(), Ok(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(to_provider(m.to_unified()).approval_mode, m);
        }
        assert_eq!(
            "AUTO_EDIT".parse::<GeminiApproval>(),
            Ok(GeminiApproval::AutoEdit)
        );
        assert!(matches!(
            from_provider("autoEdit"),
            Err(ParseError::UnknownMode(_))
        ));
    }

    #[test]
    fn produced_flags_read_back_within_the_requested_core() {
        for mode in PermissionMode::ALL {
            let back = to_provider(mode).approval_mode.to_unified();
            assert_eq!(back.unified(), mode.unified(), "{mode}");
        }
    }
}
