//! Building blocks for normalizers of one-shot JSONL CLIs (pi, oh-my-pi, the community Grok
//! CLI, and the JSON modes of opencode, kimi, copilot, gemini, qwen).
//!
//! These CLIs print one JSON object per line and end the turn by exiting. Their exit code does
//! not say whether the turn worked (pi and the Grok CLI exit 0 after an API error; kimi exits 75
//! on a retryable one), some print errors as plain text between the JSON lines, and some repeat
//! the whole text so far in every message instead of sending deltas. The pieces here are pure
//! (no I/O, no clock) so normalizers built from them stay snapshot-testable:
//!
//! * [`ExitTurn`]: what the stream said so far, and the rules that turn it plus the exit status
//!   into the turn's outcome in [`crate::turn::Normalizer::finish`];
//! * [`PlainLines`]: a bounded collection of non-JSON stdout lines, for error messages;
//! * [`SnapshotDelta`]: growing snapshots → deltas;
//! * [`TurnUsage`]: per-message usage summed into the turn's;
//! * [`UnparsedLines`]: warnings about the first non-JSON stdout lines;
//! * small helpers every normalizer needs: [`str_at`], [`u64_at`], [`u32_at`], [`json_object`],
//!   [`json_event`], [`fail_turn`];
//! * for normalizer unit tests: [`run_lines`], [`turn_end`] (and [`replay`] for captures).

use std::process::ExitStatus;

use serde_json::Value;

use crate::event::{ErrorCode, ErrorInfo, Event, StopReason, TurnEnd, Usage, UsageScope};
use crate::process::describe_exit;
use crate::turn::Normalizer;

/// The outcome of a turn whose terminal signal is the CLI's exit, built up line by line.
///
/// A normalizer records what its stream says ([`ExitTurn::complete`], [`ExitTurn::error`],
/// [`ExitTurn::plain_line`]) and calls [`ExitTurn::finish`] from
/// [`crate::turn::Normalizer::finish`]. The rules, first match wins:
///
/// | the stream… | exit status | outcome |
/// |---|---|---|
/// | reported an error (and no later retry cleared it) | any, **including 0** | failure, [`ErrorCode::Provider`], the provider's message |
/// | — | not 0, a signal, or unknown | failure, [`ErrorCode::ExitedEarly`], the exit and any plain-text lines |
/// | never said the turn was complete | 0 | failure, [`ErrorCode::ExitedEarly`] (a truncated stream is not a success) |
/// | said the turn was complete | 0 | success, with the recorded stop reason and result |
///
/// So a CLI that lies with exit 0 never produces a success, and a CLI that exits non-zero never
/// does either, whatever it printed before.
///
/// ```
/// use std::os::unix::process::ExitStatusExt;
/// use std::process::ExitStatus;
/// use bridge_core::event::{Event, StopReason};
/// use bridge_core::normalize::ExitTurn;
///
/// let mut turn = ExitTurn::new();
/// turn.error("401 invalid x-api-key");
/// turn.complete(StopReason::Error, None);
/// let mut out = Vec::new();
/// turn.finish("pi", Some(&ExitStatus::from_raw(0)), None, &mut out);
/// let Some(Event::TurnEnd(end)) = out.last() else { panic!() };
/// assert!(!end.success);
/// assert_eq!(end.error.as_deref(), Some("401 invalid x-api-key"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExitTurn {
    completed: bool,
    stop: Option<StopReason>,
    result: Option<String>,
    error: Option<String>,
    plain: PlainLines,
    unparsed: UnparsedLines,
}

impl ExitTurn {
    /// Nothing seen yet.
    pub fn new() -> Self {
        ExitTurn::default()
    }

    /// The provider's own "turn done" signal (pi's `agent_end`, the Grok CLI's final assistant
    /// message), with why the model stopped and the final text.
    pub fn complete(&mut self, stop: StopReason, result: Option<String>) {
        self.completed = true;
        self.stop = Some(stop);
        self.result = result;
    }

    /// The turn runs again (the CLI started a retry): an earlier completion and error no longer
    /// decide the outcome; what the retry reports does.
    pub fn reopen(&mut self) {
        self.completed = false;
        self.error = None;
    }

