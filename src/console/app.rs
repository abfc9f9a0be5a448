//! The console's state and its update: actions and clock ticks in, view state out. No terminal
//! here, so every behaviour is testable; rendering reads what [`App::prepare`] left ready.

use super::describe::row;
use super::inspector::{self, Inspector};
use super::keymap::Action;
use super::view::{Clock, View, compressed_times};
use crate::harness::control::{self, Op};
use crate::session::fact::Fact;
use crate::session::index::EventIndex;
use crate::session::scan::scan;
use crate::session::writer::EVENTS_FILE;
use std::io;
use std::path::Path;

/// Idle gaps in a replay are shortened to this.
const MAX_GAP_MS: i64 = 2_000;

const VERDICTS: &[&str] = &["evaluator_verdict", "judge_verdict"];
const FAILURES: &[&str] = &["evaluator_verdict", "judge_verdict", "validator_run", "task_failed"];

/// A rejection, failed validators, or a failed task.
fn is_failure(f: &Fact<'_>) -> bool {
    match f.kind() {
        "evaluator_verdict" => f.payload.verdict.get() != Some("accept"),
        "judge_verdict" => f.payload.accept.0 != Some(true),
        "validator_run" => f.payload.passed.0 == Some(false),
        _ => true,
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
}

/// An operator command being written: its reason, guidance or note in a text editor.
#[derive(Debug)]
pub struct Editor {
    pub op: Op,
    pub task: Option<String>,
    pub title: String,
    pub text: tui_textarea::TextArea<'static>,
}

/// Which pane has the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Plan,
    Stream,
}

/// Everything the console shows, and where the operator is in it.
#[derive(Debug)]
pub struct App {
    pub id: String,
    index: EventIndex,
    /// Replay time of each event, in milliseconds from the first.
    times: Vec<i64>,
    pub view: View,
    pub clock: Clock,
    pub focus: Pane,
    pub plan_selected: usize,
    /// Rows scrolled back from the newest; 0 follows the newest.
    pub stream_back: usize,
    pub quit: bool,
    /// The stream rows on screen, fetched by [`App::prepare`].
    pub rows: Vec<String>,
    /// What covers the panes, if anything: at most one thing at a time.
    pub overlay: Overlay,
    /// A one-line answer to the last jump or inspection ("no later failure").
    pub notice: Option<String>,
    /// Watching a session that may still grow: new events are applied as they arrive.
    pub live: bool,
    dir: std::path::PathBuf,
    /// Set when this process runs the loop: true while it runs.
    pub run_active: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// A pause or resume sent and not yet applied by the loop.
    pub pending: Option<Op>,
}

impl App {
    /// Opens a session folder for replay, paused at its first event or playing from it.
    pub fn open(dir: &Path, id: &str, speed: f64) -> io::Result<App> {
        let path = dir.join(EVENTS_FILE);
        let index = EventIndex::build(&path)?;
        let mut stamps = Vec::with_capacity(index.len());
        let mut last = 0i64;
        scan(&path, |_, f| {
            let ms =
                f.ts.get()
                    .and_then(crate::session::timestamp::parse)
                    .map_or(last, jiff::Timestamp::as_millisecond);
            last = ms;
            stamps.push(ms);
        })?;
        stamps.truncate(index.len());
        let times = compressed_times(&stamps, MAX_GAP_MS);
        let mut app = App {
            id: id.to_owned(),
            index,
            times,
            view: View::new(id),
            clock: Clock::new(speed),
            focus: Pane::Stream,
            plan_selected: 0,
            stream_back: 0,
            quit: false,
            rows: Vec::new(),
            overlay: Overlay::None,
            notice: None,
            live: false,
            dir: dir.to_path_buf(),
            run_active: None,
            pending: None,
        };
        app.advance_to_clock()?;
        Ok(app)
    }

