//! The console: snapshots of its screens at three sizes (ratatui's `TestBackend` + insta), and the
//! real binary in tmux — keys in, screen out, terminal restored.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "support/loop_fixture.rs"]
mod loop_fixture;
#[path = "support/summary.rs"]
mod summary;
mod support;

use crossterm::event::KeyCode;
use harrow::console::app::{App, Effect};
use harrow::console::keymap::Action;
use harrow::console::layout::Pane;
use harrow::console::modal::Overlay;
use harrow::console::theme::Look;
use harrow::console::ui::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use summary::show_json;

const SESSION: &str = "20261122-042843-e02b19";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth").join(SESSION)
}

/// A session harrow wrote: the demo, run once with `--fast` and kept.
const HARROW_SESSION: &str = "20261122-080615-535d09";

fn harrow_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harrow").join(HARROW_SESSION)
}

fn harrow_at_end() -> App {
    let mut app =
        App::open(&harrow_fixture(), HARROW_SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app
}

/// Carries out what the app asked to write (operator commands) and to read (diffs, done in
/// place); the terminal effects (mouse, notifications) are left out, so the test's own
/// terminal is never written to.
fn perform(app: &mut App, effects: Vec<Effect>) {
    let sends = effects
        .into_iter()
        .filter(|e| matches!(e, Effect::Send(_) | Effect::LoadDiff(_) | Effect::LoadEvidence(..)))
        .collect();
    harrow::console::perform(app, sends, &harrow::console::jobs::Jobs::Inline);
}

/// The shell command that runs the binary with `args` against a scripted model at `base_url`,
/// with sessions and configuration under `home` and no model settings of the machine's.
fn scripted_console(home: &Path, base_url: &str, args: &str) -> String {
    format!(
        "env -u HARROW_CONFIG -u HARROW_EVALUATOR_BASE_URL -u HARROW_EVALUATOR_MODEL \
         HARROW_BASE_URL={base_url} HARROW_WORKER_MODEL=scripted/worker \
         HARROW_API_KEY=sk-console-test HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} {args}",
        home.join("sessions").display(),
        home.display(),
        env!("CARGO_BIN_EXE_harrow")
    )
}

fn key(code: crossterm::event::KeyCode) -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::NONE)
}

fn act(app: &mut App, action: Action) {
    let effects = app.act(action).unwrap();
    perform(app, effects);
}

fn press(app: &mut App, key: crossterm::event::KeyEvent) {
    let effects = app.key(key).unwrap();
    perform(app, effects);
}

fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    app.prepare(ratatui::layout::Rect::new(0, 0, width, height));
    terminal.draw(|f| draw(f, app)).unwrap();
    format!("{}", terminal.backend())
}

fn at_end() -> App {
    let mut app = App::open(&fixture(), SESSION, 64.0, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app
}

#[test]
fn replay_screens_at_three_sizes() {
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let mut app = at_end();
        insta::assert_snapshot!(format!("replay_end_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn tilth_session_in_every_tab_at_80x24() {
    let mut app = at_end();
    for pane in Pane::ALL {
        app.sel.focus = pane;
        let text = screen(&mut app, 80, 24);
        assert!(text.contains(&format!("┌ {}", pane.name())), "{pane:?}: {text}");
        insta::assert_snapshot!(format!("tilth_tab_{}_80x24", pane.name()), text);
    }
}

#[test]
fn a_generated_harrow_session_at_three_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("generated");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl")).unwrap());
    harrow::session::synth::generate(&mut out, 400, harrow::session::synth::Dialect::Harrow, 11)
        .unwrap();
    drop(out);
    let mut app = App::open_live(&dir, "generated", Look::built_in(true)).unwrap();
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        insta::assert_snapshot!(format!("generated_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn help_overlay_and_a_step_back() {
    let mut app = at_end();
    act(&mut app, Action::Help);
    insta::assert_snapshot!("help_120x40", screen(&mut app, 120, 40));
    press(&mut app, key(KeyCode::Char('?')));
    assert!(matches!(app.overlay, Overlay::None), "? closes the help it opened");
    for _ in 0..10 {
        act(&mut app, Action::StepBack);
    }
    assert_eq!(app.position(), (141, 151));
    let text = screen(&mut app, 120, 40);
    assert!(text.contains("PAUSED") && text.contains("event 141/151"), "{text}");
    assert!(
        !text.contains("waiting on the worker model"),
        "a replay does not crowd its status with the wait between every two turns: {text}"
    );
    assert!(!text.contains("stopped: all_done"), "stepping back un-applies events");
    act(&mut app, Action::StepForward);
    assert_eq!(app.position(), (142, 151));
}

#[test]
fn help_taller_than_the_terminal_scrolls_to_its_last_key() {
    let mut app = at_end();
    act(&mut app, Action::Help);
    let first = screen(&mut app, 80, 24);
    assert!(first.contains("Keys (↑↓ scroll)"), "{first}");
    assert!(!first.contains("a note for the worker"), "the last key is below the fold: {first}");
    for _ in 0..40 {
        act(&mut app, Action::Down);
    }
    let last = screen(&mut app, 80, 24);
    assert!(last.contains("a note for the worker"), "{last}");
    assert!(!last.contains("show or hide this help"), "scrolled past the first key: {last}");
    insta::assert_snapshot!("help_scrolled_80x24", last);
    act(&mut app, Action::Up);
    press(&mut app, key(KeyCode::Char('?')));
    assert!(!screen(&mut app, 80, 24).contains("Keys"), "? closes the help");
}

#[test]
fn a_tiny_terminal_is_told_so() {
    let mut app = at_end();
    let text = screen(&mut app, 30, 10);
    assert!(text.contains("terminal too small: 30×10") && text.contains("40×12"), "{text}");
}

#[test]
fn scrolling_up_stops_following_and_g_returns() {
    let mut app = at_end();
    for _ in 0..5 {
        act(&mut app, Action::Up);
    }
    assert!(screen(&mut app, 120, 40).contains("5 newer below ↓ (G)"));
    act(&mut app, Action::Bottom);
    assert!(!screen(&mut app, 120, 40).contains("newer below"));
}

/// A private tmux server running the real binary.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cmd: &str, w: u16, h: u16) -> Tmux {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("harrow-test-{}-{n}", std::process::id());
        let shell = format!("{cmd}; status=$?; echo; echo \"[exit $status]\"; sleep 30");
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                &shell,
            ])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux could not start");
        Tmux { socket }
    }

    fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Types text literally (tmux would read `{` and the like as its own syntax).
    fn literal(&self, text: &str) {
        Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap();
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, needle: &str) -> String {
        self.wait_long(needle, 15)
    }

    fn wait_long(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if self.screen().contains(needle) {
                // Under load tmux can catch a frame half drawn: read it again once it is done.
                std::thread::sleep(Duration::from_millis(200));
                let s = self.screen();
                if s.contains(needle) {
                    return s;
                }
            }
            let s = self.screen();
            assert!(Instant::now() < deadline, "{needle:?} never appeared; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Tmux {
    /// Copies everything the program writes to the pane, escape sequences included, to `file`.
    fn record(&self, file: &Path) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "pipe-pane", "-o", "-t", "t"])
            .arg(format!("cat >> {}", file.display()))
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}

