//! The core of `bridge`: one event model for every coding-agent CLI, and the machinery every
//! provider channel shares.
//!
//! # Overview
//!
//! * [`event`]: the [`Event`] model (session id, deltas, tool use and results, usage, status,
//!   errors, turn end).
//! * [`encode`]: the two wire formats of that model: ai-bridge marker lines (what the JetBrains
//!   plugin parses) and versioned JSONL.
//! * [`request`]: the request JSON read from stdin; [`ide_context`]: its `openedFiles` as a
//!   bounded prompt block.
//! * [`channel`]: the [`Channel`] trait a provider implements and the [`Router`] registry.
//! * [`process`], [`lines`], [`turn`], [`session`]: spawning a CLI in its own process group, reading its
//!   output with bounded memory, deadlines, interrupt, and deciding the outcome.
//! * [`normalize`]: building blocks for normalizers of one-shot JSONL CLIs (outcome rules for
//!   CLIs whose exit code lies, plain-text lines, snapshots → deltas).
//! * [`driver`]: one `send`, end to end, onto a writer.
//! * [`permission`], [`permission_ipc`]: the approval model, the broker that gets answers
//!   from the client (stdin or the ai-bridge file IPC), and the no-client / timeout denials.
//!
//! A provider crate supplies a [`turn::ProcessTurn`] (how to launch its CLI) and a pure
//! [`turn::Normalizer`] (`line → events`); the session runner ([`session`]) does the rest.

#![deny(missing_docs)]

pub mod attachment;
pub mod channel;
pub mod control;
pub mod conversation;
pub mod driver;
pub mod encode;
pub mod event;
pub mod ide_context;
pub mod jsonrpc;
pub mod lines;
pub mod normalize;
pub mod output;
pub mod permission;
pub mod permission_ipc;
pub mod process;
pub mod query;
pub mod record;
pub mod redact;
pub mod request;
pub mod schema;
pub mod session;
pub mod text;
pub mod turn;

pub use channel::{Channel, Router};
pub use event::Event;
pub use request::Request;