    /// Opens a session to watch: everything so far is applied, and what the tailer delivers
    /// next is applied as it arrives.
    pub fn open_live(dir: &Path, id: &str) -> io::Result<App> {
        let mut app = App::open(dir, id, f64::INFINITY)?;
        while !app.at_end() {
            app.apply_next()?;
        }
        app.clock.playing = false;
        app.live = true;
        Ok(app)
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
        for (at, line) in lines {
            if self.index.push_line(at, &line) {
                let last = self.times.last().copied().unwrap_or(0);
                self.times.push(last);
                changed = true;
            }
        }
        if following {
            while !self.at_end() {
                self.apply_next()?;
            }
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
        self.view.applied >= self.total()
    }

    fn apply_next(&mut self) -> io::Result<()> {
        let pos = self.view.applied;
        let Some(entry) = self.index.entries().get(pos).copied() else { return Ok(()) };
        let bytes = self.index.read_raw(&entry)?;
        match Fact::decode(&bytes) {
            Ok(fact) => self.view.apply(pos, &fact),
            Err(_) => self.view.applied = pos + 1,
        }
        Ok(())
    }

    /// Applies every event whose replay time has come. Returns whether anything changed.
    fn advance_to_clock(&mut self) -> io::Result<bool> {
        let before = self.view.applied;
        while !self.at_end()
            && self.times.get(self.view.applied).is_some_and(|t| *t as f64 <= self.clock.now_ms)
        {
            self.apply_next()?;
        }
        if self.at_end() {
            self.clock.playing = false;
        }
        Ok(self.view.applied != before)
    }

    /// Moves replay time on by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) -> io::Result<bool> {
        self.clock.tick(real_ms);
        self.advance_to_clock()
    }

    /// Folds again from the start up to `target` events: how a replay goes back.
    fn seek(&mut self, target: usize) -> io::Result<()> {
        self.view = View::new(&self.id);
        while self.view.applied < target.min(self.total()) {
            self.apply_next()?;
        }
        self.clock.now_ms =
            target.checked_sub(1).and_then(|i| self.times.get(i)).map_or(0.0, |t| *t as f64);
        Ok(())
    }

    /// Moves the replay cursor so the event at `pos` is the last applied, and pauses there.
    fn goto(&mut self, pos: usize) -> io::Result<()> {
        let target = (pos + 1).min(self.total());
        if target >= self.view.applied {
            while self.view.applied < target {
                self.apply_next()?;
            }
        } else {
            self.seek(target)?;
        }
        self.clock.playing = false;
        self.clock.now_ms = self.times.get(pos).map_or(self.clock.now_ms, |t| *t as f64);
        self.stream_back = 0;
        Ok(())
    }

