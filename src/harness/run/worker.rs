//! The worker's side of a task: a fresh conversation with its context, tool calls through
//! the hands, nudges for quiet turns, and `submit_case` handed to the review.

use super::Desk;
use super::landing::Landing;
use super::{
    Acceptance, CallTag, ContextReset, Ended, GateEvent, Guarded, Hands, HarnessError, Lane,
    LedgerEntry, NUDGE, NUDGE_LENGTH, Nudge, OnCap, Reply, Result, Review, Role, Scope, Task,
    TaskEnd, ToolCallRecord, Value, WORKER_PROMPT, WorkerContext, case, json, memory, record,
    scope,
};
use crate::harness::turns::{self, Agent, Turn, tool_message};
use crate::session::event::{LoopDetected, TurnTree};
use crate::session::state::StopReason;
use crate::session::vocabulary::CompactTrigger;
use crate::session::vocabulary::{LoopAction, ToolName, WORKTREE_LOOP};

impl Lane {
    pub(super) fn worker_prompt(
        &self,
        task: &Task,
        ledger: &[LedgerEntry],
        note: Option<&str>,
    ) -> String {
        let project = memory::project_context(&self.hands.jail, &self.shared.opts.context_files);
        let progress = record::progress_tail(
            &self.shared.dir,
            memory::PROGRESS_TAIL_LINES,
            memory::PROGRESS_MAX_CHARS,
        );
        let statuses: Vec<(String, crate::session::state::TaskState)> =
            self.shared.records.states().into_iter().collect();
        let warnings = self.shared.records.warnings();
        let ctx = WorkerContext {
            project: project.as_ref().map(|(t, _)| t.as_str()),
            progress: progress.as_deref(),
            statuses: &statuses,
            ledger,
            warnings: &warnings,
            operator_note: note,
        };
        memory::worker_prompt(&self.shared.plan, task, &ctx)
    }

    /// A task whose reviews already reached its cap is not worked again. A resume lands here
    /// when a crash fell between the last reject and its consequence (the cap policy is
    /// applied now), or on a task that failed at the cap and waits for a decision (the run
    /// stops and says which decisions there are).
    fn at_the_cap(&mut self, task: &Task, ledger: &[LedgerEntry]) -> Result<Option<TaskEnd>> {
        if let Some(why) = self.shared.failed_waiting(&task.id, ledger.len() as u64) {
            return Ok(Some(TaskEnd::Stop(decision_awaited(&task.id, why))));
        }
        let rejected_last = ledger.last().is_some_and(|e| !e.verdict.accepted());
        if (ledger.len() as u64) < self.shared.cap_for(&task.id) || !rejected_last {
            return Ok(None);
        }
        let last = ledger.last().and_then(|e| e.verdict.outcome());
        Ok(Some(match self.shared.opts.on_cap {
            OnCap::Fail => TaskEnd::Failed(StopReason::EvaluatorCap),
            OnCap::ForceAccept => {
                let reason = "rework cap reached; accepted below the bar by policy";
                self.gate(&task.id, GateEvent::ForceAccepted, reason, ledger.len() as u64)?;
                TaskEnd::Accepted(Acceptance {
                    review: Review::BelowBar,
                    by_operator: false,
                    last,
                    summary: ledger
                        .last()
                        .and_then(|e| e.case.as_ref())
                        .map(|c| c.summary.clone())
                        .unwrap_or_default(),
                    judged: None,
                })
            }
        }))
    }

