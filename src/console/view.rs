//! The console's view state: a fold of events, the same for replay and live watching; only the
//! clock that feeds it differs. It keeps figures (through the summary fold) and the positions of
//! the events the stream shows — never their text, which is fetched for the rows on screen.

use super::timeline::Timeline;
use crate::session::control::Op;
use crate::session::event::EventKind;
use crate::session::fact::Fact;
use crate::session::state::TaskState;
use crate::session::state::{Ruling, StopReason};
use crate::session::summary::{FoldSnapshot, Summary, SummaryFold};
use std::collections::BTreeMap;

/// Whether an event earns a row in the stream. Names this build does not know are shown (as
/// their raw payload), so nothing a newer writer logged is hidden.
pub fn shown(fact: &Fact<'_>) -> bool {
    use EventKind as K;
    let Some(kind) = fact.event_kind() else { return true };
    match kind {
        K::ModelCall => crate::session::vocabulary::Health::failed(fact.payload.health.get()),
        K::HookRun
        | K::PromptAssembled
        | K::MemoryLoad
        | K::ContextReset
        | K::LedgerAppended
        | K::FeedbackSent
        | K::TurnTree => false,
        // A held task's wait is said by its state's row; an agent's question is its own.
        K::OperatorWait => fact.payload.tool.get().is_some(),
        K::TaskState => matches!(
            fact.payload.to.get().map(TaskState::read),
            Some(TaskState::Running | TaskState::NeedsOperator)
        ),
        K::TaskDone => {
            fact.payload.below_bar.0 == Some(true) || fact.payload.reviewed.0 == Some(false)
        }
        // A reply that only calls tools is shown by its tool calls' own rows.
        K::AssistantMessage => fact.payload.content.0 || fact.payload.reasoning.0,
        K::SessionStart
        | K::SessionResume
        | K::ToolCall
        | K::ToolResult
        | K::PreToolBlock
        | K::Nudge
        | K::LoopDetected
        | K::CaseParseError
        | K::EvaluatorParseError
        | K::Verdict
        | K::ValidatorRun
        | K::TaskFailed
        | K::Commit
        | K::OperatorAction
        | K::LogRepaired
        | K::Stop
        | K::Archived
        | K::JudgeVerdict
        | K::ProposedLearnings
        | K::AgentsMdUpdate
        | K::EmptyModelResponse
        | K::SessionPrepared
        | K::SeedCommitted
        | K::PlanWritten
        | K::Push
        | K::PullRequest
        | K::OperatorSteer
        | K::OperatorQueue
        | K::TaskRewound
        | K::OperatorReview
        | K::ContextCompacted
        | K::ModelSwitch
        | K::BestOf => true,
    }
}

/// Which rows the worker stream shows: everything, the worker ↔ evaluator dialogue (a task's
/// cases, validators, verdicts and decisions in a few lines), or only what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    All,
    Dialogue,
    Problems,
}

impl Filter {
    pub const ALL: [Filter; 3] = [Filter::All, Filter::Dialogue, Filter::Problems];

    pub fn name(self) -> &'static str {
        match self {
            Filter::All => "everything",
            Filter::Dialogue => "worker ↔ evaluator",
            Filter::Problems => "problems",
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            Filter::All => 0,
            Filter::Dialogue => 1,
            Filter::Problems => 2,
        }
    }

    #[must_use]
    pub fn next(self) -> Filter {
        Filter::ALL[(self.index() + 1) % Filter::ALL.len()]
    }

    /// Whether a shown event belongs to this filter's rows.
    pub fn keeps(self, fact: &Fact<'_>) -> bool {
        use EventKind as K;
        let p = &fact.payload;
        let kind = fact.event_kind();
        match self {
            Filter::All => true,
            Filter::Dialogue => match kind {
                Some(K::ToolCall) => {
                    crate::session::vocabulary::ToolName::SubmitCase.is(p.tool.get())
                }
                kind => matches!(
                    kind,
                    Some(
                        K::ValidatorRun
                            | K::Verdict
                            | K::JudgeVerdict
                            | K::OperatorAction
                            | K::TaskState
                            | K::TaskDone
                            | K::Commit
                            | K::TaskFailed
                            | K::Stop
                            | K::SessionStart
                            | K::SessionResume
                            | K::CaseParseError
                            | K::EvaluatorParseError
                    )
                ),
            },
            Filter::Problems => match kind {
                Some(K::Verdict | K::JudgeVerdict) => fact.ruling() != Some(Ruling::Accept),
                Some(K::ValidatorRun) => p.passed.0 == Some(false),
                Some(K::Stop) => fact.stop_reason() != Some(StopReason::AllDone),
                Some(K::TaskState) => {
                    p.to.get().map(TaskState::read) == Some(TaskState::NeedsOperator)
                }
                kind => matches!(
                    kind,
                    Some(
                        K::PreToolBlock
                            | K::ModelCall
                            | K::CaseParseError
                            | K::EvaluatorParseError
                            | K::Nudge
                            | K::LoopDetected
                            | K::TaskFailed
                            | K::TaskDone
                            | K::LogRepaired
                            | K::EmptyModelResponse
                    )
                ),
            },
        }
    }
}

