//! The summary fold: events in, one denormalised summary out.
//!
//! The JSON keeps Tilth's `summary.json` v4 keys and shapes for every figure Tilth computes, so
//! tools written for Tilth read harrow's summaries; harrow's own figures (task states, attempts,
//! tokens by role, verdict and validator counts, below-the-bar flags, unreadable lines, session
//! status) live under the additional `harrow` key.

use super::fact::Fact;
use super::scan::ScanReport;
use super::state::Ruling;
use super::state::{StopReason, TaskState};
use crate::session::vocabulary::WrittenBy;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod figures;
mod head;
pub(crate) use figures::is_zero;
pub use figures::{
    ByPhase, EvidenceCounts, HarrowFigures, PhasedUsage, StopInfo, Summary, TaskDetail,
    TaskSummary, Unreadable, Usage, ValidatorCounts, VerdictCounts,
};
pub use head::SummaryHead;

/// Tilth's summary schema version whose keys this summary carries.
pub const TILTH_SUMMARY_VERSION: u32 = 4;

struct CallUsage {
    prompt: i64,
    eval: i64,
    cached: i64,
    reasoning: i64,
    cost: f64,
    evaluator: bool,
    /// Answered, but with no token counts in the log.
    uncounted: bool,
    /// Its token counts are estimates from characters (the server sent no usage).
    estimated: bool,
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    if let Some(n) = map.get_mut(key) {
        *n += 1;
    } else {
        map.insert(key.to_owned(), 1);
    }
}

fn entry<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).unwrap_or_else(|| unreachable!("inserted above"))
}

/// One task while folding: Tilth's figures and harrow's side by side.
#[derive(Debug, Clone, Default)]
struct TaskSlot {
    id: String,
    summary: TaskSummary,
    detail: TaskDetail,
    /// Whether an event Tilth counts touched the task (Tilth lists only those).
    in_tilth: bool,
    /// The times of the task's first and latest events, as written.
    first_ts: String,
    last_ts: String,
    /// The latest iteration and attempt an event of the task named.
    position: (u64, u64),
    /// Whether harrow's own events gave the task a state (else Tilth's status stands for it).
    known: bool,
}

impl TaskSlot {
    /// The task's state, from Tilth's status when harrow's is not known.
    fn state(&self) -> TaskState {
        if self.known { self.detail.state.clone() } else { TaskState::read(&self.summary.status) }
    }

    /// Evaluator rounds, counting one still under way.
    fn attempts(&self) -> u64 {
        self.detail.attempts + u64::from(self.detail.working_since_verdict)
    }

    /// Milliseconds from the task's first event to its latest.
    fn elapsed_ms(&self) -> Option<u64> {
        let first = super::timestamp::parse(&self.first_ts)?;
        let last = super::timestamp::parse(&self.last_ts)?;
        u64::try_from(last.as_millisecond() - first.as_millisecond()).ok()
    }
}

/// Tasks in order of first appearance. Consecutive events almost always belong to the same
/// task, so the last slot used is checked before the map. Slots are shared until changed, so
/// a copy of the table (a replay's snapshot) costs a pointer per task, not the tasks.
#[derive(Debug, Clone, Default)]
struct TaskTable {
    slots: Vec<Arc<TaskSlot>>,
    index: HashMap<String, usize>,
    last: usize,
}

impl TaskTable {
    /// The latest (iteration, attempt) the task's events named.
    fn position(&self, id: &str) -> Option<(u64, u64)> {
        self.index.get(id).map(|&i| self.slots[i].position)
    }

    /// How many commits of the task the log holds.
    fn commits(&self, id: &str) -> u64 {
        self.index.get(id).map_or(0, |&i| self.slots[i].detail.commits)
    }

    fn slot(&mut self, id: &str) -> &mut TaskSlot {
        if self.slots.get(self.last).is_none_or(|s| s.id != id) {
            self.last = if let Some(&i) = self.index.get(id) {
                i
            } else {
                self.index.insert(id.to_owned(), self.slots.len());
                self.slots.push(Arc::new(TaskSlot { id: id.to_owned(), ..TaskSlot::default() }));
                self.slots.len() - 1
            };
        }
        Arc::make_mut(&mut self.slots[self.last])
    }

    /// Tilth's figures of a task, marking it as one Tilth would list.
    fn tilth(&mut self, id: &str) -> &mut TaskSummary {
        let slot = self.slot(id);
        slot.in_tilth = true;
        &mut slot.summary
    }

    fn detail(&mut self, id: &str) -> &mut TaskDetail {
        &mut self.slot(id).detail
    }

    /// Records the state harrow's events give a task.
    fn set_state(&mut self, id: &str, state: TaskState) {
        let slot = self.slot(id);
        slot.detail.state = state;
        slot.known = true;
    }
}