    /// One task, from a fresh conversation to accept, failure or a stop.
    pub(super) async fn run_task(&mut self, task: &Task) -> Result<TaskEnd> {
        let ledger = record::read_ledger(&self.shared.dir, &task.id);
        if let Some(end) = self.at_the_cap(task, &ledger)? {
            return Ok(end);
        }
        let attempt = ledger.len() as u64 + 1;
        self.gate(&task.id, GateEvent::Start, "task started", attempt)?;
        self.escalate_if_due(&task.id, 0, attempt)?;
        let base = match self.shared.records.get(&task.id).base {
            Some(base) => base,
            None => self.workspace.tip()?,
        };
        self.shared.records.update(&task.id, |r| r.base = Some(base.clone()));
        let agent = self.shared.opts.agent.clone();
        let taken = self.take_rewind(task, attempt, &base)?;
        // After a rewind the turns are numbered on from the highest the task has had, so a
        // turn's number names one turn only (`--to-turn N` is never ambiguous).
        let first = match taken {
            super::rewind::Taken::Nothing => 1,
            _ => self.writer.turns_of(&task.id) + 1,
        };
        let (mut messages, rewound_note) = match taken {
            super::rewind::Taken::Conversation(messages) => (messages, None),
            super::rewind::Taken::Note(note) => (Vec::new(), Some(note)),
            super::rewind::Taken::Nothing => (Vec::new(), None),
        };
        if messages.is_empty() {
            let note = match (rewound_note, super::take_notes(&mut self.control.notes, &task.id)) {
                (Some(rewound), Some(notes)) => Some(format!("{rewound}\n\n{notes}")),
                (rewound, notes) => rewound.or(notes),
            };
            let standing = self.ledger_standing(&task.id);
            let prompt = self.worker_prompt(task, &standing, note.as_deref());
            // A best-of task's first attempt is worked by its candidates, each in a
            // conversation of its own.
            if let Some(n) = task.best_of.filter(|_| ledger.is_empty() && agent.is_none()) {
                return self.best_of(task, u64::from(n), &base, &prompt).await;
            }
            self.emit(&ContextReset {
                scope: Scope {
                    task_id: Some(task.id.clone()),
                    attempt: Some(attempt),
                    ..Scope::default()
                },
                base_commit: Some(base),
                ..ContextReset::default()
            })?;
            if let Some(spec) = &agent {
                return self.run_agent_task(task, spec, attempt, prompt).await;
            }
            self.log_prompt(&scope(&task.id, 0, attempt), "worker", &prompt)?;
            messages = vec![
                json!({"role": "system", "content": WORKER_PROMPT}),
                json!({"role": "user", "content": prompt}),
            ];
        }
        self.drive_worker(task, attempt, &mut messages, first).await
    }

    /// The worker's turns on `task`'s attempt, from `messages` on, until the task ends (or,
    /// for one of a best-of task's attempts, until it is judged).
    pub(super) async fn drive_worker(
        &mut self,
        task: &Task,
        attempt: u64,
        messages: &mut Vec<Value>,
        first_turn: u64,
    ) -> Result<TaskEnd> {
        let mut tools = Hands::schemas();
        tools.push(case::schema());
        let max_turns = self.shared.opts.max_iterations;
        let mut worker = WorkerTurns {
            run: self,
            task,
            attempt,
            turn: 0,
            quiet: 0,
            repeated: Repeated::default(),
            states: States::default(),
            last_tree: None,
            window: super::compaction::WindowKeeper::default(),
        };
        turns::drive(&mut worker, messages, &tools, (first_turn, max_turns)).await
    }
}

/// The worker in the shared turn loop: one task's conversation, from its first turn to
/// accept, failure or a stop.
struct WorkerTurns<'r> {
    run: &'r mut Lane,
    task: &'r Task,
    /// The evaluator round the worker is on (a reject moves it on).
    attempt: u64,
    /// Model turns within the attempt.
    turn: usize,
    /// Turns in a row that called no tool.
    quiet: u64,
    /// The tool call just made, and how many times in a row it was made the same.
    repeated: Repeated,
    /// The states the worktree was in since the last case, to see work come back to one.
    states: States,
    /// The last tree logged as a turn's checkpoint.
    last_tree: Option<String>,
    /// How the conversation is kept inside the model's window.
    window: super::compaction::WindowKeeper,
}

