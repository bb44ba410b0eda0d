//! Typed errors for the strict parsers.

/// A value that strict parsing did not accept (the offending value is kept, cut to 64 chars).
///
/// Only the strict entry points return it (`FromStr` impls, [`crate::claude::from_provider`],
/// [`crate::codex::CodexOverrides::resolve`] reports it as a reason). The lenient
/// [`crate::PermissionMode::parse`] never fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not a unified permission mode.
    #[error("unknown permission mode {0:?}")]
    UnknownMode(String),
    /// Not a Claude CLI `--permission-mode` value.
    #[error(
        "unknown Claude permission mode {0:?} (expected default, acceptEdits, plan, bypassPermissions, dontAsk or auto)"
    )]
    UnknownClaudeMode(String),
    /// Not a Codex sandbox.
    #[error(
        "unknown Codex sandbox {0:?} (expected read-only, workspace-write or danger-full-access)"
    )]
    UnknownCodexSandbox(String),
    /// Not a Codex approval policy.
    #[error("unknown Codex approval policy {0:?} (expected never, on-request or on-failure)")]
    UnknownCodexApproval(String),
    /// The approval policy `untrusted`, which Codex CLI 0.149+ rejects.
    #[error(
        "Codex approval policy \"untrusted\" is no longer accepted by the Codex CLI (since 0.149); use on-request"
    )]
    UntrustedApproval,
}
