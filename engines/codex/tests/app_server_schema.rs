//! The app-server types the engine uses (`bridge_codex::app_server::protocol`) against the
//! schema of the pinned Codex (`codex app-server generate-json-schema` of 0.171.0, committed as
//! `schema/app-server-0.171.0.schema.json`).
//!
//! For every type, its JSON Schema (schemars) is walked next to Codex's definition of the same
//! name: each field and enum value the bridge uses must exist in Codex's; in what the bridge
//! sends, every field Codex requires must be there; in what it receives, every field the bridge
//! requires must be one Codex always sends. Each method name the engine uses must be one of
//! Codex's. A new Codex that renames a field fails here, not in a user's turn: regenerate the
//! schema with the new binary and run this test.

use bridge_codex::app_server::protocol::*;
use schemars::JsonSchema;
use serde_json::{Map, Value};

const SCHEMA: &str = include_str!("../schema/app-server-0.171.0.schema.json");

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// The bridge sends it.
    Send,
    /// The bridge reads it.
    Receive,
}

struct Checker {
    codex: Value,
    ours: Value,
    problems: Vec<String>,
}

fn pointer<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// Follows `$ref`s and unwraps `allOf: [x]` and nullable `anyOf`/`oneOf`/`type` pairs.
fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..32 {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            match pointer(root, reference) {
                Some(target) => {
                    node = target;
                    continue;
                }
                None => return node,
            }
        }
        if let Some([only]) = node
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            node = only;
            continue;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alternatives) = node.get(key).and_then(Value::as_array) {
                let not_null: Vec<&Value> = alternatives
                    .iter()
                    .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                if not_null.len() == 1 && alternatives.len() == 2 {
                    node = not_null[0];
                    break;
                }
            }
        }
        if node.get("$ref").is_none() {
            return node;
        }
    }
    node
}

fn properties(node: &Value) -> Option<&Map<String, Value>> {
    node.get("properties").and_then(Value::as_object)
}

fn required(node: &Value) -> Vec<&str> {
    node.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn alternatives(node: &Value) -> Vec<&Value> {
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| node.get(*k).and_then(Value::as_array))
        .flatten()
        .collect()
}

/// The string values an enum schema allows (`enum`, `const`, or alternatives of those).
fn values(root: &Value, node: &Value) -> Vec<String> {
    let node = resolve(root, node);
    let mut out: Vec<String> = node
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    if let Some(c) = node.get("const").and_then(Value::as_str) {
        out.push(c.to_string());
    }
    for alternative in alternatives(node) {
        out.extend(values(root, alternative));
    }
    out
}

/// The tag (`type` property's value) of a variant of an internally tagged enum.
fn tag(root: &Value, node: &Value) -> Option<String> {
    let tag = properties(resolve(root, node))?.get("type")?;
    values(root, tag).into_iter().next()
}

impl Checker {
    fn new() -> Checker {
        Checker {
            codex: serde_json::from_str(SCHEMA).expect("the committed schema is JSON"),
            ours: Value::Null,
            problems: Vec::new(),
        }
    }

    fn definition(&self, name: &str) -> Value {
        let defs = &self.codex["definitions"];
        defs.get(name)
            .or_else(|| defs["v2"].get(name))
            .cloned()
            .unwrap_or_else(|| panic!("Codex's schema has no definition `{name}`"))
    }

    fn check<T: JsonSchema>(&mut self, name: &str, dir: Dir) {
        self.ours = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        let theirs = self.definition(name);
        let ours = self.ours.clone();
        self.compare(&ours, &theirs, name, dir, 0);
    }

    fn compare(&mut self, ours: &Value, theirs: &Value, path: &str, dir: Dir, depth: usize) {
        if depth > 24 {
            return;
        }
        let o = resolve(&self.ours, ours).clone();
        let t = resolve(&self.codex, theirs).clone();
        if let Some(props) = properties(&o) {
            let Some(their_props) = properties(&t) else {
                self.problems
                    .push(format!("{path}: an object here, not in Codex's schema"));
                return;
            };
            for (key, schema) in props {
                match their_props.get(key) {
                    None => self
                        .problems
                        .push(format!("{path}.{key}: not in Codex's schema")),
                    Some(their) => {
                        let (schema, their) = (schema.clone(), their.clone());
                        self.compare(&schema, &their, &format!("{path}.{key}"), dir, depth + 1);
                    }
                }
            }
            match dir {
                Dir::Send => {
                    for key in required(&t) {
                        if !props.contains_key(key) {
                            self.problems.push(format!(
                                "{path}.{key}: Codex requires it and the bridge does not send it"
                            ));
                        }
                    }
                }
                Dir::Receive => {
                    let theirs = required(&t);
                    for key in required(&o) {
                        if !theirs.contains(&key) {
                            self.problems.push(format!(
                                "{path}.{key}: the bridge requires it and Codex may leave it out"
                            ));
                        }
                    }
                }
            }
            return;
        }
        let ours_values = values(&self.ours, &o);
        let our_alternatives = alternatives(&o);
        if our_alternatives.is_empty() && !ours_values.is_empty() {
            let theirs = values(&self.codex, &t);
            for v in ours_values {
                if !theirs.contains(&v) {
                    self.problems.push(format!(
                        "{path}: value `{v}` is not one of Codex's {theirs:?}"
                    ));
                }
            }
            return;
        }
        if !our_alternatives.is_empty() {
            let their_alternatives: Vec<Value> = alternatives(&t).into_iter().cloned().collect();
            for variant in our_alternatives {
                let variant = variant.clone();
                match tag(&self.ours, &variant) {
                    Some(name) => {
                        let found = their_alternatives
                            .iter()
                            .find(|a| tag(&self.codex, a).as_deref() == Some(name.as_str()))
                            .cloned();
                        match found {
                            Some(their) => self.compare(
                                &variant,
                                &their,
                                &format!("{path}<{name}>"),
                                dir,
                                depth + 1,
                            ),
                            None => self
                                .problems
                                .push(format!("{path}: variant `{name}` is not in Codex's schema")),
                        }
                    }
                    None => {
                        let theirs = values(&self.codex, &t);
                        for v in values(&self.ours, &variant) {
                            if !theirs.contains(&v) {
                                self.problems.push(format!(
                                    "{path}: value `{v}` is not one of Codex's {theirs:?}"
                                ));
                            }
                        }
                    }
                }
            }
            return;
        }
        if let (Some(items), Some(their_items)) = (o.get("items"), t.get("items")) {
            let (items, their_items) = (items.clone(), their_items.clone());
            self.compare(&items, &their_items, &format!("{path}[]"), dir, depth + 1);
        }
    }
}

