//! Rewinding a task, through the real binary against a scripted model that records every
//! request and real git: the worktree is set to the kept attempt byte for byte (what came
//! after is set aside, a file it added gone), the worker goes on from that point of its
//! conversation with the operator's reason, and the work lands only once it is judged again.

use crate::{loop_fixture, support};

use loop_fixture::{
    accept, accept_quoting, case, events_of, harrow_cmd, headless_run, reject, repo_and_plan, serve,
};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

/// The tree a kept commit holds, from the source repository.
fn tree_of(repo: &Path, commit: &str) -> String {
    let out = support::git(repo, &["rev-parse", &format!("{commit}^{{tree}}")]);
    out.trim().to_owned()
}

/// Every message text of a recorded request.
fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["content"].as_str().map_or_else(|| m.to_string(), str::to_owned))
        .collect()
}

#[test]
fn a_rewound_task_goes_on_from_the_kept_attempt_and_lands_only_when_judged_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script = json!({
        "worker": {"T-001": {
            "1": [{"tool_calls": [write("f1.txt", "ONE-CONTENT\n"), write("keep.txt", "k\n")]},
                  {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
            "2": [{"tool_calls": [write("f1.txt", "TWO-CONTENT\n"), write("extra.txt", "x\n")]},
                  {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
            "3": [{"tool_calls": [{"name": "read_file", "arguments": {"path": "f1.txt"}}]},
                  {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]
        }},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [reject("scope_creep")], "3": [accept_quoting("f1.txt", "ONE-CONTENT")]}}
    });
    let (_rt, server) = serve(&script, true);
    let held = ["--max-attempts", "2", "--wait-for-operator"];
    let (mut child, dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &held,
        Stdio::piped(),
    );
    let control = |args: &[&str]| -> Output {
        harrow_cmd(tmp.path(), &server.base_url())
            .arg("control")
            .arg(&id)
            .args(args)
            .output()
            .unwrap()
    };

    let missing = control(&["rewind", "--task", "T-001", "--to-attempt", "7", "--reason", "r"]);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{said}");
    assert!(said.contains("no attempt 7 kept"), "{said}");
    assert!(
        said.contains(&format!("1 (refs/harrow/{id}/T-001/1), 2 (refs/harrow/{id}/T-001/2)")),
        "{said}"
    );
    let no_turn = control(&["rewind", "--task", "T-001", "--to-turn", "40", "--reason", "r"]);
    assert!(
        String::from_utf8_lossy(&no_turn.stderr)
            .contains("turns that can be rewound to: attempt 1: 0, 1")
    );
    let no_reason = control(&["rewind", "--task", "T-001", "--to-attempt", "1"]);
    assert_eq!(no_reason.status.code(), Some(2), "a rewind says why");

    let rewind = control(&[
        "rewind",
        "--task",
        "T-001",
        "--to-attempt",
        "1",
        "--reason",
        "REWIND-REASON: attempt 1 had it right \u{1b}[31mred",
    ]);
    assert!(rewind.status.success(), "{}", String::from_utf8_lossy(&rewind.stderr));
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");

    let verdicts = events_of(&dir, "evaluator_verdict");
    let kept = |attempt: u64| {
        let v = verdicts.iter().find(|v| v["attempt"] == attempt).unwrap();
        v["attempt_commit"].as_str().unwrap().to_owned()
    };
    let rewound = events_of(&dir, "task_rewound");
    assert_eq!(rewound.len(), 1, "{rewound:?}");
    assert_eq!(rewound[0]["to_attempt"], 1);
    assert_eq!(rewound[0]["rewound"], json!([2]));
    assert_eq!(rewound[0]["tree"].as_str().unwrap(), tree_of(&repo, &kept(1)));
    let set_aside = rewound[0]["set_aside"].as_str().unwrap();
    assert_eq!(tree_of(&repo, set_aside), tree_of(&repo, &kept(2)), "attempt 2's work is kept");

    // The worktree was attempt 1's, byte for byte: what attempt 3 read, and what it was judged
    // and landed with (it changed nothing).
    let read = events_of(&dir, "tool_result")
        .into_iter()
        .find(|r| r["attempt"] == 3 && r["tool"] == "read_file")
        .unwrap();
    assert!(read["output"].as_str().unwrap().contains("ONE-CONTENT"), "{read}");
    assert_eq!(tree_of(&repo, &kept(3)), tree_of(&repo, &kept(1)));
    let branch = format!("session/{id}");
    assert_eq!(tree_of(&repo, &branch), tree_of(&repo, &kept(1)), "landed as judged");
    let files = support::git(&repo, &["ls-tree", "--name-only", &branch]);
    assert!(!files.contains("extra.txt") && files.contains("keep.txt"), "{files}");
    let judged_then_done: Vec<String> = support::strict_events(&dir)
        .iter()
        .filter(|e| e["payload"]["attempt"] == 3 || e["type"] == "task_done")
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .filter(|k| k == "evaluator_verdict" || k == "task_done")
        .collect();
    assert_eq!(judged_then_done, ["evaluator_verdict", "task_done"], "judged again, then landed");

    // The worker went on from attempt 1's conversation, with the reason, without attempt 2.
    let received = server.received();
    let first = received.iter().find(|r| r.role == "worker" && r.attempt == "3").unwrap();
    let said = texts(&first.body);
    assert!(said.iter().any(|m| m.contains("ONE-CONTENT")), "attempt 1's own calls");
    assert!(said.iter().any(|m| m.contains("Append the line 'checked'")), "attempt 1's verdict");
    assert!(!said.iter().any(|m| m.contains("TWO-CONTENT")), "not attempt 2: {said:?}");
    let last = said.last().unwrap();
    assert!(
        last.contains("REWIND-REASON") && last.contains("attempt 1, as it was judged"),
        "{last}"
    );
    assert!(!last.contains('\u{1b}') && last.contains("\\u{1b}[31m"), "plain text: {last}");
    // Its evaluator is shown the verdicts that still stand: not attempt 2's.
    let evaluator = received.iter().find(|r| r.role == "evaluator" && r.attempt == "3").unwrap();
    let asked = texts(&evaluator.body).join("\n");
    assert!(asked.contains("### Attempt 1 — reject:weak_test"), "{asked}");
    assert!(!asked.contains("### Attempt 2"), "{asked}");
    let contexts = events_of(&dir, "context_reset");
    assert!(contexts.iter().any(|c| c["continues_at"].as_u64().is_some_and(|at| at > 0)));
}

#[test]
fn a_landed_task_is_not_rewound() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let (_rt, server) = serve(&loop_fixture::slow_first_task(1, 0), true);
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    assert!(out.status.success());
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    // A finished session takes no commands at all; a task done in one that is not finished
    // is refused with its state.
    let done = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-attempt", "1", "--reason", "r"])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(2));
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(said.contains("finished") || said.contains("does not take landed work back"), "{said}");
}

/// A rewind to a turn: the files as that turn left them (what the next turn wrote is gone),
/// the conversation up to that turn, and the attempt judged after it set aside.
#[test]
fn a_task_rewound_to_a_turn_goes_on_from_that_turns_files_and_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script = json!({
        "worker": {"T-001": {
            "1": [{"tool_calls": [write("f1.txt", "TURN-ONE\n")]},
                  {"tool_calls": [write("later.txt", "TURN-TWO\n")]},
                  {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
            "2": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]
        }},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept_quoting("f1.txt", "TURN-ONE")]}}
    });
    let (_rt, server) = serve(&script, true);
    let out = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .args(["--max-attempts", "1"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed at the cap: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-turn", "1"])
        .args(["--reason", "TURN-REASON: stop after the first file"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    assert!(
        String::from_utf8_lossy(&sent.stdout).contains("harrow resume"),
        "a stopped run applies it on resume"
    );
    let resumed = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stdout));

    let turn_one = events_of(&dir, "turn_tree")
        .into_iter()
        .find(|t| t["attempt"] == 1 && t["iter"] == 1)
        .unwrap();
    let rewound = &events_of(&dir, "task_rewound")[0];
    assert_eq!((rewound["to_attempt"].as_u64(), rewound["to_turn"].as_u64()), (Some(1), Some(1)));
    assert_eq!(rewound["rewound"], json!([1]), "the attempt judged after the turn is set aside");
    assert_eq!(rewound["tree"], turn_one["tree"]);
    let judged = events_of(&dir, "evaluator_verdict")
        .into_iter()
        .find(|v| v["attempt"] == 2)
        .expect("judged again, within the cap: the rewind gave the attempt back");
    let commit = judged["attempt_commit"].as_str().unwrap();
    assert_eq!(
        tree_of(&repo, commit),
        turn_one["tree"].as_str().unwrap(),
        "the turn's files, exactly"
    );
    let files = support::git(&repo, &["ls-tree", "--name-only", &format!("session/{id}")]);
    assert!(files.contains("f1.txt") && !files.contains("later.txt"), "{files}");

    let received = server.received();
    let first = received.iter().find(|r| r.role == "worker" && r.attempt == "2").unwrap();
    let said = texts(&first.body);
    assert!(said.iter().any(|m| m.contains("TURN-ONE")), "turn 1 is in the conversation");
    assert!(!said.iter().any(|m| m.contains("TURN-TWO")), "turn 2 is not: {said:?}");
    assert!(
        said.last().unwrap().contains("TURN-REASON")
            && said.last().unwrap().contains("turn 1 of attempt 1")
    );
    // The turns after the rewind are numbered on from the highest before it (3), so a turn's
    // number names one turn only: `--to-turn 1` cannot mean a turn after the rewind.
    let before = events_of(&dir, "turn_tree").iter().filter(|t| t["attempt"] == 1).count() as u64;
    let after: Vec<u64> = events_of(&dir, "tool_call")
        .iter()
        .filter(|c| c["attempt"] == 2)
        .map(|c| c["iter"].as_u64().unwrap())
        .collect();
    assert!(!after.is_empty() && after.iter().all(|i| *i > before), "{after:?} after {before}");
    let replay = harrow_cmd(tmp.path(), &server.base_url())
        .args(["replay", &id, "--headless", "--speed", "max"])
        .output()
        .unwrap();
    let replay = String::from_utf8_lossy(&replay.stdout);
    assert_eq!(replay.matches("T-001 #1 ").count(), 1, "one turn 1: {replay}");
}

/// `rewind --now` on a task at work: the model call in flight is cancelled, the task waits for
/// the rewind, and goes on from the turn it names — without waiting out the slow turn.
#[test]
fn a_rewind_with_now_stops_the_attempt_at_work_and_goes_back_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let submit = json!({"tool_calls": [{"name": "submit_case", "arguments": case(1)}]});
    let script = json!({
        "worker": {"T-001": {"1": [
            {"tool_calls": [write("f1.txt", "ONE\n")]},
            {"delay_ms": 600_000, "tool_calls": [write("f2.txt", "SLOW\n")], "again": submit}
        ]}},
        "evaluator": {"T-001": {"1": [accept_quoting("f1.txt", "ONE")]}}
    });
    let (_rt, server) = serve(&script, false);
    let mut child = support::Reaped(
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = loop_fixture::session_when_log_has(&tmp.path().join("sessions"), "context_reset");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    // The slow second request is in flight once the first turn's tree is logged (the start's
    // is the first).
    let deadline = Instant::now() + Duration::from_secs(20);
    while events_of(&dir, "turn_tree").len() < 2 {
        assert!(Instant::now() < deadline, "the first turn's tree was never logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    support::until("the slow second call reaching the server", || {
        server.received().iter().filter(|r| r.role == "worker").count() == 2
    });
    // A rewind sent first without --now waits for the attempt to end; the one sent with --now
    // after it replaces it: the task is rewound once.
    let earlier = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-turn", "1"])
        .args(["--reason", "EARLIER-REASON"])
        .output()
        .unwrap();
    assert!(earlier.status.success(), "{}", String::from_utf8_lossy(&earlier.stderr));
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-turn", "1", "--now"])
        .args(["--reason", "NOW-REASON: start over from the first file"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let said = String::from_utf8_lossy(&sent.stdout);
    assert!(said.contains("the run stops T-001's attempt now and rewinds it"), "{said}");
    // The slow turn is ten minutes long: the run ending at all proves it was not waited out.
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");
    let held = events_of(&dir, "task_state")
        .into_iter()
        .find(|s| s["to"] == "needs_operator")
        .expect("held for the decision");
    assert!(held["reason"].as_str().unwrap().contains("takes it now"), "{held}");
    assert_eq!(events_of(&dir, "task_rewound").len(), 1);
    let replaced = events_of(&dir, "operator_action").into_iter().any(|a| {
        a["action"] == "refused"
            && a["reason"]
                .as_str()
                .is_some_and(|r| r.contains("replaced by the rewind sent after it"))
    });
    assert!(replaced, "the earlier rewind is said to be replaced");
    assert!(
        !events_of(&dir, "tool_result")
            .iter()
            .any(|r| r["output"].as_str().unwrap_or("").contains("f2.txt")),
        "the slow turn's tool never ran"
    );
    let files = support::git(&repo, &["ls-tree", "--name-only", &format!("session/{id}")]);
    assert!(files.contains("f1.txt") && !files.contains("f2.txt"), "{files}");
}

/// In a plan worked in two lanes, a rewind acts on the task's own lane: its worktree goes back,
/// the other task's work is untouched, and the rewound task lands once judged again.
#[test]
fn in_lanes_a_rewind_sets_back_only_its_tasks_lane() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    loop_fixture::depends(&plan, 1, "[]");
    loop_fixture::depends(&plan, 2, "[]");
    let script = json!({
        "worker": {
            "T-001": {
                "1": [{"tool_calls": [write("f1.txt", "LANE-ONE\n")]}, {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
                "2": [{"tool_calls": [write("f1.txt", "LANE-TWO\n"), write("junk.txt", "j\n")]}, {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
                "3": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]
            },
            "T-002": {"1": [{"tool_calls": [write("f2.txt", "2\n")]}, {"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}]}
        },
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [reject("weak_test")], "3": [accept_quoting("f1.txt", "LANE-ONE")]}, "T-002": {"1": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let held = ["--lanes", "2", "--max-attempts", "2", "--wait-for-operator"];
    let (mut child, dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &held,
        Stdio::piped(),
    );
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-attempt", "1"])
        .args(["--reason", "LANE-REASON"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");
    let done: Vec<String> = events_of(&dir, "task_done")
        .iter()
        .filter_map(|d| d["task_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(done.len(), 2, "{done:?}");
    let branch = format!("session/{id}");
    let files = support::git(&repo, &["ls-tree", "--name-only", &branch]);
    assert!(
        files.contains("f2.txt") && files.contains("f1.txt") && !files.contains("junk.txt"),
        "{files}"
    );
    let f1 = support::git(&repo, &["show", &format!("{branch}:f1.txt")]);
    assert_eq!(f1.trim(), "LANE-ONE", "attempt 1's file landed");
    let read_again =
        server.received().into_iter().find(|r| r.task == "T-001" && r.attempt == "3").unwrap();
    assert!(read_again.body.to_string().contains("LANE-REASON"));
}

/// Killed after the rewind, before its work is judged: the resume puts the rewound files back
/// (what the killed attempt left is gone) and goes on from the rewound conversation again.
#[test]
fn a_run_killed_after_a_rewind_restarts_the_attempt_from_the_rewind() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let submit = json!({"tool_calls": [{"name": "submit_case", "arguments": case(1)}]});
    let script = json!({
        "worker": {"T-001": {
            "1": [{"tool_calls": [write("f1.txt", "ONE\n")]}, submit.clone()],
            "2": [{"tool_calls": [write("stray.txt", "s\n")]}, {"delay_ms": 60000, "tool_calls": []}]
        }},
        "evaluator": {"T-001": {"1": [reject("weak_test")]}}
    });
    let (_rt, server) = serve(&script, false);
    let held = ["--max-attempts", "1", "--wait-for-operator"];
    let (mut child, dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &held,
        Stdio::null(),
    );
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-attempt", "1"])
        .args(["--reason", "KILL-REASON"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    // The rewound attempt writes a stray file, then waits on its model: killed there.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !events_of(&dir, "tool_result").iter().any(|r| r["attempt"] == 2) {
        assert!(Instant::now() < deadline, "the rewound attempt never ran a tool");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.0.kill();
    let _ = child.0.wait();

    let again = json!({
        "worker": {"T-001": {"2": [{"tool_calls": [{"name": "read_file", "arguments": {"path": "stray.txt"}}]}, submit]}},
        "evaluator": {"T-001": {"2": [accept_quoting("f1.txt", "ONE")]}}
    });
    let (_rt2, server2) = serve(&again, true);
    let resumed = harrow_cmd(tmp.path(), &server2.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{said}");
    assert!(said.contains("from where the operator rewound it"), "{said}");
    let read = events_of(&dir, "tool_result")
        .into_iter()
        .rev()
        .find(|r| r["tool"] == "read_file")
        .unwrap();
    assert!(
        read["is_error"] == true || !read["output"].as_str().unwrap_or("").contains('s'),
        "the stray file is gone: {read}"
    );
    let first = server2.received().into_iter().find(|r| r.role == "worker").unwrap();
    assert!(first.body.to_string().contains("KILL-REASON"), "the rewound conversation again");
    let files = support::git(&repo, &["ls-tree", "--name-only", &format!("session/{id}")]);
    assert!(files.contains("f1.txt") && !files.contains("stray.txt"), "{files}");
}
