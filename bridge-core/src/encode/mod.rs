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

/// All of `events` in one format, one line each (for snapshots and diagnostics).
///
/// ```
/// use bridge_core::encode::{encode_all, JsonlEncoder};
/// use bridge_core::event::Event;
/// let text = encode_all(&[Event::TextDelta { text: "hi".into() }], &mut JsonlEncoder::new(false));
/// assert_eq!(text, r#"{"v":1,"seq":0,"type":"text_delta","text":"hi"}"#);
/// ```
pub fn encode_all(events: &[Event], encoder: &mut dyn Encoder) -> String {
    let mut lines = Vec::new();
    for event in events {
        encoder.encode(event, &mut lines);
    }
    lines.join("\n")
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
    /// Builds the encoder for this format (streamed deltas; see [`Format::encoder_for`]).
    pub fn encoder(self, dialect: MarkerDialect, raw: bool) -> Box<dyn Encoder> {
        self.encoder_for(dialect, raw, true)
    }

    /// Builds the encoder for this format; `streaming: false` (the request's `"streaming"`)
    /// makes the markers write whole segments instead of deltas. JSONL always streams.
    pub fn encoder_for(
        self,
        dialect: MarkerDialect,
        raw: bool,
        streaming: bool,
    ) -> Box<dyn Encoder> {
        match self {
            Format::Markers => Box::new(MarkerEncoder::new(dialect).with_streaming(streaming)),
            Format::Jsonl => Box::new(JsonlEncoder::new(raw)),
        }
    }
}