/// One worker model call's prompt size: how full the context is, call by call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pressure {
    pub pos: usize,
    pub prompt_tokens: u32,
    /// Flips with each new task, so the drawing can tell neighbouring tasks apart.
    pub band: bool,
}

/// Where one task's exchange is in the log: the positions the Exchange, Validators and Ledger
/// panes fetch for it. Small: a few entries per attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trail {
    pub cases: Vec<usize>,
    pub validators: Vec<usize>,
    pub verdicts: Vec<usize>,
    /// The task's ledger in log order: its verdicts, the operator's decisions on it and its
    /// rewinds.
    pub ledger: Vec<usize>,
}

/// The worker turns whose worktree was kept (`turn_tree`), which a rewind can go back to: by
/// task, its (attempt, turn) pairs.
#[derive(Debug, Default)]
struct Checkpoints {
    by_task: BTreeMap<String, std::collections::BTreeSet<(u64, u64)>>,
    count: usize,
}

/// The small facts the fold keeps beside the summary fold.
#[derive(Debug, Clone, Default)]
struct Marks {
    current_task: Option<String>,
    applied: usize,
    operator: Option<Op>,
    waiting: Option<Waiting>,
    /// The task the run waits on a person's decision about, while it waits.
    held: Option<String>,
    /// The task whose agent waits for the person to allow or deny what it asked.
    asked: Option<String>,
    /// Each lane's task, in a run with lanes.
    lanes: super::lanes::LaneMarks,
}

/// What the run is waiting on, and since when: the status line says so ("waiting on the
/// evaluator 41 s").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub what: String,
    /// When the wait began (the event's time), in milliseconds since the epoch.
    pub since_ms: Option<i64>,
}

/// The wait on the worker's model: between every two turns, so it is worth saying only while
/// a run is there to wait (in a replay it would crowd the status line at every other event).
pub const WORKER_WAIT: &str = "waiting on the worker model";

/// The wait on the evaluator's verdict.
pub const EVALUATOR_WAIT: &str = "waiting on the evaluator";

/// The wait on a person's decision about a held task.
pub const OPERATOR_WAIT: &str = "waiting on you";

/// What an event says about the run's waiting.
enum WaitChange {
    /// Nothing: the wait, if any, goes on.
    Same,
    Over,
    Begins(String),
}

