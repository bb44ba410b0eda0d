//! Kimi CLI (`kimi-cli`) print mode (`kimi --print`): which tools the agent gets.
//!
//! `kimi --print` auto-approves every tool call and cannot ask; `--plan` does not restrict it
//! either (measured with 1.51.0: a shell command still ran). What it does honour is an agent
//! file (`--agent-file`) that extends the built-in agent and excludes tools, so the read-only
//! modes run an agent without the tools that write files, run commands or start sub-agents.
//! Approvals over ACP (`kimi acp`) are unaffected: there every mode is the bridge's policy.
//!
//! | requested | agent | exact? |
//! |---|---|---|
//! | default | the built-in agent | no: every tool runs without asking |
//! | acceptEdits / autoEdit | the built-in agent | no: commands run without asking too |
//! | plan | read-only agent ([`READ_ONLY_EXCLUDED`] removed) | no: no plan mode in print mode, read-only tools instead |
//! | sandbox | read-only agent | yes |
//! | bypassPermissions | the built-in agent | yes |
//! | yolo | the built-in agent | yes |
//!
//! ```
//! use permission_mapper::{kimi, PermissionMode};
//!
//! let s = kimi::to_provider(PermissionMode::Sandbox);
//! assert!(s.agent_file().unwrap().contains("kimi_cli.tools.shell:Shell"));
//! assert!(kimi::to_provider(PermissionMode::Yolo).agent_file().is_none());
//! assert!(kimi::effective_print(&PermissionMode::parse("sandbox")).exact);
//! ```

use serde::Serialize;

use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "kimi";

/// The built-in tools a read-only agent goes without: writing files, running commands,
/// stopping background tasks, sub-agents (which have their own tools) and plan-mode switches.
pub const READ_ONLY_EXCLUDED: &[&str] = &[
    "kimi_cli.tools.shell:Shell",
    "kimi_cli.tools.file:WriteFile",
    "kimi_cli.tools.file:StrReplaceFile",
    "kimi_cli.tools.background:TaskStop",
    "kimi_cli.tools.agent:Agent",
    "kimi_cli.tools.plan:ExitPlanMode",
    "kimi_cli.tools.plan.enter:EnterPlanMode",
];

/// What the kimi print-mode channel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KimiSettings {
    /// Built-in tools removed from the agent; `None` runs the built-in agent unchanged.
    pub exclude_tools: Option<&'static [&'static str]>,
}

impl KimiSettings {
    /// The agent file (YAML) to pass with `--agent-file`, or `None` for the built-in agent.
    pub fn agent_file(&self) -> Option<String> {
        let tools = self.exclude_tools?;
        let mut yaml = String::from("version: 1\nagent:\n  extend: default\n  exclude_tools:\n");
        for tool in tools {
            yaml.push_str(&format!("    - \"{tool}\"\n"));
        }
        Some(yaml)
    }
}

/// Maps a unified mode to what the print-mode channel runs (see the table above).
pub const fn to_provider(mode: PermissionMode) -> KimiSettings {
    let exclude_tools = match mode {
        PermissionMode::Plan | PermissionMode::Sandbox => Some(READ_ONLY_EXCLUDED),
        PermissionMode::Default
        | PermissionMode::AcceptEdits
        | PermissionMode::BypassPermissions
        | PermissionMode::Yolo => None,
    };
    KimiSettings { exclude_tools }
}

/// The effective-mode report for a `kimi --print` run.
///
/// ```
/// use permission_mapper::{kimi, NoteKind, PermissionMode};
/// let eff = kimi::effective_print(&PermissionMode::parse("default"));
/// assert!(!eff.exact);
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// ```
pub fn effective_print(requested: &RequestedMode) -> Effective<KimiSettings> {
    let settings = to_provider(requested.mode);
    let substitution = match requested.mode {
        PermissionMode::Default => Some(
            "kimi --print cannot ask for approval: every tool call (commands and edits \
             included) runs without asking; use sandbox for read-only tools, or --transport acp \
             for approvals",
        ),
        PermissionMode::AcceptEdits => Some(
            "kimi --print cannot ask for approval: edits run without asking as requested, but \
             so do shell commands; use sandbox for read-only tools",
        ),
        PermissionMode::Plan => Some(
            "kimi --print has no plan mode that restricts tools: ran a read-only agent instead \
             (no shell, no file writes, no sub-agents)",
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
        // (mode, read-only agent, exact)
        let table = [
            (PermissionMode::Default, false, false),
            (PermissionMode::AcceptEdits, false, false),
            (PermissionMode::Plan, true, false),
            (PermissionMode::Sandbox, true, true),
            (PermissionMode::BypassPermissions, false, true),
            (PermissionMode::Yolo, false, true),
        ];
        assert_mapping_table(&table, effective_print, |mode, settings, read_only| {
            assert_eq!(settings.agent_file().is_some(), *read_only, "{mode}");
        });
    }

    #[test]
    fn the_read_only_agent_extends_the_default_and_drops_every_writing_tool() {
        let yaml = to_provider(PermissionMode::Sandbox).agent_file().unwrap();
        assert!(yaml.starts_with("version: 1\nagent:\n  extend: default\n"));
        for tool in ["Shell", "WriteFile", "StrReplaceFile", "Agent"] {
            assert!(yaml.contains(&format!(":{tool}\"")), "{tool}: {yaml}");
        }
        assert!(!yaml.contains("ReadFile"));
    }
}
