//! Calls to a forge's REST API: JSON in, JSON out, the token in one header, answers bounded.

use super::forge::ApiRequest;
use super::secret::Token;
use std::time::Duration;

/// The most of an answer that is read; a pull request's JSON is a few kilobytes.
const MAX_ANSWER: usize = 1 << 20;

/// A client for one forge, on a runtime of its own (the verbs that use it are not async).
#[derive(Debug)]
pub struct ForgeClient {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
    auth: (&'static str, String),
}

/// A call that got no answer, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable(pub String);

impl ForgeClient {
    /// `auth` is the header that carries `token`, as the forge names it.
    pub fn new(api: &str, auth: (&'static str, String)) -> Result<ForgeClient, Unreachable> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Unreachable(e.to_string()))?;
        crate::brain::tls::ready();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("harrow/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none());
        if api.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")) {
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| Unreachable(e.to_string()))?;
        Ok(ForgeClient { runtime, http, auth })
    }

    /// The client for a forge, with its token in the header the forge reads.
    pub fn for_forge(
        forge: &super::forge::Forge,
        token: &Token,
    ) -> Result<ForgeClient, Unreachable> {
        ForgeClient::new(&forge.api, forge.auth_header(token.reveal()))
    }

    /// Sends the call; the answer's status and (at most [`MAX_ANSWER`] bytes of) body.
    pub fn send(&self, request: &ApiRequest) -> Result<(u16, Vec<u8>), Unreachable> {
        self.runtime.block_on(async {
            let method = reqwest::Method::from_bytes(request.method.as_bytes())
                .map_err(|e| Unreachable(e.to_string()))?;
            let mut call = self
                .http
                .request(method, &request.url)
                .header(self.auth.0, &self.auth.1)
                .header("accept", "application/vnd.github+json, application/json")
                .header("x-github-api-version", "2022-11-28");
            if !request.body.is_null() {
                let body =
                    serde_json::to_vec(&request.body).map_err(|e| Unreachable(e.to_string()))?;
                call = call.header("content-type", "application/json").body(body);
            }
            let mut response = call.send().await.map_err(|e| Unreachable(describe(&e)))?;
            let status = response.status().as_u16();
            let mut answer = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| Unreachable(describe(&e)))? {
                answer.extend_from_slice(&chunk);
                if answer.len() > MAX_ANSWER {
                    answer.truncate(MAX_ANSWER);
                    break;
                }
            }
            Ok((status, answer))
        })
    }
}

/// reqwest's error with its causes, on one line.
pub(super) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
