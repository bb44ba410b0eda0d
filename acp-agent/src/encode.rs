//! The ACP encoder: the provider-neutral [`Event`]s of a turn as ACP `session/update`s.
//!
//! | event | update |
//! |---|---|
//! | [`Event::TextDelta`], [`Event::Text`] | `agent_message_chunk` (text) |
//! | [`Event::ThinkingDelta`] | `agent_thought_chunk` |
//! | [`Event::ToolUse`] of a todo list (`TodoWrite`, `{"todos":[…]}`) | `plan` (its entries) |
//! | [`Event::ToolUse`], first of its id | `tool_call`: kind, title, `rawInput`, locations (the paths of its input, its diff's path), the diff as `diff` content, status `pending` |
//! | [`Event::ToolUse`] again (the input completed), [`Event::PermissionRequest`] of a known call | `tool_call_update` with the new fields |
//! | [`Event::PermissionRequest`] of a call not announced yet | `tool_call` (as above, from the request) |
//! | [`Event::PermissionDecision`] | `tool_call_update`: `in_progress` when allowed, `failed` when refused |
//! | [`Event::ToolResult`] | `tool_call_update`: `completed` / `failed`, the output as text content and `rawOutput` |
//!
//! | [`Event::TurnEnd`] | `usage_update`, where the turn reported its [`Usage`] and the model's context window ([`Usage::context_window`]) is known: `used` the tokens in the context after the turn, `size` the window, `cost` the session's cost so far in USD where the provider reports cost |
//!
//! Everything else (status, warnings, transcript messages) is not a session update: the turn
//! end becomes the prompt's `stopReason` ([`stop_reason`]) besides its `usage_update`, and the
//! error of a failed turn the prompt's JSON-RPC error. A provider that reports no context
//! window (pi, opencode, the one-shot CLIs) gets no `usage_update`: `size` is required, and a
//! guessed one would draw a wrong gauge.

use std::collections::{HashMap, HashSet};

use agent_client_protocol_schema::v1 as acp;
use bridge_core::event::{
    Event, FileDiff, StopReason, ToolKind, ToolResult, ToolUse, TurnEnd, Usage, UsageScope,
};
use bridge_core::permission::{DecisionKind, PermissionRequest};
use serde_json::Value;

/// Turns one turn's events into session updates, remembering which tool calls it announced.
#[derive(Debug, Default)]
pub struct UpdateEncoder {
    /// Tool calls announced with `tool_call`.
    announced: HashSet<String>,
    /// Tool calls shown as the plan instead (their results are not tool call updates).
    plans: HashSet<String>,
    /// The tool call of each approval asked (decisions name the request).
    requests: HashMap<String, String>,
    /// The newest usage of one model call, and of the whole turn.
    message_usage: Option<Usage>,
    turn_usage: Option<Usage>,
    /// The session's cost in USD before this turn (`None`: none reported yet).
    cost_before: Option<f64>,
}

/// The longest title taken from a command or a query (the client shows it on one line).
const MAX_TITLE_CHARS: usize = 200;

impl UpdateEncoder {
    /// An encoder for a turn of a session that has cost `cost_before` USD so far (`None`: no
    /// cost reported yet), for the `cost` of its `usage_update`.
    pub fn with_session_cost(cost_before: Option<f64>) -> Self {
        UpdateEncoder {
            cost_before,
            ..UpdateEncoder::default()
        }
    }

    /// The session's cost in USD after the usage seen so far (the next turn's `cost_before`).
    pub fn session_cost(&self) -> Option<f64> {
        // A turn's cost is its own (a model call's may be a running total: ACP agents').
        let turn = self.turn_usage.as_ref().and_then(|usage| usage.cost_usd);
        match (self.cost_before, turn) {
            (None, None) => None,
            (before, turn) => Some(before.unwrap_or(0.0) + turn.unwrap_or(0.0)),
        }
    }

