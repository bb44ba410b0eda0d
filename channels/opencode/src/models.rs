//! `listModels` for opencode: `opencode models`, which prints one `provider/model` per line
//! (the providers it has configured or built in). The default is the `model` of opencode's
//! global config (`$OPENCODE_CONFIG`, else `opencode.json` in `$XDG_CONFIG_HOME/opencode` or
//! `~/.config/opencode`), when that file is plain JSON.

use std::path::PathBuf;

use bridge_core::process::CommandSpec;
use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use bridge_one_shot::set_env_defaults;
use futures_util::future::BoxFuture;
use sdk_probe::ProbeEnv;

/// `listModels`.
pub const QUERY: Query = Query::list_models(
    "the models opencode offers (`opencode models`)",
    list_models,
);

/// The models in the stdout of `opencode models`: every line that is one `provider/model`
/// word (log lines and blank lines are not).
pub fn parse_models(stdout: &str) -> Vec<ModelInfo> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.contains(char::is_whitespace))
        .filter_map(|line| {
            let (provider, model) = line.split_once('/')?;
            if provider.is_empty() || model.is_empty() {
                return None;
            }
            Some(ModelInfo {
                id: line.to_string(),
                label: model.to_string(),
                description: Some(provider.to_string()),
            })
        })
        .collect()
}

/// The `model` of an opencode config's text (plain JSON only).
pub fn default_model(config: &str) -> Option<String> {
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    config["model"].as_str().map(str::to_string)
}

fn config_file(env: &ProbeEnv) -> Option<PathBuf> {
    if let Some(file) = env.var_non_empty("OPENCODE_CONFIG") {
        return Some(PathBuf::from(file));
    }
    let dir = match env.var_non_empty("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => env.home()?.join(".config"),
    };
    Some(dir.join("opencode/opencode.json"))
}

/// opencode's data directory (`auth.json` holds the credentials it lists models for).
fn data_dir(env: &ProbeEnv) -> Option<PathBuf> {
    match env.var_non_empty("XDG_DATA_HOME") {
        Some(dir) => Some(PathBuf::from(dir).join("opencode")),
        None => Some(env.home()?.join(".local/share/opencode")),
    }
}

fn list_models(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let env = ProbeEnv::from_process();
        let located = sdk_probe::locate(&crate::PROBE, &env).map_err(QueryError::Failed)?;
        let source = sdk_probe::ModelSource {
            binary: located.resolved.path.clone(),
            files: config_file(&env)
                .into_iter()
                .chain(data_dir(&env).map(|dir| dir.join("auth.json")))
                .collect(),
            env: vec![
                "OPENCODE_CONFIG",
                "OPENCODE_CONFIG_CONTENT",
                "MOCK_API_KEY",
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
            ],
        };
        let listing = async {
            let mut command = CommandSpec::new(located.resolved.path.clone());
            command.arg("models");
            set_env_defaults(&mut command, crate::PROVIDER.env_defaults, &env);
            let output =
                bridge_core::query::run_cli("opencode", &command, &[], request.deadline).await?;
            let models = parse_models(&output.stdout);
            if models.is_empty() {
                return Err(QueryError::Failed(format!(
                    "`opencode models` listed no model{}",
                    output
                        .stderr
                        .lines()
                        .rfind(|l| !l.trim().is_empty())
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                )));
            }
            let default_model = config_file(&env)
                .and_then(|file| std::fs::read_to_string(file).ok())
                .and_then(|config| default_model(&config));
            let list = ModelList::new(crate::ID, default_model, models);
            Ok((list, located.warnings.clone()))
        };
        sdk_probe::list_models_cached(&env, crate::ID, &source, listing).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_model_line_is_a_model() {
        let models = parse_models(
            "opencode/big-pickle\nmock/mock-model\n\nINFO some log line\nnot-a-model\n/x\n",
        );
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["opencode/big-pickle", "mock/mock-model"]);
        assert_eq!(models[1].label, "mock-model");
        assert_eq!(models[1].description.as_deref(), Some("mock"));
    }

    #[test]
    fn the_default_is_the_config_model() {
        assert_eq!(
            default_model(r#"{"model":"mock/mock-model"}"#).as_deref(),
            Some("mock/mock-model")
        );
        assert_eq!(default_model("// jsonc\n{}"), None);
    }
}
