//! Model calls over any OpenAI-compatible endpoint, one endpoint per role.
//!
//! async-openai carries each request over [`transport`](super::transport), which never retries
//! on its own: every try is made here and reported to the caller, so each is logged as its own
//! `model_call`. A 429, a 5xx, a connection that fails, a silent or stalled model and a reply
//! that arrives unusable (empty, or an error inside a 200) are tried again with exponential
//! backoff and jitter, honouring `Retry-After`. A reply is bounded in size and in time. Every
//! failure becomes a [`BrainError`] that says what to do. API keys live only in the client's
//! configuration: never in an event, a log line or an error.

use super::request::{ChatRequest, StreamOptions};
use super::stream;
use super::transport::{self, Notes, Transport};
use crate::session::event::ToolCallRecord;
use crate::session::vocabulary::Health;
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Who is calling: each role has its own endpoint, key and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Worker,
    Evaluator,
    Learnings,
    /// The interview that writes a plan (`harrow prep`).
    Prep,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Evaluator => "evaluator",
            Role::Learnings => "learnings",
            Role::Prep => "prep",
        }
    }

    /// The environment variable that holds the role's API key, for telling a person which
    /// one to fix.
    pub fn key_var(self) -> &'static str {
        match self {
            Role::Worker | Role::Learnings => "HARROW_API_KEY",
            Role::Evaluator => "HARROW_EVALUATOR_API_KEY",
            Role::Prep => "HARROW_PREP_API_KEY",
        }
    }
}

/// Where a role's requests go. The key is never printed: `Debug` masks it.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .finish()
    }
}

/// Dollars per million tokens, for providers that do not report cost.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    pub prompt_per_mtok: f64,
    pub completion_per_mtok: f64,
}

/// How the brain calls models.
#[derive(Debug, Clone)]
pub struct BrainConfig {
    pub endpoints: BTreeMap<Role, Endpoint>,
    pub connect_timeout: Duration,
    /// Longest silence while waiting for a reply.
    pub read_timeout: Duration,
    /// Tries per call for replies that arrive unusable.
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub prices: BTreeMap<String, Price>,
    /// The most tokens one reply may have (sent as `max_tokens`); `None`: a share of the role's
    /// window when it is known ([`BrainConfig::reply_cap`]), else the server's own limit.
    pub max_output_tokens: Option<u64>,
    /// Ask for replies as a stream (falling back, per endpoint, where it is refused).
    pub stream: bool,
    /// The most bytes one reply may have on the wire; past it the reply is cut.
    pub max_reply_bytes: u64,
    /// The most tool calls one streamed reply may make ([`stream::MAX_TOOL_CALLS`] unless
    /// configured).
    pub max_tool_calls: usize,
    /// The longest one reply may take, from the request to its last byte.
    pub max_reply_time: Duration,
    /// Each role's context window in tokens, as configured (else the server is asked).
    pub context_windows: BTreeMap<Role, u64>,
    /// Each role's endpoints to fall back on, in order, when its own keeps failing.
    pub fallbacks: BTreeMap<Role, Vec<Endpoint>>,
    /// The workers a best-of task's attempts are worked by, one each in turn (`[models.worker]
    /// best_of`); empty: the worker's own endpoint for every attempt.
    pub candidates: Vec<Endpoint>,
    /// The worker's stronger model, and after how many rejects of a task it takes the task.
    pub escalation: Option<(Endpoint, u64)>,
}

/// The default bound on a reply's size: far above any real reply, far below a machine's memory.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 16 * 1024 * 1024;
/// The default bound on a reply's duration.
pub const DEFAULT_MAX_REPLY_SECS: u64 = 600;

/// The share of a known window one reply may take when `max_output_tokens` is not set, and its
/// bounds: a small local model that falls into a loop stops at the cap in seconds and is
/// nudged, instead of generating until the reply's time limit.
const REPLY_SHARE_OF_WINDOW: u64 = 4;
const REPLY_CAP_FLOOR: u64 = 256;
const REPLY_CAP_CEILING: u64 = 16_384;