    /// The stream reported an error (an API error in an assistant message, a failed retry).
    /// The latest one is kept.
    pub fn error(&mut self, message: impl Into<String>) {
        let message = message.into();
        self.error = Some(if message.trim().is_empty() {
            "the provider reported an error without a message".into()
        } else {
            message
        });
    }

    /// The error recorded so far, if any.
    pub fn error_message(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether the provider said the turn is complete.
    pub fn is_complete(&self) -> bool {
        self.completed
    }

    /// A stdout line that is not part of the CLI's JSON protocol (plain-text errors, prompts).
    pub fn plain_line(&mut self, line: &str) {
        self.plain.push(line);
    }

    /// A stdout line that is not one of the CLI's JSON objects: kept like
    /// [`ExitTurn::plain_line`], and pushed to `out` as an `unparsed_line` warning naming
    /// `provider` (the first [`ExitTurn::UNPARSED_LINE_WARNINGS`] non-blank ones; the rest are
    /// only kept for the error message).
    ///
    /// ```
    /// use bridge_core::normalize::ExitTurn;
    /// let mut turn = ExitTurn::new();
    /// let mut out = Vec::new();
    /// for _ in 0..10 {
    ///     turn.unparsed_line("pi", "Aborted.", &mut out);
    /// }
    /// assert_eq!(out.len(), ExitTurn::UNPARSED_LINE_WARNINGS);
    /// assert_eq!(turn.plain_lines().lines().len(), 10);
    /// ```
    pub fn unparsed_line(&mut self, provider: &str, line: &str, out: &mut Vec<Event>) {
        self.plain.push(line);
        out.extend(self.unparsed.warning(provider, line));
    }

    /// How many non-JSON lines [`ExitTurn::unparsed_line`] reports as warnings.
    pub const UNPARSED_LINE_WARNINGS: usize = UnparsedLines::MAX_WARNINGS;

    /// The plain-text lines kept so far.
    pub fn plain_lines(&self) -> &PlainLines {
        &self.plain
    }

    /// Decides the turn from what was recorded and the exit status (see the table above),
    /// pushing an [`Event::Error`] for a failure, then the [`Event::TurnEnd`].
    pub fn finish(
        &self,
        provider: &str,
        exit: Option<&ExitStatus>,
        session_id: Option<String>,
        out: &mut Vec<Event>,
    ) {
        let exit_ok = exit.is_some_and(ExitStatus::success);
        let how = exit
            .map(describe_exit)
            .unwrap_or_else(|| "an unknown status".into());
        let with_plain = |message: String| {
            if self.plain.is_empty() {
                message
            } else {
                format!("{message}: {}", self.plain.text())
            }
        };
        let failure = if let Some(error) = &self.error {
            Some((ErrorCode::Provider, error.clone()))
        } else if !exit_ok && self.completed {
            Some((
                ErrorCode::ExitedEarly,
                with_plain(format!("{provider} exited with {how}")),
            ))
        } else if !exit_ok {
            // Same wording as the other engines: the turn was cut, not just a bad exit.
            Some((
                ErrorCode::ExitedEarly,
                with_plain(format!(
                    "{provider} exited with {how} before finishing the turn"
                )),
            ))
        } else if !self.completed {
            Some((
                ErrorCode::ExitedEarly,
                with_plain(format!(
                    "{provider} exited ({how}) before finishing the turn: its stream ended without the end of the turn"
                )),
            ))
        } else {
            None
        };
        match failure {
            Some((code, message)) => fail_turn(code, message, session_id, out),
            None => out.push(Event::TurnEnd(TurnEnd {
                success: true,
                stop_reason: self.stop.clone().unwrap_or(StopReason::EndTurn),
                session_id,
                result: self.result.clone(),
                error: None,
            })),
        }
    }
}

/// The string at `key` of a JSON object, if it is one.
///
/// ```
/// use bridge_core::normalize::str_at;
/// let line = serde_json::json!({"type": "init", "n": 1});
/// assert_eq!(str_at(&line, "type"), Some("init"));
/// assert_eq!(str_at(&line, "n"), None);
/// ```
pub fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The unsigned number at `key` of a JSON object; 0 when it is absent or not one (token counts).
///
/// ```
/// use bridge_core::normalize::u64_at;
/// let usage = serde_json::json!({"input_tokens": 12});
/// assert_eq!((u64_at(&usage, "input_tokens"), u64_at(&usage, "output_tokens")), (12, 0));
/// ```
pub fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The unsigned number at `key` of a JSON object as a `u32` (a retry attempt or limit), if it
/// is one.
///
/// ```
/// use bridge_core::normalize::u32_at;
/// let retry = serde_json::json!({"attempt": 2});
/// assert_eq!((u32_at(&retry, "attempt"), u32_at(&retry, "max_retries")), (Some(2), None));
/// ```
pub fn u32_at(value: &Value, key: &str) -> Option<u32> {
    value.get(key).and_then(Value::as_u64).map(|n| n as u32)
}

/// `line` parsed as a JSON object; `None` for anything else (plain text, a bare JSON value).
///
/// ```
/// use bridge_core::normalize::json_object;
/// assert!(json_object(r#"{"type":"init"}"#).is_some());
/// assert!(json_object("42").is_none());
/// assert!(json_object("Error: 401").is_none());
/// ```
pub fn json_object(line: &str) -> Option<Value> {
    match serde_json::from_str(line) {
        Ok(value @ Value::Object(_)) => Some(value),
        _ => None,
    }
}

/// `line` of a CLI whose stdout carries only JSON events (`cli` names it): the event, nothing
/// for a blank line, and an `unparsed_line` warning (with the first 200 characters) pushed to
/// `out` for a line that is not a JSON object.
///
/// ```
/// use bridge_core::normalize::json_event;
/// let mut out = Vec::new();
/// assert!(json_event("codex", r#" {"type":"turn.started"} "#, &mut out).is_some());
/// assert!(json_event("codex", "  ", &mut out).is_none());
/// assert!(out.is_empty());
/// assert!(json_event("codex", "panic!", &mut out).is_none());
/// assert_eq!(out.len(), 1);
/// ```
pub fn json_event(cli: &str, line: &str, out: &mut Vec<Event>) -> Option<Value> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return None;
    }
    let value = json_object(trimmed);
    if value.is_none() {
        let shown: String = trimmed.chars().take(200).collect();
        out.push(Event::warning(
            "unparsed_line",
            format!("{cli} printed a line that is not a JSON event: {shown}"),
        ));
    }
    value
}

