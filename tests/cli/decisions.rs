//! Operator decisions that land as meant, and resume that never loses accepted work or sends a
//! key to the wrong server — from the real binary, against scripted servers on 127.0.0.1 and
//! real git.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::git;

const WORKER_KEY: &str = "sk-worker-key-aaaaaaaaaaaa";
const EVALUATOR_KEY: &str = "sk-evaluator-key-bbbbbbbbbb";

fn only_session(tmp: &Path) -> (PathBuf, String) {
    let dir = tmp.join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    (dir, id)
}

fn ctl(tmp: &Path, id: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["control", id])
        .args(args)
        .env("HARROW_SESSIONS_DIR", tmp.join("sessions"))
        .output()
        .unwrap();
    assert!(out.status.success(), "control {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn events(dir: &Path) -> Vec<Value> {
    support::strict_events(dir)
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).map(|e| &e["payload"]).collect()
}

#[test]
fn resume_keeps_each_roles_endpoint_and_never_sends_a_key_to_another_roles_server() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let (_rw, worker) = serve(&json!({"worker": {"T-001": {"1": write_and_submit(1)}}}), true);
    let refused_once =
        json!({"http_status": 401, "times": 1, "tool_calls": accept()["tool_calls"]});
    let (_re, evaluator) = serve(&json!({"evaluator": {"T-001": {"1": [refused_once]}}}), true);

    let mut first = harrow_cmd(tmp.path(), &worker.base_url());
    first
        .env("HARROW_API_KEY", WORKER_KEY)
        .env("HARROW_EVALUATOR_API_KEY", EVALUATOR_KEY)
        .env("HARROW_EVALUATOR_BASE_URL", evaluator.base_url())
        .env("HARROW_EVALUATOR_MODEL", "scripted/evaluator");
    let out = headless_run(first, &plan, &repo).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let (dir, id) = only_session(tmp.path());
    ctl(tmp.path(), &id, &["retry-eval"]);

    // A new shell: only the worker's settings and key are set, as a person might have them.
    // The recorded evaluator is not theirs to trust blindly: the resume names it and the flag.
    let mut again = harrow_cmd(tmp.path(), &worker.base_url());
    again.env("HARROW_API_KEY", WORKER_KEY);
    let refused = again.args(["resume", &id, "--headless"]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&evaluator.base_url()) && said.contains("--trust-recorded"), "{said}");
    assert_eq!(evaluator.received().len(), 1, "nothing more reached the recorded evaluator");
    let mut again = harrow_cmd(tmp.path(), &worker.base_url());
    again.env("HARROW_API_KEY", WORKER_KEY);
    let resumed = again.args(["resume", &id, "--headless", "--trust-recorded"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&resumed.stderr));

    let judged = evaluator.received();
    assert_eq!(judged.len(), 2, "the retry went to the evaluator's own server");
    assert_eq!(judged[1].body["model"], "scripted/evaluator", "with its own model");
    assert!(
        worker.received().iter().all(|r| r.role == "worker"),
        "nothing for the evaluator went to the worker's server"
    );
    for r in &judged {
        assert!(
            !r.authorization.contains(WORKER_KEY),
            "the worker's key reached the evaluator's server"
        );
    }
    assert_eq!(judged[0].authorization, format!("Bearer {EVALUATOR_KEY}"));
    for r in worker.received() {
        assert_eq!(r.authorization, format!("Bearer {WORKER_KEY}"));
    }
    let log = events(&dir);
    let starts = of(&log, "session_start");
    assert_eq!(starts[0]["endpoints"]["evaluator"]["base_url"], evaluator.base_url());
}

