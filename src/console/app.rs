//! The console's state and its update: actions and clock ticks in, view state out. No terminal
//! here, so every behaviour is testable; rendering reads what [`App::prepare`] left ready.

use super::describe::row;
use super::inspector::{self, Inspector};
use super::keymap::Action;
use super::panes::{case_lines, ledger_row, validator_detail, verdict_lines};
use super::theme::Theme;
use super::timeline::{Cell, Mark};
use super::ui::{Areas, wrapped_rows};
use super::view::{Clock, Filter, Snapshots, Trail, View, WORKER_WAIT, compressed_times};
use crate::session::control::{self, Op};
use crate::session::dir::EVENTS_FILE;
use crate::session::event::Payload;
use crate::session::index::EventIndex;
use std::io;
use std::path::Path;

/// How long a look at the session's lock holds.
const LOCK_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Idle gaps in a replay are shortened to this.
const MAX_GAP_MS: i64 = 2_000;

/// A verdict, accepting or not.
fn is_verdict(m: Mark) -> bool {
    matches!(m, Mark::Accept | Mark::Reject)
}

/// A rejection, failed validators, or a failed task.
fn is_failure(m: Mark) -> bool {
    matches!(m, Mark::Reject | Mark::Failure)
}

/// An operator command as the console sends it.
fn command(
    op: Op,
    task: Option<String>,
    reason: Option<String>,
    text: Option<String>,
) -> control::Command {
    control::Command {
        op,
        task,
        reason,
        text,
        ts: crate::session::timestamp::now(),
        source: "console".into(),
    }
}

/// What covers the panes.
#[derive(Debug)]
pub enum Overlay {
    None,
    /// The key list, scrolled to this first row when it is taller than the terminal.
    Help(u16),
    Inspector(Inspector),
    /// Quitting while the run goes on: what to do with the run.
    QuitPrompt,
    /// Typing the reason or note that goes with an operator command.
    Editor(Box<Editor>),
    /// An evidence pointer opened at its file; Esc goes back to the inspector.
    Source(Box<(super::evidence::Source, Inspector)>),
    /// Typing what to search the worker stream for.
    Search(Box<tui_textarea::TextArea<'static>>),
}

/// An operator command being written: its reason, guidance or note in a text editor.
#[derive(Debug)]
pub struct Editor {
    pub op: Op,
    pub task: Option<String>,
    pub title: String,
    pub text: tui_textarea::TextArea<'static>,
}

/// A pane of the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Plan,
    Worker,
    Exchange,
    Validators,
    Ledger,
}

impl Pane {
    /// The order `Tab` moves focus in, and the order of the tabs on small terminals.
    pub const ALL: [Pane; 5] =
        [Pane::Plan, Pane::Worker, Pane::Exchange, Pane::Validators, Pane::Ledger];

    pub fn name(self) -> &'static str {
        match self {
            Pane::Plan => "Plan",
            Pane::Worker => "Worker",
            Pane::Exchange => "Exchange",
            Pane::Validators => "Validators",
            Pane::Ledger => "Ledger",
        }
    }

    fn index(self) -> usize {
        Pane::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    fn after(self, step: usize) -> Pane {
        Pane::ALL[(self.index() + step) % Pane::ALL.len()]
    }
}

/// What the panes draw, fetched from the log by [`App::prepare`] so rendering does no I/O.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The worker stream's rows on screen, with the position of each row's event.
    pub worker: Vec<(usize, String)>,
    /// The task the Exchange, Validators and Ledger panes are about.
    pub task: Option<String>,
    pub side: SidePanes,
    /// What `side` was made from: while it stays the same, so does the text.
    side_key: Option<SideKey>,
    pub timeline: Vec<Cell>,
    /// The newest worker prompt sizes that fit the sparkline, with each call's task band.
    pub context: Vec<(u32, bool)>,
    /// A run holds the session now, so a wait it is in can be counted in seconds.
    pub run_alive: bool,
    /// What the run waits on, with the seconds so far while a run holds the session.
    pub waiting: Option<String>,
}

/// The text of the panes about the selected task.
#[derive(Debug, Default)]
pub struct SidePanes {
    pub case: Vec<String>,
    pub verdict: Vec<String>,
    pub validators: Vec<String>,
    /// The task's ledger rows, with the position of each row's event.
    pub ledger: Vec<(usize, String)>,
}

/// The task and the newest positions of its trail: what the side panes are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SideKey {
    task: Option<String>,
    case: Option<usize>,
    verdict: Option<usize>,
    validators: Option<usize>,
    ledger: Option<usize>,
    unreviewed: bool,
}

/// The last search: what was asked and the event it landed on.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub query: String,
    pub at: Option<usize>,
}

/// Everything the console shows, and where the operator is in it.
// The flags are independent facts (quitting, following, live, Tilth's log, zoom, mouse), not a
// state machine in disguise.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug)]
pub struct App {
    pub id: String,
    index: EventIndex,
    /// Replay time of each event, in milliseconds from the first.
    times: Vec<i64>,
    pub view: View,
    snapshots: Snapshots,
    pub clock: Clock,
    pub focus: Pane,
    /// The focused pane fills the body.
    pub zoom: bool,
    pub plan_selected: usize,
    /// The plan's selection follows the task at work until the operator picks one.
    pub plan_follow: bool,
    /// Rows scrolled back from the newest; 0 follows the newest.
    pub stream_back: usize,
    /// The ledger row picked for `Enter`; `None` is the latest.
    pub ledger_selected: Option<usize>,
    /// First line shown, per pane, for the panes that scroll by line.
    pub scroll: [u16; 5],
    pub quit: bool,
    pub prepared: Prepared,
    /// Rows the worker pane showed last frame.
    worker_height: usize,
    /// What covers the panes, if anything: at most one thing at a time.
    pub overlay: Overlay,
    /// A one-line answer to the last jump or inspection ("no later failure").
    pub notice: Option<String>,
    pub search: Search,
    pub themes: Vec<Theme>,
    pub theme: usize,
    /// Whether the console captures the mouse (off: the terminal selects text as usual).
    pub mouse: bool,
    /// Which rows the worker stream shows.
    pub filter: Filter,
    /// Watching a session that may still grow: new events are applied as they arrive.
    pub live: bool,
    /// Whether the session is one Tilth wrote (it recorded less than harrow does).
    pub tilth: bool,
    dir: std::path::PathBuf,
    /// Set when this process runs the loop: true while it runs.
    pub run_active: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// A pause or resume sent and not yet applied by the loop.
    pub pending: Option<Op>,
    /// When the session's lock was last looked at, and whether a run held it.
    lock_checked: Option<(std::time::Instant, bool)>,
}

