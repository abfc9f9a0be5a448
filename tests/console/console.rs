//! The console in process: snapshots of its screens at several sizes (ratatui's
//! `TestBackend` + insta), its keys and overlays, and the fold it draws from. The real binary
//! in a real terminal is `tests/console/console_tmux.rs`.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{sessions, support};

use crossterm::event::KeyCode;
use harrow::console::app::{App, Effect};
use harrow::console::diff::DiffView;
use harrow::console::diff_review::CommentBox;
use harrow::console::evidence::Source;
use harrow::console::inspector::Inspector;
use harrow::console::keymap::Action;
use harrow::console::layout::Pane;
use harrow::console::modal::{Editor, QuitPrompt, ResumeOffer, SearchBox};
use harrow::console::row::RowView;
use harrow::console::theme::Look;
use harrow::console::ui::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sessions::{HARROW_SESSION, SESSION, fixture, harrow_fixture};

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
    harrow::session::synth::write_session(&dir, 400, harrow::session::synth::Dialect::Harrow, 11)
        .unwrap();
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
    assert!(!app.views.is_open(), "? closes the help it opened");
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
    assert!(!first.contains("mouse capture on or off"), "the last key is below the fold: {first}");
    for _ in 0..40 {
        act(&mut app, Action::Down);
    }
    let last = screen(&mut app, 80, 24);
    assert!(last.contains("mouse capture on or off"), "{last}");
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
    let Some(inspector) = app.views.top::<Inspector>() else {
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
    assert!(!app.views.is_open());
    act(&mut app, Action::NextVerdict);
    act(&mut app, Action::Inspect);
    let Some(inspector) = app.views.top::<Inspector>() else { panic!("no inspector") };
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
    assert!(app.views.top::<Inspector>().is_some(), "notice: {:?}", app.notice);
    assert!(screen(&mut app, 100, 30).contains("Verdict on T-004"));
}

/// `i` opens the editor for words to the task at work; Tab turns the steer into a queue and
/// back, and what is sent is the one the title names.
#[test]
fn a_steer_and_a_queue_are_typed_in_one_editor_and_tab_switches_them() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    // The run as it was before it stopped: a task at work.
    let log = std::fs::read_to_string(fixture().join("events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let last_done = lines.iter().rposition(|l| l.contains("\"task_done\"")).unwrap();
    let working = &lines[..last_done];
    std::fs::write(dir.join("events.jsonl"), working.join("\n") + "\n").unwrap();
    let mut replay = App::open(&dir, SESSION, 64.0, Look::built_in(true)).unwrap();
    act(&mut replay, Action::Steer);
    assert!(replay.notice.as_deref().unwrap().contains("this is a replay"), "{:?}", replay.notice);

    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    act(&mut app, Action::Steer);
    let Some(editor) = app.views.top::<Editor>() else {
        panic!("i opens the editor: {:?}", app.notice)
    };
    assert_eq!(editor.op.as_str(), "steer");
    let task = editor.task.clone().unwrap();
    assert!(editor.title.starts_with(&format!("Steer {task}")), "{}", editor.title);
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    for c in "use the parser in src/parse.rs".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!("steer_editor_100x30", screen(&mut app, 100, 30));
    press(&mut app, key(KeyCode::Tab));
    let Some(editor) = app.views.top::<Editor>() else { panic!("Tab keeps the editor open") };
    assert_eq!(editor.op.as_str(), "queue");
    assert!(editor.title.starts_with(&format!("Queue for {task}")), "{}", editor.title);
    insta::assert_snapshot!("queue_editor_60x20", screen(&mut app, 60, 20));
    press(&mut app, key(KeyCode::Enter));
    assert!(!app.views.is_open());
    assert!(app.notice.as_deref().unwrap().contains("queued for"), "{:?}", app.notice);
    let control = std::fs::read_to_string(dir.join("control.jsonl")).unwrap();
    let command: serde_json::Value = serde_json::from_str(control.lines().next().unwrap()).unwrap();
    assert_eq!(command["op"], "queue");
    assert_eq!(command["task"], task.as_str());
    assert_eq!(command["text"], "use the parser in src/parse.rs");

    // A steer from the console that came after the worker's last request of its attempt: the
    // console offers to queue the same words, Enter queues them.
    let line = format!(
        r#"{{"ts":"2026-11-22T04:29:30Z","type":"operator_steer","payload":{{"task_id":"{task}","text":"the words that came late","delivered":false,"reason":"its attempt was over","source":"console"}}}}"#
    );
    let log = dir.join("events.jsonl");
    let offset = std::fs::metadata(&log).unwrap().len();
    let number = std::fs::read_to_string(&log).unwrap().lines().count() as u64 + 1;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
    let at = harrow::session::scan::LineAt { number, offset, len: line.len() as u32 };
    app.take_lines(vec![(at, line.clone().into_bytes())]).unwrap();
    let Some(offer) = app.views.top::<Editor>() else {
        panic!("an offer to queue: {:?}", app.notice)
    };
    assert_eq!(offer.op.as_str(), "queue");
    assert!(offer.title.contains("queue it for its next attempt?"), "{}", offer.title);
    assert_eq!(offer.text.lines().join(" "), "the words that came late");
    press(&mut app, key(KeyCode::Enter));
    let control = std::fs::read_to_string(dir.join("control.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(control.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["op"].as_str(), last["text"].as_str()),
        (Some("queue"), Some("the words that came late"))
    );

    // A late steer for a task that has landed: nothing to queue it for, and the console says
    // so instead of offering a queue the run would refuse.
    let line = r#"{"ts":"2026-11-22T04:29:31Z","type":"operator_steer","payload":{"task_id":"T-001","text":"too late","delivered":false,"reason":"its attempt was over","source":"console"}}"#;
    let offset = std::fs::metadata(&log).unwrap().len();
    let number = std::fs::read_to_string(&log).unwrap().lines().count() as u64 + 1;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
    let at = harrow::session::scan::LineAt { number, offset, len: line.len() as u32 };
    app.take_lines(vec![(at, line.as_bytes().to_vec())]).unwrap();
    assert!(app.views.top::<Editor>().is_none(), "no queue offered for a landed task");
    assert!(
        app.notice.as_deref().unwrap_or("").contains("T-001 was done before"),
        "{:?}",
        app.notice
    );
}

