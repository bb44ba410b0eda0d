//! `codex app-server` notifications and approval requests → [`Event`]s. Pure: no I/O, no clock.
//!
//! The plugin must see what it sees from `codex exec` (same marker dialect, same Claude-shaped
//! `[MESSAGE]` payloads, same tool cards), plus deltas and approvals. So this normalizer
//! translates the app-server's items into `codex exec`'s vocabulary and lets the exec
//! normalizer ([`CodexNormalizer`]) make the cards; only what exec does not have is its own:
//!
//! | app-server | events |
//! |---|---|
//! | `item/agentMessage/delta` | `text_delta` (the `[MESSAGE]` when the item completes) |
//! | `item/reasoning/summaryTextDelta`, `…/textDelta` | `thinking_delta` (likewise) |
//! | `item/started`, `item/completed` `commandExecution`, `fileChange` (its diffs included), `mcpToolCall`, `webSearch` | the exec cards (`Bash`/`Read`/…, `Write`/`Edit`, `mcp__…`, `WebSearch`) |
//! | `turn/plan/updated` | `TodoWrite` card |
//! | `turn/diff/updated` | the last one, as a `turn_diff` `[MESSAGE]` before the turn's end |
//! | `thread/tokenUsage/updated` | summed per turn (`last` of each model call) → `usage` + token_count `[MESSAGE]` |
//! | `error` `willRetry:true` | `status` (retry) |
//! | `error` `willRetry:false` | the reason of the failed turn that follows |
//! | `turn/completed` `completed` / `failed` / `interrupted` | `turn_end` success / error + failure / interrupted |
//! | `item/commandExecution/requestApproval` | `permission_request` (Bash, command, cwd, reason) |
//! | `item/fileChange/requestApproval` | `permission_request` (Write/Edit, paths, the diff) |
//! | `item/tool/requestUserInput` | `permission_request` of kind `question` |

use std::collections::{BTreeMap, HashMap, HashSet};

use bridge_core::event::{Event, Status, StatusKind, ToolKind};
use bridge_core::jsonrpc::Id;
use bridge_core::permission::{
    DecisionKind, EffectiveDecision, PermissionRequest, RequestKind, Resolution,
};
use bridge_core::turn::interrupted_end;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::protocol::{
    AgentMessageDeltaNotification, CommandExecutionApprovalDecision,
    CommandExecutionRequestApprovalParams, CommandExecutionRequestApprovalResponse,
    ErrorNotification, FileChangeApprovalDecision, FileChangeRequestApprovalParams,
    FileChangeRequestApprovalResponse, FileUpdateChange, ItemCompletedNotification,
    PatchChangeKind, ThreadItem, ThreadTokenUsage, ThreadTokenUsageUpdatedNotification,
    ToolRequestUserInputAnswer, ToolRequestUserInputParams, ToolRequestUserInputResponse,
    TurnCompletedNotification, TurnDiffUpdatedNotification, TurnError, TurnPlanStepStatus,
    TurnPlanUpdatedNotification, TurnStatus, method,
};
use crate::command::{classify, display_command};
use crate::normalize::{CodexNormalizer, TokenTotals, TurnUsage, command_kind};
use crate::patch::{Change, tool_for};

/// What a pending approval answers (kept in [`PermissionRequest::native`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `item/commandExecution/requestApproval`.
    Command,
    /// `item/fileChange/requestApproval`.
    FileChange,
    /// `item/tool/requestUserInput`.
    UserInput,
}

/// The answer to an approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The JSON-RPC `result` for Codex.
    pub result: Value,
    /// What was applied, for the client.
    pub effective: EffectiveDecision,
    /// The decision stops the turn (Codex interrupts it itself on `cancel`).
    pub cancel_turn: bool,
}

impl TokenTotals {
    fn of(b: &super::protocol::TokenUsageBreakdown) -> TokenTotals {
        TokenTotals {
            input: b.input_tokens,
            cached_input: b.cached_input_tokens,
            cache_write_input: b.cache_write_input_tokens,
            output: b.output_tokens,
            reasoning_output: b.reasoning_output_tokens,
        }
    }
}

