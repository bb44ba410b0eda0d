//! `session/request_permission` answers: the unified decision mapped back to one of the agent's
//! option ids, and the bridge-side policy of each permission mode.
//!
//! ACP options are adapter-defined strings with a kind (`allow_once`, `allow_always`,
//! `reject_once`, `reject_always`); the answer is `{"outcome":{"outcome":"selected","optionId":…}}`
//! or `{"outcome":{"outcome":"cancelled"}}`. The mapping:
//!
//! | decision | option kind chosen (fallbacks in order) |
//! |---|---|
//! | allow once | `allow_once`, `allow_always` (reported: applied as allow for the session) |
//! | allow for the session | `allow_always`, `allow_once` (reported: applied once) |
//! | deny | `reject_once`, `reject_always`, else the `cancelled` outcome |
//! | cancel | the `cancelled` outcome, and the turn is cancelled (`session/cancel`) |
//!
//! ACP has no field for a denial message or an edited input: both are reported as not applied.

use bridge_core::event::ToolKind;
use bridge_core::permission::{
    DecisionKind, DecisionSource, EffectiveDecision, PermissionDecision, PermissionRequest,
    RequestKind, Resolution,
};
use permission_mapper::PermissionMode;
use serde_json::{Value, json};

/// The answer to send for a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The JSON-RPC `result` for the agent.
    pub result: Value,
    /// What was applied, for the client.
    pub effective: EffectiveDecision,
    /// The decision stops the turn.
    pub cancel_turn: bool,
    /// The tool call will not run (a denial or a cancel).
    pub refused: bool,
}

fn pick<'a>(options: &'a Value, kinds: &[&str]) -> Option<(&'a str, &'a str)> {
    let options = options.as_array()?;
    kinds.iter().find_map(|kind| {
        options.iter().find_map(|o| {
            let k = o.get("kind").and_then(Value::as_str)?;
            let id = o.get("optionId").and_then(Value::as_str)?;
            (k == *kind).then_some((id, k))
        })
    })
}

fn selected(option_id: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
}

/// The `cancelled` outcome (also what every pending request gets when the turn is cancelled).
pub fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

