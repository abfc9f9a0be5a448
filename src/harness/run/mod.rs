//! The Ralph loop, in lanes: the scheduler (`Run`) starts a lane (`Lane`) for each task that
//! may start — one at a time, or several of a graph plan at once. In its lane a task has a
//! worker conversation that works with tools until it submits a case; validators, then the
//! evaluator; the gate decides; a reject goes back into the same conversation. Everything that
//! happens is appended to the session log.

mod agent_worker;
mod best_of;
mod candidacy;
mod compaction;
mod decide;
mod desk;
mod escalate;
mod landing;
mod lane;
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
mod witness;
mod worker;

pub use desk::Shared;
pub use recover::Restart;

use crate::session::vocabulary::CheckpointStatus;
use crate::session::vocabulary::Outcome;
use desk::Desk;
use lane::Lane;

use super::case::{self, Case};
use super::gate::{GateEvent, TaskState, transition};
use super::learnings;
use super::memory::{self, EvaluatorInputs, LedgerEntry, WorkerContext};
use super::plan::{Plan, Task};
use super::record::{self};
use super::turns::tool_message;
use super::verdict::{self, Verdict};
use crate::brain::client::{Brain, BrainError, CallTag, Reply, Role};
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
use std::io;
use std::path::{Path, PathBuf};
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
    /// An ACP agent working as the worker failed (it is held, not the run, where it can be).
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
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
    /// An ACP agent that works the tasks instead of harrow's own tool loop.
    pub agent: Option<crate::agent::AgentSpec>,
    /// What an accept whose criteria lack a witness harrow saw gets.
    pub evidence: crate::harness::evidence::EvidenceMode,
    /// How long a cited test may run on each tree.
    pub witness_test_secs: u64,
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
            agent: None,
            evidence: crate::harness::evidence::EvidenceMode::default(),
            witness_test_secs: crate::harness::evidence::TEST_SECS,
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
    /// One of a best-of task's attempts was judged: its verdict is on its lane, for the
    /// task's own lane to weigh (it never reaches the scheduler).
    Judged,
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

/// One run of a plan in a session: the scheduler. It owns the run's facts (shared with its
/// lanes), the session writer and the session's own worktree, and works the plan in lanes.
#[derive(Debug)]
pub struct Run {
    shared: Arc<Shared>,
    pub writer: SessionWriter,
    /// The session's own worktree, on the branch accepted work lands on.
    pub workspace: Workspace,
    /// The hands a lane's are made from (their settings and sandbox).
    pub hands: Hands,
    /// The endpoints each lane starts from.
    pub brain: Brain,
    /// The session worktree's git guard, lent to the lane that works in place.
    guard: Option<GitGuard>,
    control: ControlState,
    /// The lanes at work and those waiting for a decision.
    book: lanes::LaneBook,
}

/// What the operator has asked of the run and it has not finished acting on.
#[derive(Debug, Default)]
struct ControlState {
    offset: u64,
    paused: bool,
    /// Tasks left before pausing again, after a `step`.
    steps_left: Option<u32>,
    /// The task a `step` let start, whose end the run pauses at.
    stepping: Option<String>,
    stop: Option<String>,
    /// Notes for a task's next attempt: by task, or for whichever task runs next. A lane
    /// takes its task's as it opens.
    notes: Vec<(Option<String>, String)>,
    /// `stop --now` arrived: the tasks at work are left unfinished.
    stop_now: bool,
    /// Decisions about a task at work that arrived while it ran: applied (or refused) at
    /// the next boundary.
    deferred: Vec<control::Command>,
}

/// Takes the notes meant for `task` (or for whichever task runs next) out of `notes`.
fn take_notes(notes: &mut Vec<(Option<String>, String)>, task: &str) -> Option<String> {
    let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(notes)
        .into_iter()
        .partition(|(t, _)| t.as_deref().is_none_or(|t| t == task));
    *notes = rest;
    let texts: Vec<String> = mine.into_iter().map(|(_, n)| n).collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
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
fn progress_outcome(review: Review) -> Outcome {
    match review {
        Review::BelowBar => Outcome::AcceptedBelowBar,
        Review::Unreviewed => Outcome::Unreviewed,
        Review::Accepted | Review::Operator => Outcome::Accepted,
    }
}

/// What interrupted a run, in its `stop` detail: SIGTERM or SIGHUP when one arrived, else
/// Ctrl-C.
pub(super) fn interrupted_by() -> &'static str {
    crate::signals::received().map_or("Ctrl-C", crate::signals::name)
}

