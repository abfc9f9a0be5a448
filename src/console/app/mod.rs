//! The console's state and its update: keys and clock ticks in, view state and [`Effect`]s
//! out. No terminal here, so every behaviour is testable; the event loop carries the effects
//! out and rendering reads what [`App::prepare`] left ready.

pub use super::effect::Effect;
use super::effect::command;
use super::frame::{self, Moment, Prepared, Selection};
use super::inspector;
use super::keymap::{Action, Mode};
use super::layout::Pane;
use super::modal::{Outcome, Views};
use super::player::Player;
use super::search::Search;
use super::theme::{Look, Theme};
use super::timeline::Mark;
use crate::config::Notify;
use crate::session::control::Op;
use crate::session::dir::SessionDir;
use crate::session::event::EventKind;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod act;

/// How long a look at the session's lock holds.
const LOCK_RECHECK: Duration = Duration::from_secs(2);

/// Where a console was opened from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenedFrom {
    /// A command of its own (`watch`, `replay`, `run`, `demo`).
    Command,
    /// The fleet's `Enter`.
    Fleet,
}

/// Everything the console shows, and where the operator is in it.
#[derive(Debug)]
pub struct App {
    pub id: String,
    pub player: Player,
    pub sel: Selection,
    pub prepared: Prepared,
    /// What covers the panes, if anything: at most one thing at a time.
    pub views: Views,
    /// A one-line answer to the last key ("no later failure").
    pub notice: Option<String>,
    pub search: Search,
    pub themes: Vec<Theme>,
    pub theme: usize,
    notify: Notify,
    /// Whether the console captures the mouse (off: the terminal selects text as usual).
    pub mouse: bool,
    /// Watching a session that may still grow: new events are applied as they arrive.
    pub live: bool,
    pub dir: SessionDir,
    /// Set when this process runs the loop: true while it runs.
    pub run_active: Option<Arc<AtomicBool>>,
    /// Set when the person quit asking the run this process drives to stop.
    pub stop_asked: Option<Arc<AtomicBool>>,
    /// A pause or resume sent and not yet applied by the loop.
    pub pending: Option<Op>,
    /// When the session's lock was last looked at, and whether a run held it.
    pub(super) lock_checked: Option<(Instant, bool)>,
    /// The held task the person was last called to, so each hold rings once.
    pub(super) called_for: Option<String>,
    pub quit: bool,
    /// Where the console was opened from: from the fleet, `Esc` on the panes goes back to it.
    pub opened_from: OpenedFrom,
    pub(super) effects: Vec<Effect>,
    /// A seek asked for (in tenths of the log) before the log was read that far.
    pending_seek: Option<u8>,
    /// The worker model's context window in tokens, as the session's start recorded it.
    pub window: Option<u64>,
}

/// The worker's context window the session's start records (configured, or as its server
/// said it), when it records one.
fn worker_window(dir: &Path) -> Option<u64> {
    let start = crate::session::placement::first_session_start(&SessionDir::new(dir).events())?;
    start.endpoints?["worker"]["context_window"].as_u64().filter(|n| *n > 0)
}

impl App {
    /// The worker's window at the point shown: the one the run learned by then (a compaction
    /// fitted to it), else the one the start recorded — the same in replay as live.
    pub fn window_now(&self) -> Option<u64> {
        self.player.view.fold().learned_window().or(self.window)
    }

    /// Opens a session folder for replay, playing from its first event.
    pub fn open(dir: &Path, id: &str, speed: f64, look: Look) -> io::Result<App> {
        let player = Player::open(&SessionDir::new(dir).events(), id, speed, false)?;
        Ok(App::new(dir, id, player, look, false))
    }

    /// Opens a session to watch: everything so far is applied, and what the tailer delivers
    /// next is applied as it arrives.
    pub fn open_live(dir: &Path, id: &str, look: Look) -> io::Result<App> {
        let player = Player::open(&SessionDir::new(dir).events(), id, f64::INFINITY, true)?;
        let mut app = App::new(dir, id, player, look, true);
        app.call_if_held();
        Ok(app)
    }

