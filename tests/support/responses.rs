//! A scripted model server on 127.0.0.1 speaking the Responses API of `OpenAI`
//! (`POST /v1/responses`, streamed as server-sent events), as Codex now requires: the model behind a
//! real ACP agent in a test. Its answer follows from the request alone — a case when harrow
//! asks for one, a closing message after a tool's output, else one command to run — so the
//! agent may ask as often as it likes.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// One request as it arrived: its `Authorization` header and body.
#[derive(Debug, Clone)]
pub struct Asked {
    pub authorization: String,
    pub body: Value,
}

/// The running server.
pub struct ResponsesServer {
    pub base_url: String,
    asked: Arc<Mutex<Vec<Asked>>>,
    _runtime: tokio::runtime::Runtime,
}

/// What the model does: the command it runs first, and the case it gives when asked.
#[derive(Clone)]
struct Script {
    command: String,
    case: Value,
}

impl ResponsesServer {
    /// Starts a server whose model runs `command` once, then says it is done, and answers
    /// harrow's case prompt with `case`.
    pub fn start(command: &str, case: Value) -> ResponsesServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let state = (Arc::clone(&asked), Script { command: command.to_owned(), case });
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let app = axum::Router::new().route("/v1/responses", post(respond)).with_state(state);
        runtime.spawn(async move { axum::serve(listener, app).await });
        ResponsesServer { base_url, asked, _runtime: runtime }
    }

    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
}

/// The text of the last user message of a request.
fn last_user_text(input: &[Value]) -> String {
    let message = input.iter().rev().find(|i| i["type"] == "message" && i["role"] == "user");
    (message.and_then(|m| m["content"].as_array()).into_iter().flatten())
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn respond(
    State((asked, script)): State<(Arc<Mutex<Vec<Asked>>>, Script)>,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    let Ok(body) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, HeaderMap::new(), "not JSON".to_owned());
    };
    let authorization =
        (headers.get(header::AUTHORIZATION)).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let n = {
        let mut asked = asked.lock().unwrap();
        asked.push(Asked { authorization, body: body.clone() });
        asked.len()
    };
    let after_tool = input.last().is_some_and(|i| i["type"] == "function_call_output");
    let item = if last_user_text(&input).contains("harrow: your turn has ended") && !after_tool {
        let text = format!("My case:\n```json\n{}\n```", script.case);
        json!({"type": "message", "role": "assistant", "id": format!("m{n}"),
               "content": [{"type": "output_text", "text": text, "annotations": []}]})
    } else if after_tool {
        json!({"type": "message", "role": "assistant", "id": format!("m{n}"),
               "content": [{"type": "output_text", "text": "Done: the file is written.", "annotations": []}]})
    } else {
        json!({"type": "function_call", "id": format!("fc{n}"), "call_id": format!("call{n}"),
               "name": "exec_command", "arguments": json!({"cmd": script.command}).to_string()})
    };
    let id = format!("resp{n}");
    let events = [
        ("response.created", json!({"type": "response.created", "response": {"id": id}})),
        ("response.output_item.done", json!({"type": "response.output_item.done", "item": item})),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": id,
            "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940}}}),
        ),
    ];
    let mut text = String::new();
    for (name, data) in &events {
        let _ = write!(text, "event: {name}\ndata: {data}\n\n");
    }
    let mut out = HeaderMap::new();
    out.insert(header::CONTENT_TYPE, "text/event-stream".parse().unwrap());
    (StatusCode::OK, out, text)
}