/// With the worker's window in the session's start, the context row says how full the last
/// request left it; without, only its size.
#[test]
fn the_context_row_says_how_full_the_window_is_when_the_start_records_it() {
    let plain = screen(&mut harrow_at_end(), 140, 40);
    let row = plain.lines().find(|l| l.contains("prompt tokens")).unwrap();
    assert!(!row.contains(" / "), "{row}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    let (first, rest) = log.split_once('\n').unwrap();
    let mut start: serde_json::Value = serde_json::from_str(first).unwrap();
    start["payload"]["endpoints"]["worker"]["context_window"] = serde_json::json!(16_384);
    std::fs::write(dir.join("events.jsonl"), format!("{start}\n{rest}")).unwrap();
    let mut app = App::open(&dir, HARROW_SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let shown = screen(&mut app, 140, 40);
    let row = shown.lines().find(|l| l.contains("prompt tokens")).unwrap();
    assert!(row.contains(" / 16.4k prompt tokens (") && row.contains(" %)"), "{row}");
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
    assert!(!app.views.is_open(), "no task waits and none is selected");
    assert!(app.notice.as_deref().unwrap().contains("select one first"));
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Top);
    act(&mut app, Action::Approve);
    assert!(app.views.top::<Editor>().is_some());
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    press(&mut app, key(KeyCode::Enter));
    assert!(app.views.top::<Editor>().is_some(), "an empty reason is not sent");
    assert!(app.notice.as_deref().unwrap().contains("type the reason"));
    for c in "diff reviewed".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!("editor_100x30", screen(&mut app, 100, 30));
    press(&mut app, key(KeyCode::Enter));
    assert!(!app.views.is_open());
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
    assert!(!app.views.is_open(), "Esc cancels");
    assert_eq!(std::fs::read_to_string(dir.join("control.jsonl")).unwrap().lines().count(), 1);

    act(&mut app, Action::RetryEval);
    act(&mut app, Action::Skip);
    let Some(editor) = app.views.top::<Editor>() else { panic!("skip asks why") };
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
    let Some(inspector) = app.views.top::<Inspector>() else {
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
fn and_shows_only_the_rows_the_search_found_then_every_row_again() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    let mut app = harrow_at_end();
    app.sel.focus = Pane::Worker;
    press(&mut app, key(KeyCode::Char('&')));
    assert!(app.notice.as_deref().unwrap().contains("search first"), "{:?}", app.notice);
    act(&mut app, Action::Search);
    for c in "write_file".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    press(&mut app, key(KeyCode::Char('&')));
    let said = app.notice.clone().unwrap();
    assert!(said.starts_with("only the ") && said.contains("“write_file”"), "{said}");
    let text = screen(&mut app, 160, 45);
    assert!(text.contains("Worker · only “write_file”"), "{text}");
    let worker_rows: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split('│').nth(3))
        .map(str::trim)
        .filter(|r| r.contains(" #"))
        .collect();
    assert!(!worker_rows.is_empty(), "{text}");
    for r in &worker_rows {
        assert!(r.to_lowercase().contains("write_file"), "a row without the word: {r}\n{text}");
    }
    // k moves among those rows only.
    press(&mut app, key(KeyCode::Char('k')));
    let picked = app.sel.picked.expect("a row picked");
    assert!(app.sel.only.as_ref().unwrap().contains(&picked));
    press(&mut app, key(KeyCode::Char('&')));
    assert_eq!(app.notice.as_deref(), Some("every row again"));
    let text = screen(&mut app, 160, 45);
    assert!(!text.contains("only “write_file”"), "{text}");
}

#[test]
fn the_rows_and_shows_take_in_matches_that_arrive_as_a_fresh_count_would() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use harrow::session::scan::LineAt;
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(fixture().join("events.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (first, rest) = lines.split_at(lines.len() / 2);
    let head = first.join("\n") + "\n";
    std::fs::write(dir.join("events.jsonl"), &head).unwrap();
    let mut app = App::open_live(&dir, SESSION, Look::built_in(true)).unwrap();
    act(&mut app, Action::Search);
    for c in "read_file".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    press(&mut app, key(KeyCode::Char('&')));
    screen(&mut app, 160, 45);
    let before = app.sel.only.clone().unwrap().len();
    let (mut offset, mut arrived) = (head.len() as u64, Vec::new());
    for (i, line) in rest.iter().enumerate() {
        let at = LineAt { number: (first.len() + i + 1) as u64, offset, len: line.len() as u32 };
        arrived.push((at, line.as_bytes().to_vec()));
        offset += line.len() as u64 + 1;
    }
    std::fs::write(dir.join("events.jsonl"), text.clone()).unwrap();
    app.take_lines(arrived).unwrap();
    screen(&mut app, 160, 45);
    let grown = app.sel.only.clone().unwrap();
    let mut fresh = App::open(&dir, SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    fresh.search.query = "read_file".into();
    let counted = fresh.search.matches(&mut fresh.player, fresh.sel.filter).unwrap();
    assert!(grown.len() > before, "matches that arrived are taken in: {before} → {}", grown.len());
    assert_eq!(grown, counted, "the same rows a fresh count finds");
}

#[test]
fn seeking_by_tenths_either_way_matches_a_plain_fold_of_the_log_up_to_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    harrow::session::synth::write_session(&dir, 30_000, harrow::session::synth::Dialect::Harrow, 7)
        .unwrap();
    let mut seeker = App::open(&dir, "big", f64::INFINITY, Look::built_in(true)).unwrap();
    while seeker.player.reading_percent().is_some() {
        seeker.read_more().unwrap();
    }
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
        let mut kept = harrow::session::fact::KeptValues::default();
        for (pos, line) in events[..target].iter().enumerate() {
            let fact = harrow::session::fact::Fact::decode(line, &mut kept).unwrap();
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
    let Some(editor) = app.views.top::<Editor>() else { panic!("K asks why: {:?}", app.notice) };
    assert_eq!(editor.task.as_deref(), Some("T-004"));
    assert!(editor.title.starts_with("Fail T-004"), "{}", editor.title);
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
    if mode == harrow::console::keymap::Mode::Editor {
        // An editor's keys are on its border, said once: the hint line leaves them to it.
        assert_eq!(hints, "", "{text}");
        assert!(text.contains("Esc cancels"), "{text}");
    } else {
        let expected = harrow::console::keymap::hint_line(mode, app.live, 200);
        assert_eq!(hints, expected, "{mode:?}: {text}");
    }
    press(app, key(KeyCode::Char('?')));
    if app.views.mode() == harrow::console::keymap::Mode::Help {
        // The whole table: its first screen, then scrolled to its end.
        let mut help = screen(app, 200, 60);
        press(app, key(KeyCode::End));
        help.push_str(&screen(app, 200, 60));
        let hints = help.lines().last().unwrap_or("").trim_matches(|c| c == '"' || c == ' ');
        let help_mode = harrow::console::keymap::Mode::Help;
        assert_eq!(hints, harrow::console::keymap::hint_line(help_mode, app.live, 200));
        // Every key of the table that means something here, and none that does not (a
        // replay's clock live, a decision in a replay).
        for b in mode.bindings() {
            let listed = b.only.listed(app.live);
            assert_eq!(help.contains(b.help), listed, "{mode:?}, {:?}: {help}", b.label());
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
    assert!(tilth.views.top::<DiffView>().is_some(), "{:?}", tilth.notice);
    check_mode(&mut tilth, Mode::Diff);
    assert!(tilth.views.top::<DiffView>().is_some(), "Esc from its help goes back to it");
    press(&mut tilth, key(KeyCode::Esc));
    act(&mut tilth, Action::StepBack);
    screen(&mut tilth, 200, 60);
    press(&mut tilth, key(KeyCode::Enter));
    assert!(tilth.views.top::<RowView>().is_some(), "{:?}", tilth.notice);
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
    assert!(app.views.top::<Source>().is_some(), "{:?}", app.notice);
    check_mode(&mut app, Mode::FileView);
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Esc));
    app.sel.focus = Pane::Plan;
    act(&mut app, Action::Top);
    press(&mut app, key(KeyCode::Char('a')));
    assert!(app.views.top::<Editor>().is_some(), "{:?}", app.notice);
    check_mode(&mut app, Mode::Editor);
    let Some(editor) = app.views.top::<Editor>() else { panic!("? is typed into the editor") };
    assert_eq!(editor.text.lines().join(""), "?");
    press(&mut app, key(KeyCode::Char('!')));
    press(&mut app, key(KeyCode::Enter));
    assert!(app.views.top::<ResumeOffer>().is_some(), "no run holds it: {:?}", app.notice);
    check_mode(&mut app, Mode::ResumePrompt);
    press(&mut app, key(KeyCode::Esc));
    assert!(app.notice.as_deref().is_some_and(|n| n.contains("waits in the control file")));
}

/// The help of a console watching a run lists its decisions and no replay's clock keys
/// (space, + -, . ,); a replay's lists the clock and no decisions.
#[test]
fn the_live_help_lists_no_replay_keys_and_a_replays_no_decisions() {
    let mut app = harrow_at_end();
    app.live = true;
    check_mode(&mut app, harrow::console::keymap::Mode::Main);
    act(&mut app, Action::Help);
    let live = screen(&mut app, 120, 60);
    assert!(live.contains("pause at the next task boundary"), "{live}");
    assert!(
        !live.contains("play or pause the replay") && !live.contains("replay slower"),
        "{live}"
    );
    app.views.clear();
    app.live = false;
    act(&mut app, Action::Help);
    let replay = screen(&mut app, 120, 60);
    assert!(replay.contains("play or pause the replay"), "{replay}");
    assert!(!replay.contains("pause at the next task boundary"), "{replay}");
}

#[test]
fn each_modes_help_and_hint_line_are_its_key_table() {
    use harrow::console::keymap::Mode;
    let check = check_mode;
    let mut app = harrow_at_end();
    check(&mut app, Mode::Main);
    assert!(!app.views.is_open());
    app.sel.focus = Pane::Ledger;
    act(&mut app, Action::Top);
    act(&mut app, Action::Inspect);
    check(&mut app, Mode::Inspector);
    assert!(app.views.top::<Inspector>().is_some(), "Esc from its help goes back to it");
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('/')));
    check(&mut app, Mode::Search);
    assert!(app.views.top::<SearchBox>().is_some(), "? is typed into the search box");
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.views.is_open());
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    press(&mut app, key(KeyCode::Char('q')));
    check(&mut app, Mode::QuitPrompt);
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.views.is_open() && !app.quit, "Esc stays in the console");
    // Ctrl-C leaves any overlay, and the console from the panes.
    press(&mut app, key(KeyCode::Char('/')));
    let ctrl_c = crossterm::event::KeyEvent::new(
        KeyCode::Char('c'),
        crossterm::event::KeyModifiers::CONTROL,
    );
    press(&mut app, ctrl_c);
    assert!(!app.views.is_open());
}

