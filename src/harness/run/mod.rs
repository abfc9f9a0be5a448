//! The Ralph loop: tasks one at a time; per task a worker conversation that works with tools
//! until it submits a case; validators, then the evaluator; the gate decides; a reject goes
//! back into the same conversation. Everything that happens is appended to the session log.

mod compaction;
mod escalate;
mod landing;
mod lane_recover;
mod lanes;
mod learn;
mod operator;
mod operator_review;
mod records;
mod recover;
mod retry;
mod review;
mod rewind;
mod scheduler;
mod steer;
mod worker;

pub use recover::Restart;

use super::case::{self, Case};
use super::gate::{GateEvent, TaskState, transition};
use super::learnings;
use super::memory::{self, EvaluatorInputs, LedgerEntry, WorkerContext};
use super::plan::{Plan, Task};
use super::record::{self, CheckpointFacts};
use super::turns::tool_message;
use super::verdict::{self, Verdict};
use crate::brain::client::{Attempt, Brain, BrainError, CallTag, Reply, Role};
use crate::hands::Hands;
use crate::hands::git_guard::GitGuard;
use crate::hands::validators::{self, ValidatorSpec};
use crate::hands::workspace::{Review, Workspace};
use crate::session::control::{self, Op};
use crate::session::event::ProposedLearnings;
use crate::session::event::{
    Commit, ContextReset, FeedbackSent, HookRun, Nudge, OperatorAction, OperatorQueue,
    OperatorSteer, ParseError, PromptAssembled, Scope, Stop, TaskDone, TaskFailed,
    TaskState as TaskStateEvent, ToolCall, ToolCallRecord, Verdict as VerdictEvent,
};
use crate::session::live;
use crate::session::outcome::LastOutcome;
use crate::session::state::StopReason;
use crate::session::timestamp;
use crate::session::writer::SessionWriter;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The worker's system prompt, embedded.
pub const WORKER_PROMPT: &str = include_str!("../../../prompts/worker.md");
/// The evaluator's system prompt, embedded.
pub const EVALUATOR_PROMPT: &str = include_str!("../../../prompts/evaluator.md");
/// What a quiet worker is told.
const NUDGE: &str = "You replied without calling a tool. If the task is done and verified, call submit_case; otherwise continue with the tools.";
const NUDGE_LENGTH: &str = "Your reply was cut off by the length limit. Continue in smaller steps, calling one tool at a time.";

/// Why the loop could not go on: the harness's own failures, kept by kind (the session
/// folder, git, a task move the design forbids) rather than flattened into I/O errors, so a
/// caller can tell them apart and the person reads which part failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The session folder (log, ledger, checkpoint, control file) could not be read or written.
    #[error(transparent)]
    Session(#[from] io::Error),
    /// The worktree refused what the loop needed of it.
    #[error(transparent)]
    Workspace(#[from] crate::hands::workspace::WorkspaceError),
    /// git itself failed, doing `what`.
    #[error("{what}: {source}")]
    Git { what: &'static str, source: git2::Error },
    /// A task state move the design does not allow.
    #[error(transparent)]
    Transition(#[from] super::gate::IllegalTransition),
    /// Work the loop had to keep could not be kept (why, in words).
    #[error("{0}")]
    NotKept(String),
}

/// The loop's results.
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;

/// What to do when a task is still rejected at the rework cap.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum OnCap {
    /// The task fails and the run stops.
    #[default]
    Fail,
    /// The task is accepted below the bar: flagged everywhere, and later tasks are warned.
    ForceAccept,
}

/// Limits checked between tasks, never inside one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    pub wall_clock: Option<Duration>,
    pub tokens: Option<u64>,
    pub dollars: Option<f64>,
}

/// How a run behaves.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub max_iterations: u64,
    /// Evaluator rounds per task before the cap policy applies.
    pub max_attempts: u64,
    pub on_cap: OnCap,
    pub no_eval: bool,
    pub validators: Vec<ValidatorSpec>,
    pub context_files: Vec<String>,
    pub caps: Caps,
    pub max_quiet_turns: u64,
    /// The same tool call with the same arguments this many times in a row is a loop: the
    /// worker is nudged once, and the next repeat holds the task. 0: not checked.
    pub loop_repeats: u64,
    /// The worktree coming back this many times to a state an earlier turn left it in, with
    /// no case submitted, is a loop too: a nudge, and the next return holds the task. 0: not
    /// checked.
    pub loop_returns: u64,
    /// After each accepted task, ask whether it taught something worth writing down.
    pub learnings: bool,
    /// An accept with a 0–100 score below this is a reject.
    pub score_threshold: Option<f64>,
    /// A task held for a person keeps the run waiting for the decision rather than ending
    /// it: a person is watching (the console) or has said they will answer.
    pub wait_for_operator: bool,
    /// How many ready tasks of a graph plan are worked at once, each in its own worktree.
    pub lanes: u64,
    /// The worker model's context window in tokens, when it is known (configured, or said
    /// by its server).
    pub worker_window: Option<u64>,
    /// The evaluator model's, which bounds the diff its request carries.
    pub evaluator_window: Option<u64>,
    /// The share of the window a worker request may fill before its conversation is
    /// compacted.
    pub compact_at: f64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            max_iterations: 32,
            max_attempts: 3,
            on_cap: OnCap::Fail,
            no_eval: false,
            validators: Vec::new(),
            context_files: vec!["AGENTS.md".into(), "CLAUDE.md".into()],
            caps: Caps::default(),
            max_quiet_turns: 3,
            loop_repeats: 3,
            loop_returns: 2,
            learnings: false,
            score_threshold: None,
            wait_for_operator: false,
            lanes: 1,
            worker_window: None,
            evaluator_window: None,
            compact_at: 0.8,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The `stop` reason.
    pub reason: StopReason,
    pub detail: Option<String>,
}

