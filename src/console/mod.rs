//! The console: a pure fold of events into view state ([`view`], moved by the [`player`]),
//! frames prepared from it ([`frame`]) and drawn by render functions ([`ui`]) in areas the
//! [`layout`] decides; keys go through one table per mode ([`keymap`]) to the panes or the
//! open overlay ([`modal`]), and what only the loop can do comes back as effects.
//!
//! Terminal input, tailed lines and timer ticks arrive on one channel and are applied before
//! a frame is drawn, on the [`schedule`].

pub mod app;
pub mod attempt;
pub mod browser;
pub mod decide;
pub mod describe;
pub mod diff;
pub mod effect;
pub mod evidence;
pub mod frame;
pub mod inspector;
pub mod interview;
pub mod keymap;
pub mod layout;
pub mod modal;
pub mod navigate;
pub mod panes;
pub mod player;
pub mod row;
pub mod schedule;
pub mod search;
pub mod status;
pub mod theme;
pub mod timeline;
pub mod ui;
pub mod view;

use crate::session::control;
use crate::session::tail::{self, TailEvent};
use app::{App, Effect};
use crossterm::event::{self, Event as TermEvent, KeyEventKind};
use schedule::Schedule;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

enum Msg {
    Term(TermEvent),
    InputGone,
    Tail(TailEvent),
}

/// How often the input thread looks up from waiting to see whether it should stop.
const INPUT_POLL: Duration = Duration::from_millis(200);

/// The thread that reads the terminal and feeds its events into a channel. It stops (and is
/// joined) when dropped, so a screen that follows gets every key — none is left with a reader
/// that is gone.
struct Input {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Input {
    fn start(tx: mpsc::Sender<Msg>) -> std::io::Result<Input> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name("harrow-input".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match event::poll(INPUT_POLL) {
                    Ok(false) => {}
                    Ok(true) => {
                        let Ok(e) = event::read() else { break };
                        if tx.send(Msg::Term(e)).is_err() {
                            break;
                        }
                    }
                    Err(_) => {
                        let _ = tx.send(Msg::InputGone);
                        break;
                    }
                }
            }
        })?;
        Ok(Input { stop, thread: Some(thread) })
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs the console on the real terminal until the operator quits; with `follow`, the session
/// folder's log is tailed and new events appear as they are appended. The terminal is restored
/// on return, on error and on panic.
pub fn run(mut app: App, follow: Option<&Path>) -> color_eyre::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, follow);
    ratatui::restore();
    result
}

/// The session browser: lists what `load` finds, opens the chosen session (watching it when a
/// run holds it, replaying it otherwise) and comes back to the list when that console quits.
pub fn browse(load: impl Fn() -> Vec<browser::Entry>, searched: String) -> color_eyre::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = browse_loop(&mut terminal, &load, searched);
    ratatui::restore();
    result
}

fn browse_loop(
    terminal: &mut ratatui::DefaultTerminal,
    load: &impl Fn() -> Vec<browser::Entry>,
    searched: String,
) -> color_eyre::Result<()> {
    let look = theme::Look::from_user();
    let theme = &look.themes[look.theme.min(look.themes.len().saturating_sub(1))];
    let mut list = browser::Browser::new(load(), searched);
    loop {
        let chosen = {
            let (tx, rx) = mpsc::channel();
            let _input = Input::start(tx)?;
            loop {
                let now = jiff::Timestamp::now();
                terminal.draw(|f| list.draw(f, theme, now))?;
                let choice = match rx.recv() {
                    Ok(Msg::Term(TermEvent::Key(key))) if key.kind == KeyEventKind::Press => {
                        list.key(key)
                    }
                    Ok(Msg::InputGone) | Err(_) => browser::Choice::Quit,
                    Ok(_) => browser::Choice::Stay,
                };
                match choice {
                    browser::Choice::Stay => {}
                    browser::Choice::Refresh => list.refresh(load()),
                    browser::Choice::Quit => break None,
                    browser::Choice::Open(i) => break list.entries.get(i).cloned(),
                }
            }
        };
        let Some(entry) = chosen else { return Ok(()) };
        let opened = if entry.running {
            App::open_live(&entry.dir, &entry.id, look.clone())
        } else {
            App::open(&entry.dir, &entry.id, 8.0, look.clone())
        };
        let mut app = match opened {
            Ok(app) => app,
            Err(e) => {
                list.notice = Some(format!("cannot open {}: {e}", entry.dir.display()));
                continue;
            }
        };
        list.notice = None;
        terminal.clear()?;
        event_loop(terminal, &mut app, entry.running.then_some(entry.dir.as_path()))?;
        terminal.clear()?;
        list.refresh(load());
    }
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    follow: Option<&Path>,
) -> color_eyre::Result<()> {
    let result = event_loop_inner(terminal, app, follow);
    if app.mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    result
}

