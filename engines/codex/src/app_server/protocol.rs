//! The part of the `codex app-server` protocol the engine speaks, as Rust types.
//!
//! The authority is the schema of the pinned binary, `codex app-server generate-json-schema`
//! of Codex 0.171.0, committed as `engines/codex/schema/app-server-0.171.0.schema.json`. Each
//! type here is named after its definition there, and `tests/app_server_schema.rs` checks them
//! against it: every field and enum value used here must exist in Codex's schema, every field
//! Codex requires in what the bridge sends must be sent, and every field the bridge requires in
//! what it receives must be required by Codex. A field renamed by a new Codex fails that test,
//! not a user's turn. Only the stable surface is used (`experimentalApi` is off).
//!
//! Unknown fields are ignored on input (serde's default), and unknown item types and
//! notifications are skipped, so additions in newer versions pass through.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Method names the engine uses, checked against the schema's method lists.
pub mod method {
    /// Client request: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Client notification after the handshake.
    pub const INITIALIZED: &str = "initialized";
    /// Client request: a new thread.
    pub const THREAD_START: &str = "thread/start";
    /// Client request: load a saved thread.
    pub const THREAD_RESUME: &str = "thread/resume";
    /// Client request: one turn.
    pub const TURN_START: &str = "turn/start";
    /// Client request: stop the running turn.
    pub const TURN_INTERRUPT: &str = "turn/interrupt";

    /// Server notification: a turn began.
    pub const TURN_STARTED: &str = "turn/started";
    /// Server notification: a turn ended (completed, interrupted or failed).
    pub const TURN_COMPLETED: &str = "turn/completed";
    /// Server notification: an error (retried or fatal).
    pub const ERROR: &str = "error";
    /// Server notification: an item began.
    pub const ITEM_STARTED: &str = "item/started";
    /// Server notification: an item finished.
    pub const ITEM_COMPLETED: &str = "item/completed";
    /// Server notification: assistant text.
    pub const AGENT_MESSAGE_DELTA: &str = "item/agentMessage/delta";
    /// Server notification: reasoning summary text.
    pub const REASONING_SUMMARY_DELTA: &str = "item/reasoning/summaryTextDelta";
    /// Server notification: raw reasoning text.
    pub const REASONING_TEXT_DELTA: &str = "item/reasoning/textDelta";
    /// Server notification: a new reasoning summary part.
    pub const REASONING_SUMMARY_PART: &str = "item/reasoning/summaryPartAdded";
    /// Server notification: command output.
    pub const COMMAND_OUTPUT_DELTA: &str = "item/commandExecution/outputDelta";
    /// Server notification: token counts.
    pub const TOKEN_USAGE_UPDATED: &str = "thread/tokenUsage/updated";
    /// Server notification: the turn's aggregated diff.
    pub const TURN_DIFF_UPDATED: &str = "turn/diff/updated";
    /// Server notification: the plan.
    pub const TURN_PLAN_UPDATED: &str = "turn/plan/updated";

    /// Server request: may this command run?
    pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
    /// Server request: may these files change?
    pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
    /// Server request: the model asks the user questions.
    pub const USER_INPUT: &str = "item/tool/requestUserInput";

    /// Every client request the engine sends.
    pub const CLIENT_REQUESTS: &[&str] = &[
        INITIALIZE,
        THREAD_START,
        THREAD_RESUME,
        TURN_START,
        TURN_INTERRUPT,
    ];
    /// Every server notification the engine reads.
    pub const SERVER_NOTIFICATIONS: &[&str] = &[
        TURN_STARTED,
        TURN_COMPLETED,
        ERROR,
        ITEM_STARTED,
        ITEM_COMPLETED,
        AGENT_MESSAGE_DELTA,
        REASONING_SUMMARY_DELTA,
        REASONING_TEXT_DELTA,
        REASONING_SUMMARY_PART,
        COMMAND_OUTPUT_DELTA,
        TOKEN_USAGE_UPDATED,
        TURN_DIFF_UPDATED,
        TURN_PLAN_UPDATED,
    ];
    /// Every server request the engine answers.
    pub const SERVER_REQUESTS: &[&str] = &[COMMAND_APPROVAL, FILE_CHANGE_APPROVAL, USER_INPUT];
}

/// `initialize` params.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is (feeds Codex's user agent).
    pub client_info: ClientInfo,
    /// What the client opts into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<InitializeCapabilities>,
}

/// The client's name and version.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClientInfo {
    /// Short name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version.
    pub version: String,
}

/// Capabilities the client declares.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Notifications the server need not send (nobody reads them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// Approval policy (`AskForApproval`): when Codex asks before running something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AskForApproval {
    /// Ask when the model requests more than the sandbox allows.
    OnRequest,
    /// Never ask: what the sandbox refuses fails.
    Never,
}

/// The sandbox of a thread (`SandboxMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read anything, write nothing.
    ReadOnly,
    /// Write in the workspace.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

/// The sandbox of one turn (`SandboxPolicy`, the per-turn override).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Read anything, write nothing.
    ReadOnly,
    /// Write in the workspace.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

