//! The Codex engine: what the bridge knows about the `codex exec --json` protocol, whichever
//! provider launches the CLI.
//!
//! * [`normalize::CodexNormalizer`] turns `exec --json` lines into events;
//! * [`rollout`] reads the thread's rollout file for what `exec --json` leaves out
//!   ([`rollout::RolloutNormalizer`]);
//! * [`patch`] parses `apply_patch` input into diffs, [`command`] turns shell commands into
//!   tool cards;
//! * [`native`] finds the native binary behind the npm shim.
//!
//! The launch (argv, env, tested versions, permission mapping) is provider data and lives in
//! `bridge-channel-codex`.

#![deny(missing_docs)]

pub mod command;
pub mod native;
pub mod normalize;
pub mod patch;
pub mod rollout;

pub use native::NativeCodex;
pub use normalize::CodexNormalizer;
pub use rollout::RolloutNormalizer;
