//! Relay quirk handling: content-block deltas that are cumulative snapshots.
//!
//! Some Anthropic-compatible relays (MiniMax, Z.ai GLM, Mimo) send a `content_block_delta` as
//! the block's **cumulative snapshot** (`"Now I need to add"`, then
//! `"Now I need to add the handler"`) instead of an increment, and sometimes a **corrective
//! snapshot** that rewrites the end of the previous one (`"Hello wrold"` → `"Hello world"`).
//! Claude Code passes those deltas through in its `stream_event` lines and concatenates them
//! itself, so its `assistant` lines and `result` hold the doubled text.
//!
//! [`BlockDeltas`] turns such deltas back into increments, per content block (text and
//! thinking alike). It is pure: no I/O, no clock. What it does depends on the [`DeltaMode`]:
//!
//! * [`DeltaMode::Incremental`] (Claude itself): every delta passes through untouched and no
//!   text is kept, so repeated characters and repeated phrases are never dropped;
//! * [`DeltaMode::Cumulative`] (a relay known to send snapshots): each delta is the block's
//!   text so far; only the new part is emitted;
//! * [`DeltaMode::Auto`] (a relay whose models differ): a block is treated as snapshots once a
//!   delta strictly extends the previous delta of at least [`AUTO_MIN_CHARS`] characters *and*
//!   every delta of the block so far extended its predecessor. Any other delta proves the
//!   block incremental for good. A standard stream whose text repeats itself (`"a"`, `"a"`;
//!   `"ha "`, `"ha "`) breaks that chain at once and passes through untouched.
//!
//! When a block is found to be snapshots only after some of its deltas were already passed
//! through as increments, or when a corrective snapshot changes text already shown, the client
//! has to be corrected: [`Correction`] asks the normalizer for an [`Event::BlockReset`]
//! followed by the message's text so far ([`BlockDeltas::replay`]) and a warning. The text a
//! client assembles, applying resets, always equals the model's text.

use bridge_core::event::Event;

/// How a provider's content-block deltas are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeltaMode {
    /// Every delta is an increment (the Anthropic API): passed through untouched.
    #[default]
    Incremental,
    /// Every delta is the block's cumulative snapshot (possibly corrective).
    Cumulative,
    /// Detect snapshots per block (see the module docs).
    Auto,
}

impl DeltaMode {
    /// The mode named `name` (`incremental`, `cumulative`, `auto`), as a config file spells it.
    ///
    /// ```
    /// use bridge_claude_stream::deltas::DeltaMode;
    /// assert_eq!(DeltaMode::from_name("auto"), Some(DeltaMode::Auto));
    /// assert_eq!(DeltaMode::from_name("snapshot"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<DeltaMode> {
        match name {
            "incremental" => Some(DeltaMode::Incremental),
            "cumulative" => Some(DeltaMode::Cumulative),
            "auto" => Some(DeltaMode::Auto),
            _ => None,
        }
    }

    /// Its config-file name.
    pub fn name(self) -> &'static str {
        match self {
            DeltaMode::Incremental => "incremental",
            DeltaMode::Cumulative => "cumulative",
            DeltaMode::Auto => "auto",
        }
    }
}

/// In [`DeltaMode::Auto`], the shortest previous delta (in characters) whose strict extension
/// locks a block into snapshot mode. Shorter ones (`"a"` → `"aa"`) are too likely to be real
/// repetitions.
pub const AUTO_MIN_CHARS: usize = 4;

/// Which stream a content block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Assistant text (`text_delta`).
    Text,
    /// Reasoning (`thinking_delta`).
    Thinking,
}

/// What one delta became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Correction {
    /// Emit this increment (possibly empty: nothing new).
    Append(String),
    /// Text already shown was wrong: reset the message segment and replay
    /// [`BlockDeltas::replay`]; the reason goes into a warning.
    Reset(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Auto: not decided yet; every delta so far extended its predecessor.
    Undecided,
    /// Increments, for good.
    Increments,
    /// Cumulative snapshots.
    Snapshots,
}

#[derive(Debug)]
struct Block {
    index: u64,
    kind: BlockKind,
    reading: Reading,
    /// The text the client has for this block (the de-duplicated text).
    shown: String,
    /// The previous raw delta (Auto, undecided).
    previous: String,
    deltas: usize,
}

/// Per-message delta state: one entry per content block, in the order the blocks began.
#[derive(Debug, Default)]
pub struct BlockDeltas {
    mode: DeltaMode,
    blocks: Vec<Block>,
    /// Some block of this turn was read as snapshots.
    rewrote: bool,
}

/// Length in bytes of the longest common prefix of `a` and `b`, on a char boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| a.len().min(b.len()))
}

impl BlockDeltas {
    /// State for a provider whose deltas are read in `mode`.
    pub fn new(mode: DeltaMode) -> Self {
        BlockDeltas {
            mode,
            blocks: Vec::new(),
            rewrote: false,
        }
    }

