//! The "effective mode" report.

use serde::Serialize;

use crate::RequestedMode;

/// What a provider will actually run with for a requested mode, and why it differs, if it does.
///
/// `S` is the provider's native settings ([`crate::claude::ClaudeSettings`],
/// [`crate::codex::CodexSettings`]). Serialized as
/// `{"provider","requested":{"raw","mode","recognition"},"settings":{…},"exact","notes":[{"kind","message"}]}`.
///
/// ```
/// use permission_mapper::{claude, NoteKind, PermissionMode};
///
/// let eff = claude::effective(&PermissionMode::parse("sandbox"), claude::ClaudeContext::default());
/// assert_eq!(eff.settings.permission_mode, claude::ClaudeMode::Plan);
/// assert!(!eff.exact);
/// assert_eq!(eff.notes[0].kind, NoteKind::Substituted);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Effective<S> {
    /// Provider id (`"claude"`, `"codex"`).
    pub provider: &'static str,
    /// The mode the client asked for, as received.
    pub requested: RequestedMode,
    /// The native settings that will be applied.
    pub settings: S,
    /// `true` when the settings honour the requested mode as asked (no note is a deviation).
    pub exact: bool,
    /// Everything worth telling the user, in order.
    pub notes: Vec<Note>,
}

impl<S> Effective<S> {
    pub(crate) fn new(
        provider: &'static str,
        requested: &RequestedMode,
        settings: S,
        mut notes: Vec<Note>,
    ) -> Self {
        if let Some(w) = requested.warning() {
            notes.insert(0, Note::new(NoteKind::UnknownMode, w));
        }
        let exact = !notes.iter().any(|n| n.kind.is_deviation());
        Effective {
            provider,
            requested: requested.clone(),
            settings,
            exact,
            notes,
        }
    }

    /// A report whose one provider note, if any, says what was applied instead of the requested
    /// mode ([`NoteKind::Substituted`]): the shape of every mapper whose only deviation is a
    /// substitution. `None` means the mode is honoured as asked.
    pub(crate) fn substituted(
        provider: &'static str,
        requested: &RequestedMode,
        settings: S,
        substitution: Option<impl Into<String>>,
    ) -> Self {
        let notes = substitution
            .map(|message| vec![Note::new(NoteKind::Substituted, message)])
            .unwrap_or_default();
        Effective::new(provider, requested, settings, notes)
    }
}

/// One line of an [`Effective`] report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// What kind of note this is.
    pub kind: NoteKind,
    /// A sentence for humans.
    pub message: String,
}

impl Note {
    pub(crate) fn new(kind: NoteKind, message: impl Into<String>) -> Self {
        Note {
            kind,
            message: message.into(),
        }
    }
}

/// The kind of a [`Note`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum NoteKind {
    /// The requested mode was not understood; `default` was used.
    UnknownMode,
    /// The provider has no exact equivalent; the nearest setting was applied instead.
    Substituted,
    /// An environment override replaced part of the mapped settings.
    Override,
    /// An environment override was invalid and ignored.
    IgnoredOverride,
    /// The mode is honoured, but the caller must do something for it to work (set an env var).
    Requirement,
}

impl NoteKind {
    /// Whether a note of this kind means the requested mode is not honoured exactly.
    pub const fn is_deviation(self) -> bool {
        matches!(
            self,
            NoteKind::UnknownMode | NoteKind::Substituted | NoteKind::Override
        )
    }
}
