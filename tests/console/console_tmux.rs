//! The real binary in a real terminal: a private tmux server per test, keys in, screens out,
//! and the terminal given back on every way out.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, sessions, summary, support, tmux};

use sessions::{HARROW_SESSION, SESSION, fixture, harrow_fixture, scripted_console};
use std::process::Command;
use std::time::{Duration, Instant};
use summary::show_json;
use tmux::Tmux;

#[test]
fn the_exit_status_the_tmux_tests_read_is_the_binarys() {
    let cmd = format!("{} replay /nonexistent/harrow-session", env!("CARGO_BIN_EXE_harrow"));
    let t = Tmux::start(&cmd, 100, 20);
    let s = t.wait_exit("[exit ");
    assert!(s.contains("[exit 2]"), "a refused replay is exit 2, and the check sees it: {s}");
}

#[test]
fn the_real_binary_in_tmux_plays_pauses_helps_and_restores_the_terminal() {
    let cmd =
        format!("{} replay {} --speed 0.5", env!("CARGO_BIN_EXE_harrow"), fixture().display());
    let t = Tmux::start(&cmd, 120, 36);
    let s = t.wait_for("REPLAY 0.5×");
    assert!(s.contains("REPLAY 0.5×") && s.contains(" Plan "), "{s}");
    t.keys(&["Space"]);
    let s = t.wait_for("PAUSED");
    assert!(s.contains("PAUSED 0.5×"), "{s}");
    t.keys(&["Space"]);
    t.wait_for("REPLAY 0.5×");
    t.keys(&["Space"]);
    t.wait_for("PAUSED 0.5×");
    t.keys(&["/"]);
    t.wait_for("Search the worker stream");
    t.literal("grep");
    t.keys(&["Enter"]);
    let s = t.wait_for("n next, N previous");
    assert!(s.contains("T-001 #9 grep def main"), "the search found the tool call: {s}");
    assert!(s.contains("“grep” 1/1: n next"), "it says which match of how many: {s}");
    t.keys(&["&"]);
    let s = t.wait_for("Worker · only “grep”");
    assert!(s.contains("only the 1 row with “grep”"), "& narrows the stream to its rows: {s}");
    assert!(s.contains("T-001 #9 grep def main") && !s.contains("T-001 #1 read_file"), "{s}");
    t.keys(&["&"]);
    t.wait_for("every row again");
    t.keys(&["?"]);
    let s = t.wait_for(" Keys ");
    assert!(s.contains("step one event back") && s.contains("jump to the next failure"), "{s}");
    t.keys(&["?"]);
    t.keys(&["0"]);
    t.wait_for("event 1/151");
    t.keys(&["x"]);
    t.keys(&["Enter"]);
    let s = t.wait_for("Verdict on T-001");
    assert!(
        s.contains("REJECT — acceptance_gap") && s.contains("Next step: Run the import check"),
        "the first rejection, inspected: {s}"
    );
    t.keys(&["Escape"]);
    // `q` only once the inspector is gone: an Esc and a q read together are Alt-q.
    let deadline = Instant::now() + Duration::from_secs(15);
    while t.screen().contains("Verdict on T-001") {
        assert!(Instant::now() < deadline, "Esc never closed the inspector: {}", t.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    t.keys(&["q"]);
    let s = t.wait_exit("[exit 0]");
    assert!(s.contains("[exit 0]"), "{s}");
    assert!(!s.contains(" Plan ") && !s.contains(" Keys "), "the alternate screen is gone: {s}");
}

#[test]
fn watch_shows_events_as_they_are_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(fixture().join("events.jsonl")).unwrap();
    let head: Vec<&str> = text.lines().take(20).collect();
    std::fs::write(dir.join("events.jsonl"), head.join("\n") + "\n").unwrap();
    let cmd = format!("{} watch {}", env!("CARGO_BIN_EXE_harrow"), dir.display());
    let t = Tmux::start(&cmd, 120, 36);
    let s = t.wait_for("WATCH");
    assert!(s.contains("event 20/20"), "{s}");
    let mut log = std::fs::OpenOptions::new().append(true).open(dir.join("events.jsonl")).unwrap();
    std::io::Write::write_all(&mut log, b"{\"ts\": \"2026-11-22T04:30:00Z\", \"type\": \"task_failed\", \"payload\": {\"task_id\": \"T-001\", \"reason\": \"watched-failure\"}}\n").unwrap();
    let s = t.wait_for("watched-failure");
    assert!(s.contains("✘ T-001 failed: watched-failure") && s.contains("event 21/21"), "{s}");
    t.keys(&["q"]);
    assert!(t.wait_exit("[exit 0]").contains("[exit 0]"));
}

#[test]
fn the_demo_live_pause_inspect_resume_and_quit() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} demo",
        sessions.display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 140, 40);
    let s = t.wait_for("LIVE");
    assert!(
        s.contains("T-002 pending ←T-001  Count") && s.contains("T-003 pending ←T-001  Find"),
        "the whole plan, with titles, before its later tasks start: {s}"
    );
    t.keys(&["p"]);
    let s = t.wait_long("PAUSED (p resumes)", 60);
    assert!(
        s.contains("T-001 done") && !s.contains("T-002 running"),
        "paused at the boundary after T-001: {s}"
    );
    let s = t.screen();
    assert!(
        !s.contains("pausing at the next task boundary"),
        "a pause on its way is gone once PAUSED: {s}"
    );
    t.keys(&["p"]);
    let s = t.wait_long("■ stopped: all_done", 120);
    assert!(s.contains("T-003 done"), "{s}");
    assert!(!s.lines().any(|l| l.trim() == "resuming"), "no 'resuming' after the run ended: {s}");
    // Back from the end: T-002's accept, then its reject (T-003, in the other lane, was
    // judged before it).
    for _ in 0..2 {
        t.literal("{");
    }
    t.keys(&["Enter"]);
    let s = t.wait_for("Next step: Add a test that");
    assert!(
        s.contains("Verdict on T-002") && s.contains("REJECT — weak_test"),
        "the rejected verdict, inspected: {s}"
    );
    t.escape_from("Next step: Add a test that");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit 0]");
    assert!(!s.contains(" Plan "), "the terminal is restored: {s}");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let summary = show_json(&session);
    assert_eq!(summary["harrow"]["tasks_done"], 3);
    assert!(
        summary["harrow"]["operator_actions"].as_u64().unwrap() >= 2,
        "pause and resume were recorded"
    );
    let repo = support::demo_repo(tmp.path());
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let log = Command::new("git")
        .args(["log", "--format=%s", &format!("session/{id}")])
        .current_dir(&repo)
        .output()
        .unwrap();
    let commits =
        String::from_utf8_lossy(&log.stdout).lines().filter(|l| l.starts_with("T-")).count();
    assert_eq!(commits, 3, "one commit per task");
}