    /// The mode.
    pub fn mode(&self) -> DeltaMode {
        self.mode
    }

    /// A new API message begins: forget its blocks.
    pub fn start_message(&mut self) {
        self.blocks.clear();
    }

    /// Whether any block of the turn was read as snapshots (so the CLI's own copy of the text,
    /// in its `assistant` lines and `result`, is the doubled one).
    pub fn rewrote(&self) -> bool {
        self.rewrote
    }

    /// Whether the current message had a block read as snapshots.
    pub fn message_rewritten(&self) -> bool {
        self.blocks.iter().any(|b| b.reading == Reading::Snapshots)
    }

    /// The de-duplicated text of the current message's `kind` blocks, joined.
    pub fn text(&self, kind: BlockKind) -> String {
        self.blocks
            .iter()
            .filter(|b| b.kind == kind)
            .map(|b| b.shown.as_str())
            .collect()
    }

    /// The current message's text so far, as the deltas a client needs after a reset.
    pub fn replay(&self) -> Vec<Event> {
        self.blocks
            .iter()
            .filter(|b| !b.shown.is_empty())
            .map(|b| match b.kind {
                BlockKind::Text => Event::TextDelta {
                    text: b.shown.clone(),
                },
                BlockKind::Thinking => Event::ThinkingDelta {
                    text: b.shown.clone(),
                },
            })
            .collect()
    }

