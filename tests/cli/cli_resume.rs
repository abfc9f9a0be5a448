//! `harrow resume` after a `kill -9` mid-task: nothing accepted is lost, nothing is committed
//! twice, the torn log tail is cut back and the repair logged.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, summary, support};

use loop_fixture::{
    accept, case, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit,
};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use summary::show_json;
use support::git;

fn session_dir(tmp: &Path) -> PathBuf {
    std::fs::read_dir(tmp.join("sessions")).unwrap().next().unwrap().unwrap().path()
}

/// `harrow run --headless` in the background, and its session folder once it is there.
fn spawn_run(tmp: &Path, base_url: &str, plan: &Path, repo: &Path) -> (Child, PathBuf) {
    let child = headless_run(harrow_cmd(tmp, base_url), plan, repo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let started = || std::fs::read_dir(tmp.join("sessions")).is_ok_and(|mut d| d.next().is_some());
    while !started() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, session_dir(tmp))
}

fn wait_for(path: &Path, needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn resume_after_kill_9_mid_task_finishes_with_one_commit_per_task() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    let slow_submit = json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "f2.txt", "content": "2\n"}}]},
        {"delay_ms": 2500, "tool_calls": [{"name": "submit_case", "arguments": case(2)}]}
    ]);
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": slow_submit}, "T-003": {"1": write_and_submit(3)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_runtime, server) = serve(&script, false);

    let (mut child, dir) = spawn_run(tmp.path(), &server.base_url(), &plan, &repo);
    let log = dir.join("events.jsonl");
    assert!(
        wait_for(
            &log,
            "\"tool\":\"write_file\",\"result_preview\":\"wrote 2 bytes to f2.txt\"",
            Duration::from_secs(20)
        ),
        "T-002 never got going"
    );

    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let refused = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains(&format!("already being run by pid {}", child.id())), "{why}");

    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(b"{\"ts\": \"2026-11-22T06:")
        .unwrap();
    assert!(dir.join("workspace/f2.txt").exists(), "the unfinished task's work is in the worktree");

    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("log repaired: cut 22 torn bytes"), "{stdout}");
    assert!(
        stdout.contains(&format!("(pid {} on ", child.id()))
            && stdout.contains("is gone; this resume takes over"),
        "the dead run whose lock is taken over is named: {stdout}"
    );
    assert!(
        stdout.contains("▶ T-002 started")
            && stdout.contains("✔ T-003 done")
            && stdout.contains("■ stopped: all_done"),
        "{stdout}"
    );
    assert!(!stdout.contains("T-001 started"), "the accepted task is not redone:\n{stdout}");

    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(
        ours,
        ["T-003: Write file 3", "T-002: Write file 2", "T-001: Write file 1"],
        "one commit per task"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("\"type\":\"log_repaired\"") && text.contains("\"type\":\"session_resume\"")
    );
    let summary = show_json(&dir);
    assert_eq!(summary["harrow"]["tasks_done"], 3);
    assert_eq!(
        summary["harrow"]["unreadable_lines"]["count"], 0,
        "the torn tail was cut, not left corrupt"
    );
    assert_eq!(summary["harrow"]["status"], "done");

    let again = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(
        again.status.success()
            && String::from_utf8_lossy(&again.stdout).contains("nothing to resume")
    );
}

/// A finished run of two tasks, each accepted at once: the repository, the session folder and
/// id, and the scripted server (with its runtime) for a resume to talk to.
fn two_accepted_tasks(
    tmp: &Path,
) -> (PathBuf, PathBuf, String, tokio::runtime::Runtime, harrow::brain::scripted::ScriptedServer) {
    let (repo, plan) = repo_and_plan(tmp, 2);
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (runtime, server) = serve(&script, true);
    let ok = headless_run(harrow_cmd(tmp, &server.base_url()), &plan, &repo).output().unwrap();
    assert!(ok.status.success());
    let dir = session_dir(tmp);
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    (repo, dir, id, runtime, server)
}

