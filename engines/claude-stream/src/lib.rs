//! The Claude stream-json engine: what every CLI printing Claude Code's stream-json shape
//! shares, whichever provider launches it.
//!
//! * [`normalize::ClaudeNormalizer`] turns stream-json lines into events; a CLI printing the
//!   same shape reuses it with its own [`normalize::Dialect`] (Qwen Code's `json` transport);
//! * [`deltas`] reads content-block deltas in the mode a profile declares (the Anthropic-compatible
//!   relays stream cumulative or corrective snapshots);
//! * [`approvals`] is the stream-json control protocol for approvals
//!   (`--permission-prompt-tool stdio`): `can_use_tool` control requests answered through the
//!   turn's permission broker.
//!
//! The launch (argv, env, tested versions) is provider data and lives in the provider crates
//! (`bridge-channel-claude`, `bridge-channel-qwen`).

#![deny(missing_docs)]

pub mod approvals;
pub mod deltas;
pub mod normalize;

pub use normalize::ClaudeNormalizer;