#[test]
fn the_exit_status_the_tmux_tests_read_is_the_binarys() {
    let cmd = format!("{} replay /nonexistent/harrow-session", env!("CARGO_BIN_EXE_harrow"));
    let t = Tmux::start(&cmd, 100, 20);
    let s = t.wait_for("[exit ");
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
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    let s = t.wait_for("[exit 0]");
    assert!(s.contains("[exit 0]"), "{s}");
    assert!(!s.contains(" Plan ") && !s.contains(" Keys "), "the alternate screen is gone: {s}");
}

#[test]
fn jump_to_the_first_rejection_and_inspect_it() {
    let mut app = App::open(&fixture(), SESSION, 64.0, Look::built_in(true)).unwrap();
    act(&mut app, Action::PlayPause);
    act(&mut app, Action::StepBack);
    while app.position().0 > 0 {
        act(&mut app, Action::StepBack);
    }
    act(&mut app, Action::NextFailure);
    let first = app.position().0;
    act(&mut app, Action::NextFailure);
    assert!(app.position().0 > first, "x moves on to the next failure");
    act(&mut app, Action::PrevFailure);
    assert_eq!(app.position().0, first, "X comes back to the first");
    act(&mut app, Action::PrevFailure);
    assert_eq!(app.notice.as_deref(), Some("no earlier failure"));
    act(&mut app, Action::Inspect);
    let Overlay::Inspector(inspector) = &app.overlay else {
        panic!("no inspector: {:?}", app.notice)
    };
    let text = inspector.lines.join("\n");
    assert!(inspector.title.contains("T-001"), "{}", inspector.title);
    assert!(
        text.starts_with(
            "REJECT — acceptance_gap\n  acceptance_gap: an acceptance criterion is not satisfied"
        ),
        "{text}"
    );
    assert!(text.contains("Next step:") && text.contains("Case:"), "{text}");
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        insta::assert_snapshot!(format!("inspector_{w}x{h}"), screen(&mut app, w, h));
    }
    act(&mut app, Action::Close);
    assert!(matches!(app.overlay, Overlay::None));
    act(&mut app, Action::NextVerdict);
    act(&mut app, Action::Inspect);
    let Overlay::Inspector(inspector) = &app.overlay else { panic!("no inspector") };
    let text = inspector.lines.join("\n");
    assert!(
        text.starts_with("ACCEPT")
            && text.contains(
                "Earlier verdicts on this task:\n  1. reject (acceptance_gap) — resolved"
            ),
        "{text}"
    );
}