/// Carries out what the app asked for and tells it how that went: a failure is a notice on
/// screen, never the end of the console.
pub fn perform(app: &mut App, effects: Vec<Effect>) {
    for effect in effects {
        match effect {
            Effect::Send(cmd) => {
                let result = control::send(app.dir.root(), &cmd);
                app.sent(&cmd, result);
            }
            Effect::Mouse(on) => {
                let result = if on {
                    crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture)
                } else {
                    crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture)
                };
                if let Err(e) = result {
                    app.notice = Some(format!("the terminal refused the mouse setting: {e}"));
                }
            }
            Effect::Notify(text) => {
                let mut out = std::io::stdout();
                let _ = out.write_all(app.notification(&text).as_bytes());
                let _ = out.flush();
            }
            Effect::Resume => {
                let result = start_resume(app.dir.root(), &app.id);
                app.resumed(result);
            }
            Effect::Copy(text) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                let mut out = std::io::stdout();
                let _ = write!(out, "\x1b]52;c;{encoded}\x07");
                let _ = out.flush();
            }
            Effect::Export => {
                let path = app.dir.root().join("export.md");
                let result =
                    crate::export::render(app.dir.root(), &app.id, crate::export::Format::Md)
                        .and_then(|text| std::fs::write(&path, text))
                        .map(|()| path);
                app.exported(result);
            }
        }
    }
}

/// Starts `harrow resume ID --headless` in the background, its output kept in the session
/// folder; the console goes on watching the log it appends to.
fn start_resume(dir: &Path, id: &str) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let log = std::fs::File::create(dir.join("resume.log"))?;
    let mut resume = std::process::Command::new(exe);
    resume
        .args(["resume", id, "--headless", "--wait-for-operator"])
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let keys = crate::keys::hand_to(&mut resume)?;
    let mut child = resume.spawn()?;
    drop(keys);
    std::thread::Builder::new().name("harrow-resumed".into()).spawn(move || child.wait())?;
    Ok(())
}

/// The result of reading the session for the screen. A failure — the log truncated or removed
/// under a replay, a file gone — becomes a notice on the screen and stops playback; the
/// console stays up with what it has shown.
fn kept_up<T>(result: std::io::Result<T>, app: &mut App) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            app.player.clock.playing = false;
            app.notice = Some(format!(
                "the session's log could not be read ({e}); it may have been truncated or removed — showing what was read"
            ));
            None
        }
    }
}

fn event_loop_inner(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    follow: Option<&Path>,
) -> color_eyre::Result<()> {
    let (tx, rx) = mpsc::channel();
    let _tailer = follow.map(|dir| {
        let (offset, line) = app.tail_start();
        let tx = tx.clone();
        tail::follow(&crate::session::dir::SessionDir::new(dir).events(), offset, line, move |ev| {
            let _ = tx.send(Msg::Tail(ev));
        })
    });
    let _input = Input::start(tx)?;
    let opened = app.take_effects();
    perform(app, opened);
    let mut schedule = Schedule::new(Instant::now());
    // When the log was last checked for shrinking: a stat, kept off the frequent iterations of
    // playback (idle, the loop only turns on input, and every turn checks).
    let mut shrink_checked = Instant::now();
    while !app.quit {
        let now = Instant::now();
        if schedule.should_draw(now) {
            let size = terminal.size()?;
            app.prepare(size.into());
            terminal.draw(|f| ui::draw(f, app))?;
            schedule.drawn(now);
        }
        let watching = app.watching_a_run();
        let wait =
            schedule.wait(Instant::now(), app.player.clock.playing, app.counting(), watching);
        let first = match wait {
            Some(wait) => match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => break,
            },
        };
        for msg in first.into_iter().chain(rx.try_iter()) {
            match msg {
                Msg::Term(TermEvent::Key(key)) if key.kind == KeyEventKind::Press => {
                    schedule.pressed();
                    let effects = kept_up(app.key(key), app).unwrap_or_default();
                    perform(app, effects);
                }
                Msg::Term(TermEvent::Mouse(m)) => {
                    let size = terminal.size()?;
                    if kept_up(app.mouse_event(m, size.into()), app).unwrap_or(true) {
                        schedule.pressed();
                    }
                }
                Msg::Term(TermEvent::Resize(..)) => schedule.changed(),
                Msg::Tail(TailEvent::Lines(lines)) => {
                    if kept_up(app.take_lines(lines), app).unwrap_or(true) {
                        schedule.changed();
                    }
                    let effects = app.take_effects();
                    perform(app, effects);
                }
                Msg::Tail(TailEvent::Restarted { .. }) => {
                    kept_up(app.reload(), app);
                    schedule.changed();
                }
                Msg::Tail(TailEvent::Polling { reason } | TailEvent::Error(reason)) => {
                    app.notice = Some(reason);
                    schedule.changed();
                }
                Msg::Term(_) => {}
                Msg::InputGone => app.quit = true,
            }
        }
        let now = Instant::now();
        if let Some(ms) = schedule.tick(now, app.player.clock.playing)
            && kept_up(app.tick(ms), app).unwrap_or(true)
        {
            schedule.changed();
        }
        schedule.count(now, app.counting());
        // A log cut back or removed under the console is said on screen, not discovered
        // later as a stale picture (a live log that is replaced is reloaded by the tailer).
        if !app.player.clock.playing || shrink_checked.elapsed() >= Duration::from_millis(250) {
            shrink_checked = Instant::now();
            if let Some(why) = app.player.log_shrank() {
                let notice = format!(
                    "{why}; showing what was read — reopen the session to see it as it is now"
                );
                if app.notice.as_deref() != Some(notice.as_str()) {
                    app.player.clock.playing = false;
                    app.notice = Some(notice);
                    schedule.changed();
                }
            }
        }
        if watching && app.liveness_changed() {
            schedule.changed();
        }
    }
    Ok(())
}