/// One of the plan's tasks a `session_start` lists.
struct Planned<'a> {
    id: &'a str,
    title: &'a str,
    depends_on: Vec<String>,
    /// Its first attempt is worked this many times at once.
    best_of: Option<u64>,
}

/// The plan's tasks a `session_start` lists; anything not shaped so is passed over.
fn plan_tasks(list: Option<&serde_json::Value>) -> impl Iterator<Item = Planned<'_>> {
    list.and_then(serde_json::Value::as_array).into_iter().flatten().filter_map(|t| {
        let deps = t.get("depends_on").and_then(serde_json::Value::as_array);
        let deps = deps.into_iter().flatten().filter_map(|d| d.as_str().map(str::to_owned));
        Some(Planned {
            id: t.get("id")?.as_str()?,
            title: t.get("title").and_then(serde_json::Value::as_str).unwrap_or(""),
            depends_on: deps.collect(),
            best_of: t.get("best_of").and_then(serde_json::Value::as_u64),
        })
    })
}

/// A task's id, state and dependencies, read from a running fold.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskBrief<'a> {
    pub id: &'a str,
    pub state: TaskState,
    pub depends_on: &'a [String],
}

/// One task as the console's plan shows it, read from a running fold without finishing it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLine<'a> {
    pub id: &'a str,
    pub state: TaskState,
    pub attempts: u64,
    pub last_category: Option<&'a str>,
    pub iterations: u64,
    pub title: Option<&'a str>,
    /// Wall time from its first event to its latest.
    pub elapsed_ms: Option<u64>,
    pub tokens: i64,
    pub cost: f64,
    pub tool_calls: u64,
    pub validator_runs: u64,
    /// The lane that last worked it, in a run with lanes.
    pub lane: Option<u64>,
    pub depends_on: &'a [String],
    /// The worker models the task moved to, with the attempt each took over at.
    pub worker_models: &'a [(u64, String)],
}

/// A running fold's copy for seeking back to: the tasks shared with the fold until either
/// changes them, and no task index (rebuilt on restore).
#[derive(Debug, Clone)]
pub struct FoldSnapshot {
    fold: SummaryFold,
}

impl FoldSnapshot {
    /// The fold as it was when the snapshot was taken.
    pub fn restore(&self) -> SummaryFold {
        let mut fold = self.fold.clone();
        fold.tasks.index =
            fold.tasks.slots.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
        fold
    }
}

/// Folds facts, in file order, into a [`Summary`]. Cloning is cheap (a few maps), so a
/// running fold can be finished as often as needed without re-reading the log.
#[derive(Debug, Clone, Default)]
pub struct SummaryFold {
    s: Summary,
    tasks: TaskTable,
    last_ts: String,
    tokens_total: i64,
    final_stop: Option<String>,
    waiting: super::waiting::Waiting,
    saw_seq: bool,
}

/// The files a `merge` feedback names, as written.
fn conflict_files(list: Option<&serde_json::Value>) -> Vec<String> {
    list.and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

/// The sandbox a `session_start` names, in one word; earlier sessions wrote a sentence.
fn sandbox_kind(recorded: &str) -> Option<&'static str> {
    match recorded {
        "bubblewrap" => Some("bubblewrap"),
        "landlock" => Some("landlock"),
        "off" => Some("off"),
        s if s.starts_with("bash runs under bubblewrap") => Some("bubblewrap"),
        s if s.starts_with("bash runs without a sandbox") => Some("off"),
        _ => None,
    }
}

impl SummaryFold {
    /// The latest (iteration, attempt) the events of `task` named, for events written after
    /// them that belong to the same place (a task's `task_done` and `commit`).
    pub fn position(&self, task: &str) -> Option<(u64, u64)> {
        self.tasks.position(task)
    }

    /// The highest turn the log numbers for `task`'s worker: a conversation taken up again
    /// after a rewind numbers its turns on from here, so no turn number is said twice.
    pub fn turns_of(&self, task: &str) -> u64 {
        self.tasks.index.get(task).map_or(0, |&i| self.tasks.slots[i].summary.iterations)
    }

    /// Whether `task`'s first attempt is worked several times at once (best of N): its
    /// attempts' rows interleave, and are told apart by their attempt.
    pub fn side_by_side(&self, task: &str) -> bool {
        self.tasks
            .index
            .get(task)
            .is_some_and(|&i| self.tasks.slots[i].detail.side_by_side.is_some())
    }

    /// `task`'s state as the log has it so far, when the log names the task.
    pub fn state_of(&self, task: &str) -> Option<TaskState> {
        self.tasks.index.get(task).map(|&i| self.tasks.slots[i].state())
    }

    /// How many commits of `task` the log holds.
    pub fn commits(&self, task: &str) -> u64 {
        self.tasks.commits(task)
    }

