//! The real binary on good and bad session folders: what a user sees, and the exit status.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CRASHED: &str = "20261122-042956-344294";
const DONE: &str = "20261122-042843-e02b19";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth")
}

/// Runs harrow with a private home, so no real session folder is ever read.
fn harrow(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(args)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("HARROW_SESSIONS_DIR")
        .env_remove("TILTH_SESSIONS_DIR")
        .env_remove("TILTH_HOME")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn lists_sessions_newest_first_from_the_default_tilth_folder() {
    let home = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), &home.path().join(".tilth/sessions"));
    let out = harrow(home.path(), &["sessions"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[0].starts_with("ID"), "{text}");
    assert!(rows[1].starts_with("20261122-044421-4e1c56") && rows[1].contains("done"), "{text}");
    assert!(
        rows[2].starts_with(CRASHED) && rows[2].contains("crashed") && rows[2].contains("0/4"),
        "{text}"
    );
    assert!(
        rows[3].starts_with(DONE) && rows[3].contains("done (archived)") && rows[3].contains("4/4"),
        "{text}"
    );
    assert!(rows[3].contains("148,585") && rows[3].contains("$0.043"), "{text}");

    let alone = harrow(home.path(), &[]);
    assert!(alone.status.success(), "{}", stderr(&alone));
    assert_eq!(stdout(&alone), text, "`harrow` alone, not on a terminal, prints the same list");

    let json = harrow(home.path(), &["sessions", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let ids: Vec<&str> = v.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["20261122-044421-4e1c56", CRASHED, DONE]);
    assert_eq!(v[1]["status"], "crashed");
    assert_eq!(v[2]["tokens"], 148_585);
    assert_eq!(v[2]["tasks_total"], 4);
}

#[test]
fn harrow_and_tilth_env_folders_are_both_listed() {
    let home = tempfile::tempdir().unwrap();
    let tilth = home.path().join("t");
    let ours = home.path().join("h");
    copy_dir(&fixtures().join(DONE), &tilth.join(DONE));
    copy_dir(&fixtures().join(CRASHED), &ours.join(CRASHED));
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["sessions", "--json"])
        .env("HOME", home.path())
        .env("HARROW_SESSIONS_DIR", &ours)
        .env("TILTH_SESSIONS_DIR", &tilth)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2, "{}", stdout(&out));
}