/// The worktree's states since the task's last case: each turn's tree (by the turn that left
/// it), and how many times a turn brought it back to an earlier one with nothing new done on
/// the way (every call in between one it had made before).
#[derive(Debug, Default)]
struct States {
    trees: Vec<(u64, String)>,
    returns: Vec<(u64, u64)>,
    /// A tool that can change files ran since the tree was last taken.
    touched: bool,
    /// Every call made (a digest of its tool and arguments), to tell a new one.
    calls: std::collections::HashSet<u64>,
    /// The turns that made a call not made before: work coming back through one of them is
    /// ordinary work (a debug print added, a command run, the print taken out), not a loop.
    fresh: Vec<u64>,
}

impl States {
    /// Notes a call of turn `iter` (its arguments as JSON text).
    fn called(&mut self, iter: u64, name: &str, args: &str) {
        use std::hash::{Hash, Hasher};
        let mut digest = std::collections::hash_map::DefaultHasher::new();
        (name, args).hash(&mut digest);
        if self.calls.insert(digest.finish()) && self.fresh.last() != Some(&iter) {
            self.fresh.push(iter);
        }
    }

    /// Whether a turn after `from`, up to `to`, made a new call.
    fn new_between(&self, from: u64, to: u64) -> bool {
        self.fresh.iter().any(|t| *t > from && *t <= to)
    }
}

/// A call the worker keeps making: its tool and arguments, and how many times in a row.
#[derive(Debug, Default)]
struct Repeated {
    call: Option<(String, String)>,
    times: u64,
}

impl Repeated {
    /// Counts `name(args)`; how many times in a row it has now been made.
    fn count(&mut self, name: &str, args: &str) -> u64 {
        let call = (name.to_owned(), args.to_owned());
        if self.call.as_ref() == Some(&call) {
            self.times += 1;
        } else {
            self.call = Some(call);
            self.times = 1;
        }
        self.times
    }

    /// The call in words, for the worker and the operator: its tool and arguments, short.
    fn described(&self) -> String {
        let (name, args) = self.call.clone().unwrap_or_default();
        let args: String = args.chars().take(160).collect();
        crate::printable::line(&format!("{name} {args}"))
    }
}