#[test]
fn inspect_at_the_end_opens_the_last_verdict() {
    let mut app = at_end();
    app.sel.focus = Pane::Exchange;
    screen(&mut app, 100, 30);
    act(&mut app, Action::Inspect);
    assert!(matches!(app.overlay, Overlay::Inspector(_)), "notice: {:?}", app.notice);
    assert!(screen(&mut app, 100, 30).contains("Verdict on T-004"));
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
    assert!(t.wait_for("[exit 0]").contains("[exit 0]"));
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
        s.contains("T-002 pending  Count charact") && s.contains("T-003 pending  Find the long"),
        "the whole plan, with titles, before its later tasks start: {s}"
    );
    t.keys(&["p"]);
    let s = t.wait_long("PAUSED (p resumes)", 60);
    assert!(
        s.contains("T-001 done") && !s.contains("T-002 running"),
        "paused at the boundary after T-001: {s}"
    );
    t.keys(&["p"]);
    let s = t.wait_long("■ stopped: all_done", 120);
    assert!(s.contains("T-003 done"), "{s}");
    for _ in 0..3 {
        t.literal("{");
    }
    t.keys(&["Enter"]);
    let s = t.wait_for("Next step: Add a test that");
    assert!(
        s.contains("Verdict on T-002") && s.contains("REJECT — weak_test"),
        "the rejected verdict, inspected: {s}"
    );
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    let s = t.wait_for("[exit 0]");
    assert!(!s.contains(" Plan "), "the terminal is restored: {s}");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let summary = show_json(&session);
    assert_eq!(summary["harrow"]["tasks_done"], 3);
    assert!(
        summary["harrow"]["operator_actions"].as_u64().unwrap() >= 2,
        "pause and resume were recorded"
    );
    let repo =
        std::fs::read_dir(tmp.path().join("demo-repos")).unwrap().next().unwrap().unwrap().path();
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
fn decisions_are_typed_in_an_editor_and_sent_through_control() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("events.jsonl"), dir.join("events.jsonl")).unwrap();
    let mut replay = App::open(&dir, SESSION, 64.0, Look::built_in(true)).unwrap();
    act(&mut replay, Action::Approve);
    assert!(
        replay.notice.as_deref().unwrap().contains("steer a live run"),
        "a replay cannot be steered"
    );

    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    // As when the console drives the loop: a run is there to read the commands.
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    act(&mut app, Action::Approve);
    assert!(matches!(app.overlay, Overlay::None), "no task waits and none is selected");
    assert!(app.notice.as_deref().unwrap().contains("select one first"));
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Top);
    act(&mut app, Action::Approve);
    assert!(matches!(app.overlay, Overlay::Editor(_)));
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    press(&mut app, key(KeyCode::Enter));
    assert!(matches!(app.overlay, Overlay::Editor(_)), "an empty reason is not sent");
    assert!(app.notice.as_deref().unwrap().contains("type the reason"));
    for c in "diff reviewed".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!("editor_100x30", screen(&mut app, 100, 30));
    press(&mut app, key(KeyCode::Enter));
    assert!(matches!(app.overlay, Overlay::None));
    let control = std::fs::read_to_string(dir.join("control.jsonl")).unwrap();
    let command: serde_json::Value = serde_json::from_str(control.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            command["op"].as_str(),
            command["task"].as_str(),
            command["reason"].as_str(),
            command["source"].as_str()
        ),
        (Some("approve"), Some("T-001"), Some("diff reviewed"), Some("console"))
    );

    act(&mut app, Action::Note);
    press(&mut app, key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None), "Esc cancels");
    assert_eq!(std::fs::read_to_string(dir.join("control.jsonl")).unwrap().lines().count(), 1);

    act(&mut app, Action::RetryEval);
    act(&mut app, Action::Skip);
    let Overlay::Editor(editor) = &app.overlay else { panic!("skip asks why") };
    assert_eq!(editor.title, "Skip T-001 — why?");
    for c in "not needed".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    let sent: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("control.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ops: Vec<(&str, &str)> = sent
        .iter()
        .map(|c| (c["op"].as_str().unwrap(), c["task"].as_str().unwrap_or("-")))
        .collect();
    assert_eq!(ops, [("approve", "T-001"), ("retry_eval", "T-001"), ("skip", "T-001")]);
    assert_eq!(sent[2]["reason"], "not needed");
}

#[test]
fn a_harrow_session_in_every_pane_at_three_sizes() {
    for (w, h) in [(120, 40), (200, 60)] {
        let mut app = harrow_at_end();
        let text = screen(&mut app, w, h);
        for pane in
            [" Plan ", " Worker ", " Exchange · T-003", " Validators · T-003", " Ledger · T-003"]
        {
            assert!(text.contains(pane), "{pane} at {w}×{h}: {text}");
        }
        insta::assert_snapshot!(format!("harrow_end_{w}x{h}"), text);
    }
    let mut app = harrow_at_end();
    for pane in Pane::ALL {
        app.sel.focus = pane;
        let text = screen(&mut app, 80, 24);
        assert!(
            text.contains(&format!("┌ {}", pane.name())),
            "{pane:?} is the tab on show: {text}"
        );
        insta::assert_snapshot!(format!("harrow_tab_{}_80x24", pane.name()), text);
    }
}

#[test]
fn the_side_panes_follow_the_picked_task_and_the_ledger_opens_its_verdicts() {
    let mut app = harrow_at_end();
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Top);
    act(&mut app, Action::Down);
    let text = screen(&mut app, 200, 60);
    assert!(text.contains("Plan (G follows the run)"), "{text}");
    assert!(text.contains(" Ledger · T-002") && text.contains("1. reject (weak_test)"), "{text}");
    assert!(text.contains("2. accept"), "the rework was accepted: {text}");
    assert!(text.contains(" Validators · T-002") && text.contains("✓ passed"), "{text}");
    app.sel.focus = Pane::Ledger;
    act(&mut app, Action::Top);
    act(&mut app, Action::Inspect);
    let Overlay::Inspector(inspector) = &app.overlay else {
        panic!("no inspector: {:?}", app.notice)
    };
    assert!(inspector.lines[0].starts_with("REJECT — weak_test"), "{:?}", inspector.lines);
    insta::assert_snapshot!("harrow_inspector_80x24", screen(&mut app, 80, 24));
    act(&mut app, Action::Evidence(1));
    let notice = app.notice.clone().unwrap_or_default();
    assert!(
        notice.contains("is gone") && notice.contains("tests/char_frequencies.rs"),
        "the fixture's worktree no longer exists, and the console says so: {notice}"
    );
    act(&mut app, Action::Evidence(7));
    assert!(app.notice.as_deref().unwrap_or_default().contains("2 evidence pointer(s)"));
    insta::assert_snapshot!("harrow_inspector_120x40", screen(&mut app, 120, 40));
    insta::assert_snapshot!("harrow_inspector_200x60", screen(&mut app, 200, 60));
    act(&mut app, Action::Close);
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Bottom);
    assert!(screen(&mut app, 200, 60).contains(" Ledger · T-003"), "G follows the run again");
}