/// Ends the turn as failed: an [`Event::Error`] with `code` and `message`, then the
/// [`TurnEnd::failed`] with the same message.
///
/// ```
/// use bridge_core::event::{ErrorCode, Event};
/// use bridge_core::normalize::fail_turn;
/// let mut out = Vec::new();
/// fail_turn(ErrorCode::Provider, "429".into(), None, &mut out);
/// assert!(matches!(&out[..], [Event::Error(_), Event::TurnEnd(end)] if !end.success));
/// ```
pub fn fail_turn(
    code: ErrorCode,
    message: String,
    session_id: Option<String>,
    out: &mut Vec<Event>,
) {
    out.push(Event::Error(ErrorInfo::new(code, message.clone())));
    out.push(Event::TurnEnd(TurnEnd::failed(session_id, message)));
}

/// The first non-JSON stdout lines of a turn, bounded (at most [`PlainLines::MAX_LINES`] lines
/// of at most [`PlainLines::MAX_LINE_CHARS`] characters), for error messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainLines {
    lines: Vec<String>,
    dropped: usize,
}

impl PlainLines {
    /// Lines kept.
    pub const MAX_LINES: usize = 20;
    /// Characters kept per line.
    pub const MAX_LINE_CHARS: usize = 500;

    /// Keeps `line` (trimmed; blank lines are ignored) if there is room.
    pub fn push(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        if self.lines.len() >= Self::MAX_LINES {
            self.dropped += 1;
            return;
        }
        let mut kept: String = line.chars().take(Self::MAX_LINE_CHARS).collect();
        if kept.len() < line.len() {
            kept.push('…');
        }
        self.lines.push(kept);
    }

    /// Whether nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The kept lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The kept lines joined with a newline (plus a note when some were dropped).
    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        if self.dropped > 0 {
            text.push_str(&format!("\n… ({} more lines)", self.dropped));
        }
        text
    }
}