    pub fn new(session_id: Option<String>) -> SummaryFold {
        let mut fold = SummaryFold::default();
        fold.s.session_id = session_id;
        fold
    }

    /// Applies one event.
    pub fn apply(&mut self, fact: &Fact<'_>) {
        use super::event::EventKind as K;
        self.note_time_and_place(fact);
        let p = &fact.payload;
        let tid = p.task_id.get();
        let kind = fact.event_kind();
        let to = if kind == Some(K::TaskState) { p.to.get().map(TaskState::read) } else { None };
        self.waiting.apply(kind, tid, to.as_ref(), p.reason.get());
        match kind {
            Some(K::SessionStart) => self.session_start(fact),
            Some(K::SessionResume) => {
                let sum = &mut self.s;
                if let Some(h) = p.host.get() {
                    sum.harrow.host = Some(h.to_owned());
                }
                if sum.started_at.is_none() {
                    sum.started_at = fact.ts.get().map(str::to_owned);
                }
                if sum.session_id.is_none() {
                    sum.session_id = p.session_id.get().map(str::to_owned);
                }
                self.final_stop = None;
            }
            Some(K::Stop) => {
                let reason = p.reason.get().map(str::to_owned);
                if reason.as_deref().map(StopReason::parse) == Some(StopReason::NeedsOperator) {
                    self.waiting.stopped_for_decision(tid, p.error.get());
                }
                self.final_stop = Some(reason.clone().unwrap_or_default());
                self.s.stop = Some(StopInfo { reason, ts: fact.ts.get().map(str::to_owned) });
            }
            Some(K::ModelCall) => self.model_call(fact),
            Some(K::ToolCall) => {
                if let Some(tool) = p.tool.get() {
                    bump(&mut self.s.tool_histogram, tool);
                    if let Some(tid) = tid {
                        bump(&mut self.tasks.tilth(tid).tool_calls, tool);
                        self.tasks.detail(tid).working_since_verdict = true;
                    }
                }
            }
            Some(K::HookRun) => {
                if let (Some(hook), Some(outcome)) = (p.hook.get(), p.outcome.get()) {
                    bump(entry(&mut self.s.hook_outcomes, hook), outcome);
                    if let (Some(tid), "pre_tool", "block") = (tid, hook, outcome) {
                        self.tasks.tilth(tid).hook_blocks += 1;
                    }
                }
            }
            Some(K::Verdict | K::JudgeVerdict) => self.verdict(fact),
            Some(K::ValidatorRun) => {
                let failed = p.passed.0 == Some(false);
                self.s.harrow.validators.runs += 1;
                self.s.harrow.validators.failed += u64::from(failed);
                if let Some(tid) = tid {
                    let d = self.tasks.detail(tid);
                    d.validator_runs += 1;
                    d.validator_failures += u64::from(failed);
                }
            }
            Some(K::TaskDone) => self.task_done(fact),
            Some(K::TaskFailed) => self.task_failed(fact),
            Some(K::TaskState) => {
                if let (Some(tid), Some(to)) = (tid, to) {
                    self.tasks.tilth(tid);
                    // Work on a new attempt starts here, before the worker's first call.
                    self.tasks.detail(tid).working_since_verdict |= to == TaskState::Running;
                    self.tasks.set_state(tid, to);
                }
            }
            Some(K::Commit) => {
                if let Some(tid) = tid {
                    self.tasks.detail(tid).commits += u64::from(p.sha.get().is_some());
                }
            }
            Some(K::OperatorAction) => self.s.harrow.operator_actions += 1,
            Some(K::FeedbackSent) if super::vocabulary::FeedbackKind::Merge.is(p.kind.get()) => {
                if let Some(tid) = tid {
                    let d = self.tasks.detail(tid);
                    d.merge_reworks += 1;
                    d.conflicts = conflict_files(p.conflicts.as_ref());
                }
            }
            Some(K::Push) if p.error.get().is_none() => {
                if let (Some(branch), Some(remote)) = (p.branch.get(), p.remote.get()) {
                    self.s.harrow.pushed = Some(format!("{branch} on {remote}"));
                }
            }
            Some(K::ContextCompacted) => {
                if let Some(window) = p.window.count().filter(|w| *w > 0) {
                    self.s.harrow.worker_window_learned = Some(window);
                }
            }
            Some(K::ModelSwitch) => self.model_switch(fact),
            // A task starts on the run's own worker model (an escalation lasts one task).
            Some(K::ContextReset) if self.s.harrow.worker_switched_to.is_some() => {
                self.s.harrow.worker_switched_to = None;
            }
            Some(K::BestOf) => self.best_of(fact),
            Some(K::PullRequest) if p.error.get().is_none() => {
                if let Some(url) = p.url.get() {
                    self.s.harrow.pull_request = Some(url.to_owned());
                }
            }
            Some(
                K::ContextReset
                | K::MemoryLoad
                | K::PromptAssembled
                | K::AssistantMessage
                | K::ToolResult
                | K::PreToolBlock
                | K::Nudge
                | K::LoopDetected
                | K::CaseParseError
                | K::EvaluatorParseError
                | K::LedgerAppended
                | K::FeedbackSent
                | K::OperatorWait
                | K::OperatorSteer
                | K::OperatorQueue
                | K::TurnTree
                | K::TaskRewound
                | K::OperatorReview
                | K::LogRepaired
                | K::Archived
                | K::ProposedLearnings
                | K::AgentsMdUpdate
                | K::EmptyModelResponse
                | K::SessionPrepared
                | K::SeedCommitted
                | K::PlanWritten
                | K::Push
                | K::PullRequest,
            )
            | None => {}
        }
    }