#[test]
fn the_engines_types_match_the_pinned_codex_schema() {
    let mut c = Checker::new();
    c.check::<InitializeParams>("InitializeParams", Dir::Send);
    c.check::<ThreadStartParams>("ThreadStartParams", Dir::Send);
    c.check::<ThreadResumeParams>("ThreadResumeParams", Dir::Send);
    c.check::<TurnStartParams>("TurnStartParams", Dir::Send);
    c.check::<TurnInterruptParams>("TurnInterruptParams", Dir::Send);
    c.check::<CommandExecutionRequestApprovalResponse>(
        "CommandExecutionRequestApprovalResponse",
        Dir::Send,
    );
    c.check::<FileChangeRequestApprovalResponse>("FileChangeRequestApprovalResponse", Dir::Send);
    c.check::<ToolRequestUserInputResponse>("ToolRequestUserInputResponse", Dir::Send);

    c.check::<ThreadStartResponse>("ThreadStartResponse", Dir::Receive);
    c.check::<ThreadStartResponse>("ThreadResumeResponse", Dir::Receive);
    c.check::<TurnStartResponse>("TurnStartResponse", Dir::Receive);
    c.check::<TurnCompletedNotification>("TurnCompletedNotification", Dir::Receive);
    c.check::<TurnCompletedNotification>("TurnStartedNotification", Dir::Receive);
    c.check::<ErrorNotification>("ErrorNotification", Dir::Receive);
    for delta in [
        "AgentMessageDeltaNotification",
        "ReasoningSummaryTextDeltaNotification",
        "ReasoningTextDeltaNotification",
        "CommandExecutionOutputDeltaNotification",
    ] {
        c.check::<AgentMessageDeltaNotification>(delta, Dir::Receive);
    }
    c.check::<ItemCompletedNotification>("ItemStartedNotification", Dir::Receive);
    c.check::<ItemCompletedNotification>("ItemCompletedNotification", Dir::Receive);
    c.check::<ThreadTokenUsageUpdatedNotification>(
        "ThreadTokenUsageUpdatedNotification",
        Dir::Receive,
    );
    c.check::<TurnDiffUpdatedNotification>("TurnDiffUpdatedNotification", Dir::Receive);
    c.check::<TurnPlanUpdatedNotification>("TurnPlanUpdatedNotification", Dir::Receive);
    c.check::<CommandExecutionRequestApprovalParams>(
        "CommandExecutionRequestApprovalParams",
        Dir::Receive,
    );
    c.check::<FileChangeRequestApprovalParams>("FileChangeRequestApprovalParams", Dir::Receive);
    c.check::<ToolRequestUserInputParams>("ToolRequestUserInputParams", Dir::Receive);
    assert!(
        c.problems.is_empty(),
        "the app-server types differ from Codex 0.171.0's schema:\n{}",
        c.problems.join("\n")
    );
}

/// The methods a message of `union` (`ClientRequest`, `ServerNotification`, …) can have.
fn methods(codex: &Value, union: &str) -> Vec<String> {
    alternatives(&codex["definitions"][union])
        .into_iter()
        .filter_map(|a| properties(a)?.get("method").map(|m| values(codex, m)))
        .flatten()
        .collect()
}

#[test]
fn the_engines_methods_are_codexs() {
    let codex: Value = serde_json::from_str(SCHEMA).unwrap();
    let unions: [(&str, &[&str]); 4] = [
        ("ClientRequest", method::CLIENT_REQUESTS),
        ("ClientNotification", &[method::INITIALIZED]),
        ("ServerNotification", method::SERVER_NOTIFICATIONS),
        ("ServerRequest", method::SERVER_REQUESTS),
    ];
    for (union, ours) in unions {
        let theirs = methods(&codex, union);
        assert!(!theirs.is_empty(), "{union} lists no methods");
        for m in ours {
            assert!(theirs.iter().any(|t| t == m), "{union} has no `{m}`");
        }
    }
}

/// The check fails for a type that does not match (so the test above can fail).
#[test]
fn a_renamed_field_or_value_is_caught() {
    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct TurnInterruptParams {
        thread_id: String,
        turn: String,
    }
    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    enum TurnStatus {
        Completed,
        Cancelled,
    }
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Turn {
        id: String,
        status: TurnStatus,
    }
    let mut c = Checker::new();
    c.check::<TurnInterruptParams>("TurnInterruptParams", Dir::Send);
    c.check::<Turn>("Turn", Dir::Receive);
    let all = c.problems.join("\n");
    assert!(
        all.contains("TurnInterruptParams.turn: not in Codex's schema"),
        "{all}"
    );
    assert!(
        all.contains("TurnInterruptParams.turnId: Codex requires it"),
        "{all}"
    );
    assert!(all.contains("value `cancelled`"), "{all}");
}
