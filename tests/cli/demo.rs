//! `harrow demo --headless --fast` from the real binary: every task done, one commit each, and
//! the session is an ordinary one that `show` reads.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{summary, support, tools};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use summary::show_json;

fn harrow(home: &Path) -> Command {
    support::harrow_in(home)
}

fn task_commits(home: &Path, id: &str) -> Vec<String> {
    let repo = support::demo_repo(home);
    let log = Command::new("git")
        .args(["log", "--format=%s", &format!("session/{id}")])
        .current_dir(&repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&log.stdout)
        .lines()
        .filter(|l| l.starts_with("T-"))
        .map(str::to_owned)
        .collect()
}

/// Every verdict and validator run of the session names the commit its work was kept as, and
/// each of those commits is on a ref under `refs/harrow/<id>/`: every judged attempt is kept.
fn every_judged_attempt_is_kept(home: &Path, session: &Path) -> Vec<String> {
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let repo = support::demo_repo(home);
    let refs = Command::new("git")
        .args(["for-each-ref", "--format=%(refname) %(objectname)", &format!("refs/harrow/{id}/")])
        .current_dir(&repo)
        .output()
        .unwrap();
    let refs = String::from_utf8_lossy(&refs.stdout).into_owned();
    let log = support::strict_events(session);
    let mut kept = Vec::new();
    for event in &log {
        let kind = event["type"].as_str().unwrap_or("");
        if kind != "evaluator_verdict" && kind != "validator_run" {
            continue;
        }
        let sha = event["payload"]["attempt_commit"].as_str();
        let sha = sha.unwrap_or_else(|| panic!("{kind} names no kept attempt: {event}"));
        let line = refs.lines().find(|l| l.ends_with(sha));
        let line = line.unwrap_or_else(|| panic!("{sha} of a {kind} is on no ref:\n{refs}"));
        kept.push(line.split(' ').next().unwrap_or("").to_owned());
    }
    kept
}

/// The demo's commits, newest first: T-002 and T-003 are worked side by side after T-001, and
/// T-002 (rejected once) lands last.
const COMMITS: [&str; 3] =
    ["T-002: Count character frequencies", "T-003: Find the longest word", "T-001: Count words"];

#[test]
fn a_build_cache_outside_the_worktree_stays_writable_in_the_sandbox() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("shared-target");
    let out = harrow(tmp.path())
        .args(["demo", "--headless", "--fast"])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for lane in ["harrow-lane-1", "harrow-lane-2"] {
        let built = target.join(lane).join("debug");
        assert!(built.is_dir(), "each lane built in its own part of the configured folder");
    }
    // The premise: the builds ran in bubblewrap's sandbox.
    tools::require_bwrap();
    let session = std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap();
    let start = support::strict_events(&session.unwrap().path())
        .into_iter()
        .find(|e| e["type"] == "session_start")
        .unwrap();
    assert_eq!(start["payload"]["sandbox"], "bubblewrap", "{start}");
}

#[test]
fn a_demo_that_leaves_its_script_says_why_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = harrow(tmp.path())
        .args(["demo", "--headless", "--fast"])
        .env("CARGO_TARGET_DIR", "/proc/harrow-cannot-write-here")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("harrow demo: the demo's script did not expect this: validators failed (`cargo test --quiet --offline`, exit 101")
            && stderr.contains("CARGO_TARGET_DIR"),
        "{stderr}"
    );
    assert!(!stdout.contains("cannot be reached"), "not an unreachable endpoint: {stdout}");
    assert!(stdout.contains("the script did not expect this"), "{stdout}");
}

