//! `listModels` for Kimi CLI: the `[models."<alias>"]` tables of its `config.toml`
//! (`$KIMI_SHARE_DIR/config.toml`, else `~/.kimi/config.toml`), which is where kimi-cli keeps
//! the models it can run; `--model` takes the alias. `default_model` names the default. With no
//! config or no model in it, the one entry is `auto` (kimi's own default, what ai-bridge
//! offers too). Kimi CLI is not started.

use std::path::PathBuf;

use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use sdk_probe::ProbeEnv;

/// `listModels`.
pub const QUERY: Query = Query::list_models("the models of Kimi CLI's config.toml", list_models);

/// The model that means "kimi's default", offered when the config declares none.
pub const AUTO: &str = "auto";

/// The model list of a `config.toml` text (`None`: there is no config file).
pub fn from_config(config: Option<&str>) -> Result<ModelList, String> {
    let table: toml::Table = match config {
        Some(text) => text
            .parse()
            .map_err(|e| format!("Kimi CLI's config.toml is not valid TOML: {e}"))?,
        None => toml::Table::new(),
    };
    let mut models = Vec::new();
    if let Some(entries) = table.get("models").and_then(toml::Value::as_table) {
        for (alias, entry) in entries {
            let field = |key: &str| entry.get(key).and_then(toml::Value::as_str);
            let mut about: Vec<String> = [field("provider"), field("model")]
                .into_iter()
                .flatten()
                .map(str::to_string)
                .collect();
            if let Some(size) = entry
                .get("max_context_size")
                .and_then(toml::Value::as_integer)
            {
                about.push(format!("context {size}"));
            }
            models.push(ModelInfo {
                id: alias.clone(),
                label: field("display_name").unwrap_or(alias).to_string(),
                description: (!about.is_empty()).then(|| about.join(" · ")),
            });
        }
    }
    let configured = table
        .get("default_model")
        .and_then(toml::Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    let default_model = if models.is_empty() {
        models.push(ModelInfo {
            description: Some("the model Kimi CLI is set up to use".into()),
            ..ModelInfo::new(AUTO)
        });
        Some(AUTO.to_string())
    } else {
        configured
    };
    Ok(ModelList {
        provider: crate::ID.into(),
        default_model,
        models,
    })
}

/// Kimi CLI's `config.toml`.
fn config_file(env: &ProbeEnv) -> Option<PathBuf> {
    let dir = match env.var_non_empty("KIMI_SHARE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => env.home()?.join(".kimi"),
    };
    Some(dir.join("config.toml"))
}

fn list_models(_request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let env = ProbeEnv::from_process();
        let text = match config_file(&env) {
            Some(file) => bridge_core::query::read_optional(&file)?,
            None => None,
        };
        let list = from_config(text.as_deref()).map_err(QueryError::Failed)?;
        Ok(list.reply())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_tables_are_the_models() {
        let config = "default_model = \"mock\"\n\
            [providers.mock]\ntype = \"kimi\"\n\
            [models.mock]\nprovider = \"mock\"\nmodel = \"mock-model\"\nmax_context_size = 128000\n\
            [models.\"k2 fast\"]\nprovider = \"moonshot\"\nmodel = \"kimi-k2\"\nmax_context_size = 256000\ndisplay_name = \"Kimi K2\"\n";
        let list = from_config(Some(config)).unwrap();
        assert_eq!(list.default_model.as_deref(), Some("mock"));
        assert_eq!(
            list.models,
            [
                ModelInfo {
                    id: "k2 fast".into(),
                    label: "Kimi K2".into(),
                    description: Some("moonshot · kimi-k2 · context 256000".into())
                },
                ModelInfo {
                    id: "mock".into(),
                    label: "mock".into(),
                    description: Some("mock · mock-model · context 128000".into())
                },
            ]
        );
    }

    #[test]
    fn without_models_the_default_is_auto_and_bad_toml_is_an_error() {
        for config in [None, Some("telemetry = false\n")] {
            let list = from_config(config).unwrap();
            assert_eq!(list.default_model.as_deref(), Some(AUTO));
            assert_eq!(list.models.len(), 1);
            assert_eq!(list.models[0].id, AUTO);
        }
        assert!(
            from_config(Some("[models\n"))
                .unwrap_err()
                .starts_with("Kimi CLI's config.toml is not valid TOML")
        );
    }
}
