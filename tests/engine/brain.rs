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
    brain_with(base_url, |_| {})
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
    assert_eq!(attempts[0].health.as_str(), "ok");
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
    let healths: Vec<&str> = attempts.iter().map(|a| a.health.as_str()).collect();
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
    let mut attempts = Vec::new();
    let reply = brain(&s.base_url())
        .chat(&tag(0), &[json!({"role": "user", "content": "x"})], &[], |a, _| {
            attempts.push(a.clone());
        })
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("after the limit"));
    let waited = attempts[0].backoff.unwrap();
    assert!(waited >= Duration::from_secs(1), "Retry-After was honoured: {waited:?}");
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
        (json!({"http_status": 503}), "answered 503: scripted 503 Service Unavailable"),
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

fn brain_with(base_url: &str, change: impl FnOnce(&mut BrainConfig)) -> Brain {
    let endpoint = Endpoint {
        base_url: base_url.into(),
        api_key: Some(KEY.into()),
        model: "scripted/worker".into(),
    };
    let mut config = BrainConfig::new(BTreeMap::from([(Role::Worker, endpoint)]));
    config.backoff_base = Duration::from_millis(5);
    config.max_attempts = 3;
    change(&mut config);
    Brain::new(config).unwrap()
}

fn user() -> Vec<serde_json::Value> {
    vec![json!({"role": "user", "content": "x"})]
}

#[tokio::test]
async fn a_streamed_reply_assembles_to_what_the_whole_reply_says() {
    let script = json!({"worker": {"T-001": {"1": [
        {"content": "Reading two things at once.", "reasoning": "both files matter", "cost": 0.002,
         "tool_calls": [{"name": "read_file", "arguments": {"path": "src/lib.rs"}},
                        {"name": "bash", "arguments": {"command": "cargo test --quiet"}}]}
    ]}}});
    let s = server(script).await;
    let mut grew = Vec::new();
    let streamed = brain(&s.base_url())
        .chat_streaming(&tag(0), &user(), &[], |_, _| {}, |p| grew.push(p.clone()))
        .await
        .unwrap();
    let whole = brain_with(&s.base_url(), |c| c.stream = false)
        .chat(&tag(0), &user(), &[], |_, _| {})
        .await
        .unwrap();
    let got = s.received();
    assert_eq!(got[0].body["stream"], true, "asked as a stream");
    assert_eq!(got[0].body["stream_options"]["include_usage"], true);
    assert_eq!(got[1].body["stream"], false);
    assert_eq!(streamed, whole, "the same reply either way");
    assert_eq!(streamed.tool_calls.len(), 2);
    assert_eq!(streamed.tool_calls[1].arguments, r#"{"command":"cargo test --quiet"}"#);
    assert!(streamed.usage.prompt > 0 && (streamed.usage.cost - 0.002).abs() < 1e-12);
    assert!(grew.len() > 8, "the reply was seen growing: {} chunks", grew.len());
    assert!(grew.iter().any(|p| p.content == "Reading two" || p.content.len() < 27));
}

#[tokio::test]
async fn a_reply_that_keeps_coming_outlasts_the_silence_timeout() {
    let s = ScriptedServer::start(
        parse_script(
            &json!({"worker": {"T-001": {"1": [
                {"content": "slow but steady", "reasoning": "one chunk at a time", "chunk_delay_ms": 400}
            ]}}})
            .to_string(),
        )
        .unwrap(),
        false,
    )
    .await
    .unwrap();
    let b = brain_with(&s.base_url(), |c| c.read_timeout = Duration::from_secs(1));
    let mut attempts = Vec::new();
    let reply = b.chat(&tag(0), &user(), &[], |a, _| attempts.push(a.clone())).await.unwrap();
    assert_eq!(reply.content.as_deref(), Some("slow but steady"));
    assert_eq!(attempts.len(), 1, "one try, never cut");
    // The premise, as the client recorded the call: it lasted longer than the silence limit.
    assert!(attempts[0].duration > Duration::from_secs(2), "{:?}", attempts[0].duration);
}

#[tokio::test]
async fn a_server_that_stops_sending_mid_reply_is_reported_as_stopped() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"content": "never finished", "stall_after_chunks": 2}
    ]}}}))
    .await;
    let b = brain_with(&s.base_url(), |c| {
        c.read_timeout = Duration::from_secs(1);
        c.max_attempts = 2;
    });
    let mut attempts = Vec::new();
    let err = b.chat(&tag(0), &user(), &[], |a, _| attempts.push(a.clone())).await.unwrap_err();
    assert!(matches!(err, BrainError::Stalled { secs: 1, .. }), "{err}");
    assert!(err.to_string().contains("stopped sending for 1 s"), "{err}");
    assert!(err.is_transient(), "resumable, like any slow model");
    assert_eq!(attempts.len(), 2, "tried again with the backoff first");
    assert_eq!(attempts[0].error_class, Some("stalled"));
}