impl Agent for WorkerTurns<'_> {
    type Done = TaskEnd;
    type Error = HarnessError;

    fn interject(&mut self, iter: u64, messages: &mut Vec<Value>) -> Result<Option<TaskEnd>> {
        if let Some(stuck) = self.returns_check(iter, messages)? {
            return Ok(Some(stuck));
        }
        self.run.deliver_steers(&self.task.id, iter, self.attempt, messages)?;
        self.fit_window(iter, messages, &CompactTrigger::Threshold)
    }

    async fn ask(
        &mut self,
        iter: u64,
        messages: &mut Vec<Value>,
        tools: &[Value],
    ) -> Result<Result<Reply, TaskEnd>> {
        let (attempt, turn) = (self.attempt, self.turn);
        let tag = CallTag { role: Role::Worker, task: &self.task.id, attempt, turn };
        let mut answer = self.run.call(tag, iter, messages, tools).await?;
        if let Some(end) = self.run.act_now(&self.task.id)? {
            return Ok(Err(end));
        }
        // Too long for the server: the conversation is rebuilt once and asked again; a second
        // refusal holds the task (below, as any failed call does).
        if let Err(crate::brain::client::BrainError::ContextExceeded { detail, .. }) = &answer
            && !self.window.compacted_for_server
        {
            self.window.compacted_for_server = true;
            // The window the server named is the one to fit, whatever was known before.
            if let Some(n) = crate::brain::refusal::window_named(detail) {
                self.window.named = Some(n);
            }
            // The refusal counted the request: the estimate is calibrated by it before the
            // rebuild, whether or not the server counts anything in its replies.
            if let Some(asked) = crate::brain::refusal::prompt_named(detail) {
                self.window.calibrate(messages, asked);
            }
            if let Some(end) = self.fit_window(iter, messages, &CompactTrigger::Server)? {
                return Ok(Err(end));
            }
            let tag = CallTag { role: Role::Worker, task: &self.task.id, attempt, turn };
            answer = self.run.call(tag, iter, messages, tools).await?;
            if let Some(end) = self.run.act_now(&self.task.id)? {
                return Ok(Err(end));
            }
        }
        match answer {
            Ok(reply) => {
                self.turn += 1;
                if !reply.usage.estimated {
                    self.window.calibrate(messages, reply.usage.prompt);
                }
                Ok(Ok(reply))
            }
            // Still too long after the rebuild: a person decides (a larger window, a split).
            Err(e @ crate::brain::client::BrainError::ContextExceeded { .. }) => {
                let why = format!(
                    "the worker's request is too long for its model even with its conversation rebuilt: {e}"
                );
                self.run.hold(&self.task.id, &why, self.attempt).map(Err)
            }
            Err(e) => {
                let reason =
                    if e.is_transient() { StopReason::ProviderFailure } else { StopReason::Error };
                Ok(Err(TaskEnd::Stop(Ended { reason, detail: Some(e.to_string()) })))
            }
        }
    }

    fn owns(&self, tool: &str) -> bool {
        ToolName::SubmitCase.is(Some(tool))
    }

    fn scope(&self, iter: u64) -> Scope {
        scope(&self.task.id, iter, self.attempt)
    }

    fn writer(&mut self) -> &mut crate::session::writer::SessionWriter {
        &mut self.run.writer
    }

    async fn run_tool(
        &mut self,
        iter: u64,
        call: &ToolCallRecord,
        args: &Value,
    ) -> Result<Result<String, TaskEnd>> {
        // The arguments as text once, for both loop checks (a file written can be large).
        let text = args.to_string();
        if let Some(stuck) = self.loop_check(iter, &call.name, &text)? {
            return Ok(Err(stuck));
        }
        self.states.touched |= Hands::changes_files(&call.name);
        self.states.called(iter, &call.name, &text);
        // Only a command can reach git; the file tools are confined away from `.git`.
        let guarded = Hands::runs_commands(&call.name);
        if guarded {
            self.run.guard_before();
        }
        let sc = self.scope(iter);
        let cap = self.run.tool_output_cap(&self.window);
        let run = &mut *self.run;
        let named = (call.name.as_str(), args);
        let mut output =
            run.hands.call_within(&sc, Some(&call.id), named, cap, &mut run.writer)?.output;
        if guarded {
            match self.run.guard_git(&self.task.id, &sc, &call.name)? {
                Guarded::Clean => {}
                Guarded::PutBack(note) => output = format!("{output}\n{note}"),
                Guarded::Held(end) => return Ok(Err(TaskEnd::Stop(end))),
            }
        }
        if let Some(end) = self.run.act_now(&self.task.id)? {
            return Ok(Err(end));
        }
        let limit = self.run.shared.opts.loop_repeats;
        if limit > 0 && self.repeated.times == limit {
            output = format!("{output}\n{}", loop_note(limit));
        }
        Ok(Ok(output))
    }

    async fn quiet(
        &mut self,
        iter: u64,
        reply: &Reply,
        messages: &mut Vec<Value>,
    ) -> Result<Turn<TaskEnd>> {
        self.quiet += 1;
        if self.quiet >= self.run.shared.opts.max_quiet_turns {
            return Ok(Turn::Done(TaskEnd::Failed(StopReason::NoCase)));
        }
        let (kind, text) = if reply.finish_reason.as_deref() == Some("length") {
            ("length", NUDGE_LENGTH)
        } else {
            ("no_case", NUDGE)
        };
        self.run.emit(&Nudge {
            scope: self.scope(iter),
            kind: Some(kind.into()),
            streak: Some(self.quiet),
            content: Some(text.into()),
            ..Nudge::default()
        })?;
        messages.push(json!({"role": "user", "content": text}));
        Ok(Turn::Continue)
    }

    fn worked(&mut self) {
        self.quiet = 0;
    }

    async fn own(
        &mut self,
        iter: u64,
        cases: &[&ToolCallRecord],
        messages: &mut Vec<Value>,
    ) -> Result<Turn<TaskEnd>> {
        self.quiet = 0;
        let Some((first, dups)) = cases.split_first() else { return Ok(Turn::Continue) };
        for dup in dups {
            messages.push(tool_message(
                &dup.id,
                "Duplicate submit_case ignored; the first one in this reply is being reviewed.",
            ));
        }
        let before = self.attempt;
        let sc = self.scope(iter);
        // A case is progress: states before it are no loop to come back to.
        self.states = States::default();
        let (result, end) = self.run.review(self.task, first, &sc, &mut self.attempt, iter).await?;
        let (result, end) = match end {
            Some(TaskEnd::Accepted(a)) => {
                match self.run.land(self.task, a, &sc, &mut self.attempt)? {
                    Landing::Landed => (result, Some(TaskEnd::Landed)),
                    Landing::Rework { text, .. } => (text, None),
                    Landing::Held(end) => (
                        "The accepted work could not land; stop here.".into(),
                        Some(TaskEnd::Stop(end)),
                    ),
                }
            }
            other => (result, other),
        };
        if end.is_none()
            && let Some(now) = self.run.act_now(&self.task.id)?
        {
            return Ok(Turn::Done(now));
        }
        if self.attempt != before {
            self.turn = 0;
        }
        messages.push(tool_message(&first.id, &result));
        Ok(end.map_or(Turn::Continue, Turn::Done))
    }

    fn out_of_turns(&mut self) -> TaskEnd {
        TaskEnd::Failed(StopReason::IterCap)
    }
}