    /// Reads one delta of block `index`.
    pub fn delta(&mut self, index: u64, kind: BlockKind, delta: &str) -> Correction {
        if self.mode == DeltaMode::Incremental {
            return Correction::Append(delta.to_string());
        }
        let initial = match self.mode {
            DeltaMode::Cumulative => Reading::Snapshots,
            _ => Reading::Undecided,
        };
        let position = match self
            .blocks
            .iter()
            .position(|b| b.index == index && b.kind == kind)
        {
            Some(position) => position,
            None => {
                self.blocks.push(Block {
                    index,
                    kind,
                    reading: initial,
                    shown: String::new(),
                    previous: String::new(),
                    deltas: 0,
                });
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[position];
        block.deltas += 1;
        let correction = match block.reading {
            Reading::Increments => {
                block.shown.push_str(delta);
                Correction::Append(delta.to_string())
            }
            Reading::Undecided => {
                let extends = block.deltas > 1
                    && delta.len() > block.previous.len()
                    && delta.starts_with(block.previous.as_str());
                if block.deltas == 1 {
                    block.shown.push_str(delta);
                    block.previous = delta.to_string();
                    Correction::Append(delta.to_string())
                } else if !extends {
                    block.reading = Reading::Increments;
                    block.previous.clear();
                    block.shown.push_str(delta);
                    Correction::Append(delta.to_string())
                } else if block.previous.chars().count() < AUTO_MIN_CHARS {
                    block.shown.push_str(delta);
                    block.previous = delta.to_string();
                    Correction::Append(delta.to_string())
                } else {
                    block.reading = Reading::Snapshots;
                    let late = block.deltas > 2;
                    block.previous.clear();
                    if late {
                        block.shown = delta.to_string();
                        Correction::Reset(
                            "the relay's deltas turned out to be cumulative snapshots; the block \
                             was re-sent de-duplicated",
                        )
                    } else {
                        let tail = delta[block.shown.len()..].to_string();
                        block.shown = delta.to_string();
                        Correction::Append(tail)
                    }
                }
            }
            Reading::Snapshots => snapshot(block, delta, self.mode),
        };
        if block.reading == Reading::Snapshots {
            self.rewrote = true;
        }
        correction
    }
}

/// A delta of a block read as snapshots: the new tail, or a corrective snapshot. A relay
/// declared [`DeltaMode::Cumulative`] only ever sends the block's whole text, so any other
/// delta replaces it. A block that [`DeltaMode::Auto`] found to be snapshots is read more
/// carefully: a repeat of an older, shorter snapshot adds nothing, and a delta that shares
/// less than half of the text so far is an increment after all.
fn snapshot(block: &mut Block, delta: &str, mode: DeltaMode) -> Correction {
    if delta.starts_with(block.shown.as_str()) {
        let tail = delta[block.shown.len()..].to_string();
        block.shown = delta.to_string();
        return Correction::Append(tail);
    }
    if mode == DeltaMode::Cumulative {
        block.shown = delta.to_string();
        return Correction::Reset("the relay sent a corrective snapshot; the block was re-sent");
    }
    if block.shown.starts_with(delta) {
        // A shorter snapshot (a repeat of an earlier one): nothing new.
        return Correction::Append(String::new());
    }
    let shared = common_prefix(&block.shown, delta);
    if shared > 0 && shared * 2 >= block.shown.len() {
        block.shown = delta.to_string();
        Correction::Reset("the relay sent a corrective snapshot; the block was re-sent")
    } else {
        block.shown.push_str(delta);
        Correction::Append(delta.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text a client holds after `deltas` (a reset replaces the block's text).
    fn client_text(mode: DeltaMode, deltas: &[&str]) -> (String, usize) {
        let mut state = BlockDeltas::new(mode);
        let mut text = String::new();
        let mut resets = 0;
        for d in deltas {
            match state.delta(0, BlockKind::Text, d) {
                Correction::Append(t) => text.push_str(&t),
                Correction::Reset(_) => {
                    resets += 1;
                    text = state.text(BlockKind::Text);
                }
            }
        }
        if mode != DeltaMode::Incremental {
            assert_eq!(text, state.text(BlockKind::Text));
        }
        (text, resets)
    }

    #[test]
    fn incremental_passes_everything_through() {
        for deltas in [
            &["a", "a"][..],
            &["ha ", "ha ", "ha"],
            &["Hello", "Hello"],
            &["Now I need", "Now I need to add"],
        ] {
            assert_eq!(
                client_text(DeltaMode::Incremental, deltas),
                (deltas.concat(), 0)
            );
        }
    }

    #[test]
    fn auto_keeps_repetitions_in_incremental_streams() {
        for deltas in [
            &["a", "a"][..],
            &["ha ", "ha ", "ha"],
            &["Hello", "Hello", " there"],
            &["aa", "aa", "aa"],
            &["x", "xy", "z"],
            &["ab", "abc", "abcd", "!"],
        ] {
            assert_eq!(client_text(DeltaMode::Auto, deltas), (deltas.concat(), 0));
        }
    }

    #[test]
    fn auto_reads_cumulative_snapshots() {
        assert_eq!(
            client_text(
                DeltaMode::Auto,
                &[
                    "Now I need to add",
                    "Now I need to add the",
                    "Now I need to add the handler"
                ]
            ),
            ("Now I need to add the handler".into(), 0)
        );
    }

    #[test]
    fn auto_learning_late_resets_the_block() {
        assert_eq!(
            client_text(
                DeltaMode::Auto,
                &["He", "Hel", "Hello", "Hello w", "Hello world"]
            ),
            ("Hello world".into(), 1)
        );
    }

    #[test]
    fn corrective_snapshots_reset() {
        assert_eq!(
            client_text(
                DeltaMode::Cumulative,
                &["Hello", "Hello wrold", "Hello world", "Hello world!"]
            ),
            ("Hello world!".into(), 1)
        );
        // "actual" → "actuall" extends. Declared cumulative, a shorter snapshot is the text
        // now; found by detection, a repeat of an older one adds nothing.
        assert_eq!(
            client_text(
                DeltaMode::Cumulative,
                &["actual", "actuall", "actual", "actually"]
            ),
            ("actually".into(), 1)
        );
        assert_eq!(
            client_text(
                DeltaMode::Auto,
                &["actual", "actuall", "actual", "actually"]
            ),
            ("actually".into(), 0)
        );
        // Detected snapshots followed by something that shares little: an increment.
        assert_eq!(
            client_text(DeltaMode::Auto, &["Hello", "Hello world", " again"]),
            ("Hello world again".into(), 0)
        );
        assert_eq!(
            client_text(DeltaMode::Cumulative, &["a", "azz", "ab", "abc"]),
            ("abc".into(), 1)
        );
    }

    #[test]
    fn cumulative_keeps_repeated_characters_inside_snapshots() {
        assert_eq!(
            client_text(
                DeltaMode::Cumulative,
                &["a", "aa", "aaa", "aaa ha", "aaa ha ha"]
            ),
            ("aaa ha ha".into(), 0)
        );
    }

    #[test]
    fn blocks_are_separate_and_replay_in_order() {
        let mut state = BlockDeltas::new(DeltaMode::Cumulative);
        assert_eq!(
            state.delta(0, BlockKind::Thinking, "Let me"),
            Correction::Append("Let me".into())
        );
        assert_eq!(
            state.delta(1, BlockKind::Text, "Hi"),
            Correction::Append("Hi".into())
        );
        assert_eq!(
            state.delta(0, BlockKind::Thinking, "Let me think"),
            Correction::Append(" think".into())
        );
        assert_eq!(
            state.delta(1, BlockKind::Text, "Hi there"),
            Correction::Append(" there".into())
        );
        assert_eq!(
            state.replay(),
            [
                Event::ThinkingDelta {
                    text: "Let me think".into()
                },
                Event::TextDelta {
                    text: "Hi there".into()
                }
            ]
        );
        assert!(state.rewrote() && state.message_rewritten());
        state.start_message();
        assert!(state.rewrote() && !state.message_rewritten());
        assert_eq!(state.text(BlockKind::Text), "");
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        assert_eq!(common_prefix("héllo", "hèllo"), 1);
        assert_eq!(
            client_text(
                DeltaMode::Cumulative,
                &["héllo wörld", "héllo wörld ü", "héllo wörlt"]
            ),
            ("héllo wörlt".into(), 1)
        );
    }
}
