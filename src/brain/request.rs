//! The body of a chat request, as it goes on the wire.

use serde_json::Value;

/// A chat request as it is sent: borrowed from the conversation, so a long conversation is not
/// copied into a request for every call (and again for a streamed one).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: &'a [Value],
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    pub(super) tools: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u64>,
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
}

/// What a streamed request asks for beside the reply: its usage, in the last chunk.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct StreamOptions {
    pub(super) include_usage: bool,
}