impl WorkerTurns<'_> {
    /// Counts the call; at the loop's threshold the worker is nudged (a `loop` nudge, its
    /// words added to the call's result), and a repeat past it holds the task for a person
    /// with the call as the evidence.
    fn loop_check(&mut self, iter: u64, name: &str, args: &str) -> Result<Option<TaskEnd>> {
        let limit = self.run.shared.opts.loop_repeats;
        if limit == 0 {
            return Ok(None);
        }
        let times = self.repeated.count(name, args);
        let (tool, arguments) = self.repeated.call.clone().unwrap_or_default();
        let arguments = crate::printable::line(&arguments.chars().take(400).collect::<String>());
        let detected = |action: LoopAction, content: String| LoopDetected {
            scope: scope(&self.task.id, iter, self.attempt),
            tool: Some(tool.clone()),
            arguments: Some(arguments.clone()),
            times: Some(times),
            action: Some(action.as_str().to_owned()),
            content: Some(content),
            ..LoopDetected::default()
        };
        if times == limit {
            self.run.emit(&detected(LoopAction::Nudged, loop_note(times)))?;
        }
        if times <= limit {
            return Ok(None);
        }
        let why = format!(
            "stuck: the worker made the same call {times} times in a row, after a nudge: {}",
            self.repeated.described()
        );
        self.run.emit(&detected(LoopAction::Held, why.clone()))?;
        self.run.hold(&self.task.id, &why, self.attempt).map(Some)
    }
}