#[test]
fn export_of_a_big_session_runs_as_a_job_the_console_answers_keys_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    harrow::session::synth::write_session(
        &dir,
        100_000,
        harrow::session::synth::Dialect::Harrow,
        3,
    )
    .unwrap();
    let cmd = format!("{} replay {} --speed 0.5", env!("CARGO_BIN_EXE_harrow"), dir.display());
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("REPLAY", 60);
    // Both keys at once: the help is drawn while the export runs only if the export does not
    // hold the screen's loop. The export of 100k events takes a few tenths of a second, so the
    // first whole frame with the help is read at once, not after a settling pause.
    t.keys(&["E", "?"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let s = loop {
        let s = t.screen();
        if s.contains("Keys") && (s.contains("exporting the session") || s.contains("exported to"))
        {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "the help never opened: {s}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(
        s.contains("exporting the session…") && !s.contains("exported to"),
        "the help opened while the export still ran: {s}"
    );
    t.keys(&["Escape"]);
    let s = t.wait_long("exported to", 120);
    assert!(s.contains("export.md"), "{s}");
    let md = std::fs::read_to_string(dir.join("export.md")).unwrap();
    assert!(md.starts_with('#'), "{}", &md[..md.len().min(200)]);
}

#[test]
fn harrow_alone_browses_sessions_opens_one_and_comes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    for (from, id) in [(fixture(), SESSION), (harrow_fixture(), HARROW_SESSION)] {
        let to = sessions.join(id);
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(from.join("events.jsonl"), to.join("events.jsonl")).unwrap();
    }
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} TILTH_SESSIONS_DIR={} XDG_CONFIG_HOME={} {}",
        sessions.display(),
        tmp.path().join("no-tilth").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 160, 30);
    let s = t.wait_for("Fleet: 2 runs");
    let short = |id: &str| id[id.len() - 6..].to_owned();
    assert!(s.contains(&short(HARROW_SESSION)) && s.contains(&short(SESSION)), "{s}");
    t.keys(&["g"]);
    t.keys(&["Enter"]);
    let s = t.wait_for(" 8×");
    assert!(s.contains(SESSION) || s.contains(HARROW_SESSION), "a session replays: {s}");
    t.keys(&["q"]);
    t.wait_for("Fleet: 2 runs");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit 0]");
    assert!(!s.contains("Fleet: "), "the terminal is restored: {s}");
}

#[test]
fn the_status_line_reads_done_at_the_demos_end() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} demo --fast",
        tmp.path().join("sessions").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("■ stopped: all_done", 120);
    // No key pressed: the status line comes to say how the run ended.
    let s = t.wait_for(" DONE ");
    let status = s.lines().next().unwrap_or("").to_owned();
    assert!(status.contains("DONE"), "the status says how it ended: {status}");
    assert!(!status.contains("LIVE"), "{status}");
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
}

