//! The check before a run starts: each role's endpoint answers, its key is accepted and its
//! model exists — so a wrong setting is one line before anything is created.

use super::client::{Brain, BrainError, Role, classify};
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

impl Brain {
    /// Checks before a run starts that each of `roles` can be used: its endpoint answers, its
    /// key is accepted and its model exists — from the models list, or, when the list is not
    /// offered or does not name the model, from a one-token request. A model too slow to
    /// answer the check is let through (slow is not wrong).
    pub async fn preflight(&self, roles: &[Role]) -> Result<(), BrainError> {
        for role in roles {
            let name = role.as_str();
            let endpoint = self.endpoint(*role).ok_or(BrainError::NotConfigured(name))?;
            let url = format!("{}/models", endpoint.base_url.trim_end_matches('/'));
            let mut get = self.http.get(&url);
            if let Some(key) = endpoint.api_key.as_deref().filter(|k| !k.is_empty()) {
                get = get.bearer_auth(key);
            }
            match get.send().await {
                Err(e) if e.is_connect() || e.is_request() => {
                    return Err(BrainError::Unreachable {
                        role: name,
                        base_url: endpoint.base_url.clone(),
                        detail: "connection refused or failed".into(),
                        status: None,
                    });
                }
                Ok(r) if matches!(r.status().as_u16(), 401 | 403) => {
                    return Err(BrainError::Unauthorized {
                        role: name,
                        base_url: endpoint.base_url.clone(),
                        status: r.status().as_u16(),
                        key_var: role.key_var(),
                    });
                }
                Ok(r) if r.status().is_success() => {
                    let listed = r.json::<Value>().await.ok().and_then(|v| {
                        let ids = v["data"]
                            .as_array()?
                            .iter()
                            .filter_map(|m| m["id"].as_str())
                            .map(str::to_owned)
                            .collect::<Vec<_>>();
                        Some(ids)
                    });
                    if listed.is_some_and(|ids| ids.contains(&endpoint.model)) {
                        continue;
                    }
                }
                _ => {}
            }
            let ping = json!({
                "model": endpoint.model,
                "messages": [{"role": "user", "content": "Reply with OK."}],
                "max_tokens": 1,
                "stream": false,
            });
            let client = self.clients.get(role).ok_or(BrainError::NotConfigured(name))?;
            let mut headers = HeaderMap::new();
            headers.insert("x-harrow-preflight", HeaderValue::from_static("1"));
            let answered: Result<Value, OpenAIError> =
                client.chat().headers(headers).create_byot(&ping).await;
            match answered.map_err(|e| classify(e, *role, endpoint, self.config.read_timeout)) {
                Ok(_) | Err(BrainError::Silent { .. }) => {}
                Err(BrainError::Rejected { detail, .. })
                    if !detail.to_ascii_lowercase().contains("model") => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