    /// A worker's switch to another model: which model made which attempt, where it answered
    /// and why it took over, so two endpoints serving one model name read as the switch they
    /// are.
    fn model_switch(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        if !super::vocabulary::CallRole::Worker.is(p.role.get()) {
            return;
        }
        let to = p.to_model.get().map(str::to_owned);
        if let (Some(tid), Some(model)) = (p.task_id.get(), &to) {
            let mut named = crate::printable::line(model);
            if let Some(url) = p.to_base_url.get() {
                named = format!("{named} at {}", crate::printable::line(url));
            }
            if let Some(kind) = p.kind.get() {
                named = format!("{named} ({})", crate::printable::line(kind));
            }
            let at = (p.attempt.count().unwrap_or(1), named);
            self.tasks.detail(tid).worker_models.push(at);
        }
        self.s.harrow.worker_switched_to = to;
    }

    /// What every event says of when and where: the log's last time, a task's lane, its
    /// latest (iteration, attempt) and its first and last times.
    fn note_time_and_place(&mut self, fact: &Fact<'_>) {
        let tasks = &mut self.tasks;
        let p = &fact.payload;
        let ts = fact.ts.get();
        if let Some(ts) = ts {
            self.last_ts.clear();
            self.last_ts.push_str(ts);
        }
        self.saw_seq |= fact.seq.value.is_some();
        let Some(tid) = p.task_id.get() else { return };
        if let Some(lane) = fact.lane.count() {
            let detail = tasks.detail(tid);
            if detail.lane != Some(lane) {
                detail.lane = Some(lane);
            }
        }
        let at = |v: &super::lenient::LInt| v.count().filter(|n| *n > 0);
        let (iter, attempt) = (at(&p.iter), at(&p.attempt));
        if iter.is_some() || attempt.is_some() {
            let slot = tasks.slot(tid);
            if let Some(iter) = iter {
                slot.position.0 = iter;
            }
            if let Some(attempt) = attempt {
                slot.position.1 = slot.position.1.max(attempt);
            }
        }
        if let Some(ts) = ts {
            let slot = tasks.slot(tid);
            if slot.first_ts.is_empty() {
                ts.clone_into(&mut slot.first_ts);
            }
            slot.last_ts.clear();
            slot.last_ts.push_str(ts);
        }
    }

    fn session_start(&mut self, fact: &Fact<'_>) {
        let (sum, tasks, p) = (&mut self.s, &mut self.tasks, &fact.payload);
        let ts = fact.ts.get();
        if super::vocabulary::Phase::PrepFeature.is(p.phase.get()) {
            sum.prep_started_at = ts.map(str::to_owned);
        } else {
            sum.started_at = ts.map(str::to_owned);
        }
        if sum.harrow.feature.is_none() {
            sum.harrow.feature = p.feature.get().map(str::to_owned);
        }
        if let Some(h) = p.host.get() {
            sum.harrow.host = Some(h.to_owned());
        }
        if super::vocabulary::Phase::Prep.is(p.phase.get()) {
            sum.harrow.phase = Some(super::vocabulary::Phase::Prep.as_str().to_owned());
        }
        if let Some(n) = p.task_count.value {
            sum.harrow.task_count = u64::try_from(n).ok();
        }
        if sum.session_id.is_none() {
            sum.session_id = p.session_id.get().map(str::to_owned);
        }
        sum.harrow.no_eval |= p.no_eval.0 == Some(true);
        if let Some(kind) = p.sandbox.get().and_then(sandbox_kind) {
            sum.harrow.sandbox = Some(kind.to_owned());
        }
        self.final_stop = None;
        for planned in plan_tasks(p.plan_tasks.as_ref()) {
            if !tasks.slot(planned.id).known {
                tasks.set_state(planned.id, TaskState::Pending);
            }
            let detail = tasks.detail(planned.id);
            detail.title = Some(planned.title.to_owned());
            detail.depends_on = planned.depends_on;
            detail.side_by_side = planned.best_of.filter(|n| *n > 1);
        }
    }

