//! The fleet (`harrow` with no arguments, `harrow sessions --live`): every run under the
//! session folders in one live list, what needs a person first, with a preview of the selected
//! one; decisions, pause, notes and resume sent to a run without attaching; `Enter` attaches
//! and quitting that console comes back here.

use crate::session::control::{Command, Op};
use crate::session::fleet::{FleetRow, RunState};
use crate::session::state::TaskState;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState, Wrap};

use super::jobs::Job;
use super::theme::Theme;

/// One run in the list.
pub type Entry = FleetRow;

/// Which runs the list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    All,
    /// Held, crashed or failed.
    Waiting,
    /// Running, paused or silent.
    Live,
    Stopped,
    Done,
}

impl Show {
    fn keeps(self, state: RunState) -> bool {
        match self {
            Show::All => true,
            Show::Waiting => state.needs_person(),
            Show::Live => matches!(state, RunState::Running | RunState::Paused | RunState::Silent),
            Show::Stopped => state == RunState::Stopped,
            Show::Done => matches!(state, RunState::Done | RunState::Empty),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Show::All => "",
            Show::Waiting => ", needing a person",
            Show::Live => ", running",
            Show::Stopped => ", stopped",
            Show::Done => ", finished",
        }
    }
}

/// The list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Held, crashed, failed, then running, then the rest; newest first within each.
    Attention,
    Newest,
    /// The latest event first.
    Active,
}

/// What a line typed at the bottom is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    Filter,
    /// A decision on the task of the run in `dir`, needing a reason (guidance for a reject).
    Decide {
        op: Op,
        task: String,
        dir: std::path::PathBuf,
    },
    Note {
        task: Option<String>,
        dir: std::path::PathBuf,
    },
    /// A key that was refused, and why: what is typed after it lands here and is dropped,
    /// never read as keys (words meant for a decision must not act on the list).
    Refused(String),
}

/// A line being typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub purpose: Purpose,
    pub text: String,
}

/// The list and the selection: no terminal here, so it is testable.
#[derive(Debug)]
pub struct Browser {
    pub entries: Vec<Entry>,
    /// The selected run, by id, so it stays selected as rows move.
    pub selected: Option<String>,
    /// Where the sessions were looked for, to say so when there are none.
    pub searched: String,
    pub notice: Option<String>,
    pub show: Show,
    pub sort: Sort,
    pub filter: String,
    pub prompt: Option<Prompt>,
    /// A run `R` offered to resume: `y` does it, any other key does not.
    pub offer: Option<String>,
    /// A run whose resume refused the settings its folder records: `Y` resumes it trusting
    /// them, any other key does not.
    pub trust_offer: Option<String>,
    /// Whether the first look at every session is done.
    pub loaded: bool,
}

/// What a key asked of the browser.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    Stay,
    Open(Box<Entry>),
    /// Write this command to the run in that folder.
    Send(std::path::PathBuf, Command),
    /// Resume a run; `true`: trusting the settings it recorded (`--trust-recorded`).
    Resume(Box<Entry>, bool),
    Export(Box<Entry>),
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

fn command(op: Op, task: Option<String>, reason: Option<String>, text: Option<String>) -> Command {
    Command { op, task, reason, text, ts: crate::session::timestamp::now(), source: "fleet".into() }
}

impl Browser {
    pub fn new(entries: Vec<Entry>, searched: String) -> Browser {
        let mut b = Browser {
            entries: Vec::new(),
            selected: None,
            searched,
            notice: None,
            show: Show::All,
            sort: Sort::Attention,
            filter: String::new(),
            prompt: None,
            offer: None,
            trust_offer: None,
            loaded: true,
        };
        b.refresh(entries);
        b
    }