impl Ended {
    pub fn success(&self) -> bool {
        self.reason == StopReason::AllDone
    }
}

/// A task's work let through, and how.
#[derive(Debug, Clone)]
struct Acceptance {
    review: Review,
    /// The operator decided it (approve or force-accept), not the evaluator or the policy.
    by_operator: bool,
    /// What last happened to the work, for an accept below the bar.
    last: Option<LastOutcome>,
    summary: String,
    /// The digest of the diff that was judged, when one was: only that work may land.
    judged: Option<String>,
}

/// What the git guard found after a tool call or validator run.
#[derive(Debug)]
enum Guarded {
    /// Nothing to put back.
    Clean,
    /// Put back; the note tells the worker.
    PutBack(String),
    /// It could not look: the task is held for the operator.
    Held(Ended),
}

/// A task's result, inside the loop.
enum TaskEnd {
    Accepted(Acceptance),
    /// A lane's task whose accepted work is on the session branch.
    Landed,
    Failed(StopReason),
    Stop(Ended),
}

/// What a run is made of, assembled by whoever starts or resumes the session.
#[derive(Debug)]
pub struct Parts {
    pub id: String,
    pub dir: PathBuf,
    pub writer: SessionWriter,
    pub plan: Plan,
    pub workspace: Workspace,
    pub hands: Hands,
    pub brain: Brain,
    pub opts: RunOptions,
}

/// One run of a plan in a session.
#[derive(Debug)]
pub struct Run {
    pub id: String,
    pub dir: PathBuf,
    pub writer: SessionWriter,
    pub plan: Plan,
    pub workspace: Workspace,
    pub hands: Hands,
    pub brain: Brain,
    pub opts: RunOptions,
    /// Every task's record and the run's spend, shared with its lanes: the caps see every
    /// lane's calls as they are made, and a decision sees what a lane left.
    records: Arc<records::Records>,
    started: Instant,
    control: ControlState,
    /// Puts back refs, HEAD, git config and hooks a tool call changed.
    guard: Option<GitGuard>,
    /// Raised by Ctrl-C on a headless run: the call or tool in flight is cancelled (through
    /// the hands' cancel flag) and the run stops, resumable.
    pub interrupted: Arc<std::sync::atomic::AtomicBool>,
    /// Why the guard could not take the repository's state before the call in flight, if it
    /// could not.
    guard_blind: Option<String>,
    /// In a lane's run: what ties it to the run that started it.
    lane: Option<lanes::LaneLink>,
    /// In a run with lanes: the lanes at work and those waiting for a decision.
    book: lanes::LaneBook,
}