#[test]
fn an_accepted_task_whose_commit_missed_the_log_is_committed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, dir, id, _runtime, server) = two_accepted_tasks(tmp.path());
    // Rewind the log to just after T-002's accept, as if the process died before its commit
    // was logged; the commit itself is on the branch.
    let log = dir.join("events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let cut = text.find("\"type\":\"task_done\",\"payload\":{\"task_id\":\"T-002\"").unwrap();
    let line_start = text[..cut].rfind('\n').map_or(0, |i| i + 1);
    std::fs::write(&log, &text[..line_start]).unwrap();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    assert_eq!(subjects.lines().filter(|l| l.starts_with("T-002")).count(), 1, "{subjects}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"recovered\":true"), "the recovered commit is logged");
}

#[test]
fn a_kill_while_the_evaluator_thinks_restarts_the_task_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let mut slow_accept = accept();
    slow_accept["delay_ms"] = json!(1500);
    let script = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
        "evaluator": {"*": {"*": [slow_accept]}}
    });
    let (_runtime, server) = serve(&script, false);
    let (mut child, dir) = spawn_run(tmp.path(), &server.base_url(), &plan, &repo);
    assert!(
        wait_for(&dir.join("events.jsonl"), "\"to\":\"evaluating\"", Duration::from_secs(20)),
        "T-001 never reached its review"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("▶ T-001 started") && stdout.contains("■ stopped: all_done"));
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(ours, ["T-002: Write file 2", "T-001: Write file 1"]);
}

#[test]
fn a_kill_at_each_step_between_an_accept_and_its_commit_resumes_to_one_done_and_one_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, dir, id, _runtime, server) = two_accepted_tasks(tmp.path());
    let log = dir.join("events.jsonl");
    let full = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let is = |l: &str, kind: &str| {
        l.contains(&format!("\"type\":\"{kind}\"")) && l.contains("\"task_id\":\"T-002\"")
    };
    let verdict = lines.iter().position(|l| is(l, "evaluator_verdict")).unwrap();
    let commit = lines.iter().position(|l| is(l, "commit")).unwrap();
    let t1 = git(&repo, &["rev-parse", &format!("session/{id}~1")]).trim().to_owned();
    let worktree = dir.join("workspace");
    // The process dies after each line from the accepting verdict to the line before the
    // commit: the log ends there, and the branch is where it was before T-002's commit.
    for keep in verdict + 1..=commit {
        let text: String = lines[..keep].iter().flat_map(|l| [*l, "\n"]).collect();
        std::fs::write(&log, text).unwrap();
        git(&worktree, &["reset", "-q", "--soft", &t1]);
        let out = harrow_cmd(tmp.path(), &server.base_url())
            .args(["resume", &id, "--headless"])
            .output()
            .unwrap();
        let after = lines[keep - 1].chars().take(90).collect::<String>();
        assert!(out.status.success(), "after {after}: {}", String::from_utf8_lossy(&out.stderr));
        let events = support::strict_events(&dir);
        for kind in ["task_done", "commit"] {
            let of_t2: Vec<_> = events
                .iter()
                .filter(|e| e["type"] == kind && e["payload"]["task_id"] == "T-002")
                .collect();
            assert_eq!(of_t2.len(), 1, "after {after}: {kind} {of_t2:?}");
            assert_eq!(of_t2[0]["payload"]["attempt"], 1, "the true attempt: {:?}", of_t2[0]);
            assert!(of_t2[0]["payload"]["iter"].as_u64() > Some(0), "{:?}", of_t2[0]);
        }
        let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
        assert_eq!(subjects.lines().filter(|l| l.starts_with("T-002")).count(), 1, "{subjects}");
    }
}

/// A task accepted before a crash whose worktree no longer holds the judged work is held on
/// resume; resuming the held run again states the decisions there are (no internal error),
/// and `show` names the task and why it waits.
#[test]
fn resuming_a_run_held_because_its_work_changed_after_the_verdict_states_the_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, dir, id, _runtime, server) = two_accepted_tasks(tmp.path());
    let log = dir.join("events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let verdict = lines
        .iter()
        .position(|l| l.contains("\"type\":\"evaluator_verdict\"") && l.contains("\"T-002\""))
        .unwrap();
    let kept: String = lines[..=verdict].iter().flat_map(|l| [*l, "\n"]).collect();
    std::fs::write(&log, kept).unwrap();
    let t1 = git(&repo, &["rev-parse", &format!("session/{id}~1")]).trim().to_owned();
    let worktree = dir.join("workspace");
    git(&worktree, &["reset", "-q", "--soft", &t1]);
    std::fs::write(worktree.join("f2.txt"), "changed after the verdict\n").unwrap();
    for round in ["first", "second"] {
        let out = harrow_cmd(tmp.path(), &server.base_url())
            .args(["resume", &id, "--headless"])
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!said.contains("cannot take"), "{round} resume: {said}");
        assert!(said.contains("T-002"), "{round} resume names the task: {said}");
        assert!(
            said.contains("force-accept") || said.contains("approve"),
            "{round}: the decisions: {said}"
        );
    }
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    assert_eq!(
        subjects.lines().filter(|l| l.starts_with("T-002")).count(),
        0,
        "nothing landed unjudged"
    );
}