fn waiting_after(fact: &Fact<'_>) -> WaitChange {
    use EventKind as K;
    let p = &fact.payload;
    let Some(kind) = fact.event_kind() else { return WaitChange::Same };
    match kind {
        K::ModelCall => match p.health.get() {
            Some(h) if crate::session::vocabulary::Health::failed(Some(h)) => {
                let who = p.role.get().or(p.phase.get()).unwrap_or("model");
                WaitChange::Begins(format!("retrying the {who} ({h})"))
            }
            _ => WaitChange::Over,
        },
        K::TaskState => match p.to.get().map(TaskState::read) {
            Some(TaskState::Validating) => WaitChange::Begins("validators running".to_owned()),
            Some(TaskState::Evaluating) => WaitChange::Begins(EVALUATOR_WAIT.to_owned()),
            Some(TaskState::NeedsOperator) => WaitChange::Begins(OPERATOR_WAIT.to_owned()),
            _ => WaitChange::Over,
        },
        K::OperatorWait => WaitChange::Begins(OPERATOR_WAIT.to_owned()),
        // An agent's permission request answered: it works again.
        K::HookRun if crate::session::vocabulary::HookName::Permission.is(p.hook.get()) => {
            WaitChange::Begins(WORKER_WAIT.to_owned())
        }
        // The worker is asked again after its context is sent, after its tools answered, and
        // after feedback or a nudge: the wait on its model counts from there, not from its
        // first reply.
        K::ToolResult | K::PreToolBlock | K::FeedbackSent | K::Nudge => {
            WaitChange::Begins(WORKER_WAIT.to_owned())
        }
        K::PromptAssembled if crate::session::vocabulary::CallRole::Worker.is(p.role.get()) => {
            WaitChange::Begins(WORKER_WAIT.to_owned())
        }
        // A best-of task's attempts weighed: it lands, or its chosen attempt is reworked.
        K::ToolCall | K::Stop | K::BestOf => WaitChange::Over,
        K::PromptAssembled
        | K::SessionStart
        | K::SessionResume
        | K::ContextReset
        | K::MemoryLoad
        | K::AssistantMessage
        | K::HookRun
        | K::LoopDetected
        | K::CaseParseError
        | K::EvaluatorParseError
        | K::Verdict
        | K::LedgerAppended
        | K::ValidatorRun
        | K::TaskDone
        | K::TaskFailed
        | K::Commit
        | K::OperatorAction
        | K::LogRepaired
        | K::Archived
        | K::JudgeVerdict
        | K::ProposedLearnings
        | K::AgentsMdUpdate
        | K::EmptyModelResponse
        | K::SessionPrepared
        | K::SeedCommitted
        | K::PlanWritten
        | K::Push
        | K::PullRequest
        | K::OperatorSteer
        | K::OperatorQueue
        | K::TurnTree
        | K::TaskRewound
        | K::OperatorReview
        | K::ContextCompacted
        | K::ModelSwitch => WaitChange::Same,
    }
}

/// What the panes read: the fold as of the cursor, and where things are in the whole log.
///
/// The stream and the trails are facts about the log, not about the cursor: they are noted
/// once, when an event enters the index, and read up to the cursor. Only the fold moves with
/// the cursor, so a seek either way restores a fold snapshot and re-applies a few events.
#[derive(Debug)]
pub struct View {
    fold: SummaryFold,
    marks: Marks,
    /// Index positions of every event the stream shows, in file order, per [`Filter`].
    streams: [Vec<usize>; 3],
    /// Prompt tokens of every worker model call, in file order.
    pressure: Vec<Pressure>,
    /// The task of the last worker call noted, to flip the band when it changes.
    pressure_task: Option<String>,
    /// Per task, where its exchange is, over the whole log.
    trails: BTreeMap<String, Trail>,
    checkpoints: Checkpoints,
    /// The accepts, rejections and failures over the whole log.
    timeline: Timeline,
    /// Each lane's rows, in a run with lanes.
    lane_streams: super::lanes::LaneStreams,
    summary: Summary,
    dirty: bool,
}

/// A copy of the fold every [`SNAPSHOT_EVERY`] events, so a seek re-folds at most that many.
/// A copy shares every task it has not seen change, so it costs a pointer per task.
#[derive(Debug, Default)]
pub struct Snapshots {
    taken: Vec<(FoldSnapshot, Marks)>,
}

/// How often the console keeps a copy of the fold: a seek re-applies at most this many events.
pub const SNAPSHOT_EVERY: usize = 8_192;

impl Snapshots {
    /// Keeps a copy when the view has just applied a multiple of [`SNAPSHOT_EVERY`] events.
    pub fn offer(&mut self, view: &View) {
        let applied = view.marks.applied;
        if applied > 0
            && applied.is_multiple_of(SNAPSHOT_EVERY)
            && self.taken.last().is_none_or(|(_, m)| m.applied < applied)
        {
            self.taken.push((view.fold.snapshot(), view.marks.clone()));
        }
    }

    /// How many events the latest copy at or before `target` had applied (0: none).
    pub fn nearest(&self, target: usize) -> usize {
        let taken = self.taken.partition_point(|(_, m)| m.applied <= target);
        taken.checked_sub(1).map_or(0, |i| self.taken[i].1.applied)
    }

