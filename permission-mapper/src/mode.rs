//! The mode vocabulary: what a request may ask for, and its unified core.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ParseError;

/// The permission mode a request asked for, after parsing.
///
/// Six values: the five the IDE plugins send (`default`, `acceptEdits` (spelled `autoEdit` too),
/// `plan`, `bypassPermissions`) plus the two unified ones (`sandbox`, `yolo`). They are kept apart,
/// rather than collapsed to their [`UnifiedMode`] core, because providers treat them differently:
/// Claude has a real `plan` mode, and Codex runs `bypassPermissions` in the workspace sandbox but
/// `yolo` with full access.
///
/// Serialized in the plugin's spelling (`"acceptEdits"`, `"bypassPermissions"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Ask before anything that is not read-only.
    #[default]
    Default,
    /// Apply file edits without asking; still ask before running commands.
    AcceptEdits,
    /// Read and plan only; nothing is changed until the plan is approved.
    Plan,
    /// Skip every approval prompt (the provider's own sandbox, if any, still applies).
    BypassPermissions,
    /// Read-only: no file changes, no side effects.
    Sandbox,
    /// No prompts and no sandbox.
    Yolo,
}

/// How a raw mode string was understood by [`PermissionMode::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Recognition {
    /// A spelling from the vocabulary (case-insensitive).
    Known,
    /// Null, empty or blank: `default`, silently.
    Missing,
    /// Not in the vocabulary (for example `auto`): `default`, and the caller should warn.
    Unknown,
}

/// A parsed request mode that keeps what the client actually sent.
///
/// ```
/// use permission_mapper::{PermissionMode, Recognition, RequestedMode};
///
/// let r = RequestedMode::from_option(None);
/// assert_eq!((r.mode, r.recognition), (PermissionMode::Default, Recognition::Missing));
///
/// let r = PermissionMode::parse("BYPASSPERMISSIONS");
/// assert_eq!(r.raw.as_deref(), Some("BYPASSPERMISSIONS"));
/// assert_eq!(r.mode, PermissionMode::BypassPermissions);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestedMode {
    /// The string as received; `None` when the field was absent or null.
    pub raw: Option<String>,
    /// What it means.
    pub mode: PermissionMode,
    /// Whether `raw` was recognised.
    pub recognition: Recognition,
}

impl RequestedMode {
    /// Parses an optional raw value (a JSON field that may be absent or null). Never fails.
    pub fn from_option(raw: Option<&str>) -> Self {
        match raw {
            None => RequestedMode {
                raw: None,
                mode: PermissionMode::Default,
                recognition: Recognition::Missing,
            },
            Some(s) => PermissionMode::parse(s),
        }
    }

    /// The warning a caller should show, if the raw value was not understood.
    ///
    /// ```
    /// use permission_mapper::PermissionMode;
    /// let w = PermissionMode::parse("auto").warning().unwrap();
    /// assert!(w.contains("\"auto\""), "{w}");
    /// ```
    pub fn warning(&self) -> Option<String> {
        match (self.recognition, &self.raw) {
            (Recognition::Unknown, Some(raw)) => Some(format!(
                "unknown permission mode {:?}; using \"default\" (known: default, acceptEdits, \
                 autoEdit, plan, bypassPermissions, sandbox, yolo)",
                truncate(raw, 64)
            )),
            _ => None,
        }
    }
}

impl From<PermissionMode> for RequestedMode {
    /// A mode chosen in code: recorded as if the client had sent its canonical spelling.
    fn from(mode: PermissionMode) -> Self {
        RequestedMode {
            raw: Some(mode.as_str().to_owned()),
            mode,
            recognition: Recognition::Known,
        }
    }
}

/// The three-valued core of the unified vocabulary (`permission-mapper.js` constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UnifiedMode {
    /// Ask before acting.
    Default,
    /// Read-only.
    Sandbox,
    /// No prompts.
    Yolo,
}

impl UnifiedMode {
    /// The canonical spelling: `default`, `sandbox` or `yolo`.
    pub const fn as_str(self) -> &'static str {
        match self {
            UnifiedMode::Default => "default",
            UnifiedMode::Sandbox => "sandbox",
            UnifiedMode::Yolo => "yolo",
        }
    }
}

