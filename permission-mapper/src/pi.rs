//! pi (`@mariozechner/pi-coding-agent`): the tool allowlist (`--tools`).
//!
//! pi has no approval system: in print mode every tool it offers the model just runs. The only
//! restriction it supports is which tools exist for the turn, `--tools <comma list>` (its own
//! help: `--tools read,grep,find,ls` is "read-only mode").
//!
//! | requested | `--tools` | exact? |
//! |---|---|---|
//! | default | (none: pi's default set read, bash, edit, write) | no: pi cannot ask, every tool runs without approval |
//! | acceptEdits / autoEdit | (none) | no: commands (bash) run without approval too |
//! | plan | `read,grep,find,ls` | no: pi has no plan mode; read-only tools is the nearest |
//! | sandbox | `read,grep,find,ls` | yes |
//! | bypassPermissions | (none) | yes |
//! | yolo | (none) | yes |
//!
//! The two everyday modes keep pi's full tool set rather than a read-only one because that is
//! what the plugin's ai-bridge does (it ignores `permissionMode` for pi), so a plugin that
//! switches to the bridge keeps a working agent; the effective-mode report says that nothing
//! is asked. Reading back ([`from_provider`]) maps an allowlist to the mode it amounts to.
//!
//! ```
//! use permission_mapper::{pi, PermissionMode};
//!
//! let s = pi::to_provider(PermissionMode::Sandbox);
//! assert_eq!(s.args(), ["--tools", "read,grep,find,ls"]);
//! assert!(pi::to_provider(PermissionMode::Default).args().is_empty());
//! assert_eq!(pi::from_provider(Some(&["read", "ls"])), PermissionMode::Sandbox);
//! assert_eq!(pi::from_provider(None), PermissionMode::Yolo);
//! ```

use serde::Serialize;

use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "pi";

/// pi's built-in tools that cannot change anything (`grep`, `find`, `ls` are off by default and
/// enabled by naming them).
pub const READ_ONLY_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// pi's built-in tools that write files or run commands.
pub const WRITING_TOOLS: &[&str] = &["bash", "edit", "write"];

/// What the pi channel passes to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PiSettings {
    /// The `--tools` allowlist; `None` keeps pi's default tool set.
    pub tools: Option<&'static [&'static str]>,
}

impl PiSettings {
    /// The argv fragment: `["--tools", "read,grep,find,ls"]`, or nothing.
    pub fn args(&self) -> Vec<String> {
        match self.tools {
            Some(tools) => vec!["--tools".into(), tools.join(",")],
            None => Vec::new(),
        }
    }
}

/// Maps a unified mode to pi's settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> PiSettings {
    let tools = match mode {
        PermissionMode::Plan | PermissionMode::Sandbox => Some(READ_ONLY_TOOLS),
        PermissionMode::Default
        | PermissionMode::AcceptEdits
        | PermissionMode::BypassPermissions
        | PermissionMode::Yolo => None,
    };
    PiSettings { tools }
}

/// The mode an allowlist amounts to: `None` (every tool, nothing asked) is `yolo`; a list with
/// only read-only tools is `sandbox`; a list with `edit` or `write` but not `bash` is
/// `acceptEdits` in effect, except that nothing is asked (it reads back as `acceptEdits`); a list
/// with `bash` is `yolo`. Unknown names (extension tools) count as writing.
///
/// ```
/// use permission_mapper::{pi, PermissionMode};
/// assert_eq!(pi::from_provider(Some(&["read", "edit"])), PermissionMode::AcceptEdits);
/// assert_eq!(pi::from_provider(Some(&["read", "bash"])), PermissionMode::Yolo);
/// ```
pub fn from_provider(tools: Option<&[&str]>) -> PermissionMode {
    let Some(tools) = tools else {
        return PermissionMode::Yolo;
    };
    let writing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !READ_ONLY_TOOLS.contains(t))
        .collect();
    if writing.is_empty() {
        PermissionMode::Sandbox
    } else if writing.iter().all(|t| matches!(*t, "edit" | "write")) {
        PermissionMode::AcceptEdits
    } else {
        PermissionMode::Yolo
    }
}

/// The effective-mode report for a pi run.
///
/// ```
/// use permission_mapper::{pi, NoteKind, PermissionMode};
/// let eff = pi::effective(&PermissionMode::parse("default"));
/// assert!(!eff.exact);
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// assert!(pi::effective(&PermissionMode::parse("sandbox")).exact);
/// ```
pub fn effective(requested: &RequestedMode) -> Effective<PiSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default => Some(
            "pi has no approval prompts: every tool it offers (read, bash, edit, write) runs \
             without asking; use sandbox for read-only tools or bypassPermissions to say so",
        ),
        PermissionMode::AcceptEdits => Some(
            "pi has no approval prompts: edits run without asking as requested, but so do \
             commands (bash); use sandbox for read-only tools",
        ),
        PermissionMode::Plan => Some(
            "pi has no plan mode: applied its read-only tool set instead (read, grep, find, ls; \
             no edits, no commands)",
        ),
        PermissionMode::Sandbox | PermissionMode::BypassPermissions | PermissionMode::Yolo => None,
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
        // (mode, --tools, exact)
        let table = [
            (PermissionMode::Default, None, false),
            (PermissionMode::AcceptEdits, None, false),
            (PermissionMode::Plan, Some("read,grep,find,ls"), false),
            (PermissionMode::Sandbox, Some("read,grep,find,ls"), true),
            (PermissionMode::BypassPermissions, None, true),
            (PermissionMode::Yolo, None, true),
        ];
        assert_mapping_table(&table, effective, |mode, settings, tools| {
            assert_eq!(
                settings.tools.map(|t| t.join(",")).as_deref(),
                *tools,
                "{mode}"
            );
            let args = settings.args();
            match tools {
                Some(list) => assert_eq!(args, ["--tools", list]),
                None => assert!(args.is_empty()),
            }
        });
    }

    #[test]
    fn read_only_modes_never_offer_a_writing_tool() {
        for mode in PermissionMode::ALL {
            let tools = to_provider(mode).tools;
            if mode.unified() == crate::UnifiedMode::Sandbox {
                let tools = tools.expect("an allowlist");
                assert!(tools.iter().all(|t| !WRITING_TOOLS.contains(t)), "{mode}");
            }
        }
    }

    #[test]
    fn reading_back_what_is_produced_gives_a_mode_at_least_as_permissive() {
        for mode in PermissionMode::ALL {
            let back = from_provider(to_provider(mode).tools);
            let expected = match mode.unified() {
                crate::UnifiedMode::Sandbox => PermissionMode::Sandbox,
                _ => PermissionMode::Yolo,
            };
            assert_eq!(back, expected, "{mode}");
        }
        assert_eq!(from_provider(Some(&[])), PermissionMode::Sandbox);
        assert_eq!(
            from_provider(Some(&["read", "my_ext"])),
            PermissionMode::Yolo
        );
    }

    #[test]
    fn unknown_modes_are_reported_before_the_substitution() {
        let eff = effective(&PermissionMode::parse("auto"));
        assert_eq!(eff.notes[0].kind, NoteKind::UnknownMode);
        assert_eq!(eff.notes[1].kind, NoteKind::Substituted);
        assert!(eff.settings.tools.is_none());
    }
}
