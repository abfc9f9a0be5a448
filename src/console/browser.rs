//! The session browser (`harrow` with no arguments): every harrow and Tilth session with its
//! status, tasks, cost and age; `Enter` watches a running one or replays a finished one, and
//! quitting that console comes back here.

use crate::session::state::TaskState;
use crate::session::status::SessionStatus;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};

use super::theme::Theme;

/// One session in the list: the same row `harrow sessions` prints.
pub type Entry = crate::session::listing::Row;

/// The list and the selection: no terminal here, so it is testable.
#[derive(Debug)]
pub struct Browser {
    pub entries: Vec<Entry>,
    pub selected: usize,
    /// Where the sessions were looked for, to say so when there are none.
    pub searched: String,
    /// Why the last session picked could not be opened.
    pub notice: Option<String>,
}

/// What a key asked of the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Stay,
    Open(usize),
    Refresh,
    Quit,
}

/// `2026-11-22T04:28:43Z`, seen at `now`, as "3 min ago".
pub fn age(ts: Option<&str>, now: jiff::Timestamp) -> String {
    let Some(then) = ts.and_then(crate::session::timestamp::parse) else { return "-".into() };
    let secs = now.as_second() - then.as_second();
    match secs {
        s if s < 0 => "just now".into(),
        s if s < 60 => format!("{s} s ago"),
        s if s < 3_600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3_600),
        s => format!("{} d ago", s / 86_400),
    }
}

impl Browser {
    pub fn new(entries: Vec<Entry>, searched: String) -> Browser {
        Browser { entries, selected: 0, searched, notice: None }
    }

    /// Moves the selection or picks a session, by the browser's key table.
    pub fn key(&mut self, key: crossterm::event::KeyEvent) -> Choice {
        use super::keymap::{Action, Mode, action_for};
        let last = self.entries.len().saturating_sub(1);
        match action_for(Mode::Browser, &key) {
            Some(Action::Quit) => Choice::Quit,
            Some(Action::Down) => {
                self.selected = (self.selected + 1).min(last);
                Choice::Stay
            }
            Some(Action::Up) => {
                self.selected = self.selected.saturating_sub(1);
                Choice::Stay
            }
            Some(Action::Top) => {
                self.selected = 0;
                Choice::Stay
            }
            Some(Action::Bottom) => {
                self.selected = last;
                Choice::Stay
            }
            Some(Action::Refresh) => Choice::Refresh,
            Some(Action::Open) if !self.entries.is_empty() => Choice::Open(self.selected),
            _ => Choice::Stay,
        }
    }

    /// Takes a fresh list, keeping the selection on the same session when it is still there.
    pub fn refresh(&mut self, entries: Vec<Entry>) {
        let keep = self.entries.get(self.selected).map(|e| e.id.clone());
        self.entries = entries;
        self.selected = keep
            .and_then(|id| self.entries.iter().position(|e| e.id == id))
            .unwrap_or(0)
            .min(self.entries.len().saturating_sub(1));
    }