    /// The rows shown, in the list's order.
    pub fn visible(&self) -> Vec<&Entry> {
        let word = self.filter.to_lowercase();
        let mut rows: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| self.show.keeps(e.state))
            .filter(|e| {
                word.is_empty()
                    || [
                        Some(&e.id),
                        e.feature.as_ref(),
                        e.repo.as_ref(),
                        e.host.as_ref(),
                        e.held_task.as_ref(),
                    ]
                    .into_iter()
                    .flatten()
                    .any(|s| s.to_lowercase().contains(&word))
            })
            .collect();
        match self.sort {
            Sort::Attention => {
                rows.sort_by(|a, b| a.state.cmp(&b.state).then_with(|| b.id.cmp(&a.id)));
            }
            Sort::Newest => rows.sort_by(|a, b| b.id.cmp(&a.id)),
            Sort::Active => rows.sort_by(|a, b| b.last_event_at.cmp(&a.last_event_at)),
        }
        rows
    }

    /// The selected row's place among the visible ones.
    pub fn cursor(&self) -> usize {
        self.cursor_in(&self.visible())
    }

    /// The selected row's place among `rows` (the visible ones, sorted once by the caller).
    fn cursor_in(&self, rows: &[&Entry]) -> usize {
        self.selected.as_ref().and_then(|id| rows.iter().position(|e| &e.id == id)).unwrap_or(0)
    }

    pub fn current(&self) -> Option<&Entry> {
        let rows = self.visible();
        rows.get(self.cursor_in(&rows)).copied()
    }

    fn select(&mut self, at: usize) {
        let id = self.visible().get(at).map(|e| e.id.clone());
        if id.is_some() {
            self.selected = id;
        }
    }

    /// Takes the latest rows, keeping the selection on the same run.
    pub fn refresh(&mut self, entries: Vec<Entry>) {
        self.entries = entries;
        if self.current().is_none_or(|e| Some(&e.id) != self.selected.as_ref()) {
            let at = self.cursor();
            self.select(at);
        }
    }

    /// Says how a resume the fleet started went; one that refused the settings the session
    /// records is offered again, trusting them, on `Y`.
    pub fn resumed(&mut self, job: Job) {
        let Job::Resumed { id, outcome } = job else { return };
        match outcome {
            Ok(()) => self.notice = Some(format!("{id} resumes in the background")),
            Err(why) => {
                if why.contains(crate::session::TRUST_RECORDED) {
                    self.trust_offer = Some(id.clone());
                }
                self.notice = Some(format!("{id} did not resume: {why}"));
            }
        }
    }

    /// Handles a key, by the fleet's key table (or the line being typed).
    pub fn key(&mut self, key: crossterm::event::KeyEvent) -> Choice {
        use super::keymap::{Action, Mode, action_for};
        if self.prompt.is_some() {
            return self.type_key(key);
        }
        if let Some(id) = self.offer.take() {
            let yes = key.code == crossterm::event::KeyCode::Char('y');
            return match self.entries.iter().find(|e| e.id == id) {
                Some(e) if yes => Choice::Resume(Box::new(e.clone()), false),
                _ => Choice::Stay,
            };
        }
        if let Some(id) = self.trust_offer.take() {
            let yes = key.code == crossterm::event::KeyCode::Char('Y');
            return match self.entries.iter().find(|e| e.id == id) {
                Some(e) if yes => Choice::Resume(Box::new(e.clone()), true),
                _ => Choice::Stay,
            };
        }
        let rows = self.visible().len();
        let at = self.cursor();
        match action_for(Mode::Browser, &key) {
            Some(Action::Quit) => return Choice::Quit,
            Some(Action::Cancel) if !self.filter.is_empty() => {
                self.filter.clear();
                self.notice = Some("filter cleared".into());
            }
            Some(Action::Cancel) => self.notice = Some("q quits".into()),
            Some(Action::Down) => self.select((at + 1).min(rows.saturating_sub(1))),
            Some(Action::Up) => self.select(at.saturating_sub(1)),
            Some(Action::Top) => self.select(0),
            Some(Action::Bottom) => self.select(rows.saturating_sub(1)),
            Some(Action::NextWaiting) => self.next_waiting(),
            Some(Action::Show(n)) => {
                self.show = match n {
                    1 => Show::Waiting,
                    2 => Show::Live,
                    3 => Show::Stopped,
                    4 => Show::Done,
                    _ => Show::All,
                };
                self.select(0);
            }
            Some(Action::Sort) => {
                self.sort = match self.sort {
                    Sort::Attention => Sort::Newest,
                    Sort::Newest => Sort::Active,
                    Sort::Active => Sort::Attention,
                };
            }
            Some(Action::Filter) => {
                self.prompt = Some(Prompt { purpose: Purpose::Filter, text: self.filter.clone() });
            }
            Some(Action::Open) => {
                if let Some(e) = self.current() {
                    return Choice::Open(Box::new(e.clone()));
                }
            }
            Some(Action::ResumeRun) => match self.current() {
                Some(e) if matches!(e.state, RunState::Running | RunState::Paused) => {
                    self.notice = Some(format!("{} is running", e.id));
                }
                Some(e) => self.offer = Some(e.id.clone()),
                None => {}
            },
            Some(Action::Export) => {
                return self.on_current(|e| Ok(Choice::Export(Box::new(e.clone()))));
            }
            Some(Action::Pause) => {
                return self.on_current(|e| match e.state {
                    RunState::Paused => {
                        Ok(Choice::Send(e.dir.clone(), command(Op::Resume, None, None, None)))
                    }
                    RunState::Running | RunState::Held | RunState::Silent => {
                        Ok(Choice::Send(e.dir.clone(), command(Op::Pause, None, None, None)))
                    }
                    _ => Err(format!("{} is not running; R resumes it", e.id)),
                });
            }
            Some(Action::Note) => {
                let target = self.current().map(|e| {
                    let task =
                        e.held_task.clone().or_else(|| e.at_work.first().map(|w| w.task.clone()));
                    (task, e.dir.clone())
                });
                if let Some((task, dir)) = target {
                    self.prompt =
                        Some(Prompt { purpose: Purpose::Note { task, dir }, text: String::new() });
                }
            }
            Some(
                a @ (Action::Approve
                | Action::Reject
                | Action::ForceAccept
                | Action::Skip
                | Action::FailTask),
            ) => {
                let op = match a {
                    Action::Approve => Op::Approve,
                    Action::Reject => Op::Reject,
                    Action::ForceAccept => Op::ForceAccept,
                    Action::Skip => Op::Skip,
                    _ => Op::Fail,
                };
                self.decide(op);
            }
            _ => {}
        }
        Choice::Stay
    }

    fn on_current(&mut self, f: impl FnOnce(&Entry) -> Result<Choice, String>) -> Choice {
        let Some(e) = self.current() else { return Choice::Stay };
        match f(e) {
            Ok(c) => c,
            Err(why) => {
                self.notice = Some(why);
                Choice::Stay
            }
        }
    }

    /// Asks for the reason of a decision on the selected run's held task (a fail may also be
    /// of the task at work).
    fn decide(&mut self, op: Op) {
        let Some(e) = self.current() else { return };
        let task = match (&e.held_task, op) {
            (Some(t), _) => Some(t.clone()),
            (None, Op::Fail) => e.at_work.first().map(|w| w.task.clone()),
            (None, _) => None,
        };
        let Some(task) = task else {
            let why =
                format!("{} refused: {} has no task waiting for a decision", op.as_str(), e.id);
            self.prompt = Some(Prompt { purpose: Purpose::Refused(why), text: String::new() });
            return;
        };
        let dir = e.dir.clone();
        self.prompt =
            Some(Prompt { purpose: Purpose::Decide { op, task, dir }, text: String::new() });
    }

    fn next_waiting(&mut self) {
        let rows = self.visible();
        let at = self.cursor();
        let n = rows.len();
        let next = (1..=n).map(|i| (at + i) % n.max(1)).find(|i| rows[*i].state.needs_person());
        match next {
            Some(i) => self.select(i),
            None => self.notice = Some("no run needs a person".into()),
        }
    }

    /// A key while a line is typed: Enter sends it, Esc drops it.
    fn type_key(&mut self, key: crossterm::event::KeyEvent) -> Choice {
        use crossterm::event::{KeyCode, KeyModifiers};
        let Some(prompt) = self.prompt.as_mut() else { return Choice::Stay };
        match key.code {
            KeyCode::Esc => {
                if prompt.purpose == Purpose::Filter {
                    self.filter.clear();
                }
                self.prompt = None;
            }
            KeyCode::Backspace => {
                prompt.text.pop();
            }
            KeyCode::Char(c)
                if !key.modifiers.contains(KeyModifiers::CONTROL) && !c.is_control() =>
            {
                prompt.text.push(c);
            }
            KeyCode::Enter => return self.submit(),
            _ => {}
        }
        if let Some(p) = &self.prompt
            && p.purpose == Purpose::Filter
        {
            self.filter = p.text.clone();
            self.select(0);
        }
        Choice::Stay
    }

    fn submit(&mut self) -> Choice {
        let Some(prompt) = self.prompt.take() else { return Choice::Stay };
        let text = prompt.text.trim().to_owned();
        match prompt.purpose {
            Purpose::Filter => Choice::Stay,
            Purpose::Refused(why) => {
                self.notice = Some(format!("{why}; nothing was sent"));
                Choice::Stay
            }
            Purpose::Decide { .. } | Purpose::Note { .. } if text.is_empty() => {
                self.notice = Some("nothing was sent: it needs a few words".into());
                Choice::Stay
            }
            Purpose::Decide { op, task, dir } => {
                let guidance = (op == Op::Reject).then(|| text.clone());
                Choice::Send(dir, command(op, Some(task), Some(text), guidance))
            }
            Purpose::Note { task, dir } => {
                Choice::Send(dir, command(Op::Note, task, None, Some(text)))
            }
        }
    }

    /// The list's title: how many runs, and how many wait for a person.
    pub fn title(&self, shown: usize) -> String {
        use std::fmt::Write as _;
        let waiting = self.entries.iter().filter(|e| e.state.needs_person()).count();
        let runs = if shown == 1 { "run" } else { "runs" };
        let mut t = format!(" Fleet: {shown} {runs}{}", self.show.name());
        if !self.filter.is_empty() {
            let _ = write!(t, " matching \"{}\"", crate::printable::line(&self.filter));
        }
        if waiting > 0 {
            let _ = write!(t, " — {waiting} waiting");
        }
        if !self.loaded {
            t.push_str(" (reading…)");
        }
        t.push(' ');
        t
    }

    pub fn draw(&self, frame: &mut Frame, theme: &Theme, now: jiff::Timestamp) {
        // Filtered and sorted once per frame.
        let rows = self.visible();
        let at = self.cursor_in(&rows);
        let area = frame.area();
        let [body, hints] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
        let wide = body.width >= 120;
        let [list, preview] = if wide {
            Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(body)
        } else {
            Layout::vertical([Constraint::Min(3), Constraint::Length(9)]).areas(body)
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(self.title(rows.len()));
        if rows.is_empty() {
            let text = if self.entries.is_empty() {
                vec![
                    Line::raw(format!("No sessions in {}.", self.searched)),
                    Line::raw(""),
                    Line::raw("Try `harrow demo`: it needs no key and no network."),
                ]
            } else {
                vec![Line::raw("No run matches; 0 shows every run, Esc on / clears the filter.")]
            };
            frame.render_widget(Paragraph::new(text).block(block), list);
        } else {
            let table_rows = rows.iter().map(|e| {
                let state = match (&e.held_task, e.state) {
                    (Some(t), RunState::Held) => format!("held {}", crate::printable::line(t)),
                    (_, s) => s.to_string(),
                };
                let work = match e.at_work.as_slice() {
                    [] => "-".to_owned(),
                    [one] => format!("{} it{}", crate::printable::line(&one.task), one.iter),
                    many => format!("{} lanes", many.len()),
                };
                let short = &e.id[e.id.len().saturating_sub(6)..];
                let name =
                    e.feature.as_ref().map_or_else(|| e.id.clone(), |f| format!("{f} {short}"));
                Row::new(vec![
                    crate::printable::line(&name),
                    state,
                    if e.prep {
                        "prep".into()
                    } else {
                        format!("{}/{}", e.tasks_done, e.tasks_total)
                    },
                    work,
                    super::ui::compact(i64::try_from(e.tokens).unwrap_or(i64::MAX)),
                    if e.cost == 0.0 { "$0".into() } else { format!("${:.2}", e.cost) },
                    age(e.last_event_at.as_deref(), now),
                    crate::printable::line(e.host.as_deref().unwrap_or("-")),
                ])
                .style(theme.state(&match e.state {
                    RunState::Done => TaskState::Done,
                    RunState::Failed | RunState::Crashed => TaskState::Failed,
                    RunState::Held | RunState::Silent => TaskState::NeedsOperator,
                    RunState::Running | RunState::Paused => TaskState::Running,
                    RunState::Stopped | RunState::Empty => TaskState::Pending,
                }))
            });
            let table = Table::new(
                table_rows,
                [
                    Constraint::Min(12),
                    Constraint::Length(14),
                    Constraint::Length(6),
                    Constraint::Length(12),
                    Constraint::Length(7),
                    Constraint::Length(7),
                    Constraint::Length(11),
                    Constraint::Length(10),
                ],
            )
            .header(Row::new([
                "RUN",
                "STATE",
                "TASKS",
                "AT WORK",
                "TOKENS",
                "COST",
                "LAST EVENT",
                "HOST",
            ]))
            .row_highlight_style(theme.selected())
            .block(block);
            let mut state = TableState::default().with_selected(Some(at));
            frame.render_stateful_widget(table, list, &mut state);
        }
        Browser::draw_preview(frame, theme, preview, rows.get(at).copied());
        let offer = self
            .offer
            .as_ref()
            .map(|id| format!("resume {id} in the background? y resumes · any other key does not"))
            .or_else(|| {
                self.trust_offer.as_ref().map(|_| {
                    format!(
                        "Y resumes it trusting what its folder records · any other key does not — {}",
                        self.notice.as_deref().unwrap_or("")
                    )
                })
            });
        let hint = match (&self.prompt, offer.as_ref().or(self.notice.as_ref())) {
            (Some(p), _) => {
                let label = match &p.purpose {
                    Purpose::Filter => "filter".to_owned(),
                    Purpose::Decide { op, task, .. } => match op {
                        Op::Reject => format!("reject {task}, guidance for its next attempt"),
                        op => format!("{} {task}, reason", op.as_str()),
                    },
                    Purpose::Note { task, .. } => {
                        format!("note for {}", task.as_deref().unwrap_or("the next task"))
                    }
                    Purpose::Refused(why) => format!("{why} — what you type is not sent"),
                };
                let keys = match p.purpose {
                    Purpose::Refused(_) => "Enter or Esc closes",
                    _ => "Enter sends · Esc drops",
                };
                Paragraph::new(format!("{label}: {}▏  {keys}", crate::printable::line(&p.text)))
                    .style(theme.fg(theme.colors.focus))
            }
            (None, Some(notice)) => {
                Paragraph::new(crate::printable::line(notice)).style(theme.fg(theme.colors.notice))
            }
            (None, None) => Paragraph::new(super::keymap::hint_line(
                super::keymap::Mode::Browser,
                false,
                usize::from(hints.width),
            ))
            .style(theme.fg(theme.colors.muted)),
        };
        frame.render_widget(hint, hints);
    }

    /// The selected run in more words: where it runs, what it waits on, its latest rows.
    fn draw_preview(
        frame: &mut Frame,
        theme: &Theme,
        area: ratatui::layout::Rect,
        selected: Option<&Entry>,
    ) {
        let block = Block::default().borders(Borders::ALL).border_style(theme.border(false));
        let Some(e) = selected else {
            frame.render_widget(block.title(" Preview "), area);
            return;
        };
        let clean = |s: &str| crate::printable::line(s);
        let mut lines = vec![Line::raw(format!("{} · {}", clean(&e.id), e.state))];
        if let Some(repo) = &e.repo {
            lines.push(Line::raw(format!("repo {}", clean(repo))));
        }
        if let Some(host) = &e.host {
            lines.push(Line::raw(format!("on {}", clean(host))));
        }
        if let Some(why) = &e.foreign {
            lines.push(Line::styled(
                format!(
                    "folder {}: its record is data; a resume trusts none of its settings",
                    clean(why)
                ),
                theme.fg(theme.colors.notice),
            ));
        }
        if let Some(url) = &e.pull_request {
            lines.push(Line::raw(format!("pull request {}", clean(url))));
        }
        if let Some(t) = &e.held_task {
            lines.push(Line::styled(
                format!(
                    "waits: {} — {}",
                    clean(t),
                    clean(e.held_reason.as_deref().unwrap_or("a decision"))
                ),
                theme.fg(theme.colors.notice),
            ));
            if let Some(v) = &e.held_verdict {
                lines.push(Line::raw(format!("last verdict: {}", clean(v))));
            }
        }
        for w in &e.at_work {
            let lane = w.lane.map(|l| format!("L{l} ")).unwrap_or_default();
            lines.push(Line::raw(format!("{lane}{} #{} it{}", clean(&w.task), w.attempt, w.iter)));
        }
        lines.push(Line::raw(""));
        lines.extend(e.recent.iter().rev().map(|r| Line::raw(clean(r))));
        let title = format!(" {} ", clean(e.feature.as_deref().unwrap_or("Preview")));
        frame.render_widget(
            Paragraph::new(lines).block(block.title(title)).wrap(Wrap { trim: false }),
            area,
        );
    }
}