/// What the operator has asked for and the loop has not finished acting on.
#[derive(Debug, Default)]
struct ControlState {
    offset: u64,
    paused: bool,
    /// Tasks left before pausing again, after a `step`.
    steps_left: Option<u32>,
    /// The task a `step` let start, whose end the run pauses at.
    stepping: Option<String>,
    stop: Option<String>,
    /// Notes for the next attempt: by task, or for whichever task runs next.
    notes: Vec<(Option<String>, String)>,
    /// A held task whose last case the evaluator is to be asked about again.
    retry_eval: Option<String>,
    /// `stop --now` arrived: the task at work is left unfinished.
    stop_now: bool,
    /// Decisions about the task at work that arrived while it ran: applied (or refused) at
    /// the next boundary.
    deferred: Vec<control::Command>,
    /// The steers put into this run's worker conversations: task, attempt and text, for the
    /// evaluator of that attempt.
    steered: Vec<(String, u64, String)>,
}

fn scope(task: &str, iter: u64, attempt: u64) -> Scope {
    Scope {
        task_id: Some(task.to_owned()),
        iter: Some(iter),
        attempt: Some(attempt),
        ..Scope::default()
    }
}

/// What every later task is told about a task accepted below the bar.
fn below_bar_warning(id: &str, title: &str, last: &LastOutcome) -> String {
    format!(
        "{id} ({title}) was accepted below the quality bar: {}; do not rely on it blindly.",
        last.describe()
    )
}

/// The outcome column of `progress.txt` for an accepted task.
fn progress_outcome(review: Review) -> &'static str {
    match review {
        Review::BelowBar => "done (below the bar)",
        Review::Unreviewed => "done (unreviewed: --no-eval)",
        Review::Accepted | Review::Operator => "done",
    }
}

/// What interrupted a run, in its `stop` detail: SIGTERM or SIGHUP when one arrived, else
/// Ctrl-C.
pub(super) fn interrupted_by() -> &'static str {
    crate::signals::received().map_or("Ctrl-C", crate::signals::name)
}

impl Run {
    pub fn new(p: Parts) -> Run {
        let records = Arc::new(records::Records::new(&p.plan));
        Run {
            id: p.id,
            dir: p.dir,
            writer: p.writer,
            plan: p.plan,
            workspace: p.workspace,
            hands: p.hands,
            brain: p.brain,
            opts: p.opts,
            records,
            started: Instant::now(),
            control: ControlState::default(),
            guard: None,
            guard_blind: None,
            interrupted: Arc::default(),
            lane: None,
            book: lanes::LaneBook::default(),
        }
    }

    /// A run that continues a session: states, spend and warnings come from its folder.
    pub fn resumed(p: Parts, r: &super::resume::Restored) -> Run {
        let mut run = Run::new(p);
        run.records = Arc::new(records::Records::restored(&run.plan, r));
        run.control.offset = r.control_offset;
        run
    }

    /// Tasks not yet accepted or skipped, in plan order.
    pub fn unfinished(&self) -> Vec<String> {
        self.plan
            .tasks
            .iter()
            .filter(|t| !self.records.state(&t.id).is_settled())
            .map(|t| t.id.clone())
            .collect()
    }

    fn emit<P: crate::session::event::Record>(&mut self, payload: &P) -> Result<()> {
        self.writer.append(payload)?;
        Ok(())
    }

    /// Moves a task through the gate and logs the move.
    fn gate(
        &mut self,
        task: &str,
        event: GateEvent,
        reason: &str,
        attempt: u64,
    ) -> Result<TaskState> {
        let from = self.records.state(task);
        let to = transition(&from, event)?;
        self.records.update(task, |r| r.state = to.clone());
        self.emit(&TaskStateEvent {
            scope: scope(task, 0, attempt),
            from: Some(from),
            to: Some(to.clone()),
            reason: Some(reason.to_owned()),
            ..TaskStateEvent::default()
        })?;
        Ok(to)
    }

    fn status_map(&self) -> BTreeMap<String, String> {
        self.records
            .states()
            .into_iter()
            .filter(|(_, s)| s.is_terminal())
            .map(|(k, s)| (k, s.to_string()))
            .collect()
    }

    /// Writes `task_status.json` from every task's record, whichever lane writes it.
    fn write_status(&self) -> Result<()> {
        record::write_task_status(&self.dir, &self.status_map())?;
        Ok(())
    }