#[tokio::test]
async fn a_server_that_refuses_streaming_is_asked_whole_from_then_on() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"content": "first", "refuse_stream": true},
        {"content": "second", "refuse_stream": true}
    ]}}}))
    .await;
    let b = brain(&s.base_url());
    let first = b.chat(&tag(0), &user(), &[], |_, _| {}).await.unwrap();
    let second = b.chat(&tag(1), &user(), &[], |_, _| {}).await.unwrap();
    assert_eq!(
        (first.content.as_deref(), second.content.as_deref()),
        (Some("first"), Some("second"))
    );
    let streams: Vec<bool> =
        s.received().iter().map(|r| r.body["stream"].as_bool().unwrap_or(false)).collect();
    assert_eq!(streams, [true, false, false], "refused once, remembered for the endpoint");
}

#[tokio::test]
async fn the_output_cap_is_sent_with_every_request() {
    let s = server(
        json!({"worker": {"T-001": {"1": [{"content": "short", "finish_reason": "length"}]}}}),
    )
    .await;
    let b = brain_with(&s.base_url(), |c| c.max_output_tokens = Some(512));
    let reply = b.chat(&tag(0), &user(), &[], |_, _| {}).await.unwrap();
    assert_eq!(reply.finish_reason.as_deref(), Some("length"), "the cut is reported");
    assert_eq!(s.received()[0].body["max_tokens"], 512);
}

#[tokio::test]
async fn a_server_error_tried_four_times_is_four_attempts_with_growing_waits() {
    let s = server(json!({"worker": {"T-001": {"1": [{"http_status": 503}]}}})).await;
    let b = brain_with(&s.base_url(), |c| {
        c.max_attempts = 4;
        c.backoff_base = Duration::from_millis(100);
    });
    let mut attempts = Vec::new();
    let mut at = Vec::new();
    let err = b
        .chat(&tag(0), &user(), &[], |a, _| {
            attempts.push(a.clone());
            at.push(std::time::Instant::now());
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("answered 503"), "{err}");
    assert!(!err.to_string().contains("cannot be reached"), "{err}");
    assert!(err.is_transient(), "the run stops resumably");
    assert_eq!(s.received().len(), 4, "four requests, none hidden in the client");
    assert_eq!(attempts.len(), 4, "each try reported");
    assert!(attempts.iter().all(|a| a.http_status == Some(503)));
    assert!(attempts.iter().all(|a| a.error_class == Some("server_error")));
    let waits: Vec<Duration> = attempts[..3].iter().map(|a| a.backoff.unwrap()).collect();
    assert!(waits[0] < waits[1] && waits[1] < waits[2], "growing: {waits:?}");
    assert!(attempts[3].backoff.is_none());
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[2] > gaps[0], "the waits were waited: {gaps:?}");
}

#[tokio::test]
async fn retry_after_sets_the_wait_and_each_try_is_reported() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"http_status": 429, "retry_after": 1, "times": 1, "content": "after the limit"},
    ]}}}))
    .await;
    let b = brain_with(&s.base_url(), |c| c.backoff_base = Duration::from_millis(5));
    let mut attempts = Vec::new();
    let reply = b.chat(&tag(0), &user(), &[], |a, _| attempts.push(a.clone())).await.unwrap();
    assert_eq!(reply.content.as_deref(), Some("after the limit"));
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].error_class, Some("rate_limited"));
    assert_eq!(attempts[0].backoff, Some(Duration::from_secs(1)), "as long as the server asked");
}