/// The fleet as a screen of the console's loop: `Enter` opens a run's console over the list,
/// which comes back, cursor in place, when that console closes.
pub struct BrowserScreen {
    list: Browser,
    feed: super::fleet_feed::FleetFeed,
    /// The feed's generation last shown.
    seen: u64,
    look: super::theme::Look,
    /// Showing the keys instead of the list, scrolled down this many lines.
    help: Option<u16>,
    dirty: bool,
    /// When the screen was last drawn: its ages are true to the second.
    drawn_at: Option<std::time::Instant>,
    /// Whether the terminal's title says how many runs wait, as last written.
    title_waiting: Option<usize>,
}

impl BrowserScreen {
    pub fn new(roots: Vec<crate::session::discover::Root>, searched: String) -> BrowserScreen {
        let mut list = Browser::new(Vec::new(), searched);
        list.loaded = false;
        let look = super::theme::Look::from_user();
        BrowserScreen {
            list,
            feed: super::fleet_feed::FleetFeed::start(roots),
            seen: 0,
            look,
            help: None,
            dirty: true,
            drawn_at: None,
            title_waiting: None,
        }
    }

    fn theme(&self) -> &Theme {
        &self.look.themes[self.look.theme.min(self.look.themes.len().saturating_sub(1))]
    }

