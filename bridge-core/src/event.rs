//! The one event model every channel produces and every encoder consumes.
//!
//! A channel turns its CLI's native output into a sequence of [`Event`]s that always ends with
//! exactly one [`Event::TurnEnd`]. Encoders ([`crate::encode`]) turn the same sequence into the
//! ai-bridge marker lines or into versioned JSONL, so both wire formats always agree.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the JSONL wire format (`"v"` in every line). Bump on breaking changes only.
pub const PROTOCOL_VERSION: u32 = 1;

/// One thing that happened during a turn, normalized across providers.
///
/// Serialized with an internal `type` tag in `snake_case`, e.g.
/// `{"type":"text_delta","text":"Hi"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A turn begins (always the first event of a turn).
    TurnStart {
        /// The provider key (`claude`, `codex`, …).
        provider: String,
    },
    /// The provider's conversation id (Claude session id, Codex thread id, ACP session id).
    /// Resume a later turn by passing it back as `sessionId` / `threadId`.
    SessionId {
        /// The id, as the provider spells it.
        id: String,
    },
    /// A piece of assistant text, to append to the current text segment.
    TextDelta {
        /// The text piece (may contain newlines).
        text: String,
    },
    /// A piece of model reasoning, to append to the current thinking segment.
    ThinkingDelta {
        /// The reasoning piece.
        text: String,
    },
    /// A complete assistant text block that was *not* streamed as deltas before
    /// (providers that only give whole messages).
    Text {
        /// The whole block.
        text: String,
    },
    /// A new assistant message begins: clients start a new text/thinking segment.
    BlockReset,
    /// The model asked to run a tool.
    ToolUse(ToolUse),
    /// A tool finished (or was refused).
    ToolResult(ToolResult),
    /// Token usage (and cost where known).
    Usage(Usage),
    /// A Claude-shaped transcript message (`{"type":"assistant"|"user"|"system"|"result",…}`),
    /// printed as `[MESSAGE] {…}` in the markers format because plugins render from it.
    /// Omitted from JSONL unless raw output is requested: its content is already carried by
    /// the typed events.
    Message {
        /// The message object.
        message: Value,
    },
    /// Something the provider is doing that is not output: retrying, reconnecting, compacting.
    Status(Status),
    /// Something the user should know that does not fail the turn.
    Warning {
        /// Machine-readable reason, e.g. `permission_denied`, `unparsed_line`, `line_too_long`.
        code: String,
        /// Human-readable text.
        message: String,
    },
    /// The agent waits for an approval; answer with a `permission_response` control message
    /// (or through the file IPC).
    PermissionRequest(crate::permission::PermissionRequest),
    /// What the bridge did with an approval: the decision applied, who made it, and why it
    /// differs from what was asked, if it does.
    PermissionDecision(crate::permission::EffectiveDecision),
    /// The turn failed. Always followed by a [`Event::TurnEnd`] with a failed outcome.
    Error(ErrorInfo),
    /// The provider's native line, verbatim (only when raw output was requested).
    Raw {
        /// The line as the CLI printed it (lossily decoded if it was not UTF-8).
        line: String,
    },
    /// The turn is over. Always the last event of a turn.
    TurnEnd(TurnEnd),
}

/// What kind of work a tool call does, normalized across providers (the ACP tool kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or other data.
    Read,
    /// Creates or modifies files.
    Edit,
    /// Deletes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches files or code.
    Search,
    /// Runs a command.
    Execute,
    /// Internal reasoning or planning (todo lists, plans).
    Think,
    /// Fetches from the network.
    Fetch,
    /// Switches the session mode (e.g. leaves plan mode).
    SwitchMode,
    /// Anything else.
    Other,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolUse {
    /// Provider tool call id; [`ToolResult::tool_use_id`] refers to it.
    pub id: String,
    /// Provider tool name (`Bash`, `Edit`, `shell`, …).
    pub name: String,
    /// Normalized kind.
    pub kind: ToolKind,
    /// Tool input as the provider gave it.
    pub input: Value,
    /// The file change, when the provider describes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<FileDiff>,
}

/// A change to one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileDiff {
    /// Path of the file.
    pub path: String,
    /// Text being replaced (`None` for a new file or a whole-file write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    /// Replacement text (`None` for a deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_text: Option<String>,
}

