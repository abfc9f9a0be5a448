//! The HTTP transport under async-openai: one request, one response, no retries of its own
//! (every try is the brain's, so each is logged as its own `model_call`), and a reply's size
//! bounded where its bytes arrive.
//!
//! Per call (named by the `x-harrow-call` header) it notes for the brain what the response
//! said beyond its body: how long the server asked to be left alone (`Retry-After`), and
//! whether the reply was cut at the size limit. A whole JSON reply to a request that asked for
//! a stream is handed on as a one-event stream, so a server that ignores `stream: true` costs no
//! second call.

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// Names the call a request belongs to.
pub const CALL_HEADER: &str = "x-harrow-call";
/// Marks a request that asked for a stream.
pub const STREAM_HEADER: &str = "x-harrow-stream";

/// What the transport learned about one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallNote {
    /// The server's `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
    /// The reply was cut here: it passed this many bytes.
    pub cut_at: Option<u64>,
    /// The connection broke after this many bytes of a reply the server had begun (its status
    /// and headers sent): a server that failed inside its stream, or died.
    pub dropped_after: Option<u64>,
}

/// Notes by call, taken by the brain once the call has ended.
#[derive(Debug, Clone, Default)]
pub struct Notes(Arc<Mutex<HashMap<String, CallNote>>>);

impl Notes {
    fn update(&self, call: &str, change: impl FnOnce(&mut CallNote)) {
        if let Ok(mut map) = self.0.lock() {
            change(map.entry(call.to_owned()).or_default());
        }
    }

    /// What was noted about `call`, removed.
    pub fn take(&self, call: &str) -> CallNote {
        self.0.lock().ok().and_then(|mut map| map.remove(call)).unwrap_or_default()
    }
}

/// The tower service async-openai sends every request through.
#[derive(Debug, Clone)]
pub struct Transport {
    http: reqwest::Client,
    max_bytes: u64,
    notes: Notes,
}

impl Transport {
    pub fn new(http: reqwest::Client, max_bytes: u64, notes: Notes) -> Transport {
        Transport { http, max_bytes, notes }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            let header = |name: &str| {
                request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
            };
            let call = header(CALL_HEADER).unwrap_or_default();
            let wants_stream = header(STREAM_HEADER).is_some();
            let response = this.http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            if let Some(wait) = retry_after(response.headers()) {
                this.notes.update(&call, |n| n.retry_after = Some(wait));
            }
            this.bounded(response, &call, wants_stream).await
        })
    }
}

impl Transport {
    /// The response with its body cut at the size limit (the cut noted for the brain), and a
    /// whole JSON reply to a streamed request turned into a stream.
    async fn bounded(
        &self,
        response: reqwest::Response,
        call: &str,
        wants_stream: bool,
    ) -> Result<reqwest::Response, OpenAIError> {
        let status = response.status();
        let mut headers = response.headers().clone();
        let is_json = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/json"));
        let (max, notes, call) = (self.max_bytes, self.notes.clone(), call.to_owned());
        let mut seen: u64 = 0;
        let body = response.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(|e| {
                if !e.is_timeout() {
                    notes.update(&call, |n| n.dropped_after = Some(seen));
                }
                std::io::Error::other(e)
            })?;
            seen += chunk.len() as u64;
            if seen > max {
                notes.update(&call, |n| n.cut_at = Some(max));
                return Err(std::io::Error::other(format!("the reply passed {max} bytes")));
            }
            Ok::<Bytes, std::io::Error>(chunk)
        });
        let body = if is_json && !status.is_success() {
            let mut whole = Vec::new();
            let mut body = std::pin::pin!(body);
            while let Some(Ok(chunk)) = body.next().await {
                whole.extend_from_slice(&chunk);
            }
            headers.remove(reqwest::header::CONTENT_LENGTH);
            reqwest::Body::from(openai_error(&whole))
        } else if wants_stream && is_json && status.is_success() {
            let mut whole = Vec::new();
            let mut body = std::pin::pin!(body);
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| {
                    OpenAIError::StreamError(Box::new(
                        async_openai::error::StreamError::EventStream(e.to_string()),
                    ))
                })?;
                whole.extend_from_slice(&chunk);
            }
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.remove(reqwest::header::CONTENT_LENGTH);
            reqwest::Body::from(as_event_stream(&whole))
        } else {
            reqwest::Body::wrap_stream(body)
        };
        let mut built = http::Response::new(body);
        *built.status_mut() = status;
        *built.headers_mut() = headers;
        Ok(reqwest::Response::from(built))
    }
}

/// A server's error body in `OpenAI`'s shape, `{"error": {"message", "type", "param", "code"}}`,
/// which is the only one the client reads: llama.cpp sends `code` as a number (with
/// `n_ctx` beside it), vLLM its fields at the top level, others `{"error": "text"}`. Read
/// any other way, a context window exceeded became "the reply is not JSON". What is not JSON
/// at all is left as it is.
fn openai_error(body: &[u8]) -> Vec<u8> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else { return body.to_vec() };
    let error = match v.get("error") {
        Some(e @ serde_json::Value::Object(_)) => e,
        Some(serde_json::Value::String(text)) => {
            return serde_json::json!({"error": {"message": text, "type": null, "param": null, "code": null}})
                .to_string()
                .into_bytes();
        }
        _ => &v,
    };
    let text = |key: &str| match error.get(key) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let message = text("message").unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    serde_json::json!({"error": {
        "message": message,
        "type": text("type"),
        "param": text("param"),
        "code": text("code"),
    }})
    .to_string()
    .into_bytes()
}

/// `Retry-After` in seconds (the HTTP-date form is rare from model servers and is ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: f64 = headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3_600.0)))
}

/// A whole completion as the single chunk of an event stream: the message becomes the delta,
/// so the assembly that reads streams reads it too. Anything else is passed as its one event.
fn as_event_stream(whole: &[u8]) -> Vec<u8> {
    let chunk = match serde_json::from_slice::<serde_json::Value>(whole) {
        Ok(mut body) => {
            if let Some(choices) = body["choices"].as_array_mut() {
                for choice in choices {
                    if let Some(message) = choice.get_mut("message").map(serde_json::Value::take) {
                        choice["delta"] = message;
                    }
                }
            }
            body.to_string()
        }
        Err(_) => String::from_utf8_lossy(whole).replace('\n', " "),
    };
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_reply_becomes_one_event_with_the_message_as_its_delta() {
        let whole = br#"{"id":"r","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}"#;
        let text = String::from_utf8(as_event_stream(whole)).unwrap();
        let data = text.lines().next().unwrap().strip_prefix("data: ").unwrap();
        let chunk: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(chunk["choices"][0]["delta"]["content"], "hi");
        assert_eq!(chunk["usage"]["prompt_tokens"], 1);
        assert!(text.ends_with("data: [DONE]\n\n"));
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), None);
        // A hostile server cannot park the run for longer than an hour per try.
        h.insert(RETRY_AFTER, HeaderValue::from_static("99999999"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3_600)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("-5"));
        assert_eq!(retry_after(&h), None);
    }
}