impl BrainConfig {
    /// The `max_tokens` sent with `role`'s requests: as configured, else a quarter of its
    /// window (256 to 16,384 tokens) when the window is known, else none.
    pub fn reply_cap(&self, role: Role) -> Option<u64> {
        self.max_output_tokens.or_else(|| {
            let window = self.context_windows.get(&role)?;
            Some((window / REPLY_SHARE_OF_WINDOW).clamp(REPLY_CAP_FLOOR, REPLY_CAP_CEILING))
        })
    }

    /// Records the windows the start learned (configured ones stay as they are), so each
    /// role's replies are bounded by its own.
    pub fn know_windows(&mut self, worker: Option<u64>, evaluator: Option<u64>) {
        for (role, window) in [(Role::Worker, worker), (Role::Evaluator, evaluator)] {
            if let Some(w) = window.filter(|w| *w > 0) {
                self.context_windows.entry(role).or_insert(w);
            }
        }
    }

    pub fn new(endpoints: BTreeMap<Role, Endpoint>) -> BrainConfig {
        BrainConfig {
            endpoints,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            max_attempts: 4,
            backoff_base: Duration::from_secs(2),
            backoff_cap: Duration::from_secs(60),
            prices: BTreeMap::new(),
            max_output_tokens: None,
            stream: true,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            max_tool_calls: stream::MAX_TOOL_CALLS,
            max_reply_time: Duration::from_secs(DEFAULT_MAX_REPLY_SECS),
            context_windows: BTreeMap::new(),
            fallbacks: BTreeMap::new(),
            candidates: Vec::new(),
            escalation: None,
        }
    }
}

/// Where in the run a call is made; sent as `x-harrow-*` headers so a scripted model can
/// answer by position, and useful in any provider's request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTag<'a> {
    pub role: Role,
    pub task: &'a str,
    pub attempt: u64,
    pub turn: usize,
}

/// Tokens and dollars of one reply.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallUsage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
    pub reasoning: u64,
    pub cost: f64,
    /// The server sent no usage: `prompt` and `completion` are estimated from characters.
    pub estimated: bool,
}

/// `reply`'s usage estimated from characters, when the server's answer counted nothing: the
/// request's messages for the prompt, the reply's text and calls for the completion.
fn estimate_unless_counted(mut reply: Reply, body: &Value, messages: &[Value]) -> Reply {
    let usage = &body["usage"];
    if usage["prompt_tokens"].is_u64() || usage["completion_tokens"].is_u64() {
        return reply;
    }
    let said = reply.content.as_deref().map_or(0, str::len)
        + reply.reasoning.as_deref().map_or(0, str::len)
        + reply.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
    let rate = super::estimate::CHARS_PER_TOKEN;
    reply.usage.prompt = super::estimate::tokens(messages, rate);
    reply.usage.completion = super::estimate::of_chars(said, rate);
    reply.usage.estimated = true;
    reply
}

/// A usable reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    /// Provider-specific reasoning blocks, echoed back verbatim on the next turn.
    pub reasoning_details: Option<Value>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
    pub usage: CallUsage,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub response_id: Option<String>,
}

impl Reply {
    /// The assistant message to append to the conversation: what the model said, its tool
    /// calls, and its reasoning (carried across turns for models that need it).
    pub fn history_message(&self) -> Value {
        let mut m = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            m["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
        }
        if let Some(r) = &self.reasoning {
            m["reasoning"] = json!(r);
        }
        if let Some(d) = &self.reasoning_details {
            m["reasoning_details"] = d.clone();
        }
        m
    }
}

/// One try of a call, for the `model_call` event: a usable reply, an unusable one, or a
/// request that failed outright.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attempt {
    pub number: u32,
    pub health: Health,
    pub detail: Option<String>,
    pub usage: CallUsage,
    pub duration: Duration,
    /// Wait before the next try, when there is one.
    pub backoff: Option<Duration>,
    /// The HTTP status of a request that failed.
    pub http_status: Option<u16>,
    /// What kind of failure it was ([`BrainError::class`]), or `empty` / `provider_error`
    /// for a reply that arrived unusable.
    pub error_class: Option<&'static str>,
    /// What the reply said of itself, whenever a reply arrived.
    pub finish_reason: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub response_id: Option<String>,
}

