//! The Ralph loop: tasks one at a time; per task a worker conversation that works with tools
//! until it submits a case; validators, then the evaluator; the gate decides; a reject goes
//! back into the same conversation. Everything that happens is appended to the session log.

use super::case::{self, Case};
use super::control::{self, Op};
use super::gate::{GateEvent, TaskState, transition};
use super::learnings;
use super::memory::{self, EvaluatorInputs, LedgerEntry, WorkerContext};
use super::plan::{Plan, Task};
use super::record::{self, CheckpointFacts};
use super::verdict::{self, Verdict};
use crate::brain::client::{Attempt, Brain, BrainError, CallTag, Reply, Role};
use crate::hands::Hands;
use crate::hands::validators::{self, ValidatorSpec};
use crate::hands::workspace::Workspace;
use crate::session::event::ProposedLearnings;
use crate::session::event::{
    AssistantMessage, Commit, FeedbackSent, ModelCall, Nudge, OperatorAction, ParseError,
    PromptAssembled, Scope, Stop, TaskDone, TaskFailed, TaskState as TaskStateEvent, ToolCall,
    ToolCallRecord, Verdict as VerdictEvent,
};
use crate::session::summary::Usage;
use crate::session::timestamp;
use crate::session::writer::SessionWriter;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The worker's system prompt, embedded.
pub const WORKER_PROMPT: &str = include_str!("../../prompts/worker.md");
/// The evaluator's system prompt, embedded.
pub const EVALUATOR_PROMPT: &str = include_str!("../../prompts/evaluator.md");
/// What a quiet worker is told.
const NUDGE: &str = "You replied without calling a tool. If the task is done and verified, call submit_case; otherwise continue with the tools.";
const NUDGE_LENGTH: &str = "Your reply was cut off by the length limit. Continue in smaller steps, calling one tool at a time.";

/// What to do when a task is still rejected at the rework cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
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
    /// After each accepted task, ask whether it taught something worth writing down.
    pub learnings: bool,
    /// An accept with a 0–100 score below this is a reject.
    pub score_threshold: Option<f64>,
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
            learnings: false,
            score_threshold: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The `stop` reason: `all_done`, a failure reason, a cap, `needs_operator`, `provider_failure`, `error`.
    pub reason: String,
    pub detail: Option<String>,
}

impl Ended {
    pub fn success(&self) -> bool {
        self.reason == "all_done"
    }
}

/// A task's result, inside the loop.
enum TaskEnd {
    Accepted { below_bar: bool, last_category: Option<String>, summary: String },
    Failed(String),
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
    states: BTreeMap<String, TaskState>,
    usage: BTreeMap<String, Usage>,
    tokens_total: u64,
    started: Instant,
    warnings: Vec<String>,
    control: ControlState,
}

