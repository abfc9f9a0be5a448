//! A scripted OpenAI-compatible model server on 127.0.0.1, for tests and `harrow demo`.
//!
//! It answers `POST /v1/chat/completions` from a script keyed by role, task, attempt and turn —
//! which harrow sends as `x-harrow-*` headers — never by a global request counter, so a run
//! that crashes and resumes gets the answers for where the log says it is. Turns can be
//! ordinary replies (text, reasoning, tool calls, malformed arguments), empty replies, HTTP
//! errors with `Retry-After`, or slow replies.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a script writes for "the number of the task asked about": one script serves every
/// task of a plan (`f{{task_n}}.txt` is `f2.txt` for T-002).
const TASK_NUMBER: &str = "{{task_n}}";

/// The turn with [`TASK_NUMBER`] replaced by the number of `task` (`T-002`: `2`); `None`
/// when it has none to replace.
fn for_task(turn: &Turn, task: &str) -> Option<Turn> {
    let text = serde_json::to_string(turn).ok()?;
    if !text.contains(TASK_NUMBER) {
        return None;
    }
    let digits = task.trim_start_matches(|c: char| !c.is_ascii_digit()).trim_start_matches('0');
    let number = if digits.is_empty() { "0" } else { digits };
    serde_json::from_str(&text.replace(TASK_NUMBER, number)).ok()
}

/// One scripted answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Defaults to `tool_calls` when there are calls, else `stop`.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Answer with this HTTP status and an OpenAI-style error body instead.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// Answer with an empty reply instead (no text, no reasoning, no tool call).
    #[serde(default)]
    pub empty: bool,
    /// Fail (`http_status` or `empty`) only the first `times` requests at this position, then
    /// answer normally; without it the failure is permanent.
    #[serde(default)]
    pub times: Option<u32>,
    #[serde(default)]
    pub error_code: Option<String>,
    /// With `http_status`: answer with exactly this body, a server's own error shape
    /// (llama.cpp's, vLLM's), instead of `OpenAI`'s.
    #[serde(default)]
    pub error_body: Option<serde_json::Value>,
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// Asked again at this position (an attempt restarted, or rewound): answer with this
    /// instead.
    #[serde(default)]
    pub again: Option<Box<Turn>>,
    /// Wait this long before answering (skipped in fast mode); streamed, half of it comes
    /// before the first chunk and half is spread between the chunks.
    #[serde(default)]
    pub delay_ms: u64,
    /// Answer only once this file exists (kept in fast mode): a test releases the reply when
    /// what must come before it has happened, never after a guessed time. Given up after ten
    /// minutes, with a 503.
    #[serde(default)]
    pub until_file: Option<std::path::PathBuf>,
    /// Cost to report in `usage.cost`, as `OpenRouter` does.
    #[serde(default)]
    pub cost: Option<f64>,
    /// With `http_status`: put the request's `Authorization` header in the error message, as
    /// some providers and proxies do.
    #[serde(default)]
    pub echo_authorization: bool,
    /// Refuse a streamed request (400, "streaming is not supported"), as some servers do.
    #[serde(default)]
    pub refuse_stream: bool,
    /// Streamed: wait this long between two chunks (kept in fast mode: it is the point).
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Streamed: send this many chunks, then nothing more while keeping the connection open.
    #[serde(default)]
    pub stall_after_chunks: Option<usize>,
    /// Streamed: answer a request for a stream as a broken or hostile server would.
    #[serde(default)]
    pub misbehave: Option<Misbehaviour>,
}

/// How a streamed answer goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Misbehaviour {
    /// Text chunks of 8 KB that never end.
    EndlessText,
    /// Tool-call deltas whose index climbs by 64 each chunk, without end.
    ClimbingIndices,
    /// The whole reply as one JSON body, as servers that ignore `stream: true` do.
    WholeBody,
    /// A small local model fallen into a loop: a token of text a chunk, without end — until
    /// the request's `max_tokens`, where it stops with `finish_reason: length`, as llama.cpp's
    /// server stops at its limit.
    Runaway,
    /// A server that fails inside its stream, as llama.cpp does when the window is exceeded
    /// after it answered 200: three chunks of text, then the connection is broken.
    Dropped,
}