/// Why a call failed, worded for the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrainError {
    #[error(
        "the {role} endpoint {base_url} refused the API key ({status}): set {key_var} to a key that endpoint accepts"
    )]
    Unauthorized { role: &'static str, base_url: String, status: u16, key_var: &'static str },
    #[error("the {role} endpoint {base_url} has no model '{model}'; check the model name")]
    ModelNotFound { role: &'static str, base_url: String, model: String },
    #[error("the {role} model's context window is exceeded: {detail}")]
    ContextExceeded { role: &'static str, status: u16, detail: String },
    #[error("the {role} endpoint {base_url} rejected the request ({status}): {detail}")]
    Rejected { role: &'static str, base_url: String, status: u16, detail: String },
    #[error("the {role} endpoint {base_url} cannot be reached: {detail}")]
    Unreachable { role: &'static str, base_url: String, detail: String, status: Option<u16> },
    #[error("the {role} endpoint {base_url} answered {status}: {detail}")]
    Answered { role: &'static str, base_url: String, status: u16, detail: String },
    #[error(
        "the {role} reply from {base_url} was cut: {why}; raise [models] {setting} if such replies are expected"
    )]
    Cut { role: &'static str, base_url: String, why: String, setting: &'static str },
    #[error(
        "no answer from the {role} model at {base_url} in {secs} s: it may just be slow (a local model on a small machine can take minutes); raise [models] read_timeout_secs"
    )]
    Silent { role: &'static str, base_url: String, secs: u64 },
    #[error(
        "the {role} model at {base_url} stopped sending for {secs} s in the middle of a reply; raise [models] read_timeout_secs if it is only slow"
    )]
    Stalled { role: &'static str, base_url: String, secs: u64 },
    #[error(
        "the {role} endpoint {base_url} began its reply, then closed the connection after {bytes} bytes of it (a server that failed inside its stream: its window exceeded, or it stopped)"
    )]
    Dropped { role: &'static str, base_url: String, bytes: u64 },
    #[error("the {role} model gave no usable reply after {attempts} tries: {detail}")]
    Unhealthy { role: &'static str, attempts: u32, detail: String },
    #[error("no endpoint is configured for the {0}; set HARROW_BASE_URL and the role's model")]
    NotConfigured(&'static str),
    #[error("the {0} call was stopped by the operator")]
    Cancelled(&'static str),
}

impl BrainError {
    /// Whether trying again later may work (the run can stop resumably).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            BrainError::Unreachable { .. }
                | BrainError::Answered { .. }
                | BrainError::Dropped { .. }
                | BrainError::Cut { .. }
                | BrainError::Unhealthy { .. }
                | BrainError::Silent { .. }
                | BrainError::Stalled { .. }
        )
    }

    /// Whether the same request may work a moment later: the model was silent or stopped, the
    /// server was busy (429, 5xx), or the connection failed. A cut reply is not asked again:
    /// that would pay for the same runaway reply twice.
    fn worth_another_try(&self) -> bool {
        matches!(
            self,
            BrainError::Silent { .. }
                | BrainError::Stalled { .. }
                | BrainError::Answered { .. }
                | BrainError::Dropped { .. }
                | BrainError::Unreachable { status: None, .. }
        )
    }

    /// A short name for the kind of failure, as the `model_call` event records it.
    pub fn class(&self) -> &'static str {
        match self {
            BrainError::Unauthorized { .. } => "unauthorized",
            BrainError::ModelNotFound { .. } => "model_not_found",
            BrainError::ContextExceeded { .. } => "context_exceeded",
            BrainError::Rejected { .. } => "rejected",
            BrainError::Unreachable { .. } => "unreachable",
            BrainError::Answered { status: 429, .. } => "rate_limited",
            BrainError::Answered { .. } => "server_error",
            BrainError::Cut { .. } => "cut",
            BrainError::Dropped { .. } => "dropped",
            BrainError::Silent { .. } => "timeout",
            BrainError::Stalled { .. } => "stalled",
            BrainError::Unhealthy { .. } => "unhealthy",
            BrainError::NotConfigured(_) => "not_configured",
            BrainError::Cancelled(_) => "cancelled",
        }
    }

    /// The HTTP status the endpoint answered with, when it answered.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            BrainError::Unauthorized { status, .. }
            | BrainError::ContextExceeded { status, .. }
            | BrainError::Rejected { status, .. }
            | BrainError::Answered { status, .. } => Some(*status),
            BrainError::ModelNotFound { .. } => Some(404),
            BrainError::Unreachable { status, .. } => *status,
            _ => None,
        }
    }
}

