//! opencode (`opencode-ai`): its permission config (`OPENCODE_PERMISSION`, JSON) and, for the
//! one-shot `opencode run`, the agent.
//!
//! opencode decides per tool family: `"allow"`, `"ask"` or `"deny"` (a denied tool is not even
//! offered to the model). Over ACP an `ask` becomes an approval request the bridge answers; in
//! `opencode run` nobody can answer, so opencode **auto-rejects** every `ask` (the call fails
//! with "The user rejected permission…" and the run ends). Both transports use the same config:
//!
//! | requested | `OPENCODE_PERMISSION` | `run` agent | `opencode run`: exact? |
//! |---|---|---|---|
//! | default | edit, bash, webfetch `ask` | (default) | no: what needs approval is refused, nobody can approve it |
//! | acceptEdits / autoEdit | edit `allow`; bash, webfetch `ask` | (default) | no: commands and fetches are refused |
//! | plan | edit, bash `deny`; webfetch `ask` | `plan` | no: web fetches are refused |
//! | sandbox | edit, bash `deny`; webfetch `ask` | (default) | no: web fetches are refused |
//! | bypassPermissions | all `allow` | (default) | yes |
//! | yolo | all `allow` | (default) | yes |
//!
//! ```
//! use permission_mapper::{opencode, PermissionMode};
//!
//! let s = opencode::to_provider(PermissionMode::Plan);
//! assert_eq!(s.permission, r#"{"edit":"deny","bash":"deny","webfetch":"ask"}"#);
//! assert_eq!(s.agent, Some("plan"));
//! assert_eq!(opencode::from_provider(s.permission), PermissionMode::Sandbox);
//! assert!(opencode::effective_run(&PermissionMode::parse("yolo")).exact);
//! ```

use serde::Serialize;

use crate::effective::Effective;
use crate::{PermissionMode, RequestedMode};

/// Provider id used in [`Effective::provider`].
pub const PROVIDER: &str = "opencode";

/// The environment variable opencode reads its permission config from.
pub const PERMISSION_ENV: &str = "OPENCODE_PERMISSION";

const ASK: &str = r#"{"edit":"ask","bash":"ask","webfetch":"ask"}"#;
const ACCEPT_EDITS: &str = r#"{"edit":"allow","bash":"ask","webfetch":"ask"}"#;
const READ_ONLY: &str = r#"{"edit":"deny","bash":"deny","webfetch":"ask"}"#;
const ALLOW: &str = r#"{"edit":"allow","bash":"allow","webfetch":"allow"}"#;

/// What the opencode channels pass to the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpencodeSettings {
    /// The value of `OPENCODE_PERMISSION`.
    pub permission: &'static str,
    /// `opencode run --agent <name>` (`plan` for the plan mode); `None` keeps the default agent.
    pub agent: Option<&'static str>,
}

/// Maps a unified mode to opencode's settings (see the table above).
pub const fn to_provider(mode: PermissionMode) -> OpencodeSettings {
    let (permission, agent) = match mode {
        PermissionMode::Default => (ASK, None),
        PermissionMode::AcceptEdits => (ACCEPT_EDITS, None),
        PermissionMode::Plan => (READ_ONLY, Some("plan")),
        PermissionMode::Sandbox => (READ_ONLY, None),
        PermissionMode::BypassPermissions | PermissionMode::Yolo => (ALLOW, None),
    };
    OpencodeSettings { permission, agent }
}

/// The mode a permission config amounts to: nothing `ask`ed or denied is `yolo`; edit and bash
/// denied is `sandbox`; edit allowed with bash not is `acceptEdits`; anything else `default`.
/// A value that is not a JSON object reads as `default` (opencode's own default asks).
///
/// ```
/// use permission_mapper::{opencode, PermissionMode};
/// assert_eq!(opencode::from_provider(r#"{"bash":"allow","edit":"allow","webfetch":"allow"}"#), PermissionMode::Yolo);
/// assert_eq!(opencode::from_provider(r#"{"edit":"allow","bash":"ask"}"#), PermissionMode::AcceptEdits);
/// assert_eq!(opencode::from_provider("nonsense"), PermissionMode::Default);
/// ```
pub fn from_provider(permission: &str) -> PermissionMode {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(permission) else {
        return PermissionMode::Default;
    };
    let get = |key: &str| map.get(key).and_then(|v| v.as_str()).unwrap_or("ask");
    match (get("edit"), get("bash")) {
        ("deny", "deny") => PermissionMode::Sandbox,
        ("allow", "allow") if get("webfetch") == "allow" => PermissionMode::Yolo,
        ("allow", _) => PermissionMode::AcceptEdits,
        _ => PermissionMode::Default,
    }
}

/// The tool families `ask`ed in `mode`, which `opencode run` refuses (nobody can approve).
pub fn refused_in_run(mode: PermissionMode) -> &'static [&'static str] {
    match mode {
        PermissionMode::Default => &["edit", "bash", "webfetch"],
        PermissionMode::AcceptEdits => &["bash", "webfetch"],
        PermissionMode::Plan | PermissionMode::Sandbox => &["webfetch"],
        PermissionMode::BypassPermissions | PermissionMode::Yolo => &[],
    }
}

/// The effective-mode report for a one-shot `opencode run`: what needs approval is refused.
///
/// ```
/// use permission_mapper::{opencode, NoteKind, PermissionMode};
/// let eff = opencode::effective_run(&PermissionMode::parse("default"));
/// assert!(!eff.exact);
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// assert!(eff.notes[0].message.contains("refuses"));
/// ```
pub fn effective_run(requested: &RequestedMode) -> Effective<OpencodeSettings> {
    let settings = to_provider(requested.mode);
    let refused = refused_in_run(requested.mode);
    let substitution = (!refused.is_empty()).then(|| {
        format!(
            "opencode run cannot ask for approval: in the {} mode it refuses what would need \
             one ({}); use --transport acp for approvals, or bypassPermissions to allow them",
            requested.mode,
            refused.join(", ")
        )
    });
    Effective::substituted(PROVIDER, requested, settings, substitution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::assert_mapping_table;

    #[test]
    fn mapping_table() {
        // (mode, (config reads back as, agent), exact in run)
        let table = [
            (
                PermissionMode::Default,
                (PermissionMode::Default, None),
                false,
            ),
            (
                PermissionMode::AcceptEdits,
                (PermissionMode::AcceptEdits, None),
                false,
            ),
            (
                PermissionMode::Plan,
                (PermissionMode::Sandbox, Some("plan")),
                false,
            ),
            (
                PermissionMode::Sandbox,
                (PermissionMode::Sandbox, None),
                false,
            ),
            (
                PermissionMode::BypassPermissions,
                (PermissionMode::Yolo, None),
                true,
            ),
            (PermissionMode::Yolo, (PermissionMode::Yolo, None), true),
        ];
        assert_mapping_table(&table, effective_run, |mode, settings, (back, agent)| {
            assert_eq!(from_provider(settings.permission), *back, "{mode}");
            assert_eq!(settings.agent, *agent, "{mode}");
            assert!(serde_json::from_str::<serde_json::Value>(settings.permission).is_ok());
        });
    }

    #[test]
    fn read_only_modes_deny_edits_and_commands() {
        for mode in PermissionMode::ALL {
            if mode.unified() == crate::UnifiedMode::Sandbox {
                let config: serde_json::Value =
                    serde_json::from_str(to_provider(mode).permission).unwrap();
                assert_eq!(config["edit"], "deny", "{mode}");
                assert_eq!(config["bash"], "deny", "{mode}");
            }
        }
    }
}