#[test]
fn zoom_gives_the_focused_pane_the_whole_body() {
    let mut app = harrow_at_end();
    app.sel.focus = Pane::Validators;
    act(&mut app, Action::Zoom);
    let text = screen(&mut app, 200, 60);
    assert!(text.contains("┌ Validators · T-003") && !text.contains(" Plan "), "{text}");
    act(&mut app, Action::Zoom);
    assert!(screen(&mut app, 200, 60).contains(" Plan "));
    for want in [Pane::Ledger, Pane::Plan, Pane::Worker] {
        act(&mut app, Action::Focus);
        assert_eq!(app.sel.focus, want, "Tab moves on");
    }
    act(&mut app, Action::FocusBack);
    assert_eq!(app.sel.focus, Pane::Plan, "Shift-Tab moves back");
    act(&mut app, Action::Faster);
    act(&mut app, Action::Slower);
    act(&mut app, Action::Slower);
    assert!(screen(&mut app, 200, 60).lines().next().unwrap().contains("PAUSED 32×"));
}

#[test]
fn search_lands_on_a_tool_call_and_n_moves_to_the_next() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    let mut app = App::open(&fixture(), SESSION, 1.0, Look::built_in(true)).unwrap();
    act(&mut app, Action::PlayPause);
    screen(&mut app, 120, 40);
    act(&mut app, Action::Search);
    for c in "read_file".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    let first = app.search.at.expect("a match");
    let text = screen(&mut app, 120, 40);
    assert!(text.contains("T-001 #1 read_file AGENTS.md"), "the match is on screen: {text}");
    assert!(app.position().0 > first, "the replay moved forward to the match");
    act(&mut app, Action::SearchNext);
    let second = app.search.at.unwrap();
    assert!(second > first, "n moves on: {first} → {second}");
    act(&mut app, Action::SearchPrev);
    assert_eq!(app.search.at, Some(first), "N comes back");
    act(&mut app, Action::Search);
    for c in "no-such-thing".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    assert!(app.notice.as_deref().unwrap().contains("no row contains"), "{:?}", app.notice);
}

#[test]
fn seeking_by_tenths_either_way_matches_a_plain_fold_of_the_log_up_to_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl")).unwrap());
    harrow::session::synth::generate(&mut out, 30_000, harrow::session::synth::Dialect::Harrow, 7)
        .unwrap();
    drop(out);
    let mut seeker = App::open(&dir, "big", f64::INFINITY, Look::built_in(true)).unwrap();
    while !seeker.at_end() {
        seeker.tick(1e9).unwrap();
    }
    let text = std::fs::read(dir.join("events.jsonl")).unwrap();
    let events: Vec<&[u8]> = text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(events.len(), seeker.position().1);
    for tenths in [9, 3, 7, 0, 5, 8] {
        act(&mut seeker, Action::Seek(tenths));
        let target = seeker.position().0;
        assert_eq!(target, 30_000 * usize::from(tenths) / 10 + 1, "at {tenths}0 %");
        let mut fold = harrow::session::summary::SummaryFold::new(Some("big".into()));
        let mut stream = Vec::new();
        for (pos, line) in events[..target].iter().enumerate() {
            let fact = harrow::session::fact::Fact::decode(line).unwrap();
            fold.apply(&fact);
            if harrow::console::view::shown(&fact) {
                stream.push(pos);
            }
        }
        let report =
            harrow::session::scan::ScanReport { events: target as u64, ..Default::default() };
        assert_eq!(seeker.player.view.summary(), &fold.finish(&report), "at {tenths}0 %");
        assert_eq!(
            seeker.player.view.stream(harrow::console::view::Filter::All),
            stream.as_slice(),
            "at {tenths}0 %"
        );
    }
}

#[test]
fn export_of_a_big_session_runs_as_a_job_the_console_answers_keys_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl")).unwrap());
    harrow::session::synth::generate(&mut out, 100_000, harrow::session::synth::Dialect::Harrow, 3)
        .unwrap();
    drop(out);
    let cmd = format!("{} replay {} --speed 0.5", env!("CARGO_BIN_EXE_harrow"), dir.display());
    let t = Tmux::start(&cmd, 160, 45);
    t.wait_long("REPLAY", 60);
    t.keys(&["E"]);
    let s = t.wait_for("exporting the session… ");
    assert!(!s.contains("exported to"), "{s}");
    t.keys(&["?"]);
    let s = t.wait_for("Keys");
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
    let t = Tmux::start(&cmd, 120, 30);
    let s = t.wait_for("Sessions (2)");
    assert!(s.contains(HARROW_SESSION) && s.contains(SESSION) && s.contains("tilth"), "{s}");
    t.keys(&["j"]);
    t.keys(&["Enter"]);
    let s = t.wait_for("REPLAY 8×");
    assert!(s.contains(SESSION), "the Tilth session replays: {s}");
    t.keys(&["q"]);
    t.wait_for("Sessions (2)");
    t.keys(&["q"]);
    let s = t.wait_for("[exit 0]");
    assert!(!s.contains("Sessions ("), "the terminal is restored: {s}");
}