    pub fn draw(&self, frame: &mut Frame, theme: &Theme, now: jiff::Timestamp) {
        let area = frame.area();
        let [list, hints] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(format!(" Sessions ({}) ", self.entries.len()));
        if self.entries.is_empty() {
            let text = vec![
                Line::raw(format!("No sessions in {}.", self.searched)),
                Line::raw(""),
                Line::raw("Try `harrow demo`: it needs no key and no network."),
            ];
            frame.render_widget(Paragraph::new(text).block(block), list);
        } else {
            let rows = self.entries.iter().map(|e| {
                Row::new(vec![
                    e.id.clone(),
                    e.origin.clone(),
                    e.feature_cell(),
                    e.status.to_string(),
                    e.tasks_cell(),
                    if e.cost == 0.0 { "$0".into() } else { format!("${:.3}", e.cost) },
                    age(e.last_event_at.as_deref(), now),
                ])
                .style(theme.state(&match e.status {
                    SessionStatus::Done => TaskState::Done,
                    SessionStatus::Failed | SessionStatus::Crashed => TaskState::Failed,
                    SessionStatus::Paused => TaskState::NeedsOperator,
                    SessionStatus::Running => TaskState::Running,
                    SessionStatus::Empty => TaskState::Pending,
                }))
            });
            let table = Table::new(
                rows,
                [
                    Constraint::Length(24),
                    Constraint::Length(7),
                    Constraint::Length(16),
                    Constraint::Length(9),
                    Constraint::Length(6),
                    Constraint::Length(9),
                    Constraint::Min(10),
                ],
            )
            .header(Row::new(["ID", "FORMAT", "FEATURE", "STATUS", "TASKS", "COST", "LAST EVENT"]))
            .row_highlight_style(theme.selected())
            .block(block);
            let mut state = TableState::default().with_selected(Some(self.selected));
            frame.render_stateful_widget(table, list, &mut state);
        }
        let hint = match &self.notice {
            Some(notice) => Paragraph::new(notice.as_str()).style(theme.fg(theme.colors.notice)),
            None => Paragraph::new(super::keymap::hint_line(
                super::keymap::Mode::Browser,
                false,
                usize::from(hints.width),
            ))
            .style(theme.fg(theme.colors.muted)),
        };
        frame.render_widget(hint, hints);
    }
}

/// The browser as a screen of the console's loop: `Enter` opens a session's console over the
/// list, and the list is read again when that console closes.
pub struct BrowserScreen {
    list: Browser,
    load: Box<dyn Fn() -> Vec<Entry>>,
    look: super::theme::Look,
    /// Showing the keys instead of the list.
    help: bool,
    dirty: bool,
}

impl BrowserScreen {
    pub fn new(load: Box<dyn Fn() -> Vec<Entry>>, searched: String) -> BrowserScreen {
        let list = Browser::new(load(), searched);
        let look = super::theme::Look::from_user();
        BrowserScreen { list, load, look, help: false, dirty: true }
    }

    fn theme(&self) -> &Theme {
        &self.look.themes[self.look.theme.min(self.look.themes.len().saturating_sub(1))]
    }

    /// The console of the chosen session: watching it when a run holds it, else a replay.
    fn open(&mut self, i: usize) -> super::screen::Flow {
        use super::app::App;
        let Some(entry) = self.list.entries.get(i).cloned() else {
            return super::screen::Flow::Stay;
        };
        let opened = if entry.running {
            App::open_live(&entry.dir, &entry.id, self.look.clone())
        } else {
            App::open(&entry.dir, &entry.id, 8.0, self.look.clone())
        };
        match opened {
            Ok(app) => {
                self.list.notice = None;
                let follow = entry.running.then(|| entry.dir.clone());
                super::screen::Flow::Open(Box::new(super::session_screen::SessionScreen::new(
                    app, follow,
                )))
            }
            Err(e) => {
                self.list.notice = Some(format!("cannot open {}: {e}", entry.dir.display()));
                super::screen::Flow::Stay
            }
        }
    }

    fn draw_help(&self, frame: &mut Frame) {
        use super::keymap::Mode;
        let theme = self.theme();
        let mut lines = vec![Line::raw("")];
        for b in Mode::Browser.bindings() {
            lines.push(Line::from(vec![
                ratatui::text::Span::styled(
                    format!("{:>9}  ", b.label()),
                    theme.fg(theme.colors.focus),
                ),
                ratatui::text::Span::raw(b.help),
            ]));
        }
        let [area, hints] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(format!(" {} ", Mode::Browser.title()));
        frame.render_widget(Paragraph::new(lines).block(block), area);
        let hint = super::keymap::hint_line(Mode::Help, false, usize::from(hints.width));
        frame.render_widget(Paragraph::new(hint).style(theme.fg(theme.colors.muted)), hints);
    }
}

