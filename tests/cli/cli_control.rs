//! Operator control from the real binary: pause at a boundary, step, a note that reaches the
//! next attempt, an approval of a held task, and the refusals.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use harrow::brain::scripted::ScriptedServer;
use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::git;

fn harrow(tmp: &Path, base_url: &str, evaluator_url: &str) -> Command {
    let mut c = harrow_cmd(tmp, base_url);
    c.env("HARROW_EVALUATOR_BASE_URL", evaluator_url);
    c
}

fn ctl(tmp: &Path, id: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["control", id])
        .args(args)
        .env("HARROW_SESSIONS_DIR", tmp.join("sessions"))
        .output()
        .unwrap()
}

fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// The session's log, once it has passed the strict reading.
fn log(dir: &Path) -> String {
    if dir.join("events.jsonl").exists() {
        support::strict_events(dir);
    }
    std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default()
}

#[test]
fn pause_step_note_and_resume_at_task_boundaries() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    let mut slow = write_and_submit(1);
    slow[1]["delay_ms"] = json!(1500);
    let script = json!({"worker": {"T-001": {"1": slow}, "T-002": {"1": write_and_submit(2)}, "T-003": {"1": write_and_submit(3)}}, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) = serve(&script, false);
    let child =
        headless_run(harrow(tmp.path(), &server.base_url(), &server.base_url()), &plan, &repo)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    assert!(wait_until(Duration::from_secs(60), || tmp
        .path()
        .join("sessions")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some())));
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(wait_until(Duration::from_secs(60), || log(&dir).contains("\"tool\":\"write_file\"")));

    let sent = ctl(tmp.path(), &id, &["pause"]);
    assert!(
        String::from_utf8_lossy(&sent.stdout)
            .contains("the run applies it at the next task boundary")
    );
    // The pause is logged as the run reads it, and applied at the boundary: T-001 finishes,
    // and T-002 does not start.
    assert!(
        wait_until(Duration::from_secs(60), || {
            let text = log(&dir);
            text.contains("\"action\":\"pause\"")
                && text.contains("\"type\":\"commit\",\"payload\":{\"task_id\":\"T-001\"")
        }),
        "the pause is applied after T-001"
    );
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read(dir.join("checkpoint.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|c| c["status"] == "paused")
        }),
        "the checkpoint says paused"
    );

    assert!(
        ctl(tmp.path(), &id, &["note", "--task", "T-003", "--text", "Prefer tabs."])
            .status
            .success()
    );
    assert!(ctl(tmp.path(), &id, &["step"]).status.success());
    assert!(
        wait_until(Duration::from_secs(60), || log(&dir)
            .contains("\"type\":\"commit\",\"payload\":{\"task_id\":\"T-002\"")),
        "one step runs T-002"
    );
    assert!(
        wait_until(Duration::from_secs(60), || log(&dir)
            .contains("\"action\":\"pause\",\"reason\":\"the step's task is done\"")),
        "and says so in the log, so the console shows the run paused, not live"
    );
    assert!(ctl(tmp.path(), &id, &["resume"]).status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("operator: pause")
            && stdout.contains("operator: step")
            && stdout.contains("■ stopped: all_done"),
        "{stdout}"
    );
    // In the log's own order: paused at the boundary, T-002 started only by the step, and
    // T-003 only once the run was resumed.
    let text = log(&dir);
    let at = |needles: &[&str]| support::first_line(&text, needles);
    let running = |task: &str| {
        at(&["\"type\":\"task_state\"", &format!("\"task_id\":\"{task}\""), "\"to\":\"running\""])
    };
    let action =
        |what: &str| at(&["\"type\":\"operator_action\"", &format!("\"action\":\"{what}\"")]);
    assert!(running("T-002") > action("step"), "paused at the boundary, T-002 not started");
    assert!(running("T-003") > action("resume"), "after the step it paused again");
    let t3 = server.received().into_iter().find(|r| r.task == "T-003").unwrap();
    assert!(
        t3.body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("## A note from the operator\n\nPrefer tabs."),
        "the note reaches T-003's first prompt"
    );
}

/// An evaluator endpoint nothing listens on.
const DEAD: &str = "http://127.0.0.1:9/v1";

/// A one-task run whose evaluator cannot be reached, so the task is held for the operator.
/// Returns the repository, the session folder and its id.
fn held(tmp: &Path, server: &ScriptedServer) -> (PathBuf, PathBuf, String) {
    let (repo, plan) = repo_and_plan(tmp, 1);
    // The dead evaluator is tried four times; its gaps need not be the default seconds.
    std::fs::create_dir_all(tmp.join("harrow")).unwrap();
    std::fs::write(tmp.join("harrow/config.toml"), "[models]\nretry_base_ms = 50\n").unwrap();
    let out = headless_run(harrow(tmp, &server.base_url(), DEAD), &plan, &repo)
        .arg("--no-preflight")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("⏸ T-001 waits for the operator"), "{stdout}");
    let dir = tmp.join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    (repo, dir, id)
}

#[test]
fn a_held_task_is_approved_by_the_operator_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({"worker": {"T-001": {"1": write_and_submit(1)}}});
    let (_rt, server) = serve(&script, true);
    let (repo, dir, id) = held(tmp.path(), &server);

    let no_reason = ctl(tmp.path(), &id, &["approve"]);
    assert_eq!(no_reason.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_reason.stderr).contains("approve needs --reason"));
    let sent = ctl(tmp.path(), &id, &["approve", "--reason", "I read the diff; it is right"]);
    assert!(
        String::from_utf8_lossy(&sent.stdout)
            .contains(&format!("it applies when the session resumes (`harrow resume {id}`)"))
    );

    let resumed = harrow(tmp.path(), &server.base_url(), DEAD)
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(
        stdout.contains("operator: approve I read the diff; it is right")
            && stdout.contains("✔ T-001 done, committed"),
        "{stdout}"
    );
    let text = log(&dir);
    assert!(text.contains("\"by_operator\":true"));
    assert_eq!(
        git(&repo, &["log", "--format=%s", &format!("session/{id}")])
            .lines()
            .filter(|l| l.starts_with("T-001"))
            .count(),
        1
    );

    let finished = ctl(tmp.path(), &id, &["pause"]);
    assert_eq!(finished.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&finished.stderr)
            .contains("is finished (done); there is nothing left to control")
    );
}

#[test]
fn retry_eval_asks_the_evaluator_again_about_a_held_tasks_work() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}},
        "evaluator": {"T-001": {"1": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let (_repo, dir, id) = held(tmp.path(), &server);

    let sent = ctl(tmp.path(), &id, &["retry-eval"]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));

    let resumed = harrow(tmp.path(), &server.base_url(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(
        stdout.contains("operator: retry_eval")
            && stdout.contains("verdict: accept — Meets the criterion.")
            && stdout.contains("✔ T-001 done, committed"),
        "{stdout}"
    );
    let text = log(&dir);
    assert!(!text.contains("\"by_operator\":true"), "the evaluator accepted, not the operator");
    let worker_calls = server.received().iter().filter(|r| r.role == "worker").count();
    assert_eq!(worker_calls, 2, "the worker was not asked again: its work was judged as it stood");
}