#[test]
fn d_on_a_tilth_verdict_shows_the_diff_tilth_showed_its_evaluator() {
    let mut app = at_end();
    app.sel.focus = Pane::Worker;
    act(&mut app, Action::PrevVerdict);
    act(&mut app, Action::Diff);
    let Some(view) = app.views.top::<DiffView>() else { panic!("no diff: {:?}", app.notice) };
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
    let Some(row) = app.views.top::<RowView>() else { panic!("no row view: {:?}", app.notice) };
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
    let Some(row) = app.views.top::<RowView>() else { panic!("the search goes back to the row") };
    assert!(row.found.is_some_and(|i| row.lines[i].contains("passed")));
    let effects = app.key(key(KeyCode::Char('y'))).unwrap();
    let copied = effects.iter().find_map(|e| match e {
        Effect::Copy(text) => Some(text.clone()),
        _ => None,
    });
    assert!(copied.is_some_and(|t| t.contains("tail -n 3")), "y copies the whole row");
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.views.is_open());
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
        "└ T-002 pending ←T-001  Count characte",
        "└ T-003 pending ←T-001  Find the longe",
    ] {
        assert!(s.contains(row), "{row} in {s}");
    }
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

/// `k`/`j` move a cursor over the Worker rows; `Enter` opens the row under it (not the newest),
/// `d` the diff of that row's attempt, and `G` follows the newest again.
#[test]
fn a_row_cursor_picks_a_worker_row_for_enter_and_d() {
    let mut app = harrow_at_end();
    app.sel.focus = Pane::Worker;
    screen(&mut app, 200, 60);
    let newest = app.selected_row().unwrap();
    act(&mut app, Action::Up);
    act(&mut app, Action::Up);
    let picked = app.selected_row().unwrap();
    assert!(picked < newest, "the cursor moved to an older row");
    let text = screen(&mut app, 200, 60);
    assert!(text.contains("2 newer below ↓ (G)"), "{text}");
    act(&mut app, Action::Inspect);
    let opened = match (app.views.top::<RowView>(), app.views.top::<Inspector>()) {
        (Some(row), _) => row.pos,
        (_, Some(verdict)) => Some(verdict.pos),
        _ => panic!("Enter opened {:?}", app.views),
    };
    assert_eq!(opened, Some(picked), "Enter opened the picked row, not the newest");
    act(&mut app, Action::Close);
    // Walk back to a row of T-002's first (rejected) attempt; `d` shows that attempt's diff.
    loop {
        let at = app.selected_row().unwrap();
        let event = app.player.fetch(at).unwrap();
        let attempt = event.payload.scope().and_then(|s| s.attempt);
        if event.task_id() == Some("T-002") && attempt == Some(1) {
            break;
        }
        assert!(at > 0, "no row of T-002 attempt 1");
        act(&mut app, Action::Up);
        screen(&mut app, 200, 60);
    }
    act(&mut app, Action::Diff);
    match app.views.top::<DiffView>() {
        Some(view) => assert!(view.title.contains("T-002"), "{}", view.title),
        None => panic!("d opened {:?}: {:?}", app.views, app.notice),
    }
    act(&mut app, Action::Close);
    act(&mut app, Action::Bottom);
    assert_eq!(app.selected_row(), Some(newest), "G follows the newest again");
    assert!(!screen(&mut app, 200, 60).contains("newer below"));
    act(&mut app, Action::Diff);
    match app.views.top::<DiffView>() {
        Some(view) => assert!(view.title.contains("T-003"), "{}", view.title),
        None => panic!("d opened {:?}: {:?}", app.views, app.notice),
    }
}