/// Maps `resolution` to the agent's options for `request`.
pub fn answer(request: &PermissionRequest, resolution: &Resolution) -> Answer {
    let decision = &resolution.decision;
    let options = request.native.clone().unwrap_or(Value::Null);
    let mut notes: Vec<String> = Vec::new();
    let requested = decision.decision;
    let (result, applied) = match requested {
        DecisionKind::AllowOnce | DecisionKind::AllowSession => {
            let order: &[&str] = if requested == DecisionKind::AllowOnce {
                &["allow_once", "allow_always"]
            } else {
                &["allow_always", "allow_once"]
            };
            match pick(&options, order) {
                Some((id, kind)) => {
                    let applied = if kind == "allow_once" {
                        DecisionKind::AllowOnce
                    } else {
                        DecisionKind::AllowSession
                    };
                    if applied != requested {
                        notes.push(format!(
                            "the agent offers no `{}` option; answered with `{id}` ({kind})",
                            order[0]
                        ));
                    }
                    if decision.updated_input.is_some() {
                        notes.push(
                            "ACP cannot carry an edited tool input; the agent runs its own input"
                                .into(),
                        );
                    }
                    (selected(id), applied)
                }
                None => {
                    notes.push(
                        "the agent offered no allow option; the request was cancelled".into(),
                    );
                    (cancelled(), DecisionKind::Deny)
                }
            }
        }
        DecisionKind::Deny => match pick(&options, &["reject_once", "reject_always"]) {
            Some((id, kind)) => {
                if kind == "reject_always" {
                    notes.push(format!(
                        "the agent offers no one-time rejection; answered with `{id}` (reject_always)"
                    ));
                }
                (selected(id), DecisionKind::Deny)
            }
            None => {
                notes.push("the agent offered no reject option; answered `cancelled`".into());
                (cancelled(), DecisionKind::Deny)
            }
        },
        DecisionKind::Cancel => (cancelled(), DecisionKind::Cancel),
    };
    notes.extend(resolution.unsent_refusal_note(
        applied,
        "ACP has no denial message; the agent reports its own refusal",
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
        refused: matches!(applied, DecisionKind::Deny | DecisionKind::Cancel),
    }
}

/// What the permission mode decides without asking anyone, when the agent still asks (the
/// agent's own mode could not be set to match, or it asks anyway):
///
/// * `plan` / `sandbox`: anything that edits, deletes, moves or executes is denied;
/// * `bypassPermissions` / `yolo`: everything is allowed once;
/// * `acceptEdits`: edits are allowed once;
/// * `default`: nothing (the client is asked).
pub fn policy(mode: PermissionMode, request: &PermissionRequest) -> Option<Resolution> {
    let writes = matches!(
        request.tool_kind,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute
    );
    let decision = match mode {
        PermissionMode::Plan | PermissionMode::Sandbox
            if writes && request.kind == RequestKind::Tool =>
        {
            PermissionDecision::deny(format!(
                "Permission denied: {} is not allowed in {} mode (read-only)",
                request.tool_name,
                mode.as_str()
            ))
        }
        PermissionMode::BypassPermissions | PermissionMode::Yolo => {
            PermissionDecision::new(DecisionKind::AllowOnce)
        }
        PermissionMode::AcceptEdits if request.tool_kind == ToolKind::Edit => {
            PermissionDecision::new(DecisionKind::AllowOnce)
        }
        _ => return None,
    };
    Some(Resolution {
        decision,
        source: DecisionSource::Policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(options: Value, kind: ToolKind) -> PermissionRequest {
        PermissionRequest {
            request_id: "acp-0".into(),
            kind: RequestKind::Tool,
            tool_name: "Bash".into(),
            tool_kind: kind,
            input: json!({}),
            description: None,
            paths: vec![],
            tool_use_id: Some("t".into()),
            options: vec![],
            native: Some(options),
        }
    }

    fn client(decision: PermissionDecision) -> Resolution {
        Resolution {
            decision,
            source: DecisionSource::Client,
        }
    }

    fn gemini_options() -> Value {
        json!([{"optionId": "proceed_always", "kind": "allow_always"},
               {"optionId": "proceed_once", "kind": "allow_once"},
               {"optionId": "cancel", "kind": "reject_once"}])
    }

    #[test]
    fn decisions_map_to_option_ids() {
        let r = request(gemini_options(), ToolKind::Execute);
        let a = answer(
            &r,
            &client(PermissionDecision::new(DecisionKind::AllowOnce)),
        );
        assert_eq!(a.result["outcome"]["optionId"], "proceed_once");
        assert_eq!(a.effective.applied, DecisionKind::AllowOnce);
        assert!(a.effective.note.is_none() && !a.refused);
        let a = answer(
            &r,
            &client(PermissionDecision::new(DecisionKind::AllowSession)),
        );
        assert_eq!(a.result["outcome"]["optionId"], "proceed_always");
        let a = answer(&r, &client(PermissionDecision::deny("no")));
        assert_eq!(a.result["outcome"]["optionId"], "cancel");
        assert!(a.refused && !a.cancel_turn);
        assert!(a.effective.note.unwrap().contains("no denial message"));
        let a = answer(&r, &client(PermissionDecision::new(DecisionKind::Cancel)));
        assert_eq!(a.result, cancelled());
        assert!(a.cancel_turn);
    }

    #[test]
    fn missing_options_fall_back_and_say_so() {
        let r = request(
            json!([{"optionId": "yes", "kind": "allow_always"}, {"optionId": "never", "kind": "reject_always"}]),
            ToolKind::Execute,
        );
        let a = answer(
            &r,
            &client(PermissionDecision::new(DecisionKind::AllowOnce)),
        );
        assert_eq!(a.result["outcome"]["optionId"], "yes");
        assert_eq!(a.effective.applied, DecisionKind::AllowSession);
        assert!(a.effective.note.is_some());
        let a = answer(
            &request(json!([]), ToolKind::Execute),
            &client(PermissionDecision::deny("x")),
        );
        assert_eq!(a.result, cancelled());
        assert_eq!(a.effective.applied, DecisionKind::Deny);
    }

    #[test]
    fn mode_policies() {
        let exec = request(gemini_options(), ToolKind::Execute);
        let edit = request(gemini_options(), ToolKind::Edit);
        let read = request(gemini_options(), ToolKind::Read);
        assert_eq!(
            policy(PermissionMode::Plan, &exec)
                .unwrap()
                .decision
                .decision,
            DecisionKind::Deny
        );
        assert!(policy(PermissionMode::Plan, &read).is_none());
        assert_eq!(
            policy(PermissionMode::Yolo, &exec)
                .unwrap()
                .decision
                .decision,
            DecisionKind::AllowOnce
        );
        assert!(policy(PermissionMode::AcceptEdits, &exec).is_none());
        assert!(policy(PermissionMode::AcceptEdits, &edit).is_some());
        assert!(policy(PermissionMode::Default, &edit).is_none());
    }
}