/// The outcome of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolResult {
    /// The [`ToolUse::id`] this answers.
    pub tool_use_id: String,
    /// Result content as the provider gave it (a string, or Claude content blocks).
    pub content: Value,
    /// Whether the tool failed or was refused.
    pub is_error: bool,
}

/// Which span a [`Usage`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UsageScope {
    /// One model response (what ai-bridge prints as `[USAGE]`).
    Message,
    /// The whole turn (all model calls of it).
    Turn,
}

/// Token usage. Counts a provider does not report are zero or `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    /// Which span this covers.
    pub scope: UsageScope,
    /// Input (prompt) tokens, excluding cache reads and writes.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Reasoning tokens, where the provider reports them separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Cost in USD, where the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The model's context window in tokens, where the provider reports it (Claude's
    /// `modelUsage.*.contextWindow`, Codex's `model_context_window`, an ACP agent's
    /// `usage_update` size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The tokens in the context after this span, where the provider says (Codex: its last
    /// model call; an ACP agent: its `usage_update`'s `used`). `None`: the sum of this span's
    /// counts stands in (exact for one model call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

impl Usage {
    /// Adds `other`'s counts to these (saturating: the counts come from the CLI); reasoning
    /// tokens and cost are summed where either side has them; the context window and tokens are
    /// `other`'s where it has them (a level, not a count). The scope stays.
    ///
    /// ```
    /// use bridge_core::event::{Usage, UsageScope};
    /// let mut sum = Usage { scope: UsageScope::Turn, input_tokens: u64::MAX, output_tokens: 1,
    ///     cache_read_input_tokens: 0, cache_creation_input_tokens: 0, reasoning_tokens: None,
    ///     cost_usd: Some(0.5), context_window: None, context_tokens: None };
    /// sum.accumulate(&Usage { scope: UsageScope::Message, input_tokens: 1, output_tokens: 2,
    ///     cache_read_input_tokens: 3, cache_creation_input_tokens: 0, reasoning_tokens: Some(4),
    ///     cost_usd: None, context_window: Some(200_000), context_tokens: None });
    /// assert_eq!((sum.input_tokens, sum.output_tokens, sum.cache_read_input_tokens), (u64::MAX, 3, 3));
    /// assert_eq!((sum.reasoning_tokens, sum.cost_usd, sum.scope), (Some(4), Some(0.5), UsageScope::Turn));
    /// ```
    pub fn accumulate(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.reasoning_tokens = match (self.reasoning_tokens, other.reasoning_tokens) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        // The context is a level, not a count: the newer span's wins.
        self.context_window = other.context_window.or(self.context_window);
        self.context_tokens = other.context_tokens.or(self.context_tokens);
    }

    /// The tokens in the context after this span: [`Usage::context_tokens`] where known, else
    /// the span's input (with the cache reads and writes) and output.
    ///
    /// ```
    /// use bridge_core::event::{Usage, UsageScope};
    /// let mut usage = Usage { scope: UsageScope::Turn, input_tokens: 10, output_tokens: 2,
    ///     cache_read_input_tokens: 100, cache_creation_input_tokens: 5, reasoning_tokens: None,
    ///     cost_usd: None, context_window: None, context_tokens: None };
    /// assert_eq!(usage.context_used(), 117);
    /// usage.context_tokens = Some(50);
    /// assert_eq!(usage.context_used(), 50);
    /// ```
    pub fn context_used(&self) -> u64 {
        self.context_tokens.unwrap_or_else(|| {
            self.input_tokens
                .saturating_add(self.cache_read_input_tokens)
                .saturating_add(self.cache_creation_input_tokens)
                .saturating_add(self.output_tokens)
        })
    }
}

/// Provider activity that is neither output nor failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Status {
    /// What is happening.
    pub kind: StatusKind,
    /// Human-readable text, e.g. `Retrying after HTTP 529 (attempt 1/10)`.
    pub message: String,
    /// Attempt number for retries and reconnects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Maximum attempts, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

