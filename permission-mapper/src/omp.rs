//! oh-my-pi (`omp`, `@oh-my-pi/pi-coding-agent`): `--approval-mode` and the `--tools` allowlist.
//!
//! omp grades its tools in tiers (read, write, exec) and auto-approves up to the tier of its
//! approval mode: `always-ask` (read), `write` (read and write), `yolo` (all). Everything above
//! the tier needs an answer, and print mode has nobody to ask: such a call is **refused** (the
//! model gets "Tool … requires approval but no interactive UI available"). omp's own default
//! mode (`tools.approvalMode` in its settings) is `yolo`.
//!
//! | requested | flags | exact? |
//! |---|---|---|
//! | default | (none: omp's configured `tools.approvalMode`, `yolo` unless set) | no: omp cannot ask in print mode |
//! | acceptEdits / autoEdit | (none) | no: same |
//! | plan | `--approval-mode always-ask --tools read,grep,glob` | no: omp's plan mode needs its interactive UI; read-only tools is the nearest |
//! | sandbox | `--approval-mode always-ask --tools read,grep,glob` | yes |
//! | bypassPermissions | `--approval-mode yolo` | yes |
//! | yolo | `--approval-mode yolo` | yes |
//!
//! As for pi, the everyday modes leave omp as the user configured it (ai-bridge ignores
//! `permissionMode` for omp too); the effective-mode report says what that means.
//!
//! ```
//! use permission_mapper::{omp, PermissionMode};
//!
//! let s = omp::to_provider(PermissionMode::Sandbox);
//! assert_eq!(
//!     s.args(),
//!     ["--approval-mode", "always-ask", "--tools", "read,grep,glob"]
//! );
//! assert_eq!(omp::to_provider(PermissionMode::Yolo).args(), ["--approval-mode", "yolo"]);
//! assert_eq!(omp::from_provider("write"), Ok(PermissionMode::AcceptEdits));
//! ```

use serde::Serialize;

use crate::cli_enum::cli_enum;
use crate::effective::Effective;
use crate::{ParseError, PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "omp";

/// omp's built-in tools of the read tier that only look at files (no network, no memory).
pub const READ_ONLY_TOOLS: &[&str] = &["read", "grep", "glob"];

cli_enum! {
    /// A value of omp's `--approval-mode` (and of `tools.approvalMode` in its settings).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum OmpApproval {
        /// `always-ask`: only read-tier tools run without approval.
        AlwaysAsk => "always-ask",
        /// `write`: read- and write-tier tools run without approval.
        Write => "write",
        /// `yolo`: every tool runs without approval.
        Yolo => "yolo",
    }
    /// Every value, in tier order.
    const ALL;
    /// Case-insensitive; only omp's own values.
    impl FromStr else ParseError::UnknownMode;
}

impl OmpApproval {
    /// What the mode amounts to in print mode, where nothing can be asked: `always-ask` refuses
    /// every write and command (`sandbox`), `write` allows edits and refuses commands
    /// (`acceptEdits`, minus the asking), `yolo` is `yolo`.
    pub const fn to_unified(self) -> PermissionMode {
        match self {
            OmpApproval::AlwaysAsk => PermissionMode::Sandbox,
            OmpApproval::Write => PermissionMode::AcceptEdits,
            OmpApproval::Yolo => PermissionMode::Yolo,
        }
    }
}

/// What the omp channel passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OmpSettings {
    /// `--approval-mode`; `None` keeps omp's configured `tools.approvalMode`.
    pub approval_mode: Option<OmpApproval>,
    /// The `--tools` allowlist; `None` keeps every tool.
    pub tools: Option<&'static [&'static str]>,
}

impl OmpSettings {
    /// The argv fragment (`--approval-mode <m>`, `--tools <list>`), possibly empty.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(mode) = self.approval_mode {
            args.extend(["--approval-mode".to_string(), mode.as_str().to_string()]);
        }
        if let Some(tools) = self.tools {
            args.extend(["--tools".to_string(), tools.join(",")]);
        }
        args
    }
}

/// Maps a unified mode to omp's settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> OmpSettings {
    match mode {
        PermissionMode::Plan | PermissionMode::Sandbox => OmpSettings {
            approval_mode: Some(OmpApproval::AlwaysAsk),
            tools: Some(READ_ONLY_TOOLS),
        },
        PermissionMode::BypassPermissions | PermissionMode::Yolo => OmpSettings {
            approval_mode: Some(OmpApproval::Yolo),
            tools: None,
        },
        PermissionMode::Default | PermissionMode::AcceptEdits => OmpSettings {
            approval_mode: None,
            tools: None,
        },
    }
}

/// Reads an omp approval mode (`--approval-mode`, or `tools.approvalMode` from its settings)
/// back into a unified mode (see [`OmpApproval::to_unified`]).
///
/// ```
/// use permission_mapper::{omp, PermissionMode};
/// assert_eq!(omp::from_provider("always-ask"), Ok(PermissionMode::Sandbox));
/// assert!(omp::from_provider("never").is_err());
/// ```
pub fn from_provider(mode: &str) -> Result<PermissionMode, ParseError> {
    mode.parse::<OmpApproval>().map(OmpApproval::to_unified)
}

/// The effective-mode report for an omp run.
///
/// ```
/// use permission_mapper::{omp, PermissionMode};
/// assert!(!omp::effective(&PermissionMode::parse("acceptEdits")).exact);
/// assert!(omp::effective(&PermissionMode::parse("bypassPermissions")).exact);
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<OmpSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default | PermissionMode::AcceptEdits => Some(
            "omp cannot ask for approval in print mode: it applies its configured \
             tools.approvalMode (yolo unless set: every tool, commands included, runs without \
             asking) and refuses what that mode does not allow; use sandbox for read-only tools",
        ),
        PermissionMode::Plan => Some(
            "omp's plan mode needs its interactive UI: applied read-only tools instead (read, \
             grep, glob; writes and commands are refused)",
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
        // (mode, argv, exact)
        let table: [(PermissionMode, &[&str], bool); 6] = [
            (PermissionMode::Default, &[], false),
            (PermissionMode::AcceptEdits, &[], false),
            (
                PermissionMode::Plan,
                &["--approval-mode", "always-ask", "--tools", "read,grep,glob"],
                false,
            ),
            (
                PermissionMode::Sandbox,
                &["--approval-mode", "always-ask", "--tools", "read,grep,glob"],
                true,
            ),
            (
                PermissionMode::BypassPermissions,
                &["--approval-mode", "yolo"],
                true,
            ),
            (PermissionMode::Yolo, &["--approval-mode", "yolo"], true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, args| {
            assert_eq!(settings.args(), *args, "{mode}");
        });
    }

    #[test]
    fn approval_modes_round_trip() {
        for m in OmpApproval::ALL {
            assert_eq!(m.as_str().parse::<OmpApproval>(), Ok(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
        assert_eq!("YOLO".parse::<OmpApproval>(), Ok(OmpApproval::Yolo));
        assert!(matches!(
            from_provider("bypass"),
            Err(ParseError::UnknownMode(_))
        ));
    }

    #[test]
    fn produced_flags_read_back_within_the_requested_core() {
        for mode in PermissionMode::ALL {
            if let Some(approval) = to_provider(mode).approval_mode {
                assert_eq!(approval.to_unified().unified(), mode.unified(), "{mode}");
            }
        }
    }
}