    fn checkpoint(&self, status: &str) -> Result<()> {
        record::write_checkpoint(
            &self.dir,
            &CheckpointFacts {
                id: &self.id,
                source: &self.workspace.source,
                plan: &self.plan.source,
                workspace: &self.workspace.worktree,
                branch: &self.workspace.branch,
                base: &self.workspace.base,
                usage: &self.records.usage(),
                status,
            },
        )?;
        Ok(())
    }

    fn record_call(
        &mut self,
        role: Role,
        scope: &Scope,
        a: &Attempt,
        reply: Option<&Reply>,
    ) -> Result<()> {
        let tokens_total = self.records.spend(role.as_str(), &a.usage);
        self.emit(&record::model_call(role, scope, a, tokens_total))?;
        if let Some(r) = reply {
            self.emit(&record::assistant_message(role, scope, r))?;
        }
        Ok(())
    }

    /// Calls a model, logging every try.
    async fn call(
        &mut self,
        tag: CallTag<'_>,
        iter: u64,
        messages: &[Value],
        tools: &[Value],
    ) -> Result<Result<Reply, BrainError>> {
        let mut result = self.call_once(tag, iter, messages, tools).await?;
        // Its own endpoint spent its tries: the role's next fallback takes the call, and the
        // role's calls from here on.
        while let Err(e) = &result
            && e.is_transient()
            && let Some(next) = self.brain.next_fallback(tag.role).cloned()
        {
            let Ok(switched) = self.brain.switched(tag.role, &next) else { break };
            let from = self.brain.endpoint(tag.role).cloned();
            self.brain = switched;
            self.emit(&crate::session::event::ModelSwitch {
                scope: scope(tag.task, iter, tag.attempt),
                role: Some(tag.role.as_str().to_owned()),
                from_model: from.as_ref().map(|f| f.model.clone()),
                from_base_url: from
                    .map(|f| crate::printable::line(&crate::keys::scrub(&f.base_url))),
                to_model: Some(next.model.clone()),
                to_base_url: Some(crate::printable::line(&crate::keys::scrub(&next.base_url))),
                why: Some(crate::printable::line(&e.to_string())),
                ..Default::default()
            })?;
            result = self.call_once(tag, iter, messages, tools).await?;
        }
        Ok(result)
    }

    /// One call to the role's endpoint as it is now, every try logged.
    async fn call_once(
        &mut self,
        tag: CallTag<'_>,
        iter: u64,
        messages: &[Value],
        tools: &[Value],
    ) -> Result<Result<Reply, BrainError>> {
        let (role, task, attempt) = (tag.role, tag.task, tag.attempt);
        let brain = self.brain.clone();
        let scope = scope(task, iter, attempt);
        // Each try is logged the moment it ends, so a failure and the wait before the next try
        // are on screen at once, not when the call gives up.
        let mut logged: Result<()> = Ok(());
        let cancel = Arc::clone(&self.hands.cancel);
        let raised = async move { cancel.raised().await };
        let dir = self.dir.clone();
        let mut throttle = live::Throttle::new();
        let started_ms = jiff::Timestamp::now().as_millisecond();
        let show = |p: &crate::brain::stream::Partial| {
            if !throttle.due() {
                return;
            }
            let chars = p.content.len() + p.reasoning.len();
            let chars = chars + p.tool_calls.iter().map(|(n, a)| n.len() + a.len()).sum::<usize>();
            let reply = live::LiveReply {
                role: role.as_str().to_owned(),
                task: task.to_owned(),
                started_ms,
                chunks: p.chunks,
                chars: chars as u64,
                content: live::tail(&p.content),
                reasoning: live::tail(&p.reasoning),
                tool_calls: p.tool_calls.iter().map(|(n, a)| (n.clone(), live::tail(a))).collect(),
            };
            let _ = live::write(&dir, &reply);
        };
        let record = |a: &Attempt, r: Option<&Reply>| {
            if logged.is_ok() {
                logged = self.record_call(role, &scope, a, r);
            }
        };
        let result = tokio::select! {
            r = brain.chat_streaming(&tag, messages, tools, record, show) => r,
            () = raised => Err(BrainError::Cancelled(role.as_str())),
        };
        if throttle.wrote() {
            live::clear(&self.dir);
        }
        logged?;
        Ok(result)
    }