/// What [`SnapshotDelta::next`] makes of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotStep {
    /// The snapshot extends what was seen by this text.
    Delta(String),
    /// Nothing new.
    Unchanged,
    /// The snapshot does not extend what was seen (the provider rewrote the text): show it
    /// whole, as a new segment.
    Restart(String),
}

/// Turns growing snapshots (every message repeats the whole text so far, as kimi's print mode
/// does) into deltas.
///
/// ```
/// use bridge_core::normalize::{SnapshotDelta, SnapshotStep};
/// let mut text = SnapshotDelta::default();
/// assert_eq!(text.next("Hel"), SnapshotStep::Delta("Hel".into()));
/// assert_eq!(text.next("Hello"), SnapshotStep::Delta("lo".into()));
/// assert_eq!(text.next("Hello"), SnapshotStep::Unchanged);
/// assert_eq!(text.next("Bye"), SnapshotStep::Restart("Bye".into()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotDelta {
    seen: String,
}

impl SnapshotDelta {
    /// Compares `snapshot` with everything seen so far.
    pub fn next(&mut self, snapshot: &str) -> SnapshotStep {
        match snapshot.strip_prefix(self.seen.as_str()) {
            Some("") => SnapshotStep::Unchanged,
            Some(tail) => {
                let tail = tail.to_string();
                self.seen.push_str(&tail);
                SnapshotStep::Delta(tail)
            }
            None => {
                self.seen = snapshot.to_string();
                SnapshotStep::Restart(snapshot.to_string())
            }
        }
    }

    /// Forgets what was seen (a new message begins).
    pub fn reset(&mut self) {
        self.seen.clear();
    }

    /// The text seen so far.
    pub fn text(&self) -> &str {
        &self.seen
    }
}

/// Replays a recorded turn through `normalizer`, as the engine would run it: the turn start,
/// every stdout line, then every stderr line (a CLI that prints its session id on stderr does
/// so when it exits), then [`Normalizer::finish`] with `exit`. For snapshot tests of captures.
///
/// ```
/// use std::os::unix::process::ExitStatusExt;
/// use bridge_core::event::Event;
/// use bridge_core::normalize::replay;
/// # struct Nothing;
/// # impl bridge_core::turn::Normalizer for Nothing {
/// #     fn line(&mut self, _: &str, _: &mut Vec<Event>) {}
/// #     fn session_id(&self) -> Option<String> { None }
/// # }
/// let events = replay("demo", &mut Nothing, "a\nb", "", std::process::ExitStatus::from_raw(0));
/// assert_eq!(events, [Event::TurnStart { provider: "demo".into() }]);
/// ```
pub fn replay(
    provider: &str,
    normalizer: &mut dyn Normalizer,
    stdout: &str,
    stderr: &str,
    exit: ExitStatus,
) -> Vec<Event> {
    let mut events = vec![Event::TurnStart {
        provider: provider.to_string(),
    }];
    feed(
        normalizer,
        stdout.lines(),
        stderr.lines(),
        &exit,
        &mut events,
    );
    events
}

/// Every stdout line, then every stderr line, then [`Normalizer::finish`] with `exit`.
fn feed<'a>(
    normalizer: &mut dyn Normalizer,
    stdout: impl IntoIterator<Item = &'a str>,
    stderr: impl IntoIterator<Item = &'a str>,
    exit: &ExitStatus,
    events: &mut Vec<Event>,
) {
    for line in stdout {
        normalizer.line(line, events);
    }
    for line in stderr {
        normalizer.stderr_line(line, events);
    }
    normalizer.finish(Some(exit), events);
}

/// Feeds `stdout` then `stderr` lines to `normalizer` and finishes it with exit code
/// `exit_code`, as the engine would; the events, for unit tests of a normalizer.
///
/// ```
/// use bridge_core::event::Event;
/// use bridge_core::normalize::run_lines;
/// # struct Nothing;
/// # impl bridge_core::turn::Normalizer for Nothing {
/// #     fn line(&mut self, _: &str, _: &mut Vec<Event>) {}
/// #     fn session_id(&self) -> Option<String> { None }
/// # }
/// assert!(run_lines(&mut Nothing, &["a", "b"], &[], 0).is_empty());
/// ```
#[cfg(unix)]
pub fn run_lines(
    normalizer: &mut dyn Normalizer,
    stdout: &[&str],
    stderr: &[&str],
    exit_code: i32,
) -> Vec<Event> {
    use std::os::unix::process::ExitStatusExt;
    let mut events = Vec::new();
    let exit = ExitStatus::from_raw(exit_code << 8);
    feed(
        normalizer,
        stdout.iter().copied(),
        stderr.iter().copied(),
        &exit,
        &mut events,
    );
    events
}

