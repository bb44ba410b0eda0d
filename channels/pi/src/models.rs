//! `listModels` for pi: the table `pi --list-models` prints (on stderr, in pi 0.73.1), one row
//! per model pi has credentials for:
//!
//! ```text
//! provider  model       context  max-out  thinking  images
//! mock      mock-model  128K     8.2K     yes       yes
//! ```
//!
//! A row's id is `provider/model` (what `--model` takes); the default is `defaultProvider` /
//! `defaultModel` of pi's `settings.json` (in `PI_CODING_AGENT_DIR`, else `~/.pi/agent`).

use std::path::PathBuf;

use bridge_core::process::CommandSpec;
use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use bridge_one_shot::set_env_defaults;
use futures_util::future::BoxFuture;
use sdk_probe::ProbeEnv;

/// `listModels`.
pub const QUERY: Query = Query::list_models(
    "the models pi has credentials for (`pi --list-models`)",
    list_models,
);

/// What pi prints when it has credentials for no model.
const NO_MODELS: &str = "No models available";

/// The rows of pi's model table in `output` (stdout and stderr together), or why there is
/// none: `Ok(vec![])` when pi says it has no model.
pub fn parse_table(output: &str) -> Result<Vec<ModelInfo>, String> {
    let mut lines = output.lines();
    let header = lines.by_ref().find(|line| {
        let mut cols = line.split_whitespace();
        cols.next() == Some("provider") && cols.next() == Some("model")
    });
    let Some(header) = header else {
        if output.contains(NO_MODELS) {
            return Ok(Vec::new());
        }
        let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "pi printed no model table{}",
            if first.is_empty() {
                String::new()
            } else {
                format!(": {first}")
            }
        ));
    };
    let columns: Vec<&str> = header.split_whitespace().collect();
    let mut models = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.len() < 2 {
            continue;
        }
        let (provider, model) = (cells[0], cells[1]);
        let details: Vec<String> = columns
            .iter()
            .zip(&cells)
            .skip(2)
            .map(|(column, cell)| format!("{column} {cell}"))
            .collect();
        let description = std::iter::once(provider.to_string())
            .chain(details)
            .collect::<Vec<_>>()
            .join(" · ");
        models.push(ModelInfo {
            id: format!("{provider}/{model}"),
            label: model.to_string(),
            description: Some(description),
        });
    }
    Ok(models)
}

/// pi's agent directory: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
fn agent_dir(env: &ProbeEnv) -> Option<PathBuf> {
    if let Some(dir) = env.var_non_empty("PI_CODING_AGENT_DIR") {
        return Some(PathBuf::from(dir));
    }
    env.home().map(|home| home.join(".pi/agent"))
}

/// `provider/model` from the `defaultProvider` and `defaultModel` of pi's `settings.json` text.
pub fn default_model(settings: &str) -> Option<String> {
    let settings: serde_json::Value = serde_json::from_str(settings).ok()?;
    let model = settings["defaultModel"].as_str()?;
    Some(match settings["defaultProvider"].as_str() {
        Some(provider) => format!("{provider}/{model}"),
        None => model.to_string(),
    })
}

fn list_models(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let env = ProbeEnv::from_process();
        let located = sdk_probe::locate(&crate::PROBE, &env).map_err(QueryError::Failed)?;
        let source = sdk_probe::ModelSource::in_dir(
            located.resolved.path.clone(),
            agent_dir(&env),
            &["settings.json", "models.json", "auth.json"],
            &[
                "PI_CODING_AGENT_DIR",
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "MOCK_API_KEY",
            ],
        );
        let listing = async {
            let mut command = CommandSpec::new(located.resolved.path.clone());
            command.arg("--list-models");
            set_env_defaults(
                &mut command,
                &[("PI_OFFLINE", "1"), ("PI_SKIP_VERSION_CHECK", "1")],
                &env,
            );
            let output = bridge_core::query::run_cli("pi", &command, &[], request.deadline).await?;
            let text = format!("{}\n{}", output.stdout, output.stderr);
            let models = parse_table(&text).map_err(QueryError::Failed)?;
            let mut notes = located.warnings.clone();
            if models.is_empty() {
                notes.push(format!("{NO_MODELS}: pi has credentials for no model"));
            }
            let default_model = agent_dir(&env)
                .and_then(|dir| std::fs::read_to_string(dir.join("settings.json")).ok())
                .and_then(|settings| default_model(&settings));
            let list = ModelList::new(crate::ID, default_model, models);
            Ok((list, notes))
        };
        sdk_probe::list_models_cached(&env, crate::ID, &source, listing).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_becomes_provider_model_ids() {
        let table = "provider  model       context  max-out  thinking  images\n\
                     mock      mock-model  128K     8.2K     yes       yes   \n\
                     mockresp  mock-model  128K     16.4K    no        no    \n";
        let models = parse_table(table).unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].id, "mock/mock-model");
        assert_eq!(models[0].label, "mock-model");
        assert_eq!(
            models[1].description.as_deref(),
            Some("mockresp · context 128K · max-out 16.4K · thinking no · images no")
        );
    }

    #[test]
    fn no_models_is_an_empty_list_and_anything_else_an_error() {
        let none = "No models available. Use /login to log into a provider via OAuth or API key.";
        assert_eq!(parse_table(none), Ok(Vec::new()));
        assert_eq!(
            parse_table("Error: something broke\n"),
            Err("pi printed no model table: Error: something broke".into())
        );
    }

    #[test]
    fn the_default_comes_from_the_settings() {
        let settings = r#"{"defaultProvider":"mock","defaultModel":"mock-model"}"#;
        assert_eq!(default_model(settings).as_deref(), Some("mock/mock-model"));
        assert_eq!(default_model("{}"), None);
        assert_eq!(default_model("not json"), None);
    }
}