#[test]
fn a_torn_or_corrupt_log_opens_with_the_bad_lines_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(fixture().join("events.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{\"ts\": \"2026-11-22T04:28:44Z\", \"type\": \"tool_call\", \"payl");
    lines.insert(7, "not json at all");
    let torn = lines.join("\n") + "\n{\"ts\": \"2026-11-22T05:00:00Z\", \"type\": \"st";
    std::fs::write(dir.join("events.jsonl"), torn).unwrap();
    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    assert_eq!(app.position(), (151, 151), "every readable event is there");
    let text = screen(&mut app, 120, 40);
    assert!(
        text.contains("events.jsonl: 2 unreadable lines (4, 8) skipped; the rest is shown"),
        "{text}"
    );
}

#[test]
fn the_mouse_scrolls_and_focuses_the_pane_under_it_once_captured_and_t_changes_theme() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let mut app = at_end();
    let area = ratatui::layout::Rect::new(0, 0, 200, 60);
    screen(&mut app, 200, 60);
    act(&mut app, Action::Mouse);
    assert!(app.mouse && app.notice.as_deref().unwrap().contains("mouse on"));
    let at = |kind, column, row| MouseEvent { kind, column, row, modifiers: KeyModifiers::NONE };
    app.mouse_event(at(MouseEventKind::ScrollUp, 80, 20), area).unwrap();
    assert_eq!(
        (app.sel.focus, app.sel.stream_back),
        (Pane::Worker, 3),
        "the wheel scrolls the Worker"
    );
    app.mouse_event(at(MouseEventKind::Down(MouseButton::Left), 5, 3), area).unwrap();
    assert_eq!(app.sel.focus, Pane::Plan, "a click focuses the Plan");
    act(&mut app, Action::Mouse);
    assert!(!app.mouse);

    let before = app.theme().name.clone();
    act(&mut app, Action::Theme);
    assert_ne!(app.theme().name, before);
    assert!(app.notice.as_deref().unwrap().starts_with("theme: "));
    for _ in 0..app.themes.len() - 1 {
        act(&mut app, Action::Theme);
    }
    assert_eq!(app.theme().name, before, "t cycles through every theme");
}

#[test]
fn f_narrows_the_worker_stream_to_the_dialogue_then_to_the_problems() {
    let mut app = harrow_at_end();
    let everything = screen(&mut app, 200, 60);
    assert!(everything.contains("write_file src/lib.rs") && everything.contains(" context "));
    act(&mut app, Action::Filter);
    let dialogue = screen(&mut app, 200, 60);
    assert!(dialogue.contains("Worker · worker ↔ evaluator"), "{dialogue}");
    assert!(dialogue.contains("verdict: reject (weak_test)") && dialogue.contains("submit_case"));
    assert!(!dialogue.contains("write_file src/lib.rs"), "tool calls are left out: {dialogue}");
    act(&mut app, Action::Filter);
    let problems = screen(&mut app, 200, 60);
    assert!(problems.contains("Worker · problems"), "{problems}");
    assert!(problems.contains("BLOCKED") && problems.contains("validators failed"));
    assert!(!problems.contains("verdict: accept"), "{problems}");
    act(&mut app, Action::Filter);
    assert!(screen(&mut app, 200, 60).contains("┌ Worker ─"), "f comes back to everything");
}

#[test]
fn the_status_line_says_what_the_run_waits_on() {
    let text = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    let evaluating = text.lines().position(|l| l.contains("\"to\":\"evaluating\"")).unwrap();
    let mut app = App::open(&harrow_fixture(), HARROW_SESSION, 1.0, Look::built_in(true)).unwrap();
    act(&mut app, Action::PlayPause);
    while app.position().0 <= evaluating {
        act(&mut app, Action::StepForward);
    }
    let s = screen(&mut app, 200, 60);
    assert!(s.lines().next().unwrap().contains("waiting on the evaluator"), "{s}");
    while app.player.view.waiting().is_some() {
        act(&mut app, Action::StepForward);
    }
    let s = screen(&mut app, 200, 60);
    assert!(!s.lines().next().unwrap().contains("waiting"), "the reply ends the wait: {s}");
}

#[test]
fn a_removed_session_folder_is_a_notice_not_the_end_of_the_console() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("events.jsonl"), dir.join("events.jsonl")).unwrap();
    let mut ended = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    act(&mut ended, Action::Pause);
    let notice = ended.notice.clone().unwrap_or_default();
    assert!(notice.contains("the run has ended"), "p after the end says so: {notice}");
    assert!(!dir.join("control.jsonl").exists(), "and sends nothing");
    // The same log cut before its stop: a run that may still be going.
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let mut open = String::new();
    for line in text.lines() {
        if serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v["type"] != "stop") {
            open.push_str(line);
            open.push('\n');
        }
    }
    std::fs::write(dir.join("events.jsonl"), open).unwrap();
    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    act(&mut app, Action::Pause);
    let notice = app.notice.clone().unwrap_or_default();
    assert!(notice.contains("could not send pause"), "{notice}");
    assert!(!app.quit);
    assert!(screen(&mut app, 120, 40).contains("could not send pause"));
}

