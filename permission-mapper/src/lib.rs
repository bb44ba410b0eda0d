//! Unified permission modes and their mapping to each provider's native settings, both directions.
//!
//! A request arrives with a free-form `permissionMode` string (the ai-bridge vocabulary: `default`,
//! `plan`, `acceptEdits`, `autoEdit`, `bypassPermissions`, plus the unified `sandbox` and `yolo`).
//! This crate turns it into data in three steps, each one a plain function you can table-test:
//!
//! 1. **Parse** ([`PermissionMode::parse`]): never fails. Null or empty means `default`; an unknown
//!    spelling (including `auto`) also means `default`, but the [`RequestedMode`] remembers the raw
//!    input and says it was unknown, so the caller can warn.
//! 2. **Normalize** ([`PermissionMode::unified`], [`PermissionMode::alias`]): the three-valued core
//!    ([`UnifiedMode`]: default, sandbox, yolo) plus an optional [`ModeAlias`], exactly as the
//!    reference's `normalizeUnifiedMode` table.
//! 3. **Map** to a provider ([`claude`], [`codex`], [`pi`], [`omp`], [`grok_cli`], and the
//!    one-shot JSON modes of [`gemini`], [`qwen`], [`copilot`], [`opencode`] and [`kimi`]):
//!    `to_provider`
//!    gives the native settings,
//!    `from_provider` reads them back, and `effective` wraps the settings in an [`Effective`] report
//!    that says, in words, whenever the provider could not honour the requested mode exactly
//!    (and what was applied instead).
//!
//! ```
//! use permission_mapper::{PermissionMode, UnifiedMode, ModeAlias};
//!
//! let requested = PermissionMode::parse("autoEdit");
//! assert_eq!(requested.mode, PermissionMode::AcceptEdits);
//! assert_eq!(requested.mode.unified(), UnifiedMode::Default);
//! assert_eq!(requested.mode.alias(), Some(ModeAlias::AcceptEdits));
//! assert!(requested.warning().is_none());
//!
//! let unknown = PermissionMode::parse("auto");
//! assert_eq!(unknown.mode, PermissionMode::Default);
//! assert!(unknown.warning().is_some()); // the caller should tell the user
//! ```
//!
//! Everything that leaves the crate is `Serialize`, so a channel can print its effective mode as
//! JSON:
//!
//! ```
//! use permission_mapper::{codex, Platform, PermissionMode};
//!
//! let eff = codex::effective(
//!     &PermissionMode::parse("yolo"),
//!     Platform::Unix,
//!     &codex::CodexOverrides::default(),
//! );
//! let json = serde_json::to_value(&eff).unwrap();
//! assert_eq!(json["settings"]["sandbox"], "danger-full-access");
//! assert_eq!(json["settings"]["approvalPolicy"], "never");
//! assert_eq!(json["exact"], true);
//! ```
#![deny(missing_docs)]

pub mod claude;
mod cli_enum;
pub mod codex;
pub mod copilot;
mod effective;
mod error;
pub mod gemini;
pub mod grok_cli;
pub mod kimi;
mod mode;
pub mod omp;
pub mod opencode;
pub mod pi;
pub mod qwen;
#[cfg(test)]
mod test_support;

pub use effective::{Effective, Note, NoteKind};
pub use error::ParseError;
pub use mode::{ModeAlias, PermissionMode, Recognition, RequestedMode, UnifiedMode};

/// The operating system a mapping is computed for.
///
/// A parameter rather than a compile-time constant so that tests on one OS cover both
/// (Codex has no `workspace-write` sandbox on Windows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Linux, macOS and the other Unix-likes.
    Unix,
    /// Windows.
    Windows,
}

impl Platform {
    /// The platform this binary was compiled for.
    ///
    /// ```
    /// let p = permission_mapper::Platform::current();
    /// assert_eq!(p == permission_mapper::Platform::Windows, cfg!(windows));
    /// ```
    pub const fn current() -> Self {
        if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Unix
        }
    }
}