    /// The `usage_update` of the turn so far: the turn's usage (else its newest model call's),
    /// where a context window is known.
    pub fn usage_update(&self) -> Option<acp::UsageUpdate> {
        let usage = self.turn_usage.as_ref().or(self.message_usage.as_ref())?;
        let size = usage
            .context_window
            .or_else(|| self.message_usage.as_ref()?.context_window)?;
        // What the context holds: the provider's figure, else the last model call's counts
        // (a turn's sum counts the context once per call).
        let used = match (usage.context_tokens, &self.message_usage) {
            (Some(tokens), _) => tokens,
            (None, Some(last)) => last.context_used(),
            (None, None) => usage.context_used(),
        };
        // Nothing counted (an interrupted turn's result has only zeros): no figure to show.
        if used == 0 {
            return None;
        }
        let mut update = acp::UsageUpdate::new(used, size);
        if let Some(cost) = self.session_cost() {
            update = update.cost(acp::Cost::new(cost, "USD"));
        }
        Some(update)
    }

    /// The updates `event` stands for (often none).
    pub fn encode(&mut self, event: &Event) -> Vec<acp::SessionUpdate> {
        match event {
            Event::TextDelta { text } | Event::Text { text } if !text.is_empty() => {
                vec![acp::SessionUpdate::AgentMessageChunk(
                    acp::ContentChunk::new(text.as_str().into()),
                )]
            }
            Event::ThinkingDelta { text } if !text.is_empty() => {
                vec![acp::SessionUpdate::AgentThoughtChunk(
                    acp::ContentChunk::new(text.as_str().into()),
                )]
            }
            Event::ToolUse(tool) => self.tool_use(tool),
            Event::ToolResult(result) => self.tool_result(result),
            Event::PermissionRequest(request) => self.permission_request(request),
            Event::PermissionDecision(decision) => {
                let status = match decision.applied {
                    DecisionKind::AllowOnce | DecisionKind::AllowSession => {
                        acp::ToolCallStatus::InProgress
                    }
                    DecisionKind::Deny | DecisionKind::Cancel => acp::ToolCallStatus::Failed,
                };
                // The decision names the request; the call it belongs to was announced under
                // its tool call id, which the encoder learnt from the request.
                match self.requests.get(&decision.request_id) {
                    Some(id) => vec![update(id, acp::ToolCallUpdateFields::new().status(status))],
                    None => Vec::new(),
                }
            }
            Event::Usage(usage) => {
                match usage.scope {
                    UsageScope::Message => self.message_usage = Some(usage.clone()),
                    UsageScope::Turn => self.turn_usage = Some(usage.clone()),
                }
                Vec::new()
            }
            Event::TurnEnd(_) => self
                .usage_update()
                .map(acp::SessionUpdate::UsageUpdate)
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    fn tool_use(&mut self, tool: &ToolUse) -> Vec<acp::SessionUpdate> {
        if let Some(entries) = plan_entries(tool) {
            self.plans.insert(tool.id.clone());
            return vec![acp::SessionUpdate::Plan(acp::Plan::new(entries))];
        }
        let title = title(&tool.name, &tool.input);
        let locations = locations(&tool.input, tool.diff.as_ref());
        let content: Vec<acp::ToolCallContent> = tool.diff.iter().map(diff_content).collect();
        if self.announced.insert(tool.id.clone()) {
            let call = acp::ToolCall::new(tool.id.clone(), title)
                .kind(kind(tool.kind))
                .status(acp::ToolCallStatus::Pending)
                .raw_input(tool.input.clone())
                .locations(locations)
                .content(content);
            return vec![acp::SessionUpdate::ToolCall(call)];
        }
        let mut fields = acp::ToolCallUpdateFields::new()
            .title(title)
            .kind(kind(tool.kind))
            .raw_input(tool.input.clone())
            .locations(locations);
        if !content.is_empty() {
            fields = fields.content(content);
        }
        vec![update(&tool.id, fields)]
    }

    fn tool_result(&mut self, result: &ToolResult) -> Vec<acp::SessionUpdate> {
        if self.plans.contains(&result.tool_use_id) {
            return Vec::new();
        }
        let status = if result.is_error {
            acp::ToolCallStatus::Failed
        } else {
            acp::ToolCallStatus::Completed
        };
        let text = result_text(&result.content);
        let mut fields = acp::ToolCallUpdateFields::new()
            .status(status)
            .raw_output(result.content.clone());
        if !text.is_empty() {
            fields = fields.content(vec![acp::ToolCallContent::from(text)]);
        }
        if self.announced.insert(result.tool_use_id.clone()) {
            // A result for a call never announced: announce it with what is known.
            let call = acp::ToolCall::new(result.tool_use_id.clone(), "tool")
                .status(status)
                .raw_output(result.content.clone());
            return vec![acp::SessionUpdate::ToolCall(call)];
        }
        vec![update(&result.tool_use_id, fields)]
    }

    fn permission_request(&mut self, request: &PermissionRequest) -> Vec<acp::SessionUpdate> {
        let id = call_id(request);
        // Decisions name the request id: let them find the call.
        self.requests
            .insert(request.request_id.clone(), id.to_string());
        let update_fields = permission_fields(request);
        if self.announced.insert(id.to_string()) {
            let mut call = acp::ToolCall::new(id.to_string(), permission_title(request))
                .kind(kind(request.tool_kind))
                .status(acp::ToolCallStatus::Pending)
                .raw_input(request.input.clone());
            if let Some(locations) = update_fields.locations.clone() {
                call = call.locations(locations);
            }
            return vec![acp::SessionUpdate::ToolCall(call)];
        }
        Vec::new()
    }
}

/// The tool call id an approval belongs to (its request id when the provider names none).
pub fn call_id(request: &PermissionRequest) -> &str {
    request
        .tool_use_id
        .as_deref()
        .unwrap_or(request.request_id.as_str())
}

/// The `toolCall` of a `session/request_permission` for `request`.
pub fn permission_call(request: &PermissionRequest) -> acp::ToolCallUpdate {
    acp::ToolCallUpdate::new(call_id(request).to_string(), permission_fields(request))
}

fn permission_fields(request: &PermissionRequest) -> acp::ToolCallUpdateFields {
    let mut locations = locations(&request.input, None);
    for path in &request.paths {
        if !locations
            .iter()
            .any(|l| l.path.as_os_str() == path.as_str())
        {
            locations.push(acp::ToolCallLocation::new(path.clone()));
        }
    }
    acp::ToolCallUpdateFields::new()
        .title(permission_title(request))
        .kind(kind(request.tool_kind))
        .status(acp::ToolCallStatus::Pending)
        .raw_input(request.input.clone())
        .locations(locations)
}

fn permission_title(request: &PermissionRequest) -> String {
    match &request.description {
        Some(description) if !description.trim().is_empty() => {
            format!(
                "{}: {}",
                title(&request.tool_name, &request.input),
                description
            )
        }
        _ => title(&request.tool_name, &request.input),
    }
}

/// The option of a unified decision in `session/request_permission`: its id, label and ACP
/// kind; `None` for [`DecisionKind::Cancel`] (an ACP client cancels with `session/cancel`).
pub fn option_of(decision: DecisionKind) -> Option<acp::PermissionOption> {
    let (id, name, kind) = match decision {
        DecisionKind::AllowOnce => ("allow_once", "Allow", acp::PermissionOptionKind::AllowOnce),
        DecisionKind::AllowSession => (
            "allow_always",
            "Allow for this session",
            acp::PermissionOptionKind::AllowAlways,
        ),
        DecisionKind::Deny => ("reject_once", "Deny", acp::PermissionOptionKind::RejectOnce),
        DecisionKind::Cancel => return None,
    };
    Some(acp::PermissionOption::new(id, name, kind))
}

/// The options offered for `request`: the decisions its provider honours, and always a
/// rejection.
pub fn options_for(request: &PermissionRequest) -> Vec<acp::PermissionOption> {
    let mut decisions: Vec<DecisionKind> = request.options.clone();
    if !decisions.contains(&DecisionKind::AllowOnce) {
        decisions.insert(0, DecisionKind::AllowOnce);
    }
    if !decisions.contains(&DecisionKind::Deny) {
        decisions.push(DecisionKind::Deny);
    }
    decisions.into_iter().filter_map(option_of).collect()
}

/// The unified decision an option id of [`options_for`] stands for.
pub fn decision_of(option_id: &str) -> Option<DecisionKind> {
    match option_id {
        "allow_once" => Some(DecisionKind::AllowOnce),
        "allow_always" => Some(DecisionKind::AllowSession),
        "reject_once" => Some(DecisionKind::Deny),
        _ => None,
    }
}

/// The prompt's `stopReason` for a turn that ended with `end`; `None` when the turn failed
/// (the prompt then answers with a JSON-RPC error).
pub fn stop_reason(end: &TurnEnd) -> Option<acp::StopReason> {
    match &end.stop_reason {
        StopReason::EndTurn => Some(acp::StopReason::EndTurn),
        StopReason::MaxTokens => Some(acp::StopReason::MaxTokens),
        StopReason::MaxTurns => Some(acp::StopReason::MaxTurnRequests),
        StopReason::Refusal => Some(acp::StopReason::Refusal),
        StopReason::Interrupted => Some(acp::StopReason::Cancelled),
        StopReason::Error => None,
        StopReason::Other(_) if end.success => Some(acp::StopReason::EndTurn),
        StopReason::Other(_) => None,
    }
}

fn update(id: &str, fields: acp::ToolCallUpdateFields) -> acp::SessionUpdate {
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id.to_string(), fields))
}

