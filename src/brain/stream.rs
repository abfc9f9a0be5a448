//! Replies as a stream of server-sent chunks: text, reasoning and tool calls arriving in
//! pieces (several calls interleaved by index), then the usage. The pieces are assembled into
//! the same body a non-streamed reply has, so everything after — parsing, health, the events
//! logged — is one path. The read timeout becomes a silence timeout between chunks: a reply
//! that keeps coming is never cut, one that stops is reported as stopped.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use futures_util::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The most tool calls one reply may make unless `[models] max_tool_calls` says otherwise; an
/// index past it cuts the reply (a server whose indices climb without end would otherwise grow
/// the assembly without end).
pub const MAX_TOOL_CALLS: usize = 128;

/// A reply as far as it has arrived, for the console to show while it streams.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Partial {
    pub content: String,
    pub reasoning: String,
    /// Tool calls as they form: name and the arguments so far.
    pub tool_calls: Vec<(String, String)>,
    pub chunks: u64,
}

/// The pieces of a streamed reply, put together.
#[derive(Debug)]
pub struct Assembly {
    /// The most tool calls the reply may make ([`MAX_TOOL_CALLS`] unless configured).
    max_tool_calls: usize,
    partial: Partial,
    ids: Vec<String>,
    reasoning_details: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    head: Map<String, Value>,
}

impl Default for Assembly {
    fn default() -> Self {
        Assembly::new(MAX_TOOL_CALLS)
    }
}

impl Assembly {
    /// An empty assembly that takes at most `max_tool_calls` tool calls.
    pub fn new(max_tool_calls: usize) -> Assembly {
        Assembly {
            max_tool_calls,
            partial: Partial::default(),
            ids: Vec::new(),
            reasoning_details: Vec::new(),
            finish_reason: None,
            usage: None,
            head: Map::new(),
        }
    }

    /// Takes one chunk (`chat.completion.chunk`); refuses a tool-call index past
    /// [`MAX_TOOL_CALLS`], saying why.
    pub fn feed(&mut self, chunk: &Value) -> Result<(), String> {
        self.partial.chunks += 1;
        for key in ["id", "model", "provider", "created"] {
            if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
                self.head.entry(key).or_insert_with(|| v.clone());
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.head.insert("error".into(), error.clone());
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(());
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            self.partial.content.push_str(text);
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta[key].as_str() {
                self.partial.reasoning.push_str(text);
            }
        }
        if let Some(details) = delta["reasoning_details"].as_array() {
            self.reasoning_details.extend(details.iter().cloned());
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().map_or(self.partial.tool_calls.len(), |i| {
                usize::try_from(i).unwrap_or(usize::MAX)
            });
            if index >= self.max_tool_calls {
                return Err(format!(
                    "it named tool call {index}, past the limit of {} calls in one reply",
                    self.max_tool_calls
                ));
            }
            while self.partial.tool_calls.len() <= index {
                self.partial.tool_calls.push((String::new(), String::new()));
                self.ids.push(String::new());
            }
            if let Some(id) = call["id"].as_str() {
                id.clone_into(&mut self.ids[index]);
            }
            let (name, arguments) = &mut self.partial.tool_calls[index];
            if let Some(n) = call["function"]["name"].as_str() {
                name.push_str(n);
            }
            if let Some(a) = call["function"]["arguments"].as_str() {
                arguments.push_str(a);
            }
        }
        Ok(())
    }

    pub fn partial(&self) -> &Partial {
        &self.partial
    }

