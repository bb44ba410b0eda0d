//! Is each agent CLI installed, where, which version, is that version tested, and where could
//! its credentials come from.
//!
//! The engine behind `bridge system status` and behind every channel's "not installed" and
//! "untested version" messages. A provider crate declares a [`ProbeSpec`] (pure data: binary
//! names, env overrides, install dirs, version argument, tested range, install hint, auth
//! sources); this crate does the rest:
//!
//! - [`resolve_binary`] finds the executable without running anything: env overrides, then PATH
//!   (via `which`), then the login shell's PATH if known, then the usual install dirs that a
//!   GUI-launched IDE does not have on its PATH (nvm, fnm, volta, npm's prefix, bun, cargo,
//!   pipx, Homebrew, …; see [`install_dirs`]).
//! - [`probe_version_in`] runs exactly `<binary> --version` with stdin null, a deadline, capped
//!   output, in its own process group that is killed when the deadline passes, and reads the
//!   first `x.y.z` leniently.
//! - [`probe`] / [`probe_all`] / [`Prober`] put it together into a serializable
//!   [`ProbeReport`], one per provider, in parallel, with an optional [`VersionCache`].
//!
//! Everything reads the environment through a [`ProbeEnv`], so tests inject HOME, PATH and
//! variables and never touch the real environment. Credentials are never read: auth hints say
//! *present* or *absent*; secret-looking variables are not passed to the version probe and
//! their values are redacted from anything captured.
//!
//! ```no_run
//! # #[tokio::main] async fn main() {
//! use std::time::Duration;
//! use sdk_probe::{probe_all, AuthSource, ProbeEnv, ProbeSpec, Version, VersionRange};
//!
//! const CLAUDE: ProbeSpec = ProbeSpec {
//!     install_dirs: &[".claude/bin"],
//!     tested: Some(VersionRange::new(Version::new(2, 1, 197), Version::new(2, 1, 332))),
//!     install_hint: "npm i -g @anthropic-ai/claude-code",
//!     auth: &[AuthSource::Env("ANTHROPIC_API_KEY"), AuthSource::File(".claude/.credentials.json")],
//!     ..ProbeSpec::new("claude", "Claude Code", &["claude"])
//! };
//! let reports = probe_all(&[CLAUDE], &ProbeEnv::from_process(), Duration::from_secs(5)).await;
//! println!("{}", serde_json::to_string_pretty(&reports).unwrap());
//! # }
//! ```
#![deny(missing_docs)]

mod cache;
mod check;
mod env;
mod models;
mod report;
mod resolve;
mod run;
mod spec;
mod version;

pub use cache::VersionCache;
pub use check::{
    Located, TURN_VERSION_CHECK_TIMEOUT, default_cache_dir, locate, turn_version_check,
    untested_version_warning,
};
pub use env::{ProbeEnv, default_system_dirs, is_secret_name};
pub use models::{
    MODEL_CACHE_MAX_AGE, ModelSource, cached_models, list_models_cached, store_models,
};
pub use report::{
    AuthHint, AuthKind, DEFAULT_TIMEOUT, ProbeReport, Prober, Status, probe, probe_all,
};
pub use resolve::{Resolution, Resolved, SearchDir, Source, install_dirs, resolve, resolve_binary};
pub use run::{
    OUTPUT_CAP, ProbeError, VersionOutput, login_shell_path, probe_version, probe_version_in,
};
pub use spec::{AuthSource, DEFAULT_VERSION_ARGS, ProbeSpec};
pub use version::{Version, VersionParseError, VersionRange};