impl super::screen::Screen for BrowserScreen {
    fn due(&self, _now: std::time::Instant) -> bool {
        self.dirty
    }

    fn draw(&mut self, frame: &mut Frame) {
        if self.help {
            self.draw_help(frame);
        } else {
            self.list.draw(frame, self.theme(), jiff::Timestamp::now());
        }
    }

    fn drawn(&mut self, _now: std::time::Instant) {
        self.dirty = false;
    }

    fn wait(&self, _now: std::time::Instant) -> Option<std::time::Duration> {
        // The ages in the list move on: a frame a minute keeps "3 min ago" true.
        Some(std::time::Duration::from_secs(60))
    }

    fn on(&mut self, msg: super::screen::Msg, _cx: &super::screen::Cx) -> super::screen::Flow {
        use super::keymap::{Action, Mode, action_for};
        use super::screen::{Flow, Msg};
        use crossterm::event::{Event, KeyEventKind};
        self.dirty = true;
        match msg {
            Msg::Term(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                if self.help {
                    if matches!(action_for(Mode::Help, &key), Some(Action::Close)) {
                        self.help = false;
                    }
                    return Flow::Stay;
                }
                if matches!(action_for(Mode::Browser, &key), Some(Action::Help)) {
                    self.help = true;
                    return Flow::Stay;
                }
                match self.list.key(key) {
                    Choice::Stay => Flow::Stay,
                    Choice::Refresh => {
                        self.list.refresh((self.load)());
                        Flow::Stay
                    }
                    Choice::Quit => Flow::Close,
                    Choice::Open(i) => self.open(i),
                }
            }
            Msg::InputGone => Flow::Close,
            _ => Flow::Stay,
        }
    }

    fn turn(&mut self, _now: std::time::Instant, _cx: &super::screen::Cx) -> super::screen::Flow {
        super::screen::Flow::Stay
    }

    fn back(&mut self, _cx: &super::screen::Cx) {
        self.list.refresh((self.load)());
        self.dirty = true;
    }
}

impl std::fmt::Debug for BrowserScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserScreen").field("list", &self.list).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use std::path::PathBuf;

    fn entry(id: &str) -> Entry {
        Entry {
            id: id.into(),
            dir: PathBuf::from(id),
            origin: "harrow".into(),
            feature: Some("textstats".into()),
            prep: false,
            status: SessionStatus::Done,
            tasks_done: 1,
            tasks_total: 1,
            tokens: 0,
            cost: 0.0,
            started_at: None,
            last_event_at: None,
            unreadable_lines: 0,
            archived: false,
            running: false,
        }
    }

    #[test]
    fn keys_move_pick_and_a_refresh_keeps_the_selection() {
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        let mut b = Browser::new(vec![entry("a"), entry("b"), entry("c")], String::new());
        assert_eq!(b.key(key(KeyCode::Char('j'))), Choice::Stay);
        assert_eq!(b.key(key(KeyCode::Enter)), Choice::Open(1));
        b.refresh(vec![entry("new"), entry("a"), entry("b"), entry("c")]);
        assert_eq!(b.selected, 2, "still on b");
        assert_eq!(b.key(key(KeyCode::Char('G'))), Choice::Stay);
        assert_eq!(b.selected, 3);
        assert_eq!(b.key(key(KeyCode::Char('q'))), Choice::Quit);
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let now = jiff::Timestamp::from_second(1_000_000).unwrap_or_else(|e| panic!("{e}"));
        let at = |s: i64| jiff::Timestamp::from_second(1_000_000 - s).map(|t| t.to_string()).ok();
        assert_eq!(age(at(30).as_deref(), now), "30 s ago");
        assert_eq!(age(at(7_200).as_deref(), now), "2 h ago");
        assert_eq!(age(at(3 * 86_400).as_deref(), now), "3 d ago");
        assert_eq!(age(None, now), "-");
    }
}
