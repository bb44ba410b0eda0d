//! The pi-family JSONL engine: what pi (`bridge-channel-pi`) and oh-my-pi
//! (`bridge-channel-omp`) share, run once per turn on the one-shot engine (`bridge-one-shot`).
//!
//! * [`launch`] builds a turn from a [`Flavor`]: the data in which the two CLIs differ (flag
//!   spelling, thinking levels, permission mapping, a runtime the launcher needs);
//! * [`normalize::PiNormalizer`] turns their `--mode json` output into events.
//!
//! The providers' crates hold the rest (probe, tested versions, permission mapping, the flavor).

#![deny(missing_docs)]

pub mod launch;
pub mod normalize;

pub use launch::{Flavor, Permissions, Runtime, ValueStyle};
pub use normalize::PiNormalizer;