    /// Turns `view`'s fold to the latest copy at or before `target` events, or to the start.
    pub fn restore(&self, view: &mut View, target: usize) {
        let taken = self.taken.partition_point(|(_, m)| m.applied <= target);
        let (fold, marks) = match taken.checked_sub(1).map(|i| &self.taken[i]) {
            Some((fold, marks)) => (fold.restore(), marks.clone()),
            None => (SummaryFold::new(view.fold.session_id().map(str::to_owned)), Marks::default()),
        };
        view.fold = fold;
        view.marks = marks;
        view.dirty = true;
    }
}

impl Trail {
    /// The trail as of `applied` events.
    fn upto(&self, applied: usize) -> Trail {
        let cut = |list: &Vec<usize>| list[..list.partition_point(|p| *p < applied)].to_vec();
        Trail {
            cases: cut(&self.cases),
            validators: cut(&self.validators),
            verdicts: cut(&self.verdicts),
            ledger: cut(&self.ledger),
        }
    }
}

impl View {
    pub fn new(session_id: &str) -> View {
        let fold = SummaryFold::new(Some(session_id.to_owned()));
        View {
            summary: fold.clone().finish(&crate::session::scan::ScanReport::default()),
            fold,
            marks: Marks::default(),
            streams: [Vec::new(), Vec::new(), Vec::new()],
            pressure: Vec::new(),
            pressure_task: None,
            trails: BTreeMap::new(),
            checkpoints: Checkpoints::default(),
            timeline: Timeline::default(),
            lane_streams: super::lanes::LaneStreams::default(),
            dirty: false,
        }
    }

    /// Notes where the event at `pos` belongs in the log: the stream, a task's trail, the
    /// timeline. Called once per event, when it enters the index.
    pub fn note(&mut self, pos: usize, fact: &Fact<'_>) {
        self.timeline.note(pos, fact);
        if shown(fact) {
            let keeps = Filter::ALL.map(|f| f.keeps(fact));
            for (stream, kept) in self.streams.iter_mut().zip(keeps) {
                if kept {
                    stream.push(pos);
                }
            }
            self.lane_streams.note(pos, super::lanes::lane_of(fact), keeps);
        }
        let kind = fact.event_kind();
        if kind == Some(EventKind::ModelCall)
            && !crate::session::vocabulary::CallRole::Evaluator.is(fact
                .payload
                .role
                .get()
                .or(fact.payload.phase.get()))
            && let Some(tokens) = fact.payload.prompt_tokens.value.filter(|t| *t > 0)
        {
            let prompt_tokens = u32::try_from(tokens).unwrap_or(u32::MAX);
            let task = fact.payload.task_id.get();
            let mut band = self.pressure.last().is_some_and(|p| p.band);
            if task != self.pressure_task.as_deref() {
                band = !band;
                self.pressure_task = task.map(str::to_owned);
            }
            self.pressure.push(Pressure { pos, prompt_tokens, band });
        }
        let Some(task) = fact.payload.task_id.get() else { return };
        if kind == Some(EventKind::TurnTree) {
            let p = &fact.payload;
            let turn = (p.attempt.count().unwrap_or(0), p.iter.count().unwrap_or(0));
            let c = &mut self.checkpoints;
            c.count += usize::from(c.by_task.entry(task.to_owned()).or_default().insert(turn));
            return;
        }
        let tracked = matches!(
            kind,
            Some(
                EventKind::ValidatorRun
                    | EventKind::Verdict
                    | EventKind::JudgeVerdict
                    | EventKind::OperatorAction
                    | EventKind::TaskRewound
                    | EventKind::OperatorReview
            )
        ) || (kind == Some(EventKind::ToolCall)
            && crate::session::vocabulary::ToolName::SubmitCase.is(fact.payload.tool.get()));
        // An answer to an agent's question is no decision on the task's work.
        let answer = kind == Some(EventKind::OperatorAction)
            && matches!(fact.payload.action.get(), Some("allow" | "deny"));
        if !tracked || answer {
            return;
        }
        let trail = if let Some(t) = self.trails.get_mut(task) {
            t
        } else {
            self.trails.entry(task.to_owned()).or_default()
        };
        match kind {
            Some(EventKind::ToolCall) => trail.cases.push(pos),
            Some(EventKind::ValidatorRun) => trail.validators.push(pos),
            Some(
                EventKind::OperatorAction | EventKind::TaskRewound | EventKind::OperatorReview,
            ) => {
                trail.ledger.push(pos);
            }
            _ => {
                trail.verdicts.push(pos);
                trail.ledger.push(pos);
            }
        }
    }