/// The model caller: one client per role, built once and shared by every call.
#[derive(Clone)]
pub struct Brain {
    pub(super) config: BrainConfig,
    pub(super) clients: BTreeMap<Role, Client<OpenAIConfig>>,
    /// The HTTP client under them, for the start's check of the models list.
    pub(super) http: reqwest::Client,
    /// Base URLs that refused a streamed request: asked without streaming from then on.
    unstreamed: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// What the transport noted about each call (`Retry-After`, a cut).
    notes: Notes,
    /// Numbers the calls, so a note finds its call.
    calls: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Endpoints that failed a call after all their tries, by role and address, and when:
    /// shared by every brain cloned or switched from this one (every lane, every task), so a
    /// later task goes to the fallback at once until the cool-down has passed.
    down: std::sync::Arc<std::sync::Mutex<BTreeMap<(Role, String), Instant>>>,
}

/// How long an endpoint that failed is passed over for its fallback before it is asked again.
pub const DOWN_COOL_DOWN: Duration = Duration::from_secs(300);

/// A request that failed, with the wait the server asked for.
#[derive(Debug)]
struct Failure {
    error: BrainError,
    retry_after: Option<Duration>,
}

impl std::fmt::Debug for Brain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Brain").field("config", &self.config).finish_non_exhaustive()
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// A little randomness for backoff jitter, without a dependency for it.
fn jitter(max: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    max.mul_f64(f64::from(nanos % 1000) / 1000.0)
}

impl Brain {
    pub fn new(config: BrainConfig) -> Result<Brain, BrainError> {
        super::tls::ready();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            // The silence timeouts are the brain's own (they tell a silent model from a stalled
            // one); the transport's is a backstop behind them.
            .read_timeout(config.read_timeout + Duration::from_secs(5));
        // The system's root certificates are read only when a model is reached over https:
        // a local server or the scripted one spares the process reading and parsing them.
        let plain = config.endpoints.values().all(|e| {
            e.base_url.trim_start().get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        });
        if plain {
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| BrainError::Unreachable {
            role: "worker",
            base_url: String::new(),
            detail: e.to_string(),
            status: None,
        })?;
        let notes = Notes::default();
        let transport = Transport::new(http.clone(), config.max_reply_bytes, notes.clone());
        let clients = config
            .endpoints
            .iter()
            .map(|(role, e)| {
                let cfg = OpenAIConfig::new()
                    .with_api_base(e.base_url.trim_end_matches('/'))
                    .with_api_key(e.api_key.clone().unwrap_or_default());
                let client = Client::build(http.clone(), cfg).with_http_service(transport.clone());
                (*role, client)
            })
            .collect();
        Ok(Brain {
            config,
            clients,
            http,
            unstreamed: std::sync::Arc::default(),
            notes,
            calls: std::sync::Arc::default(),
            down: std::sync::Arc::default(),
        })
    }

    /// Notes that `role`'s endpoint as it is now failed a call after all its tries.
    pub fn mark_down(&self, role: Role) {
        if let (Some(e), Ok(mut down)) = (self.endpoint(role), self.down.lock()) {
            down.insert((role, format!("{} {}", e.base_url, e.model)), Instant::now());
        }
    }

    /// The `max_tokens` `role`'s requests carry: the room a request must leave for its reply.
    pub fn reply_cap(&self, role: Role) -> Option<u64> {
        self.config.reply_cap(role)
    }

    /// Takes the window `role`'s conversation is fitted to from here on (one a server named,
    /// one the run learned), so its replies are bounded by it too.
    pub fn learn_window(&mut self, role: Role, window: u64) {
        if window > 0 {
            self.config.context_windows.insert(role, window);
        }
    }