/// T-001 is rejected once and accepted on its rework; T-002 is accepted at once.
fn two_task_life() -> Value {
    json!({
        "worker": {
            "T-001": {
                "1": write_and_submit(1),
                "2": [
                    {"tool_calls": [{"name": "edit_file", "arguments": {"path": "f1.txt", "old_string": "1\n", "new_string": "1\nchecked\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}
                ]
            },
            "T-002": {"1": write_and_submit(2)}
        },
        "evaluator": {"T-001": {"1": [loop_fixture::reject("weak_test")], "2": [accept()]}, "T-002": {"1": [accept()]}}
    })
}

/// `harrow run --headless` of the two-task plan in `tmp`, with a validator on every case.
fn validated_run(tmp: &Path, base_url: &str) -> Command {
    let config = tmp.join("harrow.toml");
    std::fs::write(&config, "[[validators]]\nname = \"exists\"\ncommand = \"test -f f1.txt\"\n")
        .unwrap();
    let (plan, repo) = (tmp.join("plan"), tmp.join("repo"));
    let mut cmd = harrow_cmd(tmp, base_url);
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    cmd.arg("--config").arg(config);
    cmd
}

#[test]
fn a_kill_at_every_event_boundary_of_a_tasks_life_loses_no_accepted_work() {
    let script = two_task_life();
    let reference = {
        let tmp = tempfile::tempdir().unwrap();
        repo_and_plan(tmp.path(), 2);
        let (_rt, server) = serve(&script, true);
        let out = validated_run(tmp.path(), &server.base_url()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        events(&only_session(tmp.path()).0)
    };
    let kinds: Vec<&str> = reference.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // Every boundary up to T-001's commit and a little past it, where T-002 begins.
    let last = kinds.iter().position(|k| *k == "commit").unwrap() + 4;
    for k in 1..=last {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, _) = repo_and_plan(tmp.path(), 2);
        let (_rt, server) = serve(&script, true);
        let crashed = validated_run(tmp.path(), &server.base_url())
            .env("HARROW_CRASH_AFTER_EVENTS", k.to_string())
            .output()
            .unwrap();
        assert!(!crashed.status.success(), "k={k}: the run should have died after event {k}");
        let (dir, id) = only_session(tmp.path());
        let before = events(&dir);
        let accepted_t1 = before.iter().any(|e| {
            e["type"] == "evaluator_verdict"
                && e["payload"]["task_id"] == "T-001"
                && e["payload"]["verdict"] == "accept"
        });
        let asked_before = server.received().len();
        let mut resume = harrow_cmd(tmp.path(), &server.base_url());
        resume.args(["resume", &id, "--headless"]);
        resume.arg("--config").arg(tmp.path().join("harrow.toml"));
        let out = resume.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "k={k} (after {}): {stdout}\n{}",
            kinds[k - 1],
            String::from_utf8_lossy(&out.stderr)
        );
        let log = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
        assert_eq!(
            log.lines().collect::<Vec<_>>(),
            ["T-002: Write file 2", "T-001: Write file 1", "init"],
            "k={k} (after {}): every task committed exactly once",
            kinds[k - 1]
        );
        let shown = git(&repo, &["show", &format!("session/{id}~1:f1.txt")]);
        assert_eq!(shown, "1\nchecked\n", "k={k}: T-001's commit holds the accepted work");
        if accepted_t1 {
            let redone = server.received()[asked_before..]
                .iter()
                .any(|r| r.role == "worker" && r.task == "T-001");
            assert!(
                !redone,
                "k={k} (after {}): an accepted task went back to the worker",
                kinds[k - 1]
            );
        }
    }
}

/// A two-task run whose T-001 is rejected at a cap of one review, so it fails; the script
/// also holds what a rework and T-002 would be answered.
fn capped(tmp: &Path) -> (PathBuf, PathBuf, String, ScriptedPair) {
    let (repo, plan) = repo_and_plan(tmp, 2);
    let script = two_task_life();
    let pair = serve(&script, true);
    let cmd = harrow_cmd(tmp, &pair.1.base_url());
    let out = headless_run(cmd, &plan, &repo).args(["--max-attempts", "1"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("T-001 failed: evaluator_cap"), "{stdout}");
    let (dir, id) = only_session(tmp);
    // The failure names the attempt it ended on, as every other state change does.
    let events = support::strict_events(&dir);
    let failed = events
        .iter()
        .find(|e| e["type"] == "task_state" && e["payload"]["to"] == "failed")
        .unwrap();
    assert_eq!(failed["payload"]["attempt"], 1, "{failed}");
    let record = events.iter().find(|e| e["type"] == "task_failed").unwrap();
    assert_eq!(record["payload"]["attempt"], 1, "{record}");
    (repo, dir, id, pair)
}

type ScriptedPair = (tokio::runtime::Runtime, harrow::brain::scripted::ScriptedServer);

fn resume(tmp: &Path, id: &str, server: &harrow::brain::scripted::ScriptedServer) -> Output {
    harrow_cmd(tmp, &server.base_url()).args(["resume", id, "--headless"]).output().unwrap()
}

fn task_commits(repo: &Path, id: &str) -> Vec<String> {
    git(repo, &["log", "--format=%s", &format!("session/{id}")])
        .lines()
        .filter(|l| l.starts_with("T-"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_task_failed_at_the_cap_waits_for_a_decision_and_is_never_worked_past_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, dir, id, (_rt, server)) = capped(tmp.path());
    let asked = server.received().len();
    let out = resume(tmp.path(), &id, &server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("T-001 failed at the attempt cap; decide with `harrow control`"),
        "{stdout}"
    );
    assert_eq!(server.received().len(), asked, "nothing was asked of any model");
    assert!(task_commits(&repo, &id).is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.join("workspace/f1.txt")).unwrap(),
        "1\n",
        "its work is kept for the decision"
    );
}

#[test]
fn approve_force_accept_and_reject_of_a_task_failed_at_the_cap_land_as_decided() {
    for (op, extra) in
        [("approve", None), ("force-accept", None), ("reject", Some("Append the line 'checked'."))]
    {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, dir, id, (_rt, server)) = capped(tmp.path());
        let mut args = vec![op, "--task", "T-001", "--reason", "decided by a person"];
        if let Some(text) = extra {
            args.extend(["--text", text]);
        }
        ctl(tmp.path(), &id, &args);
        let asked = server.received().len();
        let out = resume(tmp.path(), &id, &server);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{op}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            task_commits(&repo, &id),
            ["T-002: Write file 2", "T-001: Write file 1"],
            "{op}: each committed once"
        );
        let later: Vec<_> =
            server.received()[asked..].iter().filter(|r| r.task == "T-001").cloned().collect();
        let f1 = git(&repo, &["show", &format!("session/{id}~1:f1.txt")]);
        let log = events(&dir);
        let done =
            of(&log, "task_done").into_iter().find(|d| d["task_id"] == "T-001").unwrap().clone();
        if op == "reject" {
            assert_eq!(later.iter().filter(|r| r.role == "worker").count(), 2, "one more attempt");
            let prompt = later[0].body["messages"][1]["content"].as_str().unwrap();
            assert!(
                prompt.contains("Append the line 'checked'."),
                "the guidance reaches it: {prompt}"
            );
            assert_eq!(f1, "1\nchecked\n");
            assert!(of(&log, "operator_action").iter().any(|a| a["action"] == "grant_attempt"));
            assert!(done["by_operator"].is_null(), "the evaluator accepted the extra attempt");
        } else {
            assert!(later.is_empty(), "{op}: nothing was asked again about T-001");
            assert_eq!(f1, "1\n", "{op}: the work as it stood was committed");
            assert_eq!(done["by_operator"], true);
            assert_eq!(done["below_bar"], op == "force-accept");
        }
        // `stats` reads the decision off the real log as an override of the evaluator's
        // reject (another attempt asked for by the operator is none).
        let stats = harrow_cmd(tmp.path(), &server.base_url())
            .args(["stats", "--json", "--dir"])
            .arg(tmp.path().join("sessions"))
            .output()
            .unwrap();
        let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
        let o = &stats["total"]["overrides"];
        let expected = match op {
            "approve" => [1, 0, 0],
            "force-accept" => [0, 0, 1],
            _ => [0, 0, 0],
        };
        assert_eq!(
            [&o["approved_after_reject"], &o["rejected_after_accept"], &o["force_accepted"]],
            expected.map(Value::from).each_ref(),
            "{op}: {o}"
        );
    }
}

#[test]
fn skipping_or_failing_a_held_task_sets_its_work_aside_and_the_next_task_starts_clean() {
    for op in ["skip", "fail"] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = repo_and_plan(tmp.path(), 2);
        let script = loop_fixture::first_of_two_held();
        let (_rt, server) = serve(&script, true);
        // The dead evaluator is tried four times; its gaps need not be the default seconds.
        std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
        std::fs::write(tmp.path().join("harrow/config.toml"), "[models]\nretry_base_ms = 50\n")
            .unwrap();
        let mut held = harrow_cmd(tmp.path(), &server.base_url());
        held.env("HARROW_EVALUATOR_BASE_URL", "http://127.0.0.1:9/v1");
        let out = headless_run(held, &plan, &repo).arg("--no-preflight").output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let (dir, id) = only_session(tmp.path());
        ctl(tmp.path(), &id, &[op, "--task", "T-001", "--reason", "not now"]);
        let mut again = harrow_cmd(tmp.path(), &server.base_url());
        again.env("HARROW_EVALUATOR_BASE_URL", server.base_url());
        let out = again.args(["resume", &id, "--headless"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let aside = git(
            &repo,
            &[
                "show",
                &format!(
                    "refs/harrow/{id}/{}/T-001:f1.txt",
                    if op == "skip" { "skipped" } else { "failed" }
                ),
            ],
        );
        assert_eq!(aside, "1\n", "{op}: the work is kept on its side ref");
        if op == "skip" {
            assert!(out.status.success(), "{stdout}");
            assert_eq!(task_commits(&repo, &id), ["T-002: Write file 2"]);
            let files = git(&repo, &["ls-tree", "--name-only", &format!("session/{id}")]);
            assert!(
                !files.contains("f1.txt"),
                "the skipped task's work is not in the next task's commit: {files}"
            );
        } else {
            assert_eq!(out.status.code(), Some(1), "{stdout}");
            assert!(stdout.contains("■ stopped: operator_fail"), "{stdout}");
            assert!(
                !dir.join("workspace/f1.txt").exists(),
                "the worktree is back at the last commit"
            );
            let mut later = harrow_cmd(tmp.path(), &server.base_url());
            later.env("HARROW_EVALUATOR_BASE_URL", server.base_url());
            let out = later.args(["resume", &id, "--headless"]).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(1), "{stdout}");
            assert!(
                stdout.contains("T-001 was failed by the operator"),
                "a failed task is left failed: {stdout}"
            );
            assert!(task_commits(&repo, &id).is_empty(), "and nothing runs past it");
        }
    }
}

#[test]
fn decisions_sent_during_a_rework_are_applied_or_refused_at_the_next_boundary_never_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    let mut script = two_task_life();
    script["worker"]["T-001"]["2"][0]["delay_ms"] = json!(1500);
    script["worker"]["T-003"] = json!({"1": write_and_submit(3)});
    script["evaluator"]["T-003"] = json!({"1": [accept()]});
    let (_rt, server) = serve(&script, false);
    let child = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let dir = loop {
        let found = tmp.path().join("sessions").read_dir().ok().and_then(|mut d| d.next());
        if let Some(Ok(entry)) = found {
            let text =
                std::fs::read_to_string(entry.path().join("events.jsonl")).unwrap_or_default();
            if text.contains("\"to\":\"rework\"") {
                break entry.path();
            }
        }
        assert!(std::time::Instant::now() < deadline, "T-001 never went into rework");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    ctl(tmp.path(), &id, &["approve", "--task", "T-001", "--reason", "too late for this"]);
    ctl(tmp.path(), &id, &["skip", "--task", "T-002", "--reason", "not needed"]);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let log = events(&dir);
    let actions = of(&log, "operator_action");
    let refused = actions.iter().find(|a| a["action"] == "refused").unwrap();
    assert_eq!(refused["task_id"], "T-001");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("approve cannot be applied to T-001 while it is done"),
        "{refused}"
    );
    assert!(actions.iter().any(|a| a["action"] == "skip" && a["task_id"] == "T-002"));
    assert_eq!(task_commits(&repo, &id), ["T-003: Write file 3", "T-001: Write file 1"]);
    assert!(server.received().iter().all(|r| r.task != "T-002"), "the skipped task never started");
}

/// Starts a one-task run in the background and waits until its log shows `marker`.
// The caller waits for the child it is handed.
#[allow(clippy::zombie_processes)]
fn started_until(
    tmp: &Path,
    script: &Value,
    marker: &str,
) -> (std::process::Child, PathBuf, String, ScriptedPair) {
    let (repo, plan) = repo_and_plan(tmp, 1);
    let pair = serve(script, false);
    let mut child = headless_run(harrow_cmd(tmp, &pair.1.base_url()), &plan, &repo)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found = tmp.join("sessions").read_dir().ok().and_then(|mut d| d.next());
        if let Some(Ok(entry)) = found {
            let text =
                std::fs::read_to_string(entry.path().join("events.jsonl")).unwrap_or_default();
            if text.contains(marker) {
                let id = entry.file_name().to_string_lossy().into_owned();
                return (child, entry.path(), id, pair);
            }
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("never saw {marker}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn fail_ends_the_task_at_work_at_once_and_kills_its_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({"worker": {"T-001": {"1": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 97; echo finished"}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}
    ]}}});
    let (child, dir, id, _server) = started_until(tmp.path(), &script, "\"tool\":\"bash\"");
    support::until("the tool's sleep starting", || support::sleepers("97") == 1);
    let out = ctl(tmp.path(), &id, &["fail", "--task", "T-001", "--reason", "wrong approach"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("acts on it at once"));
    // The tool sleeps 97 s: the run ending well before proves it was killed, not waited out.
    let out = support::ends_within(child, 60, "the run after `fail`");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(support::sleepers("97"), 0, "the tool's processes are gone");
    let log = events(&dir);
    let failed = of(&log, "task_failed");
    assert_eq!(failed[0]["reason"], "operator_fail");
    let result = of(&log, "tool_result").into_iter().find(|r| r["tool"] == "bash").unwrap().clone();
    assert!(result["output"].as_str().unwrap().contains("stopped by the operator"), "{result}");
    assert_eq!(of(&log, "stop")[0]["reason"], "operator_fail");
}