    /// Applies the event at index position `pos` to the fold (positions arrive in order).
    pub fn apply(&mut self, pos: usize, fact: &Fact<'_>) {
        let m = &mut self.marks;
        self.fold.apply(fact);
        m.lanes.apply(fact);
        let kind = fact.event_kind();
        if kind == Some(EventKind::OperatorAction)
            && let Some(op) = fact.payload.action.get().and_then(Op::parse)
            && matches!(op, Op::Pause | Op::Resume | Op::Step | Op::Stop)
        {
            m.operator = Some(op);
        }
        match kind {
            Some(EventKind::OperatorWait) => {
                let task = fact.payload.task_id.get().map(str::to_owned);
                if fact.payload.tool.get().is_some() {
                    m.asked = task;
                } else {
                    m.held = task;
                }
            }
            Some(EventKind::HookRun)
                if crate::session::vocabulary::HookName::Permission.is(fact.payload.hook.get())
                    && m.asked.as_deref() == fact.payload.task_id.get() =>
            {
                m.asked = None;
            }
            Some(
                EventKind::TaskState
                | EventKind::Stop
                | EventKind::SessionResume
                | EventKind::ContextReset,
            ) => (m.held, m.asked) = (None, None),
            _ => {}
        }
        if let Some(task) = fact.payload.task_id.get()
            && m.current_task.as_deref() != Some(task)
        {
            m.current_task = Some(task.to_owned());
        }
        match waiting_after(fact) {
            WaitChange::Same => {}
            WaitChange::Over => m.waiting = None,
            WaitChange::Begins(what) => {
                let since_ms = fact
                    .ts
                    .get()
                    .and_then(crate::session::timestamp::parse)
                    .map(jiff::Timestamp::as_millisecond);
                m.waiting = Some(Waiting { what, since_ms });
            }
        }
        m.applied = pos + 1;
        self.dirty = true;
    }

    /// Counts an event that could not be decoded as applied.
    pub fn skip(&mut self, pos: usize) {
        self.marks.applied = pos + 1;
    }

    /// How many events have been applied: the replay cursor.
    pub fn applied(&self) -> usize {
        self.marks.applied
    }

    /// The stream's positions up to the cursor, as `filter` keeps them.
    pub fn stream(&self, filter: Filter) -> &[usize] {
        let all = self.whole_stream(filter);
        &all[..all.partition_point(|p| *p < self.marks.applied)]
    }

    /// The stream's positions up to the cursor in one lane (its rows and the run's), or in
    /// every lane when `lane` is `None`.
    pub fn stream_in(&self, filter: Filter, lane: Option<u64>) -> &[usize] {
        let all = match lane.and_then(|n| self.lane_streams.of(n, filter.index())) {
            Some(rows) => rows,
            None => self.whole_stream(filter),
        };
        &all[..all.partition_point(|p| *p < self.marks.applied)]
    }

    /// Each lane's task as of the cursor (empty without lanes).
    pub fn lanes(&self) -> &super::lanes::LaneMarks {
        &self.marks.lanes
    }

    /// The stream's positions over the whole log, as `filter` keeps them: what a search
    /// looks through, replayed or not.
    pub fn whole_stream(&self, filter: Filter) -> &[usize] {
        &self.streams[filter.index()]
    }

    /// The markers of the whole log, for jumps and the strip.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The same, to draw (the strip keeps its layout between frames).
    pub fn timeline_mut(&mut self) -> &mut Timeline {
        &mut self.timeline
    }

    /// The worker's prompt sizes up to the cursor.
    pub fn pressure(&self) -> &[Pressure] {
        &self.pressure[..self.pressure.partition_point(|p| p.pos < self.marks.applied)]
    }

    /// What the run waits on as of the cursor, if anything.
    pub fn waiting(&self) -> Option<&Waiting> {
        self.marks.waiting.as_ref()
    }

    /// The task the run is holding for the operator's decision, as of the cursor.
    pub fn held(&self) -> Option<&str> {
        self.marks.held.as_deref()
    }

    /// The task whose agent waits for a permission the operator grants or refuses.
    pub fn asked(&self) -> Option<&str> {
        self.marks.asked.as_deref()
    }

    /// The last pause, resume, step or stop the loop applied.
    pub fn operator(&self) -> Option<Op> {
        self.marks.operator
    }

    /// The task of the latest event that named one: what the panes follow.
    pub fn current_task(&self) -> Option<&str> {
        self.marks.current_task.as_deref()
    }