impl Desk for Run {
    fn shared(&self) -> &Shared {
        &self.shared
    }
    fn writer(&mut self) -> &mut SessionWriter {
        &mut self.writer
    }
    fn session(&self) -> &Workspace {
        &self.workspace
    }
    fn control_offset(&self) -> u64 {
        self.control.offset
    }
}

impl Run {
    pub fn new(p: Parts) -> Run {
        let records = records::Records::new(&p.plan);
        Run::assembled(p, records, 0)
    }

    /// A run that continues a session: states, spend and warnings come from its folder.
    pub fn resumed(p: Parts, r: &super::resume::Restored) -> Run {
        let records = records::Records::restored(&p.plan, r);
        Run::assembled(p, records, r.control_offset)
    }

    fn assembled(p: Parts, records: records::Records, offset: u64) -> Run {
        let shared = Shared {
            id: p.id,
            dir: p.dir,
            plan: p.plan,
            opts: p.opts,
            records,
            interrupted: Arc::default(),
            started: Instant::now(),
        };
        Run {
            shared: Arc::new(shared),
            writer: p.writer,
            workspace: p.workspace,
            hands: p.hands,
            brain: p.brain,
            guard: None,
            control: ControlState { offset, ..ControlState::default() },
            book: lanes::LaneBook::default(),
        }
    }

    /// The run's facts: its id, folder, plan and options.
    pub fn facts(&self) -> &Shared {
        &self.shared
    }

    /// Tasks not yet accepted or skipped, in plan order.
    pub fn unfinished(&self) -> Vec<String> {
        self.shared.unfinished()
    }

    /// Lands the work of every task whose accept was logged but not landed (see
    /// [`Lane::honour_accepts`]), in the session's own worktree.
    pub fn honour_accepts(&mut self, r: &super::resume::Restored) -> Result<Vec<String>> {
        let honoured = self.at_home(|lane| lane.honour_accepts(r))?;
        if !honoured.is_empty() {
            self.write_status()?;
            record::write_summary(&self.shared.dir, self.writer.summary())?;
            self.checkpoint(CheckpointStatus::Running)?;
        }
        Ok(honoured)
    }

    /// Readies the session's worktree for the first unfinished task (see
    /// [`Lane::prepare_restart`]).
    pub fn prepare_restart(&mut self, r: &super::resume::Restored) -> Result<Restart> {
        // A crash while a witness's test ran left its trees beside the worktree it was for.
        let home = self.workspace.worktree.parent().map(Path::to_path_buf);
        let lanes = self.workspace.lanes_folder();
        witness::sweep_leftovers(home.iter().chain([&lanes]));
        self.at_home(|lane| lane.prepare_restart(r))
    }

    /// Gives every accepted task its `task_done` and one commit (see
    /// [`Lane::repair_accepted`]).
    pub fn repair_accepted(&mut self, r: &super::resume::Restored) -> Result<Vec<String>> {
        self.at_home(|lane| lane.repair_accepted(r))
    }

    /// Runs every pending task in order until the plan is done or something stops it.
    pub async fn run(&mut self) -> Result<Ended> {
        self.checkpoint(CheckpointStatus::Running)?;
        // A reply a crashed run left in flight is not in flight any more.
        live::clear(&self.shared.dir);
        self.guard = Some(lane::guard_on(&self.workspace)?);
        let ended = self.work_lanes().await?;
        self.emit(&Stop {
            reason: Some(ended.reason.as_str().to_owned()),
            error: ended.detail.clone(),
            ..Stop::default()
        })?;
        self.writer.sync()?;
        let status = match &ended.reason {
            StopReason::AllDone => CheckpointStatus::AllDone,
            r if r.is_task_failure() => CheckpointStatus::Failed,
            _ => CheckpointStatus::Paused,
        };
        self.checkpoint(status)?;
        record::write_summary(&self.shared.dir, self.writer.summary())?;
        Ok(ended)
    }

    /// In a graph plan, why `task` cannot start: a task it depends on was not accepted
    /// (skipped, or left failed). It is then marked blocked, once; a blocked task whose
    /// dependencies were accepted since (a resume after a decision) is unblocked.
    fn waits_on(&mut self, task: &str) -> Result<Option<String>> {
        if !self.shared.plan.is_graph() {
            return Ok(None);
        }
        let missing: Vec<String> = self
            .shared
            .plan
            .dependencies(task)
            .into_iter()
            .filter(|d| !self.shared.records.state(d).is_accepted())
            .map(|d| format!("{d} ({})", self.shared.records.state(d)))
            .collect();
        let state = self.shared.records.state(task);
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
}