    fn cap_reached(&self) -> Option<StopReason> {
        let caps = self.opts.caps;
        if caps.wall_clock.is_some_and(|w| self.started.elapsed() >= w) {
            return Some(StopReason::WallClock);
        }
        let (tokens, dollars) = self.records.spent();
        if caps.tokens.is_some_and(|t| tokens >= t) {
            return Some(StopReason::TokenCap);
        }
        if caps.dollars.is_some_and(|d| dollars >= d) {
            return Some(StopReason::CostCap);
        }
        None
    }

    /// Runs every pending task in order until the plan is done or something stops it.
    pub async fn run(&mut self) -> Result<Ended> {
        self.checkpoint("running")?;
        // A reply a crashed run left in flight is not in flight any more.
        live::clear(&self.dir);
        let mut guard =
            GitGuard::new(&self.workspace.worktree, &self.workspace.branch).map_err(|source| {
                HarnessError::Git { what: "cannot read the worktree's git state", source }
            })?;
        guard.restore().map_err(|source| HarnessError::Git {
            what: "cannot put HEAD on the session branch",
            source,
        })?;
        self.guard = Some(guard);
        let ended = self.work_lanes().await?;
        self.emit(&Stop {
            reason: Some(ended.reason.as_str().to_owned()),
            error: ended.detail.clone(),
            ..Stop::default()
        })?;
        self.writer.sync()?;
        let status = match &ended.reason {
            StopReason::AllDone => "all_done",
            r if r.is_task_failure() => "failed",
            _ => "paused",
        };
        self.checkpoint(status)?;
        record::write_summary(&self.dir, self.writer.summary())?;
        Ok(ended)
    }

    /// In a graph plan, why `task` cannot start: a task it depends on was not accepted
    /// (skipped, or left failed). It is then marked blocked, once; a blocked task whose
    /// dependencies were accepted since (a resume after a decision) is unblocked.
    fn waits_on(&mut self, task: &str) -> Result<Option<String>> {
        if !self.plan.is_graph() {
            return Ok(None);
        }
        let missing: Vec<String> = self
            .plan
            .dependencies(task)
            .into_iter()
            .filter(|d| !self.records.state(d).is_accepted())
            .map(|d| format!("{d} ({})", self.records.state(d)))
            .collect();
        let state = self.records.state(task);
        if missing.is_empty() {
            if state == TaskState::Blocked {
                self.gate(task, GateEvent::Unblocked, "what it waited on is accepted", 0)?;
            }
            return Ok(None);
        }
        let why = format!("{task} waits on {}", missing.join(", "));
        if state != TaskState::Blocked {
            self.gate(task, GateEvent::Blocked, &why, 0)?;
        }
        Ok(Some(why))
    }

    /// Evaluator rounds `task` may have: the cap, plus any the operator granted.
    fn cap_for(&self, task: &str) -> u64 {
        self.opts.max_attempts + self.records.get(task).granted
    }