#[test]
fn k_is_about_the_task_at_work_when_none_is_picked_or_waiting() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("events.jsonl"), dir.join("events.jsonl")).unwrap();
    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    act(&mut app, Action::FailTask);
    let Overlay::Editor(editor) = &app.overlay else { panic!("K asks why: {:?}", app.notice) };
    assert_eq!(editor.task.as_deref(), Some("T-004"));
    assert!(editor.title.starts_with("Fail T-004"), "{}", editor.title);
}

#[test]
fn the_status_line_reads_done_within_a_second_of_the_demos_end() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} demo --fast",
        tmp.path().join("sessions").display(),
        tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow")
    );
    let t = Tmux::start(&cmd, 160, 45);
    let s = t.wait_long("■ stopped: all_done", 120);
    let ended = Instant::now();
    let deadline = ended + Duration::from_secs(1);
    let mut status = s.lines().next().unwrap_or("").to_owned();
    while !status.contains("DONE") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        status = t.screen().lines().next().unwrap_or("").to_owned();
    }
    assert!(status.contains("DONE"), "no key pressed, the status says how it ended: {status}");
    assert!(!status.contains("LIVE"), "{status}");
    t.keys(&["q"]);
    t.wait_for("[exit 0]");
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
    std::thread::sleep(Duration::from_millis(500));
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
    let s = t.wait_for("[exit ");
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
    t.wait_for("[exit 0]");
    let log = support::strict_events(&session);
    let kinds = |k: &str| log.iter().filter(|e| e["type"] == k).cloned().collect::<Vec<_>>();
    assert_eq!(kinds("session_resume").len(), 1, "the console resumed the run once");
    let done = kinds("task_done");
    assert_eq!(done.len(), 2, "{log:?}");
    assert_eq!(done[0]["payload"]["by_operator"], true);
}

