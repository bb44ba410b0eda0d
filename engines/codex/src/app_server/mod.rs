//! Codex through `codex app-server`: JSON-RPC over stdio (one object per line, without the
//! `jsonrpc` member), one process per thread, interactive approvals, live interrupt, streamed
//! deltas. Facts: `shared/reference/round2-anchors.md` §1.2 and `real-clis-openai.md` §3.7
//! (Codex 0.171.0).
//!
//! * [`protocol`]: the types the engine speaks, checked against the pinned binary's schema;
//! * [`normalize`]: the pure notification → [`bridge_core::event::Event`] mapping, and the
//!   approval answers;
//! * [`session`]: the engine on the session runner (handshake, turns, approvals, interrupt).
//!
//! The launch (argv, env, permission mapping) is provider data in `bridge-channel-codex`.

pub mod normalize;
pub mod protocol;
pub mod session;

pub use normalize::AppServerNormalizer;
pub use session::{AppServerSession, ThreadConfig};
