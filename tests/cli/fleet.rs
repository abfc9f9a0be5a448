//! The fleet from a script's side: `harrow sessions --follow --json` while real runs (the
//! binary, against the scripted model server on 127.0.0.1) are held, finish, are killed, and
//! write into a second sessions folder — each change one strictly checked JSON line, and the
//! `[notify] command` run once per run that comes to need a person or ends.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use loop_fixture::{accept, harrow_cmd, repo_and_plan, serve};
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The keys of a `--follow --json` line and what each must be.
fn check_line(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let obj = v.as_object().unwrap_or_else(|| panic!("not an object: {line}"));
    let kinds: &[(&str, &[&str])] = &[
        ("ts", &["string"]),
        ("from", &["string", "null"]),
        ("id", &["string"]),
        ("dir", &["string"]),
        ("origin", &["string"]),
        ("feature", &["string", "null"]),
        ("prep", &["bool"]),
        ("state", &["string"]),
        ("status", &["string"]),
        ("held_task", &["string", "null"]),
        ("held_reason", &["string", "null"]),
        ("tasks_done", &["number"]),
        ("tasks_total", &["number"]),
        ("at_work", &["array"]),
        ("tokens", &["number"]),
        ("cost", &["number"]),
        ("started_at", &["string", "null"]),
        ("last_event_at", &["string", "null"]),
        ("repo", &["string", "null"]),
        ("host", &["string", "null"]),
        ("pull_request", &["string", "null"]),
        ("unreadable_lines", &["number"]),
        ("archived", &["bool"]),
    ];
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    for key in obj.keys() {
        assert!(kinds.iter().any(|(k, _)| k == key), "unknown key {key}: {line}");
    }
    for (key, allowed) in kinds {
        let got = obj.get(*key).unwrap_or_else(|| panic!("no {key}: {line}"));
        assert!(allowed.contains(&kind(got)), "{key} is {}: {line}", kind(got));
    }
    let states =
        ["held", "crashed", "failed", "silent", "running", "paused", "stopped", "done", "empty"];
    assert!(states.contains(&v["state"].as_str().unwrap()), "{line}");
    assert_eq!(v["state"], v["status"], "the old key says what the row's does: {line}");
    assert!(!line.contains('\u{1b}'), "no escape byte reaches a script: {line}");
    v
}

fn wait_for(lines: &Arc<Mutex<Vec<String>>>, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = lines.lock().unwrap().iter().map(|l| check_line(l)).find(|v| ok(v)) {
            return v;
        }
        assert!(Instant::now() < deadline, "no line {what}: {:#?}", lines.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A one-task plan in `root/<name>` whose worker takes `delay_ms` before it writes.
fn plan_in(root: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    repo_and_plan(&dir, 1)
}

#[test]
fn sessions_follow_reports_every_change_as_a_strict_json_line_and_notifies_once() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other-machine");
    let notified = tmp.path().join("notified.jsonl");
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    std::fs::write(
        tmp.path().join("harrow/config.toml"),
        format!(
            "[sessions]\ndirs = [{:?}]\n\n[notify]\ncommand = [\"sh\", \"-c\", \"cat >> {}\"]\n\n[models]\nretry_base_ms = 50\n",
            other.display().to_string(),
            notified.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("sessions")).unwrap();
    let script = json!({
        "worker": {"T-001": {"*": [
            {"delay_ms": 1500, "tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}
        ]}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let url = server.base_url();
    let mut follower = support::Reaped(
        harrow_cmd(tmp.path(), &url)
            .args(["sessions", "--follow", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let lines = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let lines = Arc::clone(&lines);
        let out = follower.0.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                lines.lock().unwrap().push(line.unwrap());
            }
        })
    };

    // A run held for the operator: its evaluator cannot be reached.
    let (repo, plan) = plan_in(tmp.path(), "held");
    let held = harrow_cmd(tmp.path(), &url)
        .env("HARROW_EVALUATOR_BASE_URL", "http://127.0.0.1:9/v1")
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--no-validators", "--no-preflight"])
        .output()
        .unwrap();
    assert_eq!(held.status.code(), Some(1), "{}", String::from_utf8_lossy(&held.stdout));
    let v = wait_for(&lines, "held", |v| v["state"] == "held");
    let held_id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(v["held_task"], "T-001");
    assert!(v["held_reason"].as_str().is_some_and(|r| r.contains("T-001")), "{v}");
    let host = v["host"].as_str().unwrap_or_default().to_owned();
    assert!(!host.is_empty(), "the run recorded its machine: {v}");

    // A run in the second folder, written by another process, that finishes.
    let (repo, plan) = plan_in(tmp.path(), "done");
    let done = harrow_cmd(tmp.path(), &url)
        .env("HARROW_SESSIONS_DIR", &other)
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--no-validators", "--no-preflight"])
        .output()
        .unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stdout));
    let v = wait_for(&lines, "done in the other folder", |v| {
        v["state"] == "done" && v["dir"].as_str().unwrap().starts_with(other.to_str().unwrap())
    });
    assert_eq!(v["tasks_done"], 1);
    let done_id = v["id"].as_str().unwrap().to_owned();

    // A run killed with -9 while it works.
    let (repo, plan) = plan_in(tmp.path(), "killed");
    let mut killed = support::Reaped(
        harrow_cmd(tmp.path(), &url)
            .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
            .args(["--no-validators", "--no-preflight"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // At work: its start logged (a kill before that leaves a folder with no events, `empty`).
    let running = wait_for(&lines, "running", |v| {
        v["state"] == "running"
            && !v["started_at"].is_null()
            && v["id"] != held_id.as_str()
            && v["id"] != done_id.as_str()
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(killed.0.id()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    killed.0.wait().unwrap();
    let crashed = wait_for(&lines, "crashed", |v| v["state"] == "crashed");
    assert_eq!(crashed["id"], running["id"]);
    assert_eq!(crashed["from"], "running");

    // The notify program runs just after its line is written: give it its moment.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&notified).unwrap_or_default().contains("\"crashed\"")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(follower);
    reader.join().unwrap();
    let calls = std::fs::read_to_string(&notified).unwrap_or_default();
    let calls: Vec<Value> = calls.lines().map(check_line).collect();
    let count = |state: &str| calls.iter().filter(|c| c["state"] == state).count();
    assert_eq!(count("held"), 1, "the hold is told once: {calls:#?}");
    assert_eq!(count("done"), 1, "{calls:#?}");
    assert_eq!(count("crashed"), 1, "{calls:#?}");
    assert!(calls.iter().all(|c| c["state"] != "running"), "running calls no one: {calls:#?}");
}