impl WorkerTurns<'_> {
    /// Takes the worktree's tree before a request (after a turn that could change files, and
    /// at the start): one that an earlier turn had already left, other than the last, is work
    /// coming back. At the threshold the worker is told so, in a message of its own; one more
    /// return holds the task for a person, the turns named as the evidence.
    fn returns_check(&mut self, iter: u64, messages: &mut Vec<Value>) -> Result<Option<TaskEnd>> {
        let Some(tree) = self.take_tree(iter)? else { return Ok(None) };
        let limit = self.run.shared.opts.loop_returns;
        if limit == 0 {
            return Ok(None);
        }
        let turn = iter.saturating_sub(1);
        let last = self.states.trees.last().map(|(_, t)| t.as_str());
        let earlier = self.states.trees.iter().rev().skip(1).find(|(_, t)| *t == tree);
        let back_to = match (last, earlier) {
            (Some(l), _) if l == tree => return Ok(None),
            (_, Some((at, _))) if !self.states.new_between(*at, turn) => Some(*at),
            _ => None,
        };
        self.states.trees.push((turn, tree));
        let Some(at) = back_to else { return Ok(None) };
        self.states.returns.push((turn, at));
        let times = self.states.returns.len() as u64;
        let evidence: Vec<String> = (self.states.returns.iter())
            .map(|(now, was)| format!("after turn {now} as after turn {was}"))
            .collect();
        let detected = |action: LoopAction, content: String| LoopDetected {
            scope: scope(&self.task.id, iter, self.attempt),
            tool: Some(WORKTREE_LOOP.into()),
            arguments: Some(evidence.join("; ")),
            times: Some(times),
            action: Some(action.as_str().to_owned()),
            content: Some(content),
            ..LoopDetected::default()
        };
        if times == limit {
            let note = returns_note(times);
            self.run.emit(&detected(LoopAction::Nudged, note.clone()))?;
            messages.push(json!({"role": "user", "content": note}));
            return Ok(None);
        }
        if times < limit {
            return Ok(None);
        }
        let why = format!(
            "stuck: the worker's changes brought the files back to an earlier state {times} times without a case, after a nudge ({})",
            evidence.join("; ")
        );
        self.run.emit(&detected(LoopAction::Held, why.clone()))?;
        self.run.hold(&self.task.id, &why, self.attempt).map(Some)
    }

    /// The worktree's tree before a request, after a turn that could change files and at the
    /// start: logged (`turn_tree`, as the state the last turn left) when it changed, so the
    /// operator can rewind the task to it. A tree that cannot be taken is no checkpoint.
    fn take_tree(&mut self, iter: u64) -> Result<Option<String>> {
        // A first tree for the checkpoints, and after a case one for the return check to start
        // from (only when it is on: without it a tree is taken only after a change).
        let baseline = self.last_tree.is_none()
            || (self.states.trees.is_empty() && self.run.shared.opts.loop_returns > 0);
        if !(self.states.touched || baseline) {
            return Ok(None);
        }
        self.states.touched = false;
        let Ok(tree) = self.run.workspace.tree_now() else { return Ok(None) };
        if self.last_tree.as_deref() != Some(tree.as_str()) {
            self.last_tree = Some(tree.clone());
            self.run.emit(&TurnTree {
                scope: scope(&self.task.id, iter.saturating_sub(1), self.attempt),
                tree: Some(tree.clone()),
                ..TurnTree::default()
            })?;
        }
        Ok(Some(tree))
    }

    /// Keeps the conversation inside the worker's window before a request (see
    /// [`Run::keep_in_window`]).
    fn fit_window(
        &mut self,
        iter: u64,
        messages: &mut Vec<Value>,
        trigger: &CompactTrigger,
    ) -> Result<Option<TaskEnd>> {
        let sc = (iter, self.attempt);
        self.run.keep_in_window(self.task, sc, messages, trigger, &self.window)
    }
}

/// What a worker whose edits keep undoing each other is told.
fn returns_note(times: u64) -> String {
    format!(
        "[Your last changes put the files back exactly as they were a few turns ago — {times} times now. Undoing and redoing the same edit does not move the task on: decide which version is right, keep it, and go on, or submit_case if the task is done.]"
    )
}

/// What a worker making the same call `times` in a row is told, with that call's result.
fn loop_note(times: u64) -> String {
    format!(
        "[You have made this same call {times} times in a row, and it gives the same result each time. Do something different: another tool, other arguments, or submit_case if the task is done.]"
    )
}

/// How a run ends on a failed task that waits for a decision rather than being worked again
/// (`why`: failed by the operator, or at the attempt cap), saying which decisions there are.
pub(super) fn decision_awaited(task: &str, why: &str) -> Ended {
    Ended {
        reason: StopReason::NeedsOperator,
        detail: Some(format!(
            "task {task} {why}; decide with `harrow control` (approve, force-accept, reject --text for another attempt, or skip), or leave it failed"
        )),
    }
}