    /// How long ago `role`'s endpoint as it is now failed, while that is within the
    /// cool-down.
    pub fn down_since(&self, role: Role) -> Option<Duration> {
        let e = self.endpoint(role)?;
        let down = self.down.lock().ok()?;
        // Asked before every call: nothing failed (the usual case) costs no key made.
        if down.is_empty() {
            return None;
        }
        let ago = down.get(&(role, format!("{} {}", e.base_url, e.model)))?.elapsed();
        (ago < DOWN_COOL_DOWN).then_some(ago)
    }

    pub fn endpoint(&self, role: Role) -> Option<&Endpoint> {
        self.config.endpoints.get(&role)
    }

    /// `role`'s fallbacks, in the order they are tried.
    pub fn fallbacks(&self, role: Role) -> &[Endpoint] {
        self.config.fallbacks.get(&role).map_or(&[], Vec::as_slice)
    }

    /// The endpoint `role` falls back on after the one it talks to now, if any is left.
    pub fn next_fallback(&self, role: Role) -> Option<&Endpoint> {
        let list = self.config.fallbacks.get(&role)?;
        let now = self.endpoint(role)?;
        let same = |e: &Endpoint| e.base_url == now.base_url && e.model == now.model;
        match list.iter().position(same) {
            Some(at) => list.get(at + 1),
            None => list.first(),
        }
    }

    /// The worker's stronger model and after how many rejects it takes a task, if configured.
    pub fn escalation(&self) -> Option<&(Endpoint, u64)> {
        self.config.escalation.as_ref()
    }

    /// The brain a best-of task's attempt `k` (from 1) is worked by: the next of the
    /// configured candidates in turn, else this one.
    pub fn candidate(&self, k: u64) -> Result<Brain, BrainError> {
        let list = &self.config.candidates;
        match usize::try_from(k.saturating_sub(1))
            .ok()
            .and_then(|i| list.get(i % list.len().max(1)))
        {
            Some(endpoint) => self.switched(Role::Worker, endpoint),
            None => Ok(self.clone()),
        }
    }

    /// The same brain with `role` talking to `to`: what a fallback (or an escalation) switches
    /// to. Each endpoint keeps its own key.
    pub fn switched(&self, role: Role, to: &Endpoint) -> Result<Brain, BrainError> {
        let mut config = self.config.clone();
        config.endpoints.insert(role, to.clone());
        let mut switched = Brain::new(config)?;
        switched.down = std::sync::Arc::clone(&self.down);
        Ok(switched)
    }