#[test]
fn stop_now_leaves_the_task_unfinished_and_resume_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut turns = write_and_submit(1);
    turns[1]["delay_ms"] = json!(60_000);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let (child, dir, id, (_rt, server)) =
        started_until(tmp.path(), &script, "\"tool\":\"write_file\"");
    support::until("the second worker call reaching the server", || {
        server.received().iter().filter(|r| r.role == "worker").count() == 2
    });
    ctl(tmp.path(), &id, &["stop", "--now", "--reason", "lunch"]);
    // The reply in flight is 60 s away: the run ending well before proves it was dropped.
    let out = support::ends_within(child, 40, "the run after `stop --now`");
    assert_eq!(out.status.code(), Some(1));
    let log = events(&dir);
    let stop = of(&log, "stop")[0].clone();
    assert_eq!(stop["reason"], "operator_stop");
    assert!(stop["error"].as_str().unwrap().contains("T-001 is unfinished"), "{stop}");
    assert!(of(&log, "task_failed").is_empty(), "stopped, not failed");
    // `show` says the task was cut short, not that it runs.
    let show = harrow_cmd(tmp.path(), "http://127.0.0.1:9").args(["show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    let row = shown.lines().find(|l| l.starts_with("T-001")).unwrap_or_default();
    assert!(row.contains("interrupted (running; restarts on resume)"), "{shown}");
    drop(server);
    let script = json!({"worker": {"T-001": {"1": write_and_submit(1)}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let (_rt2, again) = serve(&script, true);
    let out = harrow_cmd(tmp.path(), &again.base_url())
        .env("HARROW_EVALUATOR_BASE_URL", again.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn resume_takes_runs_flags_over_the_sessions_own_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _dir, id, (_rt, server)) = capped(tmp.path());
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless", "--max-attempts", "2", "--max-iterations", "8"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a higher cap lets T-001 try again: {stdout}");
    assert!(stdout.contains("T-001 started (attempt 2)"), "{stdout}");
    assert_eq!(task_commits(&repo, &id), ["T-002: Write file 2", "T-001: Write file 1"]);
}

/// Waits until the session's log holds an event of `kind`, or fails after a minute.
fn until_logged(dir: &Path, kind: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if dir.join("events.jsonl").exists() {
            let log = events(dir);
            if !of(&log, kind).is_empty() {
                return log;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no {kind} was logged");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_run_told_to_wait_keeps_a_held_task_waiting_and_goes_on_when_it_is_approved() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    // The evaluator refuses the key once, on T-001: held for a person.
    let script = loop_fixture::first_of_two_refused_once();
    let (_rt, server) = serve(&script, true);
    let held = harrow_cmd(tmp.path(), &server.base_url());
    let mut child = headless_run(held, &plan, &repo)
        .arg("--wait-for-operator")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let sessions = tmp.path().join("sessions");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_dir(&sessions).map_or(true, |mut d| d.next().is_none()) {
        assert!(std::time::Instant::now() < deadline, "no session was created");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (dir, id) = only_session(tmp.path());
    let log = until_logged(&dir, "operator_wait");
    assert_eq!(of(&log, "operator_wait")[0]["task_id"], "T-001");
    assert!(of(&log, "stop").is_empty(), "the run waits instead of stopping: {log:?}");
    // Still there to take the decision: a run that stopped instead would not land T-001 below.
    assert!(child.try_wait().unwrap().is_none(), "the process is still there, waiting");
    let sent = ctl(tmp.path(), &id, &["approve", "--task", "T-001", "--reason", "checked by hand"]);
    let said = String::from_utf8_lossy(&sent.stdout);
    assert!(said.contains("the run waits for this decision and applies it at once"), "{said}");
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let log = events(&dir);
    assert_eq!(of(&log, "session_start").len(), 1, "one run, never restarted");
    assert!(of(&log, "session_resume").is_empty());
    let done: Vec<&str> =
        of(&log, "task_done").iter().filter_map(|d| d["task_id"].as_str()).collect();
    assert_eq!(done, ["T-001", "T-002"]);
    assert_eq!(of(&log, "task_done")[0]["by_operator"], true);
    assert_eq!(of(&log, "stop").last().unwrap()["reason"], "all_done");
    assert_eq!(task_commits(&repo, &id), ["T-002: Write file 2", "T-001: Write file 1"]);
}

/// A headless run waiting for a person says, when quiet, which task waits and why — not
/// merely that it is still working.
#[test]
fn a_held_headless_runs_heartbeat_says_what_it_waits_for_and_why() {
    use std::io::BufRead as _;
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let script = loop_fixture::first_of_two_refused_once();
    let (_rt, server) = serve(&script, true);
    let (mut child, _dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &["--wait-for-operator"],
        std::process::Stdio::piped(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The heartbeat comes after ten quiet seconds; a minute is the limit of waiting for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let beat = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).expect("no heartbeat within a minute");
        if line.contains("for your decision") {
            break line;
        }
    };
    assert!(beat.contains("T-001 waits for you:"), "{beat}");
    assert!(beat.contains("401") || beat.contains("key"), "it says why: {beat}");
    // The session list says why too, not only that the task waits.
    let listed =
        harrow_cmd(tmp.path(), "http://127.0.0.1:9").args(["sessions", "--json"]).output().unwrap();
    let rows: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let why = rows[0]["held_reason"].as_str().unwrap_or_default().to_owned();
    assert!(
        why.contains("waits for the operator:") && (why.contains("401") || why.contains("key")),
        "{rows}"
    );
    ctl(tmp.path(), &id, &["approve", "--task", "T-001", "--reason", "checked by hand"]);
    let status = child.0.wait().unwrap();
    assert!(status.success());
}