/// `T` cycles the worker rows' time: the clock's, then since the session began, then none.
#[test]
fn t_gives_worker_rows_their_time_and_takes_it_away() {
    let mut app = harrow_at_end();
    screen(&mut app, 200, 60);
    let first = |app: &App| app.prepared.worker.last().map(|(_, (_, t))| t.clone()).unwrap();
    let plain = first(&app);
    act(&mut app, Action::RowTime);
    screen(&mut app, 200, 60);
    let clock = first(&app);
    let b = clock.as_bytes();
    assert!(
        b.len() > 9 && b[2] == b':' && b[5] == b':' && b[8] == b' ' && clock.ends_with(&plain),
        "hh:mm:ss before the row: {clock:?}"
    );
    act(&mut app, Action::RowTime);
    screen(&mut app, 200, 60);
    let since = first(&app);
    assert!(since.trim_start().starts_with('+') && since.ends_with(&plain), "{since:?}");
    assert!(since.contains("s ") || since.contains("m "), "a duration: {since:?}");
    act(&mut app, Action::RowTime);
    screen(&mut app, 200, 60);
    assert_eq!(first(&app), plain, "and back to none");
}

/// A hostile log names a lane's task with escape sequences: the lane strip, the Plan and the
/// rows show them as text, and no cell of the screen holds a control character.
#[test]
fn a_lane_task_named_with_escapes_reaches_no_cell_as_a_control_character() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("20261125-000000-aaaaaa");
    std::fs::create_dir_all(&dir).unwrap();
    let evil = "T-\u{1b}]0;pwned\u{7}\u{9b}31m";
    let lines = [
        serde_json::json!({"ts": "2026-11-25T00:00:00.000Z", "seq": 1, "type": "session_start",
            "payload": {"session_id": "20261125-000000-aaaaaa", "plan_tasks": [{"id": evil, "title": "x", "depends_on": [evil]}]}}),
        serde_json::json!({"ts": "2026-11-25T00:00:01.000Z", "seq": 2, "lane": 1, "type": "task_state",
            "payload": {"task_id": evil, "attempt": 1, "from": "pending", "to": "running"}}),
        serde_json::json!({"ts": "2026-11-25T00:00:02.000Z", "seq": 3, "lane": 2, "type": "tool_call",
            "payload": {"task_id": evil, "iter": 1, "tool": "bash", "args": {"command": "ls"}}}),
    ];
    let text = lines.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let mut app =
        App::open(&dir, "20261125-000000-aaaaaa", f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let mut terminal = Terminal::new(TestBackend::new(160, 45)).unwrap();
    app.prepare(ratatui::layout::Rect::new(0, 0, 160, 45));
    terminal.draw(|f| draw(f, &app)).unwrap();
    let cells = terminal.backend().buffer().content();
    assert!(
        cells.iter().all(|c| c.symbol().chars().all(|ch| !ch.is_control())),
        "no control character in any cell"
    );
    let shown = format!("{}", terminal.backend());
    assert!(shown.contains("L1") && shown.contains("L2"), "the lane strip is drawn: {shown}");
}

#[test]
fn a_seek_past_what_is_read_says_so_and_lands_once_the_log_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    harrow::session::synth::write_session(&dir, 40_000, harrow::session::synth::Dialect::Harrow, 5)
        .unwrap();
    let mut app = App::open(&dir, "big", 8.0, Look::built_in(true)).unwrap();
    let read = app.player.reading_percent().expect("a 34 MB log is not read at open");
    let (at, total) = app.position();
    act(&mut app, Action::Seek(9));
    let notice = app.notice.clone().unwrap_or_default();
    assert!(notice.contains(&format!("still being read ({read} %)")), "{notice}");
    assert!(notice.contains("goes to 90 % once it is"), "{notice}");
    assert_eq!(app.position(), (at, total), "the cursor waits");
    screen(&mut app, 160, 45);
    while app.player.reading_percent().is_some() {
        app.read_more().unwrap();
    }
    assert_eq!(app.position(), (36_001, 40_000), "then it lands at 90 %");
    assert!(app.notice.is_none(), "and the notice goes: {:?}", app.notice);
    act(&mut app, Action::Seek(1));
    assert_eq!(app.position().0, 4_001, "a seek within what is read is made at once");
}