/// One turn of an app-server thread, normalized. Make one per turn.
#[derive(Debug)]
pub struct AppServerNormalizer {
    inner: CodexNormalizer,
    thread_id: String,
    /// Items whose text arrived as deltas.
    streamed: HashSet<String>,
    /// File changes by item id, from `item/started` (their approval request names only the id).
    file_changes: HashMap<String, Vec<FileUpdateChange>>,
    /// The turn's model calls summed, and the latest counts.
    turn_usage: Option<(TokenTotals, ThreadTokenUsage)>,
    diff: Option<String>,
    pending_error: Option<String>,
    ended: bool,
}

fn parse<T: DeserializeOwned>(params: &Value) -> Option<T> {
    serde_json::from_value(params.clone()).ok()
}

fn sum(a: TokenTotals, b: TokenTotals) -> TokenTotals {
    TokenTotals {
        input: a.input.saturating_add(b.input),
        cached_input: a.cached_input.saturating_add(b.cached_input),
        cache_write_input: a.cache_write_input.saturating_add(b.cache_write_input),
        output: a.output.saturating_add(b.output),
        reasoning_output: a.reasoning_output.saturating_add(b.reasoning_output),
    }
}

/// A turn error's text: the message, and Codex's details when they add something.
pub fn describe_error(error: &TurnError) -> String {
    match error.additional_details.as_deref().map(str::trim) {
        Some(details) if !details.is_empty() && !error.message.contains(details) => {
            format!("{}: {details}", error.message)
        }
        _ => error.message.clone(),
    }
}

fn change_of(change: &FileUpdateChange) -> (&'static str, Change) {
    let diff = change.diff.clone();
    match &change.kind {
        PatchChangeKind::Add => ("add", Change::Add { content: diff }),
        PatchChangeKind::Delete => ("delete", Change::Delete { content: diff }),
        PatchChangeKind::Update { move_path } => (
            "update",
            Change::Update {
                unified_diff: diff,
                move_path: move_path.clone(),
            },
        ),
    }
}

impl AppServerNormalizer {
    /// A turn of thread `thread_id`; tool ids get `id_prefix` (see
    /// [`CodexNormalizer::with_id_prefix`]).
    pub fn new(thread_id: &str, id_prefix: impl Into<String>) -> Self {
        let mut inner = CodexNormalizer::new().with_id_prefix(id_prefix);
        inner.thread_started(thread_id, &mut Vec::new());
        AppServerNormalizer {
            inner,
            thread_id: thread_id.to_string(),
            streamed: HashSet::new(),
            file_changes: HashMap::new(),
            turn_usage: None,
            diff: None,
            pending_error: None,
            ended: false,
        }
    }

    /// Whether the turn's end was emitted.
    pub fn ended(&self) -> bool {
        self.ended || self.inner.ended()
    }

    /// Handles one server notification of this turn.
    pub fn notification(&mut self, method: &str, params: &Value, out: &mut Vec<Event>) {
        if self.ended() {
            return;
        }
        match method {
            method::AGENT_MESSAGE_DELTA => self.delta(false, params, out),
            method::REASONING_SUMMARY_DELTA | method::REASONING_TEXT_DELTA => {
                self.delta(true, params, out);
            }
            method::ITEM_STARTED => {
                if let Some(n) = parse::<ItemCompletedNotification>(params) {
                    self.item(false, n.item, out);
                }
            }
            method::ITEM_COMPLETED => {
                if let Some(n) = parse::<ItemCompletedNotification>(params) {
                    self.item(true, n.item, out);
                }
            }
            method::TURN_PLAN_UPDATED => {
                if let Some(n) = parse::<TurnPlanUpdatedNotification>(params) {
                    let items: Vec<Value> = n
                        .plan
                        .iter()
                        .map(|s| {
                            json!({"text": s.step, "completed": s.status == TurnPlanStepStatus::Completed})
                        })
                        .collect();
                    let todo = json!({"type": "todo_list", "id": "plan", "items": items});
                    self.inner.exec_item("item.completed", &todo, out);
                }
            }
            method::TURN_DIFF_UPDATED => {
                if let Some(n) = parse::<TurnDiffUpdatedNotification>(params) {
                    self.diff = Some(n.diff);
                }
            }
            method::TOKEN_USAGE_UPDATED => {
                if let Some(n) = parse::<ThreadTokenUsageUpdatedNotification>(params) {
                    let last = TokenTotals::of(&n.token_usage.last);
                    let turn = match &self.turn_usage {
                        Some((sofar, _)) => sum(*sofar, last),
                        None => last,
                    };
                    self.turn_usage = Some((turn, n.token_usage));
                }
            }
            method::ERROR => {
                if let Some(n) = parse::<ErrorNotification>(params) {
                    let message = describe_error(&n.error);
                    if n.will_retry {
                        out.push(Event::Status(Status {
                            kind: StatusKind::Retry,
                            message,
                            attempt: None,
                            max_attempts: None,
                        }));
                    } else if let Some(earlier) = self.pending_error.replace(message) {
                        out.push(Event::warning("codex_error", earlier));
                    }
                }
            }
            method::TURN_COMPLETED => {
                if let Some(n) = parse::<TurnCompletedNotification>(params) {
                    self.completed(n, out);
                }
            }
            _ => {}
        }
    }