#[test]
fn a_held_task_in_the_live_console_waits_rings_and_is_approved_with_a() {
    use loop_fixture::{repo_and_plan, serve};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    // The evaluator refuses the key once, on T-001: held for a person.
    let script = loop_fixture::first_of_two_refused_once();
    let (_rt, server) = serve(&script, true);
    let sessions = tmp.path().join("sessions");
    let cmd = format!(
        "sleep 1; {}",
        scripted_console(
            tmp.path(),
            &server.base_url(),
            &format!("run {} --repo {} --no-validators", plan.display(), repo.display())
        )
    );
    let t = Tmux::start(&cmd, 160, 45);
    let raw = tmp.path().join("pane.raw");
    t.record(&raw);
    let s = t.wait_long("HELD: T-001 waits for you", 90);
    let status = s.lines().next().unwrap_or("");
    assert!(status.contains("a approve") && status.contains("r reject"), "the keys: {status}");
    assert!(
        status.contains(" tok  $") && status.trim_end().ends_with(char::is_numeric),
        "tokens and cost stay on a held run's status line at 160 columns: {status}"
    );
    let s = t.screen();
    assert!(s.contains("HELD: T-001"), "still waiting, not exited: {s}");
    let written = std::fs::read(&raw).unwrap_or_default();
    let written = String::from_utf8_lossy(&written);
    assert!(
        written.contains("\u{7}\u{1b}]9;harrow: T-001 waits for your decision\u{7}"),
        "the bell and the notification were written"
    );
    t.keys(&["a"]);
    t.wait_for("Approve T-001");
    t.literal("checked by hand");
    t.keys(&["Enter"]);
    let s = t.wait_long("DONE", 90);
    assert!(s.contains("T-002"), "{s}");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit ");
    assert!(s.contains("[exit 0]"), "{s}");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let log = support::strict_events(&session);
    let kinds = |k: &str| log.iter().filter(|e| e["type"] == k).cloned().collect::<Vec<_>>();
    assert_eq!(kinds("session_start").len(), 1, "one run, never restarted");
    assert_eq!(kinds("operator_wait").len(), 1);
    let done = kinds("task_done");
    assert_eq!(done.len(), 2);
    assert_eq!(done[0]["payload"]["by_operator"], true, "T-001 was approved by the operator");
}

#[test]
fn a_decision_typed_in_watch_of_a_stopped_run_offers_to_resume_it_and_the_run_acts_on_it() {
    use loop_fixture::{harrow_cmd, headless_run, repo_and_plan, serve};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    // The evaluator refuses the key once, on T-001: held for a person.
    let script = loop_fixture::first_of_two_refused_once();
    let (_rt, server) = serve(&script, true);
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "headless, a held task stops the run");
    let sessions = tmp.path().join("sessions");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let cmd = scripted_console(tmp.path(), &server.base_url(), &format!("watch {id}"));
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("HELD: T-001 waits for you", 30);
    t.keys(&["a"]);
    t.wait_for("Approve T-001");
    t.literal("checked by hand");
    t.keys(&["Enter"]);
    let s = t.wait_for("The run has stopped");
    assert!(!s.contains("sent approve"), "nothing claims a run received it: {s}");
    t.keys(&["Enter"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !t.screen().lines().next().unwrap_or("").contains("DONE") {
        let resumed = std::fs::read_to_string(session.join("resume.log")).unwrap_or_default();
        assert!(Instant::now() < deadline, "{}\nthe resume said:\n{resumed}", t.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
    let log = support::strict_events(&session);
    let kinds = |k: &str| log.iter().filter(|e| e["type"] == k).cloned().collect::<Vec<_>>();
    assert_eq!(kinds("session_resume").len(), 1, "the console resumed the run once");
    let done = kinds("task_done");
    assert_eq!(done.len(), 2, "{log:?}");
    assert_eq!(done[0]["payload"]["by_operator"], true);
}

#[test]
fn watch_of_a_paused_run_killed_in_silence_says_crashed_without_a_key() {
    use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let mut slow = write_and_submit(1);
    slow[0]["delay_ms"] = serde_json::json!(2000);
    let script = serde_json::json!({
        "worker": {"T-001": {"1": slow}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-001": {"1": [accept()]}, "T-002": {"1": [accept()]}}
    });
    let (_rt, server) = serve(&script, false);
    let mut run = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sessions = tmp.path().join("sessions");
    let deadline = Instant::now() + Duration::from_secs(30);
    // A session once its log is there: the folder comes a moment before (its lock, then its
    // log), and a command sent in between names no session yet.
    let session = loop {
        if let Some(Ok(entry)) = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next())
            && entry.path().join("events.jsonl").exists()
        {
            break entry.path();
        }
        assert!(Instant::now() < deadline, "no session was created");
        std::thread::sleep(Duration::from_millis(20));
    };
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let paused = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "pause"])
        .output()
        .unwrap();
    assert!(paused.status.success(), "{}", String::from_utf8_lossy(&paused.stderr));
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} watch {id}",
        sessions.display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow"),
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("PAUSED (p resumes)", 60);
    run.kill().unwrap();
    run.wait().unwrap();
    let s = t.wait_long("CRASHED", 6);
    assert!(s.lines().next().unwrap_or("").contains(&format!("harrow resume {id}")), "{s}");
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
}

