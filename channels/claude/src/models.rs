//! `listModels` for Claude Code: the model list of its stream-json `initialize` control reply.
//!
//! The bridge starts `claude -p --input-format stream-json --output-format stream-json
//! --verbose`, writes one `initialize` control request and closes stdin; Claude Code answers
//! with a `control_response` whose `models` entries (`value`, `displayName`, `description`)
//! are what its own model picker offers, and exits. No model request is made. The entry whose
//! value is `default` is the default.

use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

/// The id of the bridge's `initialize` request.
const REQUEST_ID: &str = "bridge-list-models";

/// `listModels`.
pub const QUERY: Query = Query::list_models(
    "the models Claude Code offers (its initialize reply)",
    list_models,
);

/// The stdin of the listing: one `initialize` control request.
pub fn initialize_request() -> String {
    let line = json!({"type": "control_request", "request_id": REQUEST_ID,
                      "request": {"subtype": "initialize", "hooks": null}});
    format!("{line}\n")
}

/// The model list in Claude Code's stdout: the `models` of the `control_response` to the
/// bridge's `initialize` request.
pub fn parse_initialize_reply(stdout: &str) -> Result<ModelList, String> {
    for line in stdout.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let response = &value["response"];
        if value["type"] != "control_response" || response["request_id"] != REQUEST_ID {
            continue;
        }
        if response["subtype"] != "success" {
            let why = response["error"].as_str().unwrap_or("no reason given");
            return Err(format!("Claude Code refused the initialize request: {why}"));
        }
        let Some(entries) = response["response"]["models"].as_array() else {
            return Err("Claude Code's initialize reply has no model list".into());
        };
        let models: Vec<ModelInfo> = entries
            .iter()
            .filter_map(|entry| {
                let id = entry["value"].as_str()?;
                Some(ModelInfo {
                    id: id.to_string(),
                    label: entry["displayName"].as_str().unwrap_or(id).to_string(),
                    description: entry["description"].as_str().map(str::to_string),
                })
            })
            .collect();
        let default_model = models
            .iter()
            .find(|m| m.id == "default")
            .map(|m| m.id.clone());
        return Ok(ModelList {
            provider: crate::ID.into(),
            default_model,
            models,
        });
    }
    Err("Claude Code did not answer the initialize request".into())
}

fn list_models(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let located = crate::resolve_cli().map_err(QueryError::Failed)?;
        let mut command = CommandSpec::new(located.resolved.path);
        for arg in crate::STREAM_JSON_ARGS {
            command.arg(arg);
        }
        command.stdin = StdinMode::Piped;
        let input = initialize_request();
        let output = bridge_core::query::run_cli(
            "Claude Code",
            &command,
            input.as_bytes(),
            request.deadline,
        )
        .await?;
        let list = parse_initialize_reply(&output.stdout).map_err(|why| {
            let tail = output.stderr.lines().last().unwrap_or_default();
            QueryError::Failed(if tail.is_empty() {
                why
            } else {
                format!("{why}: {tail}")
            })
        })?;
        Ok(list
            .reply()
            .with_notes(located.warnings.into_iter().collect()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_come_from_the_initialize_reply() {
        let stdout = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/claude/2.1.197/streamin-initialize.stdout"
        ))
        .unwrap()
        .replace("\"init_1\"", &format!("\"{REQUEST_ID}\""));
        let list = parse_initialize_reply(&stdout).unwrap();
        assert_eq!(list.default_model.as_deref(), Some("default"));
        let ids: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            ["default", "opus[1m]", "sonnet", "sonnet[1m]", "haiku"]
        );
        assert_eq!(list.models[4].label, "Haiku");
        assert!(
            list.models[4]
                .description
                .as_deref()
                .unwrap()
                .starts_with("Haiku 4.5")
        );
    }

    #[test]
    fn no_reply_or_a_refusal_is_an_error_never_a_list() {
        assert!(parse_initialize_reply("{\"type\":\"system\"}\nnot json\n").is_err());
        let refused = json!({"type": "control_response", "response": {"subtype": "error",
            "request_id": REQUEST_ID, "error": "nope"}});
        assert_eq!(
            parse_initialize_reply(&refused.to_string()).unwrap_err(),
            "Claude Code refused the initialize request: nope"
        );
        let other = json!({"type": "control_response", "response": {"subtype": "success",
            "request_id": "someone-else", "response": {"models": []}}});
        assert!(parse_initialize_reply(&other.to_string()).is_err());
    }
}