/// The [`TurnEnd`] that ends `events`, for tests.
///
/// # Panics
///
/// When the last event is not a [`Event::TurnEnd`] (the message shows it).
///
/// ```
/// use bridge_core::event::Event;
/// use bridge_core::event::TurnEnd;
/// use bridge_core::normalize::turn_end;
/// let events = [Event::BlockReset, Event::TurnEnd(TurnEnd::failed(None, "x".into()))];
/// assert!(!turn_end(&events).success);
/// ```
pub fn turn_end(events: &[Event]) -> &TurnEnd {
    match events.last() {
        Some(Event::TurnEnd(end)) => end,
        other => panic!("the events do not end with a turn end: {other:?}"),
    }
}

/// The turn's usage: the sum of the per-message (or per-step) usage a CLI reports.
///
/// ```
/// use bridge_core::event::{Usage, UsageScope};
/// use bridge_core::normalize::TurnUsage;
/// let step = Usage { scope: UsageScope::Message, input_tokens: 10, output_tokens: 2,
///     cache_read_input_tokens: 0, cache_creation_input_tokens: 0,
///     reasoning_tokens: Some(1), cost_usd: Some(0.5), context_window: None,
///     context_tokens: None };
/// let mut total = TurnUsage::default();
/// total.add(&step);
/// total.add(&step);
/// let turn = total.take().unwrap();
/// assert_eq!((turn.scope, turn.input_tokens, turn.reasoning_tokens, turn.cost_usd),
///            (UsageScope::Turn, 20, Some(2), Some(1.0)));
/// assert!(total.take().is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnUsage {
    total: Option<Usage>,
}

impl TurnUsage {
    /// Adds one message's usage.
    pub fn add(&mut self, usage: &Usage) {
        let total = self.total.get_or_insert(Usage {
            scope: UsageScope::Turn,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0,
            reasoning_tokens: None,
            cost_usd: None,
            context_window: None,
            context_tokens: None,
        });
        total.accumulate(usage);
    }

    /// The turn's usage (scope [`UsageScope::Turn`]), if any message reported some; resets.
    pub fn take(&mut self) -> Option<Usage> {
        self.total.take()
    }
}

/// `unparsed_line` warnings for the first [`UnparsedLines::MAX_WARNINGS`] non-JSON lines a CLI
/// prints on stdout (the lines themselves go to the error text through [`PlainLines`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnparsedLines {
    warned: usize,
}

impl UnparsedLines {
    /// Lines reported.
    pub const MAX_WARNINGS: usize = 5;

