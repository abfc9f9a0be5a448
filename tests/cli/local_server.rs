//! Servers on 127.0.0.1 that behave like a local llama.cpp: a window they state at `/props`,
//! replies that can run away. With no `max_output_tokens` configured, a request's `max_tokens`
//! is a share of the known window, so a reply in a loop ends at the cap in seconds, is handled
//! as a cut reply, and the task goes on — never a wait for the reply's time limit.

use crate::loop_fixture;

use harrow::brain::scripted::Options;
use loop_fixture::{
    accept, events_of, harrow_cmd, headless_run, repo_and_plan, serve_with, write_and_submit,
};
use serde_json::json;

#[test]
fn a_runaway_reply_ends_at_the_cap_the_window_gives_and_the_task_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let mut turns = vec![json!({"misbehave": "runaway", "chunk_delay_ms": 1})];
    turns.extend(write_and_submit(1).as_array().unwrap().iter().cloned());
    let script = json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"*": {"*": [accept()]}}});
    // A llama.cpp server with a 2,048-token window, as `/props` says it.
    let props = json!({"default_generation_settings": {"n_ctx": 2048}});
    let (_rt, server) =
        serve_with(&script, Options { fast: true, props: Some(props), ..Options::default() });
    // Without the cap the runaway would go on to this limit: the test would take two minutes
    // and fail on the reply's time, not pass.
    loop_fixture::configure_models(tmp.path(), "[models]\nmax_reply_secs = 120\n");
    loop_fixture::headless_ok(tmp.path(), &server.base_url(), &plan, &repo);
    let worker: Vec<_> = server.received().into_iter().filter(|r| r.role == "worker").collect();
    assert_eq!(worker[0].body["max_tokens"], 512, "a quarter of the 2,048-token window");
    let dir = std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap();
    let calls = events_of(&dir.path(), "model_call");
    let first = calls.iter().find(|c| c["role"] == "worker").unwrap();
    assert_eq!(first["finish_reason"], "length", "{first}");
    let nudged = worker[1].body.to_string();
    assert!(nudged.contains("cut off by the length limit"), "handled as a cut reply: {nudged}");
    assert_eq!(events_of(&dir.path(), "task_done").len(), 1, "the task went on and landed");
}

/// A server that sends no `usage`, even when the stream asks for it (llama-cpp-python's): the
/// calls' tokens are estimated from characters and said to be estimates — `~` in `show` — never
/// logged or shown as 0.
#[test]
fn a_server_that_counts_no_tokens_has_them_estimated_and_shown_as_estimates() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script =
        json!({"worker": {"*": {"*": write_and_submit(1)}}, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) =
        serve_with(&script, Options { fast: true, no_usage: true, ..Options::default() });
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let dir = std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap();
    let calls = events_of(&dir.path(), "model_call");
    assert!(!calls.is_empty());
    for call in &calls {
        assert_eq!(call["tokens_estimated"], true, "{call}");
        assert!(call["prompt_tokens"].as_u64().unwrap() > 100, "the brief alone is long: {call}");
        assert!(call["eval_tokens"].as_u64().unwrap() > 0, "{call}");
    }
    let show = harrow_cmd(tmp.path(), &server.base_url())
        .args(["show", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    let tokens = show.lines().find(|l| l.starts_with("Tokens")).unwrap();
    assert!(
        tokens.contains("Tokens    ~") && tokens.contains("estimated from characters"),
        "{show}"
    );
    assert!(tokens.ends_with("cost unknown"), "no usage, no price: {tokens}");
    // The export says the same: the tokens as estimates, the cost unknown, never $0.000.
    let export = |format: &str| {
        let out = harrow_cmd(tmp.path(), &server.base_url())
            .args(["export", dir.path().to_str().unwrap(), "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let md = export("md");
    let head = md.lines().find(|l| l.contains("tasks done")).unwrap();
    assert!(head.contains(" · ~") && head.contains("estimated from characters"), "{head}");
    assert!(head.contains("cost unknown") && !md.contains("$0.000"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&export("json")).unwrap();
    assert!(json["tokens_estimated_calls"].as_u64().unwrap() > 0, "{json}");
}
