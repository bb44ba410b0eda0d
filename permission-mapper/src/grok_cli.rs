//! The community Grok CLI (`@vibe-kit/grok-cli`, provider `grok-cli`): nothing to map.
//!
//! In headless mode (`--prompt`) the CLI sets its `allOperations` session flag: every file
//! edit and every bash command runs without asking, and it has no flag, setting or tool
//! allowlist that restricts that. So the mapping can only report:
//!
//! | requested | what runs | exact? | the channel |
//! |---|---|---|---|
//! | default | everything auto-approved | no | runs the turn, reports it |
//! | acceptEdits / autoEdit | everything auto-approved | no: commands too | runs the turn, reports it |
//! | plan | — | no | **refuses the turn**: nothing read-only can be run |
//! | sandbox | — | no | **refuses the turn** |
//! | bypassPermissions | everything auto-approved | yes | runs the turn |
//! | yolo | everything auto-approved | yes | runs the turn |
//!
//! A read-only request is refused rather than run with every operation auto-approved: that
//! would do exactly what the caller asked to exclude.
//!
//! ```
//! use permission_mapper::{grok_cli, PermissionMode};
//!
//! assert!(grok_cli::to_provider(PermissionMode::Default).runs);
//! assert!(!grok_cli::to_provider(PermissionMode::Sandbox).runs);
//! assert!(grok_cli::effective(&PermissionMode::parse("yolo")).exact);
//! ```

use serde::Serialize;

use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode, UnifiedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "grok-cli";

/// What the grok-cli channel does for a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrokCliSettings {
    /// The turn runs (with every operation auto-approved: the CLI's only behaviour); `false`
    /// for the read-only modes, which the channel refuses.
    pub runs: bool,
}

/// Maps a unified mode to what the channel does (see the table above).
pub const fn to_provider(mode: PermissionMode) -> GrokCliSettings {
    GrokCliSettings {
        runs: !matches!(mode.unified(), UnifiedMode::Sandbox),
    }
}

/// The effective-mode report for a grok-cli run.
///
/// ```
/// use permission_mapper::{grok_cli, NoteKind, PermissionMode};
/// let eff = grok_cli::effective(&PermissionMode::parse("default"));
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// assert!(eff.notes[0].message.contains("auto-approves"));
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<GrokCliSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default | PermissionMode::AcceptEdits => Some(
            "grok-cli auto-approves every operation in headless mode (file edits and bash \
             commands run without asking) and has no setting that restricts it",
        ),
        PermissionMode::Plan | PermissionMode::Sandbox => Some(
            "grok-cli has no read-only mode (headless mode auto-approves every edit and command): \
             the turn is refused; use another provider for read-only work",
        ),
        PermissionMode::BypassPermissions | PermissionMode::Yolo => None,
    };
    Effective::substituted(PROVIDER, requested, settings, substitution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::assert_mapping_table;

    #[test]
    fn mapping_table() {
        // (mode, runs, exact)
        let table = [
            (PermissionMode::Default, true, false),
            (PermissionMode::AcceptEdits, true, false),
            (PermissionMode::Plan, false, false),
            (PermissionMode::Sandbox, false, false),
            (PermissionMode::BypassPermissions, true, true),
            (PermissionMode::Yolo, true, true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, runs| {
            assert_eq!(settings.runs, *runs, "{mode}");
        });
    }

    #[test]
    fn missing_mode_is_default_and_reported() {
        let eff = effective(&RequestedMode::from_option(None));
        assert!(eff.settings.runs);
        assert!(!eff.exact);
    }
}