#[test]
fn the_diff_of_the_demos_rejected_attempt_and_what_its_rework_added() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let session = support::demo_session(tmp.path());
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} replay {} --speed 64",
        sessions.display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow"),
        session.display()
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("■ stopped: all_done", 60);
    // Back from the end: T-002's accept, then its reject (T-003, in the other lane, was
    // judged before it).
    for _ in 0..2 {
        t.literal("{");
    }
    t.keys(&["Enter"]);
    t.wait_for("REJECT — weak_test");
    t.keys(&["1"]);
    let s = t.wait_for("as judged (commit");
    assert!(s.contains("the file has CHANGED in the worktree since"), "{s}");
    assert!(!s.contains("case_insensitively"), "the evidence as judged, not as reworked: {s}");
    t.escape_from("as judged (commit");
    t.keys(&["d"]);
    let s = t.wait_for("T-002 attempt 1 as judged");
    assert!(
        s.contains("tests/char_frequencies.rs") && s.contains("whitespace_is_not_counted"),
        "{s}"
    );
    assert!(!s.contains("case_insensitively"), "the rejected attempt had no such test: {s}");
    t.escape_from("T-002 attempt 1 as judged");
    t.escape_from("Verdict on T-002");
    t.literal("}");
    t.keys(&["D"]);
    let s = t.wait_for("T-002 attempt 2 since the attempt before it");
    assert!(
        s.contains("+fn letters_are_counted_case_insensitively()"),
        "the rework added the test the reject asked for: {s}"
    );
    t.escape_from("T-002 attempt 2 since the attempt before it");
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
}

#[test]
fn the_live_console_shows_a_streaming_reply_arriving() {
    use loop_fixture::{accept, repo_and_plan, serve, write_and_submit};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let mut turns = write_and_submit(1);
    turns[0]["content"] =
        serde_json::json!("Alpha bravo charlie delta echo foxtrot golf hotel india juliet");
    turns[0]["chunk_delay_ms"] = serde_json::json!(600);
    let script = serde_json::json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let (_rt, server) = serve(&script, false);
    let sessions = tmp.path().join("sessions");
    let cmd = scripted_console(
        tmp.path(),
        &server.base_url(),
        &format!("run {} --repo {} --no-validators", plan.display(), repo.display()),
    );
    let t = Tmux::start(&cmd, 160, 45);
    let s = t.wait_long("▌ Alpha bravo", 30);
    assert!(s.contains("▌ the worker is writing"), "{s}");
    assert!(!s.contains("juliet"), "the reply has not all arrived yet: {s}");
    let s = t.wait_long("india juliet", 30);
    assert!(s.contains("▌ Alpha bravo charlie delta echo foxtrot golf hotel india juliet"), "{s}");
    let s = t.wait_long("DONE", 60);
    assert!(!s.contains("the worker is writing"), "the reply in flight is gone once done: {s}");
    assert!(
        !sessions.read_dir().unwrap().next().unwrap().unwrap().path().join("live.json").exists()
    );
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
}

#[test]
fn demo_prep_in_tmux_from_the_first_question_to_the_runs_first_task() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} demo --prep",
        tmp.path().join("sessions").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 140, 40);
    t.wait_long("prep asks: What should `textstats` be able to tell", 30);
    t.wait_long("you answer: The first one.", 30);
    let s = t.wait_long("T-001 running", 60);
    assert!(s.contains("LIVE") || s.contains("waiting on"), "the run's console: {s}");
    assert!(s.contains("T-003 pending  Find the long"), "the plan it wrote: {s}");
    t.keys(&["q"]);
    t.wait_for("Quit");
    t.keys(&["y"]);
    let s = t.wait_exit_long("[exit ", 60);
    assert!(
        s.contains("the run stops at the next task boundary") && !s.contains("the run goes on"),
        "after choosing to stop, the console does not say the run goes on: {s}"
    );
}

