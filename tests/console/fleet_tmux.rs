//! The fleet in a real terminal (a private tmux at 160×45) while three real runs go on against
//! scripted servers on 127.0.0.1: one done, one working two lanes, one that comes to be held
//! while the fleet watches — each in its true state, the held one first; the hold rings once;
//! `a` approves it without attaching and the run goes on; `Enter` attaches and `q` comes back.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support, tmux};

use loop_fixture::{accept, case, harrow_cmd, repo_and_plan, serve};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tmux::Tmux;

fn plan_in(root: &Path, name: &str, tasks: usize) -> (PathBuf, PathBuf) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    repo_and_plan(&dir, tasks)
}

fn run_args(cmd: &mut std::process::Command, plan: &Path, repo: &Path) {
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--no-validators", "--no-preflight"]);
}

/// The screen's line holding `needle`, by its place from the top.
fn line_of(screen: &str, needle: &str) -> Option<usize> {
    screen.lines().position(|l| l.contains(needle))
}

#[test]
fn the_fleet_shows_three_live_runs_rings_once_and_approves_without_attaching() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");

    // Done before the fleet opens.
    let done_script = json!({
        "worker": {"*": {"*": loop_fixture::write_and_submit(1)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt_d, done_server) = serve(&done_script, true);
    let (repo, plan) = plan_in(tmp.path(), "finished", 1);
    let mut done = harrow_cmd(tmp.path(), &done_server.base_url());
    run_args(&mut done, &plan, &repo);
    assert!(done.output().unwrap().status.success());

    let cmd = format!(
        "HARROW_SESSIONS_DIR={} TILTH_SESSIONS_DIR={} XDG_CONFIG_HOME={} {}",
        sessions.display(),
        tmp.path().join("no-tilth").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 160, 45);
    let raw = tmp.path().join("pane.raw");
    t.record(&raw);
    t.wait_for("Fleet: 1 run");

    // Two lanes, each task's first call answered only after a minute.
    let slow = |n: usize| {
        json!([
            {"delay_ms": 60_000, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": "x\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
        ])
    };
    let lanes_script = json!({
        "worker": {"T-001": {"*": slow(1)}, "T-002": {"*": slow(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt_l, lanes_server) = serve(&lanes_script, false);
    let (repo, plan) = plan_in(tmp.path(), "lanes", 2);
    for n in 1..=2 {
        loop_fixture::depends(&plan, n, "[]");
    }
    let mut lanes = harrow_cmd(tmp.path(), &lanes_server.base_url());
    run_args(&mut lanes, &plan, &repo);
    let _lanes =
        support::Reaped(lanes.args(["--lanes", "2"]).stdout(Stdio::null()).spawn().unwrap());

    // Held for a person while the fleet watches: the evaluator refuses the key once.
    let (_rt_h, held_server) = serve(&loop_fixture::first_of_two_refused_once(), true);
    let (repo, plan) = plan_in(tmp.path(), "held", 2);
    let mut held = harrow_cmd(tmp.path(), &held_server.base_url());
    run_args(&mut held, &plan, &repo);
    let mut held =
        support::Reaped(held.arg("--wait-for-operator").stdout(Stdio::null()).spawn().unwrap());

    t.wait_long("held T-001", 60);
    t.wait_for("2 lanes");
    t.keys(&["n"]);
    let s = t.wait_for("waits: T-001");
    assert!(s.contains("— 1 waiting"), "the title counts who waits: {s}");
    let (held_at, lanes_at, done_at) =
        (line_of(&s, "held T-001"), line_of(&s, "2 lanes"), line_of(&s, "done           1/1"));
    assert!(held_at < lanes_at && lanes_at < done_at, "what needs a person first: {s}");
    std::thread::sleep(Duration::from_millis(800));
    let written = String::from_utf8_lossy(&std::fs::read(&raw).unwrap_or_default()).into_owned();
    assert_eq!(
        written.matches("\u{1b}]9;harrow: ").filter(|_| true).count(),
        1,
        "one notification for the one hold: {:?}",
        written.matches("\u{1b}]9;").count()
    );
    assert!(written.contains("holds T-001"), "it names the run and the task");

    // Approve from the fleet; the held run goes on by itself.
    t.keys(&["a"]);
    t.wait_for("approve T-001, reason");
    t.literal("checked by hand");
    t.keys(&["Enter"]);
    t.wait_for("approve sent to");
    let deadline = Instant::now() + Duration::from_secs(60);
    while held.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the approved run did not go on: {}", t.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(held.0.wait().unwrap().success(), "it finished after the approval");
    let s = t.wait_for("Fleet: 3 runs ");
    assert!(!s.contains("held T-001") && !s.contains("waiting"), "{s}");

    // Attach to the selected run and come back to the list with Esc, cursor in place.
    let before = t.screen();
    t.keys(&["Enter"]);
    let s = t.wait_for(" 8×");
    assert!(s.contains("■ stopped: all_done"), "the approved run's console, replaying: {s}");
    t.keys(&["Escape"]);
    let s = t.wait_for("Fleet: 3 runs");
    assert!(s.contains("2 lanes"), "{s}");
    let preview = |s: &str| s.lines().nth(1).map(|l| l.chars().skip(98).collect::<String>());
    assert_eq!(preview(&s), preview(&before), "the same run is selected: {s}");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit ");
    assert!(s.contains("[exit 0]"), "{s}");
}

/// The fleet's ages move with the clock while nothing happens and no key is pressed: a run's
/// LAST EVENT reads a few seconds more a few seconds later.
#[test]
fn the_fleets_ages_move_without_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions/20261127-000000-abcdef");
    std::fs::create_dir_all(&dir).unwrap();
    let ts = jiff::Timestamp::now().checked_sub(jiff::SignedDuration::from_secs(5)).unwrap();
    let ts = ts.strftime("%Y-%m-%dT%H:%M:%S.000Z").to_string();
    let start = json!({"ts": ts, "seq": 1, "type": "session_start", "payload": {"task_count": 1, "feature": "ages"}});
    std::fs::write(dir.join("events.jsonl"), format!("{start}\n")).unwrap();
    std::fs::write(dir.join("lock"), r#"{"pid":1,"host":"elsewhere","started_at":""}"#).unwrap();
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} XDG_DATA_HOME={} {}",
        tmp.path().join("sessions").display(),
        tmp.path().display(),
        tmp.path().join("data").display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 140, 10);
    let age = |s: &str| -> u64 {
        let row = s.lines().find(|l| l.contains("abcdef ages")).unwrap_or_default();
        let at = row.find(" s ago").unwrap_or(0);
        row[..at].rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let first = age(&t.wait_for("s ago"));
    std::thread::sleep(Duration::from_millis(2500));
    let later = age(&t.screen());
    assert!(later >= first + 2, "the age moved on its own: {first} s, then {later} s");
    t.keys(&["q"]);
}

/// The fleet (in tmux) over one synthesized run of 200,000 events, whose export takes a while.
fn fleet_of_one_large_run(root: &Path, events: u64) -> (Tmux, PathBuf) {
    let sessions = root.join("sessions");
    let dir = sessions.join("20261127-120000-abcdef");
    harrow::session::synth::write_session(&dir, events, harrow::session::synth::Dialect::Harrow, 3)
        .unwrap();
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} TILTH_SESSIONS_DIR={} XDG_CONFIG_HOME={} {}",
        sessions.display(),
        root.join("no-tilth").display(),
        root.display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("Fleet: 1 run", 60);
    (t, dir)
}

/// The fleet's `E` exports on a job of its own: the list answers `Enter` while the export of
/// a large run goes on, and the export's end is said in the fleet that asked for it, never in
/// the console opened over it meanwhile.
#[test]
fn the_fleets_export_runs_as_a_job_and_reports_to_the_fleet_not_the_console_over_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, dir) = fleet_of_one_large_run(tmp.path(), 200_000);
    let export = dir.join("export.md");
    // Both keys at once: the console opens while the export runs only if the export does not
    // hold the fleet's loop.
    t.keys(&["E", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let opened = loop {
        let s = t.screen();
        if !s.contains("Fleet:") && s.contains("abcdef") {
            break s;
        }
        assert!(Instant::now() < deadline, "the console never opened: {s}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!export.exists(), "the console opened only after the export had ended: {opened}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !export.exists() {
        assert!(Instant::now() < deadline, "the export never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let console = t.screen();
    assert!(!console.contains("exported to"), "the fleet's export spoke in the console: {console}");
    t.keys(&["Escape"]);
    let s = t.wait_long("exported to", 30);
    assert!(s.contains("Fleet:") && s.contains("export.md"), "{s}");
}

/// Quitting while an export runs lets it finish, however long it takes, saying so on screen:
/// the file is whole when harrow has exited.
#[test]
fn quitting_the_fleet_while_it_exports_waits_for_the_export() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, dir) = fleet_of_one_large_run(tmp.path(), 50_000);
    t.keys(&["E", "q"]);
    // The premise: the quit came while the export was at work.
    t.wait_long("Finishing what is still at work", 120);
    t.wait_exit_long("[exit 0]", 300);
    let md = std::fs::read_to_string(dir.join("export.md")).unwrap_or_default();
    assert!(
        md.starts_with('#'),
        "the export was cut off by the quit: {:?}",
        &md[..md.len().min(80)]
    );
}