impl From<SandboxMode> for SandboxPolicy {
    fn from(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
            SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
            SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        }
    }
}

/// `thread/start` params.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Model slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Extra developer instructions (the request's system prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// `fast` / `flex`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// Config overrides, as `-c key=value` takes them (dotted keys, JSON values): the
    /// session's MCP servers (`mcp_servers.<name>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `thread/resume` params: the thread, and the same settings as a `thread/start`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread.
    pub thread_id: String,
    /// The settings (cwd, model, approval policy, sandbox, instructions, tier).
    #[serde(flatten)]
    pub settings: ThreadStartParams,
    /// Leave the earlier turns out of the answer (the bridge does not replay them; Codex calls
    /// full-history hydration deprecated).
    pub exclude_turns: bool,
}

/// `thread/start` and `thread/resume` results (`ThreadStartResponse`, `ThreadResumeResponse`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ThreadStartResponse {
    /// The thread.
    pub thread: Thread,
}

/// A thread, as far as the bridge reads it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Thread {
    /// Its id (the bridge's session id).
    pub id: String,
}

/// One input item of a turn (`UserInput`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image file on this machine.
    LocalImage {
        /// Its path.
        path: String,
    },
}

/// `turn/start` params; the overrides stick for later turns of the thread.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// The user's message.
    pub input: Vec<UserInput>,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Approval policy from this turn on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox from this turn on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
    /// Model from this turn on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort from this turn on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// `turn/start` result.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TurnStartResponse {
    /// The turn that started.
    pub turn: Turn,
}

/// `turn/interrupt` params.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The running turn.
    pub turn_id: String,
}

/// A turn.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Turn {
    /// Its id.
    pub id: String,
    /// Where it is.
    pub status: TurnStatus,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<TurnError>,
}

/// How a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// Done.
    Completed,
    /// Stopped by `turn/interrupt`.
    Interrupted,
    /// Failed (see the error).
    Failed,
    /// Running.
    InProgress,
}

/// A turn's error.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// Codex's message.
    pub message: String,
    /// Codex's classification (`unauthorized`, `{"httpConnectionFailed":{…}}`, …).
    #[serde(default)]
    pub codex_error_info: Option<Value>,
    /// More text.
    #[serde(default)]
    pub additional_details: Option<String>,
}

/// `turn/started` and `turn/completed` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn: Turn,
}

/// `error` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The error.
    pub error: TurnError,
    /// Codex retries (a status), or gives up (the turn fails next).
    pub will_retry: bool,
}

/// Params of the text deltas (`AgentMessageDeltaNotification`; the reasoning and command
/// output deltas have the same two fields).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageDeltaNotification {
    /// The item the text belongs to.
    pub item_id: String,
    /// The text.
    pub delta: String,
}

/// `item/started` and `item/completed` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ItemCompletedNotification {
    /// The item.
    pub item: ThreadItem,
}

/// An item of a turn (`ThreadItem`); the kinds the bridge does not show are [`ThreadItem::Other`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// Assistant text.
    AgentMessage {
        /// Its id.
        id: String,
        /// The whole text (empty in `item/started`).
        text: String,
    },
    /// Reasoning.
    Reasoning {
        /// Its id.
        id: String,
        /// Summary parts.
        #[serde(default)]
        summary: Vec<String>,
        /// Raw reasoning parts.
        #[serde(default)]
        content: Vec<String>,
    },
    /// A shell command.
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        /// Its id.
        id: String,
        /// The command line.
        command: String,
        /// Where it runs.
        cwd: String,
        /// How it stands.
        status: ItemStatus,
        /// stdout and stderr.
        #[serde(default)]
        aggregated_output: Option<String>,
        /// Its exit code.
        #[serde(default)]
        exit_code: Option<i64>,
    },
    /// File edits.
    FileChange {
        /// Its id.
        id: String,
        /// Per file.
        changes: Vec<FileUpdateChange>,
        /// How it stands.
        status: ItemStatus,
    },
    /// An MCP tool call.
    McpToolCall {
        /// Its id.
        id: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// Its result.
        #[serde(default)]
        result: Option<McpToolCallResult>,
        /// Its error.
        #[serde(default)]
        error: Option<McpToolCallError>,
        /// How it stands.
        status: McpToolCallStatus,
    },
    /// A web search.
    WebSearch {
        /// Its id.
        id: String,
        /// The query.
        query: String,
    },
    /// Anything else (user messages, plans as items, compaction, …).
    #[serde(other)]
    #[schemars(skip)]
    Other,
}

/// How a command, patch or MCP call stands (`CommandExecutionStatus`, `PatchApplyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ItemStatus {
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Refused (by the user or the policy).
    Declined,
}

impl ItemStatus {
    /// The `codex exec` spelling (`in_progress`, `completed`, …).
    pub fn exec_name(self) -> &'static str {
        match self {
            ItemStatus::InProgress => "in_progress",
            ItemStatus::Completed => "completed",
            ItemStatus::Failed => "failed",
            ItemStatus::Declined => "declined",
        }
    }
}