/// A lane's done task keeps the time it took in the lane strip (from its first event in the
/// lane to its last), while the replay goes on long after; a task at work counts on.
#[test]
fn a_done_lane_task_keeps_its_time_while_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("20261125-000000-bbbbbb");
    std::fs::create_dir_all(&dir).unwrap();
    let ev = |seq: u64, secs: u64, lane: u64, kind: &str, payload: serde_json::Value| serde_json::json!({"ts": format!("2026-11-25T00:00:{secs:02}.000Z"), "seq": seq, "lane": lane, "type": kind, "payload": payload});
    let lines = [
        serde_json::json!({"ts": "2026-11-25T00:00:00.000Z", "seq": 1, "type": "session_start",
            "payload": {"session_id": "20261125-000000-bbbbbb", "plan_tasks": [{"id": "T-001", "title": "a"}, {"id": "T-002", "title": "b"}]}}),
        ev(
            2,
            1,
            1,
            "task_state",
            serde_json::json!({"task_id": "T-001", "attempt": 1, "from": "pending", "to": "running"}),
        ),
        ev(
            3,
            1,
            2,
            "task_state",
            serde_json::json!({"task_id": "T-002", "attempt": 1, "from": "pending", "to": "running"}),
        ),
        ev(
            4,
            4,
            1,
            "task_state",
            serde_json::json!({"task_id": "T-001", "attempt": 1, "from": "evaluating", "to": "done"}),
        ),
        ev(
            5,
            50,
            2,
            "tool_call",
            serde_json::json!({"task_id": "T-002", "iter": 1, "tool": "bash", "args": {"command": "ls"}}),
        ),
    ];
    let text = lines.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let mut app =
        App::open(&dir, "20261125-000000-bbbbbb", f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let mut terminal = Terminal::new(TestBackend::new(160, 45)).unwrap();
    app.prepare(ratatui::layout::Rect::new(0, 0, 160, 45));
    terminal.draw(|f| draw(f, &app)).unwrap();
    let shown = format!("{}", terminal.backend());
    let strip = shown.lines().find(|l| l.contains("L1") && l.contains("L2")).unwrap_or_default();
    assert!(strip.contains("done 3s"), "T-001 took 3 s: {strip}");
    assert!(strip.contains("49s"), "T-002 at work for 49 s: {strip}");
}

/// `P` in a replay whose cursor has not reached the run's end (what the fleet's Enter opens)
/// asks what would be sent rather than saying the run has not ended: the end is a fact of the
/// log, not of the cursor.
#[test]
fn p_in_a_replay_before_its_end_reads_what_would_be_sent() {
    let mut app = App::open(&fixture(), SESSION, 1.0, Look::built_in(true)).unwrap();
    app.tick(10.0).unwrap();
    assert!(!app.at_end(), "the replay has just begun");
    let effects = app.act(Action::Ship).unwrap();
    assert!(effects.iter().any(|e| matches!(e, Effect::ShipPreview)), "{effects:?}");
    assert!(!app.notice.as_deref().unwrap_or("").contains("has not"), "{:?}", app.notice);
}

/// Quitting the console while its run holds a task for a decision says so — the run waits,
/// it is not "still going", and stopping it is at once — instead of the running run's words.
#[test]
fn the_quit_dialog_of_a_held_run_says_it_waits_for_a_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("20261125-000000-dddddd");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        serde_json::json!({"ts": "2026-11-25T00:00:00.000Z", "seq": 1, "type": "session_start",
            "payload": {"session_id": "20261125-000000-dddddd", "plan_tasks": [{"id": "T-001", "title": "a"}]}}),
        serde_json::json!({"ts": "2026-11-25T00:00:01.000Z", "seq": 2, "type": "task_state",
            "payload": {"task_id": "T-001", "attempt": 1, "from": "evaluating", "to": "needs_operator"}}),
        serde_json::json!({"ts": "2026-11-25T00:00:02.000Z", "seq": 3, "type": "operator_wait",
            "payload": {"task_id": "T-001", "reason": "the evaluator cannot be reached"}}),
    ];
    let text = lines.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let mut app =
        App::open(&dir, "20261125-000000-dddddd", f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    act(&mut app, Action::Quit);
    assert!(app.views.top::<QuitPrompt>().is_some());
    let shown = screen(&mut app, 120, 30);
    assert!(shown.contains("The run waits for your decision on T-001"), "{shown}");
    assert!(!shown.contains("still going"), "{shown}");
}

/// `u` rewinds: on a ◆ turn picked in the Worker pane (a turn whose worktree was kept), or on
/// a verdict picked in the Ledger; the editor names where to, and what is sent says it. A
/// rewind in the log marks the attempts it set aside in the Ledger.
#[test]
fn u_rewinds_to_a_kept_turn_or_a_judged_attempt_and_the_ledger_marks_what_it_set_aside() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    // T-002 judged twice, its second verdict not yet acted on; its first turn's worktree kept.
    let mut lines: Vec<String> =
        log.lines().take_while(|l| !l.contains("\"seq\":111,")).map(str::to_owned).collect();
    let tree = r#"{"ts":"2026-11-22T08:06:20Z","seq":200,"type":"turn_tree","payload":{"task_id":"T-002","iter":6,"attempt":2,"tree":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}}"#;
    lines.push(tree.to_owned());
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut app = App::open_live(&dir, HARROW_SESSION, Look::built_in(true)).unwrap();
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let shown = screen(&mut app, 140, 40);
    assert!(shown.contains("T-002 #6◆ write_file"), "the kept turn is marked:\n{shown}");
    assert!(!shown.contains("T-002 #7◆"), "a turn that was not kept is not:\n{shown}");

    let turn_six = lines.iter().position(|l| l.contains("\"seq\":89,")).unwrap();
    let turn_seven = lines.iter().position(|l| l.contains("\"seq\":97,")).unwrap();
    app.sel.focus = Pane::Worker;
    app.sel.picked = Some(turn_seven);
    act(&mut app, Action::Rewind);
    assert!(app.notice.as_deref().unwrap().contains("left no kept worktree"), "{:?}", app.notice);
    app.sel.picked = Some(turn_six);
    act(&mut app, Action::Rewind);
    let Some(editor) = app.views.top::<Editor>() else {
        panic!("u opens the editor: {:?}", app.notice)
    };
    assert!(editor.title.starts_with("Rewind T-002 to turn 6 of attempt 2"), "{}", editor.title);
    for c in "the \u{1b}[2Jsecond approach was wrong".chars() {
        press(&mut app, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    insta::assert_snapshot!("rewind_editor_100x30", screen(&mut app, 100, 30));
    press(&mut app, KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(app.notice.as_deref().unwrap().contains("sent rewind for T-002"), "{:?}", app.notice);
    let control = std::fs::read_to_string(dir.join("control.jsonl")).unwrap();
    let sent: serde_json::Value = serde_json::from_str(control.lines().last().unwrap()).unwrap();
    assert_eq!(
        (
            sent["op"].as_str(),
            sent["task"].as_str(),
            sent["to_attempt"].as_u64(),
            sent["to_turn"].as_u64()
        ),
        (Some("rewind"), Some("T-002"), Some(2), Some(6))
    );

    // The Ledger: a verdict row rewinds to the attempt it judged.
    app.sel.focus = Pane::Ledger;
    app.sel.plan_follow = false;
    app.sel.plan_selected = 1;
    screen(&mut app, 140, 40);
    app.sel.ledger_selected = Some(0);
    act(&mut app, Action::Rewind);
    let Some(editor) = app.views.top::<Editor>() else {
        panic!("u on a verdict: {:?}", app.notice)
    };
    assert!(
        editor.title.starts_with("Rewind T-002 to attempt 1, as it was judged"),
        "{}",
        editor.title
    );
    press(&mut app, KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));

    // The rewind as the run logs it: attempt 2 set aside, marked where it was judged.
    let rewound = r#"{"ts":"2026-11-22T08:06:30Z","seq":201,"type":"task_rewound","payload":{"task_id":"T-002","iter":0,"attempt":1,"to_attempt":1,"tree":"4b825dc642cb6eb9a060e54bf8d69288fbee4904","rewound":[2],"granted":1,"reason":"the \u001b[2Jsecond approach was wrong","continues_at":84}}"#;
    let log = dir.join("events.jsonl");
    let offset = std::fs::metadata(&log).unwrap().len();
    let number = lines.len() as u64 + 1;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, format!("{rewound}\n").as_bytes()).unwrap();
    let at = harrow::session::scan::LineAt { number, offset, len: rewound.len() as u32 };
    app.take_lines(vec![(at, rewound.as_bytes().to_vec())]).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app.sel.ledger_selected = None;
    let shown = screen(&mut app, 140, 40);
    assert!(shown.contains("2. accept [rewound]"), "{shown}");
    assert!(shown.contains("↶ rewound to attempt 1"), "{shown}");
    insta::assert_snapshot!("rewound_ledger_140x40", shown);
    // The Ledger zoomed, as a person reads it in a small terminal.
    app.sel.zoom = true;
    let zoomed = screen(&mut app, 80, 24);
    assert!(!zoomed.contains('\u{1b}'), "no escape reaches the screen");
    assert!(
        zoomed.contains("rewound to attempt 1, as it was judged: the \\u{1b}[2Jsecond"),
        "{zoomed}"
    );
    insta::assert_snapshot!("rewound_ledger_zoomed_80x24", zoomed);
}