    /// The first event from `start` (forward) or at or before it (backward) whose kind is one
    /// of `kinds` and which passes `test`.
    fn find(
        &mut self,
        start: usize,
        forward: bool,
        kinds: &[&str],
        test: fn(&Fact<'_>) -> bool,
    ) -> io::Result<Option<usize>> {
        let n = self.total();
        if n == 0 {
            return Ok(None);
        }
        let positions: Box<dyn Iterator<Item = usize>> =
            if forward { Box::new(start..n) } else { Box::new((0..=start.min(n - 1)).rev()) };
        for pos in positions {
            let entry = self.index.entries()[pos];
            if !kinds.contains(&self.index.kind_name(entry.kind)) {
                continue;
            }
            let bytes = self.index.read_raw(&entry)?;
            if Fact::decode(&bytes).is_ok_and(|f| test(&f)) {
                return Ok(Some(pos));
            }
        }
        Ok(None)
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

    /// Opens the inspector on the last verdict at or before the cursor.
    fn inspect(&mut self) -> io::Result<()> {
        let Some(cursor) = self.view.applied.checked_sub(1) else {
            self.notice = Some("no verdict yet".into());
            return Ok(());
        };
        let Some(pos) = self.find(cursor, false, VERDICTS, |_| true)? else {
            self.notice = Some("no verdict at or before the cursor".into());
            return Ok(());
        };
        let Ok(verdict) = self.index.fetch(pos) else { return Ok(()) };
        let task = self.index.entries()[pos].task;
        let wanted = ["evaluator_verdict", "judge_verdict", "tool_call", "validator_run"];
        let mut earlier = Vec::new();
        for p in 0..pos {
            let entry = self.index.entries()[p];
            if entry.task != task || !wanted.contains(&self.index.kind_name(entry.kind)) {
                continue;
            }
            if let Ok(e) = self.index.fetch(p) {
                earlier.push(e);
            }
        }
        self.overlay = Overlay::Inspector(inspector::build(&verdict, &earlier));
        Ok(())
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
                self.send(op, None)?;
                self.notice = Some(if op == Op::Pause {
                    "pausing at the next task boundary".into()
                } else {
                    "resuming".into()
                });
            }
            Action::Step => {
                self.send(Op::Step, None)?;
                self.notice = Some("one more task, then a pause".into());
            }
            Action::Help => {
                self.overlay = if matches!(self.overlay, Overlay::Help(_)) {
                    Overlay::None
                } else {
                    Overlay::Help(0)
                };
            }
            Action::Approve | Action::Reject | Action::ForceAccept | Action::Note if !self.live => {
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
            Action::Focus => {
                self.focus = if self.focus == Pane::Plan { Pane::Stream } else { Pane::Plan };
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
                Pane::Plan => self.plan_selected += 1,
                Pane::Stream => self.stream_back = self.stream_back.saturating_sub(1),
            },
            Action::Up => match self.focus {
                Pane::Plan => self.plan_selected = self.plan_selected.saturating_sub(1),
                Pane::Stream => {
                    self.stream_back =
                        (self.stream_back + 1).min(self.view.stream.len().saturating_sub(1));
                }
            },
            Action::Top => match self.focus {
                Pane::Plan => self.plan_selected = 0,
                Pane::Stream => self.stream_back = self.view.stream.len().saturating_sub(1),
            },
            Action::Bottom => match self.focus {
                Pane::Plan => self.plan_selected = usize::MAX,
                Pane::Stream => {
                    self.stream_back = 0;
                    while self.live && !self.at_end() {
                        self.apply_next()?;
                    }
                }
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
                self.apply_next()?;
                if let Some(t) = self.view.applied.checked_sub(1).and_then(|i| self.times.get(i)) {
                    self.clock.now_ms = *t as f64;
                }
            }
            Action::StepBack => {
                self.clock.playing = false;
                self.seek(self.view.applied.saturating_sub(1))?;
            }
            Action::NextFailure => {
                let found = self.find(self.view.applied, true, FAILURES, is_failure)?;
                self.jump(found, "later failure")?;
            }
            Action::NextVerdict => {
                let found = self.find(self.view.applied, true, VERDICTS, |_| true)?;
                self.jump(found, "later verdict")?;
            }
            Action::PrevVerdict => {
                let found = match self.view.applied.checked_sub(2) {
                    Some(start) => self.find(start, false, VERDICTS, |_| true)?,
                    None => None,
                };
                self.jump(found, "earlier verdict")?;
            }
            Action::NextTask => {
                let found = self.find(self.view.applied, true, &["context_reset"], |_| true)?;
                self.jump(found, "later task start")?;
            }
            Action::PrevTask => {
                let found = match self.view.applied.checked_sub(2) {
                    Some(start) => self.find(start, false, &["context_reset"], |_| true)?,
                    None => None,
                };
                self.jump(found, "earlier task start")?;
            }
            Action::Inspect => self.inspect()?,
            Action::Close => {
                self.overlay = Overlay::None;
            }
        }
        Ok(true)
    }

    /// The task a decision is about: the one selected in Plan when Plan has the keys, else the
    /// one waiting for the operator (the loop picks it).
    /// The task a decision is about: the one selected in the plan pane, else the one waiting for
    /// the operator.
    fn decision_task(&mut self) -> Option<String> {
        let tasks = &self.view.summary().harrow.tasks;
        if self.focus == Pane::Plan {
            return tasks.keys().nth(self.plan_selected).cloned();
        }
        tasks.iter().find(|(_, t)| t.state == "needs_operator").map(|(id, _)| id.clone())
    }

    /// Opens the editor for an operator command; a decision with no task to be about is refused
    /// here, rather than typed and then refused by the run.
    fn open_editor(&mut self, op: Op, title: &str) {
        let task = self.decision_task();
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
                let command = control::Command {
                    op,
                    task,
                    reason,
                    text: body,
                    ts: crate::session::timestamp::now(),
                    source: "console".into(),
                };
                control::send(&self.dir, &command)?;
                self.notice = Some(format!(
                    "sent {}; the run applies it at the next task boundary",
                    op.as_str()
                ));
                self.overlay = Overlay::None;
            }
            _ => {
                editor.text.input(key);
            }
        }
        Ok(())
    }

    /// Whether the loop runs in this process and has not finished.
    pub fn running_here(&self) -> bool {
        self.run_active.as_ref().is_some_and(|a| a.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Whether the loop has applied a pause (and no resume or step since).
    pub fn paused(&self) -> bool {
        self.view.operator.as_deref() == Some("pause")
    }

    /// Sends an operator command through `control.jsonl`, as `harrow control` does.
    pub fn send(&mut self, op: Op, reason: Option<String>) -> io::Result<()> {
        let command = control::Command {
            op,
            task: None,
            reason,
            text: None,
            ts: crate::session::timestamp::now(),
            source: "console".into(),
        };
        control::send(&self.dir, &command)?;
        self.pending = Some(op);
        Ok(())
    }

    /// Answers the quit prompt: stop the run at the next boundary, leave it running, or stay.
    pub fn answer_quit(&mut self, stop: Option<bool>) -> io::Result<()> {
        self.overlay = Overlay::None;
        match stop {
            Some(true) => {
                self.send(Op::Stop, Some("the operator quit the console".into()))?;
                self.quit = true;
            }
            Some(false) => self.quit = true,
            None => {}
        }
        Ok(())
    }

    /// The run mode for the status line.
    pub fn live_mode(&self) -> String {
        let (at, total) = self.position();
        if at < total {
            return format!("WATCH — {} newer (G)", total - at);
        }
        let applied = self.view.operator.as_deref();
        match (self.pending, applied) {
            (Some(Op::Pause), Some(op)) if op != "pause" => {
                "pausing at the next task boundary".into()
            }
            (Some(Op::Pause), None) => "pausing at the next task boundary".into(),
            _ if applied == Some("pause") => "PAUSED (p resumes)".into(),
            _ if self.running_here() => "LIVE".into(),
            _ => "WATCH".into(),
        }
    }

    /// Fetches the stream rows that fit in `height` lines, so rendering needs no I/O.
    pub fn prepare(&mut self, height: usize) {
        let tasks = self.view.summary().harrow.tasks.len();
        self.plan_selected = self.plan_selected.min(tasks.saturating_sub(1));
        self.stream_back = self.stream_back.min(self.view.stream.len().saturating_sub(height));
        let end = self.view.stream.len().saturating_sub(self.stream_back);
        let start = end.saturating_sub(height);
        let positions: Vec<usize> = self.view.stream[start..end].to_vec();
        self.rows = positions
            .into_iter()
            .map(|pos| match self.index.fetch(pos) {
                Ok(event) => row(&event),
                Err(e) => format!("  (event {pos} cannot be read: {e})"),
            })
            .collect();
    }

    /// The event under the cursor, for the status line.
    pub fn position(&self) -> (usize, usize) {
        (self.view.applied, self.total())
    }
}