fn kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Delete => acp::ToolKind::Delete,
        ToolKind::Move => acp::ToolKind::Move,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::SwitchMode => acp::ToolKind::SwitchMode,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

/// The input fields that name what a tool works on, in the normalized (Claude-shaped) tool
/// input vocabulary every channel produces.
const PATH_KEYS: &[&str] = &["file_path", "path", "notebook_path"];

/// A tool call's title: its name and what it works on (`Bash: ls`).
pub(crate) fn title(name: &str, input: &Value) -> String {
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::trim);
    let detail = field("command")
        .or_else(|| PATH_KEYS.iter().find_map(|key| field(key)))
        .or_else(|| field("pattern"))
        .or_else(|| field("query"))
        .or_else(|| field("url"))
        .or_else(|| field("description"))
        .filter(|detail| !detail.is_empty());
    let name = if name.is_empty() { "tool" } else { name };
    match detail {
        Some(detail) => {
            let mut short: String = detail.chars().take(MAX_TITLE_CHARS).collect();
            if short.len() < detail.len() {
                short.push('…');
            }
            format!("{name}: {short}")
        }
        None => name.to_string(),
    }
}

fn locations(input: &Value, diff: Option<&FileDiff>) -> Vec<acp::ToolCallLocation> {
    let mut paths: Vec<&str> = PATH_KEYS
        .iter()
        .filter_map(|key| input.get(*key).and_then(Value::as_str))
        .filter(|path| !path.is_empty())
        .collect();
    if let Some(diff) = diff
        && !paths.contains(&diff.path.as_str())
    {
        paths.push(&diff.path);
    }
    let line = input
        .get("offset")
        .or_else(|| input.get("line"))
        .and_then(Value::as_u64)
        .and_then(|line| u32::try_from(line).ok());
    paths
        .into_iter()
        .map(|path| acp::ToolCallLocation::new(path.to_string()).line(line))
        .collect()
}

