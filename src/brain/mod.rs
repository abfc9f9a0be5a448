//! The brain: model calls per role (worker, evaluator, learnings) over any OpenAI-compatible
//! endpoint, and the scripted endpoint that stands in for a real model in tests and the demo.

pub mod client;
pub mod estimate;
pub(crate) mod preflight;
pub mod refusal;
mod request;
pub mod scripted;
pub(crate) mod stream;
pub(crate) mod tls;
pub(crate) mod transport;