/// A session whose second task is still to do — its first run's endpoint knew only T-001 and
/// the run stopped — with its `session_start` rewritten by whoever can write the folder:
/// `edit` changes the payload. Returns the folder, the id, and a server that knows both tasks.
fn edited_session(
    tmp: &Path,
    edit: impl Fn(&mut serde_json::Value),
) -> (PathBuf, String, tokio::runtime::Runtime, harrow::brain::scripted::ScriptedServer) {
    let (repo, plan) = repo_and_plan(tmp, 2);
    let first = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_first_rt, first) = serve(&first, true);
    let stopped = headless_run(harrow_cmd(tmp, &first.base_url()), &plan, &repo).output().unwrap();
    assert!(!stopped.status.success(), "the first run stops at T-002");
    let dir = session_dir(tmp);
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let log = dir.join("events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut start: serde_json::Value = serde_json::from_str(head).unwrap();
    edit(&mut start["payload"]);
    std::fs::write(&log, format!("{start}\n{rest}")).unwrap();
    let both = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (runtime, server) = serve(&both, true);
    (dir, id, runtime, server)
}

/// Someone who can write the session folder points its recorded endpoints at their own
/// server: a resume sends the operator's key only to the operator's endpoint (the difference
/// logged), and with no endpoint of the operator's it refuses, naming the flag that takes the
/// recorded one — the other server hears nothing either way.
#[test]
fn a_resume_never_sends_the_operators_key_to_an_endpoint_the_folder_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let (_thief_rt, thief) = serve(&json!({}), true);
    let thief_url = thief.base_url();
    let (dir, id, _rt, server) = edited_session(tmp.path(), |p| {
        p["base_url"] = json!(thief_url);
        p["endpoints"]["worker"]["base_url"] = json!(thief_url);
        p["endpoints"]["evaluator"]["base_url"] = json!(thief_url);
    });
    let refused = harrow_cmd(tmp.path(), &server.base_url())
        .env_remove("HARROW_BASE_URL")
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&thief_url) && said.contains("--trust-recorded"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(thief.received().is_empty(), "the recorded endpoint heard nothing");
    assert!(!server.received().is_empty(), "the operator's endpoint did the work");
    let events = support::strict_events(&dir);
    let resume = events.iter().find(|e| e["type"] == "session_resume").unwrap();
    assert!(resume["payload"]["endpoint_overrides"].to_string().contains(&thief_url), "{resume}");
}

/// Validators the folder recorded, which the operator's configuration does not name, never run
/// on a resume without `--trust-recorded`; with it they do.
#[test]
fn recorded_validators_the_operator_never_named_do_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, id, _rt, server) = edited_session(tmp.path(), |p| {
        let command = "echo planted-canary-$((40+2))";
        p["validators"] = json!([{"name": "planted", "command": command, "timeout_secs": 10}]);
    });
    let ran =
        || std::fs::read_to_string(dir.join("events.jsonl")).unwrap().contains("planted-canary-42");
    let refused = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert_eq!(refused.status.code(), Some(2), "{said}{stdout}");
    assert!(said.contains("planted") && said.contains("--trust-recorded"), "{said}");
    assert!(!ran(), "the planted command never ran");
    let trusted = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless", "--trust-recorded"])
        .output()
        .unwrap();
    assert!(
        trusted.status.success(),
        "{}{}",
        String::from_utf8_lossy(&trusted.stdout),
        String::from_utf8_lossy(&trusted.stderr)
    );
    assert!(ran(), "trusted, the recorded validator runs");
}