fn diff_content(diff: &FileDiff) -> acp::ToolCallContent {
    acp::ToolCallContent::from(
        acp::Diff::new(diff.path.clone(), diff.new_text.clone().unwrap_or_default())
            .old_text(diff.old_text.clone()),
    )
}

fn plan_entries(tool: &ToolUse) -> Option<Vec<acp::PlanEntry>> {
    if tool.name != "TodoWrite" {
        return None;
    }
    let todos = tool.input.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .map(|todo| {
                let text = |key: &str| todo.get(key).and_then(Value::as_str).unwrap_or_default();
                let status = match text("status") {
                    "in_progress" => acp::PlanEntryStatus::InProgress,
                    "completed" => acp::PlanEntryStatus::Completed,
                    _ => acp::PlanEntryStatus::Pending,
                };
                let priority = match text("priority") {
                    "high" => acp::PlanEntryPriority::High,
                    "low" => acp::PlanEntryPriority::Low,
                    _ => acp::PlanEntryPriority::Medium,
                };
                let content = match text("content") {
                    "" => text("activeForm"),
                    content => content,
                };
                acp::PlanEntry::new(content, priority, status)
            })
            .collect(),
    )
}

/// The text of a tool result: a string, or the text of Claude content blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_core::event::ToolKind;
    use bridge_core::permission::{DecisionSource, EffectiveDecision, RequestKind};
    use serde_json::json;

    fn wire(updates: Vec<acp::SessionUpdate>) -> Vec<Value> {
        updates
            .into_iter()
            .map(|u| serde_json::to_value(u).expect("serializes"))
            .collect()
    }

    #[test]
    fn text_and_thinking_are_chunks() {
        let mut enc = UpdateEncoder::default();
        let out = wire(enc.encode(&Event::TextDelta { text: "Hi".into() }));
        assert_eq!(
            out,
            vec![
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}})
            ]
        );
        let out = wire(enc.encode(&Event::ThinkingDelta { text: "hm".into() }));
        assert_eq!(out[0]["sessionUpdate"], "agent_thought_chunk");
        assert!(
            enc.encode(&Event::TextDelta {
                text: String::new()
            })
            .is_empty()
        );
    }

    #[test]
    fn an_edit_is_a_tool_call_with_its_diff_and_location_then_its_result() {
        let mut enc = UpdateEncoder::default();
        let tool = ToolUse {
            id: "t1".into(),
            name: "Edit".into(),
            kind: ToolKind::Edit,
            input: json!({"file_path":"/p/a.rs","old_string":"a","new_string":"b"}),
            diff: Some(FileDiff {
                path: "/p/a.rs".into(),
                old_text: Some("a".into()),
                new_text: Some("b".into()),
            }),
        };
        let out = wire(enc.encode(&Event::ToolUse(tool)));
        assert_eq!(out[0]["sessionUpdate"], "tool_call");
        assert_eq!(out[0]["toolCallId"], "t1");
        assert_eq!(out[0]["kind"], "edit");
        assert_eq!(out[0]["title"], "Edit: /p/a.rs");
        // `pending` is the default status, which the schema types leave out.
        assert!(out[0].get("status").is_none_or(|s| s == "pending"));
        assert_eq!(out[0]["locations"], json!([{"path":"/p/a.rs"}]));
        assert_eq!(
            out[0]["content"],
            json!([{"type":"diff","path":"/p/a.rs","oldText":"a","newText":"b"}])
        );
        let out = wire(enc.encode(&Event::ToolResult(ToolResult {
            tool_use_id: "t1".into(),
            content: json!([{"type":"text","text":"done"}]),
            is_error: false,
        })));
        assert_eq!(out[0]["sessionUpdate"], "tool_call_update");
        assert_eq!(out[0]["status"], "completed");
        assert_eq!(
            out[0]["content"],
            json!([{"type":"content","content":{"type":"text","text":"done"}}])
        );
    }

    #[test]
    fn a_todo_list_is_the_plan_and_its_result_is_not_a_tool_call() {
        let mut enc = UpdateEncoder::default();
        let out = wire(enc.encode(&Event::ToolUse(ToolUse {
            id: "p".into(),
            name: "TodoWrite".into(),
            kind: ToolKind::Think,
            input: json!({"todos":[{"content":"write","status":"in_progress"},{"content":"test","status":"pending"}]}),
            diff: None,
        })));
        assert_eq!(
            out,
            vec![json!({"sessionUpdate":"plan","entries":[
                {"content":"write","priority":"medium","status":"in_progress"},
                {"content":"test","priority":"medium","status":"pending"}]})]
        );
        assert!(
            enc.encode(&Event::ToolResult(ToolResult {
                tool_use_id: "p".into(),
                content: json!("ok"),
                is_error: false
            }))
            .is_empty()
        );
    }

    #[test]
    fn a_refused_approval_fails_its_call_and_options_always_offer_a_rejection() {
        let mut enc = UpdateEncoder::default();
        let request = PermissionRequest {
            request_id: "r1".into(),
            kind: RequestKind::Tool,
            tool_name: "Bash".into(),
            tool_kind: ToolKind::Execute,
            input: json!({"command":"rm -rf x"}),
            description: None,
            paths: vec![],
            tool_use_id: Some("t9".into()),
            options: vec![DecisionKind::AllowOnce, DecisionKind::AllowSession],
            native: None,
        };
        let out = wire(enc.encode(&Event::PermissionRequest(request.clone())));
        assert_eq!(
            (
                out[0]["sessionUpdate"].as_str(),
                out[0]["toolCallId"].as_str()
            ),
            (Some("tool_call"), Some("t9"))
        );
        let out = wire(enc.encode(&Event::PermissionDecision(EffectiveDecision {
            request_id: "r1".into(),
            requested: DecisionKind::Deny,
            applied: DecisionKind::Deny,
            source: DecisionSource::Timeout,
            note: None,
        })));
        assert_eq!(out[0]["status"], "failed");
        let kinds: Vec<Value> = options_for(&request)
            .into_iter()
            .map(|o| serde_json::to_value(o).expect("serializes")["kind"].clone())
            .collect();
        assert_eq!(
            kinds,
            vec![
                json!("allow_once"),
                json!("allow_always"),
                json!("reject_once")
            ]
        );
        assert_eq!(decision_of("reject_once"), Some(DecisionKind::Deny));
        assert_eq!(
            serde_json::to_value(permission_call(&request)).expect("serializes")["toolCallId"],
            "t9"
        );
    }

    #[test]
    fn stop_reasons() {
        let end = |reason: StopReason, success: bool| TurnEnd {
            success,
            stop_reason: reason,
            session_id: None,
            result: None,
            error: None,
        };
        assert_eq!(
            stop_reason(&end(StopReason::EndTurn, true)),
            Some(acp::StopReason::EndTurn)
        );
        assert_eq!(
            stop_reason(&end(StopReason::Interrupted, false)),
            Some(acp::StopReason::Cancelled)
        );
        assert_eq!(
            stop_reason(&end(StopReason::MaxTurns, true)),
            Some(acp::StopReason::MaxTurnRequests)
        );
        assert_eq!(stop_reason(&end(StopReason::Error, false)), None);
    }

    fn usage(scope: UsageScope, input: u64, output: u64, window: Option<u64>) -> Usage {
        Usage {
            scope,
            input_tokens: input,
            output_tokens: output,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 0,
            reasoning_tokens: None,
            cost_usd: None,
            context_window: window,
            context_tokens: None,
        }
    }

    fn end() -> Event {
        Event::TurnEnd(TurnEnd {
            success: true,
            stop_reason: StopReason::EndTurn,
            session_id: None,
            result: None,
            error: None,
        })
    }

    #[test]
    fn the_turn_end_reports_the_context_where_the_window_is_known() {
        // Claude: two model calls; the context is the last one's, the window the result's.
        let mut encoder = UpdateEncoder::with_session_cost(Some(0.5));
        assert!(
            encoder
                .encode(&Event::Usage(usage(UsageScope::Message, 10, 5, None)))
                .is_empty()
        );
        encoder.encode(&Event::Usage(usage(UsageScope::Message, 20, 7, None)));
        let mut turn = usage(UsageScope::Turn, 30, 12, Some(200_000));
        turn.cost_usd = Some(0.25);
        encoder.encode(&Event::Usage(turn));
        assert_eq!(
            wire(encoder.encode(&end())),
            vec![
                json!({"sessionUpdate": "usage_update", "used": 127, "size": 200_000,
                "cost": {"amount": 0.75, "currency": "USD"}})
            ]
        );
        assert_eq!(encoder.session_cost(), Some(0.75));

        // Codex: the provider's own context figure wins over the turn's sum.
        let mut encoder = UpdateEncoder::default();
        let mut turn = usage(UsageScope::Turn, 30, 12, Some(258_400));
        turn.context_tokens = Some(90);
        encoder.encode(&Event::Usage(turn));
        assert_eq!(
            wire(encoder.encode(&end())),
            vec![json!({"sessionUpdate": "usage_update", "used": 90, "size": 258_400})]
        );

        // No window (pi, opencode): no update; no usage at all, or only zeros: none either.
        let mut encoder = UpdateEncoder::default();
        let mut zeros = usage(UsageScope::Turn, 0, 0, Some(200_000));
        zeros.cache_read_input_tokens = 0;
        encoder.encode(&Event::Usage(zeros));
        assert!(encoder.encode(&end()).is_empty());
        let mut encoder = UpdateEncoder::default();
        encoder.encode(&Event::Usage(usage(UsageScope::Turn, 30, 12, None)));
        assert!(encoder.encode(&end()).is_empty());
        assert!(UpdateEncoder::default().encode(&end()).is_empty());
    }
}