    /// The call's position, as headers: a scripted model answers by them, and they help
    /// read any provider's request log.
    fn tag_headers(tag: &CallTag<'_>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let pairs = [
            ("x-harrow-role", tag.role.as_str().to_owned()),
            ("x-harrow-task", tag.task.to_owned()),
            ("x-harrow-attempt", tag.attempt.to_string()),
            ("x-harrow-turn", tag.turn.to_string()),
        ];
        for (k, v) in pairs {
            if let Ok(v) = HeaderValue::from_str(&v) {
                headers.insert(k, v);
            }
        }
        headers
    }

    /// Calls the role's model with the conversation and tools, trying again when the reply
    /// is unusable. `on_attempt` sees every try, usable or not, so each can be logged.
    pub async fn chat(
        &self,
        tag: &CallTag<'_>,
        messages: &[Value],
        tools: &[Value],
        on_attempt: impl FnMut(&Attempt, Option<&Reply>),
    ) -> Result<Reply, BrainError> {
        self.chat_streaming(tag, messages, tools, on_attempt, |_| {}).await
    }

    /// Whether replies from `base_url` are asked for as a stream.
    fn streams(&self, base_url: &str) -> bool {
        self.config.stream && self.unstreamed.lock().is_ok_and(|set| !set.contains(base_url))
    }

    /// One request: streamed where the endpoint streams (`on_chunk` sees the reply grow),
    /// else whole. A refused stream is asked again whole at once, and remembered.
    async fn request(
        &self,
        tag: &CallTag<'_>,
        request: ChatRequest<'_>,
        on_chunk: &mut impl FnMut(&stream::Partial),
    ) -> Result<Value, Failure> {
        let role = tag.role.as_str();
        let endpoint = self.endpoint(tag.role).ok_or(BrainError::NotConfigured(role));
        let endpoint = endpoint.map_err(|error| Failure { error, retry_after: None })?;
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string();
        let limit = self.config.max_reply_time;
        let answer =
            tokio::time::timeout(limit, self.request_once(tag, request, &call, on_chunk)).await;
        let note = self.notes.take(&call);
        let cut = |why: String, setting| BrainError::Cut {
            role,
            base_url: endpoint.base_url.clone(),
            why,
            setting,
        };
        let result = match answer {
            Err(_) => Err(cut(
                format!(
                    "it took longer than {} s (a model repeating itself never ends: bound its replies with [models] max_output_tokens, or context_window)",
                    limit.as_secs()
                ),
                "max_reply_secs",
            )),
            Ok(Err(_)) if note.cut_at.is_some() => Err(cut(
                format!("it passed {}", megabytes(note.cut_at.unwrap_or_default())),
                "max_reply_bytes",
            )),
            // The stream broke under the reader: named as a drop, not as a server that cannot
            // be reached (it answered), and tried again like one.
            Ok(Err(BrainError::Unreachable { .. } | BrainError::Rejected { .. }))
                if note.dropped_after.is_some() =>
            {
                Err(BrainError::Dropped {
                    role,
                    base_url: endpoint.base_url.clone(),
                    bytes: note.dropped_after.unwrap_or_default(),
                })
            }
            Ok(result) => result,
        };
        result.map_err(|error| Failure { error, retry_after: note.retry_after })
    }

    /// One request as [`Brain::request`] makes it, without the bounds on time.
    async fn request_once(
        &self,
        tag: &CallTag<'_>,
        request: ChatRequest<'_>,
        call: &str,
        on_chunk: &mut impl FnMut(&stream::Partial),
    ) -> Result<Value, BrainError> {
        let role = tag.role.as_str();
        let endpoint = self.endpoint(tag.role).ok_or(BrainError::NotConfigured(role))?;
        let client = self.clients.get(&tag.role).ok_or(BrainError::NotConfigured(role))?;
        let mut headers = Self::tag_headers(tag);
        if let Ok(v) = HeaderValue::from_str(call) {
            headers.insert(transport::CALL_HEADER, v);
        }
        let silent = || BrainError::Silent {
            role,
            base_url: endpoint.base_url.clone(),
            secs: self.config.read_timeout.as_secs(),
        };
        if self.streams(&endpoint.base_url) {
            let streamed = ChatRequest {
                stream: true,
                stream_options: Some(StreamOptions { include_usage: true }),
                ..request
            };
            let silence = self.config.read_timeout;
            let mut asked = headers.clone();
            asked.insert(transport::STREAM_HEADER, HeaderValue::from_static("1"));
            let calls = self.config.max_tool_calls;
            match stream::receive(client, asked, &streamed, silence, calls, &mut *on_chunk).await {
                Ok(body) => return Ok(body),
                Err(stream::StreamFailure::Refused) => {
                    if let Ok(mut set) = self.unstreamed.lock() {
                        set.insert(endpoint.base_url.clone());
                    }
                }
                Err(stream::StreamFailure::Silent) => return Err(silent()),
                Err(stream::StreamFailure::Stalled(secs)) => {
                    return Err(BrainError::Stalled {
                        role,
                        base_url: endpoint.base_url.clone(),
                        secs,
                    });
                }
                Err(stream::StreamFailure::Failed(e)) => {
                    return Err(classify(e, tag.role, endpoint, self.config.read_timeout));
                }
                Err(stream::StreamFailure::Cut(why)) => {
                    return Err(BrainError::Cut {
                        role,
                        base_url: endpoint.base_url.clone(),
                        why,
                        setting: "max_tool_calls",
                    });
                }
            }
        }
        let chat = client.chat();
        let chat = chat.headers(headers);
        let response: Result<Value, OpenAIError> =
            tokio::time::timeout(self.config.read_timeout, chat.create_byot(&request))
                .await
                .map_err(|_| silent())?;
        response.map_err(|e| classify(e, tag.role, endpoint, self.config.read_timeout))
    }

    /// [`Brain::chat`], with `on_chunk` seeing a streamed reply as it arrives.
    pub async fn chat_streaming(
        &self,
        tag: &CallTag<'_>,
        messages: &[Value],
        tools: &[Value],
        mut on_attempt: impl FnMut(&Attempt, Option<&Reply>),
        mut on_chunk: impl FnMut(&stream::Partial),
    ) -> Result<Reply, BrainError> {
        let role = tag.role.as_str();
        let endpoint = self.endpoint(tag.role).ok_or(BrainError::NotConfigured(role))?;
        let request = ChatRequest {
            model: &endpoint.model,
            messages,
            tools,
            max_tokens: self.config.reply_cap(tag.role),
            stream: false,
            stream_options: None,
        };
        let mut last = String::new();
        for number in 1..=self.config.max_attempts.max(1) {
            let started = Instant::now();
            let response = self.request(tag, request, &mut on_chunk).await;
            let duration = started.elapsed();
            let body = match response {
                Ok(body) => body,
                Err(Failure { error, retry_after }) => {
                    // A model that is slow or busy gets the same patience as one that answered
                    // badly: tries with backoff (as long as the server asked, when it said),
                    // each reported as it fails; then the run stops resumably.
                    let again = error.worth_another_try() && number < self.config.max_attempts;
                    let backoff =
                        again.then(|| retry_after.unwrap_or_else(|| self.backoff(number)));
                    let failed = Attempt {
                        number,
                        health: Health::ProviderError,
                        detail: Some(error.to_string()),
                        duration,
                        backoff,
                        http_status: error.http_status(),
                        error_class: Some(error.class()),
                        ..Attempt::default()
                    };
                    on_attempt(&failed, None);
                    match backoff {
                        Some(wait) => {
                            tokio::time::sleep(wait).await;
                            continue;
                        }
                        None => return Err(error),
                    }
                }
            };
            let reply =
                estimate_unless_counted(self.parse(&body, &endpoint.model), &body, messages);
            let (health, detail) = health(&body, &reply);
            let failed = health != Health::Ok;
            let backoff =
                (failed && number < self.config.max_attempts).then(|| self.backoff(number));
            let attempt = Attempt {
                number,
                error_class: health.known_name().filter(|_| failed),
                health,
                detail: detail.clone(),
                usage: reply.usage,
                duration,
                backoff,
                http_status: None,
                finish_reason: reply.finish_reason.clone(),
                model: reply.model.clone(),
                provider: reply.provider.clone(),
                response_id: reply.response_id.clone(),
            };
            if !failed {
                on_attempt(&attempt, Some(&reply));
                return Ok(reply);
            }
            on_attempt(&attempt, None);
            last = detail.unwrap_or_default();
            if let Some(wait) = backoff {
                tokio::time::sleep(wait).await;
            }
        }
        Err(BrainError::Unhealthy { role, attempts: self.config.max_attempts, detail: last })
    }

    /// The wait before try `number + 1`: exponential from the base, capped, with jitter.
    fn backoff(&self, number: u32) -> Duration {
        let exp = self.config.backoff_base.saturating_mul(1 << (number - 1).min(16));
        exp.min(self.config.backoff_cap) + jitter(self.config.backoff_base)
    }

    fn parse(&self, body: &Value, model: &str) -> Reply {
        let choice = &body["choices"][0];
        let message = &choice["message"];
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let tool_calls = message["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| ToolCallRecord {
                        id: c["id"].as_str().unwrap_or_default().to_owned(),
                        name: c["function"]["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: match &c["function"]["arguments"] {
                            Value::String(s) => s.clone(),
                            Value::Null => String::new(),
                            other => other.to_string(),
                        },
                    })
                    .collect()
            })
            .unwrap_or_default();
        let usage = &body["usage"];
        let prompt = u(&usage["prompt_tokens"]);
        let completion = u(&usage["completion_tokens"]);
        let cost = usage["cost"].as_f64().unwrap_or_else(|| {
            self.config.prices.get(model).map_or(0.0, |p| {
                (prompt as f64 * p.prompt_per_mtok + completion as f64 * p.completion_per_mtok)
                    / 1e6
            })
        });
        Reply {
            content: text(&message["content"]),
            reasoning: text(&message["reasoning"]).or_else(|| text(&message["reasoning_content"])),
            reasoning_details: message.get("reasoning_details").filter(|v| !v.is_null()).cloned(),
            tool_calls,
            finish_reason: text(&choice["finish_reason"]),
            usage: CallUsage {
                prompt,
                completion,
                cached: u(&usage["prompt_tokens_details"]["cached_tokens"]),
                reasoning: u(&usage["completion_tokens_details"]["reasoning_tokens"]),
                cost,
                estimated: false,
            },
            model: text(&body["model"]),
            provider: text(&body["provider"]),
            response_id: text(&body["id"]),
        }
    }
}

