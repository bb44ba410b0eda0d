//! `listModels` for oh-my-pi: `omp models --json`, every model omp can use with the
//! credentials and model config it has:
//!
//! ```text
//! {"models":[{"provider":"mock","id":"mock-model","selector":"mock/mock-model","name":"Mock Model",
//!             "contextWindow":128000,"maxTokens":8192,"reasoning":true,"input":["text","image"],…}]}
//! ```
//!
//! A model's id is its `selector` (what `--model` takes), its label its `name`; the default is
//! the `default` model role (`omp config get modelRoles --json`, run at the same time). The list is
//! cached per binary and model config ([`sdk_probe::list_models_cached`]).

use std::path::PathBuf;

use bridge_core::process::CommandSpec;
use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use sdk_probe::{ModelSource, ProbeEnv};
use serde_json::Value;

/// `listModels`.
pub const QUERY: Query =
    Query::list_models("the models omp can use (`omp models --json`)", list_models);

/// The models of `omp models --json`'s output.
pub fn parse_models(stdout: &str) -> Result<Vec<ModelInfo>, String> {
    let value: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line.trim()).ok())
        .ok_or_else(|| "omp printed no JSON model list".to_string())?;
    let Some(entries) = value["models"].as_array() else {
        return Err("omp's model list has no `models`".into());
    };
    Ok(entries
        .iter()
        .filter_map(|entry| {
            let provider = entry["provider"].as_str();
            let id = entry["selector"].as_str().map(str::to_string).or_else(|| {
                let model = entry["id"].as_str()?;
                Some(match provider {
                    Some(provider) => format!("{provider}/{model}"),
                    None => model.to_string(),
                })
            })?;
            let mut details: Vec<String> = provider.into_iter().map(str::to_string).collect();
            if let Some(context) = entry["contextWindow"].as_u64() {
                details.push(format!("context {context}"));
            }
            if entry["reasoning"] == true {
                details.push("reasoning".into());
            }
            Some(ModelInfo {
                label: entry["name"].as_str().unwrap_or(&id).to_string(),
                description: (!details.is_empty()).then(|| details.join(" · ")),
                id,
            })
        })
        .collect())
}

/// The default model of `omp config get modelRoles --json` (`{"value":{"default":…}}`), as
/// a listed id where it names one: the role's first candidate of a comma-separated list, with
/// a thinking-level suffix (`mock/m:high`) dropped when only the bare model is listed.
pub fn default_model(stdout: &str, models: &[ModelInfo]) -> Option<String> {
    let value: Value = serde_json::from_str(stdout.trim()).ok()?;
    let role = value["value"]["default"].as_str()?;
    let candidates: Vec<&str> = role
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let listed = |id: &str| models.iter().any(|m| m.id == id);
    for candidate in &candidates {
        if listed(candidate) {
            return Some((*candidate).to_string());
        }
        if let Some((bare, _level)) = candidate.rsplit_once(':')
            && listed(bare)
        {
            return Some(bare.to_string());
        }
    }
    candidates.first().map(|c| (*c).to_string())
}

/// omp's agent directory: `PI_CODING_AGENT_DIR`, else `~/.omp/agent`.
fn agent_dir(env: &ProbeEnv) -> Option<PathBuf> {
    if let Some(dir) = env.var_non_empty("PI_CODING_AGENT_DIR") {
        return Some(PathBuf::from(dir));
    }
    env.home().map(|home| home.join(".omp/agent"))
}

/// The variables that decide which providers omp has credentials for.
const CREDENTIALS: &[&str] = &[
    "PI_CODING_AGENT_DIR",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
];

fn list_models(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let env = ProbeEnv::from_process();
        let located = sdk_probe::locate(&crate::PROBE, &env).map_err(QueryError::Failed)?;
        let program = located.resolved.path.clone();
        let source = ModelSource::in_dir(
            program.clone(),
            agent_dir(&env),
            &["models.yml", "models.yaml", "config.yml", "config.yaml"],
            CREDENTIALS,
        );
        let listing = async {
            let omp = |args: &[&str]| {
                let mut command = CommandSpec::new(program.clone());
                for arg in args {
                    command.arg(arg);
                }
                bridge_pi_family::launch::provide_runtime(&crate::BUN, &program, &env, &mut command)
                    .map(|()| command)
                    .map_err(QueryError::Failed)
            };
            let (list_command, roles_command) = (
                omp(&["models", "--json"])?,
                omp(&["config", "get", "modelRoles", "--json"])?,
            );
            // Both at once: each is a whole omp start.
            let (output, roles) = futures_util::join!(
                bridge_core::query::run_cli("omp", &list_command, &[], request.deadline),
                bridge_core::query::run_cli("omp", &roles_command, &[], request.deadline),
            );
            let models = parse_models(&output?.stdout).map_err(QueryError::Failed)?;
            let mut notes = located.warnings.clone();
            if models.is_empty() {
                notes.push("omp has credentials for no model".into());
            }
            let default = match roles {
                Ok(roles) => default_model(&roles.stdout, &models),
                Err(why) => {
                    notes.push(format!("omp's default model is unknown: {why}"));
                    None
                }
            };
            let list = ModelList::new(crate::ID, default, models);
            Ok((list, notes))
        };
        sdk_probe::list_models_cached(&env, crate::ID, &source, listing).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_are_selectors_with_their_names() {
        let stdout = r#"{"models":[{"provider":"mock","id":"mock-model","selector":"mock/mock-model","name":"Mock Model","contextWindow":128000,"reasoning":true},{"provider":"x","id":"y"}]}"#;
        let models = parse_models(stdout).unwrap();
        assert_eq!(models[0].id, "mock/mock-model");
        assert_eq!(models[0].label, "Mock Model");
        assert_eq!(
            models[0].description.as_deref(),
            Some("mock · context 128000 · reasoning")
        );
        assert_eq!(
            (models[1].id.as_str(), models[1].label.as_str()),
            ("x/y", "x/y")
        );
        assert!(parse_models("Error: boom").is_err());
        assert!(parse_models("{\"other\":1}").is_err());
        assert_eq!(parse_models("{\"models\":[]}"), Ok(Vec::new()));
    }

    #[test]
    fn the_default_is_the_default_role_as_a_listed_id() {
        let models =
            parse_models(r#"{"models":[{"selector":"mock/m"},{"selector":"x/y"}]}"#).unwrap();
        let roles = |default: &str| {
            serde_json::to_string_pretty(
                &serde_json::json!({"key": "modelRoles", "value": {"default": default}}),
            )
            .unwrap()
        };
        assert_eq!(
            default_model(&roles("x/y"), &models).as_deref(),
            Some("x/y")
        );
        assert_eq!(
            default_model(&roles("mock/m:high"), &models).as_deref(),
            Some("mock/m")
        );
        assert_eq!(
            default_model(&roles("gone/z, x/y"), &models).as_deref(),
            Some("x/y")
        );
        assert_eq!(
            default_model(&roles("gone/z"), &models).as_deref(),
            Some("gone/z")
        );
        let unset = r#"{"key":"modelRoles","value":{},"type":"record"}"#;
        assert_eq!(default_model(unset, &models), None);
        assert_eq!(default_model("Unknown setting", &models), None);
    }
}