    fn verdict(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        if let Some(gate) = p.evidence_gate.get().and_then(super::event::EvidenceGate::named) {
            self.s.harrow.evidence.count(gate);
            // An accept sent back for its evidence is not the attempt's verdict: the
            // evaluator's next answer is.
            if gate == super::event::EvidenceGate::SentBack {
                return;
            }
        }
        let accept = fact.ruling() == Some(Ruling::Accept);
        let category = p.rejection_category.get();
        self.s.evaluator.add(accept, category);
        if p.parse_failed.0 == Some(true) {
            self.s.harrow.verdicts_parse_failed += 1;
        }
        if let Some(tid) = p.task_id.get() {
            self.tasks.tilth(tid).evaluator.add(accept, category);
            let d = self.tasks.detail(tid);
            d.attempts += 1;
            d.working_since_verdict = false;
            if !accept {
                d.last_category = category.map(str::to_owned).or(d.last_category.take());
            }
        }
    }

    /// A best-of task's attempts as weighed, for `show`.
    fn best_of(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        if let (Some(tid), Some(list)) = (p.task_id.get(), p.candidates.as_ref()) {
            let seen: Vec<super::event::CandidateSeen> =
                serde_json::from_value(list.clone()).unwrap_or_default();
            let d = self.tasks.detail(tid);
            d.best_of = seen;
            d.best_of_landed = p.winner.count().filter(|n| *n > 0);
        }
    }

    fn task_done(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        let Some(tid) = p.task_id.get() else { return };
        self.tasks.tilth(tid).status = "done".into();
        let d = self.tasks.detail(tid);
        d.below_bar = p.below_bar.0 == Some(true);
        d.by_operator = p.by_operator.0 == Some(true);
        d.unreviewed = p.reviewed.0 == Some(false);
        if let Some(c) = p.last_category.get() {
            d.last_category = Some(c.to_owned());
        }
        let state = match (d.below_bar, d.unreviewed) {
            (true, _) => TaskState::DoneBelowBar,
            (false, true) => TaskState::DoneUnreviewed,
            (false, false) => TaskState::Done,
        };
        self.tasks.set_state(tid, state);
    }

    fn task_failed(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        let reason = p.reason.get();
        if let Some(r) = reason {
            bump(&mut self.s.harrow.failure_reasons, r);
        }
        let Some(tid) = p.task_id.get() else { return };
        let t = self.tasks.tilth(tid);
        t.status = "failed".into();
        if let Some(r) = reason {
            t.failure_reason = Some(r.to_owned());
        }
        self.tasks.set_state(tid, TaskState::Failed);
        if let Some(r) = reason {
            self.tasks.detail(tid).failure_reasons.push(r.to_owned());
        }
    }

    fn model_call(&mut self, f: &Fact<'_>) {
        let p = &f.payload;
        let s = &mut self.s;
        let tasks = &mut self.tasks;
        let int = |v: super::lenient::LInt| v.value.unwrap_or(0);
        let phase = p.phase.get();
        let role = p.role.get().or(phase).unwrap_or("worker");
        let call = CallUsage {
            prompt: int(p.prompt_tokens),
            eval: int(p.eval_tokens),
            cached: int(p.cached_tokens),
            reasoning: int(p.reasoning_tokens),
            cost: p.cost.0.unwrap_or(0.0),
            evaluator: [phase, Some(role)]
                .iter()
                .any(|r| super::vocabulary::CallRole::Evaluator.is(*r)),
            uncounted: !super::vocabulary::Health::failed(p.health.get())
                && p.prompt_tokens.value.is_none()
                && p.eval_tokens.value.is_none(),
            estimated: p.tokens_estimated.0 == Some(true),
        };
        s.tokens.add(&call);
        entry(&mut s.harrow.tokens_by_role, role).add(&call);
        if let Some(model) = p.model.get() {
            entry(&mut s.harrow.tokens_by_model, model).add(&call);
        }
        s.harrow.model_calls += 1;
        if super::vocabulary::Health::failed(p.health.get()) {
            s.harrow.unhealthy_model_calls += 1;
            if p.retry_backoff_seconds.0.is_some() {
                s.harrow.retried_model_calls += 1;
            }
        }
        // Tilth's rule: the running total grows by each call's tokens, and jumps to the
        // call's own running total when that is larger (a resumed Tilth starts counting
        // again from its checkpoint, so neither alone is right).
        let reported = if p.tokens_used_total.was_integer { int(p.tokens_used_total) } else { 0 };
        self.tokens_total = (self.tokens_total + call.prompt + call.eval).max(reported);
        if let Some(tid) = p.task_id.get() {
            let t = tasks.tilth(tid);
            t.tokens.add(&call);
            t.iterations = t.iterations.max(u64::try_from(int(p.iter)).unwrap_or(0));
            if !call.evaluator {
                tasks.detail(tid).working_since_verdict = true;
            }
        }
    }