    /// The warning for `line` from `provider`, unless it is blank or enough were reported.
    ///
    /// ```
    /// use bridge_core::normalize::UnparsedLines;
    /// let mut unparsed = UnparsedLines::default();
    /// assert!(unparsed.warning("kimi", "  ").is_none());
    /// assert!(unparsed.warning("kimi", "Error code: 401").is_some());
    /// ```
    pub fn warning(&mut self, provider: &str, line: &str) -> Option<Event> {
        if self.warned >= Self::MAX_WARNINGS || line.trim().is_empty() {
            return None;
        }
        self.warned += 1;
        let shown: String = line.trim().chars().take(300).collect();
        Some(Event::warning(
            "unparsed_line",
            format!("{provider} printed a line that is not JSON: {shown}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn verdict(turn: &ExitTurn, exit: Option<ExitStatus>) -> (Option<ErrorInfo>, TurnEnd) {
        let mut out = Vec::new();
        turn.finish("cli", exit.as_ref(), Some("s1".into()), &mut out);
        let Some(Event::TurnEnd(end)) = out.pop() else {
            panic!("no turn end: {out:?}");
        };
        let error = match out.pop() {
            Some(Event::Error(info)) => Some(info),
            None => None,
            Some(other) => panic!("unexpected {other:?}"),
        };
        assert!(out.is_empty());
        (error, end)
    }

    fn code(c: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(c << 8))
    }

    /// (turn, exit, success, error code, message fragment)
    type Row<'a> = (
        &'a ExitTurn,
        Option<ExitStatus>,
        bool,
        Option<ErrorCode>,
        &'a str,
    );

    #[test]
    fn the_rule_table() {
        let mut done = ExitTurn::new();
        done.complete(StopReason::EndTurn, Some("Hi".into()));
        let mut failed = done.clone();
        failed.error("429 rate limited");
        let mut cut = ExitTurn::new();
        cut.plain_line("Aborted.");
        let table: Vec<Row> = vec![
            (&done, code(0), true, None, ""),
            (
                &done,
                code(1),
                false,
                Some(ErrorCode::ExitedEarly),
                "exit code 1",
            ),
            (
                &done,
                Some(ExitStatus::from_raw(9)),
                false,
                Some(ErrorCode::ExitedEarly),
                "signal 9",
            ),
            (
                &done,
                None,
                false,
                Some(ErrorCode::ExitedEarly),
                "unknown status",
            ),
            (
                &failed,
                code(0),
                false,
                Some(ErrorCode::Provider),
                "429 rate limited",
            ),
            (
                &failed,
                code(75),
                false,
                Some(ErrorCode::Provider),
                "429 rate limited",
            ),
            (
                &cut,
                code(0),
                false,
                Some(ErrorCode::ExitedEarly),
                "before finishing the turn: its stream ended without the end of the turn: Aborted.",
            ),
        ];
        for (turn, exit, success, error_code, fragment) in table {
            let (error, end) = verdict(turn, exit);
            assert_eq!(end.success, success, "{turn:?} {exit:?}");
            assert_eq!(end.session_id.as_deref(), Some("s1"));
            assert_eq!(
                error.as_ref().map(|e| e.code),
                error_code,
                "{turn:?} {exit:?}"
            );
            if success {
                assert_eq!(end.result.as_deref(), Some("Hi"));
                assert_eq!(end.stop_reason, StopReason::EndTurn);
            } else {
                let message = error.unwrap().message;
                assert!(message.contains(fragment), "{message}");
                assert_eq!(end.error.as_deref(), Some(message.as_str()));
                assert_eq!(end.stop_reason, StopReason::Error);
            }
        }
    }

    #[test]
    fn a_retry_clears_the_earlier_error_and_completion() {
        let mut turn = ExitTurn::new();
        turn.error("500 server error");
        turn.complete(StopReason::Error, None);
        turn.reopen();
        assert!(!turn.is_complete());
        assert_eq!(turn.error_message(), None);
        turn.complete(StopReason::EndTurn, Some("ok".into()));
        let (error, end) = verdict(&turn, code(0));
        assert!(error.is_none());
        assert!(end.success);
    }

    #[test]
    fn plain_lines_are_bounded() {
        let mut plain = PlainLines::default();
        plain.push("   ");
        assert!(plain.is_empty());
        for i in 0..100 {
            plain.push(&format!("{i} {}", "é".repeat(1000)));
        }
        assert_eq!(plain.lines().len(), PlainLines::MAX_LINES);
        assert!(plain.lines()[0].ends_with('…'));
        assert!(plain.lines()[0].chars().count() <= PlainLines::MAX_LINE_CHARS + 1);
        assert!(plain.text().ends_with("(80 more lines)"));
    }

    #[test]
    fn snapshots_become_deltas() {
        let mut text = SnapshotDelta::default();
        let steps: Vec<SnapshotStep> = ["", "a", "ab", "ab", "abc", "x"]
            .into_iter()
            .map(|s| text.next(s))
            .collect();
        assert_eq!(
            steps,
            [
                SnapshotStep::Unchanged,
                SnapshotStep::Delta("a".into()),
                SnapshotStep::Delta("b".into()),
                SnapshotStep::Unchanged,
                SnapshotStep::Delta("c".into()),
                SnapshotStep::Restart("x".into()),
            ]
        );
        assert_eq!(text.text(), "x");
        text.reset();
        assert_eq!(text.next("x"), SnapshotStep::Delta("x".into()));
    }
}