    /// Why a failed task waits for the operator rather than being worked again, if it does:
    /// the operator failed it, or its `reviews` reached the cap. A task that failed otherwise
    /// (iterations, no case) is retried by a resume.
    fn failed_waiting(&self, task: &str, reviews: u64) -> Option<&'static str> {
        let record = self.records.get(task);
        if record.state != TaskState::Failed {
            return None;
        }
        if record.failed_because == Some(StopReason::OperatorFail) {
            Some("was failed by the operator")
        } else if reviews >= self.cap_for(task) {
            Some("failed at the attempt cap")
        } else {
            None
        }
    }

    fn settled(&self, task: &str) -> bool {
        self.records.state(task).is_settled()
    }

    fn fail_task(&mut self, task: &Task, reason: StopReason) -> Result<Ended> {
        self.gate(&task.id, GateEvent::Failed, reason.as_str(), 0)?;
        self.records.update(&task.id, |r| r.failed_because = Some(reason.clone()));
        self.emit(&TaskFailed {
            scope: scope(&task.id, 0, 0),
            reason: Some(reason.as_str().to_owned()),
            ..TaskFailed::default()
        })?;
        record::append_progress(&self.dir, &task.id, &format!("failed:{reason}"), &task.title)?;
        self.write_status()?;
        Ok(Ended { reason, detail: Some(format!("task {} failed", task.id)) })
    }

    /// The commit `task` started from, as recorded when it started; the branch tip when the
    /// log does not say (a session from before harrow recorded it).
    fn task_base(&self, task: &str) -> Result<String> {
        match self.records.get(task).base {
            Some(base) => Ok(base),
            None => self.workspace.tip().map_err(HarnessError::from),
        }
    }

    /// Keeps the worktree as it is on a ref outside the branches (see
    /// [`Workspace::keep`]) and lets the git guard know the ref is harrow's.
    /// Holds `task` for the operator because of `why`, and the end the run stops with.
    fn hold(&mut self, task: &str, why: &str, attempt: u64) -> Result<TaskEnd> {
        self.gate(task, GateEvent::HeldForOperator, why, attempt)?;
        Ok(TaskEnd::Stop(Ended {
            reason: StopReason::NeedsOperator,
            detail: Some(format!("task {task} waits for the operator: {why}")),
        }))
    }

    /// Keeps the worktree as it is now as the attempt `name` (and a copy in the session
    /// folder). A failure is returned as the reason, for the caller to hold the task on: the
    /// work could not be pinned down, so it must not go further unwatched.
    fn keep_work(
        &mut self,
        name: &str,
        base: &str,
        message: &str,
    ) -> Result<Result<String, String>> {
        let kept = match self.workspace.keep(name, base, message) {
            Ok(kept) => kept,
            Err(e) => return Ok(Err(format!("the work could not be kept as it was checked: {e}"))),
        };
        let copy = crate::hands::session_store::SessionStore::of(&self.dir);
        if let Err(e) = self.workspace.copy_kept(&copy, &kept) {
            return Ok(Err(format!("the kept work could not be copied: {e}")));
        }
        if let Some(guard) = &mut self.guard {
            guard.record().map_err(|source| HarnessError::Git {
                what: "cannot record the worktree's git state",
                source,
            })?;
        }
        Ok(Ok(kept.oid.to_string()))
    }

    /// Lands an accepted task: its commit on the session branch (only the work that was
    /// judged), then `task_done` and `commit`. Work that cannot land — it changed after it was
    /// judged, or git refused — holds the task for the operator, its work kept, and the run
    /// stops there with that reason (returned), never with an error.
    fn finish_accepted(&mut self, task: &Task, a: Acceptance) -> Result<Option<Ended>> {
        if self.lane.is_some() {
            return self.land_decided(task, a);
        }
        let base = self.task_base(&task.id)?;
        match self.commit_judged(task, &a, &base) {
            Ok(sha) => {
                self.record_landed(task, a, sha)?;
                self.write_status()?;
                record::write_summary(&self.dir, self.writer.summary())?;
                self.checkpoint("running")?;
                Ok(None)
            }
            Err(e) => self
                .landing_failed(task, &format!("its accepted work could not be committed: {e}"))
                .map(Some),
        }
    }

    /// Commits the worktree as `task`'s accepted work on top of `base` — only the work that
    /// was judged, when a verdict judged it — on the worktree's branch.
    fn commit_judged(
        &self,
        task: &Task,
        a: &Acceptance,
        base: &str,
    ) -> std::result::Result<Option<String>, crate::hands::workspace::WorkspaceError> {
        let judged = a.judged.as_deref();
        self.workspace.commit_task(&task.id, &task.title, &self.id, a.review, Some(base), judged)
    }

    /// Holds an accepted task whose work could not land, and says how the run stops.
    fn landing_failed(&mut self, task: &Task, why: &str) -> Result<Ended> {
        let (_, attempt) = self.writer.position(&task.id);
        self.gate(&task.id, GateEvent::LandingFailed, why, attempt)?;
        self.write_status()?;
        Ok(Ended {
            reason: StopReason::NeedsOperator,
            detail: Some(format!("task {} waits for the operator: {why}", task.id)),
        })
    }

    /// Logs an accepted task's `task_done` and `commit` once its commit is on the session
    /// branch, and warns later tasks when it was accepted below the bar.
    fn record_landed(&mut self, task: &Task, a: Acceptance, sha: Option<String>) -> Result<()> {
        let below_bar = a.review == Review::BelowBar;
        let last = a.last.filter(|_| below_bar);
        let (iter, attempt) = self.writer.position(&task.id);
        let done = TaskDone {
            scope: scope(&task.id, iter, attempt),
            summary: Some(a.summary),
            below_bar: Some(below_bar),
            by_operator: a.by_operator.then_some(true),
            reviewed: (a.review == Review::Unreviewed).then_some(false),
            last_category: last.as_ref().and_then(|l| l.category().map(str::to_owned)),
            last_outcome: last.as_ref().map(|l| l.code().to_owned()),
            ..TaskDone::default()
        };
        self.emit(&done)?;
        self.emit(&Commit {
            scope: scope(&task.id, iter, attempt),
            sha,
            message: Some(format!("{}: {}", task.id, task.title)),
            ..Commit::default()
        })?;
        self.writer.sync()?;
        if let Some(guard) = &mut self.guard {
            guard.record().map_err(|source| HarnessError::Git {
                what: "cannot record the worktree's git state",
                source,
            })?;
        }
        self.copy_session_branch()?;
        record::append_progress(&self.dir, &task.id, progress_outcome(a.review), &task.title)?;
        if let Some(last) = &last {
            self.records.warn(below_bar_warning(&task.id, &task.title, last));
        }
        Ok(())
    }

    /// Copies the session branch, as the landing just left it, into the session folder's copy
    /// of its git state (see [`crate::hands::session_store`]): the branch outlives the clone.
    fn copy_session_branch(&self) -> Result<()> {
        // A lane's worktree shares the session's repository, and names its branch.
        let store = crate::hands::session_store::SessionStore::of(&self.dir);
        let branch = self.workspace.session_branch();
        self.workspace.copy_branch(&store, &branch).map_err(HarnessError::from)
    }

    /// Logs the user message a role was sent (whole: harrow keeps what Tilth capped).
    fn log_prompt(&mut self, sc: &Scope, role: &str, prompt: &str) -> Result<()> {
        let event = PromptAssembled {
            scope: sc.clone(),
            role: Some(role.into()),
            chars: Some(prompt.chars().count() as u64),
            content: Some(prompt.to_owned()),
            truncated: Some(false),
            ..PromptAssembled::default()
        };
        self.emit(&event)
    }

    /// Takes the user's part of the repository as it is just before a tool call or validator
    /// run, so only what changes during it is put back afterwards. A guard that cannot take
    /// it is blind: the reason is kept, and the check after the call holds the task.
    fn guard_before(&mut self) {
        self.guard_blind = match &mut self.guard {
            Some(guard) => guard.before_call().err().map(|e| e.to_string()),
            None => None,
        };
    }

    /// Puts back any git state a tool call or validator changed (refs, HEAD, config, hooks),
    /// logs it, and says what the worker is told. A guard that could not look (before or after
    /// the call) never lets the work go on unchecked: the task is held for the operator.
    fn guard_git(&mut self, task: &str, sc: &Scope, tool: &str) -> Result<Guarded> {
        let Some(guard) = &mut self.guard else { return Ok(Guarded::Clean) };
        let looked = match self.guard_blind.take() {
            Some(why) => Err(why),
            None => guard.restore().map_err(|e| e.to_string()),
        };
        let restored = match looked {
            Ok(r) if r.is_empty() => return Ok(Guarded::Clean),
            Ok(r) => r.join(", "),
            Err(e) => {
                let why = format!(
                    "the repository's git state could not be checked after {tool} ({e}), so what the worker did to it is unknown"
                );
                let attempt = sc.attempt.unwrap_or(0);
                self.gate(task, GateEvent::HeldForOperator, &why, attempt)?;
                return Ok(Guarded::Held(Ended {
                    reason: StopReason::NeedsOperator,
                    detail: Some(format!("task {task} waits for the operator: {why}")),
                }));
            }
        };
        self.emit(&HookRun {
            scope: sc.clone(),
            tool: Some(tool.into()),
            hook: Some("git_guard".into()),
            outcome: Some("restored".into()),
            reason: Some(restored.clone()),
            ..HookRun::default()
        })?;
        Ok(Guarded::PutBack(format!(
            "[The workspace's git history and settings are kept as they were; put back: {restored}. Do not move HEAD or branches, or change git configuration or hooks: commit nothing yourself, your changes are committed for you.]"
        )))
    }

    fn feedback(&mut self, sc: &Scope, kind: &str, content: &str) -> Result<()> {
        self.emit(&FeedbackSent {
            scope: sc.clone(),
            kind: Some(kind.into()),
            content: Some(content.into()),
            ..FeedbackSent::default()
        })
    }
}