#[test]
fn prep_on_a_terminal_is_an_interview_screen_with_a_revision_and_a_yes() {
    use loop_fixture::{repo_and_plan, serve};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let plan = |title: &str| {
        serde_json::json!({"tool_calls": [{"name": "write_plan", "arguments": {
            "overview": {"tldr": "Search the list.", "why": "It grows.", "scope": ["search"]},
            "tasks": [{"id": "T-001", "title": title, "description": "Add search.",
                       "acceptance_criteria": ["search prints matching items"]}]}}]})
    };
    let script = serde_json::json!({"prep": {"search": {"1": [
        {"content": "What should search match?"},
        plan("Add search"),
        plan("Add case-insensitive search")
    ]}}});
    let (_rt, server) = serve(&script, true);
    let args = format!("prep --repo {} --feature search", repo.display());
    let t = Tmux::start(&scripted_console(tmp.path(), &server.base_url(), &args), 120, 40);
    let s = t.wait_for("What should search match?");
    assert!(s.contains("harrow prep — the interview") && s.contains("Your answer"), "{s}");
    assert!(s.contains("Ctrl-S or Alt-Enter sends"), "{s}");
    t.literal("Titles,");
    t.keys(&["Enter"]);
    t.literal("ignoring case.");
    t.keys(&["C-s"]);
    t.wait_for("y writes it");
    t.keys(&["PPage", "PPage"]);
    let s = t.wait_for("What should search match?");
    assert!(
        s.contains("Titles,") && s.contains("ignoring case."),
        "scrolled back to the answer: {s}"
    );
    t.keys(&["r"]);
    t.wait_for("what should change");
    t.literal("Say it ignores case.");
    t.keys(&["C-s"]);
    let s = t.wait_for("title: Add case-insensitive search");
    assert!(s.contains("y writes it"), "{s}");
    t.keys(&["e"]);
    t.wait_for("Edit the plan");
    t.keys(&["Down", "End"]);
    t.literal(" and filters");
    t.keys(&["C-s"]);
    t.wait_for("y writes it");
    // The review opens at the draft's end; its first lines are a few rows up.
    t.keys(&["Up", "Up", "Up", "Up", "Up", "Up"]);
    let s = t.wait_for("# search and filters");
    assert!(s.contains("y writes it"), "the edit is checked and shown again: {s}");
    t.keys(&["y"]);
    t.wait_exit("[exit 0]");
    let written =
        std::fs::read_to_string(repo.join(".harrow/search/T-001-add-case-insensitive-search.md"))
            .unwrap();
    assert!(written.contains("title: Add case-insensitive search"));
    let overview = std::fs::read_to_string(repo.join(".harrow/search/overview.md")).unwrap();
    assert!(
        overview.starts_with("# search and filters"),
        "the hand edit is what was written: {overview}"
    );
    let sent: Vec<_> = server.received().into_iter().filter(|r| r.role == "prep").collect();
    let revise = serde_json::to_string(&sent[2].body["messages"]).unwrap();
    assert!(
        revise.contains("Titles,\\nignoring case.")
            && revise.contains("Please revise the plan: Say it ignores case."),
        "the multi-line answer and the note reach the model: {revise}"
    );
}

#[test]
fn esc_in_the_interview_stops_it_and_writes_nothing() {
    use loop_fixture::{repo_and_plan, serve};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let script =
        serde_json::json!({"prep": {"search": {"1": [{"content": "What should search match?"}]}}});
    let (_rt, server) = serve(&script, true);
    let head = support::git(&repo, &["rev-parse", "HEAD"]);
    let args = format!("prep --repo {} --feature search", repo.display());
    let t = Tmux::start(&scripted_console(tmp.path(), &server.base_url(), &args), 120, 30);
    t.wait_for("What should search match?");
    t.literal("never mind");
    t.keys(&["Escape"]);
    t.wait_for("Stop the interview? Nothing is written.");
    t.keys(&["y"]);
    let s = t.wait_exit("[exit ");
    assert!(
        s.contains("[exit 0]") && s.contains("The interview was stopped; nothing was written"),
        "{s}"
    );
    assert!(!s.contains("harrow prep — the interview"), "the terminal is restored: {s}");
    assert!(!repo.join(".harrow/search").exists());
    assert_eq!(support::git(&repo, &["rev-parse", "HEAD"]), head, "no commit");
    assert_eq!(server.received().len(), 1, "nothing more was asked of the model");
}