    /// A copy to seek back to, sharing every task not changed since.
    pub fn snapshot(&self) -> FoldSnapshot {
        let fold = SummaryFold {
            s: self.s.clone(),
            tasks: TaskTable {
                slots: self.tasks.slots.clone(),
                index: HashMap::new(),
                last: self.tasks.last,
            },
            last_ts: self.last_ts.clone(),
            tokens_total: self.tokens_total,
            final_stop: self.final_stop.clone(),
            waiting: self.waiting.clone(),
            saw_seq: self.saw_seq,
        };
        FoldSnapshot { fold }
    }

    /// The reason of the last `stop` with no start or resume after it: how the run ended,
    /// while it stays ended.
    pub fn ended(&self) -> Option<&str> {
        self.final_stop.as_deref()
    }

    /// The address of the pull request last opened for the session.
    pub fn pull_request(&self) -> Option<&str> {
        self.s.harrow.pull_request.as_deref()
    }

    /// The sandbox the worker's commands ran in: `bubblewrap`, `landlock` or `off`.
    pub fn sandbox(&self) -> Option<&str> {
        self.s.harrow.sandbox.as_deref()
    }

    /// The model the worker moved to (a fallback, an escalation) while it talks to it.
    /// The worker's window the run learned last, from the log so far.
    pub fn learned_window(&self) -> Option<u64> {
        self.s.harrow.worker_window_learned
    }

    pub fn worker_switched_to(&self) -> Option<&str> {
        self.s.harrow.worker_switched_to.as_deref()
    }

    /// Whether harrow wrote the log (its events carry sequence numbers; Tilth's do not).
    pub fn is_harrow(&self) -> bool {
        self.saw_seq
    }

    /// Tasks seen so far.
    pub fn task_count(&self) -> usize {
        self.tasks.slots.len()
    }

