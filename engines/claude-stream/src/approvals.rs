//! Claude Code's stream-json control protocol for approvals (`--permission-prompt-tool stdio`).
//!
//! The CLI prints `{"type":"control_request","request_id":…,"request":{"subtype":"can_use_tool",
//! "tool_name":…,"input":…,"description":…,"permission_suggestions":[…],"blocked_path":…,
//! "tool_use_id":…}}` and waits for a `control_response` on its stdin:
//!
//! * allow: `{"behavior":"allow","updatedInput":{…}}` (plus `updatedPermissions` to remember
//!   the rule for the session);
//! * deny: `{"behavior":"deny","message":"…"}` (plus `"interrupt":true` to stop the turn).
//!
//! AskUserQuestion and ExitPlanMode arrive the same way and become their own request kinds;
//! the answers travel back inside `updatedInput`, and an approved plan's target mode is applied
//! with a `set_permission_mode` control request.

use bridge_core::event::ToolKind;
use bridge_core::permission::{
    DecisionKind, DecisionSource, EffectiveDecision, PermissionDecision, PermissionRequest,
    PermissionResponder, RequestKind, Resolution, Response,
};
use permission_mapper::PermissionMode;
use serde_json::{Value, json};

use crate::normalize::tool_kind;

/// Turns a `can_use_tool` control request into a [`PermissionRequest`].
pub fn permission_request(line: &Value) -> Option<PermissionRequest> {
    let request = line.get("request")?;
    if request.get("subtype").and_then(Value::as_str) != Some("can_use_tool") {
        return None;
    }
    let request_id = line.get("request_id")?.as_str()?.to_string();
    let tool_name = request
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = match tool_name.as_str() {
        "AskUserQuestion" => RequestKind::Question,
        "ExitPlanMode" => RequestKind::PlanApproval,
        _ => RequestKind::Tool,
    };
    let input = request.get("input").cloned().unwrap_or(Value::Null);
    let suggestions = request
        .get("permission_suggestions")
        .filter(|s| s.as_array().is_some_and(|a| !a.is_empty()))
        .cloned();
    let mut paths: Vec<String> = Vec::new();
    for key in ["blocked_path"] {
        if let Some(p) = request.get(key).and_then(Value::as_str) {
            paths.push(p.to_string());
        }
    }
    for key in ["file_path", "notebook_path", "path"] {
        if let Some(p) = input.get(key).and_then(Value::as_str)
            && !paths.iter().any(|q| q == p)
        {
            paths.push(p.to_string());
        }
    }
    let mut options = vec![DecisionKind::AllowOnce];
    if suggestions.is_some() && kind == RequestKind::Tool {
        options.push(DecisionKind::AllowSession);
    }
    options.extend([DecisionKind::Deny, DecisionKind::Cancel]);
    Some(PermissionRequest {
        request_id,
        kind,
        tool_kind: tool_kind(&tool_name),
        description: request
            .get("description")
            .or_else(|| request.get("decision_reason"))
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_use_id: request
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_name,
        input,
        paths,
        options,
        native: suggestions,
    })
}

/// Answers Claude Code's approval requests for one turn.
#[derive(Debug, Clone)]
pub struct ClaudeResponder {
    mode: PermissionMode,
}

impl ClaudeResponder {
    /// A responder for a turn running in `mode`.
    pub fn new(mode: PermissionMode) -> Self {
        ClaudeResponder { mode }
    }
}

fn control_response(request_id: &str, response: Value) -> String {
    let line = json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    });
    format!("{line}\n")
}

/// The rules Claude suggested, scoped to this session (never written to settings files).
fn session_rules(suggestions: &Value) -> Value {
    let rules = suggestions
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s.get("type").and_then(Value::as_str) == Some("addRules"))
        .map(|s| {
            let mut s = s.clone();
            s["destination"] = Value::String("session".into());
            s
        })
        .collect();
    Value::Array(rules)
}

impl PermissionResponder for ClaudeResponder {
    fn policy(&self, request: &PermissionRequest) -> Option<Resolution> {
        let read_only_mode = matches!(self.mode, PermissionMode::Plan | PermissionMode::Sandbox);
        let writes = matches!(
            request.tool_kind,
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute
        );
        (read_only_mode && request.kind == RequestKind::Tool && writes).then(|| Resolution {
            decision: PermissionDecision::deny(format!(
                "Permission denied: {} is not allowed in {} mode (read-only until a plan is approved)",
                request.tool_name,
                self.mode.as_str()
            )),
            source: DecisionSource::Policy,
        })
    }