#[test]
fn the_interview_redraws_while_a_slow_model_thinks_shows_its_keys_and_esc_stops_the_call() {
    use loop_fixture::{repo_and_plan, serve};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let script = serde_json::json!({"prep": {"search": {"1": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"content": "What should search match?", "delay_ms": 600_000}
    ]}}});
    let (_rt, server) = serve(&script, false);
    let args = format!("prep --repo {} --feature search --brief 'a search'", repo.display());
    let t = Tmux::start(&scripted_console(tmp.path(), &server.base_url(), &args), 120, 30);
    let s = t.wait_for("the model is working (");
    assert!(s.contains("prep reads: read_file README.md"), "the model's reads are shown: {s}");
    assert!(s.contains("Esc stops") && s.contains("? keys"), "{s}");
    let shown = working_secs(&working_past(&t, working_secs(&s)));
    t.keys(&["?"]);
    let s = t.wait_for("Keys while the model works");
    assert!(s.contains("stop the model and the interview"), "{s}");
    let s = working_past(&t, shown);
    assert!(s.contains("Keys while the model works"), "the spinner goes on under the help: {s}");
    // Two escapes sent together can reach the program as one key (Alt-Esc): the second waits
    // until the first has closed the help.
    t.escape_from("Keys while the model works");
    t.keys(&["Escape"]);
    t.wait_for("Stop the interview? Nothing is written.");
    t.keys(&["y"]);
    // The reply is ten minutes away: the interview ending at all proves it was dropped.
    let s = t.wait_exit("[exit ");
    assert!(
        s.contains("[exit 0]") && s.contains("The interview was stopped; nothing was written"),
        "{s}"
    );
    assert!(!repo.join(".harrow/search").exists());
}

/// The seconds the interview's spinner shows (`the model is working (N s)`).
fn working_secs(screen: &str) -> u64 {
    let (_, after) = screen.split_once("the model is working (").unwrap();
    after.split(' ').next().and_then(|n| n.parse().ok()).unwrap()
}

