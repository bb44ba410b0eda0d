//! `listModels` for Codex, from its config (`$CODEX_HOME/config.toml`, [`crate::codex_home`]),
//! as ai-bridge builds it: the `model` it names is the default, and the models are those of the
//! catalog file `model_catalog_json` points at (a path, relative to `CODEX_HOME` unless
//! absolute; entries with a `slug` or `id`, a `display_name` and a `description`; entries whose
//! `visibility` is `hide` are left out). A configured model the catalog lacks is listed first
//! when there is a catalog or the provider is not OpenAI's; with OpenAI's own provider and no
//! catalog the list is empty (Codex's built-in list is not readable without its app server).
//! Codex is not started.

use std::path::{Path, PathBuf};

use bridge_core::query::{ModelInfo, ModelList, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde_json::Value;

/// `listModels`.
pub const QUERY: Query = Query::list_models(
    "the model of Codex's config.toml and its model catalog",
    list_models,
);

/// The models of a catalog file's text: an array of entries, or an object whose `models` is
/// one.
pub fn parse_catalog(text: &str) -> Result<Vec<ModelInfo>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the model catalog is not JSON: {e}"))?;
    let entries = match &value {
        Value::Array(entries) => entries,
        Value::Object(object) => match object.get("models") {
            Some(Value::Array(entries)) => entries,
            _ => return Err("the model catalog has no `models` array".into()),
        },
        _ => return Err("the model catalog is neither an array nor an object".into()),
    };
    let text = |entry: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| entry[*k].as_str().filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    Ok(entries
        .iter()
        .filter(|entry| entry["visibility"] != "hide")
        .filter_map(|entry| {
            let id = text(entry, &["slug", "id", "model"])?;
            Some(ModelInfo {
                label: text(entry, &["display_name", "displayName", "label", "name"])
                    .unwrap_or_else(|| id.clone()),
                description: text(entry, &["description"]),
                id,
            })
        })
        .collect())
}

/// The model list of Codex's `config.toml` text (`None`: no config file) in `codex_home`;
/// `read` reads the catalog file.
pub fn from_config(
    config: Option<&str>,
    codex_home: &Path,
    read: impl Fn(&Path) -> std::io::Result<String>,
) -> Result<ModelList, String> {
    let table: toml::Table = match config {
        Some(text) => text
            .parse()
            .map_err(|e| format!("Codex's config.toml is not valid TOML: {e}"))?,
        None => toml::Table::new(),
    };
    let string = |key: &str| {
        table
            .get(key)
            .and_then(toml::Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let default_model = string("model").map(str::to_string);
    let official = string("model_provider").is_none_or(|p| p == "openai");
    let mut models = Vec::new();
    let catalog = string("model_catalog_json").map(|path| {
        let path = PathBuf::from(path);
        if path.is_absolute() {
            path
        } else {
            codex_home.join(path)
        }
    });
    if let Some(path) = &catalog {
        let text = read(path)
            .map_err(|e| format!("cannot read the model catalog {}: {e}", path.display()))?;
        models = parse_catalog(&text)?;
    }
    if let Some(model) = &default_model
        && (catalog.is_some() || !official)
        && !models.iter().any(|m| &m.id == model)
    {
        models.insert(0, ModelInfo::new(model.clone()));
    }
    Ok(ModelList {
        provider: crate::ID.into(),
        default_model,
        models,
    })
}

fn list_models(_request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let home = crate::codex_home().ok_or_else(|| {
            QueryError::Failed(
                "cannot find Codex's directory: neither CODEX_HOME nor HOME is set".into(),
            )
        })?;
        let config = bridge_core::query::read_optional(&home.join("config.toml"))?;
        let list = from_config(config.as_deref(), &home, |path| {
            std::fs::read_to_string(path)
        })
        .map_err(QueryError::Failed)?;
        Ok(list.reply())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_file(_: &Path) -> std::io::Result<String> {
        Err(std::io::ErrorKind::NotFound.into())
    }

    #[test]
    fn the_catalog_lists_the_models_and_the_config_names_the_default() {
        let catalog = r#"{"models":[
            {"slug":"gpt-5.5","display_name":"GPT-5.5","description":"Frontier","visibility":"list"},
            {"slug":"old","display_name":"Old","visibility":"hide"},
            {"id":"mock-model"}]}"#;
        let read = |path: &Path| {
            assert_eq!(path, Path::new("/ch/catalog.json"));
            Ok(catalog.to_string())
        };
        let config = "model = \"custom\"\nmodel_catalog_json = \"catalog.json\"\n";
        let list = from_config(Some(config), Path::new("/ch"), read).unwrap();
        assert_eq!(list.default_model.as_deref(), Some("custom"));
        let ids: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["custom", "gpt-5.5", "mock-model"]);
        assert_eq!(list.models[1].label, "GPT-5.5");
        assert_eq!(list.models[1].description.as_deref(), Some("Frontier"));
        assert_eq!(list.models[2].label, "mock-model");
    }

    #[test]
    fn without_a_catalog_only_a_custom_provider_lists_its_model() {
        let official =
            from_config(Some("model = \"gpt-5.5\"\n"), Path::new("/ch"), no_file).unwrap();
        assert_eq!(official.default_model.as_deref(), Some("gpt-5.5"));
        assert!(official.models.is_empty());
        let custom = "model = \"mock-model\"\nmodel_provider = \"mock\"\n";
        let custom = from_config(Some(custom), Path::new("/ch"), no_file).unwrap();
        assert_eq!(custom.models, [ModelInfo::new("mock-model")]);
        let nothing = from_config(None, Path::new("/ch"), no_file).unwrap();
        assert_eq!(nothing.default_model, None);
        assert!(nothing.models.is_empty());
    }

    #[test]
    fn a_broken_config_or_catalog_is_an_error_never_a_list() {
        assert!(from_config(Some("model = "), Path::new("/ch"), no_file).is_err());
        let config = "model_catalog_json = \"/x.json\"\n";
        let error = from_config(Some(config), Path::new("/ch"), no_file).unwrap_err();
        assert!(
            error.starts_with("cannot read the model catalog /x.json"),
            "{error}"
        );
        let bad = |_: &Path| Ok("{\"models\": 3}".to_string());
        assert!(from_config(Some(config), Path::new("/ch"), bad).is_err());
    }
}
