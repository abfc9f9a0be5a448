//! `harrow reset` and `harrow cleanse` from the real binary, on a real repository.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::git;

use harrow::hands::workspace::Workspace;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A source repository and one session made on it, in the state `stop` says.
fn session(tmp: &Path, id: &str, stop: Option<&str>) -> (PathBuf, PathBuf) {
    let src = tmp.join("src");
    if !src.exists() {
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "init"]);
    }
    let dir = tmp.join("sessions").join(id);
    let (ws, _) = Workspace::create(&src, &dir.join("workspace"), id).unwrap();
    let checkpoint = json!({"session_id": id, "source": src, "workspace": ws.worktree, "branch": ws.branch,
        "status": if stop == Some("all_done") { "all_done" } else { "running" }});
    std::fs::write(dir.join("checkpoint.json"), serde_json::to_vec_pretty(&checkpoint).unwrap())
        .unwrap();
    let mut log = format!(
        "{{\"ts\":\"2026-11-22T05:00:00.000Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{{\"source\":\"{}\"}}}}\n",
        src.display()
    );
    if let Some(reason) = stop {
        let stop = json!({"ts": "2026-11-22T05:00:01.000Z", "seq": 2, "type": "stop", "payload": {"reason": reason}});
        log.push_str(&stop.to_string());
        log.push('\n');
    }
    std::fs::write(dir.join("events.jsonl"), log).unwrap();
    (src, dir)
}

fn harrow(tmp: &Path, args: &[&str]) -> Output {
    let sessions = tmp.join("sessions");
    Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(args)
        .args(["--dir", sessions.to_str().unwrap()])
        .env("HOME", tmp)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn cleanse_keeps_branch_and_log_then_reset_removes_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let id = "20261122-050000-aaaaaa";
    let (src, dir) = session(tmp.path(), id, Some("all_done"));

    let out = harrow(tmp.path(), &["cleanse", id]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("pass -y to confirm"), "{}", text(&out));
    assert!(dir.join("workspace").exists(), "nothing removed without confirmation");

    let out = harrow(tmp.path(), &["cleanse", "-y"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.join("workspace").exists());
    assert!(git(&src, &["branch", "--list"]).contains(&format!("session/{id}")));
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(log.lines().last().unwrap().contains("\"type\":\"archived\""), "{log}");
    let checkpoint: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["archived"], true);
    assert!(text(&harrow(tmp.path(), &["sessions"])).contains("done (archived)"));

    let head = git(&src, &["rev-parse", "HEAD"]);
    git(&src, &["update-ref", &format!("refs/harrow/{id}/T-001/1"), head.trim()]);
    git(&src, &["update-ref", "refs/harrow/20261122-050000-other/T-001/1", head.trim()]);
    let out = harrow(tmp.path(), &["reset", id, "-y"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.exists());
    assert!(!git(&src, &["branch", "--list"]).contains("session/"));
    let refs = git(&src, &["for-each-ref", "--format=%(refname)", "refs/harrow/"]);
    assert_eq!(
        refs.trim(),
        "refs/harrow/20261122-050000-other/T-001/1",
        "only this session's refs go"
    );
    assert_eq!(git(&src, &["status", "--porcelain"]), "", "the source tree was never touched");
}

#[test]
fn unfinished_and_running_sessions_are_protected() {
    let tmp = tempfile::tempdir().unwrap();
    let crashed = "20261122-050000-bbbbbb";
    let (_, crashed_dir) = session(tmp.path(), crashed, None);
    let out = harrow(tmp.path(), &["cleanse", crashed, "-y"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("is crashed, not finished"), "{}", text(&out));
    assert!(crashed_dir.join("workspace").exists());

    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let lock = json!({"pid": std::process::id(), "host": host.trim(), "started_at": "now"});
    std::fs::write(crashed_dir.join("lock"), lock.to_string()).unwrap();
    let out = harrow(tmp.path(), &["reset", crashed, "-y"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains(&format!("is running (pid {}", std::process::id())),
        "{}",
        text(&out)
    );
    assert!(crashed_dir.exists());
}

#[test]
fn cleanse_removes_old_demo_repositories_no_unfinished_session_works_on() {
    let tmp = tempfile::tempdir().unwrap();
    let repos = tmp.path().join("demo-repos");
    for name in
        ["textstats", "textstats-20261101-000000-aaaaaa", "textstats-20261102-000000-bbbbbb"]
    {
        let repo = repos.join(name);
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
    }
    std::fs::create_dir_all(repos.join("target")).unwrap();
    // A run that crashed on the second one may still be resumed: it keeps its repository.
    let dir = tmp.path().join("sessions/20261102-000000-bbbbbb");
    std::fs::create_dir_all(&dir).unwrap();
    let start = json!({"ts": "2026-11-02T00:00:00.000Z", "seq": 1, "type": "session_start",
        "payload": {"source": repos.join("textstats-20261102-000000-bbbbbb")}});
    std::fs::write(dir.join("events.jsonl"), format!("{start}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["cleanse", "-y"])
        .env("HARROW_SESSIONS_DIR", tmp.path().join("sessions"))
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut left: Vec<String> = std::fs::read_dir(&repos)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["target", "textstats", "textstats-20261102-000000-bbbbbb"], "{}", text(&out));
    assert!(
        text(&out).contains("Removed") && text(&out).contains("textstats-20261101-000000-aaaaaa")
    );
}