/// Waits until the spinner shows more than `secs`: the screen is redrawn as time goes on.
fn working_past(t: &Tmux, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = t.screen();
        if s.contains("the model is working (") && working_secs(&s) > secs {
            return s;
        }
        assert!(Instant::now() < deadline, "the spinner stayed at {secs} s: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_replay_whose_log_is_truncated_under_it_shows_a_notice_and_stays_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    std::fs::copy(harrow_fixture().join("events.jsonl"), &log).unwrap();
    let cmd = format!("{} replay {} --speed 0.5", env!("CARGO_BIN_EXE_harrow"), dir.display());
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_for("REPLAY 0.5×");
    t.keys(&["space"]);
    t.wait_for("PAUSED");
    // The log shrinks to a few lines while the console holds an index of all of them.
    let text = std::fs::read_to_string(&log).unwrap();
    let head: String = text.lines().take(3).flat_map(|l| [l, "\n"]).collect();
    std::fs::write(&log, head).unwrap();
    t.keys(&["["]);
    let s = t.wait_for("shrank from");
    assert!(s.contains("showing what was read"), "{s}");
    t.keys(&["G"]);
    t.wait_for("shrank from");
    t.keys(&["?"]);
    let s = t.wait_for("help");
    assert!(!s.contains("[exit "), "the console is still up: {s}");
    t.escape_from("Keys ");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit ");
    assert!(s.contains("[exit 0]"), "{s}");
}

/// `y` says what it did: inside tmux with `set-clipboard off` the copy cannot reach the
/// clipboard, and the console says how to turn it on rather than claiming it worked.
#[test]
fn y_says_where_the_copy_went_and_how_to_let_tmux_pass_it() {
    let cmd = format!(
        "{} replay {} --speed max",
        env!("CARGO_BIN_EXE_harrow"),
        harrow_fixture().display()
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_for("event 1");
    t.command(&["set", "-g", "set-clipboard", "off"]);
    t.keys(&["G"]);
    t.keys(&["Enter"]);
    t.wait_for("y copy");
    t.keys(&["y"]);
    let s = t.wait_for("set-clipboard is off");
    assert!(s.contains("tmux set -g set-clipboard on"), "{s}");
    // What was said happened: the copy is in tmux's paste buffer.
    assert!(s.contains("into tmux's paste buffer"), "{s}");
    let buffer = t.ask(&["show-buffer"]);
    assert!(buffer.lines().count() >= 1 && !buffer.trim().is_empty(), "the buffer: {buffer:?}");
    t.command(&["set", "-g", "set-clipboard", "on"]);
    t.keys(&["y"]);
    t.wait_for("to the clipboard through tmux");
}

/// The Worker pane's cursor and row times in a real terminal: `k` moves the selection up (the
/// title counts the rows below it), `T` puts each row's time before it, `Enter` opens the row
/// under the cursor, and `G` follows the newest again.
#[test]
fn the_row_cursor_and_row_times_in_a_real_terminal() {
    let cmd = format!(
        "{} replay {} --speed max",
        env!("CARGO_BIN_EXE_harrow"),
        harrow_fixture().display()
    );
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_for("event 1");
    t.keys(&["G"]);
    t.keys(&["k", "k", "k"]);
    t.wait_for("3 newer below ↓ (G)");
    t.keys(&["T"]);
    let s = t.wait_for("rows show the clock's time");
    let timed = s.lines().filter(|l| {
        let worker = l.split('│').nth(3).unwrap_or("");
        let b = worker.as_bytes();
        b.len() > 9 && b[2] == b':' && b[5] == b':'
    });
    assert!(timed.count() > 10, "worker rows carry hh:mm:ss: {s}");
    t.keys(&["T"]);
    let s = t.wait_for("time since the start");
    assert!(s.contains("s   T-002 #") && s.contains("   +"), "rows carry +seconds: {s}");
    t.keys(&["T"]);
    t.wait_for("rows without their time");
    t.keys(&["Enter"]);
    let s = t.wait_for("Esc closes");
    assert!(s.contains("T-003"), "the row under the cursor opened: {s}");
    t.escape_from("Esc closes");
    t.keys(&["G"]);
    let s = t.wait_for(" Worker ");
    assert!(!s.contains("newer below"), "G follows the newest again: {s}");
}

/// The demo works T-002 and T-003 in two lanes. Replayed at 160×45 in tmux: the lane strip
/// names each lane's task, the Plan shows the graph (each task's lane, what it depends on,
/// indented under it), every lane's rows are marked with their lane, and `L` follows one lane:
/// its rows only, and the Exchange follows its task.
#[test]
fn the_demo_in_two_lanes_shows_the_lane_strip_the_graph_and_follows_a_lane() {
    let tmp = tempfile::tempdir().unwrap();
    let session = support::demo_session(tmp.path());
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} replay {} --speed 64",
        tmp.path().join("sessions").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow"),
        session.display()
    );
    let t = Tmux::start(&cmd, 160, 45);
    let s = t.wait_for("stopped: all_done");
    let strip = s.lines().nth(1).unwrap_or("");
    assert!(strip.contains("all lanes") && strip.contains("L1 T-002"), "{s}");
    assert!(strip.contains("L2 T-003"), "{s}");
    assert!(s.contains("└ T-003 done L2 ←T-001"), "the graph: {s}");
    assert!(s.contains("└ T-002 done L1 ←T-001"), "what a task depends on: {s}");
    assert!(s.contains("L2   T-003 #") || s.contains("L2 ✔ T-003"), "rows carry their lane: {s}");
    assert!(!s.contains("L1 L1") && !s.contains("L2 L2"), "each row marked once: {s}");
    t.keys(&["L"]);
    let s = t.wait_for("following lane 1");
    assert!(s.lines().nth(1).unwrap_or("").contains("▸L1 T-002"), "{s}");
    assert!(s.contains("Exchange · T-002"), "the side panes follow the lane's task: {s}");
    assert!(!s.contains("T-003 #1◆ grep"), "only lane 1's rows: {s}");
    t.keys(&["L"]);
    let s = t.wait_for("following lane 2");
    // Its first turn changed files: it is marked as one a rewind can go back to.
    assert!(s.contains("Exchange · T-003") && s.contains("T-003 #1◆ grep"), "{s}");
    assert!(!s.contains("T-002 #5 verdict"), "only lane 2's rows: {s}");
    t.keys(&["L"]);
    let s = t.wait_for("every lane's rows");
    assert!(s.lines().nth(1).unwrap_or("").contains("all lanes"), "{s}");
    t.keys(&["q"]);
    t.wait_exit("[exit 0]");
}

/// SIGTERM to the console (a pod's end, `kill`): the run stops as on Ctrl-C — a `stop`
/// (interrupted by SIGTERM) logged — the terminal is given back, and the status is 143.
#[test]
fn sigterm_to_the_live_console_gives_the_terminal_back_and_logs_the_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let pidfile = tmp.path().join("pid");
    let cmd = format!(
        "echo $$ > {}; HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} exec {} demo",
        pidfile.display(),
        sessions.display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&format!("sh -c '{cmd}'"), 120, 30);
    t.wait_for("LIVE");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let s = t.wait_exit("[exit 143]");
    assert!(s.contains("interrupted") && !s.contains("LIVE"), "the terminal is back: {s}");
    assert!(s.contains("stopped by SIGTERM (resumable): go on with `harrow resume"), "{s}");
    let dir = sessions.read_dir().unwrap().flatten().next().unwrap().path();
    let events = support::strict_events(&dir);
    let stop = events.iter().rev().find(|e| e["type"] == "stop").expect("a stop");
    let why = stop["payload"]["error"].as_str().unwrap_or_default();
    assert!(why.starts_with("interrupted (SIGTERM)"), "{stop}");
}