    fn delta(&mut self, thinking: bool, params: &Value, out: &mut Vec<Event>) {
        let Some(d) = parse::<AgentMessageDeltaNotification>(params) else {
            return;
        };
        if d.delta.is_empty() {
            return;
        }
        let first = self.streamed.insert(d.item_id);
        self.inner.streamed(first, thinking, &d.delta, out);
    }

    fn item(&mut self, completed: bool, item: ThreadItem, out: &mut Vec<Event>) {
        let phase = if completed {
            "item.completed"
        } else {
            "item.started"
        };
        match item {
            ThreadItem::AgentMessage { id, text } if completed => {
                if self.streamed.contains(&id) {
                    self.inner.streamed_done(false, &text, out);
                } else {
                    let exec = json!({"type": "agent_message", "id": id, "text": text});
                    self.inner.exec_item(phase, &exec, out);
                }
            }
            ThreadItem::Reasoning {
                id,
                summary,
                content,
            } if completed => {
                let parts = if summary.is_empty() { content } else { summary };
                let text = parts.join("\n\n");
                if self.streamed.contains(&id) {
                    self.inner.streamed_done(true, &text, out);
                } else {
                    let exec = json!({"type": "reasoning", "id": id, "text": text});
                    self.inner.exec_item(phase, &exec, out);
                }
            }
            ThreadItem::CommandExecution {
                id,
                command,
                status,
                aggregated_output,
                exit_code,
                ..
            } => {
                let exec = json!({
                    "type": "command_execution", "id": id, "command": command,
                    "aggregated_output": aggregated_output.unwrap_or_default(),
                    "exit_code": exit_code, "status": status.exec_name(),
                });
                self.inner.exec_item(phase, &exec, out);
            }
            ThreadItem::FileChange {
                id,
                changes,
                status,
            } => {
                if !completed {
                    self.file_changes.insert(id, changes);
                    return;
                }
                let mut contents = HashMap::new();
                let mut paths = Vec::new();
                for change in &changes {
                    let (kind, content) = change_of(change);
                    contents.insert(change.path.clone(), content);
                    paths.push(json!({"path": change.path, "kind": kind}));
                }
                self.inner.file_change_contents(contents);
                let exec = json!({
                    "type": "file_change", "id": id, "changes": paths, "status": status.exec_name(),
                });
                self.inner.exec_item(phase, &exec, out);
            }
            ThreadItem::McpToolCall {
                id,
                server,
                tool,
                arguments,
                result,
                error,
                status,
            } => {
                let result = result.map(
                    |r| json!({"content": r.content, "structured_content": r.structured_content}),
                );
                let error = error.map(|e| json!({"message": e.message}));
                let exec = json!({
                    "type": "mcp_tool_call", "id": id, "server": server, "tool": tool,
                    "arguments": arguments, "result": result, "error": error,
                    "status": status.exec_name(),
                });
                self.inner.exec_item(phase, &exec, out);
            }
            ThreadItem::WebSearch { id, query } if completed => {
                let exec = json!({"type": "web_search", "id": id, "query": query});
                self.inner.exec_item(phase, &exec, out);
            }
            _ => {}
        }
    }