/// A worktree the folder says is outside it (the operator's home, say) is refused: the
/// worker's tools would work there.
#[test]
fn a_recorded_worktree_outside_the_session_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let at = elsewhere.display().to_string();
    let (_dir, id, _rt, server) = edited_session(tmp.path(), |p| p["worktree"] = json!(at));
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("outside its folder") && said.contains("--trust-recorded"), "{said}");
}

/// `control.jsonl` planted as a link to one of the operator's files: `harrow control` refuses
/// to write through it, and the file keeps its bytes.
#[test]
fn a_planted_control_link_is_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let (_dir, id, _rt, server) = edited_session(tmp.path(), |_| {});
    let dir = session_dir(tmp.path());
    let victim = tmp.path().join("bashrc");
    std::fs::write(&victim, "alias ls=ls\n").unwrap();
    let _ = std::fs::remove_file(dir.join("control.jsonl"));
    std::os::unix::fs::symlink(&victim, dir.join("control.jsonl")).unwrap();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "pause"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("symbolic link"), "{said}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "alias ls=ls\n");
}

/// Every file a resume writes in the session folder — checkpoint, summary, task status,
/// progress, a ledger, the reply in flight — planted as a link to one of the user's files:
/// each is replaced (what is written whole) or refused (what is appended to), never written
/// through, and a planted link in the log's place stops the resume with one line.
#[test]
fn links_planted_in_the_session_folder_are_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, id, _rt, server) = edited_session(tmp.path(), |_| {});
    let victims = tmp.path().join("victims");
    std::fs::create_dir_all(&victims).unwrap();
    let files = [
        "checkpoint.json",
        "summary.json",
        "task-status.json",
        "progress.txt",
        "ledger/T-002.jsonl",
        "live.json",
    ];
    for (n, file) in files.iter().enumerate() {
        let victim = victims.join(format!("v{n}"));
        std::fs::write(&victim, format!("precious {n}\n")).unwrap();
        let at = dir.join(file);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(&victim, &at).unwrap();
    }
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Replaced files are replaced; a file harrow appends to (a ledger, progress) is refused,
    // and the run stops saying which.
    assert!(
        out.status.success()
            || said.contains("is a symbolic link; harrow does not write through links"),
        "{said}"
    );
    for (n, file) in files.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(victims.join(format!("v{n}"))).unwrap(),
            format!("precious {n}\n"),
            "{file}: {said}"
        );
    }
    let log = dir.join("events.jsonl");
    let victim = victims.join("log");
    std::fs::rename(&log, &victim).unwrap();
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let before = std::fs::read(&victim).unwrap();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read(&victim).unwrap(), before, "the log behind the link is untouched");
}

/// Kubernetes stops a pod with SIGTERM: a headless run mid-call stops as on Ctrl-C — the call
/// cancelled, a `stop` (interrupted, resumable) logged, exit 143 — and resumes to the end.
#[test]
fn sigterm_mid_call_stops_gracefully_and_the_run_resumes_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let mut slow = write_and_submit(2);
    slow[0]["delay_ms"] = json!(600_000);
    let first = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"1": slow}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&first, false);
    let (child, dir) = spawn_run(tmp.path(), &server.base_url(), &plan, &repo);
    assert!(
        wait_for(&dir.join("events.jsonl"), "\"T-002\"", Duration::from_secs(20)),
        "T-002 never started"
    );
    support::until("T-002's call reaching the server", || {
        server.received().iter().any(|r| r.role == "worker" && r.task == "T-002")
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    // The reply in flight is ten minutes away: ending well before proves it was cancelled.
    let status = support::ends_within(child, 60, "the run after SIGTERM").status;
    assert_eq!(status.code(), Some(143));
    let events = support::strict_events(&dir);
    let stop = events.iter().rev().find(|e| e["type"] == "stop").expect("a stop is logged");
    assert_eq!(stop["payload"]["reason"], "interrupted", "{stop}");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let both = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt2, server2) = serve(&both, true);
    let out = harrow_cmd(tmp.path(), &server2.base_url())
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let subjects = git(&repo, &["log", "--format=%s", &format!("session/{id}")]);
    assert!(subjects.contains("T-001") && subjects.contains("T-002"), "{subjects}");
}