/// The terminal goes away with its tmux (a closed window, a dropped SSH session): the console
/// gets its SIGHUP while its pty is already gone, and ends within seconds — never left behind
/// spinning on a terminal no one reads.
#[test]
fn a_console_whose_terminal_is_killed_ends_instead_of_spinning() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    let cmd = format!(
        "echo $$ > {}; XDG_CONFIG_HOME={} exec {} replay {} --speed 0.5",
        pidfile.display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow"),
        fixture().display()
    );
    let t = Tmux::start(&format!("sh -c '{cmd}'"), 120, 30);
    t.wait_for("REPLAY");
    // Paused, with the inspector open: a console that waits for nothing but a key.
    t.keys(&["space"]);
    t.wait_for("PAUSED");
    t.keys(&["x"]);
    t.keys(&["Enter"]);
    t.wait_for("Verdict on");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    drop(t);
    // A process that ended but was not reaped yet (a zombie) has ended.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.rsplit(") ").next().is_some_and(|rest| !rest.starts_with('Z')))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let still = alive();
    if still {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(!still, "harrow was left running after its terminal went away");
}

/// An ACP agent under `permissions = "ask"` in the live console: its question is a row and
/// the status line waits on the operator; `a` allows it, the agent goes on and the task lands.
#[test]
fn an_agents_question_in_the_live_console_waits_and_a_allows_it() {
    use loop_fixture::{accept, case, repo_and_plan, serve};
    crate::tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let agent = serde_json::json!({
        "work": [[
            {"say": "Asking first."},
            {"permission": ["allow_once", "reject_once"], "title": "Run make deploy"},
            {"write": ["f1.txt", "1\n"]}
        ]],
        "case": [case(1)]
    });
    crate::acp::configure(tmp.path(), &agent, "bwrap", "permissions = \"ask\"\n");
    let script = serde_json::json!({"worker": {}, "evaluator": {"T-001": {"1": [accept()]}}});
    let (_rt, server) = serve(&script, true);
    let cmd = format!(
        "sleep 1; {}",
        scripted_console(
            tmp.path(),
            &server.base_url(),
            &format!(
                "run {} --repo {} --no-validators --evaluator-model scripted/evaluator",
                plan.display(),
                repo.display()
            )
        )
    );
    let t = Tmux::start(&cmd, 160, 45);
    let s = t.wait_long("asks: Run make deploy", 90);
    assert!(s.contains("(ACP agent)") || s.contains("python3"), "the agent's run: {s}");
    assert!(s.lines().next().unwrap_or("").contains("waiting on you"), "{s}");
    t.keys(&["a"]);
    let s = t.wait_long("DONE", 90);
    assert!(s.contains("T-001"), "{s}");
    t.keys(&["q"]);
    let s = t.wait_exit("[exit ");
    assert!(s.contains("[exit 0]"), "{s}");
    let session = std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap();
    let log = support::strict_events(&session.path());
    let answers: Vec<&serde_json::Value> = log
        .iter()
        .filter(|e| e["type"] == "hook_run" && e["payload"]["hook"] == "permission")
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["payload"]["outcome"], "allow");
    let reason = answers[0]["payload"]["reason"].as_str().unwrap();
    assert!(reason.contains("the operator (console)"), "{reason}");
}

/// Quitting while a job is at work waits for it, naming it on screen; a key leaves it, and the
/// terminal given back says what was left unfinished — never dropped without a word. The job is
/// a copy to tmux's paste buffer whose `tmux` waits for a file the test writes only at the end.
#[test]
fn quitting_while_a_job_is_at_work_names_it_and_a_key_leaves_it_with_a_word() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let release = tmp.path().join("release");
    let fake = bin.join("tmux");
    let script =
        format!("#!/bin/sh\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nexit 0\n", release.display());
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = format!(
        "PATH={}:$PATH {} replay {} --speed max",
        bin.display(),
        env!("CARGO_BIN_EXE_harrow"),
        harrow_fixture().display()
    );
    let t = Tmux::start(&cmd, 140, 40);
    t.wait_for("stopped: all_done");
    t.keys(&["/"]);
    t.wait_for("Search the worker stream");
    t.literal("grep");
    t.keys(&["Enter"]);
    t.keys(&["Enter"]);
    t.wait_for("y copy");
    t.keys(&["y"]);
    // The row closed before `q` goes: an Escape and a key that arrive together read as Alt-key.
    t.escape_from("y copy");
    t.keys(&["q"]);
    let s = t.wait_for("Finishing what is still at work before quitting: copying to the clipboard");
    assert!(s.contains("Press any key to quit now"), "{s}");
    t.keys(&["x"]);
    let s = t.wait_exit("[exit ");
    std::fs::write(&release, "").unwrap();
    assert!(s.contains("[exit 0]"), "{s}");
    assert!(
        s.contains("harrow: quit while copying to the clipboard: it was stopped unfinished"),
        "the job left is said on the terminal given back: {s}"
    );
}