#[test]
fn the_demo_runs_headless_and_fast_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let out = harrow(tmp.path()).args(["demo", "--headless", "--fast"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "BLOCKED by pre_tool hook (force push)",
        "T-002 #2 validators failed: tests FAILED",
        "verdict: reject (weak_test)",
        "↻ T-002 rework (attempt 2)",
        "✔ T-001 done, committed",
        "✔ T-002 done, committed",
        "✔ T-003 done, committed",
        "■ stopped: all_done",
        "(3 tasks, up to 2 at once)",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    let t3 = stdout.find("▶ T-003 started").unwrap_or(usize::MAX);
    let t2_done = stdout.find("✔ T-002 done").unwrap_or(0);
    assert!(t3 < t2_done, "T-003 starts while T-002 is still at work:\n{stdout}");
    let session =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap().path();
    let summary = show_json(&session);
    assert_eq!(summary["harrow"]["tasks_done"], 3);
    assert_eq!(summary["harrow"]["status"], "done");
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(task_commits(tmp.path(), &id), COMMITS);
    // `show`'s rows by model (names of different lengths) put their figures in one column.
    let shown = harrow(tmp.path()).args(["show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let by_model = shown.split("By model\n").nth(1).unwrap_or_else(|| panic!("{shown}"));
    // Where a row's figures start: after the model's name (no spaces) and the padding.
    let figures_at = |row: &str| {
        let rest = &row[2..];
        let name_end = rest.find(' ').unwrap_or_else(|| panic!("{row}"));
        2 + rest.len() - rest[name_end..].trim_start().len()
    };
    let rows: Vec<&str> = by_model.lines().take_while(|l| l.starts_with("  ")).collect();
    assert_eq!(rows.len(), 2, "{shown}");
    assert_eq!(figures_at(rows[0]), figures_at(rows[1]), "{shown}");
    let kept = every_judged_attempt_is_kept(tmp.path(), &session);
    for name in ["T-001/1", "T-002/1", "T-002/2", "T-003/1"] {
        let full = format!("refs/harrow/{id}/{name}");
        assert!(kept.contains(&full), "{full} is kept: {kept:?}");
    }
    assert!(
        kept.iter().any(|r| r.starts_with(&format!("refs/harrow/{id}/T-002/1-checks-"))),
        "the attempt whose validators failed is kept too: {kept:?}"
    );

    // Again: the same repository and the same build folder, no build in any worktree.
    let again = harrow(tmp.path()).args(["demo", "--headless", "--fast"]).output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let mut made: Vec<String> = std::fs::read_dir(tmp.path().join("demo-repos"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made, ["target", "textstats"], "one repository and one build folder");
    for session in std::fs::read_dir(tmp.path().join("sessions")).unwrap().flatten() {
        assert!(!session.path().join("workspace/target").exists(), "a build in the worktree");
    }
}

#[test]
fn a_demo_killed_during_a_rework_resumes_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = harrow(tmp.path())
        .args(["demo", "--headless"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sessions = tmp.path().join("sessions");
    let deadline = Instant::now() + Duration::from_secs(60);
    let session = loop {
        let found = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next());
        if let Some(entry) = found {
            let dir = entry.unwrap().path();
            let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
            if log.contains("\"weak_test\"") {
                break dir;
            }
        }
        assert!(Instant::now() < deadline, "the demo never reached its reject");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let before = task_commits(tmp.path(), &id);
    assert!(before.last().is_some_and(|c| c == "T-001: Count words"), "{before:?}");
    assert!(!before.iter().any(|c| c.starts_with("T-002")), "killed inside T-002: {before:?}");

    let out = harrow(tmp.path()).args(["resume", &id, "--headless"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("✔ T-002 done") && stdout.contains("■ stopped: all_done"), "{stdout}");
    assert_eq!(task_commits(tmp.path(), &id), COMMITS, "one commit per task, none twice");
    let kept = every_judged_attempt_is_kept(tmp.path(), &session);
    assert!(kept.contains(&format!("refs/harrow/{id}/T-002/1")), "the rejected attempt: {kept:?}");
}

#[test]
fn an_unwritable_sessions_folder_is_one_line_and_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["demo", "--headless", "--fast"])
        .env("HARROW_SESSIONS_DIR", file.join("sessions"))
        .env("XDG_CONFIG_HOME", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("point HARROW_SESSIONS_DIR at a folder you can write to"), "{stderr}");
}

#[test]
fn off_a_terminal_the_demo_replay_and_watch_print_lines_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let out = harrow(tmp.path()).args(["demo", "--fast"]).stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("not on a terminal; printing one line per event instead"), "{stderr}");
    assert!(stdout.contains("■ stopped: all_done"), "{stdout}");
    let session =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap().path();
    for verb in ["replay", "watch"] {
        let out = harrow(tmp.path())
            .args([verb, session.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{verb}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("✔ T-003 done, committed"), "{verb}: {stdout}");
    }
}

#[test]
fn the_demo_with_prep_interviews_writes_its_plan_and_runs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = harrow(tmp.path()).args(["demo", "--prep", "--headless", "--fast"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("prep asks: What should `textstats` be able to tell"), "{stdout}");
    assert!(stdout.contains("you answer: The first one."), "{stdout}");
    assert!(stdout.contains("The plan, as it will be written"), "{stdout}");
    assert!(stdout.contains("■ stopped: all_done"), "{stdout}");
    let repo = support::demo_repo(tmp.path());
    let log = Command::new("git")
        .args(["log", "--format=%s", "--all"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("Plan textstats (harrow prep)"), "the plan was committed: {log}");
    let sessions: Vec<_> =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().filter_map(Result::ok).collect();
    assert_eq!(sessions.len(), 2, "the interview and the run are sessions of their own");
    let prep = sessions
        .iter()
        .map(std::fs::DirEntry::path)
        .find(|p| {
            support::strict_events(p).first().is_some_and(|e| e["payload"]["phase"] == "prep")
        })
        .unwrap();
    let events = support::strict_events(&prep);
    assert!(events.iter().any(|e| e["type"] == "plan_written"));
    assert!(events.iter().any(|e| e["type"] == "tool_call" && e["payload"]["tool"] == "read_file"));
}
