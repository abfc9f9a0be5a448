//! The console: a pure fold of events into view state ([`view`]), render functions ([`ui`]), a
//! keymap that is also the help overlay ([`keymap`]), and the loop that feeds them.
//!
//! Terminal input and timer ticks arrive on one channel; everything pending is applied before a
//! frame is drawn, frames are capped near 30 per second while playing, and when nothing plays
//! the loop blocks, so an idle console uses no CPU.

pub mod app;
pub mod describe;
pub mod evidence;
pub mod inspector;
pub mod keymap;
pub mod panes;
pub mod theme;
pub mod timeline;
pub mod ui;
pub mod view;

use crate::session::tail::{self, TailEvent};
use crate::session::writer::EVENTS_FILE;
use app::App;
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Frame interval while a replay plays.
const TICK: Duration = Duration::from_millis(33);

enum Msg {
    Term(TermEvent),
    InputGone,
    Tail(TailEvent),
}

/// Runs the console on the real terminal until the operator quits; with `follow`, the session
/// folder's log is tailed and new events appear as they are appended. The terminal is restored
/// on return, on error and on panic.
pub fn run(mut app: App, follow: Option<&Path>) -> color_eyre::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, follow);
    if app.mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    ratatui::restore();
    result
}

fn event_loop(
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
    std::thread::Builder::new().name("harrow-input".into()).spawn(move || {
        while let Ok(e) = event::read() {
            if tx.send(Msg::Term(e)).is_err() {
                return;
            }
        }
        let _ = tx.send(Msg::InputGone);
    })?;
    let mut dirty = true;
    let mut mouse = false;
    let mut last_tick = Instant::now();
    while !app.quit {
        if dirty {
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
        let first = if app.clock.playing {
            match rx.recv_timeout(TICK.saturating_sub(last_tick.elapsed())) {
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
        if app.clock.playing && last_tick.elapsed() >= TICK {
            let ms = last_tick.elapsed().as_secs_f64() * 1000.0;
            last_tick = Instant::now();
            dirty |= app.tick(ms)?;
        } else if !app.clock.playing {
            last_tick = Instant::now();
        }
    }
    Ok(())
}