/// Kinds of [`Status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusKind {
    /// The provider retries a failed API call.
    Retry,
    /// The provider reconnects a dropped stream.
    Reconnect,
    /// The provider waits for the model (request sent).
    Requesting,
    /// Anything else.
    Other,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorInfo {
    /// Machine-readable category.
    pub code: ErrorCode,
    /// Human-readable message (the provider's own words where it gave any).
    pub message: String,
    /// Last lines the CLI wrote to stderr, when they help explain the failure (secrets redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

impl ErrorInfo {
    /// An error without a stderr tail.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorInfo {
            code,
            message: message.into(),
            stderr_tail: None,
        }
    }

    /// The same error with the CLI's last stderr lines (none when `tail` is empty).
    ///
    /// ```
    /// use bridge_core::event::{ErrorCode, ErrorInfo};
    /// let e = ErrorInfo::new(ErrorCode::ExitedEarly, "exited").with_stderr_tail(String::new());
    /// assert_eq!(e.stderr_tail, None);
    /// ```
    pub fn with_stderr_tail(mut self, tail: String) -> Self {
        self.stderr_tail = (!tail.is_empty()).then_some(tail);
        self
    }
}

/// Categories of [`ErrorInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request JSON was malformed or had wrong field types.
    InvalidRequest,
    /// The provider CLI is not installed (the message names the package).
    CliNotFound,
    /// The CLI could not be started.
    SpawnFailed,
    /// The provider reported an error (API error, bad session id, …).
    Provider,
    /// The CLI exited (or crashed) before its terminal event.
    ExitedEarly,
    /// No output for longer than the idle deadline.
    IdleTimeout,
    /// The turn ran longer than the wall-clock deadline.
    WallTimeout,
    /// The turn was interrupted by the user.
    Interrupted,
    /// An internal bridge error.
    Internal,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnEnd {
    /// Whether the provider's own terminal event reported success.
    pub success: bool,
    /// Why the model stopped (`end_turn`, `max_tokens`, `interrupted`, `error`, …).
    pub stop_reason: StopReason,
    /// The conversation id to resume with, if one was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The final assistant text, where the provider reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The error message, when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TurnEnd {
    /// The end of a turn that failed with `message`.
    ///
    /// ```
    /// use bridge_core::event::{StopReason, TurnEnd};
    /// let end = TurnEnd::failed(Some("s1".into()), "401".into());
    /// assert!(!end.success);
    /// assert_eq!((end.stop_reason, end.error.as_deref()), (StopReason::Error, Some("401")));
    /// ```
    pub fn failed(session_id: Option<String>, message: String) -> TurnEnd {
        TurnEnd {
            success: false,
            stop_reason: StopReason::Error,
            session_id,
            result: None,
            error: Some(message),
        }
    }
}

/// Normalized stop reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The output token limit was hit.
    MaxTokens,
    /// The turn limit was hit.
    MaxTurns,
    /// The model refused.
    Refusal,
    /// The user interrupted.
    Interrupted,
    /// The turn failed.
    Error,
    /// A provider-specific reason, verbatim.
    Other(String),
}

impl StopReason {
    /// Maps a provider stop-reason string (Anthropic, OpenAI, ACP spellings) to a [`StopReason`].
    ///
    /// ```
    /// use bridge_core::event::StopReason;
    /// assert_eq!(StopReason::from_provider("end_turn"), StopReason::EndTurn);
    /// assert_eq!(StopReason::from_provider("max_output_tokens"), StopReason::MaxTokens);
    /// assert_eq!(StopReason::from_provider("cancelled"), StopReason::Interrupted);
    /// ```
    pub fn from_provider(reason: &str) -> StopReason {
        match reason {
            "end_turn" | "stop" | "stop_sequence" | "completed" | "tool_use" => StopReason::EndTurn,
            "max_tokens" | "max_output_tokens" | "length" => StopReason::MaxTokens,
            "max_turns" | "max_turn_requests" | "error_max_turns" => StopReason::MaxTurns,
            "refusal" | "content_filter" => StopReason::Refusal,
            "cancelled" | "canceled" | "interrupted" | "aborted" => StopReason::Interrupted,
            "error" | "failed" => StopReason::Error,
            other => StopReason::Other(other.to_string()),
        }
    }
}

impl Event {
    /// Shorthand for an [`Event::Error`].
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Event {
        Event::Error(ErrorInfo::new(code, message))
    }

    /// Shorthand for an [`Event::Status`] of kind [`StatusKind::Other`] (no retry counts).
    pub fn status(message: impl Into<String>) -> Event {
        Event::Status(Status {
            kind: StatusKind::Other,
            message: message.into(),
            attempt: None,
            max_attempts: None,
        })
    }

    /// Shorthand for an [`Event::Warning`].
    pub fn warning(code: impl Into<String>, message: impl Into<String>) -> Event {
        Event::Warning {
            code: code.into(),
            message: message.into(),
        }
    }
}