impl App {
    /// Opens a session folder for replay, playing from its first event.
    pub fn open(dir: &Path, id: &str, speed: f64) -> io::Result<App> {
        App::load(dir, id, speed, false)
    }

    /// Opens a session to watch: everything so far is applied, and what the tailer delivers
    /// next is applied as it arrives.
    pub fn open_live(dir: &Path, id: &str) -> io::Result<App> {
        let mut app = App::load(dir, id, f64::INFINITY, true)?;
        app.clock.playing = false;
        app.live = true;
        Ok(app)
    }

    /// Reads the log once: the index, the replay times, where each event belongs (stream,
    /// trails, timeline markers), and the fold with its snapshots; with `apply_all` the view stays at the end,
    /// else it goes back to the start.
    fn load(dir: &Path, id: &str, speed: f64, apply_all: bool) -> io::Result<App> {
        let path = dir.join(EVENTS_FILE);
        let mut stamps = Vec::new();
        let mut view = View::new(id);
        let mut snapshots = Snapshots::default();
        let mut last = 0i64;
        let mut harrow_format = false;
        let index = EventIndex::build_with(&path, |pos, f| {
            let ms =
                f.ts.get()
                    .and_then(crate::session::timestamp::parse)
                    .map_or(last, jiff::Timestamp::as_millisecond);
            last = ms;
            harrow_format |= f.seq.value.is_some();
            stamps.push(ms);
            view.note(pos, f);
            view.apply(pos, f);
            snapshots.offer(&view);
        })?;
        if !apply_all {
            snapshots.restore(&mut view, 0);
        }
        let times = compressed_times(&stamps, MAX_GAP_MS);
        drop(stamps);
        let (themes, problems) = super::theme::load_all(super::theme::user_dir().as_deref());
        let notice = index
            .report()
            .unreadable_sentence()
            .map(|u| format!("events.jsonl: {u} skipped; the rest is shown"))
            .or_else(|| problems.into_iter().next());
        let mut app = App {
            id: id.to_owned(),
            index,
            times,
            view,
            snapshots,
            clock: Clock::new(speed),
            focus: Pane::Worker,
            zoom: false,
            plan_selected: 0,
            plan_follow: true,
            stream_back: 0,
            ledger_selected: None,
            scroll: [0; 5],
            quit: false,
            prepared: Prepared::default(),
            worker_height: 0,
            overlay: Overlay::None,
            notice,
            search: Search::default(),
            theme: super::theme::initial(&themes),
            themes,
            mouse: false,
            filter: Filter::All,
            live: false,
            tilth: !harrow_format,
            dir: dir.to_path_buf(),
            run_active: None,
            pending: None,
            lock_checked: None,
        };
        if apply_all {
            app.clock.now_ms = app.times.last().map_or(0.0, |t| *t as f64);
        } else {
            app.advance_to_clock()?;
        }
        Ok(app)
    }