/// Tilth's health rule: an error object or `finish_reason: error` is a provider error; a reply
/// with no text, no reasoning and no tool call is empty.
fn health(body: &Value, reply: &Reply) -> (Health, Option<String>) {
    let error =
        body.get("error").or_else(|| body["choices"][0].get("error")).filter(|e| !e.is_null());
    if let Some(e) = error {
        return (
            Health::ProviderError,
            Some(e["message"].as_str().map_or_else(|| e.to_string(), str::to_owned)),
        );
    }
    if reply.finish_reason.as_deref() == Some("error") {
        return (Health::ProviderError, Some("finish_reason is error".into()));
    }
    if body["choices"].as_array().is_none_or(Vec::is_empty) {
        return (Health::ProviderError, Some("the reply has no choices".into()));
    }
    if reply.content.is_none() && reply.reasoning.is_none() && reply.tool_calls.is_empty() {
        return (Health::Empty, Some("the reply has no text, reasoning or tool call".into()));
    }
    (Health::Ok, None)
}

/// The message of an OpenAI-style error body (`{"error": {"message": …}}`), which async-openai
/// leaves as raw text for server errors; other text as it is.
fn error_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.to_owned())
}

/// `16 MB`, `512 KB`: a size as people say it.
fn megabytes(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{} MB", bytes / (1024 * 1024))
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

pub(super) fn classify(
    e: OpenAIError,
    r: Role,
    endpoint: &Endpoint,
    read_timeout: Duration,
) -> BrainError {
    let role = r.as_str();
    let base_url = endpoint.base_url.clone();
    match e {
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            let code = api.api_error.code.clone().unwrap_or_default();
            let kind = api.api_error.r#type.clone().unwrap_or_default();
            let detail = api.api_error.message.clone();
            let context = super::refusal::too_long(&code, &kind, &detail);
            match status {
                401 | 403 => {
                    BrainError::Unauthorized { role, base_url, status, key_var: r.key_var() }
                }
                404 => BrainError::ModelNotFound { role, base_url, model: endpoint.model.clone() },
                400 | 413 if context => BrainError::ContextExceeded { role, status, detail },
                429 | 500..=599 => {
                    BrainError::Answered { role, base_url, status, detail: error_message(&detail) }
                }
                _ => BrainError::Rejected { role, base_url, status, detail },
            }
        }
        OpenAIError::Reqwest(e) if e.is_timeout() && !e.is_connect() => {
            BrainError::Silent { role, base_url, secs: read_timeout.as_secs() }
        }
        OpenAIError::Reqwest(e) => {
            let detail = if e.is_connect() {
                "connection refused or failed".to_owned()
            } else {
                e.without_url().to_string()
            };
            BrainError::Unreachable { role, base_url, detail, status: None }
        }
        OpenAIError::JSONDeserialize(err, _) => BrainError::Rejected {
            role,
            base_url,
            status: 200,
            detail: format!("the reply is not JSON ({err})"),
        },
        other => {
            BrainError::Unreachable { role, base_url, detail: other.to_string(), status: None }
        }
    }
}