    /// Where a task's cases, validator runs, verdicts and decisions are, up to the cursor.
    /// Whether turn `turn` of `task`'s attempt `attempt` left a kept worktree to rewind to.
    pub fn checkpoint(&self, task: &str, attempt: u64, turn: u64) -> bool {
        self.checkpoints.by_task.get(task).is_some_and(|t| t.contains(&(attempt, turn)))
    }

    /// How many turns can be rewound to: when it grows, rows drawn before may need a mark.
    pub fn checkpoint_count(&self) -> usize {
        self.checkpoints.count
    }

    pub fn trail(&self, task: &str) -> Option<Trail> {
        self.trails.get(task).map(|t| t.upto(self.marks.applied))
    }

    /// The running fold, for figures read every frame without finishing it.
    pub fn fold(&self) -> &SummaryFold {
        &self.fold
    }

    /// The full summary as of the last applied event (finishing a copy of the fold: for
    /// occasional use, not every frame).
    pub fn summary(&mut self) -> &Summary {
        if self.dirty {
            let report = crate::session::scan::ScanReport {
                events: self.marks.applied as u64,
                ..Default::default()
            };
            self.summary = self.fold.clone().finish(&report);
            self.dirty = false;
        }
        &self.summary
    }
}

/// The replay clock: virtual milliseconds that run at a chosen speed while playing.
#[derive(Debug, Clone, PartialEq)]
pub struct Clock {
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    pub now_ms: f64,
}

/// Playback speeds; the last is "as fast as possible".
pub const SPEEDS: [f64; 9] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, f64::INFINITY];

impl Clock {
    pub fn new(speed: f64) -> Clock {
        let speed = SPEEDS.iter().position(|s| *s >= speed).unwrap_or(SPEEDS.len() - 1);
        Clock { playing: true, speed, now_ms: 0.0 }
    }

    /// Advances by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) {
        if self.playing {
            self.now_ms += real_ms * SPEEDS[self.speed];
        }
    }

    pub fn label(&self) -> String {
        match SPEEDS[self.speed] {
            s if s.is_infinite() => "max".into(),
            s if s < 1.0 => format!("{s}×"),
            s => format!("{s:.0}×"),
        }
    }

    pub fn faster(&mut self) {
        self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
    }

    pub fn slower(&mut self) {
        self.speed = self.speed.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply that only calls tools earns no row of its own (each call has one, so the stream
    /// said `worker calls submit_case` and then `submit_case`); one that says or thinks
    /// something does, whatever else it holds; a text that is empty or null says nothing.
    #[test]
    fn a_reply_that_only_calls_tools_is_shown_by_its_calls() {
        let shown_for = |payload: &str| {
            let line = format!(
                r#"{{"ts":"2026-11-27T10:00:00Z","seq":1,"type":"assistant_message","payload":{payload}}}"#
            );
            let mut kept = crate::session::fact::KeptValues::default();
            let fact = Fact::decode(line.as_bytes(), &mut kept).unwrap_or_default();
            shown(&fact)
        };
        let calls = r#""tool_calls":[{"id":"c1","name":"submit_case","arguments":"{}"}]"#;
        assert!(!shown_for(&format!(r#"{{"role":"worker",{calls}}}"#)));
        assert!(!shown_for(&format!(
            r#"{{"role":"worker","content":null,"reasoning":"",{calls}}}"#
        )));
        assert!(shown_for(&format!(r#"{{"role":"worker","content":"Done: \"x\"",{calls}}}"#)));
        assert!(shown_for(&format!(r#"{{"role":"evaluator","reasoning":"hm",{calls}}}"#)));
        assert!(shown_for(r#"{"role":"worker","content":"all good"}"#));
    }

    #[test]
    fn the_clock_runs_at_its_speed_only_while_playing() {
        let mut c = Clock::new(4.0);
        c.tick(100.0);
        assert!((c.now_ms - 400.0).abs() < 1e-9);
        c.playing = false;
        c.tick(100.0);
        assert!((c.now_ms - 400.0).abs() < 1e-9);
        c.faster();
        assert_eq!(c.label(), "8×");
        for _ in 0..10 {
            c.faster();
        }
        assert_eq!(c.label(), "max");
        c.speed = 0;
        assert_eq!(c.label(), "0.5×");
    }
}