    /// The theme to draw with.
    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len().saturating_sub(1))]
    }

    /// Where a tailer should start so it delivers exactly the lines not yet indexed.
    pub fn tail_start(&self) -> (u64, u64) {
        let r = self.index.report();
        (r.end_offset, r.lines + 1)
    }

    /// Takes lines the tailer delivered. While the cursor is at the newest event it follows;
    /// after a step back or a jump it stays put and the status counts what is new.
    pub fn take_lines(
        &mut self,
        lines: Vec<(crate::session::scan::LineAt, Vec<u8>)>,
    ) -> io::Result<bool> {
        let following = self.at_end();
        let mut changed = false;
        let App { index, view, times, .. } = self;
        for (at, line) in lines {
            changed |= index.push_line(at, &line, |pos, fact| {
                view.note(pos, fact);
                times.push(times.last().copied().unwrap_or(0));
            });
        }
        if following {
            self.apply_until(self.total())?;
        }
        Ok(changed)
    }

    /// Starts over after the log was truncated or replaced.
    pub fn reload(&mut self, dir: &Path) -> io::Result<()> {
        let id = self.id.clone();
        *self = App::open_live(dir, &id)?;
        self.notice = Some("the log was replaced; reloaded it from the start".into());
        Ok(())
    }

    pub fn total(&self) -> usize {
        self.index.len()
    }

    pub fn at_end(&self) -> bool {
        self.view.applied() >= self.total()
    }

    /// Applies events until `target` have been applied, reading the log in large pieces.
    fn apply_until(&mut self, target: usize) -> io::Result<()> {
        let App { index, view, snapshots, .. } = self;
        let start = view.applied();
        index.for_each_in(start..target, |pos, fact| {
            match fact {
                Some(fact) => view.apply(pos, fact),
                None => view.skip(pos),
            }
            snapshots.offer(view);
        })
    }

    /// Applies every event whose replay time has come. Returns whether anything changed.
    fn advance_to_clock(&mut self) -> io::Result<bool> {
        let before = self.view.applied();
        let now = self.clock.now_ms;
        let due = self.times.partition_point(|t| *t as f64 <= now).min(self.total());
        if due > before {
            self.apply_until(due)?;
        }
        if self.at_end() {
            self.clock.playing = false;
        }
        Ok(self.view.applied() != before)
    }

    /// Moves replay time on by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) -> io::Result<bool> {
        self.clock.tick(real_ms);
        self.advance_to_clock()
    }

    /// Folds again up to `target` events from the nearest snapshot before it: how a replay
    /// goes back.
    fn seek(&mut self, target: usize) -> io::Result<()> {
        self.snapshots.restore(&mut self.view, target);
        self.apply_until(target.min(self.total()))?;
        self.stream_back = 0;
        self.clock.now_ms =
            target.checked_sub(1).and_then(|i| self.times.get(i)).map_or(0.0, |t| *t as f64);
        Ok(())
    }

    /// Moves the replay cursor so the event at `pos` is the last applied, and pauses there.
    fn goto(&mut self, pos: usize) -> io::Result<()> {
        let target = (pos + 1).min(self.total());
        let applied = self.view.applied();
        if target >= applied && self.snapshots.nearest(target) <= applied {
            self.apply_until(target)?;
        } else {
            self.seek(target)?;
        }
        self.clock.playing = false;
        self.clock.now_ms = self.times.get(pos).map_or(self.clock.now_ms, |t| *t as f64);
        self.stream_back = 0;
        Ok(())
    }

    /// The first event of `kind` from `start` on (forward) or at or before it (backward),
    /// from the index alone.
    fn find_kind(&self, start: usize, forward: bool, kind: &str) -> Option<usize> {
        let entries = self.index.entries();
        let is = |p: &usize| self.index.kind_name(entries[*p].kind) == kind;
        if forward {
            (start..entries.len()).find(is)
        } else {
            (0..=start.min(entries.len().checked_sub(1)?)).rev().find(is)
        }
    }

    fn jump(&mut self, found: Option<usize>, what: &str) -> io::Result<()> {
        match found {
            Some(pos) => {
                self.goto(pos)?;
                self.notice = None;
            }
            None => self.notice = Some(format!("no {what}")),
        }
        Ok(())
    }

    /// Opens the inspector on the verdict the focused pane points at: the picked ledger row,
    /// the selected task's latest verdict, or the last verdict at or before the cursor.
    fn inspect(&mut self) {
        let pos = match self.focus {
            Pane::Ledger => {
                let rows = &self.prepared.side.ledger;
                let Some((pos, _)) = self.ledger_selected.map_or(rows.last(), |i| rows.get(i))
                else {
                    self.notice = Some("the ledger of this task is empty".into());
                    return;
                };
                Some(*pos)
            }
            Pane::Plan | Pane::Exchange => {
                let task = self.prepared.task.clone();
                let latest =
                    task.as_deref().and_then(|t| self.view.trail(t)?.verdicts.last().copied());
                if latest.is_none() {
                    self.notice = Some(format!(
                        "no verdict on {} yet",
                        task.as_deref().unwrap_or("the selected task")
                    ));
                    return;
                }
                latest
            }
            Pane::Worker | Pane::Validators => {
                let Some(cursor) = self.view.applied().checked_sub(1) else {
                    self.notice = Some("no verdict yet".into());
                    return;
                };
                self.view.timeline().find(cursor, false, is_verdict)
            }
        };
        let Some(pos) = pos else {
            self.notice = Some("no verdict at or before the cursor".into());
            return;
        };
        let Ok(verdict) = self.index.fetch(pos) else { return };
        if !matches!(verdict.payload, Payload::Verdict(_)) {
            self.notice = Some("that row is an operator's decision, not a verdict".into());
            return;
        }
        let task = self.index.entries()[pos].task;
        let trail = self.view.trail(self.index.task_name(task)).unwrap_or_default();
        let mut positions: Vec<usize> = [trail.cases, trail.validators, trail.verdicts]
            .concat()
            .into_iter()
            .filter(|p| *p < pos)
            .collect();
        positions.sort_unstable();
        let earlier: Vec<_> = positions.iter().filter_map(|p| self.index.fetch(*p).ok()).collect();
        let mut inspector = inspector::build(&verdict, &earlier);
        inspector.worktree = self.worktree();
        if !inspector.evidence.is_empty()
            && let Some(gone) = inspector.worktree.as_ref().filter(|w| !w.is_dir())
        {
            inspector.lines.push(String::new());
            inspector.lines.push(format!(
                "The worktree {} is gone (archived or cleansed): the evidence cannot be opened.",
                gone.display()
            ));
        }
        if matches!(&verdict.payload, Payload::Verdict(v) if v.verdict.as_deref() == Some("accept"))
        {
            inspector.commit = self.commit_after(pos, task);
        }
        self.overlay = Overlay::Inspector(inspector);
    }

    /// The worktree the session's first `session_start` names.
    fn worktree(&mut self) -> Option<std::path::PathBuf> {
        let first = (0..self.total().min(64))
            .find(|p| self.index.kind_name(self.index.entries()[*p].kind) == "session_start")?;
        match self.index.fetch(first).ok()?.payload {
            Payload::SessionStart(s) => s.worktree.map(std::path::PathBuf::from),
            _ => None,
        }
    }

    /// The sha of the commit that followed the verdict at `pos` on task `task`, if the next
    /// thing that happened to the task was a commit.
    fn commit_after(&mut self, pos: usize, task: u16) -> Option<String> {
        for p in pos + 1..self.total() {
            let entry = self.index.entries()[p];
            if entry.task != task {
                continue;
            }
            match self.index.kind_name(entry.kind) {
                "commit" => {
                    return match self.index.fetch(p).ok()?.payload {
                        Payload::Commit(c) => c.sha,
                        _ => None,
                    };
                }
                "evaluator_verdict" | "judge_verdict" | "task_state" => return None,
                _ => {}
            }
        }
        None
    }

    /// Opens the inspector's evidence pointer number `n` (1-based) at its file.
    fn open_evidence(&mut self, n: usize) {
        let Overlay::Inspector(inspector) = &self.overlay else { return };
        let Some(pointer) = n.checked_sub(1).and_then(|i| inspector.evidence.get(i)) else {
            self.notice = Some(format!(
                "this verdict has {} evidence pointer(s); press 1–{} to open one",
                inspector.evidence.len(),
                inspector.evidence.len().max(1)
            ));
            return;
        };
        match super::evidence::open(
            pointer,
            inspector.worktree.as_deref(),
            inspector.commit.as_deref(),
        ) {
            Ok(source) => {
                let Overlay::Inspector(inspector) =
                    std::mem::replace(&mut self.overlay, Overlay::None)
                else {
                    return;
                };
                self.overlay = Overlay::Source(Box::new((source, inspector)));
            }
            Err(why) => self.notice = Some(why),
        }
    }

    /// The first row of the worker stream (as filtered) from `start` on, or back from it,
    /// that contains `query`, ignoring case — rows the replay has not reached included, since
    /// where each event belongs is known for the whole log.
    fn find_text(&mut self, query: &str, start: usize, forward: bool) -> Option<usize> {
        let needle = query.to_lowercase();
        let App { view, index, filter, .. } = self;
        let rows = view.whole_stream(*filter);
        let mut matches =
            |pos: &usize| index.fetch(*pos).is_ok_and(|e| row(&e).to_lowercase().contains(&needle));
        if forward {
            rows[rows.partition_point(|p| *p < start)..].iter().copied().find(|p| matches(p))
        } else {
            rows[..rows.partition_point(|p| *p <= start)].iter().rev().copied().find(|p| matches(p))
        }
    }

    /// Searches for `query` from `start`, and shows the row it lands on in the worker pane.
    fn search_from(&mut self, query: &str, start: usize, forward: bool) -> io::Result<()> {
        query.clone_into(&mut self.search.query);
        let mut wrapped = false;
        let found = match self.find_text(query, start, forward) {
            Some(pos) => Some(pos),
            None if self.total() > 0 => {
                wrapped = true;
                let from = if forward { 0 } else { self.total() - 1 };
                self.find_text(query, from, forward)
            }
            None => None,
        };
        let Some(pos) = found else {
            self.notice = Some(format!("no row contains “{query}”"));
            return Ok(());
        };
        if pos >= self.view.applied() {
            self.goto(pos)?;
        }
        self.search.at = Some(pos);
        self.focus = Pane::Worker;
        let i = self.view.stream(self.filter).partition_point(|p| *p < pos);
        let from_newest = self.view.stream(self.filter).len().saturating_sub(i + 1);
        self.stream_back = from_newest.saturating_sub(self.worker_height / 2);
        self.notice = Some(if wrapped {
            let end = if forward { "top" } else { "end" };
            format!("“{query}”: wrapped to the {end}; n next, N previous")
        } else {
            format!("“{query}”: n next, N previous")
        });
        Ok(())
    }

    /// A key for the open search box: Enter searches, Esc cancels, anything else edits.
    pub fn search_key(&mut self, key: crossterm::event::KeyEvent) -> io::Result<()> {
        use crossterm::event::KeyCode;
        let Overlay::Search(text) = &mut self.overlay else { return Ok(()) };
        match key.code {
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Enter => {
                let query = text.lines().join(" ").trim().to_owned();
                self.overlay = Overlay::None;
                if !query.is_empty() {
                    let start = self.prepared.worker.first().map_or(0, |(p, _)| *p);
                    self.search_from(&query, start, true)?;
                }
            }
            _ => {
                text.input(key);
            }
        }
        Ok(())
    }

    /// Repeats the last search from the row it landed on.
    fn search_again(&mut self, forward: bool) -> io::Result<()> {
        if self.search.query.is_empty() {
            self.notice = Some("nothing to repeat: / searches first".into());
            return Ok(());
        }
        let query = self.search.query.clone();
        let from = self.search.at.or_else(|| self.prepared.worker.last().map(|(p, _)| *p));
        let last = self.total().saturating_sub(1);
        let start = match (from, forward) {
            (Some(p), true) if p < last => p + 1,
            (Some(_) | None, true) => 0,
            (Some(0) | None, false) => last,
            (Some(p), false) => p - 1,
        };
        self.search_from(&query, start, forward)
    }

    /// Moves the cursor so `tenths`×10 % of the log is replayed.
    fn seek_percent(&mut self, tenths: u8) -> io::Result<()> {
        let total = self.total();
        let pos = (total * usize::from(tenths) / 10).min(total.saturating_sub(1));
        if total > 0 {
            self.goto(pos)?;
        }
        Ok(())
    }

    /// Moves a scrolling pane's view by `delta` lines.
    fn scroll_by(&mut self, pane: Pane, delta: i32) {
        let s = &mut self.scroll[pane.index()];
        *s = s.saturating_add_signed(delta as i16);
    }

    /// Does what a key asked. Returns whether the screen needs drawing.
    pub fn act(&mut self, action: Action) -> io::Result<bool> {
        self.notice = None;
        match action {
            Action::Quit if self.running_here() => self.overlay = Overlay::QuitPrompt,
            Action::Quit => self.quit = true,
            Action::Pause | Action::Step if !self.live => {
                self.notice = Some("pause and step steer a live run; this is a replay".into());
            }
            Action::Pause => {
                let op = if self.paused() { Op::Resume } else { Op::Pause };
                if self.send(op, None) {
                    self.notice = Some(if op == Op::Pause {
                        "pausing at the next task boundary".into()
                    } else {
                        "resuming".into()
                    });
                }
            }
            Action::Step => {
                if self.send(Op::Step, None) {
                    self.notice = Some("one more task, then a pause".into());
                }
            }
            Action::Help => {
                self.overlay = if matches!(self.overlay, Overlay::Help(_)) {
                    Overlay::None
                } else {
                    Overlay::Help(0)
                };
            }
            Action::Approve
            | Action::Reject
            | Action::ForceAccept
            | Action::RetryEval
            | Action::Skip
            | Action::FailTask
            | Action::Note
                if !self.live =>
            {
                self.notice = Some("decisions and notes steer a live run; this is a replay".into());
            }
            Action::Approve => self.open_editor(Op::Approve, "Approve {task} — why?"),
            Action::Reject => {
                self.open_editor(Op::Reject, "Reject {task} — guidance for its next attempt");
            }
            Action::ForceAccept => {
                self.open_editor(Op::ForceAccept, "Accept {task} below the bar — why?");
            }
            Action::Note => self.open_editor(Op::Note, "A note for {task}'s next attempt"),
            Action::Skip => self.open_editor(Op::Skip, "Skip {task} — why?"),
            Action::FailTask => self.open_editor(Op::Fail, "Fail {task} — why? (the run stops)"),
            Action::RetryEval => match self.decision_task() {
                Some(task) => {
                    if self.deliver(&command(Op::RetryEval, Some(task.clone()), None, None)) {
                        self.notice = Some(format!(
                            "sent retry_eval for {task}; the run asks the evaluator again at the next boundary"
                        ));
                    }
                }
                None => {
                    self.notice = Some(
                        "no task is held for the operator: Tab to the plan and select one first"
                            .into(),
                    );
                }
            },
            Action::Focus => self.focus = self.focus.after(1),
            Action::FocusBack => self.focus = self.focus.after(Pane::ALL.len() - 1),
            Action::Zoom => self.zoom = !self.zoom,
            Action::Filter => {
                self.filter = self.filter.next();
                self.stream_back = 0;
                self.notice =
                    Some(format!("worker stream: {} (f for the next)", self.filter.name()));
            }
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len().max(1);
                self.notice = Some(format!("theme: {} (t for the next)", self.theme().name));
            }
            Action::Mouse => {
                self.mouse = !self.mouse;
                self.notice = Some(if self.mouse {
                    "mouse on: the wheel scrolls, a click focuses (m gives selection back)".into()
                } else {
                    "mouse off: the terminal selects text again".into()
                });
            }
            Action::Search => {
                let mut text = tui_textarea::TextArea::default();
                text.set_placeholder_text("a tool, a path, a word · Enter searches · Esc cancels");
                if !self.search.query.is_empty() {
                    text.insert_str(&self.search.query);
                }
                self.overlay = Overlay::Search(Box::new(text));
            }
            Action::SearchNext => self.search_again(true)?,
            Action::SearchPrev => self.search_again(false)?,
            Action::Seek(n) if matches!(self.overlay, Overlay::Inspector(_)) => {
                self.open_evidence(usize::from(n));
            }
            Action::Seek(tenths) => self.seek_percent(tenths)?,
            Action::Down | Action::Up
                if matches!(self.overlay, Overlay::Inspector(_) | Overlay::Source(_)) =>
            {
                let scroll = match &mut self.overlay {
                    Overlay::Inspector(i) => &mut i.scroll,
                    Overlay::Source(s) => &mut s.0.scroll,
                    _ => return Ok(true),
                };
                *scroll = if action == Action::Down {
                    scroll.saturating_add(1)
                } else {
                    scroll.saturating_sub(1)
                };
            }
            Action::Close if matches!(self.overlay, Overlay::Source(_)) => {
                if let Overlay::Source(source) = std::mem::replace(&mut self.overlay, Overlay::None)
                {
                    self.overlay = Overlay::Inspector(source.1);
                }
            }
            Action::Down if matches!(self.overlay, Overlay::Help(_)) => {
                if let Overlay::Help(top) = &mut self.overlay {
                    *top = (*top + 1).min(super::keymap::BINDINGS.len() as u16);
                }
            }
            Action::Up if matches!(self.overlay, Overlay::Help(_)) => {
                if let Overlay::Help(top) = &mut self.overlay {
                    *top = top.saturating_sub(1);
                }
            }
            Action::Down => match self.focus {
                Pane::Plan => {
                    self.plan_follow = false;
                    self.plan_selected += 1;
                    self.ledger_selected = None;
                }
                Pane::Worker => self.stream_back = self.stream_back.saturating_sub(1),
                Pane::Ledger => {
                    let last = self.prepared.side.ledger.len().saturating_sub(1);
                    self.ledger_selected =
                        self.ledger_selected.map(|i| (i + 1).min(last)).filter(|i| *i < last);
                }
                pane => self.scroll_by(pane, 1),
            },
            Action::Up => match self.focus {
                Pane::Plan => {
                    self.plan_follow = false;
                    self.plan_selected = self.plan_selected.saturating_sub(1);
                    self.ledger_selected = None;
                }
                Pane::Worker => {
                    self.stream_back = (self.stream_back + 1)
                        .min(self.view.stream(self.filter).len().saturating_sub(1));
                }
                Pane::Ledger => {
                    let last = self.prepared.side.ledger.len().saturating_sub(1);
                    self.ledger_selected =
                        Some(self.ledger_selected.unwrap_or(last).saturating_sub(1));
                }
                pane => self.scroll_by(pane, -1),
            },
            Action::Top => match self.focus {
                Pane::Plan => {
                    self.plan_follow = false;
                    self.plan_selected = 0;
                }
                Pane::Worker => {
                    self.stream_back = self.view.stream(self.filter).len().saturating_sub(1);
                }
                Pane::Ledger => self.ledger_selected = Some(0),
                pane => self.scroll[pane.index()] = 0,
            },
            Action::Bottom => match self.focus {
                Pane::Plan => self.plan_follow = true,
                Pane::Worker => {
                    self.stream_back = 0;
                    if self.live {
                        self.apply_until(self.total())?;
                    }
                }
                Pane::Ledger => self.ledger_selected = None,
                pane => self.scroll[pane.index()] = u16::MAX,
            },
            Action::PlayPause => {
                if self.at_end() {
                    self.seek(0)?;
                }
                self.clock.playing = !self.clock.playing;
            }
            Action::Faster => self.clock.faster(),
            Action::Slower => self.clock.slower(),
            Action::StepForward => {
                self.clock.playing = false;
                self.apply_until(self.view.applied() + 1)?;
                if let Some(t) = self.view.applied().checked_sub(1).and_then(|i| self.times.get(i))
                {
                    self.clock.now_ms = *t as f64;
                }
            }
            Action::StepBack => {
                self.clock.playing = false;
                self.seek(self.view.applied().saturating_sub(1))?;
            }
            Action::NextFailure => {
                let found = self.view.timeline().find(self.view.applied(), true, is_failure);
                self.jump(found, "later failure")?;
            }
            Action::PrevFailure => {
                let found = self
                    .view
                    .applied()
                    .checked_sub(2)
                    .and_then(|start| self.view.timeline().find(start, false, is_failure));
                self.jump(found, "earlier failure")?;
            }
            Action::NextVerdict => {
                let found = self.view.timeline().find(self.view.applied(), true, is_verdict);
                self.jump(found, "later verdict")?;
            }
            Action::PrevVerdict => {
                let found = self
                    .view
                    .applied()
                    .checked_sub(2)
                    .and_then(|start| self.view.timeline().find(start, false, is_verdict));
                self.jump(found, "earlier verdict")?;
            }
            Action::NextTask => {
                let found = self.find_kind(self.view.applied(), true, "context_reset");
                self.jump(found, "later task start")?;
            }
            Action::PrevTask => {
                let found = self
                    .view
                    .applied()
                    .checked_sub(2)
                    .and_then(|start| self.find_kind(start, false, "context_reset"));
                self.jump(found, "earlier task start")?;
            }
            Action::Inspect => self.inspect(),
            Action::Close => {
                self.overlay = Overlay::None;
                self.zoom = false;
            }
        }
        Ok(true)
    }

    /// A mouse event, when the mouse is captured: the wheel scrolls the pane under the
    /// pointer, a click focuses it.
    pub fn mouse_event(
        &mut self,
        m: crossterm::event::MouseEvent,
        area: ratatui::layout::Rect,
    ) -> io::Result<bool> {
        use crossterm::event::{MouseButton, MouseEventKind};
        if !matches!(self.overlay, Overlay::None) {
            return Ok(false);
        }
        let Some(pane) = Areas::new(area, self.focus, self.zoom).pane_at(m.column, m.row) else {
            return Ok(false);
        };
        let action = match m.kind {
            MouseEventKind::ScrollUp => Action::Up,
            MouseEventKind::ScrollDown => Action::Down,
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                return Ok(true);
            }
            _ => return Ok(false),
        };
        self.focus = pane;
        for _ in 0..3 {
            self.act(action)?;
        }
        Ok(true)
    }

    /// The task a decision is about: the one the operator picked in the plan, else the one
    /// waiting for the operator.
    fn decision_task(&self) -> Option<String> {
        let follow = self.plan_follow;
        let selected = self.plan_selected;
        let fold = self.view.fold();
        if !follow {
            return fold.task_line(selected).map(|t| t.id.to_owned());
        }
        (0..fold.task_count())
            .filter_map(|i| fold.task_line(i))
            .find(|t| t.state == "needs_operator")
            .map(|t| t.id.to_owned())
    }

    /// Opens the editor for an operator command; a decision with no task to be about is refused
    /// here, rather than typed and then refused by the run.
    fn open_editor(&mut self, op: Op, title: &str) {
        // `K` is about the task at work when no other is picked or waiting.
        let at_work = || self.view.current_task().map(str::to_owned);
        let task = self.decision_task().or_else(|| if op == Op::Fail { at_work() } else { None });
        if task.is_none() && op != Op::Note {
            self.notice = Some(
                "no task is waiting for a decision: Tab to the plan and select one first".into(),
            );
            return;
        }
        let title = task.as_deref().map_or_else(
            || "A note for the worker, read when its next task starts".into(),
            |who| title.replace("{task}", who),
        );
        let mut text = tui_textarea::TextArea::default();
        text.set_placeholder_text("Enter sends, Esc cancels");
        self.overlay = Overlay::Editor(Box::new(Editor { op, task, title, text }));
    }

    /// A key for the open editor: Enter sends the command, Esc cancels, anything else edits.
    pub fn edit(&mut self, key: crossterm::event::KeyEvent) -> io::Result<()> {
        use crossterm::event::KeyCode;
        let Overlay::Editor(editor) = &mut self.overlay else { return Ok(()) };
        match key.code {
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Enter => {
                let text = editor.text.lines().join(" ").trim().to_owned();
                if text.is_empty() {
                    self.notice = Some("type the reason (or note) first; Esc cancels".into());
                    return Ok(());
                }
                let (op, task) = (editor.op, editor.task.clone());
                let (reason, body) = match op {
                    Op::Note => (None, Some(text)),
                    Op::Reject => (Some(text.clone()), Some(text)),
                    _ => (Some(text), None),
                };
                if self.deliver(&command(op, task, reason, body)) {
                    let when = if op.is_urgent() {
                        "the run acts on it at once"
                    } else {
                        "the run applies it at the next task boundary"
                    };
                    self.notice = Some(format!("sent {}; {when}", op.as_str()));
                }
                self.overlay = Overlay::None;
            }
            _ => {
                editor.text.input(key);
            }
        }
        Ok(())
    }

    /// Whether a run holds the session, checked at most every two seconds (the lock file and
    /// the holder's pid).
    fn run_alive(&mut self) -> bool {
        let stale = self.lock_checked.is_none_or(|(at, _)| at.elapsed() > LOCK_RECHECK);
        if stale {
            let alive = self.running_here() || crate::session::lock::is_locked(&self.dir);
            self.lock_checked = Some((std::time::Instant::now(), alive));
        }
        self.lock_checked.is_some_and(|(_, alive)| alive)
    }

    /// Whether the loop runs in this process and has not finished.
    pub fn running_here(&self) -> bool {
        self.run_active.as_ref().is_some_and(|a| a.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Whether the loop has applied a pause (and no resume or step since).
    pub fn paused(&self) -> bool {
        self.view.operator() == Some("pause")
    }

    /// Sends an operator command through `control.jsonl`, as `harrow control` does.
    pub fn send(&mut self, op: Op, reason: Option<String>) -> bool {
        let sent = self.deliver(&command(op, None, reason, None));
        if sent {
            self.pending = Some(op);
        }
        sent
    }

    /// Appends a command to the session's control file. A failure (the folder was removed,
    /// the disk is full) is said on screen and ends nothing.
    fn deliver(&mut self, cmd: &control::Command) -> bool {
        match control::send(&self.dir, cmd) {
            Ok(()) => true,
            Err(e) => {
                self.notice = Some(format!(
                    "could not send {}: {e} (is the session folder still there?)",
                    cmd.op.as_str()
                ));
                false
            }
        }
    }

    /// Answers the quit prompt: stop the run at the next boundary, leave it running, or stay.
    pub fn answer_quit(&mut self, stop: Option<bool>) -> io::Result<()> {
        self.overlay = Overlay::None;
        match stop {
            Some(true) if self.send(Op::Stop, Some("the operator quit the console".into())) => {
                self.quit = true;
            }
            Some(false) => self.quit = true,
            _ => {}
        }
        Ok(())
    }

    /// The run mode for the status line.
    pub fn live_mode(&self) -> String {
        let (at, total) = self.position();
        if at < total {
            return format!("WATCH — {} newer (G)", total - at);
        }
        if let Some(reason) = self.view.fold().ended() {
            return self.ended_label(reason);
        }
        // Only harrow holds a lock while it runs; a live Tilth log has none to look at.
        let harrow = self.view.fold().is_harrow();
        if self.live && harrow && self.lock_checked.is_some_and(|(_, alive)| !alive) && total > 0 {
            return format!("CRASHED: no run holds it (harrow resume {})", self.id);
        }
        let applied = self.view.operator();
        let pausing = || match self.view.current_task() {
            Some(task) => format!("pausing after {task}"),
            None => "pausing at the next task boundary".into(),
        };
        match (self.pending, applied) {
            (Some(Op::Pause), Some(op)) if op != "pause" => pausing(),
            (Some(Op::Pause), None) => pausing(),
            _ if applied == Some("pause") => "PAUSED (p resumes)".into(),
            _ if self.running_here() => "LIVE".into(),
            _ => "WATCH".into(),
        }
    }

    /// How the run ended, for the status line: never "LIVE" once the loop is gone.
    fn ended_label(&self, reason: &str) -> String {
        let fold = self.view.fold();
        let task_in = |state: &str| {
            (0..fold.task_count())
                .filter_map(|i| fold.task_line(i))
                .find(|t| t.state == state)
                .map(|t| t.id.to_owned())
        };
        match reason {
            "all_done" => "DONE".into(),
            "needs_operator" => match task_in("needs_operator").or_else(|| task_in("failed")) {
                Some(task) => format!("HELD: {task} waits for you (harrow resume {})", self.id),
                None => format!("HELD: waits for you (harrow resume {})", self.id),
            },
            _ => match task_in("failed") {
                Some(task) => format!("FAILED {task} ({reason})"),
                None => format!("STOPPED: {reason} (resumable: harrow resume {})", self.id),
            },
        }
    }

    /// Fetches what the panes show at this terminal size, so rendering needs no I/O. What did
    /// not change since the last frame is kept rather than read again: worker rows by their
    /// event, the side panes while the selected task's trail stays the same.
    pub fn prepare(&mut self, area: ratatui::layout::Rect) {
        let areas = Areas::new(area, self.focus, self.zoom);
        let fold = self.view.fold();
        if self.plan_follow
            && let Some(i) = self.view.current_task().and_then(|c| fold.task_position(c))
        {
            self.plan_selected = i;
        }
        self.plan_selected = self.plan_selected.min(fold.task_count().saturating_sub(1));
        let task = fold.task_line(self.plan_selected).map(|t| t.id.to_owned());
        let unreviewed =
            fold.task_line(self.plan_selected).is_some_and(|t| t.state == "done_unreviewed");
        let mut previous = std::mem::take(&mut self.prepared);
        if task != previous.task {
            self.ledger_selected = None;
            self.scroll[Pane::Exchange.index()] = 0;
            self.scroll[Pane::Validators.index()] = 0;
        }
        let worker = self.worker_rows(areas.inner_height(Pane::Worker), &mut previous.worker);
        let trail = task.as_deref().and_then(|t| self.view.trail(t)).unwrap_or_default();
        let key = SideKey {
            task: task.clone(),
            case: trail.cases.last().copied(),
            verdict: trail.verdicts.last().copied(),
            validators: trail.validators.last().copied(),
            ledger: trail.ledger.last().copied(),
            unreviewed,
        };
        let side = if previous.side_key.as_ref() == Some(&key) {
            previous.side
        } else {
            self.side_panes(&trail, unreviewed)
        };
        self.clamp_scroll(&areas, &side);
        let width = usize::from(areas.timeline.width.saturating_sub(8));
        let entries = self.index.entries();
        let applied = self.view.applied();
        let timeline =
            self.view.timeline_mut().cells(entries.len(), applied, width, |p| entries[p].task);
        let room = areas.context.map_or(0, |r| usize::from(r.width.saturating_sub(30)));
        let pressure = self.view.pressure();
        let context = pressure[pressure.len().saturating_sub(room)..]
            .iter()
            .map(|p| (p.prompt_tokens, p.band))
            .collect();
        let run_alive = self.live && self.run_alive();
        let waiting = self.view.waiting().filter(|w| run_alive || w.what != WORKER_WAIT);
        let waiting = waiting.map(|w| match (run_alive, w.since_ms) {
            (true, Some(since)) => {
                let secs = (jiff::Timestamp::now().as_millisecond() - since).max(0) / 1000;
                format!("{} {secs} s", w.what)
            }
            _ => w.what.clone(),
        });
        self.prepared = Prepared {
            worker,
            task,
            side,
            side_key: Some(key),
            timeline,
            context,
            run_alive,
            waiting,
        };
    }

    /// The worker stream's rows that fit in `height` lines, taking each from `previous` when
    /// the last frame already showed it.
    fn worker_rows(
        &mut self,
        height: usize,
        previous: &mut [(usize, String)],
    ) -> Vec<(usize, String)> {
        self.worker_height = height;
        let stream = self.view.stream(self.filter);
        self.stream_back = self.stream_back.min(stream.len().saturating_sub(height));
        let end = stream.len().saturating_sub(self.stream_back);
        let positions = stream[end.saturating_sub(height)..end].to_vec();
        positions
            .into_iter()
            .map(|pos| match previous.binary_search_by_key(&pos, |(p, _)| *p) {
                Ok(i) => (pos, std::mem::take(&mut previous[i].1)),
                Err(_) => match self.index.fetch(pos) {
                    Ok(event) => (pos, row(&event)),
                    Err(e) => (pos, format!("  (event {pos} cannot be read: {e})")),
                },
            })
            .collect()
    }

    /// The Exchange, Validators and Ledger text for a task's trail. `unreviewed`: the task was
    /// accepted with review switched off, so no verdict is coming.
    fn side_panes(&mut self, trail: &Trail, unreviewed: bool) -> SidePanes {
        let mut fetch = |pos: Option<&usize>| pos.and_then(|p| self.index.fetch(*p).ok());
        let case_event = fetch(trail.cases.last());
        let verdict_event = fetch(trail.verdicts.last());
        let validators_event = fetch(trail.validators.last());
        let decision = fetch(trail.ledger.last().filter(|p| trail.verdicts.last() < Some(*p)));
        let case = match case_event.as_ref().map(|e| &e.payload) {
            Some(Payload::ToolCall(c)) => {
                case_lines(c.args.as_ref().unwrap_or(&serde_json::Value::Null))
            }
            _ => vec!["no case submitted yet".into()],
        };
        let awaiting = trail.cases.last() > trail.verdicts.last();
        // A case whose validators failed is never judged: it went back to the worker.
        let checks_failed = awaiting
            && trail.validators.last() > trail.cases.last()
            && matches!(
                validators_event.as_ref().map(|e| &e.payload),
                Some(Payload::ValidatorRun(run)) if run.passed == Some(false)
            );
        let pending = if checks_failed {
            "not judged: its validators failed, so it went back to the worker"
        } else {
            "no verdict on this case yet"
        };
        let mut verdict = match verdict_event.as_ref().map(|e| &e.payload) {
            Some(Payload::Verdict(v)) if !awaiting => verdict_lines(v),
            Some(Payload::Verdict(v)) => {
                let mut lines = vec![format!("{pending}; the last verdict was:")];
                lines.extend(verdict_lines(v));
                lines
            }
            _ if unreviewed => {
                vec!["not reviewed: the run had review switched off (--no-eval)".into()]
            }
            _ if awaiting => vec![pending.into()],
            _ => vec!["no verdict yet".into()],
        };
        if let Some(Payload::OperatorAction(a)) = decision.as_ref().map(|e| &e.payload) {
            let said = format!(
                "OPERATOR: {} — {}",
                a.action.as_deref().unwrap_or("?"),
                a.reason.as_deref().or(a.note.as_deref()).unwrap_or("")
            );
            verdict.splice(0..0, [said, String::new()]);
        }
        let validators = match validators_event.as_ref().map(|e| &e.payload) {
            Some(Payload::ValidatorRun(run)) => {
                let mut lines = vec![format!(
                    "run {} on this task: {}",
                    trail.validators.len(),
                    if run.passed == Some(true) { "passed" } else { "FAILED" }
                )];
                lines.extend(validator_detail(run));
                lines
            }
            _ if self.tilth => vec!["Tilth recorded no validator run for this task".into()],
            _ => vec!["no validator run yet".into()],
        };
        let mut attempt = 0;
        let ledger = trail
            .ledger
            .iter()
            .filter_map(|p| {
                let e = self.index.fetch(*p).ok()?;
                if matches!(e.payload, Payload::Verdict(_)) {
                    attempt += 1;
                }
                Some((*p, ledger_row(&e, attempt)))
            })
            .collect();
        SidePanes { case, verdict, validators, ledger }
    }

    /// Keeps the Exchange and Validators scrolled no further than their text goes.
    fn clamp_scroll(&mut self, areas: &Areas, side: &SidePanes) {
        let clamp = |rows: usize, rect: ratatui::layout::Rect| {
            u16::try_from(rows.saturating_sub(usize::from(rect.height.saturating_sub(2))))
                .unwrap_or(u16::MAX)
        };
        if let Some(r) = areas.rect(Pane::Exchange) {
            let w = r.width.saturating_sub(2);
            let rows = if w >= 70 {
                wrapped_rows(&side.case, w / 2).max(wrapped_rows(&side.verdict, w / 2))
            } else {
                wrapped_rows(&side.case, w) + 2 + wrapped_rows(&side.verdict, w)
            };
            let s = &mut self.scroll[Pane::Exchange.index()];
            *s = (*s).min(clamp(rows, r));
        }
        if let Some(r) = areas.rect(Pane::Validators) {
            let rows = wrapped_rows(&side.validators, r.width.saturating_sub(2));
            let s = &mut self.scroll[Pane::Validators.index()];
            *s = (*s).min(clamp(rows, r));
        }
    }

    /// How far a pane that scrolls by line is scrolled.
    pub fn scroll_of(&self, pane: Pane) -> u16 {
        self.scroll[pane.index()]
    }

    /// The event under the cursor, for the status line.
    pub fn position(&self) -> (usize, usize) {
        (self.view.applied(), self.total())
    }
}