    /// Takes what the feed found since the last look: new rows, and a call to the person for
    /// each run that came to need one (once per change) with the title's count kept true.
    fn take_feed(&mut self) {
        let (generation, loaded, rows, changes) = self.feed.with(|f| {
            if f.generation == self.seen {
                return (f.generation, f.loaded, None, Vec::new());
            }
            (f.generation, f.loaded, Some(f.rows.clone()), std::mem::take(&mut f.changes))
        });
        self.seen = generation;
        self.list.loaded = loaded;
        let Some(rows) = rows else { return };
        self.list.refresh(rows);
        self.dirty = true;
        let mut out = std::io::stdout();
        for change in changes.iter().filter(|c| c.calls_a_person()) {
            let what = match (&change.row.held_task, change.row.state) {
                (Some(t), RunState::Held) => format!("{} holds {t}", change.row.id),
                (_, state) => format!("{} {state}", change.row.id),
            };
            let _ =
                std::io::Write::write_all(&mut out, self.look.notify.sequence(&what).as_bytes());
        }
        let waiting = self.list.entries.iter().filter(|e| e.state.needs_person()).count();
        if self.title_waiting != Some(waiting) {
            self.title_waiting = Some(waiting);
            let title = if waiting == 0 {
                "harrow".to_owned()
            } else {
                format!("harrow — {waiting} waiting")
            };
            let _ = crossterm::execute!(out, crossterm::terminal::SetTitle(title));
        }
        let _ = std::io::Write::flush(&mut out);
    }

