//! The fleet (`harrow` with no arguments, `harrow sessions --live`): every run under the
//! session folders in one live list, what needs a person first, with a preview of the selected
//! one; decisions, pause, notes and resume sent to a run without attaching; `Enter` attaches
//! and quitting that console comes back here.

use crate::session::control::{Command, Op};
use crate::session::fleet::SessionRow;
use crate::session::status::SessionStatus;

use super::jobs::Job;

mod draw;
mod screen;
pub use screen::BrowserScreen;

/// One run in the list.
pub type Entry = SessionRow;

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
    fn keeps(self, state: SessionStatus) -> bool {
        match self {
            Show::All => true,
            Show::Waiting => state.needs_person(),
            Show::Live => matches!(
                state,
                SessionStatus::Running | SessionStatus::Paused | SessionStatus::Silent
            ),
            Show::Stopped => state == SessionStatus::Stopped,
            Show::Done => matches!(state, SessionStatus::Done | SessionStatus::Empty),
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
    /// Words for a run's task (`steer` while it works, `queue` for its next attempt).
    Words {
        op: Op,
        task: String,
        dir: std::path::PathBuf,
    },
    /// A rewind of a run's held task: `K why` goes back to attempt K, `tN why` to turn N.
    Rewind {
        task: String,
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

/// What the fleet's rewind line says: `K why` (attempt K as judged) or `tN why` (turn N of the
/// task's latest conversation), the reason required.
fn rewind_line(text: &str) -> Result<(Option<u64>, Option<u64>, String), String> {
    let (to, why) = text.trim().split_once(char::is_whitespace).unwrap_or((text.trim(), ""));
    let why = why.trim();
    let parsed = match to.strip_prefix('t') {
        Some(turn) => turn.parse().map(|t| (None, Some(t))),
        None => to.parse().map(|a| (Some(a), None)),
    };
    match parsed {
        Ok(_) if why.is_empty() => Err("a rewind says why: `2 attempt 3 lost the parser`".into()),
        Ok((attempt, turn)) => Ok((attempt, turn, why.to_owned())),
        Err(_) => {
            Err(format!("`{}` is not an attempt (2) or a turn (t5)", crate::printable::line(to)))
        }
    }
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
    /// The table of the view open over the list (its help), whose keys the hint line shows.
    pub covered_by: Option<crate::console::keymap::Mode>,
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
    Send(std::path::PathBuf, Box<Command>),
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

fn command(
    op: Op,
    task: Option<String>,
    reason: Option<String>,
    text: Option<String>,
) -> Box<Command> {
    Box::new(Command::new(
        op,
        task,
        reason,
        text,
        &crate::session::vocabulary::CommandSource::Fleet,
    ))
}

impl Browser {
    pub fn new(entries: Vec<Entry>, searched: String) -> Browser {
        let mut b = Browser {
            entries: Vec::new(),
            selected: None,
            searched,
            notice: None,
            covered_by: None,
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
            .filter(|e| self.show.keeps(e.status))
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
                rows.sort_by(|a, b| a.status.cmp(&b.status).then_with(|| b.id.cmp(&a.id)));
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
                Some(e) if matches!(e.status, SessionStatus::Running | SessionStatus::Paused) => {
                    self.notice = Some(format!("{} is running", e.id));
                }
                Some(e) => self.offer = Some(e.id.clone()),
                None => {}
            },
            Some(Action::Export) => {
                return self.on_current(|e| Ok(Choice::Export(Box::new(e.clone()))));
            }
            Some(Action::Pause) => {
                let Some(e) = self.current() else { return Choice::Stay };
                let op = match e.status {
                    SessionStatus::Paused => Op::Resume,
                    SessionStatus::Running | SessionStatus::Held | SessionStatus::Silent => {
                        Op::Pause
                    }
                    _ => {
                        let why = format!("{} is not running; R resumes it", e.id);
                        return self.refuse(why);
                    }
                };
                return Choice::Send(e.dir.clone(), command(op, None, None, None));
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
            Some(Action::Steer) => {
                let Some(e) = self.current() else { return Choice::Stay };
                let words = match (e.status, e.at_work.as_slice(), e.held_task.clone()) {
                    (SessionStatus::Running | SessionStatus::Paused, [one], _) => {
                        Ok((Op::Steer, one.task.clone()))
                    }
                    (SessionStatus::Running | SessionStatus::Paused, [], _) => {
                        Err(format!("no task of {} is at work yet", e.id))
                    }
                    (SessionStatus::Running | SessionStatus::Paused, many, _) => Err(format!(
                        "{} tasks of {} are at work: Enter attaches, and i there steers the one picked in Plan",
                        many.len(),
                        e.id
                    )),
                    (_, _, Some(task)) => Ok((Op::Queue, task)),
                    _ => Err(format!("{} has no task at work or waiting", e.id)),
                };
                match words {
                    Ok((op, task)) => {
                        let purpose = Purpose::Words { op, task, dir: e.dir.clone() };
                        self.prompt = Some(Prompt { purpose, text: String::new() });
                    }
                    Err(why) => return self.refuse(why),
                }
            }
            Some(Action::Rewind) => {
                let Some(e) = self.current() else { return Choice::Stay };
                let Some(task) = e.held_task.clone() else {
                    let why = format!(
                        "rewind refused: {} has no task waiting for a decision (Enter attaches; u there rewinds any task)",
                        e.id
                    );
                    return self.refuse(why);
                };
                let purpose = Purpose::Rewind { task, dir: e.dir.clone() };
                self.prompt = Some(Prompt { purpose, text: String::new() });
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
            self.refuse(why);
            return;
        };
        let dir = e.dir.clone();
        self.prompt =
            Some(Prompt { purpose: Purpose::Decide { op, task, dir }, text: String::new() });
    }

    /// A key refused on the selected run: said, and what is typed after it goes to a line
    /// that sends nothing until Enter or Esc closes it, so words meant for a steer, a queue or
    /// a decision never act on the list as keys.
    fn refuse(&mut self, why: String) -> Choice {
        self.prompt = Some(Prompt { purpose: Purpose::Refused(why), text: String::new() });
        Choice::Stay
    }

    fn next_waiting(&mut self) {
        let rows = self.visible();
        let at = self.cursor();
        let n = rows.len();
        let next = (1..=n).map(|i| (at + i) % n.max(1)).find(|i| rows[*i].status.needs_person());
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
            Purpose::Decide { .. } | Purpose::Note { .. } | Purpose::Words { .. }
                if text.is_empty() =>
            {
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
            Purpose::Words { op, task, dir } => {
                Choice::Send(dir, command(op, Some(task), None, Some(text)))
            }
            Purpose::Rewind { task, dir } => match rewind_line(&text) {
                Ok((attempt, turn, why)) => {
                    let mut cmd = command(Op::Rewind, Some(task), Some(why), None);
                    cmd.to_attempt = attempt;
                    cmd.to_turn = turn;
                    Choice::Send(dir, cmd)
                }
                Err(why) => {
                    self.notice = Some(format!("{why}; nothing was sent"));
                    Choice::Stay
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use std::path::PathBuf;

    fn entry(id: &str, state: SessionStatus) -> Entry {
        Entry {
            origin: "harrow".into(),
            feature: Some("textstats".into()),
            status: state,
            held_task: (state == SessionStatus::Held).then(|| "T-002".into()),
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
                entry("c", SessionStatus::Done),
                entry("b", SessionStatus::Running),
                entry("a", SessionStatus::Held),
            ],
            String::new(),
        );
        assert_eq!(ids(&b), ["a", "b", "c"]);
        b.key(key(KeyCode::Char('j')));
        assert_eq!(b.current().map(|e| e.id.as_str()), Some("b"));
        b.refresh(vec![
            entry("b", SessionStatus::Held),
            entry("a", SessionStatus::Done),
            entry("c", SessionStatus::Done),
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
            entry("20261126-alpha", SessionStatus::Running),
            entry("20261126-beta", SessionStatus::Done),
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
                entry("r1", SessionStatus::Running),
                entry("h1", SessionStatus::Held),
                entry("d1", SessionStatus::Done),
                entry("x1", SessionStatus::Crashed),
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
            vec![entry("h", SessionStatus::Held), entry("r", SessionStatus::Running)],
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
            let mut b = Browser::new(vec![entry("h", SessionStatus::Held)], String::new());
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
        let mut b = Browser::new(vec![entry("d", SessionStatus::Done)], String::new());
        assert!(matches!(b.key(key(KeyCode::Char('E'))), Choice::Export(e) if e.id == "d"));
    }

    /// `i` on a run: a steer for its one task at work, a queue for a held run's task, and a
    /// notice (nothing typed is sent) for a run with several tasks at work.
    #[test]
    fn i_steers_a_running_runs_task_and_queues_for_a_held_one() {
        let at_work = |task: &str| crate::session::fleet::AtWork {
            task: task.into(),
            iter: 3,
            attempt: 1,
            lane: None,
        };
        let mut running = entry("r", SessionStatus::Running);
        running.at_work = vec![at_work("T-001")];
        for (e, op, task) in
            [(running, Op::Steer, "T-001"), (entry("h", SessionStatus::Held), Op::Queue, "T-002")]
        {
            let dir = e.dir.clone();
            let mut b = Browser::new(vec![e], String::new());
            assert_eq!(b.key(key(KeyCode::Char('i'))), Choice::Stay, "words first");
            for ch in "use tabs".chars() {
                b.key(key(KeyCode::Char(ch)));
            }
            match b.key(key(KeyCode::Enter)) {
                Choice::Send(to, cmd) => {
                    assert_eq!((to, cmd.op, cmd.task.as_deref()), (dir, op, Some(task)));
                    assert_eq!(cmd.text.as_deref(), Some("use tabs"));
                }
                other => panic!("{op:?}: {other:?}"),
            }
        }
        let mut two = entry("t", SessionStatus::Running);
        two.at_work = vec![at_work("T-001"), at_work("T-002")];
        let mut b = Browser::new(vec![two], String::new());
        assert_eq!(b.key(key(KeyCode::Char('i'))), Choice::Stay);
        assert!(
            matches!(&b.prompt, Some(Prompt { purpose: Purpose::Refused(why), .. }) if why.contains("2 tasks")),
            "{:?}",
            b.prompt
        );
    }

    /// A refused key that a person follows with words (`i` on a run with no task at work, `p`
    /// on a finished one) opens the line that sends nothing: "Run it again" typed after it must
    /// not resume (R), jump (n), queue (i) or act on any run as keys.
    #[test]
    fn words_typed_after_a_refused_i_or_p_are_never_read_as_fleet_keys() {
        let mut idle = entry("r", SessionStatus::Running);
        idle.at_work = vec![];
        for (e, refused) in [(idle, 'i'), (entry("d", SessionStatus::Done), 'p')] {
            let mut b = Browser::new(vec![e], String::new());
            assert_eq!(b.key(key(KeyCode::Char(refused))), Choice::Stay);
            for ch in "Run it again".chars() {
                assert_eq!(b.key(key(KeyCode::Char(ch))), Choice::Stay, "{refused}: {ch}");
            }
            assert_eq!(b.offer, None, "{refused}: nothing offered to resume");
            assert!(
                matches!(&b.prompt, Some(Prompt { purpose: Purpose::Refused(_), text }) if text == "Run it again"),
                "{refused}: {:?}",
                b.prompt
            );
            assert_eq!(b.key(key(KeyCode::Enter)), Choice::Stay);
            assert!(b.prompt.is_none() && b.notice.unwrap().ends_with("nothing was sent"));
        }
    }

    #[test]
    fn u_rewinds_a_held_runs_task_to_an_attempt_or_a_turn_with_why() {
        let typed = |line: &str| {
            let e = entry("h", SessionStatus::Held);
            let mut b = Browser::new(vec![e], String::new());
            assert_eq!(b.key(key(KeyCode::Char('u'))), Choice::Stay);
            for ch in line.chars() {
                b.key(key(KeyCode::Char(ch)));
            }
            (b.key(key(KeyCode::Enter)), b.notice.clone())
        };
        let Choice::Send(_, cmd) = typed("2 the parser was right").0 else { panic!("sent") };
        assert_eq!(
            (cmd.op, cmd.task.as_deref(), cmd.to_attempt, cmd.to_turn),
            (Op::Rewind, Some("T-002"), Some(2), None)
        );
        assert_eq!(cmd.reason.as_deref(), Some("the parser was right"));
        let Choice::Send(_, cmd) = typed("t5 before it deleted the fixtures").0 else {
            panic!("sent")
        };
        assert_eq!((cmd.to_attempt, cmd.to_turn), (None, Some(5)));
        let (stay, said) = typed("two why");
        assert_eq!(stay, Choice::Stay);
        assert!(said.unwrap().contains("`two` is not an attempt (2) or a turn (t5)"));
        assert!(typed("2").1.unwrap().contains("says why"));
        let mut b = Browser::new(vec![entry("r", SessionStatus::Running)], String::new());
        b.key(key(KeyCode::Char('u')));
        assert!(
            matches!(&b.prompt, Some(Prompt { purpose: Purpose::Refused(why), .. }) if why.contains("no task waiting"))
        );
    }

    #[test]
    fn what_a_log_says_is_shown_escaped_in_the_fleet_never_as_a_control_byte() {
        let evil = "T-1\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let mut held = entry("20261126-000000-\u{1b}[31mred", SessionStatus::Held);
        held.held_task = Some(evil.into());
        held.held_reason = Some(format!("waits \u{1b}[5m{evil}"));
        held.held_verdict = Some(format!("reject: {evil}"));
        held.feature = Some(format!("feat{evil}"));
        held.host = Some(format!("host{evil}"));
        held.repo = Some(format!("/repo/{evil}"));
        held.recent = vec![format!("12:00:00 {evil} calls bash")];
        let mut running = entry("r", SessionStatus::Running);
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

    /// The fleet at a wide and a short, narrow size: the id's end leads each row, whole
    /// however narrow the column, and a short screen keeps three runs in view.
    #[test]
    fn the_fleet_at_a_wide_and_a_short_narrow_size() {
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap_or_else(|e| panic!("{e}"));
        let ago =
            |s: i64| jiff::Timestamp::from_second(1_800_000_000 - s).map(|t| t.to_string()).ok();
        let mut runs = vec![
            entry("20261127-180948-9d8329", SessionStatus::Held),
            entry("20261127-181130-2a2de6", SessionStatus::Running),
            entry("20261127-175002-7108f1", SessionStatus::Done),
        ];
        for (n, r) in runs.iter_mut().enumerate() {
            r.feature = Some("a-feature-with-a-long-name".into());
            r.last_event_at = ago(60 * (n as i64 + 1));
            r.host = Some("runner-7".into());
        }
        let b = Browser::new(runs, String::new());
        let theme = super::super::theme::Look::from_user().themes.remove(0);
        for (w, h) in [(140, 20), (100, 12)] {
            let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h))
                .unwrap_or_else(|e| panic!("{e}"));
            terminal.draw(|f| b.draw(f, &theme, now)).unwrap_or_else(|e| panic!("{e}"));
            let buffer = terminal.backend().buffer();
            let text: Vec<String> = (0..h)
                .map(|y| (0..w).map(|x| buffer[(x, y)].symbol().to_owned()).collect())
                .collect();
            insta::assert_snapshot!(format!("fleet_{w}x{h}"), text.join("\n"));
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
