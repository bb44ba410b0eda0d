//! Wire encoders: the same [`Event`] sequence as ai-bridge marker lines or as versioned JSONL.
//!
//! An encoder turns one event into zero or more complete lines (without the trailing `\n`);
//! [`crate::output::LineWriter`] writes each line with a single write.

pub mod jsonl;
pub mod markers;

use crate::event::Event;

pub use jsonl::JsonlEncoder;
pub use markers::{MarkerDialect, MarkerEncoder};

/// Turns [`Event`]s into wire lines.
pub trait Encoder: Send {
    /// Appends the lines for `event` to `out` (each without its line terminator).
    fn encode(&mut self, event: &Event, out: &mut Vec<String>);
}

/// The wire format selected by `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// ai-bridge marker lines (the default: what existing plugins parse).
    #[default]
    Markers,
    /// Versioned NDJSON.
    Jsonl,
}

impl Format {
    /// Builds the encoder for this format.
    pub fn encoder(self, dialect: MarkerDialect, raw: bool) -> Box<dyn Encoder> {
        match self {
            Format::Markers => Box::new(MarkerEncoder::new(dialect)),
            Format::Jsonl => Box::new(JsonlEncoder::new(raw)),
        }
    }
}
