//! The operator in a run with lanes: a decision on a task held in its lane lands there and
//! frees what depends on it; pause stops new starts in every lane and `step` starts one — by
//! the real binary, against the scripted model server on 127.0.0.1, with real git.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use loop_fixture::{
    accept, case, depends, harrow_cmd, reject, repo_and_plan, serve, write_and_submit,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::git;

fn session(tmp: &Path) -> Option<(PathBuf, String)> {
    let dir = tmp.join("sessions").read_dir().ok()?.flatten().next()?.path();
    let id = dir.file_name()?.to_string_lossy().into_owned();
    Some((dir, id))
}

fn ctl(tmp: &Path, base_url: &str, id: &str, args: &[&str]) {
    let out = harrow_cmd(tmp, base_url).args(["control", id]).args(args).output().unwrap();
    assert!(out.status.success(), "control {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default()
}

fn task_commits(repo: &Path, id: &str) -> Vec<String> {
    git(repo, &["log", "--reverse", "--format=%s", &format!("session/{id}")])
        .lines()
        .filter(|l| l.starts_with("T-"))
        .map(|l| l.split(':').next().unwrap().to_owned())
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A task's one attempt that takes a while: its file written after 1.5 s, then its case.
fn slow_write_and_submit(n: usize) -> Value {
    json!([
        {"delay_ms": 1500, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
    ])
}

/// `harrow run` of `plan` in two lanes, headless, its output captured.
fn two_lanes(tmp: &Path, url: &str, plan: &Path, repo: &Path) -> std::process::Child {
    harrow_cmd(tmp, url)
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap()])
        .args(["--headless", "--lanes", "2", "--no-validators"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// T-001 and T-002 are independent, T-003 needs T-001. T-001 is rejected once and, at a cap
/// of one review, waits for a decision in its lane; a second attempt would be accepted.
fn held_in_a_lane() -> Value {
    json!({
        "worker": {
            "T-001": {
                "1": write_and_submit(1),
                "2": [
                    {"tool_calls": [{"name": "edit_file", "arguments": {"path": "f1.txt", "old_string": "1\n", "new_string": "1\nchecked\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
                ]
            },
            "T-002": {"*": write_and_submit(2)},
            "T-003": {"*": write_and_submit(3)}
        },
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept()]}, "*": {"*": [accept()]}}
    })
}

/// Each decision on a task held at the cap in its lane, then `resume`: approve and
/// force-accept land its work as it stood (nothing asked of T-001 again) and T-003 starts on
/// top of it — told, after a force-accept, that it builds on work below the bar; reject gives
/// it one more attempt in the same worktree with the guidance, then it lands; skip sets its
/// work aside and T-003 is blocked. T-002, in the other lane, landed before any decision.
#[test]
fn a_decision_on_a_task_held_in_its_lane_lands_there_and_frees_its_dependent() {
    for op in ["approve", "force-accept", "reject", "skip"] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = repo_and_plan(tmp.path(), 3);
        for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[T-001]")] {
            depends(&plan, n, deps);
        }
        let (_rt, server) = serve(&held_in_a_lane(), true);
        let out = harrow_cmd(tmp.path(), &server.base_url())
            .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap()])
            .args(["--headless", "--lanes", "2", "--no-validators", "--max-attempts", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{op}: {}", stdout(&out));
        assert!(stdout(&out).contains("T-001 failed: evaluator_cap"), "{op}: {}", stdout(&out));
        let (dir, id) = session(tmp.path()).unwrap();
        assert_eq!(task_commits(&repo, &id), ["T-002"], "{op}: the other lane landed");

        let mut args = vec![op, "--task", "T-001", "--reason", "decided by a person"];
        if op == "reject" {
            args.extend(["--text", "Append the line 'checked'."]);
        }
        ctl(tmp.path(), &server.base_url(), &id, &args);
        let asked = server.received().len();
        let out = harrow_cmd(tmp.path(), &server.base_url())
            .args(["resume", &id, "--headless"])
            .output()
            .unwrap();
        let text = stdout(&out);
        let later = &server.received()[asked..];
        let t1_asked = later.iter().filter(|r| r.task == "T-001" && r.role == "worker").count();
        if op == "skip" {
            assert_eq!(out.status.code(), Some(1), "{op}: {text}");
            assert!(text.contains("blocked"), "{op}: T-003 is reported blocked: {text}");
            assert_eq!(task_commits(&repo, &id), ["T-002"]);
            let aside = git(&repo, &["show", &format!("refs/harrow/{id}/skipped/T-001:f1.txt")]);
            assert_eq!(aside, "1\n", "the skipped work is kept on its ref");
            assert!(!later.iter().any(|r| r.task == "T-003"), "T-003 never started");
            continue;
        }
        assert!(out.status.success(), "{op}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(task_commits(&repo, &id), ["T-002", "T-001", "T-003"], "{op}");
        let f1 = git(&repo, &["show", &format!("session/{id}:f1.txt")]);
        let t3_prompt = later
            .iter()
            .find(|r| r.task == "T-003" && r.role == "worker")
            .map(|r| r.body["messages"][1]["content"].as_str().unwrap_or_default().to_owned())
            .unwrap();
        if op == "reject" {
            assert_eq!(t1_asked, 2, "one more attempt, in the same conversation");
            let prompt = later.iter().find(|r| r.task == "T-001").unwrap().body.to_string();
            assert!(prompt.contains("Append the line 'checked'."), "the guidance reaches it");
            assert_eq!(f1, "1\nchecked\n");
        } else {
            assert_eq!(t1_asked, 0, "{op}: nothing asked of T-001 again");
            assert_eq!(f1, "1\n", "{op}: its work as it stood landed");
        }
        assert_eq!(
            t3_prompt.contains("accepted below the quality bar"),
            op == "force-accept",
            "{op}: T-003 is told when it builds on work below the bar: {t3_prompt}"
        );
        let lanes = dir.join("lanes");
        assert!(lanes.read_dir().map_or(true, |mut d| d.next().is_none()), "{op}: lanes/ empty");
    }
}

/// Pause while two lanes work: both tasks finish and land, nothing new starts and the run
/// says it is paused; `step` starts exactly one task (the first ready in plan order) and
/// pauses again; `resume` works the rest.
#[test]
fn pause_stops_new_starts_in_every_lane_and_step_starts_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 4);
    for n in 1..=4 {
        depends(&plan, n, "[]");
    }
    let script = json!({
        "worker": {"T-001": {"*": slow_write_and_submit(1)}, "T-002": {"*": slow_write_and_submit(2)}, "T-003": {"*": write_and_submit(3)}, "T-004": {"*": write_and_submit(4)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let url = server.base_url();
    let child = two_lanes(tmp.path(), &url, &plan, &repo);
    let until = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    until("the session", &|| session(tmp.path()).is_some());
    let (dir, id) = session(tmp.path()).unwrap();
    let running = |t: &str| {
        log(&dir).lines().any(|l| {
            l.contains("\"type\":\"task_state\"")
                && l.contains(&format!("\"task_id\":\"{t}\""))
                && l.contains("\"to\":\"running\"")
        })
    };
    until("two lanes at work", &|| running("T-001") && running("T-002"));
    ctl(tmp.path(), &url, &id, &["pause"]);
    let committed = |t: &str| {
        log(&dir).contains(&format!("\"type\":\"commit\",\"payload\":{{\"task_id\":\"{t}\""))
    };
    until("both tasks at work to land", &|| committed("T-001") && committed("T-002"));
    until("the paused checkpoint", &|| {
        std::fs::read_to_string(dir.join("checkpoint.json")).is_ok_and(|c| c.contains("\"paused\""))
    });
    ctl(tmp.path(), &url, &id, &["step"]);
    until("the step's task to land", &|| committed("T-003"));
    ctl(tmp.path(), &url, &id, &["resume"]);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    // In the log's own order: nothing new started while paused, and a step started one task.
    let text = log(&dir);
    let started = |t: &str| {
        support::first_line(
            &text,
            &["\"type\":\"task_state\"", &format!("\"task_id\":\"{t}\""), "\"to\":\"running\""],
        )
    };
    let action = |what: &str| {
        support::first_line(
            &text,
            &["\"type\":\"operator_action\"", &format!("\"action\":\"{what}\"")],
        )
    };
    assert!(started("T-003") > action("step"), "nothing new starts while paused");
    assert!(started("T-004") > action("resume"), "a step starts one task, then the run pauses");
    assert!(stdout(&out).contains("■ stopped: all_done"), "{}", stdout(&out));
    let mut landed = task_commits(&repo, &id);
    assert_eq!(landed.pop().as_deref(), Some("T-004"));
    assert_eq!(landed.pop().as_deref(), Some("T-003"));
}

/// A task force-accepted in its lane whose work no longer combines with what landed
/// meanwhile is held, never landed half-way, and the hold says why in the run's own words —
/// the files that conflicted — not in the words meant for its worker.
#[test]
fn a_force_accept_that_cannot_land_holds_the_task_naming_the_conflicting_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    for (n, deps) in [(1, "[]"), (2, "[]")] {
        depends(&plan, n, deps);
    }
    let readme = |text: &str, n: usize| {
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "README.md", "content": text}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
        ])
    };
    let script = json!({
        "worker": {"T-001": {"*": readme("# one\n", 1)}, "T-002": {"*": readme("# two\n", 2)}},
        "evaluator": {"T-001": {"*": [reject("weak_test")]}, "*": {"*": [loop_fixture::accept_quoting("README.md", "# two")]}}
    });
    let (_rt, server) = serve(&script, true);
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap()])
        .args(["--headless", "--lanes", "2", "--no-validators", "--max-attempts", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let (_dir, id) = session(tmp.path()).unwrap();
    assert_eq!(task_commits(&repo, &id), ["T-002"], "the other lane landed");
    ctl(
        tmp.path(),
        &server.base_url(),
        &id,
        &["force-accept", "--task", "T-001", "--reason", "ok"],
    );
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("its accepted work was not landed: it conflicted with work that landed meanwhile in README.md"),
        "{text}"
    );
    assert!(
        !text.contains("Your change was accepted"),
        "the worker's words are not the hold's: {text}"
    );
    assert!(!text.contains("L0 "), "work between lanes is marked with no lane: {text}");
    assert_eq!(task_commits(&repo, &id), ["T-002"], "nothing landed half-way");
}

/// A decision about a task that never started, while two lanes work: it is taken in a lane
/// opened for that task (a worktree cut and released at once), not in the session's own
/// worktree. `skip` settles it, the tasks at work land, and the run ends done with nothing of
/// the skipped task committed or asked of the model; `fail` on another never-started task ends
/// the run on that failure once the lanes at work are back.
#[test]
fn a_decision_on_a_task_that_never_started_is_taken_in_a_lane_of_its_own() {
    for op in ["skip", "fail"] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = repo_and_plan(tmp.path(), 3);
        for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[T-001]")] {
            depends(&plan, n, deps);
        }
        let script = json!({
            "worker": {"T-001": {"*": slow_write_and_submit(1)}, "T-002": {"*": slow_write_and_submit(2)}, "T-003": {"*": write_and_submit(3)}},
            "evaluator": {"*": {"*": [accept()]}}
        });
        let (_rt, server) = serve(&script, false);
        let url = server.base_url();
        let child = two_lanes(tmp.path(), &url, &plan, &repo);
        let deadline = Instant::now() + Duration::from_secs(30);
        let (dir, id) = loop {
            if let Some((dir, id)) = session(tmp.path())
                && log(&dir).matches("\"to\":\"running\"").count() >= 2
            {
                break (dir, id);
            }
            assert!(Instant::now() < deadline, "{op}: two lanes never started");
            std::thread::sleep(Duration::from_millis(20));
        };
        ctl(tmp.path(), &url, &id, &[op, "--task", "T-003", "--reason", "not in this run"]);
        let out = child.wait_with_output().unwrap();
        let text = stdout(&out);
        let events = log(&dir);
        assert!(!events.contains("\"action\":\"refused\""), "{op}: {events}");
        assert!(server.received().iter().all(|r| r.task != "T-003"), "{op}: T-003 never worked");
        let mut landed = task_commits(&repo, &id);
        landed.sort();
        assert_eq!(landed, ["T-001", "T-002"], "{op}: the lanes at work landed");
        if op == "skip" {
            assert!(out.status.success(), "{op}: {text}");
            assert!(text.contains("■ stopped: all_done"), "{op}: {text}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{op}: {text}");
            assert!(text.contains("■ stopped: operator_fail"), "{op}: {text}");
        }
        let status: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("task-status.json")).unwrap())
                .unwrap();
        let word = if op == "skip" { "skipped" } else { "failed" };
        assert_eq!(status["T-003"], word, "{op}: {status}");
    }
}
