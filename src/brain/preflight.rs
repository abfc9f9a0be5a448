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

/// The most of a `/props` answer that is read.
const PROPS_MAX_BYTES: usize = 1 << 20;

/// A model's context window and where harrow learnt it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub tokens: u64,
    /// `configured`, or the server's answer it came from (`/props`, `/models`).
    pub source: &'static str,
}

impl Brain {
    /// The role's context window: as configured, else as the server says it — llama.cpp's
    /// `/props` (`n_ctx`), else the models list's `max_model_len` for the model (vLLM) — else
    /// unknown. An answer that is not a window (not JSON, not a number, 0 or absurd) is
    /// passed over, and said in `notices`.
    pub async fn window(&self, role: Role, notices: &mut Vec<String>) -> Option<Window> {
        if let Some(tokens) = self.config.context_windows.get(&role) {
            return Some(Window { tokens: *tokens, source: "configured" });
        }
        let endpoint = self.endpoint(role)?;
        let base = endpoint.base_url.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let sane = |n: Option<u64>| n.filter(|n| (1..=super::refusal::MAX_WINDOW).contains(n));
        let ask = |url: String| {
            let mut get = self.http.get(url).timeout(std::time::Duration::from_secs(5));
            if let Some(key) = endpoint.api_key.as_deref().filter(|k| !k.is_empty()) {
                get = get.bearer_auth(key);
            }
            get.send()
        };
        if let Ok(mut r) = ask(format!("{root}/props")).await
            && r.status().is_success()
        {
            // llama.cpp's answer is a few kilobytes; a server that sends more is not one.
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = r.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() > PROPS_MAX_BYTES {
                    body.clear();
                    break;
                }
            }
            let v: Option<Value> = serde_json::from_slice(&body).ok();
            let n = v.as_ref().and_then(|v| {
                v["default_generation_settings"]["n_ctx"].as_u64().or(v["n_ctx"].as_u64())
            });
            match sane(n) {
                Some(tokens) => return Some(Window { tokens, source: "/props" }),
                None => notices.push(format!(
                    "{root}/props answered, but with no context window harrow can read; the model's window is unknown (set [models] context_window)"
                )),
            }
        }
        if let Ok(r) = ask(format!("{base}/models")).await
            && r.status().is_success()
            && let Ok(v) = r.json::<Value>().await
        {
            let listed = v["data"].as_array().and_then(|models| {
                models.iter().find(|m| m["id"].as_str() == Some(endpoint.model.as_str()))
            });
            if let Some(tokens) = sane(listed.and_then(|m| m["max_model_len"].as_u64())) {
                return Some(Window { tokens, source: "/models" });
            }
        }
        None
    }
}