/// The diff view reviews: the cursor moves over lines, `c` puts a comment on the line under it
/// (a removed line refuses one), the comments collect beside the diff, and `R` opens the
/// editor whose Tab turns the verdict; Enter sends the comments with it as the review.
#[test]
fn comments_made_in_the_diff_are_sent_as_the_operators_review() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    support::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    support::git(&repo, &["add", "-A"]);
    support::git(&repo, &["commit", "-qm", "base"]);
    let base = support::git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::write(repo.join("lib.rs"), "fn a() {}\nfn b() -> u8 { 1 }\nfn c() {}\n").unwrap();
    support::git(&repo, &["commit", "-qam", "attempt"]);
    let kept = support::git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let mut view = harrow::console::diff::between(
        std::slice::from_ref(&repo),
        &base,
        &kept,
        "T-002 attempt 2 as judged",
    )
    .unwrap();
    view.task = Some("T-002".into());

    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().take_while(|l| !l.contains("\"seq\":111,")).collect();
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut app = App::open_live(&dir, HARROW_SESSION, Look::built_in(true)).unwrap();
    app.run_active = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)));
    app.views.open(view);
    let k = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    let type_in = |app: &mut App, text: &str| {
        for c in text.chars() {
            press(app, k(KeyCode::Char(c)));
        }
    };
    screen(&mut app, 120, 30);
    // The lines: file header, hunk, ` fn a`, `-fn b`, `+fn b -> u8`, `+fn c`.
    for _ in 0..3 {
        press(&mut app, k(KeyCode::Char('j')));
    }
    press(&mut app, k(KeyCode::Char('c')));
    assert!(
        app.notice.as_deref().unwrap_or("").contains("a removed line is not in the work"),
        "{:?}",
        app.notice
    );
    press(&mut app, k(KeyCode::Char('j')));
    press(&mut app, k(KeyCode::Char('c')));
    assert!(app.views.top::<CommentBox>().is_some(), "c opens the comment box");
    type_in(&mut app, "why u8? \u{1b}[2J");
    insta::assert_snapshot!("diff_comment_box_120x30", screen(&mut app, 120, 30));
    press(&mut app, k(KeyCode::Enter));
    assert!(
        app.notice.as_deref().unwrap().contains("comment kept on lib.rs:2"),
        "{:?}",
        app.notice
    );
    press(&mut app, k(KeyCode::Char('j')));
    press(&mut app, k(KeyCode::Char('c')));
    type_in(&mut app, "c needs a test");
    press(&mut app, k(KeyCode::Enter));
    for (w, h) in [(120, 30), (70, 20)] {
        let shown = screen(&mut app, w, h);
        assert!(!shown.contains('\u{1b}'), "no escape reaches the screen");
        insta::assert_snapshot!(format!("diff_comments_{w}x{h}"), shown);
    }

    press(&mut app, k(KeyCode::Char('R')));
    let Some(editor) = app.views.top::<Editor>() else {
        panic!("R opens the review: {:?}", app.notice)
    };
    assert!(
        editor.title.starts_with("Review T-002: reject (acceptance_gap) · 2 comment(s)"),
        "{}",
        editor.title
    );
    press(&mut app, k(KeyCode::Tab));
    let Some(editor) = app.views.top::<Editor>() else { panic!("Tab keeps the editor") };
    assert!(editor.title.contains("reject (weak_test)"), "{}", editor.title);
    // Esc goes back to the diff with the comments, and R again starts from them.
    press(&mut app, k(KeyCode::Esc));
    let Some(view) = app.views.top::<DiffView>() else { panic!("Esc goes back to the diff") };
    assert_eq!(view.comments.len(), 2);
    press(&mut app, k(KeyCode::Char('R')));
    press(&mut app, k(KeyCode::Tab));
    type_in(&mut app, "two things");
    insta::assert_snapshot!("review_editor_100x30", screen(&mut app, 100, 30));
    press(&mut app, k(KeyCode::Enter));
    let control = std::fs::read_to_string(dir.join("control.jsonl")).unwrap();
    let sent: serde_json::Value = serde_json::from_str(control.lines().last().unwrap()).unwrap();
    assert_eq!(sent["op"], "review");
    assert_eq!(sent["task"], "T-002");
    assert_eq!(sent["category"], "weak_test");
    assert_eq!(sent["reason"], "two things");
    assert_eq!(sent["comments"][0]["path"], "lib.rs");
    assert_eq!(sent["comments"][0]["line"], 2);
    assert_eq!(sent["comments"][1]["comment"], "c needs a test");
}