/// How an MCP tool call stands (it cannot be declined).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpToolCallStatus {
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed.
    Failed,
}

impl McpToolCallStatus {
    /// The `codex exec` spelling.
    pub fn exec_name(self) -> &'static str {
        match self {
            McpToolCallStatus::InProgress => ItemStatus::InProgress.exec_name(),
            McpToolCallStatus::Completed => ItemStatus::Completed.exec_name(),
            McpToolCallStatus::Failed => ItemStatus::Failed.exec_name(),
        }
    }
}

/// One file of a file change.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FileUpdateChange {
    /// Absolute path.
    pub path: String,
    /// What happens to it.
    pub kind: PatchChangeKind,
    /// The new content (add), the old content (delete) or a unified diff (update).
    pub diff: String,
}

/// What happens to a file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// Created.
    Add,
    /// Deleted.
    Delete,
    /// Edited, maybe moved.
    Update {
        /// The new path of a move.
        #[serde(default)]
        move_path: Option<String>,
    },
}

/// An MCP tool's result.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    /// MCP content blocks.
    pub content: Vec<Value>,
    /// Structured content.
    #[serde(default)]
    pub structured_content: Option<Value>,
}

/// An MCP tool's error.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct McpToolCallError {
    /// Its message.
    pub message: String,
}

/// `thread/tokenUsage/updated` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    /// The counts.
    pub token_usage: ThreadTokenUsage,
}

/// The thread's token counts.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// The thread's running total.
    pub total: TokenUsageBreakdown,
    /// The last model call.
    pub last: TokenUsageBreakdown,
    /// The model's context window.
    #[serde(default)]
    pub model_context_window: Option<u64>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Input, cached included.
    pub input_tokens: u64,
    /// Cached input.
    pub cached_input_tokens: u64,
    /// Input written to the cache.
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Output, reasoning included.
    pub output_tokens: u64,
    /// Reasoning output.
    pub reasoning_output_tokens: u64,
}

/// `turn/diff/updated` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TurnDiffUpdatedNotification {
    /// The turn's aggregated unified diff.
    pub diff: String,
}

/// `turn/plan/updated` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TurnPlanUpdatedNotification {
    /// Why the plan changed.
    #[serde(default)]
    pub explanation: Option<String>,
    /// The steps.
    pub plan: Vec<TurnPlanStep>,
}

/// One step of a plan.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TurnPlanStep {
    /// What.
    pub step: String,
    /// How far.
    pub status: TurnPlanStepStatus,
}

/// How far a plan step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnPlanStepStatus {
    /// Not started.
    Pending,
    /// Being done.
    InProgress,
    /// Done.
    Completed,
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// The command's item.
    pub item_id: String,
    /// Why the model wants it (its justification).
    #[serde(default)]
    pub reason: Option<String>,
    /// The command line.
    #[serde(default)]
    pub command: Option<String>,
    /// Where it would run.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The file change's item (its diffs came with `item/started`).
    pub item_id: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
    /// A directory the change would get write access to.
    #[serde(default)]
    pub grant_root: Option<String>,
}

/// A decision on a command (`CommandExecutionApprovalDecision`, its plain forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionApprovalDecision {
    /// Run it.
    Accept,
    /// Run it and what matches it for the rest of the session.
    AcceptForSession,
    /// Do not run it; the turn goes on.
    Decline,
    /// Do not run it, and interrupt the turn.
    Cancel,
}

/// `item/commandExecution/requestApproval` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommandExecutionRequestApprovalResponse {
    /// The decision.
    pub decision: CommandExecutionApprovalDecision,
}

/// A decision on a file change (`FileChangeApprovalDecision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeApprovalDecision {
    /// Apply it.
    Accept,
    /// Apply it and later changes to the same files.
    AcceptForSession,
    /// Do not apply it; the turn goes on.
    Decline,
    /// Do not apply it, and interrupt the turn.
    Cancel,
}

/// `item/fileChange/requestApproval` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileChangeRequestApprovalResponse {
    /// The decision.
    pub decision: FileChangeApprovalDecision,
}

/// `item/tool/requestUserInput` params.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The tool call's item.
    pub item_id: String,
    /// The questions.
    pub questions: Vec<ToolRequestUserInputQuestion>,
}

/// One question.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputQuestion {
    /// Its id (the key of its answer).
    pub id: String,
    /// A short header.
    pub header: String,
    /// The question.
    pub question: String,
    /// The choices, if any.
    #[serde(default)]
    pub options: Option<Vec<ToolRequestUserInputOption>>,
}

/// One choice.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputOption {
    /// What it says.
    pub label: String,
    /// What it means.
    pub description: String,
}

/// `item/tool/requestUserInput` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolRequestUserInputResponse {
    /// Per question id.
    pub answers: BTreeMap<String, ToolRequestUserInputAnswer>,
}

/// The answer to one question.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolRequestUserInputAnswer {
    /// The chosen labels or typed text.
    pub answers: Vec<String>,
}
