//! Lanes: a graph plan's ready tasks worked at once, each in its own worktree, their accepted
//! work landed on the session branch one commit per task — by the real binary, against the
//! scripted model server on 127.0.0.1, with real git and real validators.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::tools;
use crate::{loop_fixture, support};

use harrow::brain::scripted::ScriptedServer;
use loop_fixture::{
    accept, accept_quoting, case, depends, harrow_cmd, reject, repo_and_plan, serve,
};
use serde_json::{Value, json};
use std::path::Path;
use support::git;

/// A repository and a plan of two tasks that depend on nothing: they run side by side.
fn side_by_side(tmp: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (repo, plan) = repo_and_plan(tmp, 2);
    depends(&plan, 1, "[]");
    depends(&plan, 2, "[]");
    (repo, plan)
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

/// Runs `cmd` to its end and returns what it printed, failing the test if the run failed.
fn succeeds(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
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
    let mut worker: serde_json::Map<String, Value> = (1..=3)
        .map(|n| {
            (
                format!("T-00{n}"),
                json!({"*": write(&format!("f{n}.txt"), &format!("{n}\n"), n, 600)}),
            )
        })
        .collect();
    worker.insert("T-004".into(), json!({"*": run_then_write("pwd; ls", 4, 0)}));
    let script = json!({"worker": worker, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) = serve(&script, false);
    succeeds(lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "3").arg("--no-validators"));
    let (id, events) = events(tmp.path());
    let listing = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["payload"]["task_id"] == "T-004")
        .map(|e| e["payload"].to_string())
        .unwrap_or_default();
    assert!(
        ["worktree-1", "worktree-2", "worktree-3"].iter().any(|w| listing.contains(w)),
        "the fourth task reuses the worktree of a task that landed: {listing}"
    );
    assert!(
        listing.contains("f1.txt") && listing.contains("f2.txt"),
        "it starts from the session branch with both its dependencies: {listing}"
    );
    // Whether T-003 had landed when T-004's branch was cut: its commit is in the commit T-004
    // starts from (the order of the events may not say: the branch is cut before the task's
    // start is logged, and T-003 may land in between).
    let t3 = &events[at(&events, "commit", "T-003", |_| true)]["payload"]["sha"];
    let t4_base =
        &events[at(&events, "context_reset", "T-004", |_| true)]["payload"]["base_commit"];
    let t3_landed_first = std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", t3.as_str().unwrap(), t4_base.as_str().unwrap()])
        .current_dir(&repo)
        .status()
        .unwrap()
        .success();
    assert_eq!(
        listing.contains("f3.txt"),
        t3_landed_first,
        "a reused worktree holds the session branch as it stood, nothing more: {listing}"
    );
    let worktrees = git(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        2,
        "the lanes' worktrees go when the run ends; the repository's and the session's stay: {worktrees}"
    );
    let lanes = tmp.path().join("sessions").join(&id).join("lanes");
    assert!(lanes.read_dir().map_or(true, |mut d| d.next().is_none()), "lanes/ is left empty");
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

/// The session branch's file `path`, as text.
fn landed(repo: &Path, id: &str, path: &str) -> String {
    git(repo, &["show", &format!("session/{id}:{path}")])
}

/// Two lanes change the same line of one file. The first lands; the second's accepted change
/// conflicts, so it goes back to its worker in the same conversation — its worktree brought
/// up to the new head with the conflict marked, the file named in the feedback, nothing about
/// harness mechanics — and once resolved it is judged again and lands.
#[test]
fn two_lanes_on_the_same_line_the_later_reworks_the_conflict_and_lands() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = side_by_side(tmp.path());
    let script = json!({
        "worker": {
            "T-001": {"*": write("README.md", "# one\n", 1, 0)},
            "T-002": {
                "1": write("README.md", "# two\n", 2, 900),
                "2": write("README.md", "# one\n# two\n", 2, 0)
            }
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    succeeds(
        lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
            // Landing and merging are what this is about: the evaluator's word is taken.
            .args(["--evidence", "off"])
            .arg("--no-validators"),
    );
    let (id, events) = events(tmp.path());
    let merge: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "feedback_sent" && e["payload"]["kind"] == "merge")
        .collect();
    assert_eq!(merge.len(), 1, "one conflict, sent back once");
    let told = merge[0]["payload"]["content"].as_str().unwrap();
    assert!(told.contains("- README.md") && told.contains("conflict markers"), "{told}");
    assert!(!told.contains("lane") && !told.contains("merge_trees"), "no mechanics: {told}");
    assert_eq!(merge[0]["payload"]["task_id"], "T-002");
    let second = server
        .received()
        .into_iter()
        .find(|r| r.role == "worker" && r.task == "T-002" && r.attempt == "2")
        .expect("the worker was asked again, in the same conversation");
    let history = second.body["messages"].to_string();
    assert!(history.contains("# two") && history.contains("conflict markers"), "{history}");
    let verdicts = events
        .iter()
        .filter(|e| e["type"] == "evaluator_verdict" && e["payload"]["task_id"] == "T-002")
        .count();
    assert_eq!(verdicts, 2, "judged again after the rework");
    assert_eq!(landed(&repo, &id, "README.md"), "# one\n# two\n");
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(ours, ["T-002: Write file 2", "T-001: Write file 1"]);
    assert_eq!(merge[0]["payload"]["conflicts"], json!(["README.md"]));
    // The conflict is a visible state wherever the verdicts are shown: the log's line, show,
    // and the export (what a pull request's body is).
    let said = "accepted, but it conflicted with work that landed meanwhile in README.md";
    let replay = harrow_cmd(tmp.path(), &server.base_url())
        .args(["replay", &id, "--headless", "--speed", "max"])
        .output()
        .unwrap();
    let replay = String::from_utf8_lossy(&replay.stdout);
    let warned = replay.find(&format!("⚠ T-002 {said}: back to its worker")).expect(&replay);
    let reworked = replay.find("↻ T-002 rework (attempt 2)").expect(&replay);
    assert!(warned < reworked, "why it is reworked comes before the rework: {replay}");
    let show = harrow_cmd(tmp.path(), &server.base_url()).args(["show", &id]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains(
            "sent back after its accept: it conflicted with work that landed meanwhile in README.md"
        ),
        "{show}"
    );
    let md = harrow_cmd(tmp.path(), &server.base_url()).args(["export", &id]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains(
            "accepted, then sent back: it conflicted with work that landed meanwhile in README.md"
        ),
        "{md}"
    );
}

/// Two changes that merge cleanly but together break the tests: the second is not committed
/// — the validators run on the combination before the session branch moves — and goes back
/// to its worker with the failing output; fixed, it lands.
#[test]
fn a_clean_merge_that_breaks_the_tests_is_not_committed_and_goes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = side_by_side(tmp.path());
    let config = tmp.path().join("lanes.toml");
    std::fs::write(
        &config,
        "[[validators]]\nname = \"together\"\ncommand = \"test -f ok.txt || test ! -f a.txt || test ! -f b.txt || { echo 'a.txt and b.txt need ok.txt'; exit 1; }\"\n",
    )
    .unwrap();
    let script = json!({
        "worker": {
            "T-001": {"*": write("a.txt", "a\n", 1, 0)},
            "T-002": {
                "1": write("b.txt", "b\n", 2, 900),
                "2": write("ok.txt", "ok\n", 2, 0)
            }
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    succeeds(
        lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
            // Landing and merging are what this is about: the evaluator's word is taken.
            .args(["--evidence", "off"])
            .arg("--config")
            .arg(&config),
    );
    let (id, events) = events(tmp.path());
    let merge: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "feedback_sent" && e["payload"]["kind"] == "merge")
        .collect();
    assert_eq!(merge.len(), 1);
    let told = merge[0]["payload"]["content"].as_str().unwrap();
    assert!(told.contains("a.txt and b.txt need ok.txt"), "the failing output: {told}");
    let commits = events.iter().filter(|e| e["type"] == "commit").count();
    assert_eq!(commits, 2, "one commit per task, none for the broken combination");
    let tree = |rev: &str| git(&repo, &["ls-tree", "--name-only", rev]);
    let history = git(&repo, &["rev-list", &format!("session/{id}")]);
    for rev in history.lines() {
        let files = tree(rev);
        assert!(
            !(files.contains("a.txt") && files.contains("b.txt")) || files.contains("ok.txt"),
            "the branch never held the broken combination: {rev}: {files}"
        );
    }
    assert_eq!(landed(&repo, &id, "ok.txt"), "ok\n");
    assert_eq!(landed(&repo, &id, "b.txt"), "b\n");
}

/// A task in rework holds only the tasks that depend on it: the independent task runs and
/// lands meanwhile, and the dependent starts only once the reworked task landed.
#[test]
fn a_task_in_rework_holds_its_dependents_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[T-001]")] {
        depends(&plan, n, deps);
    }
    let reject = loop_fixture::reject("acceptance_gap");
    let script = json!({
        "worker": {
            "T-001": {"1": write("f1.txt", "1\n", 1, 300), "2": write("f1.txt", "1\nchecked\n", 1, 300)},
            "T-002": {"*": write("f2.txt", "2\n", 2, 0)},
            "T-003": {"*": write("f3.txt", "3\n", 3, 0)}
        },
        "evaluator": {"T-001": {"1": [reject], "2": [accept()]}, "*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    succeeds(lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "3").arg("--no-validators"));
    let (_, events) = events(tmp.path());
    let rework = at(&events, "task_state", "T-001", |e| e["payload"]["to"] == "rework");
    let t1_done = at(&events, "task_done", "T-001", |_| true);
    let t2_done = at(&events, "task_done", "T-002", |_| true);
    let t3_start = at(&events, "task_state", "T-003", |e| e["payload"]["to"] == "running");
    assert!(t2_done < t1_done, "the independent task went on while T-001 was reworked");
    assert!(rework < t1_done && t3_start > t1_done, "T-003 waited for T-001 to land");
    let t3_asked = server.received().iter().any(|r| r.task == "T-003");
    assert!(t3_asked);
}

/// `kill -9` at every event boundary of a landing that needs a merge (from the later task's
/// accept to its `commit`), then `resume`: every accepted task is committed exactly once —
/// on the branch and in the log — and nothing is redone.
#[test]
fn a_crash_at_each_event_of_a_merge_then_resume_commits_every_task_exactly_once() {
    let script = json!({
        "worker": {
            "T-001": {"*": write("a.txt", "a\n", 1, 0)},
            "T-002": {"*": write("b.txt", "b\n", 2, 700)}
        },
        "evaluator": {
                "T-001": {"*": [accept_quoting("a.txt", "a")]},
                "T-002": {"*": [accept_quoting("b.txt", "b")]}
            }
    });
    let (_rt, server) = serve(&script, false);
    let setup = |tmp: &Path| {
        let (repo, plan) = side_by_side(tmp);
        let config = tmp.join("lanes.toml");
        std::fs::write(
            &config,
            "[[validators]]\nname = \"readme\"\ncommand = \"test -f README.md\"\n",
        )
        .unwrap();
        (repo, plan, config)
    };
    let whole = tempfile::tempdir().unwrap();
    let (repo, plan, config) = setup(whole.path());
    let out = lanes_run(whole.path(), &server.base_url(), &plan, &repo, "2")
        // Landing and merging are what this is about: the evaluator's word is taken.
        .args(["--evidence", "off"])
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let (_, whole_log) = events(whole.path());
    // T-002 starts later, so T-001 usually lands first; on a loaded machine the order can
    // turn. Whichever lands second finds the session branch moved and is merged: the crash
    // points are the events of that landing.
    let second = whole_log
        .iter()
        .filter(|e| e["type"] == "commit")
        .nth(1)
        .and_then(|e| e["payload"]["task_id"].as_str())
        .expect("both tasks committed")
        .to_owned();
    let from = at(&whole_log, "evaluator_verdict", &second, |_| true);
    let to = at(&whole_log, "commit", &second, |_| true);
    assert!(
        whole_log[from..to].iter().any(|e| e["type"] == "validator_run"),
        "the landing merged and validated the combination"
    );
    for (boundary, crash_event) in whole_log.iter().enumerate().take(to + 1).skip(from) {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan, config) = setup(tmp.path());
        let crashed = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
            .arg("--config")
            .arg(&config)
            .env("HARROW_CRASH_AFTER_EVENTS", (boundary + 1).to_string())
            .output()
            .unwrap();
        assert!(!crashed.status.success(), "the run died at event {boundary}");
        // Lanes interleave their events differently from run to run, so what was accepted
        // before the crash is read from this run's own log, not from the whole run's.
        let (id, before_crash) = events(tmp.path());
        let resumed = harrow_cmd(tmp.path(), &server.base_url())
            .args(["resume", &id, "--headless", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&resumed.stdout);
        assert!(
            resumed.status.success(),
            "resume after event {boundary} ({}): {stdout}\n{}",
            crash_event["type"],
            String::from_utf8_lossy(&resumed.stderr)
        );
        let (_, after) = events(tmp.path());
        for task in ["T-001", "T-002"] {
            let logged = after
                .iter()
                .filter(|e| e["type"] == "commit" && e["payload"]["task_id"] == task)
                .count();
            assert_eq!(logged, 1, "{task} committed once in the log, crash after {boundary}");
        }
        let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
        for subject in ["T-001: Write file 1", "T-002: Write file 2"] {
            let n = subjects.lines().filter(|l| *l == subject).count();
            assert_eq!(n, 1, "{subject} once on the branch, crash after {boundary}: {subjects}");
        }
        assert_eq!(landed(&repo, &id, "a.txt"), "a\n");
        assert_eq!(landed(&repo, &id, "b.txt"), "b\n");
        for task in ["T-001", "T-002"] {
            let asked_again = after
                .iter()
                .skip(before_crash.len())
                .any(|e| e["type"] == "model_call" && e["payload"]["task_id"] == task);
            let accepted_before = before_crash
                .iter()
                .any(|e| e["type"] == "evaluator_verdict" && e["payload"]["task_id"] == task);
            assert!(
                !(accepted_before && asked_again),
                "{task}'s accepted work is never redone ({boundary})"
            );
        }
    }
}

/// Every sandbox mode: off, Landlock and bubblewrap (which must be able to make a sandbox).
fn sandbox_modes() -> Vec<&'static str> {
    tools::require_bwrap();
    vec!["off", "landlock", "bwrap"]
}

/// Worker turns that run `command`, then write `f{n}.txt` and submit.
fn run_then_write(command: &str, n: usize, delay_ms: u64) -> Value {
    json!([
        {"delay_ms": delay_ms, "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
    ])
}

/// Two lanes' commands at once, one of them leaving a detached job behind: the job is ended
/// when its command ends (as without lanes), and the other lane's command — still at work —
/// is not taken for an orphan: it finishes and its output reaches its worker.
#[test]
fn a_lane_that_leaves_a_job_behind_never_kills_another_lanes_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = side_by_side(tmp.path());
    let seconds = "37.25";
    let script = json!({
        "worker": {
            "T-001": {"*": run_then_write("sleep 1.5; echo survived-$((20+22))", 1, 0)},
            "T-002": {"*": run_then_write(&format!("setsid sleep {seconds} >/dev/null 2>&1 </dev/null & echo left"), 2, 400)}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    succeeds(lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2").arg("--no-validators"));
    let (_, events) = events(tmp.path());
    let result = |task: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["payload"]["task_id"] == task)
            .map(|e| e["payload"].to_string())
            .unwrap_or_default()
    };
    assert!(result("T-001").contains("survived-42"), "{}", result("T-001"));
    assert!(result("T-002").contains("left"), "{}", result("T-002"));
    assert_eq!(support::sleepers(seconds), 0, "the detached job ended with its command");
}

/// `harrow control ID fail --task T-001` while it works in one lane: that task fails (its call
/// cancelled at once), the other lane's task goes on and lands, the failed task's dependent is
/// blocked and never starts, and the run ends with the failure (exit 1).
#[test]
fn failing_one_lanes_task_fails_that_task_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[T-001]")] {
        depends(&plan, n, deps);
    }
    let script = json!({
        "worker": {
            "T-001": {"*": write("f1.txt", "1\n", 1, 600_000)},
            "T-002": {"*": write("f2.txt", "2\n", 2, 1_500)},
            "T-003": {"*": write("f3.txt", "3\n", 3, 0)}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let child = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
        .arg("--no-validators")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let dir = loop {
        let found = tmp.path().join("sessions").read_dir().ok().and_then(|mut d| d.next());
        if let Some(Ok(entry)) = found
            && std::fs::read_to_string(entry.path().join("events.jsonl"))
                .unwrap_or_default()
                .lines()
                .any(|l| l.contains("\"task_id\":\"T-001\"") && l.contains("\"to\":\"running\""))
        {
            break entry.path();
        }
        assert!(std::time::Instant::now() < deadline, "T-001 never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let failed = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "fail", "--task", "T-001", "--reason", "not now"])
        .output()
        .unwrap();
    assert!(failed.status.success(), "{}", String::from_utf8_lossy(&failed.stderr));
    // T-001's reply is ten minutes away: the run ending well before proves it was cancelled.
    let out = support::ends_within(child, 90, "the run after `fail`");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("✔ T-002 done"), "the other lane went on: {stdout}");
    assert!(stdout.contains("■ stopped: operator_fail"), "{stdout}");
    let (_, events) = events(tmp.path());
    let t1 = at(&events, "task_failed", "T-001", |_| true);
    assert_eq!(events[t1]["payload"]["reason"], "operator_fail");
    assert!(
        events.iter().any(|e| e["type"] == "task_state"
            && e["payload"]["task_id"] == "T-003"
            && e["payload"]["to"] == "blocked"),
        "T-003 is blocked on the failed task"
    );
    assert!(server.received().iter().all(|r| r.task != "T-003"), "T-003 never started");
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    assert!(subjects.contains("T-002: Write file 2") && !subjects.contains("T-001"), "{subjects}");
}

/// The caps are the whole run's, counted as each lane's calls are made: T-001's first call
/// spends past `--max-dollars` while it is still at work, so when T-002 lands a moment later
/// T-003 does not start (counting a lane's spend only when its task ends would start it);
/// the task at work finishes and lands, as a task does at a cap without lanes, and the run
/// ends on the cap.
#[test]
fn a_cap_counts_every_lanes_calls_as_they_are_made() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    for n in 1..=3 {
        depends(&plan, n, "[]");
    }
    let script = json!({
        "worker": {
            "T-001": {"*": [
                {"delay_ms": 100, "cost": 1.0, "tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
                {"delay_ms": 2500, "tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ]},
            "T-002": {"*": write("f2.txt", "2\n", 2, 900)},
            "T-003": {"*": write("f3.txt", "3\n", 3, 0)}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let out = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
        .args(["--no-validators", "--max-dollars", "0.5"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("■ stopped: cost_cap"), "{stdout}");
    let (id, events) = events(tmp.path());
    assert!(
        !events.iter().any(|e| e["type"] == "task_state"
            && e["payload"]["task_id"] == "T-003"
            && e["payload"]["to"] == "running"),
        "no task starts once the run's spend is past the cap"
    );
    let t2 = at(&events, "commit", "T-002", |_| true);
    let t1 = at(&events, "commit", "T-001", |_| true);
    assert!(t2 < t1, "T-002 landed while T-001 was still at work");
    assert!(landed(&repo, &id, "f1.txt").contains('1'), "the task at work finished and landed");
}

/// A lane's git folder is the worker's to write. Its worker points the folder's `gitdir` at the
/// source repository's README (libgit2's prune deletes the parent of that path: the whole
/// repository) and plants a link named as harrow's old lane note at the session's log; the
/// other lane's worker points its `gitdir` at a folder outside. The run ends, and the same
/// forgeries left by a run killed mid-task (with a stale `index.lock` and a ref lock) are
/// resumed to the end: the repository, the outside folder and the log all survive whole, and
/// the locks are removed with the resume saying so.
#[test]
fn forged_lane_git_folders_delete_nothing_and_write_nothing_outside_harrows_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "keep\n").unwrap();
    for mode in sandbox_modes() {
        let at = tmp.path().join(mode);
        let (repo, plan) = side_by_side(&at);
        let config = at.join("mode.toml");
        std::fs::write(&config, format!("[hands]\nsandbox = \"{mode}\"\n")).unwrap();
        let sessions = at.join("sessions");
        let forge = |target: &Path| {
            format!(
                "d=$(git rev-parse --git-dir) && printf '%s\\n' {} > \"$d/gitdir\" && for f in {}/*/events.jsonl; do ln -sfn \"$f\" \"$d/harrow-task\"; done; echo forged",
                target.display(),
                sessions.display()
            )
        };
        let script = json!({
            "worker": {
                "T-001": {"*": run_then_write(&forge(&repo.join("README.md")), 1, 0)},
                "T-002": {"*": run_then_write(&forge(&outside.join("keep.txt")), 2, 300)}
            },
            "evaluator": {"*": {"*": [accept()]}}
        });
        let (_rt, server) = serve(&script, false);
        succeeds(
            lanes_run(&at, &server.base_url(), &plan, &repo, "2")
                .args(["--no-validators", "--config"])
                .arg(&config),
        );
        let (id, log) = events(&at);
        assert_eq!(log[0]["type"], "session_start", "{mode}: the log is whole from its first line");
        let forged = log
            .iter()
            .filter(|e| e["type"] == "tool_result" && e["payload"].to_string().contains("forged"))
            .count();
        assert_eq!(forged, 2, "{mode}: both workers forged their git folder");
        assert_eq!(std::fs::read_to_string(repo.join("README.md")).unwrap(), "# demo\n", "{mode}");
        assert!(repo.join(".git/HEAD").exists(), "{mode}: the repository's git folder");
        assert_eq!(landed(&repo, &id, "f1.txt"), "1\n", "{mode}");
        assert_eq!(landed(&repo, &id, "f2.txt"), "2\n", "{mode}");
    }
    let survives = |what: &str| {
        assert_eq!(std::fs::read_to_string(outside.join("keep.txt")).unwrap(), "keep\n", "{what}");
    };
    survives("after the runs");

    // Killed while both lanes work; the forgeries (and a crash's locks) left in their folders.
    let tmp2 = tempfile::tempdir().unwrap();
    let (repo2, plan2) = side_by_side(tmp2.path());
    let script = json!({
        "worker": {
            "T-001": {"*": write("a.txt", "a\n", 1, 1500)},
            "T-002": {"*": write("b.txt", "b\n", 2, 1500)}
        },
        "evaluator": {
                "T-001": {"*": [accept_quoting("a.txt", "a")]},
                "T-002": {"*": [accept_quoting("b.txt", "b")]}
            }
    });
    let (_rt2, server2) = serve(&script, false);
    let crashed = lanes_run(tmp2.path(), &server2.base_url(), &plan2, &repo2, "2")
        .arg("--no-validators")
        .env("HARROW_CRASH_AFTER_EVENTS", "12")
        .output()
        .unwrap();
    assert!(!crashed.status.success());
    let (id2, before) = events(tmp2.path());
    assert!(
        before.iter().filter(|e| e["type"] == "context_reset").count() == 2,
        "both lanes at work"
    );
    let registrations: Vec<_> = repo2
        .join(".git/worktrees")
        .read_dir()
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains("--worktree-"))
        .collect();
    assert_eq!(registrations.len(), 2, "{registrations:?}");
    std::fs::write(
        registrations[0].join("gitdir"),
        format!("{}\n", repo2.join("README.md").display()),
    )
    .unwrap();
    std::fs::write(
        registrations[1].join("gitdir"),
        format!("{}\n", outside.join("keep.txt").display()),
    )
    .unwrap();
    std::fs::write(registrations[0].join("index.lock"), "").unwrap();
    std::fs::write(repo2.join(format!(".git/refs/heads/session/{id2}.lock")), "").unwrap();
    // A lock some live process (this test) still has open is someone's: it stays.
    let held = repo2.join(format!(".git/refs/harrow/{id2}/held.lock"));
    std::fs::create_dir_all(held.parent().unwrap()).unwrap();
    let _open = std::fs::File::create(&held).unwrap();
    let resumed = harrow_cmd(tmp2.path(), &server2.base_url())
        .args(["resume", &id2, "--headless", "--no-validators"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(stdout.contains("index.lock, a git lock the interrupted run left"), "{stdout}");
    let (_, after) = events(tmp2.path());
    let resume = after.iter().find(|e| e["type"] == "session_resume").unwrap();
    assert_eq!(resume["payload"]["removed_locks"].as_array().map(Vec::len), Some(2), "{resume}");
    assert!(held.exists(), "a lock a live process holds open is left");
    assert_eq!(std::fs::read_to_string(repo2.join("README.md")).unwrap(), "# demo\n");
    assert!(repo2.join(".git/HEAD").exists());
    survives("after the resume");
    assert_eq!(landed(&repo2, &id2, "a.txt"), "a\n");
    assert_eq!(landed(&repo2, &id2, "b.txt"), "b\n");
}

/// A task merged onto a session branch that moved is validated in its lane, where its own
/// accepted test code runs: a check that writes (a new file, and a change to the earlier
/// task's accepted file) only when it sees the other task's file changes nothing that lands —
/// the landed tree is the merge of judged work, as the kept combination holds it.
#[test]
fn a_check_that_writes_into_the_combination_lands_nothing_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = side_by_side(tmp.path());
    let config = tmp.path().join("lanes.toml");
    std::fs::write(
        &config,
        "[[validators]]\nname = \"check\"\ncommand = \"test ! -f check.sh || sh check.sh\"\n",
    )
    .unwrap();
    let check = "if [ -f a.txt ]; then echo planted > evil.txt; echo tampered >> a.txt; fi\n";
    let script = json!({
        "worker": {
            "T-001": {"*": write("a.txt", "a\n", 1, 0)},
            "T-002": {"*": [
                {"delay_ms": 1200, "tool_calls": [{"name": "write_file", "arguments": {"path": "check.sh", "content": check}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b\n"}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}
            ]}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    succeeds(
        lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
            // Landing and merging are what this is about: the evaluator's word is taken.
            .args(["--evidence", "off"])
            .arg("--config")
            .arg(&config),
    );
    let (id, log) = events(tmp.path());
    let order: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "commit")
        .filter_map(|e| e["payload"]["task_id"].as_str())
        .collect();
    assert_eq!(order, ["T-001", "T-002"], "T-002 lands second, merged onto T-001");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &format!("session/{id}")]);
    assert!(!files.contains("evil.txt"), "the check's file never lands: {files}");
    assert_eq!(landed(&repo, &id, "a.txt"), "a\n", "T-001's accepted file as judged");
    assert_eq!(landed(&repo, &id, "b.txt"), "b\n");
    let combined =
        git(&repo, &["for-each-ref", "--format=%(refname)", &format!("refs/harrow/{id}/")]);
    let kept =
        combined.lines().find(|r| r.ends_with("-combined")).expect("the combination is kept");
    assert_eq!(
        git(&repo, &["rev-parse", &format!("{kept}^{{tree}}")]),
        git(&repo, &["rev-parse", &format!("session/{id}^{{tree}}")]),
        "the landed tree is the kept combination's"
    );
}

/// Without a sandbox a lane's worker can run any `git`: it moves the session branch to a
/// forged commit and moves the earlier task's kept attempt there too (under a sandbox the
/// shared git folder is read-only; the test runs in every mode). The lane's guard puts
/// both back after the call (harrow's own refs are held to what harrow last wrote, whichever
/// lane moves them), so the forged commit never lands and the kept attempt is as judged.
#[test]
fn without_a_sandbox_a_lanes_worker_cannot_move_the_session_branch_or_a_kept_attempt() {
    for mode in sandbox_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = side_by_side(tmp.path());
        let config = tmp.path().join("off.toml");
        std::fs::write(&config, format!("[hands]\nsandbox = \"{mode}\"\n")).unwrap();
        // Spelled so the `pre_tool` hook's patterns miss it, as a shell allows many ways to.
        // It waits until T-001 has landed (its commit on the session branch, its judged
        // attempt kept), then forges both.
        let forge = "u=upd; u=${u}ate-ref; b=$(git rev-parse --abbrev-ref HEAD); id=${b%--*}; id=${id#session/}; for i in $(seq 600); do git log --format=%s refs/heads/session/$id | grep -q '^T-001:' && break; sleep 0.05; done; echo kept-refs $(git for-each-ref refs/harrow/$id/T-001/ | wc -l); c=$(git commit-tree -m forged-by-worker HEAD^{tree}); git $u refs/heads/session/$id $c; for r in $(git for-each-ref --format='%(refname)' refs/harrow/$id/T-001/); do git $u $r $c; done; echo moved $(git rev-parse refs/heads/session/$id)";
        let script = json!({
            "worker": {
                "T-001": {"*": write("f1.txt", "1\n", 1, 0)},
                "T-002": {"*": run_then_write(forge, 2, 0)}
            },
            "evaluator": {"*": {"*": [accept()]}}
        });
        let (_rt, server) = serve(&script, false);
        succeeds(
            lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2")
                .arg("--config")
                .arg(&config),
        );
        let (id, log) = events(tmp.path());
        let results: Vec<String> = log
            .iter()
            .filter(|e| e["type"] == "tool_result" || e["type"] == "pre_tool_block")
            .map(|e| e["payload"].to_string())
            .collect();
        assert!(
            results.iter().any(|r| r.contains("moved")),
            "{mode}: the worker's command ran: {results:?}"
        );
        assert!(
            results.iter().any(|r| r.contains("kept-refs ") && !r.contains("kept-refs 0")),
            "{mode}: the premise: T-001's kept attempt was there to forge: {results:?}"
        );
        let history = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
        assert!(!history.contains("forged-by-worker"), "{mode}: {history}");
        assert!(
            history.contains("T-001: Write file 1") && history.contains("T-002: Write file 2"),
            "{history}"
        );
        let kept = git(
            &repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(subject)",
                &format!("refs/harrow/{id}/T-001/"),
            ],
        );
        assert!(!kept.trim().is_empty() && !kept.contains("forged-by-worker"), "{kept}");
    }
}

/// Two independent tasks in `lanes` lanes, headless, with one attempt each: T-001 is rejected
/// (so it fails at the cap), T-002 accepted. The repository, the server and how the run ended.
fn t001_fails_at_the_cap_t002_lands(
    tmp: &Path,
    lanes: &str,
) -> (std::path::PathBuf, (tokio::runtime::Runtime, ScriptedServer), std::process::Output) {
    let (repo, plan) = side_by_side(tmp);
    let worker: serde_json::Map<String, Value> = (1..=2)
        .map(|n| (format!("T-00{n}"), json!({"*": write(&format!("f{n}.txt"), "x\n", n, 0)})))
        .collect();
    let script = json!({
        "worker": worker,
        "evaluator": {"T-001": {"*": [reject("weak_test")]}, "T-002": {"*": [accept_quoting("f2.txt", "x")]}}
    });
    let server = serve(&script, true);
    let out = lanes_run(tmp, &server.1.base_url(), &plan, &repo, lanes)
        .args(["--no-validators", "--max-attempts", "1"])
        .output()
        .unwrap();
    (repo, server, out)
}

/// A lanes run whose T-001 failed at the attempt cap while T-002 landed: resumed, T-001 is not
/// worked again and nothing else is left, so the run stops saying T-001 waits for a decision
/// (status 1) — it said `all_done` with a task failed.
#[test]
fn a_resumed_lanes_run_with_a_task_failed_at_the_cap_says_it_waits_for_a_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, (_rt, server), out) = t001_fails_at_the_cap_t002_lands(tmp.path(), "2");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let (id, _) = events(tmp.path());
    let asked = server.received().len();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("T-001 failed at the attempt cap; decide with `harrow control`"),
        "{stdout}"
    );
    assert!(!stdout.contains("all_done"), "{stdout}");
    assert_eq!(server.received().len(), asked, "nothing was asked of any model");
}

/// `--lanes 1` is the same scheduler: in a graph, a task that fails holds up only what depends
/// on it — the independent T-002 is still worked and lands, in the session's own worktree (no
/// `lanes/` folder, no lane mark on any event) — and the run then stops on the failure.
#[test]
fn one_lane_on_a_graph_works_what_does_not_depend_on_a_failed_task_then_stops_on_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _server, out) = t001_fails_at_the_cap_t002_lands(tmp.path(), "1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("stopped: evaluator_cap"), "{stdout}");
    let (id, events) = events(tmp.path());
    assert!(events.iter().all(|e| e.get("lane").is_none()), "one lane marks nothing");
    let dir = tmp.path().join("sessions").join(&id);
    assert!(!dir.join("lanes").exists(), "one lane works in the session's own worktree");
    assert_eq!(landed(&repo, &id, "f2.txt"), "x\n", "T-002 landed");
    let log = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    assert!(!log.contains("T-001"), "T-001 did not: {log}");
}

/// Six independent tasks, each adding its own module and test to a Python package, in three
/// lanes with a validator that imports the package: three tasks start in worktrees of their
/// own and three in worktrees that a landed task leaves behind (its last files written by a
/// merge). Each task starts on a clean worktree whose index is its start (its worker's `git
/// status` says nothing), is judged on its own two files only, and lands — merged onto what
/// landed meanwhile.
#[test]
fn six_independent_tasks_in_three_lanes_all_land() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 6);
    std::fs::create_dir_all(repo.join("calc")).unwrap();
    std::fs::write(repo.join("calc/__init__.py"), "").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "calc"]);
    for n in 1..=6 {
        depends(&plan, n, "[]");
    }
    let config = tmp.path().join("lanes.toml");
    std::fs::write(
        &config,
        "[[validators]]\nname = \"import\"\ncommand = \"python3 -c 'import calc'\"\n",
    )
    .unwrap();
    let status = "git status --porcelain; echo status-end; pwd";
    let worker: serde_json::Map<String, Value> = (1..=6)
        .map(|n| {
            let module = format!("calc/f{n}.py");
            let test = format!("tests/test_f{n}.py");
            let turns = json!([
                {"delay_ms": 300, "tool_calls": [{"name": "bash", "arguments": {"command": status}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": module, "content": format!("def f{n}():\n    return {n}\n")}}]},
                {"delay_ms": 300, "tool_calls": [{"name": "write_file", "arguments": {"path": test, "content": format!("from calc.f{n} import f{n}\n\ndef test_f{n}():\n    assert f{n}() == {n}\n")}}]},
                {"delay_ms": 300, "tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
            ]);
            (format!("T-00{n}"), json!({"*": turns}))
        })
        .collect();
    // Witnessed by each task's own test, which harrow runs on the task's base (no module yet:
    // it fails) and on the work (it passes), beside the lane's worktree.
    let mut accept = accept();
    accept["delay_ms"] = json!(300);
    accept["tool_calls"][0]["arguments"]["witnesses"] =
        json!([{"criterion": 1, "test": "tests/test_f{{task_n}}.py::test_f{{task_n}}"}]);
    let script = json!({"worker": worker, "evaluator": {"*": {"*": [accept]}}});
    let (_rt, server) = serve(&script, false);
    succeeds(
        lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "3").arg("--config").arg(&config),
    );
    let (id, log) = events(tmp.path());
    let of = |kind: &str, task: &str| {
        log.iter()
            .find(|e| e["type"] == kind && e["payload"]["task_id"] == task)
            .map_or_else(|| panic!("no {kind} for {task}"), |e| e["payload"].clone())
    };
    let mut worktrees = std::collections::BTreeSet::new();
    for n in 1..=6 {
        let task = format!("T-00{n}");
        let output = of("tool_result", &task)["output"].as_str().unwrap_or_default().to_owned();
        let (status, place) = output.split_once("status-end\n").unwrap();
        assert_eq!(status, "", "{task} starts on a clean worktree whose index is its start");
        worktrees.insert(place.lines().next().unwrap().to_owned());
        let judged = of("evaluator_verdict", &task)["diff_summary"].as_str().unwrap().to_owned();
        let own = [format!("calc/f{n}.py"), format!("tests/test_f{n}.py")];
        assert_eq!(judged.matches(" (+").count(), 2, "{task} is judged on its own files: {judged}");
        assert!(own.iter().all(|f| judged.contains(f.as_str())), "{task}: {judged}");
    }
    // The premises: later tasks worked where earlier ones had landed, some by a merge.
    assert!(worktrees.len() <= 3, "six tasks in three worktrees: {worktrees:?}");
    let merged =
        log.iter().filter(|e| e["type"] == "validator_run" && e["payload"]["combined"] == true);
    assert!(merged.count() >= 1, "a task landed by a merge written into its lane");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &format!("session/{id}")]);
    for n in 1..=6 {
        assert!(files.contains(&format!("calc/f{n}.py")), "{files}");
        assert!(files.contains(&format!("tests/test_f{n}.py")), "{files}");
    }
}

/// A worker without a sandbox that rewrites its worktree's index (`git rm --cached` of a
/// tracked file it keeps, a file staged and then changed again) is judged and landed on its
/// files as they are: the diff the evaluator judges and the diff that lands are one measure,
/// whatever the index says, in one lane and in two.
#[test]
fn a_worker_that_rewrites_its_own_index_is_judged_and_landed_on_its_files() {
    for lanes in ["1", "2"] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = side_by_side(tmp.path());
        let config = tmp.path().join("lanes.toml");
        std::fs::write(&config, "[hands]\nsandbox = \"off\"\n").unwrap();
        let index_games = "git rm -q --cached README.md && git add f1.txt && echo again >> f1.txt && git status --porcelain";
        let script = json!({
            "worker": {
                "T-001": {"*": [
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
                    {"tool_calls": [{"name": "bash", "arguments": {"command": index_games}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
                ]},
                "T-002": {"*": write("f2.txt", "2\n", 2, 0)}
            },
            "evaluator": {"*": {"*": [accept()]}}
        });
        let (_rt, server) = serve(&script, false);
        let mut cmd = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, lanes);
        succeeds(cmd.arg("--config").arg(&config).arg("--no-validators"));
        let (id, log) = events(tmp.path());
        let games = log
            .iter()
            .filter(|e| e["type"] == "tool_result" && e["payload"]["task_id"] == "T-001")
            .map(|e| e["payload"]["output"].to_string())
            .nth(1)
            .unwrap();
        assert!(games.contains("D  README.md"), "the premise: the index lost README.md: {games}");
        let judged = log
            .iter()
            .find(|e| e["type"] == "evaluator_verdict" && e["payload"]["task_id"] == "T-001")
            .map(|e| e["payload"]["diff_summary"].as_str().unwrap().to_owned())
            .unwrap();
        assert_eq!(judged, "f1.txt (+2 -0)", "judged on the files as they are ({lanes} lanes)");
        assert_eq!(landed(&repo, &id, "f1.txt"), "1\nagain\n", "{lanes} lanes");
        assert_eq!(landed(&repo, &id, "README.md"), "# demo\n", "{lanes} lanes");
    }
}

/// A 4-task graph in two lanes with real pytest as the validator: T-001 first, T-002 and T-003
/// at once on top of it, T-004 after both (its lane one that T-002 or T-003 landed from).
/// Every task's judged work lands, T-004's tests running with all the others'.
#[test]
fn a_diamond_in_two_lanes_lands_every_judged_task() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 4);
    for (n, deps) in [(1, "[]"), (2, "[T-001]"), (3, "[T-001]"), (4, "[T-002, T-003]")] {
        depends(&plan, n, deps);
    }
    let config = tmp.path().join("lanes.toml");
    std::fs::write(
        &config,
        "[[validators]]\nname = \"pytest\"\ncommand = \"python3 -m pytest -q -p no:cacheprovider\"\n",
    )
    .unwrap();
    let worker: serde_json::Map<String, Value> = (1..=4)
        .map(|n| {
            let test = format!("def test_f{n}():\n    assert open('f{n}.txt').read() == '{n}\\n'\n");
            let turns = json!([
                {"delay_ms": 200, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]},
                {"delay_ms": 200, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("test_f{n}.py"), "content": test}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
            ]);
            (format!("T-00{n}"), json!({"*": turns}))
        })
        .collect();
    let accept = json!({"delay_ms": 200, "tool_calls": accept()["tool_calls"]});
    let script = json!({"worker": worker, "evaluator": {"*": {"*": [accept]}}});
    let (_rt, server) = serve(&script, false);
    succeeds(
        lanes_run(tmp.path(), &server.base_url(), &plan, &repo, "2").arg("--config").arg(&config),
    );
    let (id, log) = events(tmp.path());
    let pytest_ran = log.iter().filter(|e| e["type"] == "validator_run").all(|e| {
        e["payload"]["passed"] == true
            && e["payload"]["results"][0]["output"].to_string().contains(" passed")
    });
    assert!(pytest_ran, "pytest ran and passed at every check");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &format!("session/{id}")]);
    for n in 1..=4 {
        assert!(files.contains(&format!("test_f{n}.py")), "{files}");
    }
    let t4 = log
        .iter()
        .filter(|e| e["type"] == "validator_run" && e["payload"]["task_id"] == "T-004")
        .map(|e| e["payload"]["results"][0]["output"].to_string())
        .next()
        .unwrap();
    assert!(t4.contains("4 passed"), "T-004's check runs every task's tests: {t4}");
}

/// A validator that changes the task's own file after the diff was taken: the verdict judged
/// the diff without the change, so nothing lands — in one lane and in two, each task is held
/// with the reason and the session branch stays where it was.
#[test]
fn work_changed_after_its_diff_was_judged_never_lands() {
    for lanes in ["1", "2"] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, plan) = side_by_side(tmp.path());
        let config = tmp.path().join("lanes.toml");
        std::fs::write(
            &config,
            "[[validators]]\nname = \"meddles\"\ncommand = \"for f in f*.txt; do echo tampered >> $f; done\"\n",
        )
        .unwrap();
        let script = json!({
            "worker": {"T-001": {"*": write("f1.txt", "1\n", 1, 0)}, "T-002": {"*": write("f2.txt", "2\n", 2, 0)}},
            "evaluator": {"*": {"*": [accept()]}}
        });
        let (_rt, server) = serve(&script, false);
        let out = lanes_run(tmp.path(), &server.base_url(), &plan, &repo, lanes)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(stdout.contains("the work changed after it was judged"), "{stdout}");
        let (id, log) = events(tmp.path());
        let accepted = log
            .iter()
            .filter(|e| e["type"] == "evaluator_verdict" && e["payload"]["verdict"] == "accept");
        assert!(accepted.count() >= 1, "the premise: a verdict accepted the work ({lanes} lanes)");
        assert!(!log.iter().any(|e| e["type"] == "commit"), "nothing landed ({lanes} lanes)");
        let files = git(&repo, &["ls-tree", "-r", "--name-only", &format!("session/{id}")]);
        assert!(!files.contains("f1.txt") && !files.contains("f2.txt"), "{files}");
    }
}