/// A tool call in a scripted reply. `arguments` is sent as JSON text; a string is sent as is,
/// which is how a script sends arguments that are not valid JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// role → task → attempt → turns. The task `*` answers for any task without its own entry.
pub type Script = BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<Turn>>>>;

/// Parses a script: JSON of role → task → attempt → turns.
pub fn parse_script(text: &str) -> Result<Script, String> {
    serde_json::from_str(text).map_err(|e| format!("line {}: {e}", e.line()))
}

/// A request the server received, kept so tests can inspect exactly what was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub role: String,
    pub task: String,
    pub attempt: String,
    pub turn: usize,
    pub body: Value,
    /// The `Authorization` header as it arrived (empty when there was none), so tests can
    /// check which key went to which endpoint.
    pub authorization: String,
}

/// How a scripted server behaves beyond its script.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Drop every delay.
    pub fast: bool,
    /// The models it serves (listed at `/v1/models`; others answer 404); `None` serves any.
    pub models: Option<Vec<String>>,
    /// The keys it accepts (others answer 401); `None` accepts any.
    pub keys: Option<Vec<String>>,
    /// What `GET /props` answers, as llama.cpp's server does (its `n_ctx` among it); `None`:
    /// 404, as other servers.
    pub props: Option<Value>,
    /// A context window (in tokens, counted as the usage counts them) the server enforces as
    /// llama.cpp's does: a chat request past it is answered 400 with llama.cpp's exact body.
    pub window: Option<u64>,
    /// Send no `usage` in any reply, even when a stream asks for it, as llama-cpp-python's
    /// server does.
    pub no_usage: bool,
}

struct Shared {
    script: Script,
    fast: bool,
    models: Option<Vec<String>>,
    keys: Option<Vec<String>>,
    props: Option<Value>,
    window: Option<u64>,
    no_usage: bool,
    received: Mutex<Vec<Received>>,
    /// The questions a start asks, counted by what they ask: `models`, `props`, `ping`.
    asked: Mutex<BTreeMap<&'static str, u32>>,
    /// Requests seen per position, for turns that fail a number of `times` first.
    seen: Mutex<BTreeMap<(String, String, String, usize), u32>>,
}

/// A running server; stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .field("fast", &self.shared.fast)
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and serves the script. `fast` drops every delay.
    pub async fn start(script: Script, fast: bool) -> std::io::Result<ScriptedServer> {
        ScriptedServer::start_with(script, Options { fast, ..Options::default() }).await
    }

    /// [`ScriptedServer::start`], serving only some models or keys.
    pub async fn start_with(script: Script, options: Options) -> std::io::Result<ScriptedServer> {
        let shared = Arc::new(Shared {
            script,
            fast: options.fast,
            models: options.models,
            keys: options.keys,
            props: options.props,
            window: options.window,
            no_usage: options.no_usage,
            received: Mutex::new(Vec::new()),
            asked: Mutex::new(BTreeMap::new()),
            seen: Mutex::new(BTreeMap::new()),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(answer))
            .route("/v1/models", axum::routing::get(models))
            .route("/props", axum::routing::get(props))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(ScriptedServer { addr, shared, shutdown: Some(tx) })
    }

    /// The base URL to give the client (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How often a start's question was asked: `models` (the models list), `props`
    /// (llama.cpp's settings) or `ping` (the one-token check).
    pub fn asked(&self, what: &str) -> u32 {
        self.shared.asked.lock().map_or(0, |a| a.get(what).copied().unwrap_or(0))
    }
}