impl fmt::Display for UnifiedMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The alias `normalizeUnifiedMode` keeps next to the core, when there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ModeAlias {
    /// `acceptEdits` / `autoEdit` (core: default).
    AcceptEdits,
    /// `bypassPermissions` (core: yolo).
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, in declaration order (handy for table tests).
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::Sandbox,
        PermissionMode::Yolo,
    ];

    /// Parses a raw mode string leniently; never fails.
    ///
    /// Case-insensitive, surrounding whitespace ignored. `autoEdit` is `acceptEdits`. Empty or
    /// blank is `default` ([`Recognition::Missing`]); anything else outside the vocabulary, `auto`
    /// included, is `default` with [`Recognition::Unknown`] (see [`RequestedMode::warning`]).
    ///
    /// ```
    /// use permission_mapper::{PermissionMode, Recognition};
    /// assert_eq!(PermissionMode::parse("Plan").mode, PermissionMode::Plan);
    /// assert_eq!(PermissionMode::parse("").recognition, Recognition::Missing);
    /// assert_eq!(PermissionMode::parse("auto").recognition, Recognition::Unknown);
    /// ```
    pub fn parse(raw: &str) -> RequestedMode {
        let trimmed = raw.trim();
        let (mode, recognition) = if trimmed.is_empty() {
            (PermissionMode::Default, Recognition::Missing)
        } else {
            match Self::lookup(trimmed) {
                Some(mode) => (mode, Recognition::Known),
                None => (PermissionMode::Default, Recognition::Unknown),
            }
        };
        RequestedMode {
            raw: Some(raw.to_owned()),
            mode,
            recognition,
        }
    }

    fn lookup(s: &str) -> Option<PermissionMode> {
        const TABLE: [(&str, PermissionMode); 7] = [
            ("default", PermissionMode::Default),
            ("acceptedits", PermissionMode::AcceptEdits),
            ("autoedit", PermissionMode::AcceptEdits),
            ("plan", PermissionMode::Plan),
            ("bypasspermissions", PermissionMode::BypassPermissions),
            ("sandbox", PermissionMode::Sandbox),
            ("yolo", PermissionMode::Yolo),
        ];
        TABLE
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, mode)| mode)
    }

    /// The canonical spelling (what the plugin's webview uses, plus `sandbox` and `yolo`).
    pub const fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Sandbox => "sandbox",
            PermissionMode::Yolo => "yolo",
        }
    }

    /// The unified core (`normalizeUnifiedMode` "core" column).
    ///
    /// ```
    /// use permission_mapper::{PermissionMode, UnifiedMode};
    /// assert_eq!(PermissionMode::BypassPermissions.unified(), UnifiedMode::Yolo);
    /// assert_eq!(PermissionMode::Plan.unified(), UnifiedMode::Sandbox);
    /// ```
    pub const fn unified(self) -> UnifiedMode {
        match self {
            PermissionMode::Default | PermissionMode::AcceptEdits => UnifiedMode::Default,
            PermissionMode::Plan | PermissionMode::Sandbox => UnifiedMode::Sandbox,
            PermissionMode::BypassPermissions | PermissionMode::Yolo => UnifiedMode::Yolo,
        }
    }

    /// The alias `normalizeUnifiedMode` keeps (its "alias" column), if any.
    pub const fn alias(self) -> Option<ModeAlias> {
        match self {
            PermissionMode::AcceptEdits => Some(ModeAlias::AcceptEdits),
            PermissionMode::BypassPermissions => Some(ModeAlias::BypassPermissions),
            _ => None,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = ParseError;

    /// Strict parsing: like [`PermissionMode::parse`] but an empty or unknown value is an error.
    ///
    /// ```
    /// use permission_mapper::{ParseError, PermissionMode};
    /// assert_eq!("autoEdit".parse::<PermissionMode>(), Ok(PermissionMode::AcceptEdits));
    /// assert!(matches!("auto".parse::<PermissionMode>(), Err(ParseError::UnknownMode(_))));
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::lookup(s.trim()).ok_or_else(|| ParseError::UnknownMode(truncate(s, 64)))
    }
}

/// Shortens user-supplied text for a message, on a char boundary.
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_spelling_round_trips() {
        for mode in PermissionMode::ALL {
            assert_eq!(PermissionMode::parse(mode.as_str()).mode, mode);
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
            assert_eq!(serde_json::from_str::<PermissionMode>(&json).unwrap(), mode);
        }
    }

    #[test]
    fn parse_keeps_raw_and_trims() {
        let r = PermissionMode::parse("  Yolo \n");
        assert_eq!(r.raw.as_deref(), Some("  Yolo \n"));
        assert_eq!(r.mode, PermissionMode::Yolo);
        assert_eq!(r.recognition, Recognition::Known);
        assert_eq!(
            PermissionMode::parse("   ").recognition,
            Recognition::Missing
        );
        assert!(PermissionMode::parse("   ").warning().is_none());
    }

    #[test]
    fn warning_is_bounded_and_escaped() {
        let long = format!("x\n{}", "y".repeat(10_000));
        let w = PermissionMode::parse(&long).warning().unwrap();
        assert!(w.len() < 300, "{}", w.len());
        assert!(!w.contains('\n'));
    }

    #[test]
    fn from_mode_is_known() {
        let r = RequestedMode::from(PermissionMode::Plan);
        assert_eq!(r.raw.as_deref(), Some("plan"));
        assert_eq!(r.recognition, Recognition::Known);
    }

    #[test]
    fn strict_parse_rejects_empty() {
        assert_eq!(
            "".parse::<PermissionMode>(),
            Err(ParseError::UnknownMode(String::new()))
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("ééé", 2), "éé…");
        assert_eq!(truncate("ab", 2), "ab");
    }
}
