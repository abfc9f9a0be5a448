//! `harrow demo --headless --fast` from the real binary: every task done, one commit each, and
//! the session is an ordinary one that `show` reads.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_demo_runs_headless_and_fast_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["demo", "--headless", "--fast"])
        .env("HARROW_SESSIONS_DIR", tmp.path().join("sessions"))
        .env("XDG_CONFIG_HOME", tmp.path())
        .env_remove("HARROW_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(60));
    for needle in [
        "BLOCKED by pre_tool hook (force push)",
        "T-002 #2 validators failed: tests FAILED",
        "verdict: reject (weak_test)",
        "↻ T-002 rework (attempt 2)",
        "✔ T-001 done, committed",
        "✔ T-002 done, committed",
        "✔ T-003 done, committed",
        "■ stopped: all_done",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    let session =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap().path();
    let show = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["show", session.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(summary["harrow"]["tasks_done"], 3);
    assert_eq!(summary["harrow"]["status"], "done");
    let repo =
        std::fs::read_dir(tmp.path().join("demo-repos")).unwrap().next().unwrap().unwrap().path();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let log = Command::new("git")
        .args(["log", "--format=%s", &format!("session/{id}")])
        .current_dir(&repo)
        .output()
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout);
    let tasks: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(
        tasks,
        [
            "T-003: Find the longest word",
            "T-002: Count character frequencies",
            "T-001: Count words"
        ]
    );
}