    fn new(dir: &Path, id: &str, player: Player, look: Look, live: bool) -> App {
        App {
            id: id.to_owned(),
            notice: player.unreadable_notice().or(look.problem),
            player,
            sel: Selection::default(),
            prepared: Prepared::default(),
            views: Views::default(),
            search: Search::default(),
            themes: look.themes,
            theme: look.theme,
            notify: look.notify,
            mouse: false,
            live,
            dir: SessionDir::new(dir),
            run_active: None,
            stop_asked: None,
            pending: None,
            lock_checked: None,
            called_for: None,
            quit: false,
            opened_from: OpenedFrom::Command,
            effects: Vec::new(),
            pending_seek: None,
            window: worker_window(dir),
        }
    }

    /// The theme to draw with.
    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len().saturating_sub(1))]
    }

    /// The effects asked for since the last call, for the event loop to carry out.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Reads the next piece of a log not yet read whole, and makes a seek that waited for it.
    /// Returns whether anything changed.
    pub fn read_more(&mut self) -> io::Result<bool> {
        let changed = self.player.read_more()?;
        if self.player.reading_percent().is_none()
            && let Some(tenths) = self.pending_seek.take()
        {
            self.player.seek_percent(tenths)?;
            self.sel.stream_back = 0;
            self.notice = None;
        }
        Ok(changed)
    }

    /// Where a tailer should start so it delivers exactly the lines not yet indexed.
    pub fn tail_start(&self) -> (u64, u64) {
        self.player.tail_start()
    }

    /// Takes lines the tailer delivered; a task newly held for the person calls them.
    pub fn take_lines(
        &mut self,
        lines: Vec<(crate::session::scan::LineAt, Vec<u8>)>,
    ) -> io::Result<bool> {
        let unsent = self.unsent_steer(&lines);
        let changed = self.player.take_lines(lines)?;
        if let Some((task, text)) = unsent {
            // A task that has landed (or was skipped) takes no next attempt: nothing to queue.
            let settled = self.player.view.fold().state_of(&task).is_some_and(|s| s.is_settled());
            if settled {
                self.notice = Some(format!(
                    "{task} was done before your steer reached it; your words were not used"
                ));
            } else {
                self.offer_to_queue(task, &text);
            }
        }
        self.call_if_held();
        self.retire_stale_notice();
        Ok(changed)
    }

    /// The last steer sent from a console that did not reach its worker (its attempt was
    /// over), among lines just appended: its task and words.
    fn unsent_steer(
        &self,
        lines: &[(crate::session::scan::LineAt, Vec<u8>)],
    ) -> Option<(String, String)> {
        use crate::session::event::{Event, Payload};
        if !self.live {
            return None;
        }
        lines.iter().rev().find_map(|(_, line)| {
            let looks = memchr::memmem::find(line, b"\"operator_steer\"").is_some();
            let event = Event::decode(line).ok().filter(|_| looks)?;
            match &event.payload {
                Payload::OperatorSteer(p)
                    if p.delivered == Some(false)
                        && crate::session::vocabulary::CommandSource::Console
                            .is(p.source.as_deref()) =>
                {
                    Some((p.scope.task_id.clone()?, p.text.clone()?))
                }
                _ => None,
            }
        })
    }

    /// Offers to queue words a steer could not deliver: the editor opens as a queue for the
    /// task's next attempt, the words in it; Enter queues them, Esc lets them go. With another
    /// overlay open, a notice says how instead.
    fn offer_to_queue(&mut self, task: String, text: &str) {
        if self.views.is_open() {
            self.notice = Some(format!(
                "{task}'s attempt was over before your steer reached its worker: i, then Tab, queues it"
            ));
            return;
        }
        let title = format!(
            "{task}'s attempt was over before your steer reached it — queue it for its next attempt?"
        );
        let text = super::modal::text_box("", text);
        self.views.open(crate::console::modal::Editor {
            op: Op::Queue,
            task: Some(task),
            title,
            text,
            detail: crate::console::outcome::Detail::None,
        });
    }

    /// Calls the person, once per hold, when the newest event says a task waits for them.
    fn call_if_held(&mut self) {
        let held = self.player.view.held().map(str::to_owned);
        if self.live && held.is_some() && held != self.called_for && self.player.at_end() {
            let task = held.clone().unwrap_or_default();
            self.effects.push(Effect::Notify(format!("{task} waits for your decision")));
        }
        self.called_for = held;
    }

    /// Starts over after the log was truncated or replaced.
    pub fn reload(&mut self) -> io::Result<()> {
        let player = Player::open(&self.dir.events(), &self.id, f64::INFINITY, true)?;
        self.player = player;
        self.sel = Selection::default();
        self.prepared = Prepared::default();
        self.notice = Some("the log was replaced; reloaded it from the start".into());
        Ok(())
    }

    pub fn at_end(&self) -> bool {
        self.player.at_end()
    }

    /// The event under the cursor and the log's length, for the status line.
    pub fn position(&self) -> (usize, usize) {
        self.player.position()
    }

    /// Moves replay time on by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) -> io::Result<bool> {
        self.player.tick(real_ms)
    }

    pub(super) fn goto(&mut self, pos: usize) -> io::Result<()> {
        self.player.goto(pos)?;
        self.sel.stream_back = 0;
        Ok(())
    }

    fn jump(&mut self, found: Option<usize>, what: &str) -> io::Result<()> {
        if let Some(pos) = found {
            self.goto(pos)
        } else {
            self.notice = Some(format!("no {what}"));
            Ok(())
        }
    }

    /// A marker before or after the cursor.
    fn find_mark(&self, forward: bool, want: fn(Mark) -> bool) -> Option<usize> {
        let applied = self.player.view.applied();
        let start = if forward { Some(applied) } else { applied.checked_sub(2) };
        start.and_then(|s| self.player.view.timeline().find(s, forward, want))
    }

    /// A task's start before or after the cursor.
    fn find_task_start(&self, forward: bool) -> Option<usize> {
        let applied = self.player.view.applied();
        let start = if forward { Some(applied) } else { applied.checked_sub(2) };
        start.and_then(|s| self.player.find_kind(s, forward, EventKind::ContextReset))
    }

    /// The verdict the focused pane points at: the picked ledger row, the selected task's
    /// latest verdict, or the last verdict at or before the cursor.
    fn verdict_in_focus(&mut self) -> Result<usize, String> {
        match self.sel.focus {
            Pane::Ledger => {
                let rows = &self.prepared.side.ledger;
                let row = self.sel.ledger_selected.map_or(rows.last(), |i| rows.get(i));
                row.map(|(pos, _)| *pos).ok_or_else(|| "the ledger of this task is empty".into())
            }
            Pane::Plan | Pane::Exchange => {
                let task = self.prepared.task.as_deref();
                task.and_then(|t| self.player.view.trail(t)?.verdicts.last().copied()).ok_or_else(
                    || format!("no verdict on {} yet", task.unwrap_or("the selected task")),
                )
            }
            Pane::Worker if self.sel.picked.is_some() => self.verdict_of_picked_row(),
            Pane::Worker | Pane::Validators => {
                let cursor = self.player.view.applied().checked_sub(1).ok_or("no verdict yet")?;
                self.player
                    .view
                    .timeline()
                    .find(cursor, false, |m| matches!(m, Mark::Accept | Mark::Reject))
                    .ok_or_else(|| "no verdict at or before the cursor".into())
            }
        }
    }

    /// Takes a key press, by the key table of the open overlay or of the panes.
    pub fn key(&mut self, key: crossterm::event::KeyEvent) -> io::Result<Vec<Effect>> {
        if self.views.is_open() {
            let outcome = self.views.key(key);
            return self.follow_up(outcome);
        }
        match super::keymap::action_for(Mode::Main, &key) {
            Some(action) => self.act(action),
            None => Ok(Vec::new()),
        }
    }

    /// Carries on from what an overlay answered.
    fn follow_up(&mut self, outcome: Outcome) -> io::Result<Vec<Effect>> {
        self.notice = None;
        match outcome {
            Outcome::Stay | Outcome::Unbound | Outcome::Closed => {}
            Outcome::Notice(text) => self.notice = Some(text),
            Outcome::OpenEvidence(n) => {
                if let Some(i) = self.views.top::<super::inspector::Inspector>() {
                    self.effects.push(Effect::LoadEvidence(Box::new(i.clone()), n));
                }
            }
            Outcome::Search(query) => {
                let start = self.prepared.worker.first().map_or(0, |(p, _)| *p);
                self.search_from(&query, start, true)?;
            }
            Outcome::Decide { op, task, text, detail } => self.send_decided(op, task, text, detail),
            Outcome::OpenDiff { pos, since_previous } => self.open_diff(pos, since_previous),
            Outcome::Copy(text) => self.effects.push(Effect::Copy(text)),
            Outcome::Ship { pr, partial } => self.effects.push(Effect::Ship { pr, partial }),
            Outcome::Resume => {
                self.views.clear();
                self.effects.push(Effect::Resume);
            }
            Outcome::Quit { stop } => {
                if stop {
                    let why = Some("the operator quit the console".into());
                    self.effects.push(Effect::Send(command(Op::Stop, None, why, None)));
                    if let Some(asked) = &self.stop_asked {
                        asked.store(true, Ordering::SeqCst);
                    }
                }
                self.quit = true;
            }
        }
        Ok(self.take_effects())
    }

    /// Does what an action asked: of the open overlay, else of the panes.
    pub fn act(&mut self, action: Action) -> io::Result<Vec<Effect>> {
        if self.views.is_open() {
            let outcome = self.views.act(action);
            return self.follow_up(outcome);
        }
        self.notice = None;
        match action {
            Action::Quit if self.running_here() => self.views.open(super::modal::QuitPrompt),
            Action::Close if self.sel.zoom || self.opened_from == OpenedFrom::Command => {
                self.sel.zoom = false;
            }
            Action::Quit | Action::Close => self.quit = true,
            Action::Help => self.views.open(super::help::HelpView::main(self.live)),
            Action::Pause
            | Action::Step
            | Action::Note
            | Action::Steer
            | Action::Rewind
            | Action::Approve
            | Action::Reject
            | Action::ForceAccept
            | Action::RetryEval
            | Action::Skip
            | Action::FailTask => self.steer(action),
            Action::Focus
            | Action::FocusBack
            | Action::Zoom
            | Action::Filter
            | Action::Theme
            | Action::RowTime
            | Action::Lane
            | Action::Mouse => self.change_view(action),
            Action::Search
            | Action::SearchNext
            | Action::SearchPrev
            | Action::OnlyMatches
            | Action::Seek(_)
            | Action::Down
            | Action::Up
            | Action::Top
            | Action::Bottom
            | Action::PlayPause
            | Action::Faster
            | Action::Slower
            | Action::StepForward
            | Action::StepBack
            | Action::NextFailure
            | Action::PrevFailure
            | Action::NextVerdict
            | Action::PrevVerdict
            | Action::NextTask
            | Action::PrevTask => self.navigate(action)?,
            Action::Export => self.effects.push(Effect::Export),
            Action::Ship => self.ship_asked(),
            Action::Diff | Action::DiffSincePrevious => match self.verdict_in_focus() {
                Ok(pos) => self.open_diff(pos, action == Action::DiffSincePrevious),
                Err(why) => self.notice = Some(why),
            },
            Action::Inspect if self.sel.focus == Pane::Worker => self.open_row(),
            // A review or a rewind in the Ledger opens as a row: its comments, its reason.
            Action::Inspect
                if self.sel.focus == Pane::Ledger
                    && self.verdict_in_focus().is_ok_and(|pos| {
                        matches!(
                            self.player.kind_at(pos),
                            Some(EventKind::OperatorReview | EventKind::TaskRewound)
                        )
                    }) =>
            {
                if let Ok(pos) = self.verdict_in_focus() {
                    match super::row::open(&mut self.player, pos) {
                        Ok(row) => self.views.only(row),
                        Err(why) => self.notice = Some(why),
                    }
                }
            }
            Action::Inspect => {
                let opened = self
                    .verdict_in_focus()
                    .and_then(|pos| inspector::open_at(&mut self.player, pos));
                match opened {
                    Ok(i) => self.views.only(i),
                    Err(why) => self.notice = Some(why),
                }
            }
            // Overlays take their own Esc; on the panes it leaves the zoom.
            // Keys of other modes: the main table never binds them.
            Action::Evidence(_)
            | Action::Comment
            | Action::SendReview
            | Action::Submit
            | Action::SwitchWords
            | Action::Cancel
            | Action::StopAndQuit
            | Action::LeaveRunning
            | Action::Open
            | Action::NextWaiting
            | Action::Show(_)
            | Action::Sort
            | Action::ResumeRun
            | Action::NextFile
            | Action::PrevFile
            | Action::Left
            | Action::Right
            | Action::PageDown
            | Action::PageUp
            | Action::Accept
            | Action::Edit
            | Action::Revise
            | Action::Discard
            | Action::Copy => {}
        }
        Ok(self.take_effects())
    }

    /// Opens the diff of the attempt the verdict at `pos` judged, over what is open now.
    /// Asks for the diff of the verdict at `pos`; git reads it as a job and [`App::diff_loaded`]
    /// shows it.
    fn open_diff(&mut self, pos: usize, since_previous: bool) {
        match super::attempt::judged_diff(&mut self.player, pos, since_previous) {
            Ok(source) => {
                self.notice = Some("reading the diff…".into());
                self.effects.push(Effect::LoadDiff(Box::new(source)));
            }
            Err(why) => self.notice = Some(why),
        }
    }

    /// Whether a run holds the session, checked at most every two seconds (the lock file and
    /// the holder's pid).
    pub(super) fn run_alive(&mut self) -> bool {
        let stale = self.lock_checked.is_none_or(|(at, _)| at.elapsed() > LOCK_RECHECK);
        if stale {
            let alive = self.running_here() || crate::session::lock::is_locked(self.dir.root());
            self.lock_checked = Some((Instant::now(), alive));
        }
        self.lock_checked.is_some_and(|(_, alive)| alive)
    }

    /// Whether the loop runs in this process and has not finished.
    pub fn running_here(&self) -> bool {
        self.run_active.as_ref().is_some_and(|a| a.load(Ordering::SeqCst))
    }

    /// Whether the loop has applied a pause (and no resume or step since).
    pub fn paused(&self) -> bool {
        self.player.view.operator() == Some(crate::session::control::Op::Pause)
    }

    /// Prepares what the panes show at this terminal size, so rendering needs no I/O.
    pub fn prepare(&mut self, area: ratatui::layout::Rect) {
        let run_alive = self.live && self.run_alive();
        let at = Moment { now_ms: jiff::Timestamp::now().as_millisecond(), run_alive };
        if self.sel.only.is_some() && self.search.count(&mut self.player, self.sel.filter) {
            self.sel.only = self.search.matches(&mut self.player, self.sel.filter);
        }
        let previous = std::mem::take(&mut self.prepared);
        self.prepared = frame::prepare(&mut self.player, &mut self.sel, previous, area, at);
        let streaming = run_alive && self.at_end() && self.sel.stream_back == 0;
        let waiting_on_a_model = self.player.view.waiting().is_some_and(|w| {
            w.what == super::view::WORKER_WAIT || w.what == super::view::EVALUATOR_WAIT
        });
        if streaming && waiting_on_a_model {
            self.prepared.live = crate::session::live::read(self.dir.root());
        }
    }

    /// A live view of a run that has not ended: whether a process still holds it is worth
    /// looking at again now and then.
    pub fn watching_a_run(&self) -> bool {
        self.live && self.player.view.fold().ended().is_none()
    }

    /// Looks (at most every two seconds) whether a run holds the session; true when that is
    /// not what the screen last said.
    pub fn liveness_changed(&mut self) -> bool {
        self.run_alive() != self.prepared.run_alive
    }

    /// How often a frame is worth drawing with nothing else happening: a few times a second
    /// while a reply streams in, once a second while the status line counts a wait's seconds.
    pub fn counting(&self) -> Option<std::time::Duration> {
        if self.prepared.live.is_some() {
            return Some(crate::session::live::EVERY);
        }
        let waiting =
            self.prepared.run_alive && self.at_end() && self.player.view.waiting().is_some();
        waiting.then_some(super::schedule::WAIT_TICK)
    }

    /// The bytes that call the person for `text`, as configured.
    pub fn notification(&self, text: &str) -> String {
        self.notify.sequence(text)
    }
}