#[test]
fn show_prints_a_readable_summary_by_prefix_and_by_path() {
    let home = tempfile::tempdir().unwrap();
    let dir = fixtures();
    let by_prefix = harrow(home.path(), &["show", "20261122-0428", "--dir", dir.to_str().unwrap()]);
    assert!(by_prefix.status.success(), "{}", stderr(&by_prefix));
    let text = stdout(&by_prefix);
    for needle in [
        "Status    done: every task finished",
        "Tasks     4 of 4 done",
        "Verdicts  4 accepted, 3 rejected (acceptance_gap 2, half_finished 1)",
        "Hooks     pre_tool: allow 17, block 1",
        "failed before: evaluator_cap",
        "Last stop all_done at 2026-11-22 04:29:27Z",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let crashed = dir.join(CRASHED);
    let by_path = harrow(home.path(), &["show", crashed.to_str().unwrap()]);
    assert!(stdout(&by_path).contains("Status    crashed"), "{}", stdout(&by_path));
}

#[test]
fn show_json_carries_tilths_keys_and_harrows() {
    let home = tempfile::tempdir().unwrap();
    let dir = fixtures().join(DONE);
    let out = harrow(home.path(), &["show", dir.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], 4);
    assert_eq!(v["session_id"], DONE);
    assert_eq!(v["tasks"]["T-003"]["failure_reason"], "evaluator_cap");
    assert_eq!(v["tasks"]["T-001"]["tokens"]["by_phase"]["evaluator"]["prompt"], 10_797);
    assert_eq!(v["harrow"]["status"], "done");
    assert_eq!(v["harrow"]["tasks"]["T-003"]["attempts"], 3);
}

#[test]
fn corrupt_lines_are_skipped_counted_and_named() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(DONE);
    copy_dir(&fixtures().join(DONE), &dir);
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[11] = "{\"ts\": \"2026-11-22T04:28:4".into();
    lines[39] = "garbage".into();
    lines[40] = "{\"type\": \"model_call\", \"payload\": {\"x\": \u{1}}".into();
    let mut bytes = lines.join("\n").into_bytes();
    bytes.extend_from_slice(b"\n\xff\xfe not utf-8\n{\"type\": \"stop\", \"payl");
    std::fs::write(dir.join("events.jsonl"), bytes).unwrap();
    let out = harrow(home.path(), &["show", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("4 unreadable lines (12, 40, 41, 152) skipped"), "{text}");
    assert!(text.contains("has no newline yet"), "{text}");
    // The list's row counts them too, and has exactly the row's keys, whichever list reads it.
    let out = harrow(home.path(), &["sessions", "--dir", home.path().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!(row["unreadable_lines"], 4, "{row}");
    assert_eq!(row["status"], "done", "{row}");
    let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "id",
        "dir",
        "origin",
        "feature",
        "prep",
        "status",
        "held_task",
        "held_reason",
        "tasks_done",
        "tasks_total",
        "at_work",
        "tokens",
        "cost",
        "started_at",
        "last_event_at",
        "repo",
        "host",
        "pull_request",
        "unreadable_lines",
        "archived",
    ];
    let mut got = keys.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn bad_ids_and_folders_are_one_clear_line_with_status_2() {
    let home = tempfile::tempdir().unwrap();
    let dir = fixtures();
    let dir = dir.to_str().unwrap();
    for (args, needle) in [
        (vec!["show", "nope", "--dir", dir], "no session matches 'nope' in"),
        (vec!["show", "2026", "--dir", dir], "'2026' matches 3 sessions"),
        (vec!["show", "./src"], "is not a session folder"),
        (vec!["show", "/no/such/dir"], "is not a session folder"),
    ] {
        let out = harrow(home.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn missing_or_empty_logs_and_half_written_checkpoints_are_stated() {
    let home = tempfile::tempdir().unwrap();
    let only_checkpoint = home.path().join("20261122-000000-aaaaaa");
    std::fs::create_dir_all(&only_checkpoint).unwrap();
    std::fs::write(
        only_checkpoint.join("checkpoint.json"),
        "{\"session_id\": \"x\", \"status\": \"runn",
    )
    .unwrap();
    let out = harrow(home.path(), &["show", only_checkpoint.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("events.jsonl is missing"), "{text}");
    assert!(text.contains("Checkpoint unreadable"), "{text}");
    assert!(text.contains("Status    empty"), "{text}");

    let empty_log = home.path().join("20261122-000000-bbbbbb");
    std::fs::create_dir_all(&empty_log).unwrap();
    std::fs::write(empty_log.join("events.jsonl"), "").unwrap();
    let text = stdout(&harrow(home.path(), &["show", empty_log.to_str().unwrap()]));
    assert!(text.contains("events.jsonl is empty"), "{text}");
}

#[test]
fn output_to_a_closed_pipe_ends_quietly_with_status_0() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    harrow::session::synth::write_session(&dir, 5_000, harrow::session::synth::Dialect::Harrow, 5)
        .unwrap();
    for args in [
        vec!["replay", dir.to_str().unwrap(), "--headless"],
        vec!["export", dir.to_str().unwrap(), "--format", "json"],
        vec!["show", dir.to_str().unwrap(), "--json"],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harrow"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Peak resident memory of a child, polled from `/proc` until it exits — or, with `until`,
/// until its output holds that text, when it is ended: what one hostile folder may cost a
/// reader. A child still running after two minutes is killed (a reader that hangs).
fn run_bounded(mut cmd: Command, until: Option<&str>) -> (Output, u64) {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = child.stdout.take().unwrap();
    let read = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = out.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                read.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        })
    };
    let mut peak = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .unwrap_or(0);
        peak = peak.max(rss * 1024);
        let seen =
            until.is_some_and(|u| String::from_utf8_lossy(&read.lock().unwrap()).contains(u));
        if seen || std::time::Instant::now() > deadline {
            let _ = child.kill();
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let mut stderr = Vec::new();
    let _ = child.stderr.take().map(|mut e| e.read_to_end(&mut stderr));
    reader.join().unwrap();
    let stdout = std::mem::take(&mut *read.lock().unwrap());
    (Output { status, stdout, stderr }, peak)
}

/// A shared sessions folder where others wrote hostile entries — a FIFO, links to `/dev/zero`
/// and `/dev/stdin`, a folder, a 2 GB line and a 300 MB summary in place of a session's files —
/// lists every other run within 100 MB, never waiting on any of them, from `sessions`,
/// `sessions --json`, `sessions --follow` and `show` of the giant. (How soon is a budget,
/// measured by the fleet bench; each folder's reader gives up after a deadline of its own.)
#[test]
fn hostile_session_folders_never_hang_or_flood_the_readers() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("shared");
    copy_dir(&fixtures().join(DONE), &root.join(DONE));
    let start = "{\"ts\":\"2026-11-26T00:00:01Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{\"task_count\":1}}\n";
    let folder = |name: &str| {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let fifo = folder("20261126-000001-f1f0f0").join("events.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", folder("20261126-000002-2e2020").join("events.jsonl"))
        .unwrap();
    std::os::unix::fs::symlink("/dev/stdin", folder("20261126-000003-57d100").join("events.jsonl"))
        .unwrap();
    std::fs::create_dir_all(folder("20261126-000004-d1d1d1").join("events.jsonl")).unwrap();
    let giant = folder("20261126-000005-b16b16").join("events.jsonl");
    let mut f = std::fs::File::create(&giant).unwrap();
    f.write_all(start.as_bytes()).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let big_summary = folder("20261126-000006-5a5a5a");
    std::fs::write(big_summary.join("events.jsonl"), start).unwrap();
    let mut s = std::fs::File::create(big_summary.join("summary.json")).unwrap();
    s.write_all(b"{\"started_at\":").unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..300 {
        s.write_all(&spaces).unwrap();
    }
    drop(s);
    let runs = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_harrow"));
        cmd.args(args)
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("HARROW_SESSIONS_DIR", &root)
            .env_remove("TILTH_SESSIONS_DIR")
            .stdin(std::process::Stdio::piped());
        run_bounded(cmd, None)
    };
    for args in [&["sessions"][..], &["sessions", "--json"]] {
        let (out, peak) = runs(args);
        let text = stdout(&out);
        assert!(out.status.success(), "{args:?}: {text}{}", stderr(&out));
        assert!(text.contains(DONE), "{args:?} lists the good run: {text}");
        assert!(text.contains("20261126-000006"), "{args:?} and the planted ones: {text}");
        assert!(peak < 100 << 20, "{args:?} peaked at {} MB", peak >> 20);
    }
    // Following (what the fleet's screen reads too) holds no more, and sees the good run.
    let mut follow = Command::new(env!("CARGO_BIN_EXE_harrow"));
    follow
        .args(["sessions", "--follow", "--json"])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("HARROW_SESSIONS_DIR", &root)
        .env_remove("TILTH_SESSIONS_DIR");
    let (out, peak) = run_bounded(follow, Some(DONE));
    assert!(stdout(&out).contains(DONE), "--follow lists the good run: {}", stdout(&out));
    assert!(peak < 100 << 20, "--follow peaked at {} MB", peak >> 20);
    let (out, peak) = runs(&["show", "20261126-000005-b16b16"]);
    // Reading 2 GB takes what it takes (seconds in a debug build under load); what is bounded
    // is the memory.
    assert!(out.status.code().is_some(), "show of the giant ended: {}", stderr(&out));
    assert!(peak < 100 << 20, "show of the giant peaked at {} MB", peak >> 20);
}

/// A run in a folder named only by `[sessions] dirs` is found by every verb the way the fleet
/// shows it: whole id, prefix, or the id's end; an end two runs share lists both, with where.
#[test]
fn every_verb_finds_a_run_in_the_configured_folders_by_the_name_the_fleet_shows() {
    let home = tempfile::tempdir().unwrap();
    let shared = home.path().join("shared");
    copy_dir(&fixtures().join(DONE), &shared.join(DONE));
    copy_dir(&fixtures().join(DONE), &shared.join("20261122-050000-a2b19"));
    std::fs::create_dir_all(home.path().join("cfg/harrow")).unwrap();
    std::fs::write(
        home.path().join("cfg/harrow/config.toml"),
        format!("[sessions]\ndirs = [\"{}\"]\n", shared.display()),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_harrow"))
            .args(args)
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("cfg"))
            .env_remove("HARROW_SESSIONS_DIR")
            .env_remove("TILTH_SESSIONS_DIR")
            .output()
            .unwrap()
    };
    let suffix = &DONE[DONE.len() - 6..];
    for name in [DONE, &DONE[..15], suffix] {
        for verb in [&["show"][..], &["export", "--format", "json"]] {
            let mut args = verb.to_vec();
            args.insert(1, name);
            let out = run(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        }
    }
    let out = run(&["show", "b19"]);
    assert!(!out.status.success(), "three characters are too few for an end");
    let out = run(&["show", "2b19"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(DONE)
            && said.contains("20261122-050000-a2b19")
            && said.contains(&shared.display().to_string()),
        "{said}"
    );
}

/// `sessions --live` with its output piped (`| cat`, a script) prints the list, as `harrow`
/// alone does, instead of failing to open a terminal.
#[test]
fn live_with_its_output_piped_prints_the_list() {
    let home = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join(DONE), &home.path().join("h").join(DONE));
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["sessions", "--live"])
        .env("HOME", home.path())
        .env("HARROW_SESSIONS_DIR", home.path().join("h"))
        .env_remove("TILTH_SESSIONS_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(DONE), "{}", stdout(&out));
}

/// `sessions --follow` with a `[notify] command` that never reads its line nor exits: six runs
/// that come to need a person at once are each printed, each notify is stopped at its 1 s
/// timeout with what it started, and nothing is left running. (That notifications run four at
/// a time is `cli::follow`'s unit test, proved by programs that each wait for four to start.)
#[test]
fn follow_notifies_every_hold_and_stops_a_program_that_never_exits() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("shared");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.path().join("cfg/harrow")).unwrap();
    std::fs::write(
        home.path().join("cfg/harrow/config.toml"),
        "[notify]\ncommand = [\"sh\", \"-c\", \"sleep 31; sleep 31\"]\ntimeout_seconds = 1\n",
    )
    .unwrap();
    copy_dir(&fixtures().join(DONE), &root.join(DONE));
    let mut child = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["sessions", "--follow", "--json"])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("cfg"))
        .env("HARROW_SESSIONS_DIR", &root)
        .env_remove("TILTH_SESSIONS_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The follow's first look is over once it has printed a run that was there before it
    // started: runs that come later are changes, which are notified.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains(DONE) {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the follow ended before its first look");
    }
    let big = "x".repeat(200_000);
    for n in 0..6 {
        let dir = root.join(format!("20261127-00000{n}-hhhhh{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let start = format!(
            "{{\"ts\":\"2026-11-27T00:00:01Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{{\"task_count\":1,\"feature\":\"{big}\"}}}}\n"
        );
        let stop = "{\"ts\":\"2026-11-27T00:00:02Z\",\"seq\":2,\"type\":\"stop\",\"payload\":{\"reason\":\"needs_operator\",\"error\":\"T-001 waits\"}}\n";
        std::fs::write(dir.join("events.jsonl"), start + stop).unwrap();
    }
    let mut seen = 0;
    line.clear();
    while seen < 6 && out.read_line(&mut line).unwrap() > 0 {
        if line.contains("\"state\":\"held\"") {
            seen += 1;
        }
        line.clear();
    }
    assert_eq!(seen, 6, "every hold is printed");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut stopped = 0;
    while stopped < 6 && err.read_line(&mut line).unwrap() > 0 {
        if line.contains("took over 1 s and was stopped") {
            stopped += 1;
        }
        line.clear();
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(stopped, 6, "each notify is stopped at its timeout");
    support::until("every notify program (and what it started) to be gone", || {
        support::sleepers("31") == 0
    });
}

/// A log longer than the fleet reads of a tail, with no summary that says where to start (an
/// old Tilth session; a run that died before its first task ended): the list's figures are the
/// whole log's, as `show` gives them, not its last 256 KiB's.
#[test]
fn a_long_log_without_a_usable_summary_is_listed_with_the_whole_logs_figures() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(DONE);
    copy_dir(&fixtures().join(DONE), &dir);
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    let mut log = std::fs::read(dir.join("events.jsonl")).unwrap();
    log.extend(std::iter::repeat_n(b'\n', 300 * 1024));
    std::fs::write(dir.join("events.jsonl"), log).unwrap();
    let out = harrow(home.path(), &["sessions", "--dir", home.path().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!((&row["tasks_done"], &row["tasks_total"]), (&4.into(), &4.into()), "{row}");
    assert_eq!(row["tokens"], 148_585, "{row}");
    assert_eq!(row["origin"], "tilth", "{row}");
}