    fn respond(&self, request: &PermissionRequest, resolution: &Resolution) -> Response {
        let decision = &resolution.decision;
        let id = request.request_id.as_str();
        let mut note = None;
        let mut applied = decision.decision;
        let mut stdin = String::new();
        let mut cancel_turn = false;
        match decision.decision {
            DecisionKind::AllowOnce | DecisionKind::AllowSession => {
                let mut input = decision
                    .updated_input
                    .clone()
                    .unwrap_or_else(|| request.input.clone());
                if request.kind == RequestKind::Question {
                    match &decision.answers {
                        Some(answers) if input.is_object() => input["answers"] = answers.clone(),
                        Some(_) => {}
                        None => {
                            note = Some(
                                "no answers were given; the question was allowed unanswered".into(),
                            );
                        }
                    }
                }
                let mut body = json!({"behavior": "allow", "updatedInput": input});
                if decision.decision == DecisionKind::AllowSession {
                    let rules = request.native.as_ref().map(session_rules);
                    match rules {
                        Some(Value::Array(rules)) if !rules.is_empty() => {
                            body["updatedPermissions"] = Value::Array(rules);
                        }
                        _ => {
                            applied = DecisionKind::AllowOnce;
                            note = Some(
                                "Claude Code offered no rule to remember for this call; allowed once".into(),
                            );
                        }
                    }
                }
                stdin.push_str(&control_response(id, body));
                if request.kind == RequestKind::PlanApproval
                    && let Some(mode) = &decision.target_mode
                {
                    let set_mode = json!({
                        "type": "control_request",
                        "request_id": format!("bridge-mode-{id}"),
                        "request": {"subtype": "set_permission_mode", "mode": mode},
                    });
                    stdin.push_str(&format!("{set_mode}\n"));
                }
            }
            DecisionKind::Deny | DecisionKind::Cancel => {
                let message = decision
                    .message
                    .clone()
                    .unwrap_or_else(|| match request.kind {
                        RequestKind::PlanApproval => {
                            "The user rejected the plan; keep planning".into()
                        }
                        RequestKind::Question => "The user declined to answer".into(),
                        RequestKind::Tool => "The user denied this tool use".into(),
                    });
                let mut body = json!({"behavior": "deny", "message": message});
                if decision.decision == DecisionKind::Cancel {
                    body["interrupt"] = Value::Bool(true);
                    cancel_turn = true;
                }
                stdin.push_str(&control_response(id, body));
                if note.is_none() && resolution.source != DecisionSource::Client {
                    note = decision.message.clone();
                }
            }
        }
        Response {
            stdin: stdin.into_bytes(),
            effective: EffectiveDecision {
                request_id: request.request_id.clone(),
                requested: decision.decision,
                applied,
                source: resolution.source,
                note,
            },
            cancel_turn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn can_use_tool(tool: &str, input: Value, suggestions: Value) -> PermissionRequest {
        permission_request(&json!({
            "type": "control_request",
            "request_id": "req-1",
            "request": {"subtype": "can_use_tool", "tool_name": tool, "input": input,
                        "permission_suggestions": suggestions, "blocked_path": "/w/x.txt", "tool_use_id": "toolu_1"}
        }))
        .unwrap()
    }

    fn resolve(decision: PermissionDecision) -> Resolution {
        Resolution {
            decision,
            source: DecisionSource::Client,
        }
    }

    fn body(response: &Response) -> Value {
        let first = String::from_utf8(response.stdin.clone()).unwrap();
        let line: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
        assert_eq!(line["response"]["request_id"], "req-1");
        line["response"]["response"].clone()
    }

    #[test]
    fn allow_once_echoes_or_replaces_the_input() {
        let req = can_use_tool("Bash", json!({"command": "touch x"}), json!([]));
        assert_eq!(req.kind, RequestKind::Tool);
        assert_eq!(req.paths, vec!["/w/x.txt".to_string()]);
        assert!(!req.options.contains(&DecisionKind::AllowSession));
        let r = ClaudeResponder::new(PermissionMode::Default);
        let out = r.respond(
            &req,
            &resolve(PermissionDecision::new(DecisionKind::AllowOnce)),
        );
        assert_eq!(
            body(&out),
            json!({"behavior": "allow", "updatedInput": {"command": "touch x"}})
        );
        let edited = PermissionDecision {
            updated_input: Some(json!({"command": "echo safe"})),
            ..PermissionDecision::new(DecisionKind::AllowOnce)
        };
        assert_eq!(
            body(&r.respond(&req, &resolve(edited)))["updatedInput"]["command"],
            "echo safe"
        );
    }

    #[test]
    fn allow_session_uses_suggested_rules_or_falls_back_to_once_and_says_so() {
        let suggestions = json!([{"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "localSettings"},
                                 {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]);
        let req = can_use_tool("Bash", json!({}), suggestions);
        let r = ClaudeResponder::new(PermissionMode::Default);
        let out = r.respond(
            &req,
            &resolve(PermissionDecision::new(DecisionKind::AllowSession)),
        );
        let b = body(&out);
        assert_eq!(b["updatedPermissions"].as_array().unwrap().len(), 1);
        assert_eq!(b["updatedPermissions"][0]["destination"], "session");
        assert_eq!(out.effective.applied, DecisionKind::AllowSession);

        let bare = can_use_tool("Bash", json!({}), json!([]));
        let out = r.respond(
            &bare,
            &resolve(PermissionDecision::new(DecisionKind::AllowSession)),
        );
        assert_eq!(out.effective.requested, DecisionKind::AllowSession);
        assert_eq!(out.effective.applied, DecisionKind::AllowOnce);
        assert!(
            out.effective
                .note
                .as_deref()
                .unwrap()
                .contains("allowed once")
        );
    }

    #[test]
    fn deny_and_cancel() {
        let req = can_use_tool("Write", json!({"file_path": "/w/a"}), json!([]));
        let r = ClaudeResponder::new(PermissionMode::Default);
        let out = r.respond(&req, &resolve(PermissionDecision::deny("not today")));
        assert_eq!(
            body(&out),
            json!({"behavior": "deny", "message": "not today"})
        );
        assert!(!out.cancel_turn);
        let out = r.respond(
            &req,
            &resolve(PermissionDecision::new(DecisionKind::Cancel)),
        );
        assert_eq!(body(&out)["interrupt"], true);
        assert!(out.cancel_turn);
        assert_eq!(out.effective.applied, DecisionKind::Cancel);
    }

    #[test]
    fn plan_mode_never_lets_a_write_through() {
        let r = ClaudeResponder::new(PermissionMode::Plan);
        let write = can_use_tool("Write", json!({}), json!([]));
        let res = r.policy(&write).expect("policy decides");
        assert_eq!(res.source, DecisionSource::Policy);
        assert_eq!(res.decision.decision, DecisionKind::Deny);
        assert!(
            r.policy(&can_use_tool("Read", json!({}), json!([])))
                .is_none()
        );
        assert!(
            r.policy(&can_use_tool(
                "ExitPlanMode",
                json!({"plan": "p"}),
                json!([])
            ))
            .is_none()
        );
        assert!(
            ClaudeResponder::new(PermissionMode::Default)
                .policy(&write)
                .is_none()
        );
    }

    #[test]
    fn questions_and_plans() {
        let q = can_use_tool(
            "AskUserQuestion",
            json!({"questions": [{"question": "Which?"}]}),
            json!([]),
        );
        assert_eq!(q.kind, RequestKind::Question);
        let r = ClaudeResponder::new(PermissionMode::Default);
        let answer = PermissionDecision {
            answers: Some(json!({"Which?": "A"})),
            ..PermissionDecision::new(DecisionKind::AllowOnce)
        };
        let b = body(&r.respond(&q, &resolve(answer)));
        assert_eq!(b["updatedInput"]["answers"], json!({"Which?": "A"}));
        assert_eq!(b["updatedInput"]["questions"][0]["question"], "Which?");

        let p = can_use_tool("ExitPlanMode", json!({"plan": "1. x"}), json!([]));
        assert_eq!(p.kind, RequestKind::PlanApproval);
        let approve = PermissionDecision {
            target_mode: Some("acceptEdits".into()),
            ..PermissionDecision::new(DecisionKind::AllowOnce)
        };
        let out = r.respond(&p, &resolve(approve));
        let text = String::from_utf8(out.stdin).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .contains(r#""subtype":"set_permission_mode","mode":"acceptEdits""#)
        );
    }
}