#[tokio::test]
async fn a_whole_reply_to_a_streamed_request_is_used_not_asked_again() {
    let s = server(json!({"worker": {"T-001": {"1": [
        {"content": "whole", "misbehave": "whole_body",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}
    ]}}}))
    .await;
    let reply = brain(&s.base_url()).chat(&tag(0), &user(), &[], |_, _| {}).await.unwrap();
    assert_eq!(reply.content.as_deref(), Some("whole"));
    assert_eq!(reply.tool_calls[0].name, "read_file");
    assert!(reply.usage.prompt > 0, "usage kept");
    assert_eq!(s.received().len(), 1, "one paid call, not two");
}

#[tokio::test]
async fn a_reply_that_never_ends_is_cut_at_the_size_limit_and_not_asked_again() {
    let s = server(json!({"worker": {"T-001": {"1": [{"misbehave": "endless_text"}]}}})).await;
    let b = brain_with(&s.base_url(), |c| c.max_reply_bytes = 1024 * 1024);
    let mut attempts = Vec::new();
    let (tag, user) = (tag(0), user());
    let chat = b.chat(&tag, &user, &[], |a, _| attempts.push(a.clone()));
    let err = tokio::time::timeout(Duration::from_secs(120), chat).await.unwrap().unwrap_err();
    assert!(err.to_string().contains("was cut: it passed 1 MB"), "{err}");
    assert!(err.to_string().contains("max_reply_bytes"), "says what to raise: {err}");
    assert_eq!(attempts.len(), 1, "a runaway reply is not paid for twice");
    assert_eq!(attempts[0].error_class, Some("cut"));
    assert_eq!(s.received().len(), 1);
}

#[tokio::test]
async fn tool_call_indices_that_climb_are_cut_at_the_limit() {
    let s = server(json!({"worker": {"T-001": {"1": [{"misbehave": "climbing_indices"}]}}})).await;
    let err = brain(&s.base_url()).chat(&tag(0), &user(), &[], |_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("past the limit of 128 calls"), "{err}");
    assert!(err.to_string().contains("raise [models] max_tool_calls"), "its own limit: {err}");
}

#[tokio::test]
async fn a_reply_that_trickles_on_is_cut_at_the_time_limit() {
    let s = server(
        json!({"worker": {"T-001": {"1": [{"misbehave": "endless_text", "chunk_delay_ms": 50}]}}}),
    )
    .await;
    let b = brain_with(&s.base_url(), |c| c.max_reply_time = Duration::from_secs(1));
    let (tag, user) = (tag(0), user());
    let chat = b.chat(&tag, &user, &[], |_, _| {});
    let err = tokio::time::timeout(Duration::from_secs(120), chat).await.unwrap().unwrap_err();
    assert!(err.to_string().contains("took longer than 1 s"), "{err}");
    assert!(err.to_string().contains("max_reply_secs"), "{err}");
    // A reply that never ends is likelier a loop than a long answer: the bound is named.
    assert!(err.to_string().contains("[models] max_output_tokens"), "{err}");
}

/// A server that answers 200 and then breaks the connection inside its stream (llama.cpp does
/// when the window is exceeded mid-reply) is named for what it did — it answered, then dropped
/// the reply after so many bytes — never "cannot be reached", and it is asked again.
#[tokio::test]
async fn a_reply_dropped_after_its_200_is_named_and_asked_again() {
    let dropped = json!({"misbehave": "dropped", "again": {"content": "whole at last"}});
    let s = server(json!({"worker": {"T-001": {"1": [dropped]}}})).await;
    let once = brain_with(&s.base_url(), |c| c.max_attempts = 1);
    let err = once.chat(&tag(0), &user(), &[], |_, _| {}).await.unwrap_err();
    let said = err.to_string();
    assert!(said.contains("began its reply, then closed the connection after"), "{said}");
    assert!(!said.contains("cannot be reached"), "{said}");
    assert_eq!(err.class(), "dropped");

    let s = server(json!({"worker": {"T-001": {"1": [
        {"misbehave": "dropped", "again": {"content": "whole at last"}}
    ]}}}))
    .await;
    let mut tries = Vec::new();
    let twice = brain_with(&s.base_url(), |c| {
        c.max_attempts = 2;
        c.backoff_base = Duration::from_millis(1);
    });
    let reply = twice
        .chat(&tag(0), &user(), &[], |a, _| tries.push(a.detail.clone().unwrap_or_default()))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("whole at last"));
    assert!(tries[0].contains("closed the connection after"), "{tries:?}");
}