    fn completed(&mut self, n: TurnCompletedNotification, out: &mut Vec<Event>) {
        match n.turn.status {
            TurnStatus::Completed => {
                if let Some(notice) = self.pending_error.take() {
                    out.push(Event::warning("codex_error", notice));
                }
                if let Some(diff) = self.diff.take() {
                    out.push(Event::Message {
                        message: json!({
                            "type": "event_msg",
                            "payload": {"type": "turn_diff", "unified_diff": diff},
                        }),
                    });
                }
                let usage = self.turn_usage.take().map(|(turn, latest)| TurnUsage {
                    turn,
                    total: TokenTotals::of(&latest.total),
                    last_call: TokenTotals::of(&latest.last),
                    context_window: latest.model_context_window,
                });
                self.inner.complete_turn(usage, out);
            }
            TurnStatus::Failed => {
                let message = n
                    .turn
                    .error
                    .as_ref()
                    .map(describe_error)
                    .or_else(|| self.pending_error.take())
                    .unwrap_or_else(|| "Codex reported that the turn failed".into());
                self.inner.fail(message, out);
            }
            TurnStatus::Interrupted => {
                self.ended = true;
                out.push(Event::TurnEnd(interrupted_end(Some(
                    self.thread_id.clone(),
                ))));
            }
            TurnStatus::InProgress => {}
        }
    }

    /// Turns an approval request of Codex into a [`PermissionRequest`] (emitted into `out`) and
    /// returns it, or `None` when the request is not one the bridge answers this way.
    pub fn permission_request(
        &mut self,
        id: &Id,
        method: &str,
        params: &Value,
        out: &mut Vec<Event>,
    ) -> Option<PermissionRequest> {
        let request_id = format!("codex-{id}");
        let all = vec![
            DecisionKind::AllowOnce,
            DecisionKind::AllowSession,
            DecisionKind::Deny,
            DecisionKind::Cancel,
        ];
        let request = match method {
            method::COMMAND_APPROVAL => {
                let p: CommandExecutionRequestApprovalParams = parse(params)?;
                let command = display_command(p.command.as_deref().unwrap_or_default());
                let tool = classify(&command);
                let mut input = tool.input;
                if let Some(cwd) = &p.cwd {
                    input["cwd"] = json!(cwd);
                }
                let description = p
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("Run `{command}`"));
                input["description"] = json!(description);
                PermissionRequest {
                    request_id,
                    kind: RequestKind::Tool,
                    tool_name: tool.name.into(),
                    tool_kind: command_kind(tool.name),
                    input,
                    description: Some(description),
                    paths: p.cwd.into_iter().collect(),
                    tool_use_id: Some(self.inner.tool_id_of(&p.item_id)),
                    options: all,
                    native: Some(json!({"asked": "command"})),
                }
            }
            method::FILE_CHANGE_APPROVAL => {
                let p: FileChangeRequestApprovalParams = parse(params)?;
                let changes = self
                    .file_changes
                    .get(&p.item_id)
                    .cloned()
                    .unwrap_or_default();
                let paths: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
                let (name, mut input, kind) = match changes.first() {
                    Some(first) => {
                        let (kind, change) = change_of(first);
                        let (name, input, tool_kind, _) =
                            tool_for(&first.path, kind, Some(&change));
                        (name, input, tool_kind)
                    }
                    None => ("Edit", json!({}), ToolKind::Edit),
                };
                let diff: Vec<String> = changes
                    .iter()
                    .map(|c| format!("--- {}\n{}", c.path, c.diff))
                    .collect();
                input["diff"] = json!(diff.join("\n"));
                if changes.len() > 1 {
                    input["files"] = json!(paths);
                }
                let description = p.reason.clone().unwrap_or_else(|| {
                    if paths.is_empty() {
                        "Change files".to_string()
                    } else {
                        format!("Change {}", paths.join(", "))
                    }
                });
                if let Some(root) = &p.grant_root {
                    input["grantRoot"] = json!(root);
                }
                PermissionRequest {
                    request_id,
                    kind: RequestKind::Tool,
                    tool_name: name.into(),
                    tool_kind: kind,
                    input,
                    description: Some(description),
                    paths,
                    tool_use_id: Some(self.inner.tool_id_of(&p.item_id)),
                    options: all,
                    native: Some(json!({"asked": "fileChange"})),
                }
            }
            method::USER_INPUT => {
                let p: ToolRequestUserInputParams = parse(params)?;
                let questions: Vec<Value> = p
                    .questions
                    .iter()
                    .map(|q| {
                        let options: Vec<Value> = q
                            .options
                            .iter()
                            .flatten()
                            .map(|o| json!({"label": o.label, "description": o.description}))
                            .collect();
                        json!({"question": q.question, "header": q.header, "options": options, "multiSelect": false})
                    })
                    .collect();
                let ids: BTreeMap<&str, &str> = p
                    .questions
                    .iter()
                    .map(|q| (q.question.as_str(), q.id.as_str()))
                    .collect();
                PermissionRequest {
                    request_id,
                    kind: RequestKind::Question,
                    tool_name: "AskUserQuestion".into(),
                    tool_kind: ToolKind::Other,
                    input: json!({"questions": questions}),
                    description: None,
                    paths: Vec::new(),
                    tool_use_id: Some(self.inner.tool_id_of(&p.item_id)),
                    options: vec![
                        DecisionKind::AllowOnce,
                        DecisionKind::Deny,
                        DecisionKind::Cancel,
                    ],
                    native: Some(json!({"asked": "userInput", "ids": ids})),
                }
            }
            _ => return None,
        };
        out.push(Event::PermissionRequest(request.clone()));
        Some(request)
    }
}

