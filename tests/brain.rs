//! The real model client, over HTTP, against the scripted server on 127.0.0.1.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use harrow::brain::client::{Attempt, Brain, BrainConfig, BrainError, CallTag, Endpoint, Role};
use harrow::brain::scripted::{ScriptedServer, parse_script};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const KEY: &str = "sk-test-never-printed-4242";

fn brain(base_url: &str) -> Brain {
    let endpoint = Endpoint {
        base_url: base_url.into(),
        api_key: Some(KEY.into()),
        model: "scripted/worker".into(),
    };
    let mut config = BrainConfig::new(BTreeMap::from([(Role::Worker, endpoint)]));
    config.backoff_base = Duration::from_millis(5);
    config.max_attempts = 3;
    Brain::new(config).unwrap()
}

fn tag(turn: usize) -> CallTag<'static> {
    CallTag { role: Role::Worker, task: "T-001", attempt: 1, turn }
}

async fn server(script: serde_json::Value) -> ScriptedServer {
    ScriptedServer::start(parse_script(&script.to_string()).unwrap(), true).await.unwrap()
}

#[tokio::test]
async fn a_reply_with_tool_calls_usage_and_cost() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"content": "Looking around.", "reasoning": "start small", "cost": 0.0012,
         "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}, {"name": "bash", "arguments": "{not json"}]}
    ]}}}))
    .await;
    let b = brain(&s.base_url());
    let messages = vec![json!({"role": "user", "content": "do the task"})];
    let tools = vec![
        json!({"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}),
    ];
    let mut attempts: Vec<Attempt> = Vec::new();
    let reply = b.chat(&tag(0), &messages, &tools, |a, _| attempts.push(a.clone())).await.unwrap();
    assert_eq!(reply.content.as_deref(), Some("Looking around."));
    assert_eq!(reply.reasoning.as_deref(), Some("start small"));
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a.py"}"#);
    assert_eq!(reply.tool_calls[1].arguments, "{not json", "malformed arguments arrive as sent");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert!(reply.usage.prompt > 0 && reply.usage.completion > 0);
    assert!((reply.usage.cost - 0.0012).abs() < 1e-12);
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].health, "ok");
    let history = reply.history_message();
    assert_eq!(history["reasoning"], "start small", "reasoning is carried to the next turn");
    let got = s.received();
    assert_eq!(
        (got[0].role.as_str(), got[0].task.as_str(), got[0].attempt.as_str(), got[0].turn),
        ("worker", "T-001", "1", 0)
    );
    assert_eq!(got[0].body["model"], "scripted/worker");
    assert_eq!(got[0].body["tools"][0]["function"]["name"], "read_file");
}

#[tokio::test]
async fn empty_and_errored_replies_are_retried_with_backoff() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"empty": true, "times": 2, "content": "finally"},
    ]}}}))
    .await;
    let b = brain(&s.base_url());
    let mut attempts: Vec<Attempt> = Vec::new();
    let reply = b
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |a, _| {
            attempts.push(a.clone());
        })
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("finally"));
    let healths: Vec<&str> = attempts.iter().map(|a| a.health).collect();
    assert_eq!(healths, ["empty", "empty", "ok"]);
    assert!(attempts[0].backoff.is_some() && attempts[2].backoff.is_none());

    let s = server(json!({"worker": {"T-001": {"1": [{"empty": true}]}}})).await;
    let err = brain(&s.base_url())
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |_, _| {})
        .await
        .unwrap_err();
    assert!(matches!(err, BrainError::Unhealthy { attempts: 3, .. }), "{err}");
    assert!(err.is_transient());
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_by_the_client() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"http_status": 429, "retry_after": 1, "times": 1, "content": "after the limit"},
    ]}}}))
    .await;
    let started = std::time::Instant::now();
    let reply = brain(&s.base_url())
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |_, _| {})
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("after the limit"));
    assert!(started.elapsed() >= Duration::from_millis(900), "Retry-After was honoured");
    assert_eq!(s.received().len(), 2);
}

#[tokio::test]
async fn failures_are_classified_for_the_operator_and_never_show_the_key() {
    let cases = [
        (json!({"http_status": 401}), "refused the API key (401)"),
        (json!({"http_status": 404}), "has no model 'scripted/worker'"),
        (
            json!({"http_status": 400, "error_code": "context_length_exceeded"}),
            "context window is exceeded",
        ),
        (json!({"http_status": 503}), "cannot be reached: 503 after retries"),
        (json!({"http_status": 422}), "rejected the request (422)"),
    ];
    for (turn, needle) in cases {
        let s = server(json!({"worker": {"T-001": {"1": [turn]}}})).await;
        let err = brain(&s.base_url())
            .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |_, _| {})
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(needle), "{needle}: {text}");
        assert!(!text.contains(KEY) && !format!("{err:?}").contains(KEY));
    }
    let dead = brain("http://127.0.0.1:9/v1");
    let err = dead
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |_, _| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err, BrainError::Unreachable { .. }) && err.to_string().contains("127.0.0.1:9"),
        "{err}"
    );
    assert!(!format!("{dead:?}").contains(KEY), "Debug masks the key");
    let s = server(json!({"worker": {"T-001": {"1": []}}})).await;
    let err = brain(&s.base_url())
        .chat(&tag(5), &[json!({"role": "user", "content": "x"})], &[], |_, _| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "the script did not expect this: it has no turn 5 for the worker on T-001, attempt 1"
        ) && !err.to_string().contains("cannot be reached"),
        "a script that runs out says so, not that the endpoint is unreachable: {err}"
    );
}

#[tokio::test]
async fn a_model_that_is_only_slow_is_tried_again_and_called_slow_not_unreachable() {
    let script = json!({"worker": {"T-001": {"1": [{"content": "late", "delay_ms": 3000}]}}});
    let s = ScriptedServer::start(parse_script(&script.to_string()).unwrap(), false).await.unwrap();
    let endpoint = Endpoint {
        base_url: s.base_url(),
        api_key: Some(KEY.into()),
        model: "scripted/worker".into(),
    };
    let mut config = BrainConfig::new(BTreeMap::from([(Role::Worker, endpoint)]));
    config.read_timeout = std::time::Duration::from_secs(1);
    config.max_attempts = 2;
    config.backoff_base = std::time::Duration::from_millis(5);
    let brain = Brain::new(config).unwrap();
    let mut tries = Vec::new();
    let err = brain
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |a, _| {
            tries.push(a.clone());
        })
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("no answer from the worker model at") && text.contains("in 1 s"),
        "{text}"
    );
    assert!(!text.contains("cannot be reached"), "{text}");
    assert!(err.is_transient(), "the run stops resumably");
    assert_eq!(tries.len(), 2, "tried again with the backoff");
    assert!(tries[0].backoff.is_some() && tries[1].backoff.is_none());
    assert!(tries.iter().all(|t| t.error_class == Some("timeout")));
}
