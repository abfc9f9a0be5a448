//! The console: a pure fold of events into view state ([`view`]), render functions ([`ui`]), a
//! keymap that is also the help overlay ([`keymap`]), and the loop that feeds them.
//!
//! Terminal input, tailed lines and timer ticks arrive on one channel; everything pending is
//! applied before a frame is drawn, frames are at most about 60 a second however fast lines
//! arrive (a key press is drawn at once), nothing is drawn when nothing changed, and when
//! nothing plays the loop blocks, so an idle console uses no CPU.

pub mod app;
pub mod browser;
pub mod describe;
pub mod evidence;
pub mod inspector;
pub mod keymap;
pub mod panes;
pub mod theme;
pub mod timeline;
pub mod ui;
pub mod view;

use crate::session::dir::EVENTS_FILE;
use crate::session::tail::{self, TailEvent};
use app::App;
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The shortest time between two frames (about 60 a second), and the replay clock's tick:
/// whatever arrives in between is applied, then drawn once.
const FRAME: Duration = Duration::from_millis(16);

/// While a live run waits on something, the status line counts the seconds: one frame a second.
const WAIT_TICK: Duration = Duration::from_secs(1);

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
    let (themes, _) = theme::load_all(theme::user_dir().as_deref());
    let theme = &themes[theme::initial(&themes)];
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
            App::open_live(&entry.dir, &entry.id)
        } else {
            App::open(&entry.dir, &entry.id, 8.0)
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

fn event_loop_inner(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    follow: Option<&Path>,
) -> color_eyre::Result<()> {
    let (tx, rx) = mpsc::channel();
    let _tailer = follow.map(|dir| {
        let (offset, line) = app.tail_start();
        let tx = tx.clone();
        tail::follow(&dir.join(EVENTS_FILE), offset, line, move |ev| {
            let _ = tx.send(Msg::Tail(ev));
        })
    });
    let _input = Input::start(tx)?;
    let mut dirty = true;
    let mut mouse = false;
    let mut last_tick = Instant::now();
    let mut last_draw = Instant::now().checked_sub(FRAME).unwrap_or_else(Instant::now);
    // Set by the operator's own input: that frame is drawn at once, not held to the cap.
    let mut urgent = false;
    while !app.quit {
        if dirty && (urgent || last_draw.elapsed() >= FRAME) {
            urgent = false;
            last_draw = Instant::now();
            if app.mouse != mouse {
                mouse = app.mouse;
                if mouse {
                    crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture)?;
                } else {
                    crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture)?;
                }
            }
            let size = terminal.size()?;
            app.prepare(size.into());
            terminal.draw(|f| ui::draw(f, app))?;
            dirty = false;
        }
        let counting = app.prepared.run_alive && app.at_end() && app.view.waiting().is_some();
        let wait = if dirty {
            Some(FRAME.saturating_sub(last_draw.elapsed()))
        } else if app.clock.playing {
            Some(FRAME.saturating_sub(last_tick.elapsed()))
        } else if counting {
            Some(WAIT_TICK.saturating_sub(last_draw.elapsed()))
        } else {
            None
        };
        let first = if let Some(wait) = wait {
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => break,
            }
        };
        for msg in first.into_iter().chain(rx.try_iter()) {
            urgent |= matches!(msg, Msg::Term(TermEvent::Key(_) | TermEvent::Mouse(_)));
            match msg {
                Msg::Term(TermEvent::Key(key))
                    if key.kind == KeyEventKind::Press
                        && matches!(app.overlay, app::Overlay::Editor(_)) =>
                {
                    app.edit(key)?;
                    dirty = true;
                }
                Msg::Term(TermEvent::Key(key))
                    if key.kind == KeyEventKind::Press
                        && matches!(app.overlay, app::Overlay::Search(_)) =>
                {
                    app.search_key(key)?;
                    dirty = true;
                }
                Msg::Term(TermEvent::Mouse(m)) => {
                    let size = terminal.size()?;
                    dirty |= app.mouse_event(m, size.into())?;
                }
                Msg::Term(TermEvent::Key(key))
                    if key.kind == KeyEventKind::Press
                        && matches!(app.overlay, app::Overlay::QuitPrompt) =>
                {
                    let answer = match key.code {
                        KeyCode::Char('y') => Some(Some(true)),
                        KeyCode::Char('n') => Some(Some(false)),
                        KeyCode::Esc => Some(None),
                        _ => None,
                    };
                    if let Some(answer) = answer {
                        app.answer_quit(answer)?;
                        dirty = true;
                    }
                }
                Msg::Term(TermEvent::Key(key)) if key.kind == KeyEventKind::Press => {
                    if let Some(action) = keymap::action_for(&key) {
                        dirty |= app.act(action)?;
                    }
                }
                Msg::Term(TermEvent::Resize(..)) => dirty = true,
                Msg::Tail(TailEvent::Lines(lines)) => dirty |= app.take_lines(lines)?,
                Msg::Tail(TailEvent::Restarted { .. }) => {
                    if let Some(dir) = follow {
                        app.reload(dir)?;
                        dirty = true;
                    }
                }
                Msg::Tail(TailEvent::Polling { reason } | TailEvent::Error(reason)) => {
                    app.notice = Some(reason);
                    dirty = true;
                }
                Msg::Term(_) => {}
                Msg::InputGone => app.quit = true,
            }
        }
        if app.clock.playing && last_tick.elapsed() >= FRAME {
            let ms = last_tick.elapsed().as_secs_f64() * 1000.0;
            last_tick = Instant::now();
            dirty |= app.tick(ms)?;
        } else if !app.clock.playing {
            last_tick = Instant::now();
        }
        if counting && last_draw.elapsed() >= WAIT_TICK {
            dirty = true;
        }
    }
    Ok(())
}