/// What `request` asked (from its [`PermissionRequest::native`]).
pub fn asked(request: &PermissionRequest) -> Option<Asked> {
    match request.native.as_ref()?.get("asked")?.as_str()? {
        "command" => Some(Asked::Command),
        "fileChange" => Some(Asked::FileChange),
        "userInput" => Some(Asked::UserInput),
        _ => None,
    }
}

/// The answer to `request` for `resolution`, and what it means for Codex:
///
/// | decision | command / file change | question |
/// |---|---|---|
/// | allow once | `accept` | the answers, per question id |
/// | allow for the session | `acceptForSession` (Codex stops asking for the same command or files in this thread) | the answers (applied once) |
/// | deny | `decline` (the model is told the user rejected it; the turn goes on) | no answers |
/// | cancel | `cancel` (declined, and Codex interrupts the turn) | no answers, turn interrupted |
///
/// Codex has no field for a denial message or an edited command: both are reported as not
/// applied.
pub fn answer(request: &PermissionRequest, resolution: &Resolution) -> Answer {
    let decision = &resolution.decision;
    let requested = decision.decision;
    let mut notes: Vec<String> = Vec::new();
    let mut applied = requested;
    let result = match asked(request) {
        Some(Asked::UserInput) => {
            let ids = request
                .native
                .as_ref()
                .and_then(|n| n.get("ids"))
                .cloned()
                .unwrap_or_default();
            let mut answers = BTreeMap::new();
            if matches!(
                requested,
                DecisionKind::AllowOnce | DecisionKind::AllowSession
            ) {
                if requested == DecisionKind::AllowSession {
                    applied = DecisionKind::AllowOnce;
                    notes.push("answers apply once".into());
                }
                for (question, text) in decision
                    .answers
                    .as_ref()
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let id = ids
                        .get(question)
                        .and_then(Value::as_str)
                        .unwrap_or(question);
                    let text = match text {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(items) => items
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                            .collect(),
                        other => vec![other.to_string()],
                    };
                    answers.insert(id.to_string(), ToolRequestUserInputAnswer { answers: text });
                }
            }
            serde_json::to_value(ToolRequestUserInputResponse { answers }).unwrap_or_default()
        }
        Some(Asked::FileChange) => {
            let decision = match requested {
                DecisionKind::AllowOnce => FileChangeApprovalDecision::Accept,
                DecisionKind::AllowSession => FileChangeApprovalDecision::AcceptForSession,
                DecisionKind::Deny => FileChangeApprovalDecision::Decline,
                DecisionKind::Cancel => FileChangeApprovalDecision::Cancel,
            };
            serde_json::to_value(FileChangeRequestApprovalResponse { decision }).unwrap_or_default()
        }
        _ => {
            let decision = match requested {
                DecisionKind::AllowOnce => CommandExecutionApprovalDecision::Accept,
                DecisionKind::AllowSession => CommandExecutionApprovalDecision::AcceptForSession,
                DecisionKind::Deny => CommandExecutionApprovalDecision::Decline,
                DecisionKind::Cancel => CommandExecutionApprovalDecision::Cancel,
            };
            serde_json::to_value(CommandExecutionRequestApprovalResponse { decision })
                .unwrap_or_default()
        }
    };
    if decision.updated_input.is_some()
        && matches!(
            applied,
            DecisionKind::AllowOnce | DecisionKind::AllowSession
        )
    {
        notes.push("Codex cannot take an edited tool input; it runs its own".into());
    }
    notes.extend(resolution.unsent_refusal_note(
        applied,
        "Codex has no denial message; the model is told the user rejected it",
    ));
    Answer {
        result,
        effective: EffectiveDecision {
            request_id: request.request_id.clone(),
            requested,
            applied,
            source: resolution.source,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        },
        cancel_turn: requested == DecisionKind::Cancel,
    }
}