/// An operator's review in the log: the Ledger shows it as a verdict of the operator's with
/// each comment at its line, and Enter on it opens the comments under the lines they are about.
#[test]
fn the_ledger_shows_an_operators_review_with_each_comment_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    let mut lines: Vec<String> =
        log.lines().take_while(|l| !l.contains("\"seq\":111,")).map(str::to_owned).collect();
    lines.push(r#"{"ts":"2026-11-22T08:06:40Z","seq":300,"type":"operator_review","payload":{"task_id":"T-002","iter":0,"attempt":2,"verdict":"reject","rejection_category":"weak_test","reason":"two things \u001b[2J","comments":[{"path":"src/lib.rs","line":12,"text":"    let mut counts = BTreeMap::new();","comment":"why a BTreeMap?"},{"path":"tests/char_frequencies.rs","line":3,"text":"fn whitespace_is_not_counted() {","comment":"add tabs"}],"source":"console"}}"#.to_owned());
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut app = App::open(&dir, HARROW_SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app.sel.focus = Pane::Ledger;
    app.sel.zoom = true;
    for (w, h) in [(100, 24), (60, 16)] {
        let shown = screen(&mut app, w, h);
        assert!(!shown.contains('\u{1b}'), "no escape reaches the screen");
        insta::assert_snapshot!(format!("review_ledger_{w}x{h}"), shown);
    }
    let shown = screen(&mut app, 100, 24);
    assert!(shown.contains("operator's review: reject (weak_test): two things"), "{shown}");
    assert!(shown.contains("src/lib.rs:12 why a BTreeMap?"), "{shown}");
    let rows = app.prepared.side.ledger.len();
    app.sel.ledger_selected = Some(rows - 3);
    act(&mut app, Action::Inspect);
    let text = screen(&mut app, 100, 30);
    assert!(app.views.top::<RowView>().is_some(), "{:?}", app.notice);
    assert!(
        text.contains("src/lib.rs:12") && text.contains(">     let mut counts = BTreeMap::new();"),
        "{text}"
    );
    // The inspector of the verdict the review came after shows it, each comment at its line.
    act(&mut app, Action::Close);
    app.sel.ledger_selected = Some(1);
    act(&mut app, Action::Inspect);
    assert!(app.views.top::<Inspector>().is_some(), "{:?}", app.notice);
    let inspected = screen(&mut app, 120, 60);
    assert!(
        inspected.contains("THE OPERATOR'S REVIEW of this attempt — reject (weak_test)"),
        "{inspected}"
    );
    assert!(
        inspected.contains("src/lib.rs:12") && inspected.contains("why a BTreeMap?"),
        "{inspected}"
    );
}

/// A window the run learned from a server's refusal (logged with the compaction it made)
/// becomes the context row's limit while the console watches.
#[test]
fn the_context_row_takes_the_window_a_compaction_learned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    std::fs::write(dir.join("events.jsonl"), &log).unwrap();
    let mut app = App::open_live(&dir, HARROW_SESSION, Look::built_in(true)).unwrap();
    let before = screen(&mut app, 140, 40);
    assert!(
        !before.lines().any(|l| l.contains("prompt tokens") && l.contains(" / ")),
        "no window yet"
    );
    let line = r#"{"ts":"2026-11-22T08:07:00Z","seq":500,"type":"context_compacted","payload":{"task_id":"T-003","iter":2,"attempt":1,"trigger":"server","tokens_before":5000,"tokens_after":1200,"window":4096,"dropped":6,"kept":["system prompt"]}}"#;
    let path = dir.join("events.jsonl");
    let offset = std::fs::metadata(&path).unwrap().len();
    let number = log.lines().count() as u64 + 1;
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
    let at = harrow::session::scan::LineAt { number, offset, len: line.len() as u32 };
    app.take_lines(vec![(at, line.as_bytes().to_vec())]).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let after = screen(&mut app, 140, 40);
    let row = after.lines().find(|l| l.contains("prompt tokens")).unwrap();
    assert!(row.contains("/ 4.1k"), "{row}");
    // A replay of the same log shows the same window, from the log itself: the console is a
    // fold of it, live or not.
    let mut replay = App::open(&dir, HARROW_SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    while !replay.at_end() {
        replay.tick(10_000.0).unwrap();
    }
    let replayed = screen(&mut replay, 140, 40);
    let row = replayed.lines().find(|l| l.contains("prompt tokens")).unwrap();
    assert!(row.contains("/ 4.1k"), "replay: {row}");
    assert!(
        after.contains("⇣ T-003 #2 context compacted: ~5000 → ~1200 tokens of 4096"),
        "{after}"
    );
    // A worker that fell back says so in the status line, and in the stream.
    let switch = r#"{"ts":"2026-11-22T08:07:01Z","seq":501,"type":"model_switch","payload":{"task_id":"T-003","iter":2,"attempt":1,"role":"worker","from_model":"scripted/worker","to_model":"scripted/fallback","to_base_url":"http://127.0.0.1:1/v1","why":"the worker endpoint answered 503"}}"#;
    let offset = std::fs::metadata(&path).unwrap().len();
    std::io::Write::write_all(&mut file, format!("{switch}\n").as_bytes()).unwrap();
    let at = harrow::session::scan::LineAt { number: number + 1, offset, len: switch.len() as u32 };
    app.take_lines(vec![(at, switch.as_bytes().to_vec())]).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let switched = screen(&mut app, 200, 40);
    assert!(switched.contains("% of window left"), "the Exchange of the task at work: {switched}");
    assert!(switched.lines().next().unwrap().contains("worker ⇄ scripted/fallback"), "{switched}");
    assert!(
        switched.lines().next().unwrap().contains("/4.1k"),
        "the status line has the window: {switched}"
    );
    assert!(
        switched.contains("⇄ T-003 #2 the worker now talks to scripted/fallback"),
        "{switched}"
    );
    assert!(switched.contains("Made by scripted/fallback"), "the Exchange says it: {switched}");
}

#[test]
fn an_agents_run_shows_its_turns_tools_and_case_in_the_panes_at_two_sizes() {
    let open = || {
        let fixture = sessions::agent_fixture();
        let mut app =
            App::open(&fixture, sessions::AGENT_SESSION, f64::INFINITY, Look::built_in(true))
                .unwrap();
        while !app.at_end() {
            app.tick(10_000.0).unwrap();
        }
        app
    };
    let mut app = open();
    let text = screen(&mut app, 120, 40);
    for shown in [
        "(ACP agent)",
        "edit Write f1.txt",
        "execute sh -c cat f1.txt",
        "wrote f1.txt: 1 lines",
        "Case: Wrote f1.txt.",
    ] {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    insta::assert_snapshot!("agent_end_120x40", text);
    let mut app = open();
    app.sel.focus = Pane::Worker;
    insta::assert_snapshot!("agent_worker_80x24", screen(&mut app, 80, 24));
}

#[test]
fn a_best_of_tasks_attempts_are_told_apart_in_the_worker_pane_and_weighed_in_a_row() {
    let fixture = sessions::best_of_fixture();
    let mut app =
        App::open(&fixture, sessions::BEST_OF_SESSION, f64::INFINITY, Look::built_in(true))
            .unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app.sel.focus = Pane::Worker;
    let text = screen(&mut app, 120, 40);
    for shown in
        ["T-001·1 #2", "T-001·2 #2", "T-001·3 #2", "⚖ T-001 best of 3: attempt 2 lands", "T-002 #1"]
    {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    assert!(!text.contains("T-002·"), "an ordinary task's rows keep their plain name: {text}");
    insta::assert_snapshot!("best_of_worker_120x40", text);
}

/// A held run's status line keeps what it waits on whole at 140 columns: the key list goes
/// first (the hint line has the keys), never "waiting on you" cut short; at 200 the keys fit.
#[test]
fn a_held_runs_status_line_keeps_what_it_waits_on_at_140_columns() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/judge/20261120-100000-aaaaaa/events.jsonl");
    let text = std::fs::read_to_string(source).unwrap();
    let held: String = text
        .split_inclusive('\n')
        .take_while(|l| !l.contains("\"from\":\"needs_operator\""))
        .collect();
    assert!(held.contains("\"to\":\"needs_operator\""));
    // The run waits for the person (`--wait-for-operator`).
    let held = held
        + r#"{"ts":"2026-11-20T10:00:15.500Z","seq":16,"type":"operator_wait","payload":{"task_id":"T-002"}}"#
        + "\n";
    let tmp = tempfile::tempdir().unwrap();
    let id = "20261120-100000-aaaaaa";
    let dir = tmp.path().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.jsonl"), held).unwrap();
    // The run is alive: its lock names this process.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let lock = serde_json::json!({"pid": std::process::id(), "host": host, "started_at": "2026-11-20T10:00:00.000Z"});
    std::fs::write(dir.join("lock"), lock.to_string()).unwrap();
    let mut app = App::open_live(&dir, id, Look::built_in(true)).unwrap();
    let status = |app: &mut App, width: u16| {
        let s = screen(app, width, 40);
        let line = s.lines().next().unwrap().to_owned();
        // How long it has waited depends on today's date: masked for the snapshot.
        let re = regex::Regex::new(r"waiting on you [0-9a-z ]+?(  |$)").unwrap();
        re.replace(&line, "waiting on you <time>$1").into_owned()
    };
    let wide = status(&mut app, 200);
    assert!(wide.contains("HELD: T-002 waits for you — a approve"), "{wide}");
    let narrow = status(&mut app, 140);
    assert!(narrow.contains("HELD: T-002 waits for you") && !narrow.contains('…'), "{narrow}");
    assert!(narrow.contains("waiting on you <time>  tasks"), "{narrow}");
    insta::assert_snapshot!("held_status_line_140", narrow);
}

/// Enter on a compaction's `⇣` row shows the message that replaced the dropped turns, as the
/// worker read it, and what was cut to fit: text from the worker's own commands, so an escape
/// in it never reaches the terminal.
#[test]
fn enter_on_a_compaction_shows_the_message_the_worker_read_in_place_of_its_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(HARROW_SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = std::fs::read_to_string(harrow_fixture().join("events.jsonl")).unwrap();
    let summary = "[Your conversation so far was compacted to fit the model's context window: 6 earlier messages were replaced by this summary.]\n\nWhat you did before:\n- bash \"cargo test \u{1b}[2J\"\n- read_file \"src/lib.rs\"";
    let compacted = serde_json::json!({"ts": "2026-11-22T08:07:00Z", "seq": 500, "type": "context_compacted",
        "payload": {"task_id": "T-003", "iter": 2, "attempt": 1, "trigger": "threshold",
            "tokens_before": 5000, "tokens_after": 1200, "window": 4096, "dropped": 6,
            "kept": ["system prompt", "task prompt", "summary of 6 messages", "last 2 turn(s)"],
            "summary": summary,
            "cut": ["the output of read_file \"data/big.txt\": 13300 → 4100 characters"]}});
    log.push_str(&compacted.to_string());
    log.push('\n');
    std::fs::write(dir.join("events.jsonl"), log).unwrap();
    let mut app = App::open(&dir, HARROW_SESSION, f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    app.sel.focus = Pane::Worker;
    act(&mut app, Action::Search);
    for c in "context compacted".chars() {
        press(&mut app, key(KeyCode::Char(c)));
    }
    press(&mut app, key(KeyCode::Enter));
    app.sel.zoom = true;
    let pane = screen(&mut app, 200, 30);
    assert!(pane.contains("1 long part(s) of the kept turns cut"), "{pane}");
    app.sel.zoom = false;
    act(&mut app, Action::Inspect);
    let Some(row) = app.views.top::<RowView>() else { panic!("no row view: {:?}", app.notice) };
    let text = row.lines.join("\n");
    assert!(text.contains("What the worker read in place of the dropped messages"), "{text}");
    assert!(text.contains("6 earlier messages were replaced") && text.contains("- read_file"));
    assert!(text.contains("data/big.txt\": 13300 → 4100 characters"), "{text}");
    for (w, h) in [(100, 30), (60, 20)] {
        let shown = screen(&mut app, w, h);
        assert!(!shown.contains('\u{1b}'), "no escape reaches the screen");
        insta::assert_snapshot!(format!("compaction_row_{w}x{h}"), shown);
    }
}
