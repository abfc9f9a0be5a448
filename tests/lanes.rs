//! Lanes: a graph plan's ready tasks worked at once, each in its own worktree, their accepted
//! work landed on the session branch one commit per task — by the real binary, against the
//! scripted model server on 127.0.0.1, with real git and real validators.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

#[path = "support/loop_fixture.rs"]
mod loop_fixture;
mod support;

use loop_fixture::{accept, case, harrow_cmd, repo_and_plan, serve};
use serde_json::{Value, json};
use std::path::Path;
use support::git;

/// Gives task `n` its `depends_on` list.
fn depends(plan: &Path, n: usize, deps: &str) {
    let file = plan.join(format!("T-00{n}-file.md"));
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replacen(
        "---\n## Description",
        &format!("depends_on: {deps}\n---\n## Description"),
        1,
    );
    std::fs::write(&file, text).unwrap();
}

/// `harrow run` with lanes, headless, on the plan and repository.
fn lanes_run(
    tmp: &Path,
    base_url: &str,
    plan: &Path,
    repo: &Path,
    lanes: &str,
) -> std::process::Command {
    let mut cmd = harrow_cmd(tmp, base_url);
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--lanes", lanes]);
    cmd
}

/// The session's events, strictly parsed.
fn events(tmp: &Path) -> (String, Vec<Value>) {
    let dir = tmp.join("sessions").read_dir().unwrap().flatten().next().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    (id, support::strict_events(&dir))
}

/// The position in the log of the first event of `kind` for `task` that passes `also`.
fn at(events: &[Value], kind: &str, task: &str, also: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(|e| e["type"] == kind && e["payload"]["task_id"] == task && also(e))
        .unwrap_or_else(|| panic!("no {kind} for {task}"))
}

/// Worker turns that write `file` with `content` (after `delay_ms`), then submit.
fn write(file: &str, content: &str, n: usize, delay_ms: u64) -> Value {
    json!([
        {"delay_ms": delay_ms, "tool_calls": [{"name": "write_file", "arguments": {"path": file, "content": content}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
    ])
}

/// Three independent tasks and one that depends on two of them, in three lanes: the three
/// run at once (each started before any is done), each event names its lane, the fourth
/// starts only after both it depends on landed, and the session branch has one commit per
/// task in the order they landed, holding every task's file.
#[test]
fn a_graph_plan_runs_in_three_lanes_and_lands_one_commit_per_task() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 4);
    for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[]"), (4, "[T-001, T-002]")] {
        depends(&plan, n, deps);
    }
    let worker: serde_json::Map<String, Value> = (1..=4)
        .map(|n| {
            (
                format!("T-00{n}"),
                json!({"*": write(&format!("f{n}.txt"), &format!("{n}\n"), n, 600)}),
            )
        })
        .collect();
    let script = json!({"worker": worker, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) = serve(&script, false);
    let out = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "3")
        .arg("--no-validators")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let (id, events) = events(tmp.path());
    let running = |t: &str| at(&events, "task_state", t, |e| e["payload"]["to"] == "running");
    let done = |t: &str| at(&events, "task_done", t, |_| true);
    let first_done = ["T-001", "T-002", "T-003"].iter().map(|t| done(t)).min().unwrap();
    for t in ["T-001", "T-002", "T-003"] {
        assert!(running(t) < first_done, "{t} started before any task was done: three at once");
    }
    assert!(running("T-004") > done("T-001") && running("T-004") > done("T-002"));
    let lanes: std::collections::BTreeSet<u64> =
        events.iter().filter_map(|e| e["lane"].as_u64()).collect();
    assert_eq!(lanes, [1, 2, 3].into(), "every lane's events say which lane ran them");
    for e in events.iter().filter(|e| e["type"] == "model_call" || e["type"] == "tool_call") {
        assert!(e["lane"].is_u64(), "a task's event without its lane: {e}");
    }
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    let landed: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(landed.len(), 4, "{subjects}");
    let mut by_log: Vec<(usize, String)> = ["T-001", "T-002", "T-003", "T-004"]
        .iter()
        .map(|t| (at(&events, "commit", t, |_| true), (*t).to_owned()))
        .collect();
    by_log.sort();
    let in_log: Vec<String> = by_log.into_iter().rev().map(|(_, t)| t).collect();
    let in_branch: Vec<String> =
        landed.iter().map(|s| s.split(':').next().unwrap().to_owned()).collect();
    assert_eq!(in_branch, in_log, "the branch holds the tasks in the order they landed");
    let trailers = git(&repo, &["log", "--format=%B", &format!("session/{id}")]);
    assert_eq!(trailers.matches("Reviewed-by: harrow evaluator").count(), 4);
    let files = git(&repo, &["ls-tree", "--name-only", &format!("session/{id}")]);
    for n in 1..=4 {
        assert!(files.contains(&format!("f{n}.txt")), "{files}");
    }
    let branches = git(&repo, &["branch", "--list", &format!("session/{id}*")]);
    assert_eq!(branches.lines().count(), 1, "landed lanes leave no branch behind: {branches}");
}