/// The answer Codex gets when nobody may decide any more (the turn is being interrupted).
pub fn abandoned(request: &PermissionRequest) -> Value {
    match asked(request) {
        Some(Asked::UserInput) => json!({"answers": {}}),
        _ => json!({"decision": "cancel"}),
    }
}

#[cfg(test)]
mod tests {
    use bridge_core::permission::{DecisionSource, PermissionDecision};
    use permission_mapper::PermissionMode;

    use super::*;
    use crate::app_server::session::policy;

    fn client(decision: PermissionDecision) -> Resolution {
        Resolution {
            decision,
            source: DecisionSource::Client,
        }
    }

    fn asked(method: &str, params: Value) -> (AppServerNormalizer, PermissionRequest) {
        let mut n = AppServerNormalizer::new("t-1", "p");
        let mut out = Vec::new();
        n.notification(
            method::ITEM_STARTED,
            &json!({"item": {"type": "fileChange", "id": "call_f", "status": "inProgress",
                     "changes": [{"path": "/w/a.txt", "kind": {"type": "add"}, "diff": "new\n"}]}}),
            &mut out,
        );
        let request = n
            .permission_request(&Id::Number(4), method, &params, &mut out)
            .expect("a permission request");
        assert!(matches!(out.last(), Some(Event::PermissionRequest(r)) if *r == request));
        (n, request)
    }

    #[test]
    fn decisions_map_onto_codexs_and_what_cannot_be_carried_is_noted() {
        let (_, command) = asked(
            method::COMMAND_APPROVAL,
            json!({"itemId": "call_c", "command": "/bin/bash -lc 'touch x'", "cwd": "/w", "reason": "why"}),
        );
        assert_eq!(command.tool_name, "Bash");
        assert_eq!(command.description.as_deref(), Some("why"));
        assert_eq!(command.tool_use_id.as_deref(), Some("p_call_c"));
        for (kind, wire) in [
            (DecisionKind::AllowOnce, "accept"),
            (DecisionKind::AllowSession, "acceptForSession"),
            (DecisionKind::Deny, "decline"),
            (DecisionKind::Cancel, "cancel"),
        ] {
            let a = answer(&command, &client(PermissionDecision::new(kind)));
            assert_eq!(a.result, json!({"decision": wire}));
            assert_eq!(a.effective.applied, kind);
            assert_eq!(a.cancel_turn, kind == DecisionKind::Cancel);
        }
        let a = answer(&command, &client(PermissionDecision::deny("not here")));
        assert!(a.effective.note.unwrap().contains("not sent: not here"));

        let (_, file) = asked(
            method::FILE_CHANGE_APPROVAL,
            json!({"itemId": "call_f", "reason": null}),
        );
        assert_eq!(file.paths, ["/w/a.txt"]);
        assert_eq!(file.tool_kind, ToolKind::Edit);
        assert!(file.input["diff"].as_str().unwrap().contains("new"));
        let a = answer(
            &file,
            &client(PermissionDecision::new(DecisionKind::AllowSession)),
        );
        assert_eq!(a.result, json!({"decision": "acceptForSession"}));
        assert_eq!(abandoned(&file), json!({"decision": "cancel"}));
    }

