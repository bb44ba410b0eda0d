//! `listModels` for ACP agents without a listing of their own: the models the agent offers in
//! a new session, read from the `session/new` result, either its `models`
//! (`{availableModels:[{modelId,name,description?}], currentModelId}`) or a `configOptions`
//! entry of category `model` (a select: `{currentValue, options:[{value,name,description?}]}`).
//!
//! The bridge starts the agent in ACP mode, runs the handshake (`initialize`, authentication
//! where needed, `session/new` in the current directory), reads the offer and closes the agent;
//! no prompt is sent.

use std::time::Duration;

use bridge_core::query::{ModelInfo, ModelList, QueryError, QueryReply, QueryRequest};
use bridge_core::request::Request;
use bridge_core::turn::{TurnContext, TurnLimits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{AcpProvider, AcpSession};

fn text(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

fn model(entry: &Value, id_key: &str) -> Option<ModelInfo> {
    let id = text(entry, id_key)?;
    Some(ModelInfo {
        label: text(entry, "name").unwrap_or_else(|| id.clone()),
        description: text(entry, "description"),
        id,
    })
}

/// The models a `session/new` result offers, with the current one as the default; `None`
/// when it offers no model selection.
pub fn offered_models(provider: &str, offer: &Value) -> Option<ModelList> {
    let list = |models: Vec<ModelInfo>, default_model: Option<String>| ModelList {
        provider: provider.to_string(),
        default_model,
        models,
    };
    if let Some(available) = offer
        .pointer("/models/availableModels")
        .and_then(Value::as_array)
    {
        let models = available
            .iter()
            .filter_map(|e| model(e, "modelId"))
            .collect();
        return Some(list(models, text(&offer["models"], "currentModelId")));
    }
    let option = offer
        .get("configOptions")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| o.get("category").and_then(Value::as_str) == Some("model"))?;
    // Choices may come in groups (`{group, name, options:[…]}`).
    let mut models = Vec::new();
    for choice in option.get("options").and_then(Value::as_array)? {
        match choice.get("options").and_then(Value::as_array) {
            Some(grouped) => models.extend(grouped.iter().filter_map(|e| model(e, "value"))),
            None => models.extend(model(choice, "value")),
        }
    }
    Some(list(models, text(option, "currentValue")))
}

/// The models `provider`'s agent offers in a new session in the current directory (see the
/// [module docs](self)), under `deadline`, with the warnings of the handshake as notes.
pub async fn list_models(
    provider: &'static AcpProvider,
    program: std::path::PathBuf,
    deadline: Duration,
) -> Result<(ModelList, Vec<String>), QueryError> {
    let request = Request::from_prompt("(listModels)");
    let mut launch = crate::launch(provider, program, &request);
    launch.config.handshake_timeout = launch.config.handshake_timeout.min(deadline);
    let (events, mut drain) = tokio::sync::mpsc::channel(64);
    let notes = tokio::spawn(async move {
        let mut notes = Vec::new();
        while let Some(event) = drain.recv().await {
            if let bridge_core::event::Event::Warning { message, .. } = event {
                notes.push(message);
            }
        }
        notes
    });
    let ctx = TurnContext::new(events, CancellationToken::new(), TurnLimits::default());
    let started = tokio::time::timeout(
        deadline,
        AcpSession::start(&launch.command, launch.config, &ctx),
    )
    .await;
    let session = match started {
        Err(_) => {
            return Err(QueryError::Failed(format!(
                "{} did not open a session within {} s",
                provider.id(),
                deadline.as_secs()
            )));
        }
        Ok(Err(info)) => {
            let why = info.map_or_else(|| "stopped".to_string(), |i| i.message);
            return Err(QueryError::Failed(why));
        }
        Ok(Ok(session)) => session,
    };
    let offered = offered_models(provider.id(), session.offer());
    session.close(ctx.limits).await;
    drop(ctx);
    let notes = notes.await.unwrap_or_default();
    let list = offered.ok_or_else(|| {
        // A CLI pointed at one model by a variable (Copilot's BYOK provider) runs that one.
        let named = provider
            .model_env
            .and_then(|var| Some((var, std::env::var(var).ok()?)))
            .map(|(var, model)| format!(" (it runs the model {var} names: {model})"))
            .unwrap_or_default();
        QueryError::Failed(format!(
            "{} offers no model selection in its ACP sessions{named}",
            provider.id()
        ))
    })?;
    Ok((list, notes))
}

/// The `listModels` reply for `provider` (see the [module docs](self)), cached per binary,
/// per configuration file (`config_files`, relative to HOME) and per the endpoint and key
/// variables the provider reads ([`sdk_probe::list_models_cached`]).
pub async fn answer(
    provider: &'static AcpProvider,
    config_files: &'static [&'static str],
    request: QueryRequest,
) -> Result<QueryReply, QueryError> {
    let env = sdk_probe::ProbeEnv::from_process();
    let located = sdk_probe::locate(&provider.probe, &env).map_err(QueryError::Failed)?;
    let home = env.home().map(std::path::Path::to_path_buf);
    let source = sdk_probe::ModelSource {
        binary: located.resolved.path.clone(),
        files: home
            .iter()
            .flat_map(|home| config_files.iter().map(move |f| home.join(f)))
            .collect(),
        env: provider
            .base_url_env
            .iter()
            .chain(provider.api_key_env)
            .chain(provider.model_env.as_slice())
            .chain(provider.auth_method_env.as_slice())
            .copied()
            .collect(),
    };
    let listing = async {
        let (list, mut notes) =
            list_models(provider, located.resolved.path.clone(), request.deadline).await?;
        notes.extend(located.warnings.iter().cloned());
        Ok((list, notes))
    };
    sdk_probe::list_models_cached(&env, provider.id(), &source, listing).await
}

/// Declares `listModels` for an ACP provider: `list_models_query!(PROVIDER, "summary",
/// &["settings file relative to HOME", …])` is a [`bridge_core::query::Query`] answered by
/// [`answer`].
#[macro_export]
macro_rules! list_models_query {
    ($provider:path, $summary:expr, $files:expr) => {
        bridge_core::query::Query::list_models($summary, |request| {
            Box::pin($crate::models::answer(&$provider, $files, request))
        })
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn session_models_or_a_model_config_option_become_the_list() {
        let offer = json!({"sessionId": "s", "models": {"currentModelId": "b",
            "availableModels": [{"modelId": "a", "name": "A", "description": "fast"},
                                {"modelId": "b"}, {"name": "no id"}]}});
        let list = offered_models("demo", &offer).unwrap();
        assert_eq!(list.default_model.as_deref(), Some("b"));
        assert_eq!(
            list.models,
            [
                ModelInfo {
                    id: "a".into(),
                    label: "A".into(),
                    description: Some("fast".into())
                },
                ModelInfo::new("b")
            ]
        );
        let offer = json!({"configOptions": [
            {"id": "mode", "category": "mode", "options": [{"value": "x"}]},
            {"id": "model", "category": "model", "currentValue": "m2", "options": [
                {"value": "m1", "name": "One"},
                {"group": "more", "name": "More", "options": [{"value": "m2"}]}]}]});
        let list = offered_models("demo", &offer).unwrap();
        let ids: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["m1", "m2"]);
        assert_eq!(list.default_model.as_deref(), Some("m2"));
        assert_eq!(offered_models("demo", &json!({"sessionId": "s"})), None);
    }
}
