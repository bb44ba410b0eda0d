//! A replayed capture in both wire formats, and the macro that snapshots them.

use bridge_core::encode::{JsonlEncoder, MarkerDialect, MarkerEncoder, encode_all};
use bridge_core::event::Event;

/// Longest `[MESSAGE]` line (in characters) [`WireSnapshots::with_short_messages`] keeps whole.
const MESSAGE_CHARS: usize = 160;

/// Replayed events as the two wire formats users see: what [`crate::assert_wire_snapshots!`]
/// snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireSnapshots {
    /// The versioned JSONL lines (without `raw` events).
    pub jsonl: String,
    /// The ai-bridge marker lines in the provider's dialect.
    pub markers: String,
}

impl WireSnapshots {
    /// `events` encoded as JSONL and as markers in `dialect`.
    pub fn of(events: &[Event], dialect: MarkerDialect) -> Self {
        Self {
            jsonl: encode_all(events, &mut JsonlEncoder::new(false)),
            markers: encode_all(events, &mut MarkerEncoder::new(dialect)),
        }
    }

    /// Cuts `[MESSAGE]` lines after 160 characters (marked `…`): Claude-style `init` messages
    /// carry whole tool lists and paths, and the JSONL snapshot has them complete anyway.
    pub fn with_short_messages(mut self) -> Self {
        self.markers = self
            .markers
            .lines()
            .map(|line| match line.char_indices().nth(MESSAGE_CHARS) {
                Some((cut, _)) if line.starts_with("[MESSAGE] ") => format!("{}…", &line[..cut]),
                _ => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        self
    }
}

/// Snapshots a replayed capture in both wire formats, as `<name>.jsonl` and `<name>.markers`
/// next to the calling test (insta names the files after the calling test file and module).
///
/// `assert_wire_snapshots!(name, &events, dialect)` encodes the events;
/// `assert_wire_snapshots!(name, snapshots)` takes a [`WireSnapshots`] (e.g. shortened).
///
/// ```no_run
/// use bridge_core::encode::MarkerDialect;
/// use bridge_core::event::Event;
///
/// let events = vec![Event::TextDelta { text: "hi".into() }];
/// captures::assert_wire_snapshots!("demo-text", &events, MarkerDialect::SESSION);
/// captures::assert_wire_snapshots!(
///     "demo-text-short",
///     captures::WireSnapshots::of(&events, MarkerDialect::SESSION).with_short_messages()
/// );
/// ```
#[macro_export]
macro_rules! assert_wire_snapshots {
    ($name:expr, $events:expr, $dialect:expr $(,)?) => {
        $crate::assert_wire_snapshots!($name, $crate::WireSnapshots::of($events, $dialect))
    };
    ($name:expr, $snapshots:expr $(,)?) => {{
        let name: &str = $name;
        let snapshots: $crate::WireSnapshots = $snapshots;
        $crate::insta::assert_snapshot!(format!("{name}.jsonl"), snapshots.jsonl);
        $crate::insta::assert_snapshot!(format!("{name}.markers"), snapshots.markers);
    }};
}
