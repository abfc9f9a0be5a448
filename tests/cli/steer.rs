//! Steering a task while it works, through the real binary against a scripted model that
//! records every request: a steer reaches the worker's very next request (the one that carries
//! the tool result it was waiting on) and the evaluator's request for that attempt; a queued
//! text waits for the next attempt; words with terminal escapes reach the model as plain text.

use crate::{loop_fixture, support};

use loop_fixture::{
    accept, all_text, case, harrow_cmd, headless_run, reject, repo_and_plan, serve,
    session_when_log_has,
};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The text of every message of a recorded request, in order, with its role.
fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let content =
                m["content"].as_str().map_or_else(|| m["content"].to_string(), str::to_owned);
            (m["role"].as_str().unwrap_or("").to_owned(), content)
        })
        .collect()
}

#[test]
fn a_steer_reaches_the_workers_next_request_and_its_evaluator_and_a_queue_waits_for_the_next_attempt()
 {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let slow_first = json!([
        {"delay_ms": 8000, "tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
    ]);
    let script = json!({
        "worker": {"T-001": {"1": slow_first, "2": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]}},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let mut child = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = session_when_log_has(&tmp.path().join("sessions"), "\"type\":\"context_reset\"");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    // The steer is sent while the first reply (8 s away) is awaited.
    support::until("the first worker call reaching the server", || {
        server.received().iter().any(|r| r.role == "worker")
    });
    let control = |args: &[&str]| {
        harrow_cmd(tmp.path(), &server.base_url())
            .arg("control")
            .arg(&id)
            .args(args)
            .output()
            .unwrap()
    };
    let steer = control(&[
        "steer",
        "--task",
        "T-001",
        "STEER-WORDS: name it f1.txt \u{1b}[31mred\u{1b}[0m, with the key sk-binary-test",
    ]);
    assert!(steer.status.success(), "{}", String::from_utf8_lossy(&steer.stderr));
    let queue = control(&["queue", "--task", "T-001", "QUEUED-WORDS: keep it short"]);
    assert!(queue.status.success(), "{}", String::from_utf8_lossy(&queue.stderr));
    let unknown = control(&["steer", "--task", "T-009", "anything"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("has no task T-009"));
    assert!(child.wait().unwrap().success(), "the run ends with its task accepted");

    let received = server.received();
    let worker = |attempt: &str, turn: usize| {
        let r =
            received.iter().find(|r| r.role == "worker" && r.attempt == attempt && r.turn == turn);
        messages(&r.unwrap_or_else(|| panic!("worker {attempt}/{turn}: {received:?}")).body)
    };
    let said = |m: &[(String, String)], needle: &str| m.iter().any(|(_, c)| c.contains(needle));
    let first = worker("1", 0);
    assert!(!said(&first, "STEER-WORDS"), "not before it was sent");
    let second = worker("1", 1);
    let at = second
        .iter()
        .position(|(_, c)| c.contains("STEER-WORDS"))
        .expect("the steer is in the next request");
    assert_eq!(second[at].0, "user", "as the operator's message");
    assert_eq!(second[at - 1].0, "tool", "right after the tool result the worker waited on");
    assert!(!said(&second, "QUEUED-WORDS"), "a queued text waits for the next attempt");
    assert!(
        !second[at].1.contains('\u{1b}') && second[at].1.contains("\\u{1b}[31m"),
        "plain text: {}",
        second[at].1
    );
    let evaluator = |attempt: &str| {
        let r = received.iter().find(|r| r.role == "evaluator" && r.attempt == attempt).unwrap();
        messages(&r.body)
    };
    assert!(said(&evaluator("1"), "The operator asked during this attempt"));
    assert!(said(&evaluator("1"), "STEER-WORDS"));
    assert!(!said(&evaluator("2"), "STEER-WORDS"), "the steer was about attempt 1");
    let rework: Vec<(String, String)> = received
        .iter()
        .filter(|r| r.role == "worker" && r.attempt == "2")
        .flat_map(|r| messages(&r.body))
        .collect();
    assert!(said(&rework, "QUEUED-WORDS"), "the queued text is in the next attempt's brief");

    let events = support::strict_events(&dir);
    let of = |kind: &str| {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["payload"].clone())
            .collect::<Vec<_>>()
    };
    let steers = of("operator_steer");
    assert_eq!(steers.len(), 1, "{steers:?}");
    assert_eq!(steers[0]["delivered"], true);
    assert_eq!(steers[0]["iter"], 2, "before the second model request");
    let queued = of("operator_queue");
    assert_eq!(queued[0]["until"], "next attempt");
    // The key typed into the steer reached no file and no model.
    assert!(all_text(&dir).contains("STEER-WORDS"), "the premise: the folder holds the steer");
    assert!(!all_text(&dir).contains("sk-binary-test"), "the key is in the session folder");
    let sent: String = received.iter().map(|r| r.body.to_string()).collect();
    assert!(!sent.contains("sk-binary-test"), "the key reached a model");
}

/// Two tasks side by side in two lanes: a steer for one reaches that lane's worker only.
#[test]
fn in_lanes_a_steer_reaches_only_its_tasks_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    loop_fixture::depends(&plan, 1, "[]");
    loop_fixture::depends(&plan, 2, "[]");
    let slow = |n: usize| {
        json!([
            {"delay_ms": 2500, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
        ])
    };
    let script = json!({
        "worker": {"T-001": {"*": slow(1)}, "T-002": {"*": slow(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let mut child = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .args(["--lanes", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = session_when_log_has(&tmp.path().join("sessions"), "\"type\":\"context_reset\"");
    let deadline = Instant::now() + Duration::from_secs(60);
    let log = dir.join("events.jsonl");
    let both = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        ["T-001", "T-002"].iter().all(|t| {
            text.lines().any(|l| {
                l.contains("\"type\":\"context_reset\"") && l.contains(&format!("\"{t}\""))
            })
        })
    };
    while !both() {
        assert!(Instant::now() < deadline, "both tasks never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "steer", "--task", "T-002", "ONLY-FOR-T-002"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let refused = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "steer", "no task named"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "two tasks at work: which?");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("name one with --task"));
    assert!(child.wait().unwrap().success());
    let received = server.received();
    let has = |r: &harrow::brain::scripted::Received| r.body.to_string().contains("ONLY-FOR-T-002");
    assert!(received.iter().any(|r| r.task == "T-002" && r.role == "worker" && has(r)));
    assert!(!received.iter().any(|r| r.task == "T-001" && has(r)), "not another lane's");
    let events = support::strict_events(&dir);
    let steer = events.iter().find(|e| e["type"] == "operator_steer").unwrap();
    let start = events
        .iter()
        .find(|e| e["type"] == "context_reset" && e["payload"]["task_id"] == "T-002")
        .unwrap();
    assert_eq!(steer["lane"], start["lane"], "logged in T-002's lane");
}
