//! `listModels` for Claude Code: the model list of its stream-json `initialize` control reply.
//!
//! The bridge starts `claude --input-format stream-json --output-format stream-json
//! --verbose`, writes one `initialize` control request and closes stdin; Claude Code answers
//! with a `control_response` whose `models` entries (`value`, `displayName`, `description`)
//! are what its own model picker offers, and exits. No model request is made. The entry whose
//! value is `default` is the default.

use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

/// `listModels`.
pub const QUERY: Query = Query::list_models(
    "the models Claude Code offers (its initialize reply)",
    list_models,
);

/// The model list of Claude Code's answer to an `initialize` control request (its `models`).
pub fn models_of(response: &Value) -> Result<ModelList, String> {
    let Some(entries) = response["models"].as_array() else {
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
    Ok(ModelList {
        provider: crate::ID.into(),
        default_model,
        models,
    })
}

/// What Claude Code's model list depends on besides its binary: its settings and credentials.
const SOURCE_ENV: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
];

fn list_models(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let env = sdk_probe::ProbeEnv::from_process();
        let located = crate::resolve_cli().map_err(QueryError::Failed)?;
        let source = sdk_probe::ModelSource {
            binary: located.resolved.path,
            files: crate::history::config_dir(&env)
                .map(|dir| vec![dir.join("settings.json"), dir.join(".credentials.json")])
                .unwrap_or_default(),
            env: SOURCE_ENV.to_vec(),
        };
        let listing = async {
            let initialize = json!({"subtype": "initialize", "hooks": null});
            let target = crate::control::Target::default();
            let (answer, notes) =
                crate::control::ask(&target, &initialize, request.deadline).await?;
            let list = models_of(&answer).map_err(QueryError::Failed)?;
            Ok((list, notes))
        };
        sdk_probe::list_models_cached(&env, crate::ID, &source, listing).await
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
        .unwrap();
        let answer = crate::control::find_response(&stdout, "init_1").unwrap();
        let list = models_of(&answer).unwrap();
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
    fn an_answer_without_models_is_an_error_never_a_list() {
        assert!(models_of(&json!({"commands": []})).is_err());
    }
}