    /// The `i`th task's id, state and what it depends on: what a frame needs to know of every
    /// task, without the figures [`SummaryFold::task_line`] works out (its times are parsed).
    pub fn task_brief(&self, i: usize) -> Option<TaskBrief<'_>> {
        let slot = self.tasks.slots.get(i)?;
        Some(TaskBrief { id: &slot.id, state: slot.state(), depends_on: &slot.detail.depends_on })
    }

    /// The `i`th task in order of first appearance.
    pub fn task_line(&self, i: usize) -> Option<TaskLine<'_>> {
        let slot = self.tasks.slots.get(i)?;
        Some(TaskLine {
            id: &slot.id,
            state: slot.state(),
            attempts: slot.attempts(),
            last_category: slot.detail.last_category.as_deref(),
            iterations: slot.summary.iterations,
            title: slot.detail.title.as_deref(),
            elapsed_ms: slot.elapsed_ms(),
            tokens: slot.summary.tokens.all.total,
            cost: slot.summary.tokens.all.cost,
            tool_calls: slot.summary.tool_calls.values().sum(),
            validator_runs: slot.detail.validator_runs,
            lane: slot.detail.lane,
            depends_on: &slot.detail.depends_on,
            worker_models: &slot.detail.worker_models,
        })
    }

    /// The time of the latest event folded, as written.
    pub fn last_ts(&self) -> Option<&str> {
        (!self.last_ts.is_empty()).then_some(self.last_ts.as_str())
    }

    /// Where a task is in order of first appearance.
    pub fn task_position(&self, id: &str) -> Option<usize> {
        self.tasks.index.get(id).copied()
    }

    /// Tasks finished, accepted above or below the bar.
    pub fn tasks_done(&self) -> u64 {
        self.tasks.slots.iter().filter(|s| s.state().is_accepted()).count() as u64
    }

    /// Tasks in the plan, when the log says.
    pub fn planned_tasks(&self) -> Option<u64> {
        self.s.harrow.task_count
    }

    /// Tokens so far (the larger of the running total and prompt + completion) and cost.
    pub fn tokens_and_cost(&self) -> (i64, f64) {
        let all = &self.s.tokens.all;
        (self.tokens_total.max(all.prompt + all.eval), all.cost)
    }

    /// Answered calls whose tokens the log does not give: the token total is a floor.
    pub fn uncounted_calls(&self) -> u64 {
        self.s.tokens.all.uncounted
    }

    /// Calls whose token counts are estimates (the server sent no usage).
    pub fn estimated_calls(&self) -> u64 {
        self.s.tokens.all.estimated
    }

    pub fn session_id(&self) -> Option<&str> {
        self.s.session_id.as_deref()
    }

    pub fn finish(mut self, report: &ScanReport) -> Summary {
        let s = &mut self.s;
        s.version = TILTH_SUMMARY_VERSION;
        s.tokens.all.total = self.tokens_total;
        if !self.last_ts.is_empty() {
            s.last_event_at = Some(std::mem::take(&mut self.last_ts));
        }
        let by = if self.saw_seq { WrittenBy::Harrow } else { WrittenBy::Tilth };
        s.harrow.format = by.as_str().into();
        s.harrow.events = report.events;
        s.harrow.unreadable_lines =
            Unreadable { count: report.unreadable_count, lines: report.unreadable.clone() };
        s.harrow.blank_lines = report.blank;
        s.harrow.pending_bytes = report.pending_bytes;
        s.harrow.log_bytes = Some(report.end_offset);
        s.harrow.waiting_on = self.waiting.on.clone().map(|(task, _)| task);
        for slot in std::mem::take(&mut self.tasks.slots) {
            let state = slot.state();
            let attempts = slot.attempts();
            let elapsed_ms = slot.elapsed_ms();
            let TaskSlot { id, summary, mut detail, in_tilth, .. } = Arc::unwrap_or_clone(slot);
            detail.state = state;
            detail.attempts = attempts;
            detail.elapsed_ms = elapsed_ms;
            if detail.below_bar {
                s.harrow.below_bar.push(id.clone());
            }
            if detail.unreviewed {
                s.harrow.unreviewed.push(id.clone());
            }
            if detail.state.is_accepted() {
                s.harrow.tasks_done += 1;
            }
            if in_tilth {
                s.tasks.insert(id.clone(), summary);
            }
            s.harrow.tasks.insert(id, detail);
        }
        s.harrow.final_stop = self.final_stop;
        self.s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(lines: &[&str]) -> Summary {
        let mut fold = SummaryFold::new(Some("s".into()));
        for l in lines {
            fold.apply(
                &Fact::decode(l.as_bytes(), &mut crate::session::fact::KeptValues::default())
                    .unwrap(),
            );
        }
        fold.finish(&ScanReport::default())
    }

    /// A state added to [`TaskState`] needs nothing else from the folds: written by the gate,
    /// it is read back as itself by the summary (and so by `show`, the console and the fleet).
    #[test]
    fn every_task_state_is_written_and_read_back_as_itself() {
        for state in TaskState::ALL {
            let line = crate::session::event::encode_line(
                "2026-11-24T00:00:00.000Z",
                1,
                None,
                &crate::session::event::TaskState {
                    scope: crate::session::event::Scope {
                        task_id: Some("T-1".into()),
                        ..Default::default()
                    },
                    from: Some(TaskState::Pending),
                    to: Some(state.clone()),
                    ..Default::default()
                },
            )
            .unwrap();
            let s = fold(&[std::str::from_utf8(&line).unwrap()]);
            assert_eq!(s.harrow.tasks["T-1"].state, state, "{state}");
            assert_eq!(TaskState::parse(state.as_str()), Some(state.clone()));
        }
    }

    #[test]
    fn a_rework_counts_as_a_new_attempt_as_soon_as_it_starts() {
        let s = fold(&[
            r#"{"seq":1,"type":"task_state","payload":{"task_id":"T-1","from":"pending","to":"running"}}"#,
            r#"{"seq":2,"type":"evaluator_verdict","payload":{"task_id":"T-1","verdict":"reject","rejection_category":"weak_test"}}"#,
            r#"{"seq":3,"type":"task_state","payload":{"task_id":"T-1","from":"evaluating","to":"rework"}}"#,
        ]);
        assert_eq!(s.harrow.tasks["T-1"].attempts, 1, "judged once, nothing started since");
        let s = fold(&[
            r#"{"seq":1,"type":"task_state","payload":{"task_id":"T-1","from":"pending","to":"running"}}"#,
            r#"{"seq":2,"type":"evaluator_verdict","payload":{"task_id":"T-1","verdict":"reject","rejection_category":"weak_test"}}"#,
            r#"{"seq":3,"type":"task_state","payload":{"task_id":"T-1","from":"evaluating","to":"rework"}}"#,
            r#"{"seq":4,"type":"task_state","payload":{"task_id":"T-1","from":"rework","to":"running"}}"#,
        ]);
        assert_eq!(s.harrow.tasks["T-1"].attempts, 2, "the rework is attempt 2 from its start");
    }

    #[test]
    fn tokens_split_by_phase_and_the_total_follows_tilths_rule() {
        let s = fold(&[
            r#"{"ts":"t1","type":"model_call","payload":{"task_id":"T-1","iter":2,"prompt_tokens":10,"eval_tokens":5,"cost":0.5,"tokens_used_total":15}}"#,
            r#"{"ts":"t2","type":"model_call","payload":{"task_id":"T-1","iter":2,"phase":"evaluator","prompt_tokens":7,"eval_tokens":1,"cached_tokens":3,"tokens_used_total":23.0}}"#,
        ]);
        assert_eq!(s.tokens.all.prompt, 17);
        assert_eq!(
            s.tokens.all.total, 23,
            "a float running total is ignored, as Tilth does; the call's own tokens still count"
        );
        let resumed = fold(&[
            r#"{"type":"model_call","payload":{"prompt_tokens":60,"eval_tokens":40,"tokens_used_total":100}}"#,
            r#"{"type":"session_resume","payload":{}}"#,
            r#"{"type":"model_call","payload":{"prompt_tokens":30,"eval_tokens":20,"tokens_used_total":50}}"#,
            r#"{"type":"model_call","payload":{"prompt_tokens":5,"eval_tokens":5,"tokens_used_total":400}}"#,
        ]);
        assert_eq!(
            resumed.tokens.all.total, 400,
            "max(total + the call's tokens, its running total): 100, 150, then 400 (not 160)"
        );
        let reset = fold(&[
            r#"{"type":"model_call","payload":{"prompt_tokens":60,"eval_tokens":40,"tokens_used_total":100}}"#,
            r#"{"type":"model_call","payload":{"prompt_tokens":30,"eval_tokens":20,"tokens_used_total":50}}"#,
        ]);
        assert_eq!(
            reset.tokens.all.total, 150,
            "a running total that restarted is not the largest"
        );
        assert_eq!(s.tokens.by_phase.evaluator.cached, 3);
        assert_eq!(s.tasks["T-1"].tokens.all.total, 23);
        assert_eq!(s.tasks["T-1"].iterations, 2);
        assert_eq!(s.last_event_at.as_deref(), Some("t2"));
    }

    #[test]
    fn failure_reason_survives_a_later_accept_and_attempts_count_rounds() {
        let s = fold(&[
            r#"{"type":"model_call","payload":{"task_id":"T-3","iter":1}}"#,
            r#"{"type":"evaluator_verdict","payload":{"task_id":"T-3","verdict":"reject","rejection_category":"weak_test"}}"#,
            r#"{"type":"task_failed","payload":{"task_id":"T-3","reason":"evaluator_cap"}}"#,
            r#"{"type":"stop","payload":{"reason":"evaluator_cap"}}"#,
            r#"{"type":"session_resume","payload":{"session_id":"x"}}"#,
            r#"{"type":"model_call","payload":{"task_id":"T-3","iter":1}}"#,
            r#"{"type":"evaluator_verdict","payload":{"task_id":"T-3","verdict":"accept","rejection_category":null}}"#,
            r#"{"type":"task_done","payload":{"task_id":"T-3"}}"#,
            r#"{"type":"model_call","payload":{"task_id":"T-4","iter":1}}"#,
        ]);
        let t = &s.tasks["T-3"];
        assert_eq!(t.status, "done");
        assert_eq!(t.failure_reason.as_deref(), Some("evaluator_cap"));
        assert_eq!(t.evaluator.rejection_categories["weak_test"], 1);
        assert_eq!(s.harrow.tasks["T-3"].attempts, 2);
        assert_eq!(s.harrow.tasks["T-3"].state, TaskState::Done);
        assert_eq!(s.harrow.tasks["T-4"].attempts, 1);
        assert_eq!(s.harrow.tasks["T-4"].state, TaskState::Running);
        assert_eq!(s.harrow.tasks_done, 1);
        assert_eq!(s.final_stop(), None, "the resume reopened the session");
        assert_eq!(s.stop.as_ref().and_then(|x| x.reason.as_deref()), Some("evaluator_cap"));
    }

    #[test]
    fn below_the_bar_is_flagged() {
        let s = fold(&[
            r#"{"seq":1,"type":"evaluator_verdict","payload":{"task_id":"T-2","verdict":"reject","rejection_category":"half_finished"}}"#,
            r#"{"seq":2,"type":"task_done","payload":{"task_id":"T-2","below_bar":true}}"#,
            r#"{"seq":3,"type":"stop","payload":{"reason":"all_done"}}"#,
        ]);
        assert_eq!(s.harrow.below_bar, vec!["T-2".to_string()]);
        assert_eq!(s.harrow.tasks["T-2"].state, TaskState::DoneBelowBar);
        assert_eq!(s.harrow.tasks["T-2"].last_category.as_deref(), Some("half_finished"));
        assert_eq!(s.harrow.format, "harrow");
        assert_eq!(s.final_stop(), Some("all_done"));
    }
}