    /// The reply as a non-streamed body: one choice with the whole message.
    pub fn finish(self) -> Value {
        let p = self.partial;
        let mut message =
            json!({"role": "assistant", "content": (!p.content.is_empty()).then_some(p.content)});
        if !p.reasoning.is_empty() {
            message["reasoning"] = json!(p.reasoning);
        }
        if !self.reasoning_details.is_empty() {
            message["reasoning_details"] = Value::Array(self.reasoning_details);
        }
        if !p.tool_calls.is_empty() {
            let calls: Vec<Value> = p
                .tool_calls
                .into_iter()
                .zip(self.ids)
                .map(|((name, arguments), id)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        let mut body = Value::Object(self.head);
        body["choices"] =
            json!([{"index": 0, "message": message, "finish_reason": self.finish_reason}]);
        if let Some(usage) = self.usage {
            body["usage"] = usage;
        }
        body
    }
}

/// How a streamed request ended when it did not bring a reply.
#[derive(Debug)]
pub enum StreamFailure {
    /// The server does not stream (it said so, or answered without a single chunk): ask it
    /// again without streaming, and remember.
    Refused,
    /// The request failed as a non-streamed one would have.
    Failed(OpenAIError),
    /// Chunks came, then nothing for this long.
    Stalled(u64),
    /// The first chunk never came within the silence timeout.
    Silent,
    /// The reply broke a bound (see [`MAX_TOOL_CALLS`]).
    Cut(String),
}

/// Whether an error to a streamed request says the server does not stream.
fn refuses_streaming(e: &OpenAIError) -> bool {
    match e {
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            let says = api.api_error.message.to_ascii_lowercase().contains("stream");
            matches!(status, 400 | 404 | 405 | 415 | 422 | 501) && says
        }
        _ => false,
    }
}

/// Sends `request` (which asks for a stream) and assembles the reply, waiting at most
/// `silence` between two chunks. `on_chunk` sees the reply as it grows.
pub async fn receive(
    client: &Client<OpenAIConfig>,
    headers: HeaderMap,
    request: &super::request::ChatRequest<'_>,
    silence: Duration,
    max_tool_calls: usize,
    mut on_chunk: impl FnMut(&Partial),
) -> Result<Value, StreamFailure> {
    let opened =
        tokio::time::timeout(silence, client.chat().headers(headers).create_stream_byot(request))
            .await;
    let mut stream: async_openai::types::stream::StreamResponse<Value> = match opened {
        Err(_) => return Err(StreamFailure::Silent),
        Ok(Err(e)) if refuses_streaming(&e) => return Err(StreamFailure::Refused),
        Ok(Err(e)) => return Err(StreamFailure::Failed(e)),
        Ok(Ok(stream)) => stream,
    };
    let mut assembly = Assembly::new(max_tool_calls);
    loop {
        match tokio::time::timeout(silence, stream.next()).await {
            Err(_) if assembly.partial.chunks == 0 => return Err(StreamFailure::Silent),
            Err(_) => return Err(StreamFailure::Stalled(silence.as_secs())),
            Ok(None) => break,
            Ok(Some(Ok(chunk))) => {
                assembly.feed(&chunk).map_err(StreamFailure::Cut)?;
                on_chunk(assembly.partial());
            }
            Ok(Some(Err(e))) if assembly.partial.chunks == 0 && refuses_streaming(&e) => {
                return Err(StreamFailure::Refused);
            }
            Ok(Some(Err(e))) => return Err(StreamFailure::Failed(e)),
        }
    }
    if assembly.partial.chunks == 0 {
        return Err(StreamFailure::Refused);
    }
    Ok(assembly.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_tool_call_fragments_reasoning_and_usage_assemble_into_one_reply() {
        let chunks = [
            json!({"id": "r1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": "Think"}}]}),
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": "ing."}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "I will "}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "bash", "arguments": "{\"comm"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \"a\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "read."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "and\": \"ls\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        ];
        let mut a = Assembly::default();
        for c in &chunks {
            a.feed(c).unwrap();
        }
        assert_eq!(a.partial().tool_calls[1].1, "{\"command\": \"ls\"}");
        let body = a.finish();
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], "I will read.");
        assert_eq!(message["reasoning"], "Thinking.");
        assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{\"path\": \"a\"}");
        assert_eq!(message["tool_calls"][1]["id"], "b");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(body["usage"]["completion_tokens"], 5);
        assert_eq!(body["id"], "r1");
    }
}
