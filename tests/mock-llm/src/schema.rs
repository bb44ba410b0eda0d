//! A value that conforms to a (simple) JSON schema, for structured-output side requests.

use serde_json::{Map, Value, json};

/// Produces a deterministic value that conforms to `schema` for the common subset of JSON Schema
/// that clients use for structured output: `const`, `enum`, `anyOf`/`oneOf`/`allOf` (first
/// branch), `type` (or a list of types), `properties`, `items` with `minItems`, `minimum`,
/// `exclusiveMinimum` and `minLength`. Every declared property is filled in.
pub fn fill(schema: &Value) -> Value {
    let Some(obj) = schema.as_object() else {
        // `true` (anything goes) or a malformed schema.
        return json!("mock");
    };
    if let Some(c) = obj.get("const") {
        return c.clone();
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = obj
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return fill(first);
        }
    }
    let ty = match obj.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ if obj.contains_key("items") => "array",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), fill(v));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = obj.get("items").cloned().unwrap_or(Value::Bool(true));
            Value::Array((0..n).map(|_| fill(&item)).collect())
        }
        "integer" | "number" => {
            if let Some(min) = obj.get("minimum").filter(|m| m.is_number()) {
                min.clone()
            } else if let Some(min) = obj.get("exclusiveMinimum").and_then(Value::as_f64) {
                json!(min.floor() as i64 + 1)
            } else {
                json!(1)
            }
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => {
            let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            let mut s = String::from("mock");
            while s.len() < min {
                s.push('x');
            }
            Value::String(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_common_shapes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "score": {"type": "integer", "minimum": 1},
                "ok": {"type": "boolean"},
                "kind": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "maybe": {"type": ["null", "number"], "exclusiveMinimum": 0},
                "nested": {"properties": {"x": {"const": 7}}},
                "alt": {"anyOf": [{"type": "string", "minLength": 6}, {"type": "null"}]}
            }
        });
        assert_eq!(
            fill(&schema),
            json!({
                "title": "mock", "score": 1, "ok": false, "kind": "a",
                "tags": ["mock", "mock"], "maybe": 1, "nested": {"x": 7}, "alt": "mockxx"
            })
        );
        assert_eq!(fill(&json!(true)), json!("mock"));
    }
}
