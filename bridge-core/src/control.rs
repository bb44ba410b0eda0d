//! Control messages a client writes on the bridge's stdin after the request, one JSON per line:
//!
//! * `{"type":"interrupt"}`: stop the turn (gracefully first);
//! * `{"type":"permission_response","requestId":"…","decision":…}`: answer an approval;
//!   `decision` takes every shape [`PermissionDecision::from_wire`] accepts, and the fields
//!   `message`, `updatedInput`, `answers`, `targetMode`, `scope` may also sit next to it.

use serde_json::{Map, Value};

use crate::permission::PermissionDecision;

/// One parsed control line.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// Interrupt the turn.
    Interrupt,
    /// Answer an approval.
    PermissionResponse {
        /// The request answered.
        request_id: String,
        /// The decision.
        decision: Box<PermissionDecision>,
    },
    /// `{"type":"set_permission_mode","mode":"acceptEdits"}`: the permission mode of the next
    /// turns of a session.
    SetPermissionMode(String),
    /// `{"type":"set_model","model":"…"}`: the model of the next turns of a session.
    SetModel(String),
}

/// Parses one control line; the error says what is wrong with it.
///
/// ```
/// use bridge_core::control::{parse_control, Control};
/// assert_eq!(parse_control(r#"{"type":"interrupt"}"#), Ok(Control::Interrupt));
/// let c = parse_control(r#"{"type":"permission_response","requestId":"r1","decision":"deny","message":"no"}"#).unwrap();
/// assert!(matches!(c, Control::PermissionResponse { request_id, decision } if request_id == "r1" && decision.message.as_deref() == Some("no")));
/// ```
pub fn parse_control(line: &str) -> Result<Control, String> {
    let value: Value =
        serde_json::from_str(line.trim()).map_err(|e| format!("control line is not JSON: {e}"))?;
    let Value::Object(mut object) = value else {
        return Err("control line must be a JSON object".into());
    };
    match object.get("type").and_then(Value::as_str) {
        Some("interrupt") => Ok(Control::Interrupt),
        Some("permission_response") => {
            let request_id = object
                .remove("requestId")
                .or_else(|| object.remove("request_id"))
                .and_then(|v| v.as_str().map(str::to_string))
                .ok_or("permission_response needs a string `requestId`")?;
            object.remove("type");
            let decision = match object.remove("decision") {
                Some(Value::String(kind)) => {
                    let mut merged = Map::new();
                    merged.insert("behavior".into(), Value::String(kind));
                    merged.extend(object);
                    Value::Object(merged)
                }
                Some(Value::Object(mut inner)) => {
                    for (k, v) in object {
                        inner.entry(k).or_insert(v);
                    }
                    Value::Object(inner)
                }
                Some(other) => other,
                None => Value::Object(object),
            };
            Ok(Control::PermissionResponse {
                request_id,
                decision: Box::new(PermissionDecision::from_wire(&decision)?),
            })
        }
        Some(kind @ ("set_permission_mode" | "set_model")) => {
            let field = if kind == "set_model" { "model" } else { "mode" };
            let value = object
                .get(field)
                .and_then(Value::as_str)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| format!("{kind} needs a string `{field}`"))?
                .to_string();
            Ok(if kind == "set_model" {
                Control::SetModel(value)
            } else {
                Control::SetPermissionMode(value)
            })
        }
        Some(other) => Err(format!("unknown control message type `{other}`")),
        None => Err("control message needs a `type`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::DecisionKind;

    #[test]
    fn shapes() {
        let c = parse_control(r#"{"type":"permission_response","requestId":"a","decision":{"behavior":"allow","updatedInput":{"x":1}}}"#).unwrap();
        let Control::PermissionResponse { decision, .. } = c else {
            panic!()
        };
        assert_eq!(decision.decision, DecisionKind::AllowOnce);
        assert_eq!(decision.updated_input, Some(serde_json::json!({"x": 1})));
        let c = parse_control(r#"{"type":"permission_response","requestId":"a","allow":true}"#)
            .unwrap();
        assert!(
            matches!(c, Control::PermissionResponse { decision, .. } if decision.decision == DecisionKind::AllowOnce)
        );
        assert!(parse_control(r#"{"type":"permission_response","decision":"allow"}"#).is_err());
        assert!(parse_control(r#"{"type":"dance"}"#).is_err());
        assert_eq!(
            parse_control(r#"{"type":"set_permission_mode","mode":"plan"}"#),
            Ok(Control::SetPermissionMode("plan".into()))
        );
        assert_eq!(
            parse_control(r#"{"type":"set_model","model":"m2"}"#),
            Ok(Control::SetModel("m2".into()))
        );
        assert!(parse_control(r#"{"type":"set_model"}"#).is_err());
        assert!(parse_control("nope").is_err());
    }
}