/// What the operator has asked for and the loop has not finished acting on.
#[derive(Debug, Default)]
struct ControlState {
    offset: u64,
    paused: bool,
    /// Tasks left before pausing again, after a `step`.
    steps_left: Option<u32>,
    stop: Option<String>,
    /// Notes for the next attempt: by task, or for whichever task runs next.
    notes: Vec<(Option<String>, String)>,
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
fn below_bar_warning(id: &str, title: &str, category: Option<&str>) -> String {
    let category = category.unwrap_or("a rejection");
    format!(
        "{id} ({title}) was accepted below the quality bar after its last review rejected it as {category}; do not rely on it blindly."
    )
}

fn tool_message(id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

impl Run {
    pub fn new(p: Parts) -> Run {
        let states = p.plan.tasks.iter().map(|t| (t.id.clone(), TaskState::Pending)).collect();
        Run {
            id: p.id,
            dir: p.dir,
            writer: p.writer,
            plan: p.plan,
            workspace: p.workspace,
            hands: p.hands,
            brain: p.brain,
            opts: p.opts,
            states,
            usage: BTreeMap::new(),
            tokens_total: 0,
            started: Instant::now(),
            warnings: Vec::new(),
            control: ControlState::default(),
        }
    }

    /// A run that continues a session: states, spend and warnings come from its folder.
    pub fn resumed(p: Parts, r: &super::resume::Restored) -> Run {
        let mut run = Run::new(p);
        for (task, state) in &r.states {
            if run.states.contains_key(task) {
                run.states.insert(task.clone(), *state);
            }
        }
        run.usage.clone_from(&r.usage);
        run.tokens_total = r.tokens_total;
        run.control.offset = r.control_offset;
        for (task, category) in &r.below_bar {
            let title =
                run.plan.tasks.iter().find(|t| &t.id == task).map_or("", |t| t.title.as_str());
            run.warnings.push(below_bar_warning(task, title, category.as_deref()));
        }
        run
    }

    /// Makes sure every accepted task has its `task_done` and exactly one commit: a crash can
    /// fall between the accept and the commit. Returns the tasks it repaired.
    pub fn repair_accepted(&mut self, r: &super::resume::Restored) -> io::Result<Vec<String>> {
        let mut repaired = Vec::new();
        let accepted: Vec<Task> = self
            .plan
            .tasks
            .iter()
            .filter(|t| {
                matches!(self.states.get(&t.id), Some(TaskState::Done | TaskState::DoneBelowBar))
            })
            .cloned()
            .collect();
        for task in &accepted {
            if r.committed.contains(&task.id) {
                continue;
            }
            let below_bar = self.states.get(&task.id) == Some(&TaskState::DoneBelowBar);
            if !r.done_logged.contains(&task.id) {
                self.emit(
                    "task_done",
                    &TaskDone {
                        scope: scope(&task.id, 0, 0),
                        below_bar: Some(below_bar),
                        ..TaskDone::default()
                    },
                )?;
            }
            let sha = match self.workspace.find_task_commit(&task.id).map_err(io::Error::other)? {
                Some(sha) => Some(sha),
                None => self
                    .workspace
                    .commit_task(&task.id, &task.title, &self.id)
                    .map_err(io::Error::other)?,
            };
            let mut commit = Commit {
                scope: scope(&task.id, 0, 0),
                sha,
                message: Some(format!("{}: {}", task.id, task.title)),
                ..Commit::default()
            };
            commit.extra.insert("recovered".into(), json!(true));
            self.emit("commit", &commit)?;
            record::append_progress(
                &self.dir,
                &task.id,
                if below_bar { "done (below the bar)" } else { "done" },
                &task.title,
            )?;
            repaired.push(task.id.clone());
        }
        record::write_task_status(&self.dir, &self.status_map())?;
        self.writer.sync()?;
        Ok(repaired)
    }

    /// Tasks not yet accepted or skipped, in plan order.
    pub fn unfinished(&self) -> Vec<String> {
        self.plan
            .tasks
            .iter()
            .filter(|t| !self.states.get(&t.id).is_some_and(|s| s.is_settled()))
            .map(|t| t.id.clone())
            .collect()
    }

    fn emit<P: serde::Serialize>(&mut self, kind: &str, payload: &P) -> io::Result<()> {
        self.writer.append(kind, payload).map(|_| ())
    }

    /// Moves a task through the gate and logs the move.
    fn gate(
        &mut self,
        task: &str,
        event: GateEvent,
        reason: &str,
        attempt: u64,
    ) -> io::Result<TaskState> {
        let from = self.states.get(task).copied().unwrap_or(TaskState::Pending);
        let to = transition(from, event).map_err(io::Error::other)?;
        self.states.insert(task.to_owned(), to);
        self.emit(
            "task_state",
            &TaskStateEvent {
                scope: scope(task, 0, attempt),
                from: Some(from.to_string()),
                to: Some(to.to_string()),
                reason: Some(reason.to_owned()),
                ..TaskStateEvent::default()
            },
        )?;
        Ok(to)
    }

    fn status_map(&self) -> BTreeMap<String, String> {
        self.states
            .iter()
            .filter(|(_, s)| s.is_terminal())
            .map(|(k, s)| (k.clone(), s.to_string()))
            .collect()
    }

    fn checkpoint(&self, status: &str) -> io::Result<()> {
        record::write_checkpoint(
            &self.dir,
            &CheckpointFacts {
                id: &self.id,
                source: &self.workspace.source,
                plan: &self.plan.source,
                workspace: &self.workspace.worktree,
                branch: &self.workspace.branch,
                base: &self.workspace.base,
                usage: &self.usage,
                status,
            },
        )
    }

    fn record_call(
        &mut self,
        role: Role,
        scope: &Scope,
        a: &Attempt,
        reply: Option<&Reply>,
    ) -> io::Result<()> {
        let u = a.usage;
        self.tokens_total += u.prompt + u.completion;
        let entry = self.usage.entry(role.as_str().to_owned()).or_default();
        entry.prompt += u.prompt as i64;
        entry.eval += u.completion as i64;
        entry.total += (u.prompt + u.completion) as i64;
        entry.cached += u.cached as i64;
        entry.reasoning += u.reasoning as i64;
        entry.cost += u.cost;
        let call = ModelCall {
            scope: scope.clone(),
            phase: (role == Role::Evaluator).then(|| "evaluator".to_owned()),
            role: Some(role.as_str().into()),
            call_attempt: Some(u64::from(a.number)),
            prompt_tokens: Some(u.prompt),
            eval_tokens: Some(u.completion),
            cached_tokens: Some(u.cached),
            reasoning_tokens: Some(u.reasoning),
            cost: Some(u.cost),
            tokens_used_total: Some(self.tokens_total),
            health: Some(a.health.into()),
            health_detail: a.detail.clone(),
            retry_backoff_seconds: a.backoff.map(|b| b.as_secs_f64()),
            finish_reason: reply.and_then(|r| r.finish_reason.clone()),
            model: reply.and_then(|r| r.model.clone()),
            provider: reply.and_then(|r| r.provider.clone()),
            response_id: reply.and_then(|r| r.response_id.clone()),
            duration_ms: Some(a.duration.as_millis() as u64),
            ..ModelCall::default()
        };
        self.emit("model_call", &call)?;
        if let Some(r) = reply {
            self.emit(
                "assistant_message",
                &AssistantMessage {
                    scope: scope.clone(),
                    role: Some(role.as_str().into()),
                    content: r.content.clone(),
                    reasoning: r.reasoning.clone(),
                    tool_calls: Some(r.tool_calls.clone()),
                    ..AssistantMessage::default()
                },
            )?;
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
    ) -> io::Result<Result<Reply, BrainError>> {
        let (role, task, attempt) = (tag.role, tag.task, tag.attempt);
        let brain = self.brain.clone();
        let mut tries: Vec<(Attempt, Option<Reply>)> = Vec::new();
        let result =
            brain.chat(&tag, messages, tools, |a, r| tries.push((a.clone(), r.cloned()))).await;
        let scope = scope(task, iter, attempt);
        for (a, r) in &tries {
            self.record_call(role, &scope, a, r.as_ref())?;
        }
        Ok(result)
    }

    fn cap_reached(&self) -> Option<String> {
        let caps = self.opts.caps;
        if caps.wall_clock.is_some_and(|w| self.started.elapsed() >= w) {
            return Some("wall_clock".into());
        }
        if caps.tokens.is_some_and(|t| self.tokens_total >= t) {
            return Some("token_cap".into());
        }
        let dollars: f64 = self.usage.values().map(|u| u.cost).sum();
        if caps.dollars.is_some_and(|d| dollars >= d) {
            return Some("cost_cap".into());
        }
        None
    }

    /// Runs every pending task in order until the plan is done or something stops it.
    pub async fn run(&mut self) -> io::Result<Ended> {
        self.checkpoint("running")?;
        let tasks = self.plan.tasks.clone();
        let ended = 'run: {
            for task in &tasks {
                if self.settled(&task.id) {
                    continue;
                }
                if let Some(end) = self.boundary().await? {
                    break 'run end;
                }
                if self.settled(&task.id) {
                    continue;
                }
                match self.run_task(task).await? {
                    TaskEnd::Accepted { below_bar, last_category, summary } => {
                        self.finish_accepted(
                            task,
                            below_bar,
                            last_category.as_deref(),
                            summary,
                            false,
                        )?;
                        if self.opts.learnings {
                            self.propose_learning(task).await?;
                        }
                    }
                    TaskEnd::Failed(reason) => break 'run self.fail_task(task, &reason)?,
                    TaskEnd::Stop(stop) => break 'run stop,
                }
                self.count_step();
            }
            Ended { reason: "all_done".into(), detail: None }
        };
        self.emit(
            "stop",
            &Stop {
                reason: Some(ended.reason.clone()),
                error: ended.detail.clone(),
                ..Stop::default()
            },
        )?;
        self.writer.sync()?;
        let status = match ended.reason.as_str() {
            "all_done" => "all_done",
            "iter_cap" | "evaluator_cap" | "no_case" | "error" | "operator_fail" => "failed",
            _ => "paused",
        };
        self.checkpoint(status)?;
        record::write_summary(&self.dir, self.writer.summary())?;
        Ok(ended)
    }

    /// The learnings step for an accepted task. Never stops the run.
    async fn propose_learning(&mut self, task: &Task) -> io::Result<()> {
        let ledger = record::read_ledger(&self.dir, &task.id);
        let project = memory::project_context(&self.workspace.worktree, &self.opts.context_files);
        let mut prompt = format!("# Task {} — {}\n\n", task.id, task.title);
        for c in &task.criteria {
            let _ = writeln!(prompt, "- {c}");
        }
        if let Some((p, _)) = &project {
            let _ = write!(prompt, "\n## Project notes today\n\n{p}\n");
        }
        if let Some(last) = ledger.last() {
            let _ = write!(prompt, "\n## What changed\n\n{}\n", last.diff_summary);
        }
        if ledger.len() > 1 {
            let _ = write!(
                prompt,
                "\n## Reviews before it was accepted\n\n{}\n",
                memory::render_ledger(&ledger)
            );
        }
        let sc = scope(&task.id, 0, 0);
        self.log_prompt(&sc, "learnings", &prompt)?;
        let messages = vec![
            json!({"role": "system", "content": learnings::LEARNINGS_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let reply = self
            .call(
                CallTag { role: Role::Learnings, task: &task.id, attempt: 1, turn: 0 },
                0,
                &messages,
                &[],
            )
            .await?;
        let mut event =
            ProposedLearnings { scope: sc, emitted: Some(false), ..ProposedLearnings::default() };
        match reply.map(|r| learnings::parse(r.content.as_deref().unwrap_or(""))) {
            Ok(learnings::Proposal::Learning(text)) => {
                learnings::append(&self.dir, &self.id, &task.id, &task.title, &text)?;
                event.emitted = Some(true);
                event.entry = Some(text);
            }
            Ok(learnings::Proposal::Nothing) => event.reason = Some("no_proposal".into()),
            Ok(learnings::Proposal::Unparseable(raw)) => {
                event.reason = Some("unparseable".into());
                event.raw = Some(raw);
            }
            Err(e) => event.reason = Some(format!("unreachable: {e}")),
        }
        self.emit("proposed_learnings", &event)
    }

    fn settled(&self, task: &str) -> bool {
        self.states.get(task).is_some_and(|s| s.is_settled())
    }

    fn fail_task(&mut self, task: &Task, reason: &str) -> io::Result<Ended> {
        self.gate(&task.id, GateEvent::Failed, reason, 0)?;
        self.emit(
            "task_failed",
            &TaskFailed {
                scope: scope(&task.id, 0, 0),
                reason: Some(reason.to_owned()),
                ..TaskFailed::default()
            },
        )?;
        record::append_progress(&self.dir, &task.id, &format!("failed:{reason}"), &task.title)?;
        record::write_task_status(&self.dir, &self.status_map())?;
        Ok(Ended { reason: reason.to_owned(), detail: Some(format!("task {} failed", task.id)) })
    }

    /// After a task: a `step` pauses once its one task is done.
    fn count_step(&mut self) {
        if let Some(left) = self.control.steps_left {
            if left <= 1 {
                self.control.steps_left = None;
                self.control.paused = true;
            } else {
                self.control.steps_left = Some(left - 1);
            }
        }
    }

    /// A safe point between tasks: read operator commands, apply them, honour caps, and wait
    /// while paused. Returns how the run ends, if it ends here.
    async fn boundary(&mut self) -> io::Result<Option<Ended>> {
        let mut announced = false;
        loop {
            if let Some(end) = self.poll_control()? {
                return Ok(Some(end));
            }
            if let Some(why) = self.control.stop.take() {
                return Ok(Some(Ended { reason: "operator_stop".into(), detail: Some(why) }));
            }
            if let Some(cap) = self.cap_reached() {
                return Ok(Some(Ended { reason: cap, detail: None }));
            }
            if !self.control.paused {
                if announced {
                    self.checkpoint("running")?;
                }
                return Ok(None);
            }
            if !announced {
                self.checkpoint("paused")?;
                announced = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Reads and applies new operator commands, logging each. A `fail` decision ends the run.
    fn poll_control(&mut self) -> io::Result<Option<Ended>> {
        let (commands, end) = control::read_new(&self.dir, self.control.offset)?;
        if end == self.control.offset {
            return Ok(None);
        }
        self.control.offset = end;
        let mut ended = None;
        for command in commands {
            let mut action = OperatorAction::default();
            action.extra.insert("control_offset".into(), json!(end));
            let cmd = match command {
                Ok(c) => c,
                Err(why) => {
                    action.action = Some("unreadable".into());
                    action.reason = Some(why);
                    self.emit("operator_action", &action)?;
                    continue;
                }
            };
            action.scope.task_id.clone_from(&cmd.task);
            action.action = Some(cmd.op.as_str().into());
            action.reason.clone_from(&cmd.reason);
            action.note.clone_from(&cmd.text);
            action.source = Some(cmd.source.clone());
            self.emit("operator_action", &action)?;
            match cmd.op {
                Op::Pause => self.control.paused = true,
                Op::Resume => {
                    self.control.paused = false;
                    self.control.steps_left = None;
                }
                Op::Step => {
                    self.control.paused = false;
                    self.control.steps_left = Some(1);
                }
                Op::Stop => {
                    self.control.stop = Some(
                        cmd.reason.clone().unwrap_or_else(|| "the operator asked to stop".into()),
                    );
                }
                Op::Note => {
                    if let Some(text) = cmd.text.clone() {
                        self.control.notes.push((cmd.task.clone(), text));
                    }
                }
                Op::Approve | Op::Reject | Op::ForceAccept | Op::Skip | Op::Fail => {
                    if let Some(end) = self.decide(&cmd)? {
                        ended = Some(end);
                    }
                }
            }
        }
        Ok(ended)
    }

    /// Applies a decision on a task: the one named, else the one waiting for the operator.
    fn decide(&mut self, cmd: &control::Command) -> io::Result<Option<Ended>> {
        let target = cmd.task.clone().or_else(|| {
            self.states
                .iter()
                .find(|(_, s)| **s == TaskState::NeedsOperator)
                .map(|(t, _)| t.clone())
        });
        let Some(task) = target.and_then(|id| self.plan.tasks.iter().find(|t| t.id == id).cloned())
        else {
            let mut refused = OperatorAction {
                action: Some("refused".into()),
                reason: Some(format!(
                    "{} names no task of the plan and none is waiting for a decision",
                    cmd.op.as_str()
                )),
                ..OperatorAction::default()
            };
            refused.extra.insert("control_offset".into(), json!(self.control.offset));
            self.emit("operator_action", &refused)?;
            return Ok(None);
        };
        let reason = cmd.reason.clone().unwrap_or_default();
        let event = match cmd.op {
            Op::Approve => GateEvent::Accepted,
            Op::ForceAccept => GateEvent::ForceAccepted,
            Op::Skip => GateEvent::Skipped,
            Op::Fail => GateEvent::Failed,
            _ => {
                let guidance = cmd.text.clone().unwrap_or_default();
                self.control.notes.push((
                    Some(task.id.clone()),
                    format!("The operator rejected the last attempt ({reason}). {guidance}")
                        .trim()
                        .to_owned(),
                ));
                return Ok(None);
            }
        };
        let from = self.states.get(&task.id).copied().unwrap_or(TaskState::Pending);
        if transition(from, event).is_err() {
            let mut refused = OperatorAction {
                action: Some("refused".into()),
                reason: Some(format!(
                    "{} cannot be applied to {} while it is {from}",
                    cmd.op.as_str(),
                    task.id
                )),
                ..OperatorAction::default()
            };
            refused.scope.task_id = Some(task.id.clone());
            refused.extra.insert("control_offset".into(), json!(self.control.offset));
            self.emit("operator_action", &refused)?;
            return Ok(None);
        }
        match cmd.op {
            Op::Approve | Op::ForceAccept => {
                let below_bar = cmd.op == Op::ForceAccept;
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                let last = record::read_ledger(&self.dir, &task.id)
                    .last()
                    .and_then(|e| e.verdict.rejection_category.clone());
                self.finish_accepted(
                    &task,
                    below_bar,
                    last.as_deref(),
                    format!("accepted by the operator: {reason}"),
                    true,
                )?;
                Ok(None)
            }
            Op::Skip => {
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                record::append_progress(&self.dir, &task.id, "skipped", &task.title)?;
                record::write_task_status(&self.dir, &self.status_map())?;
                Ok(None)
            }
            _ => self.fail_task(&task, "operator_fail").map(Some),
        }
    }

    fn finish_accepted(
        &mut self,
        task: &Task,
        below_bar: bool,
        last_category: Option<&str>,
        summary: String,
        by_operator: bool,
    ) -> io::Result<()> {
        let done = TaskDone {
            scope: scope(&task.id, 0, 0),
            summary: Some(summary),
            below_bar: Some(below_bar),
            by_operator: by_operator.then_some(true),
            last_category: last_category.map(str::to_owned),
            ..TaskDone::default()
        };
        self.emit("task_done", &done)?;
        self.writer.sync()?;
        let sha = self
            .workspace
            .commit_task(&task.id, &task.title, &self.id)
            .map_err(io::Error::other)?;
        self.emit(
            "commit",
            &Commit {
                scope: scope(&task.id, 0, 0),
                sha: sha.clone(),
                message: Some(format!("{}: {}", task.id, task.title)),
                ..Commit::default()
            },
        )?;
        self.writer.sync()?;
        let outcome = if below_bar { "done (below the bar)" } else { "done" };
        record::append_progress(&self.dir, &task.id, outcome, &task.title)?;
        record::write_task_status(&self.dir, &self.status_map())?;
        record::write_summary(&self.dir, self.writer.summary())?;
        self.checkpoint("running")?;
        if below_bar {
            self.warnings.push(below_bar_warning(&task.id, &task.title, last_category));
        }
        Ok(())
    }

    /// Takes the operator's notes meant for this task (or for whichever task runs next).
    fn take_notes(&mut self, task: &str) -> Option<String> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.control.notes)
            .into_iter()
            .partition(|(t, _)| t.as_deref().is_none_or(|t| t == task));
        self.control.notes = rest;
        let texts: Vec<String> = mine.into_iter().map(|(_, n)| n).collect();
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    }

    fn worker_prompt(&self, task: &Task, ledger: &[LedgerEntry], note: Option<&str>) -> String {
        let project = memory::project_context(&self.workspace.worktree, &self.opts.context_files);
        let progress = record::progress_tail(
            &self.dir,
            memory::PROGRESS_TAIL_LINES,
            memory::PROGRESS_MAX_CHARS,
        );
        let statuses: Vec<(String, String)> =
            self.states.iter().map(|(k, s)| (k.clone(), s.to_string())).collect();
        let ctx = WorkerContext {
            project: project.as_ref().map(|(t, _)| t.as_str()),
            progress: progress.as_deref(),
            statuses: &statuses,
            ledger,
            warnings: &self.warnings,
            operator_note: note,
        };
        memory::worker_prompt(&self.plan, task, &ctx)
    }

    /// One task, from a fresh conversation to accept, failure or a stop.
    async fn run_task(&mut self, task: &Task) -> io::Result<TaskEnd> {
        let ledger = record::read_ledger(&self.dir, &task.id);
        let mut attempt = ledger.len() as u64 + 1;
        self.gate(&task.id, GateEvent::Start, "task started", attempt)?;
        self.emit(
            "context_reset",
            &Scope { task_id: Some(task.id.clone()), attempt: Some(attempt), ..Scope::default() },
        )?;
        let note = self.take_notes(&task.id);
        let prompt = self.worker_prompt(task, &ledger, note.as_deref());
        self.log_prompt(&scope(&task.id, 0, attempt), "worker", &prompt)?;
        let mut messages = vec![
            json!({"role": "system", "content": WORKER_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let mut tools = Hands::schemas();
        tools.push(case::schema());
        let mut quiet = 0u64;
        let mut turn = 0usize;
        for iter in 1..=self.opts.max_iterations {
            let reply = match self
                .call(
                    CallTag { role: Role::Worker, task: &task.id, attempt, turn },
                    iter,
                    &messages,
                    &tools,
                )
                .await?
            {
                Ok(r) => r,
                Err(e) => {
                    let reason = if e.is_transient() { "provider_failure" } else { "error" };
                    return Ok(TaskEnd::Stop(Ended {
                        reason: reason.into(),
                        detail: Some(e.to_string()),
                    }));
                }
            };
            turn += 1;
            messages.push(reply.history_message());
            let (cases, work): (Vec<&ToolCallRecord>, Vec<&ToolCallRecord>) =
                reply.tool_calls.iter().partition(|c| c.name == "submit_case");
            let sc = scope(&task.id, iter, attempt);
            for call in &work {
                let output = match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(args) => {
                        self.hands
                            .call(&sc, Some(&call.id), &call.name, &args, &mut self.writer)?
                            .output
                    }
                    Err(e) => {
                        self.emit(
                            "tool_call",
                            &ToolCall {
                                scope: sc.clone(),
                                tool: Some(call.name.clone()),
                                args: Some(json!("(unparseable JSON)")),
                                call_id: Some(call.id.clone()),
                                ..ToolCall::default()
                            },
                        )?;
                        format!(
                            "ERROR: {}: the arguments are not valid JSON ({e}); send one JSON object",
                            call.name
                        )
                    }
                };
                messages.push(tool_message(&call.id, &output));
            }
            let Some(first) = cases.first() else {
                if work.is_empty() {
                    quiet += 1;
                    if quiet >= self.opts.max_quiet_turns {
                        return Ok(TaskEnd::Failed("no_case".into()));
                    }
                    let (kind, text) = if reply.finish_reason.as_deref() == Some("length") {
                        ("length", NUDGE_LENGTH)
                    } else {
                        ("no_case", NUDGE)
                    };
                    self.emit(
                        "nudge",
                        &Nudge {
                            scope: sc.clone(),
                            kind: Some(kind.into()),
                            streak: Some(quiet),
                            content: Some(text.into()),
                            ..Nudge::default()
                        },
                    )?;
                    messages.push(json!({"role": "user", "content": text}));
                } else {
                    quiet = 0;
                }
                continue;
            };
            quiet = 0;
            for dup in cases.iter().skip(1) {
                messages.push(tool_message(
                    &dup.id,
                    "Duplicate submit_case ignored; the first one in this reply is being reviewed.",
                ));
            }
            let before = attempt;
            let (result, end) = self.review(task, first, &sc, &mut attempt, iter).await?;
            if attempt != before {
                turn = 0;
            }
            messages.push(tool_message(&first.id, &result));
            if let Some(end) = end {
                return Ok(end);
            }
        }
        Ok(TaskEnd::Failed("iter_cap".into()))
    }

    /// Handles one `submit_case`: parse, validators, evaluator, gate. Returns what the worker
    /// reads as the tool result, and the task's end if it ended.
    async fn review(
        &mut self,
        task: &Task,
        call: &ToolCallRecord,
        sc: &Scope,
        attempt: &mut u64,
        iter: u64,
    ) -> io::Result<(String, Option<TaskEnd>)> {
        let case = match case::parse(&call.arguments) {
            Ok(c) => c,
            Err(error) => {
                self.emit(
                    "tool_call",
                    &ToolCall {
                        scope: sc.clone(),
                        tool: Some("submit_case".into()),
                        args: Some(json!("(unparseable case)")),
                        call_id: Some(call.id.clone()),
                        ..ToolCall::default()
                    },
                )?;
                let raw = json!([{"name": call.name, "arguments": call.arguments}]);
                self.emit(
                    "case_parse_error",
                    &ParseError {
                        scope: sc.clone(),
                        error: Some(error.clone()),
                        raw_tool_calls: Some(raw),
                        ..ParseError::default()
                    },
                )?;
                return Ok((error, None));
            }
        };
        self.emit(
            "tool_call",
            &ToolCall {
                scope: sc.clone(),
                tool: Some("submit_case".into()),
                args: serde_json::to_value(&case).ok(),
                call_id: Some(call.id.clone()),
                ..ToolCall::default()
            },
        )?;
        self.gate(&task.id, GateEvent::CaseSubmitted, "case submitted", *attempt)?;
        let diff = self.workspace.diff().map_err(io::Error::other)?;
        let mut validator_output = None;
        if diff.is_empty() {
            let verdict = Verdict::empty_diff();
            return self.judged(task, &case, &verdict, &diff, sc, attempt, iter);
        }
        if !self.opts.validators.is_empty() {
            let v = validators::run_all(
                &self.opts.validators,
                &self.hands,
                &task.tests,
                sc,
                &mut self.writer,
            )?;
            if let Some(report) = v.report {
                self.gate(&task.id, GateEvent::ValidatorsFailed, "validators failed", *attempt)?;
                self.feedback(sc, "validators", &report)?;
                return Ok((report, None));
            }
            let joined: Vec<String> = v
                .results
                .iter()
                .map(|r| {
                    format!(
                        "$ {}\n{}",
                        r.command.as_deref().unwrap_or(&r.name),
                        r.output.as_deref().unwrap_or("")
                    )
                })
                .collect();
            validator_output = Some(joined.join("\n"));
        }
        if self.opts.no_eval {
            self.gate(
                &task.id,
                GateEvent::ValidatorsPassed,
                "validators passed; review is off",
                *attempt,
            )?;
            self.gate(&task.id, GateEvent::Accepted, "accepted unreviewed (--no-eval)", *attempt)?;
            return Ok((
                "Accepted.".into(),
                Some(TaskEnd::Accepted {
                    below_bar: false,
                    last_category: None,
                    summary: case.summary,
                }),
            ));
        }
        self.gate(&task.id, GateEvent::ValidatorsPassed, "validators passed", *attempt)?;
        let Some(verdict) = self
            .evaluate(task, &case, &diff.patch, validator_output.as_deref(), sc, *attempt, iter)
            .await?
        else {
            {
                self.gate(
                    &task.id,
                    GateEvent::HeldForOperator,
                    "the evaluator cannot be reached",
                    *attempt,
                )?;
                let end = TaskEnd::Stop(Ended {
                    reason: "needs_operator".into(),
                    detail: Some(format!(
                        "task {} waits for the operator: the evaluator cannot be reached",
                        task.id
                    )),
                });
                return Ok(("The review could not be completed; stop here.".into(), Some(end)));
            }
        };
        let verdict = verdict.held_to(self.opts.score_threshold);
        self.judged(task, &case, &verdict, &diff, sc, attempt, iter)
    }

    /// Logs the user message a role was sent (whole: harrow keeps what Tilth capped).
    fn log_prompt(&mut self, sc: &Scope, role: &str, prompt: &str) -> io::Result<()> {
        let event = PromptAssembled {
            scope: sc.clone(),
            role: Some(role.into()),
            chars: Some(prompt.chars().count() as u64),
            content: Some(prompt.to_owned()),
            truncated: Some(false),
            ..PromptAssembled::default()
        };
        self.emit("prompt_assembled", &event)
    }

    fn feedback(&mut self, sc: &Scope, kind: &str, content: &str) -> io::Result<()> {
        self.emit(
            "feedback_sent",
            &FeedbackSent {
                scope: sc.clone(),
                kind: Some(kind.into()),
                content: Some(content.into()),
                ..FeedbackSent::default()
            },
        )
    }

    /// Records a verdict in the ledger and lets the gate act on it.
    #[allow(clippy::too_many_arguments)]
    fn judged(
        &mut self,
        task: &Task,
        case: &Case,
        verdict: &Verdict,
        diff: &crate::hands::workspace::DiffInfo,
        sc: &Scope,
        attempt: &mut u64,
        iter: u64,
    ) -> io::Result<(String, Option<TaskEnd>)> {
        let mut event = VerdictEvent {
            scope: sc.clone(),
            schema_version: Some(1),
            verdict: Some(verdict.verdict.clone()),
            rejection_category: verdict.rejection_category.clone(),
            concern: Some(verdict.concern.clone()),
            evidence: Some(verdict.evidence.clone()),
            next_step: verdict.next_step.clone(),
            parse_failed: verdict.parse_failed.then_some(true),
            score: verdict.score,
            diff_digest: Some(diff.digest.clone()),
            base_commit: self.workspace.head().ok(),
            ..VerdictEvent::default()
        };
        event.extra.insert("diff_summary".into(), json!(diff.summary()));
        if diff.is_empty() {
            event.extra.insert("by_harness".into(), json!(true));
        }
        if verdict.below_threshold {
            event.extra.insert("below_threshold".into(), json!(true));
        }
        self.emit("evaluator_verdict", &event)?;
        let entry = LedgerEntry {
            ts: timestamp::now(),
            iter,
            attempt: *attempt,
            diff_summary: diff.summary(),
            case: Some(case.clone()),
            verdict: verdict.clone(),
        };
        record::append_ledger(&self.dir, &task.id, &entry)?;
        self.emit(
            "ledger_appended",
            &crate::session::event::LedgerAppended {
                scope: sc.clone(),
                verdict_summary: Some(verdict.summary()),
                ..Default::default()
            },
        )?;
        self.writer.sync()?;
        if verdict.accepted() {
            self.gate(&task.id, GateEvent::Accepted, "the evaluator accepted", *attempt)?;
            return Ok((
                "Accepted.".into(),
                Some(TaskEnd::Accepted {
                    below_bar: false,
                    last_category: None,
                    summary: case.summary.clone(),
                }),
            ));
        }
        if *attempt >= self.opts.max_attempts {
            return Ok(match self.opts.on_cap {
                OnCap::Fail => (
                    "Rejected at the rework cap.".into(),
                    Some(TaskEnd::Failed("evaluator_cap".into())),
                ),
                OnCap::ForceAccept => {
                    self.gate(
                        &task.id,
                        GateEvent::ForceAccepted,
                        "rework cap reached; accepted below the bar by policy",
                        *attempt,
                    )?;
                    let end = TaskEnd::Accepted {
                        below_bar: true,
                        last_category: verdict.rejection_category.clone(),
                        summary: case.summary.clone(),
                    };
                    ("Accepted below the bar.".into(), Some(end))
                }
            });
        }
        self.gate(&task.id, GateEvent::Rejected, &verdict.summary(), *attempt)?;
        *attempt += 1;
        self.gate(&task.id, GateEvent::ReworkStarted, "rework in the same conversation", *attempt)?;
        let text = verdict.feedback();
        self.feedback(sc, "verdict", &text)?;
        Ok((text, None))
    }

    /// Asks the evaluator, with one retry for an unparseable answer. `None`: it cannot be
    /// reached, and a person must decide.
    #[allow(clippy::too_many_arguments)]
    async fn evaluate(
        &mut self,
        task: &Task,
        case: &Case,
        diff: &str,
        validator_output: Option<&str>,
        sc: &Scope,
        attempt: u64,
        iter: u64,
    ) -> io::Result<Option<Verdict>> {
        let project = memory::project_context(&self.workspace.worktree, &self.opts.context_files);
        let ledger = record::read_ledger(&self.dir, &task.id);
        let seed_tests: Vec<(String, String)> = task
            .tests
            .iter()
            .filter_map(|t| {
                std::fs::read_to_string(self.workspace.worktree.join(t))
                    .ok()
                    .map(|c| (t.clone(), c))
            })
            .collect();
        let prompt = memory::evaluator_prompt(&EvaluatorInputs {
            plan: &self.plan,
            task,
            project: project.as_ref().map(|(t, _)| t.as_str()),
            ledger: &ledger,
            case,
            diff,
            validator_output,
            seed_tests: &seed_tests,
        });
        self.log_prompt(sc, "evaluator", &prompt)?;
        let mut messages = vec![
            json!({"role": "system", "content": EVALUATOR_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let tools = vec![verdict::schema()];
        let mut last_error = String::new();
        for try_n in 0..2usize {
            let Ok(reply) = self
                .call(
                    CallTag { role: Role::Evaluator, task: &task.id, attempt, turn: try_n },
                    iter,
                    &messages,
                    &tools,
                )
                .await?
            else {
                return Ok(None);
            };
            let calls: Vec<&ToolCallRecord> =
                reply.tool_calls.iter().filter(|c| c.name == "submit_verdict").collect();
            let parsed = calls
                .iter()
                .map(|c| verdict::parse(&c.arguments))
                .find(Result::is_ok)
                .and_then(Result::ok);
            if let Some(v) = parsed {
                return Ok(Some(v));
            }
            last_error = match calls.first() {
                Some(c) => verdict::parse(&c.arguments).err().unwrap_or_default(),
                None => "no submit_verdict call in the reply".into(),
            };
            let raw: Vec<Value> = reply
                .tool_calls
                .iter()
                .map(|c| json!({"name": c.name, "arguments": c.arguments}))
                .collect();
            let mut event = ParseError {
                scope: sc.clone(),
                error: Some(last_error.clone()),
                raw_tool_calls: Some(Value::Array(raw)),
                ..ParseError::default()
            };
            event.extra.insert("attempt".into(), json!(try_n + 1));
            self.emit("evaluator_parse_error", &event)?;
            messages.push(reply.history_message());
            let retry = format!(
                "Your verdict could not be used: {last_error}. Call submit_verdict once with valid arguments."
            );
            if reply.tool_calls.is_empty() {
                messages.push(json!({"role": "user", "content": retry}));
            } else {
                for c in &reply.tool_calls {
                    messages.push(tool_message(&c.id, &retry));
                }
            }
        }
        Ok(Some(Verdict::parse_failed(&last_error)))
    }
}