    #[test]
    fn a_user_input_request_is_a_question_answered_per_question_id() {
        let (_, question) = asked(
            method::USER_INPUT,
            json!({"itemId": "call_q", "isBlocking": true, "questions": [
                {"id": "q1", "header": "Color", "question": "Which color?",
                 "options": [{"label": "red", "description": "warm"}]}]}),
        );
        assert_eq!(question.kind, RequestKind::Question);
        assert_eq!(question.input["questions"][0]["question"], "Which color?");
        let mut decision = PermissionDecision::new(DecisionKind::AllowOnce);
        decision.answers = Some(json!({"Which color?": "red"}));
        let a = answer(&question, &client(decision));
        assert_eq!(a.result, json!({"answers": {"q1": {"answers": ["red"]}}}));
        let a = answer(
            &question,
            &client(PermissionDecision::new(DecisionKind::Deny)),
        );
        assert_eq!(a.result, json!({"answers": {}}));
    }

    #[test]
    fn each_mode_decides_what_it_can_without_asking() {
        let (_, command) = asked(
            method::COMMAND_APPROVAL,
            json!({"itemId": "c", "command": "rm -rf x"}),
        );
        let (_, file) = asked(method::FILE_CHANGE_APPROVAL, json!({"itemId": "call_f"}));
        let plan = policy(PermissionMode::Plan, &command).unwrap();
        assert_eq!(plan.decision.decision, DecisionKind::Deny);
        assert_eq!(plan.source, DecisionSource::Policy);
        assert!(policy(PermissionMode::Default, &command).is_none());
        assert!(policy(PermissionMode::AcceptEdits, &command).is_none());
        let edits = policy(PermissionMode::AcceptEdits, &file).unwrap();
        assert_eq!(edits.decision.decision, DecisionKind::AllowOnce);
        assert!(policy(PermissionMode::Sandbox, &file).is_none());
    }

    #[test]
    fn usage_is_the_turns_model_calls_summed_and_a_failed_turn_carries_codexs_error() {
        let mut n = AppServerNormalizer::new("t-1", "p");
        let mut out = Vec::new();
        let call = |total: u64| {
            json!({"tokenUsage": {
                "total": {"inputTokens": total, "cachedInputTokens": 0, "outputTokens": 2,
                          "reasoningOutputTokens": 0, "totalTokens": total + 2},
                "last": {"inputTokens": 10, "cachedInputTokens": 0, "outputTokens": 1,
                         "reasoningOutputTokens": 0, "totalTokens": 11},
                "modelContextWindow": 1000}})
        };
        n.notification(method::TOKEN_USAGE_UPDATED, &call(510), &mut out);
        n.notification(method::TOKEN_USAGE_UPDATED, &call(520), &mut out);
        n.notification(
            method::TURN_COMPLETED,
            &json!({"threadId": "t-1", "turn": {"id": "u", "items": [], "status": "completed"}}),
            &mut out,
        );
        let usage = out
            .iter()
            .find_map(|e| match e {
                Event::Usage(u) => Some(u.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (20, 2));

        let mut n = AppServerNormalizer::new("t-1", "p");
        let mut out = Vec::new();
        n.notification(
            method::ERROR,
            &json!({"error": {"message": "Reconnecting 1/5"}, "willRetry": true, "threadId": "t-1", "turnId": "u"}),
            &mut out,
        );
        assert!(matches!(out[0], Event::Status(_)));
        n.notification(
            method::TURN_COMPLETED,
            &json!({"threadId": "t-1", "turn": {"id": "u", "items": [], "status": "failed",
                     "error": {"message": "unexpected status 401", "additionalDetails": "bad key"}}}),
            &mut out,
        );
        let end = out.iter().find_map(|e| match e {
            Event::TurnEnd(end) => Some(end.clone()),
            _ => None,
        });
        let end = end.unwrap();
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("unexpected status 401: bad key"));
        assert!(n.ended());
    }
}