/// The screen with its colours: each row's text, then under it the runs of that row drawn in
/// anything but the terminal's default style, as `from-to fg/bg modifiers`.
fn coloured(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    app.prepare(ratatui::layout::Rect::new(0, 0, width, height));
    terminal.draw(|f| draw(f, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..height {
        let mut text = String::new();
        let mut runs = Vec::new();
        let mut run: Option<(u16, String)> = None;
        for x in 0..=width {
            let style = (x < width).then(|| {
                let cell = &buffer[(x, y)];
                text.push_str(cell.symbol());
                let plain = cell.fg == ratatui::style::Color::Reset
                    && cell.bg == ratatui::style::Color::Reset
                    && cell.modifier.is_empty();
                (!plain).then(|| format!("{:?}/{:?} {:?}", cell.fg, cell.bg, cell.modifier))
            });
            let style = style.flatten();
            if run.as_ref().map(|(_, s)| Some(s)) != Some(style.as_ref()) {
                if let Some((from, s)) = run.take() {
                    runs.push(format!("    {from}-{}: {s}", x - 1));
                }
                run = style.map(|s| (x, s));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
        for r in runs {
            out.push_str(&r);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_built_in_theme_and_no_color_in_colour() {
    let themes = Look::built_in(true).themes.len();
    assert!(themes >= 3, "dark, light and high contrast");
    for i in 0..themes {
        let mut app =
            App::open(&harrow_fixture(), HARROW_SESSION, f64::INFINITY, Look::built_in(true))
                .unwrap();
        while !app.at_end() {
            app.tick(10_000.0).unwrap();
        }
        app.theme = i;
        let name = app.theme().name.clone();
        insta::assert_snapshot!(format!("colour_{name}_120x32"), coloured(&mut app, 120, 32));
    }
    let mut plain =
        App::open(&harrow_fixture(), HARROW_SESSION, f64::INFINITY, Look::built_in(false)).unwrap();
    while !plain.at_end() {
        plain.tick(10_000.0).unwrap();
    }
    let text = coloured(&mut plain, 120, 32);
    assert!(!text.contains("Rgb(") && !text.contains("Indexed("), "NO_COLOR draws no colour");
    insta::assert_snapshot!("colour_no_color_120x32", text);
}

/// The hint line of the screen is `mode`'s, and `?` (where it opens the help) lists every row
/// of `mode`'s table, then Esc goes back.
fn check_mode(app: &mut App, mode: harrow::console::keymap::Mode) {
    let text = screen(app, 200, 60);
    let hints = text.lines().last().unwrap_or("").trim_matches(|c| c == '"' || c == ' ');
    assert_eq!(hints, harrow::console::keymap::hint_line(mode, app.live, 200), "{mode:?}: {text}");
    press(app, key(KeyCode::Char('?')));
    if matches!(app.overlay, Overlay::Help { .. }) {
        let help = screen(app, 200, 60);
        let hints = help.lines().last().unwrap_or("").trim_matches(|c| c == '"' || c == ' ');
        let help_mode = harrow::console::keymap::Mode::Help;
        assert_eq!(hints, harrow::console::keymap::hint_line(help_mode, app.live, 200));
        for b in mode.bindings() {
            assert!(help.contains(b.help), "{mode:?}'s help lacks {:?}: {help}", b.label());
        }
        press(app, key(KeyCode::Esc));
    }
}

#[test]
fn the_diff_row_editor_file_and_resume_modes_show_their_own_keys() {
    use harrow::console::keymap::Mode;
    let mut tilth = at_end();
    tilth.sel.focus = Pane::Worker;
    act(&mut tilth, Action::PrevVerdict);
    press(&mut tilth, key(KeyCode::Char('d')));
    assert!(matches!(tilth.overlay, Overlay::Diff(..)), "{:?}", tilth.notice);
    check_mode(&mut tilth, Mode::Diff);
    assert!(matches!(tilth.overlay, Overlay::Diff(..)), "Esc from its help goes back to it");
    press(&mut tilth, key(KeyCode::Esc));
    act(&mut tilth, Action::StepBack);
    screen(&mut tilth, 200, 60);
    press(&mut tilth, key(KeyCode::Enter));
    assert!(matches!(tilth.overlay, Overlay::Row(_)), "{:?}", tilth.notice);
    check_mode(&mut tilth, Mode::Row);
    press(&mut tilth, key(KeyCode::Esc));

    let tmp = tempfile::tempdir().unwrap();
    let session = support::demo_session(tmp.path());
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let mut app = App::open_live(&session, &id, Look::built_in(true)).unwrap();
    screen(&mut app, 200, 60);
    app.sel.focus = Pane::Ledger;
    act(&mut app, Action::Top);
    act(&mut app, Action::Inspect);
    press(&mut app, key(KeyCode::Char('1')));
    assert!(matches!(app.overlay, Overlay::Source(_)), "{:?}", app.notice);
    check_mode(&mut app, Mode::FileView);
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Esc));
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Top);
    press(&mut app, key(KeyCode::Char('a')));
    assert!(matches!(app.overlay, Overlay::Editor(_)), "{:?}", app.notice);
    check_mode(&mut app, Mode::Editor);
    let Overlay::Editor(editor) = &app.overlay else { panic!("? is typed into the editor") };
    assert_eq!(editor.text.lines().join(""), "?");
    press(&mut app, key(KeyCode::Char('!')));
    press(&mut app, key(KeyCode::Enter));
    assert!(matches!(app.overlay, Overlay::ResumeOffer(_)), "no run holds it: {:?}", app.notice);
    check_mode(&mut app, Mode::ResumePrompt);
    press(&mut app, key(KeyCode::Esc));
    assert!(app.notice.as_deref().is_some_and(|n| n.contains("waits in the control file")));
}

#[test]
fn each_modes_help_and_hint_line_are_its_key_table() {
    use harrow::console::keymap::Mode;
    let check = check_mode;
    let mut app = harrow_at_end();
    check(&mut app, Mode::Main);
    assert!(matches!(app.overlay, Overlay::None));
    app.sel.focus = Pane::Ledger;
    act(&mut app, Action::Top);
    act(&mut app, Action::Inspect);
    check(&mut app, Mode::Inspector);
    assert!(matches!(app.overlay, Overlay::Inspector(_)), "Esc from its help goes back to it");
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('/')));
    check(&mut app, Mode::Search);
    assert!(matches!(app.overlay, Overlay::Search(..)), "? is typed into the search box");
    press(&mut app, key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None));
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    press(&mut app, key(KeyCode::Char('q')));
    check(&mut app, Mode::QuitPrompt);
    press(&mut app, key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None) && !app.quit, "Esc stays in the console");
    // Ctrl-C leaves any overlay, and the console from the panes.
    press(&mut app, key(KeyCode::Char('/')));
    let ctrl_c = crossterm::event::KeyEvent::new(
        KeyCode::Char('c'),
        crossterm::event::KeyModifiers::CONTROL,
    );
    press(&mut app, ctrl_c);
    assert!(matches!(app.overlay, Overlay::None));
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
    let session = loop {
        if let Some(Ok(entry)) = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next()) {
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
    t.wait_for("[exit 0]");
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
    for _ in 0..3 {
        t.literal("{");
    }
    t.keys(&["Enter"]);
    t.wait_for("REJECT — weak_test");
    t.keys(&["1"]);
    let s = t.wait_for("as judged (commit");
    assert!(s.contains("the file has CHANGED in the worktree since"), "{s}");
    assert!(!s.contains("case_insensitively"), "the evidence as judged, not as reworked: {s}");
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["d"]);
    let s = t.wait_for("T-002 attempt 1 as judged");
    assert!(
        s.contains("tests/char_frequencies.rs") && s.contains("whitespace_is_not_counted"),
        "{s}"
    );
    assert!(!s.contains("case_insensitively"), "the rejected attempt had no such test: {s}");
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.literal("}");
    t.keys(&["D"]);
    let s = t.wait_for("T-002 attempt 2 since the attempt before it");
    assert!(
        s.contains("+fn letters_are_counted_case_insensitively()"),
        "the rework added the test the reject asked for: {s}"
    );
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    t.wait_for("[exit 0]");
}