impl Shared {
    fn count(&self, what: &'static str) {
        if let Ok(mut asked) = self.asked.lock() {
            *asked.entry(what).or_default() += 1;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn header(headers: &HeaderMap, name: &str) -> String {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

fn error_response(
    status: StatusCode,
    code: &str,
    message: &str,
    retry_after: Option<u64>,
) -> Response {
    let body = json!({"error": {"message": message, "type": "scripted_error", "param": null, "code": code}});
    let mut response = (status, Json(body)).into_response();
    if let Some(v) = retry_after.and_then(|secs| HeaderValue::from_str(&secs.to_string()).ok()) {
        response.headers_mut().insert("retry-after", v);
    }
    response
}

/// The key in an `Authorization: Bearer` header, when the server checks keys and it is not one.
fn refused_key(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let keys = shared.keys.as_ref()?;
    let given = header(headers, "authorization");
    let given = given.strip_prefix("Bearer ").unwrap_or("");
    (!keys.iter().any(|k| k == given)).then(|| {
        error_response(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect API key provided",
            None,
        )
    })
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    shared.count("models");
    if let Some(refused) = refused_key(&shared, &headers) {
        return refused;
    }
    let ids = shared.models.clone().unwrap_or_default();
    let data: Vec<Value> = ids.iter().map(|id| json!({"id": id, "object": "model"})).collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn props(State(shared): State<Arc<Shared>>) -> Response {
    shared.count("props");
    match &shared.props {
        Some(Value::String(raw)) => raw.clone().into_response(),
        Some(props) => Json(props.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = refused_key(&shared, &headers) {
        return refused;
    }
    let model = body["model"].as_str().unwrap_or("");
    if shared.models.as_ref().is_some_and(|m| !m.iter().any(|id| id == model)) {
        let message = format!("The model `{model}` does not exist");
        return error_response(StatusCode::NOT_FOUND, "model_not_found", &message, None);
    }
    if header(&headers, "x-harrow-preflight") == "1" {
        shared.count("ping");
        let ok = Turn {
            content: Some("OK".into()),
            finish_reason: Some("length".into()),
            ..Turn::default()
        };
        return Json(completion(&body, &ok, "preflight", 0)).into_response();
    }
    let role = header(&headers, "x-harrow-role");
    let task = header(&headers, "x-harrow-task");
    let attempt = header(&headers, "x-harrow-attempt");
    let turn: usize = header(&headers, "x-harrow-turn").parse().unwrap_or(0);
    if let Ok(mut r) = shared.received.lock() {
        r.push(Received {
            role: role.clone(),
            task: task.clone(),
            attempt: attempt.clone(),
            turn,
            body: body.clone(),
            authorization: header(&headers, "authorization"),
        });
    }
    if let Some(n_ctx) = shared.window {
        let asked = tokens(&body["messages"].to_string());
        if asked > n_ctx {
            let message = format!(
                "request ({asked} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"
            );
            let body = json!({"error": {"code": 400, "message": message, "type": "exceed_context_size_error", "n_prompt_tokens": asked, "n_ctx": n_ctx}});
            return (StatusCode::BAD_REQUEST, Json(body)).into_response();
        }
    }
    let tasks = shared.script.get(&role);
    let attempts = tasks.and_then(|t| t.get(&task).or_else(|| t.get("*")));
    let turns = attempts.and_then(|a| a.get(&attempt).or_else(|| a.get("*")));
    let Some(scripted) = turns.and_then(|t| t.get(turn)) else {
        let message = format!(
            "the script did not expect this: it has no turn {turn} for the {role} on {task}, attempt {attempt}"
        );
        return error_response(StatusCode::BAD_REQUEST, "script_exhausted", &message, None);
    };
    let nth = shared.seen.lock().map_or(1, |mut seen| {
        let n = seen.entry((role.clone(), task.clone(), attempt.clone(), turn)).or_insert(0);
        *n += 1;
        *n
    });
    let scripted = match &scripted.again {
        Some(again) if nth > 1 => again.as_ref(),
        _ => scripted,
    };
    let numbered = for_task(scripted, &task);
    let scripted = numbered.as_ref().unwrap_or(scripted);
    // A streamed reply waits half its delay before the first chunk and spends the other half
    // between its chunks, so it can be watched arriving; a whole one waits before answering.
    let streaming = body["stream"] == json!(true);
    let before = if streaming { scripted.delay_ms / 2 } else { scripted.delay_ms };
    if before > 0 && !shared.fast {
        tokio::time::sleep(Duration::from_millis(before)).await;
    }
    if let Some(release) = &scripted.until_file {
        let given_up = tokio::time::Instant::now() + Duration::from_secs(600);
        while !release.exists() {
            if tokio::time::Instant::now() > given_up {
                let message = format!("{} never appeared", release.display());
                return error_response(StatusCode::SERVICE_UNAVAILABLE, "scripted", &message, None);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let failing = scripted.times.is_none_or(|times| nth <= times);
    let empty = Turn { content: Some(String::new()), ..Turn::default() };
    let sent = if scripted.empty && failing { &empty } else { scripted };
    if let Some(status) = scripted.http_status.filter(|_| failing && !scripted.empty) {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if let Some(body) = &scripted.error_body {
            return (status, Json(body.clone())).into_response();
        }
        let code = scripted.error_code.as_deref().unwrap_or("scripted");
        let message = if scripted.echo_authorization {
            let auth = header(&headers, "authorization");
            format!("scripted {status} (request had Authorization: {auth})")
        } else {
            format!("scripted {status}")
        };
        return error_response(status, code, &message, scripted.retry_after);
    }
    let mut whole = completion(&body, sent, &role, turn);
    if shared.no_usage
        && let Some(reply) = whole.as_object_mut()
    {
        reply.remove("usage");
    }
    if body["stream"] == json!(true) {
        match scripted.misbehave {
            Some(Misbehaviour::WholeBody) => return Json(whole).into_response(),
            Some(kind) => {
                let cap = body["max_tokens"].as_u64();
                return endless(kind, scripted.chunk_delay_ms, cap);
            }
            None => {}
        }
        if scripted.refuse_stream {
            let message = "streaming is not supported by this server; send stream: false";
            return error_response(StatusCode::BAD_REQUEST, "stream_unsupported", message, None);
        }
        let usage = body["stream_options"]["include_usage"] == json!(true) && !shared.no_usage;
        let spread = if shared.fast { 0 } else { scripted.delay_ms - scripted.delay_ms / 2 };
        return streamed(&whole, usage, scripted, spread);
    }
    Json(whole).into_response()
}

/// `text` in about three pieces, cut at character boundaries.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A completion as the chunks a streaming server sends: reasoning, then text, then the tool
/// calls with their arguments in pieces, interleaved by index, then the finish, then usage.
fn chunks(whole: &Value, usage: bool) -> Vec<Value> {
    let head = |delta: Value, finish: Value| {
        json!({
            "id": whole["id"], "object": "chat.completion.chunk", "created": 0,
            "model": whole["model"], "provider": whole["provider"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let message = &whole["choices"][0]["message"];
    let mut out = vec![head(json!({"role": "assistant"}), Value::Null)];
    for piece in pieces(message["reasoning"].as_str().unwrap_or("")) {
        out.push(head(json!({"reasoning_content": piece}), Value::Null));
    }
    for piece in pieces(message["content"].as_str().unwrap_or("")) {
        out.push(head(json!({"content": piece}), Value::Null));
    }
    let calls = message["tool_calls"].as_array().cloned().unwrap_or_default();
    let split: Vec<Vec<String>> =
        calls.iter().map(|c| pieces(c["function"]["arguments"].as_str().unwrap_or(""))).collect();
    for (i, c) in calls.iter().enumerate() {
        let opening = json!({"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": ""}});
        out.push(head(json!({"tool_calls": [opening]}), Value::Null));
    }
    for round in 0..split.iter().map(Vec::len).max().unwrap_or(0) {
        for (i, parts) in split.iter().enumerate() {
            if let Some(part) = parts.get(round) {
                let piece = json!({"index": i, "function": {"arguments": part}});
                out.push(head(json!({"tool_calls": [piece]}), Value::Null));
            }
        }
    }
    out.push(head(json!({}), whole["choices"][0]["finish_reason"].clone()));
    if usage {
        let mut last = head(json!({}), Value::Null);
        last["choices"] = json!([]);
        last["usage"] = whole["usage"].clone();
        out.push(last);
    }
    out
}

/// A completion sent as server-sent events, at the turn's pace.
/// `spread`: a reply delay (ms) to pace the chunks with, when the turn sets no pace of its own.
fn streamed(whole: &Value, usage: bool, t: &Turn, spread: u64) -> Response {
    let mut lines: Vec<String> =
        chunks(whole, usage).iter().map(|c| format!("data: {c}\n\n")).collect();
    lines.push("data: [DONE]\n\n".to_owned());
    let stall = t.stall_after_chunks;
    let pace = if t.chunk_delay_ms > 0 { t.chunk_delay_ms } else { spread / lines.len() as u64 };
    let delay = Duration::from_millis(pace);
    let stream = futures_util::stream::unfold(
        (lines.into_iter(), 0usize),
        move |(mut rest, sent)| async move {
            if stall.is_some_and(|n| sent >= n) {
                tokio::time::sleep(Duration::from_secs(3_600)).await;
                return None;
            }
            if sent > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let line = rest.next()?;
            Some((Ok::<_, std::convert::Infallible>(line), (rest, sent + 1)))
        },
    );
    let mut response = axum::body::Body::from_stream(stream).into_response();
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
    response
}

/// A stream that never ends: chunk after chunk of `kind`, `pace` ms apart.
fn endless(kind: Misbehaviour, pace: u64, cap: Option<u64>) -> Response {
    let text = "x".repeat(8 * 1024);
    let stream = futures_util::stream::unfold(0u64, move |n| {
        let text = text.clone();
        async move {
            let capped = kind == Misbehaviour::Runaway && cap.is_some_and(|c| n >= c);
            if capped && cap.is_some_and(|c| n > c) {
                return None;
            }
            if capped {
                let last = json!({"id": "endless", "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]});
                let end = format!("data: {last}\n\ndata: [DONE]\n\n");
                return Some((Ok::<_, std::io::Error>(end), n + 1));
            }
            if kind == Misbehaviour::Dropped && n >= 3 {
                let broken = std::io::Error::other("the server failed inside its stream");
                return (n == 3).then_some((Err(broken), n + 1));
            }
            if pace > 0 {
                tokio::time::sleep(Duration::from_millis(pace)).await;
            } else if n % 64 == 0 {
                tokio::task::yield_now().await;
            }
            let delta = match kind {
                Misbehaviour::EndlessText | Misbehaviour::WholeBody => json!({"content": text}),
                Misbehaviour::Runaway | Misbehaviour::Dropped => json!({"content": "and so on "}),
                Misbehaviour::ClimbingIndices => {
                    json!({"tool_calls": [{"index": n * 64, "id": format!("c{n}"),
                    "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
                }
            };
            let chunk = json!({"id": "endless", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
            Some((Ok::<_, std::io::Error>(format!("data: {chunk}\n\n")), n + 1))
        }
    });
    let mut response = axum::body::Body::from_stream(stream).into_response();
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
    response
}

/// Rough token count, so usage and cost look like a real provider's.
fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn completion(request: &Value, t: &Turn, role: &str, turn: usize) -> Value {
    let calls: Vec<Value> = t
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let arguments = match &c.arguments {
                Value::String(raw) => raw.clone(),
                Value::Null => "{}".to_owned(),
                other => other.to_string(),
            };
            json!({"id": format!("call_{role}_{turn}_{i}"), "type": "function", "function": {"name": c.name, "arguments": arguments}})
        })
        .collect();
    let finish = t
        .finish_reason
        .clone()
        .unwrap_or_else(|| if calls.is_empty() { "stop".into() } else { "tool_calls".into() });
    let mut message =
        json!({"role": "assistant", "content": t.content.clone().filter(|c| !c.is_empty())});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    if let Some(r) = &t.reasoning {
        message["reasoning"] = json!(r);
    }
    let prompt = tokens(&request["messages"].to_string());
    let completion = tokens(&message.to_string());
    let reasoning = t.reasoning.as_deref().map_or(0, tokens);
    let mut usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": prompt / 2},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    });
    if let Some(cost) = t.cost {
        usage["cost"] = json!(cost);
    }
    json!({
        "id": format!("scripted-{role}-{turn}"),
        "object": "chat.completion",
        "created": 0,
        "model": request["model"],
        "provider": "harrow-scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    })
}