    /// The console of the chosen run: watching it when a run holds it, else a replay.
    fn open(&mut self, entry: &Entry) -> super::screen::Flow {
        use super::app::App;
        let live = crate::session::lock::is_locked(&entry.dir);
        let opened = if live {
            App::open_live(&entry.dir, &entry.id, self.look.clone())
        } else {
            App::open(&entry.dir, &entry.id, 8.0, self.look.clone())
        };
        match opened {
            Ok(mut app) => {
                app.opened_from = super::app::OpenedFrom::Fleet;
                self.list.notice = None;
                let follow = live.then(|| entry.dir.clone());
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

    fn send(&mut self, dir: &std::path::Path, cmd: &Command) {
        let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.list.notice = Some(match crate::session::control::send(dir, cmd) {
            Err(e) => format!("could not write to {}: {e}", dir.display()),
            Ok(()) if crate::session::lock::is_locked(dir) => {
                format!("{} sent to {id}", cmd.op.as_str())
            }
            Ok(()) => format!(
                "{} written for {id}; it applies when the run goes on (R resumes it)",
                cmd.op.as_str()
            ),
        });
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
        let top = self.help.unwrap_or(0).min(u16::try_from(lines.len()).unwrap_or(u16::MAX));
        frame.render_widget(Paragraph::new(lines).block(block).scroll((top, 0)), area);
        let hint = super::keymap::hint_line(Mode::Help, false, usize::from(hints.width));
        frame.render_widget(Paragraph::new(hint).style(theme.fg(theme.colors.muted)), hints);
    }
}

/// How often the fleet is drawn again with nothing new: its ages read in seconds.
const AGES_MOVE: std::time::Duration = std::time::Duration::from_secs(1);

impl super::screen::Screen for BrowserScreen {
    fn due(&self, now: std::time::Instant) -> bool {
        // The ages (LAST EVENT, "5 s ago") move with the clock: drawn again every second.
        self.dirty || self.drawn_at.is_none_or(|at| now.duration_since(at) >= AGES_MOVE)
    }

    fn draw(&mut self, frame: &mut Frame) {
        if self.help.is_some() {
            self.draw_help(frame);
        } else {
            self.list.draw(frame, self.theme(), jiff::Timestamp::now());
        }
    }

    fn drawn(&mut self, now: std::time::Instant) {
        self.dirty = false;
        self.drawn_at = Some(now);
    }

    fn wait(&self, _now: std::time::Instant) -> Option<std::time::Duration> {
        // The feed is looked at this often: a row is true within half a second of its event.
        Some(std::time::Duration::from_millis(200))
    }

    fn on(&mut self, msg: super::screen::Msg, cx: &super::screen::Cx) -> super::screen::Flow {
        use super::keymap::{Action, Mode, action_for};
        use super::screen::{Flow, Msg};
        use crossterm::event::{Event, KeyEventKind};
        self.dirty = true;
        match msg {
            Msg::Term(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                if let Some(top) = self.help {
                    let last = u16::try_from(Mode::Browser.bindings().len()).unwrap_or(u16::MAX);
                    self.help = match action_for(Mode::Help, &key) {
                        Some(Action::Close) => None,
                        Some(Action::Down) => Some((top + 1).min(last)),
                        Some(Action::Up) => Some(top.saturating_sub(1)),
                        _ => Some(top),
                    };
                    return Flow::Stay;
                }
                if self.list.prompt.is_none()
                    && matches!(action_for(Mode::Browser, &key), Some(Action::Help))
                {
                    self.help = Some(0);
                    return Flow::Stay;
                }
                self.list.notice = None;
                match self.list.key(key) {
                    Choice::Stay => Flow::Stay,
                    Choice::Quit => Flow::Close,
                    Choice::Open(e) => self.open(&e),
                    Choice::Send(dir, cmd) => {
                        self.send(&dir, &cmd);
                        Flow::Stay
                    }
                    Choice::Resume(e, trust) => {
                        self.list.notice = Some(format!("starting {} …", e.id));
                        if let Some(job) = cx.jobs().resume(&e.dir, &e.id, trust) {
                            self.list.resumed(job);
                        }
                        Flow::Stay
                    }
                    Choice::Export(e) => {
                        self.list.notice = Some(match super::jobs::export_now(&e.dir, &e.id) {
                            Ok(path) => format!("exported to {}", path.display()),
                            Err(err) => format!("could not export {}: {err}", e.id),
                        });
                        Flow::Stay
                    }
                }
            }
            Msg::Job(job @ Job::Resumed { .. }) => {
                self.list.resumed(job);
                Flow::Stay
            }
            Msg::InputGone => Flow::Close,
            _ => Flow::Stay,
        }
    }

    fn turn(&mut self, _now: std::time::Instant, _cx: &super::screen::Cx) -> super::screen::Flow {
        self.take_feed();
        super::screen::Flow::Stay
    }

    fn back(&mut self, _cx: &super::screen::Cx) {
        self.seen = 0;
        self.take_feed();
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

    fn entry(id: &str, state: RunState) -> Entry {
        Entry {
            origin: "harrow".into(),
            feature: Some("textstats".into()),
            state,
            held_task: (state == RunState::Held).then(|| "T-002".into()),
            tasks_done: 1,
            tasks_total: 3,
            ..Entry::new(id.into(), PathBuf::from(id))
        }
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn ids(b: &Browser) -> Vec<String> {
        b.visible().iter().map(|e| e.id.clone()).collect()
    }

    #[test]
    fn what_needs_a_person_comes_first_and_the_selection_follows_its_run() {
        let mut b = Browser::new(
            vec![
                entry("c", RunState::Done),
                entry("b", RunState::Running),
                entry("a", RunState::Held),
            ],
            String::new(),
        );
        assert_eq!(ids(&b), ["a", "b", "c"]);
        b.key(key(KeyCode::Char('j')));
        assert_eq!(b.current().map(|e| e.id.as_str()), Some("b"));
        b.refresh(vec![
            entry("b", RunState::Held),
            entry("a", RunState::Done),
            entry("c", RunState::Done),
        ]);
        assert_eq!(b.current().map(|e| e.id.as_str()), Some("b"), "the same run stays selected");
        assert_eq!(b.cursor(), 0, "now first: it waits");
        assert!(matches!(b.key(key(KeyCode::Enter)), Choice::Open(e) if e.id == "b"));
        assert_eq!(b.key(key(KeyCode::Char('q'))), Choice::Quit);
    }

    /// `Esc` goes back one level, as in k9s and lazygit: it clears an applied filter, and on
    /// the bare list it does nothing (only `q` quits).
    #[test]
    fn esc_clears_a_filter_and_never_quits() {
        let runs = vec![
            entry("20261126-alpha", RunState::Running),
            entry("20261126-beta", RunState::Done),
        ];
        let mut b = Browser::new(runs, String::new());
        b.key(key(KeyCode::Char('/')));
        for c in "alph".chars() {
            b.key(key(KeyCode::Char(c)));
        }
        b.key(key(KeyCode::Enter));
        assert_eq!(b.visible().len(), 1, "the filter applies");
        assert_eq!(b.key(key(KeyCode::Esc)), Choice::Stay);
        assert_eq!(b.visible().len(), 2, "Esc cleared the filter");
        assert_eq!(b.key(key(KeyCode::Esc)), Choice::Stay, "Esc on the bare list stays");
        assert_eq!(b.key(key(KeyCode::Char('q'))), Choice::Quit);
    }

    #[test]
    fn filters_sorts_and_the_next_run_that_waits() {
        let mut b = Browser::new(
            vec![
                entry("r1", RunState::Running),
                entry("h1", RunState::Held),
                entry("d1", RunState::Done),
                entry("x1", RunState::Crashed),
            ],
            String::new(),
        );
        b.key(key(KeyCode::Char('1')));
        assert_eq!(ids(&b), ["h1", "x1"], "only what needs a person");
        b.key(key(KeyCode::Char('4')));
        assert_eq!(ids(&b), ["d1"]);
        b.key(key(KeyCode::Char('0')));
        b.key(key(KeyCode::Char('G')));
        b.key(key(KeyCode::Char('n')));
        assert_eq!(b.current().map(|e| e.id.as_str()), Some("h1"), "n wraps to the first waiting");
        b.key(key(KeyCode::Char('n')));
        assert_eq!(b.current().map(|e| e.id.as_str()), Some("x1"));
        b.key(key(KeyCode::Char('/')));
        for c in "d1".chars() {
            b.key(key(KeyCode::Char(c)));
        }
        assert_eq!(ids(&b), ["d1"], "the filter applies as it is typed");
        b.key(key(KeyCode::Esc));
        assert_eq!(ids(&b).len(), 4, "Esc clears it");
        b.key(key(KeyCode::Char('s')));
        assert_eq!(ids(&b), ["x1", "r1", "h1", "d1"], "newest (by id) first");
    }

    #[test]
    fn a_decision_asks_for_words_and_is_sent_to_the_held_runs_folder() {
        let mut b = Browser::new(
            vec![entry("h", RunState::Held), entry("r", RunState::Running)],
            String::new(),
        );
        assert_eq!(b.key(key(KeyCode::Char('a'))), Choice::Stay);
        assert_eq!(b.key(key(KeyCode::Enter)), Choice::Stay, "nothing without a reason");
        assert!(b.notice.as_deref().is_some_and(|n| n.contains("needs a few words")));
        b.key(key(KeyCode::Char('r')));
        for c in "add a test".chars() {
            b.key(key(KeyCode::Char(c)));
        }
        match b.key(key(KeyCode::Enter)) {
            Choice::Send(dir, cmd) => {
                assert_eq!(dir, PathBuf::from("h"));
                assert_eq!(cmd.op, Op::Reject);
                assert_eq!(cmd.task.as_deref(), Some("T-002"));
                assert_eq!(
                    cmd.text.as_deref(),
                    Some("add a test"),
                    "a reject's words are its guidance"
                );
            }
            other => panic!("{other:?}"),
        }
        b.key(key(KeyCode::Char('j')));
        b.key(key(KeyCode::Char('a')));
        // Refused: the words typed after it (meant as the reason) never act as keys.
        let selected = b.selected.clone();
        for c in "good enough".chars() {
            assert_eq!(b.key(key(KeyCode::Char(c))), Choice::Stay, "{c} does not act");
        }
        assert_eq!(b.selected, selected, "g did not move to the top");
        assert_eq!(b.key(key(KeyCode::Enter)), Choice::Stay, "nothing is sent");
        assert!(
            b.prompt.is_none()
                && b.notice.as_deref().is_some_and(
                    |n| n.contains("no task waiting") && n.contains("nothing was sent")
                )
        );
        assert!(matches!(b.key(key(KeyCode::Char('p'))), Choice::Send(_, c) if c.op == Op::Pause));
        assert_eq!(b.key(key(KeyCode::Char('R'))), Choice::Stay);
        assert!(
            b.notice.as_deref().is_some_and(|n| n.contains("is running")),
            "a live run is not resumed"
        );
        b.key(key(KeyCode::Char('k')));
        assert_eq!(b.key(key(KeyCode::Char('R'))), Choice::Stay, "R only offers");
        assert_eq!(b.key(key(KeyCode::Char('n'))), Choice::Stay, "anything but y declines");
        b.key(key(KeyCode::Char('R')));
        assert!(matches!(b.key(key(KeyCode::Char('y'))), Choice::Resume(e, false) if e.id == "h"));
        // The resume refused the endpoints the folder records: said, and offered again on Y
        // trusting them; any other key declines, and nothing typed after it acts.
        let refusal = "the session records worker base URL http://x (--base-url), …; pass --trust-recorded to use the recorded ones";
        b.resumed(Job::Resumed { id: "h".into(), outcome: Err(refusal.into()) });
        assert!(
            b.notice
                .as_deref()
                .is_some_and(|n| n.contains("did not resume") && n.contains("--trust-recorded"))
        );
        assert_eq!(b.key(key(KeyCode::Char('y'))), Choice::Stay, "only Y trusts");
        b.resumed(Job::Resumed { id: "h".into(), outcome: Err(refusal.into()) });
        assert!(matches!(b.key(key(KeyCode::Char('Y'))), Choice::Resume(e, true) if e.id == "h"));
        b.resumed(Job::Resumed { id: "h".into(), outcome: Err("a live process holds it".into()) });
        assert!(b.trust_offer.is_none(), "no trust is offered for another refusal");
        b.resumed(Job::Resumed { id: "h".into(), outcome: Ok(()) });
        assert!(b.notice.as_deref().is_some_and(|n| n.contains("resumes in the background")));
    }

    #[test]
    fn force_skip_fail_and_a_note_are_sent_with_their_words_and_e_exports() {
        for (c, op) in [('F', Op::ForceAccept), ('S', Op::Skip), ('K', Op::Fail), ('e', Op::Note)] {
            let mut b = Browser::new(vec![entry("h", RunState::Held)], String::new());
            assert_eq!(b.key(key(KeyCode::Char(c))), Choice::Stay, "{c} asks for words first");
            for ch in "because".chars() {
                b.key(key(KeyCode::Char(ch)));
            }
            match b.key(key(KeyCode::Enter)) {
                Choice::Send(dir, cmd) => {
                    assert_eq!((dir, cmd.op), (PathBuf::from("h"), op), "{c}");
                    assert_eq!(cmd.task.as_deref(), Some("T-002"), "{c}");
                    let words = if op == Op::Note { cmd.text } else { cmd.reason };
                    assert_eq!(words.as_deref(), Some("because"), "{c}");
                    assert_eq!(cmd.source, "fleet", "the log says where a decision came from");
                }
                other => panic!("{c}: {other:?}"),
            }
        }
        let mut b = Browser::new(vec![entry("d", RunState::Done)], String::new());
        assert!(matches!(b.key(key(KeyCode::Char('E'))), Choice::Export(e) if e.id == "d"));
    }

    #[test]
    fn what_a_log_says_is_shown_escaped_in_the_fleet_never_as_a_control_byte() {
        let evil = "T-1\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let mut held = entry("20261126-000000-\u{1b}[31mred", RunState::Held);
        held.held_task = Some(evil.into());
        held.held_reason = Some(format!("waits \u{1b}[5m{evil}"));
        held.held_verdict = Some(format!("reject: {evil}"));
        held.feature = Some(format!("feat{evil}"));
        held.host = Some(format!("host{evil}"));
        held.repo = Some(format!("/repo/{evil}"));
        held.recent = vec![format!("12:00:00 {evil} calls bash")];
        let mut running = entry("r", RunState::Running);
        running.at_work = vec![crate::session::fleet::AtWork {
            task: evil.into(),
            iter: 2,
            attempt: 1,
            lane: Some(1),
        }];
        let mut b = Browser::new(vec![held, running], String::new());
        b.filter = String::new();
        for width in [80, 160] {
            let mut terminal =
                ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, 20))
                    .unwrap_or_else(|e| panic!("{e}"));
            let theme = super::super::theme::Look::from_user().themes.remove(0);
            terminal
                .draw(|f| b.draw(f, &theme, jiff::Timestamp::now()))
                .unwrap_or_else(|e| panic!("{e}"));
            let buffer = terminal.backend().buffer();
            for cell in buffer.content() {
                assert!(
                    !cell.symbol().chars().any(char::is_control),
                    "a control character in a cell at width {width}: {:?}",
                    cell.symbol()
                );
            }
            // Shown, not dropped: wherever the task's name is drawn, its escape is drawn too.
            let area = buffer.area;
            for y in 0..area.height {
                let line: String =
                    (0..area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
                for (at, _) in line.match_indices("T-1") {
                    let next = line[at + 3..].chars().next();
                    assert!(
                        matches!(next, None | Some('\\' | ' ' | '│' | '┐' | '┘')),
                        "an escape dropped silently at width {width}: {line}"
                    );
                }
            }
        }
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