#[test]
fn d_on_a_tilth_verdict_shows_the_diff_tilth_showed_its_evaluator() {
    let mut app = at_end();
    app.sel.focus = Pane::Worker;
    act(&mut app, Action::PrevVerdict);
    act(&mut app, Action::Diff);
    let Overlay::Diff(view, _) = &app.overlay else { panic!("no diff: {:?}", app.notice) };
    assert!(view.title.contains("the diff Tilth showed its evaluator"), "{}", view.title);
    assert!(!view.files.is_empty(), "{:?}", view.lines);
    insta::assert_snapshot!("tilth_diff_120x40", screen(&mut app, 120, 40));
}

#[test]
fn enter_on_a_long_bash_row_shows_the_whole_command_and_its_output() {
    let mut app = harrow_at_end();
    app.sel.focus = Pane::Worker;
    act(&mut app, Action::Search);
    for c in "--test char_frequencies 2>&1".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    let pane = screen(&mut app, 80, 24);
    assert!(pane.contains("bash cargo test"), "the row is on screen: {pane}");
    assert!(!pane.contains("char_frequencies 2>&1 | tail -n 3"), "the pane cuts the row: {pane}");
    act(&mut app, Action::Inspect);
    let Overlay::Row(row) = &app.overlay else { panic!("no row view: {:?}", app.notice) };
    let text = row.lines.join("\n");
    assert!(
        text.contains("cargo test --quiet --offline --test char_frequencies 2>&1 | tail -n 3"),
        "the whole command: {text}"
    );
    assert!(text.contains("Result") && text.contains("2 passed"), "and its output: {text}");
    insta::assert_snapshot!("row_view_100x30", screen(&mut app, 100, 30));
    press(&mut app, key(KeyCode::Char('/')));
    for c in "passed".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    let Overlay::Row(row) = &app.overlay else { panic!("the search goes back to the row") };
    assert!(row.found.is_some_and(|i| row.lines[i].contains("passed")));
    let effects = app.key(key(KeyCode::Char('y'))).unwrap();
    let copied = effects.iter().find_map(|e| match e {
        Effect::Copy(text) => Some(text.clone()),
        _ => None,
    });
    assert!(copied.is_some_and(|t| t.contains("tail -n 3")), "y copies the whole row");
    press(&mut app, key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None));
}

#[test]
fn the_plan_lists_every_task_with_its_title_before_the_first_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let session = support::demo_session(tmp.path());
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let mut app = App::open(&session, &id, 1.0, Look::built_in(true)).unwrap();
    act(&mut app, Action::Seek(0));
    assert_eq!(app.position().0, 1, "only the session's start is replayed");
    let s = screen(&mut app, 160, 45);
    for row in [
        "T-001 pending  Count words",
        "T-002 pending  Count character fre",
        "T-003 pending  Find the longest wo",
    ] {
        assert!(s.contains(row), "{row} in {s}");
    }
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
    t.wait_for("[exit 0]");
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
    t.wait_long("[exit ", 60);
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
    t.wait_for("[exit 0]");
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
    let s = t.wait_for("[exit ");
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
        {"content": "What should search match?", "delay_ms": 60000}
    ]}}});
    let (_rt, server) = serve(&script, false);
    let args = format!("prep --repo {} --feature search --brief 'a search'", repo.display());
    let t = Tmux::start(&scripted_console(tmp.path(), &server.base_url(), &args), 120, 30);
    let s = t.wait_for("the model is working (1 s)");
    assert!(s.contains("prep reads: read_file README.md"), "the model's reads are shown: {s}");
    assert!(s.contains("Esc stops") && s.contains("? keys"), "{s}");
    t.wait_for("the model is working (2 s)");
    t.keys(&["?"]);
    let s = t.wait_for("Keys while the model works");
    assert!(s.contains("stop the model and the interview"), "{s}");
    let s = t.wait_for("the model is working (3 s)");
    assert!(s.contains("Keys while the model works"), "the spinner goes on under the help: {s}");
    t.keys(&["Escape"]);
    t.keys(&["Escape"]);
    t.wait_for("Stop the interview? Nothing is written.");
    let started = Instant::now();
    t.keys(&["y"]);
    let s = t.wait_for("[exit ");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call in flight was dropped, not waited for"
    );
    assert!(
        s.contains("[exit 0]") && s.contains("The interview was stopped; nothing was written"),
        "{s}"
    );
    assert!(!repo.join(".harrow/search").exists());
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
    // Escape then q at once reads as Alt-q: one key at a time.
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    let s = t.wait_for("[exit ");
    assert!(s.contains("[exit 0]"), "{s}");
}

#[test]
fn while_the_run_is_paused_the_hint_line_offers_p_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    // The demo's log up to its first task's end, then the loop applying a pause: a live run
    // paused at a task boundary.
    let done = text.lines().position(|l| l.contains("\"type\":\"task_done\"")).unwrap();
    let mut log: String = text.lines().take(done + 1).flat_map(|l| [l, "\n"]).collect();
    log.push_str(r#"{"ts":"2026-11-22T08:06:20.000Z","seq":9999,"type":"operator_action","payload":{"action":"pause"}}"#);
    log.push('\n');
    std::fs::write(dir.join("events.jsonl"), log).unwrap();
    let mut app = App::open_live(&dir, HARROW_SESSION, Look::built_in(true)).unwrap();
    let s = screen(&mut app, 160, 45);
    let hints = s.lines().last().unwrap_or("");
    assert!(hints.contains("p resume") && !hints.contains("p pause"), "{hints}");
}
