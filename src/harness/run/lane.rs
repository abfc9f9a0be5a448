//! A lane: a task's place in the run — the worktree it works in, the hands and git guard
//! there, and the conversation of the task it serves. Everything else (the plan, the options,
//! every task's record, the spend) is the run's, shared; a lane logs through a clone of the
//! session writer that stamps its number on what it writes when there are several. With one
//! lane the worktree is the session's own; with several, each task has one of its own under
//! `lanes/`. A lane runs on a thread of its own, since tools and validators block.

use super::desk::{Desk, Shared};
use super::{
    Acceptance, Commit, Ended, FeedbackSent, GateEvent, Guarded, HarnessError, HookRun,
    PromptAssembled, Result, Review, Scope, Task, TaskDone, TaskEnd, TaskFailed, below_bar_warning,
    progress_outcome, record, scope,
};
use crate::brain::client::{Attempt, Brain, BrainError, CallTag, Reply, Role};
use crate::hands::Hands;
use crate::hands::git_guard::GitGuard;
use crate::hands::workspace::Workspace;
use crate::session::live;
use crate::session::state::StopReason;
use crate::session::writer::SessionWriter;
use serde_json::Value;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What ties a lane to the scheduler: the flags the scheduler raises for it, the words it
/// hands it, and what it shares with every other lane (the landing lock, the halt).
#[derive(Debug, Clone)]
pub(super) struct LaneLink {
    /// The lane's number, from 1: what its events are stamped with.
    pub number: u64,
    /// The session's own worktree, on the branch accepted work lands on.
    pub(super) session: Workspace,
    /// Held while a task lands: the session branch moves under it, one landing at a time.
    pub(super) landing: Arc<Mutex<()>>,
    /// Raised when the operator fails this lane's task.
    pub(super) fail: Arc<AtomicBool>,
    /// Raised when a decision about this lane's task takes it now (`review`, `rewind` with
    /// `--now`): its attempt stops and the task waits for that decision.
    pub(super) decide_now: Arc<AtomicBool>,
    /// Raised when a review or rewind of this lane's task waits for its attempt to end: an
    /// accept that comes first does not land, the task waits for that decision.
    pub(super) decision_waiting: Arc<AtomicBool>,
    /// Set when the whole run stops at once (`stop --now`, Ctrl-C, a lane that cannot go on):
    /// how every lane's task ends.
    pub(super) halt: Arc<Mutex<Option<Ended>>>,
    /// The lane's hands' cancel flag: raised, the call or tool in flight stops.
    pub(super) cancel: Arc<crate::hands::cancel::Cancel>,
    /// The lane's worktree, which no other task may take while this one runs there.
    pub(super) worktree: std::path::PathBuf,
    /// Where the lane works: in the session's own worktree, or in one of its own.
    pub(super) place: Place,
    /// The operator's words for the lane's task, from the scheduler to its worker.
    pub(super) inbox: super::steer::Inbox,
}

/// Where a lane works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// In the session's own worktree, on the session branch: what it accepts is committed
    /// where it is, with nothing to merge. The one lane of a run that is not apart.
    InPlace,
    /// In a worktree of its own, cut from the session branch: what it accepts is merged onto
    /// the session branch. The lanes of a graph plan worked several at once, and best-of
    /// candidates.
    Apart,
}

/// The git guard of a worktree, HEAD put back on its branch first: what every worktree a
/// worker's commands run in starts with.
pub(super) fn guard_on(workspace: &Workspace) -> Result<GitGuard> {
    let mut guard = GitGuard::new(&workspace.worktree, &workspace.branch).map_err(|source| {
        HarnessError::Git { what: "cannot read the worktree's git state", source }
    })?;
    guard.restore().map_err(|source| HarnessError::Git {
        what: "cannot put HEAD on the worktree's branch",
        source,
    })?;
    Ok(guard)
}

/// A lane job's result: the lane, its task and how the task ended.
pub(super) type LaneDone = (Box<Lane>, Task, Result<TaskEnd>);

/// A task's place in the run.
#[derive(Debug)]
pub(super) struct Lane {
    pub(super) shared: Arc<Shared>,
    /// The session writer, stamping the lane's number when there are several.
    pub(super) writer: SessionWriter,
    /// The lane's worktree: the session's own in place, else the task's under `lanes/`.
    pub(super) workspace: Workspace,
    pub(super) hands: Hands,
    /// The endpoints, as this lane's calls left them (a fallback taken stays taken).
    pub(super) brain: Brain,
    /// Puts back refs, HEAD, git config and hooks a tool call changed.
    pub(super) guard: Option<GitGuard>,
    /// Why the guard could not take the repository's state before the call in flight, if it
    /// could not.
    pub(super) guard_blind: Option<String>,
    /// What ties the lane to the scheduler: its number, its flags, its inbox.
    pub(super) link: LaneLink,
    pub(super) control: LaneControl,
    /// Set when the lane works one of a best-of task's attempts.
    pub(super) candidate: Option<super::candidacy::Candidacy>,
}

/// What the operator asked of the lane's task and the lane has not finished acting on.
#[derive(Debug, Default)]
pub(super) struct LaneControl {
    /// How far the control file was read when the lane last took a decision.
    pub(super) offset: u64,
    /// Notes for the task's next attempt.
    pub(super) notes: Vec<(Option<String>, String)>,
    /// The task's last case is to be put to the evaluator again.
    pub(super) retry_eval: Option<String>,
    /// The steers put into the worker's conversation: task, attempt and text, for the
    /// evaluator of that attempt.
    pub(super) steered: Vec<(String, u64, String)>,
}

impl Desk for Lane {
    fn shared(&self) -> &Shared {
        &self.shared
    }
    fn writer(&mut self) -> &mut SessionWriter {
        &mut self.writer
    }
    fn session(&self) -> &Workspace {
        &self.link.session
    }
    fn control_offset(&self) -> u64 {
        self.control.offset
    }
    fn is_candidate(&self) -> bool {
        self.candidate.is_some()
    }
}

impl Lane {
    /// A lane's work on its task: a re-evaluation the operator asked for, else the task's
    /// conversation, from its start or from where a decision left it.
    pub(super) async fn lane_job(mut self: Box<Self>, task: Task) -> LaneDone {
        let end = self.lane_work(&task).await;
        (self, task, end)
    }

    pub(super) async fn lane_work(&mut self, task: &Task) -> Result<TaskEnd> {
        if self.guard.is_none() {
            self.guard = Some(guard_on(&self.workspace)?);
        }
        if let Some(id) = self.control.retry_eval.take() {
            match self.retry_evaluation(&id).await? {
                Some(end) if end.reason.is_task_failure() => {
                    return Ok(TaskEnd::Failed(end.reason));
                }
                Some(end) => return Ok(TaskEnd::Stop(end)),
                None if self.shared.settled(&task.id) => return Ok(TaskEnd::Landed),
                None => {}
            }
        }
        let end = self.run_task(task).await?;
        match end {
            TaskEnd::Landed if self.shared.opts.learnings => {
                self.propose_learning(task).await?;
                Ok(end)
            }
            end => Ok(end),
        }
    }

    /// How a lane's task ends at once, if the run or the operator said so (`fail`, `stop
    /// --now`, Ctrl-C: the scheduler raises the lane's flags): checked after every call and
    /// tool.
    pub(super) fn act_now(&mut self, task: &str) -> Result<Option<TaskEnd>> {
        if self.link.fail.swap(false, Ordering::SeqCst) {
            self.link.cancel.lower();
            // A best-of attempt's work stays on its refs; the task's own lane sets aside.
            let own = self.candidate.is_none();
            if let Some(t) = self.shared.plan.tasks.iter().find(|t| own && t.id == task).cloned() {
                self.set_aside(&t, "failed")?;
            }
            return Ok(Some(TaskEnd::Failed(StopReason::OperatorFail)));
        }
        if self.link.decide_now.swap(false, Ordering::SeqCst) {
            self.link.cancel.lower();
            let (_, attempt) = self.writer.position(task);
            let why = "the operator's decision takes it now: its attempt was stopped";
            return self.hold(task, why, attempt).map(Some);
        }
        let halt = self.link.halt.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok(halt.map(|end| {
            TaskEnd::Stop(Ended {
                reason: end.reason,
                detail: Some(format!(
                    "{}; {task} is unfinished and restarts on resume",
                    end.detail.unwrap_or_default()
                )),
            })
        }))
    }

    /// Gives a lane another number: a lane revived by a decision starts in whichever lane is
    /// free, and its events say so.
    pub(super) fn renumber(&mut self, number: u64) {
        if self.link.place == Place::Apart {
            self.link.number = number;
            self.writer = self.writer.for_lane(number);
        }
    }

    pub(super) fn record_call(
        &mut self,
        role: Role,
        scope: &Scope,
        a: &Attempt,
        reply: Option<&Reply>,
    ) -> Result<()> {
        let tokens_total = self.shared.records.spend(role.as_str(), &a.usage);
        if let Some(c) = self.candidate.as_mut() {
            c.spent += a.usage.cost;
        }
        self.emit(&record::model_call(role, scope, a, tokens_total))?;
        if let Some(r) = reply {
            self.emit(&record::assistant_message(role, scope, r))?;
        }
        Ok(())
    }

    /// Calls a model, logging every try.
    pub(super) async fn call(
        &mut self,
        tag: CallTag<'_>,
        iter: u64,
        messages: &[Value],
        tools: &[Value],
    ) -> Result<Result<Reply, BrainError>> {
        // An endpoint that failed a call of this run lately is not asked again before its
        // cool-down: the call goes to the fallback at once.
        while let Some(ago) = self.brain.down_since(tag.role)
            && let Some(next) = self.brain.next_fallback(tag.role).cloned()
        {
            let why = format!(
                "it failed {} s ago; it is asked again {} s after that",
                ago.as_secs(),
                crate::brain::client::DOWN_COOL_DOWN.as_secs()
            );
            if !self.switch_to(tag, iter, &next, &why)? {
                break;
            }
        }
        let mut result = self.call_once(tag, iter, messages, tools).await?;
        // Its own endpoint spent its tries: the role's next fallback takes the call, and the
        // role's calls from here on.
        while let Err(e) = &result
            && e.is_transient()
            && let Some(next) = self.brain.next_fallback(tag.role).cloned()
        {
            self.brain.mark_down(tag.role);
            if !self.switch_to(tag, iter, &next, &e.to_string())? {
                break;
            }
            result = self.call_once(tag, iter, messages, tools).await?;
        }
        Ok(result)
    }

    /// Moves `tag`'s role to the endpoint `next`, logging why; false when that brain cannot be
    /// made (the call stays where it is).
    fn switch_to(
        &mut self,
        tag: CallTag<'_>,
        iter: u64,
        next: &crate::brain::client::Endpoint,
        why: &str,
    ) -> Result<bool> {
        let Ok(switched) = self.brain.switched(tag.role, next) else { return Ok(false) };
        let from = self.brain.endpoint(tag.role).cloned();
        self.brain = switched;
        self.emit(&crate::session::event::ModelSwitch {
            scope: scope(tag.task, iter, tag.attempt),
            role: Some(tag.role.as_str().to_owned()),
            from_model: from.as_ref().map(|f| f.model.clone()),
            from_base_url: from.map(|f| crate::printable::line(&crate::keys::scrub(&f.base_url))),
            to_model: Some(next.model.clone()),
            to_base_url: Some(crate::printable::line(&crate::keys::scrub(&next.base_url))),
            why: Some(crate::printable::line(why)),
            kind: Some(crate::session::vocabulary::SwitchKind::Fallback.as_str().to_owned()),
            ..Default::default()
        })?;
        Ok(true)
    }

    /// One call to the role's endpoint as it is now, every try logged.
    pub(super) async fn call_once(
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
        let dir = self.shared.dir.clone();
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
            live::clear(&self.shared.dir);
        }
        logged?;
        Ok(result)
    }

    pub(super) fn fail_task(&mut self, task: &Task, reason: StopReason) -> Result<Ended> {
        // The attempt it failed on, as every other state change of the task names its own.
        let (iter, attempt) = self.writer.position(&task.id);
        self.gate(&task.id, GateEvent::Failed, reason.as_str(), attempt)?;
        self.shared.records.update(&task.id, |r| r.failed_because = Some(reason.clone()));
        self.emit(&TaskFailed {
            scope: scope(&task.id, iter, attempt),
            reason: Some(reason.as_str().to_owned()),
            ..TaskFailed::default()
        })?;
        record::append_progress(
            &self.shared.dir,
            &task.id,
            &crate::session::vocabulary::Outcome::Failed(reason.clone()),
            &task.title,
        )?;
        self.write_status()?;
        Ok(Ended { reason, detail: Some(format!("task {} failed", task.id)) })
    }

    /// The commit `task` started from, as recorded when it started; the branch tip when the
    /// log does not say (a session from before harrow recorded it).
    pub(super) fn task_base(&self, task: &str) -> Result<String> {
        match self.shared.records.get(task).base {
            Some(base) => Ok(base),
            None => self.workspace.tip().map_err(HarnessError::from),
        }
    }

    /// Holds `task` for the operator because of `why`, and the end the run stops with.
    pub(super) fn hold(&mut self, task: &str, why: &str, attempt: u64) -> Result<TaskEnd> {
        self.gate(task, GateEvent::HeldForOperator, why, attempt)?;
        Ok(TaskEnd::Stop(Ended {
            reason: StopReason::NeedsOperator,
            detail: Some(format!("task {task} waits for the operator: {why}")),
        }))
    }

    /// Keeps the worktree as it is now as the attempt `name` (and a copy in the session
    /// folder). A failure is returned as the reason, for the caller to hold the task on: the
    /// work could not be pinned down, so it must not go further unwatched.
    pub(super) fn keep_work(
        &mut self,
        name: &str,
        base: &str,
        message: &str,
    ) -> Result<Result<String, String>> {
        let kept = match self.workspace.keep(name, base, message) {
            Ok(kept) => kept,
            Err(e) => return Ok(Err(format!("the work could not be kept as it was checked: {e}"))),
        };
        let copy = crate::hands::session_store::SessionStore::of(&self.shared.dir);
        if let Err(e) = copy.copy_kept_from(&self.workspace, &kept) {
            return Ok(Err(format!("the kept work could not be copied: {e}")));
        }
        self.record_guard()?;
        Ok(Ok(kept.oid.to_string()))
    }

    /// Commits the worktree as `task`'s accepted work on top of `base` — only the work that
    /// was judged, when a verdict judged it — on the worktree's branch.
    pub(super) fn commit_judged(
        &self,
        task: &Task,
        a: &Acceptance,
        base: &str,
    ) -> std::result::Result<Option<String>, crate::hands::workspace::WorkspaceError> {
        let judged = a.judged.as_deref();
        self.workspace.commit_task(
            &task.id,
            &task.title,
            &self.shared.id,
            a.review,
            Some(base),
            judged,
        )
    }

    /// Holds an accepted task whose work could not land, and says how the run stops.
    pub(super) fn landing_failed(&mut self, task: &Task, why: &str) -> Result<Ended> {
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
    pub(super) fn record_landed(
        &mut self,
        task: &Task,
        a: Acceptance,
        sha: Option<String>,
    ) -> Result<()> {
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
        self.record_guard()?;
        self.copy_session_branch()?;
        record::append_progress(
            &self.shared.dir,
            &task.id,
            &progress_outcome(a.review),
            &task.title,
        )?;
        if let Some(last) = &last {
            self.shared.records.warn(below_bar_warning(&task.id, &task.title, last));
        }
        Ok(())
    }

    /// Copies the session branch, as the landing just left it, into the session folder's copy
    /// of its git state (see [`crate::hands::session_store`]): the branch outlives the clone.
    pub(super) fn copy_session_branch(&self) -> Result<()> {
        // A lane's worktree shares the session's repository, and names its branch.
        let store = crate::hands::session_store::SessionStore::of(&self.shared.dir);
        let branch = self.workspace.session_branch();
        store.copy_branch_from(&self.workspace, &branch).map_err(HarnessError::from)
    }

    /// Logs the user message a role was sent (whole: harrow keeps what Tilth capped).
    pub(super) fn log_prompt(&mut self, sc: &Scope, role: &str, prompt: &str) -> Result<()> {
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
    pub(super) fn guard_before(&mut self) {
        self.guard_blind = match &mut self.guard {
            Some(guard) => guard.before_call().err().map(|e| e.to_string()),
            None => None,
        };
    }

    /// Puts back any git state a tool call or validator changed (refs, HEAD, config, hooks),
    /// logs it, and says what the worker is told. A guard that could not look (before or after
    /// the call) never lets the work go on unchecked: the task is held for the operator.
    pub(super) fn guard_git(&mut self, task: &str, sc: &Scope, tool: &str) -> Result<Guarded> {
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
            hook: Some(crate::session::vocabulary::HookName::GitGuard.as_str().to_owned()),
            outcome: Some("restored".into()),
            reason: Some(restored.clone()),
            ..HookRun::default()
        })?;
        Ok(Guarded::PutBack(format!(
            "[The workspace's git history and settings are kept as they were; put back: {restored}. Do not move HEAD or branches, or change git configuration or hooks: commit nothing yourself, your changes are committed for you.]"
        )))
    }

    pub(super) fn feedback(&mut self, sc: &Scope, kind: &str, content: &str) -> Result<()> {
        self.emit(&FeedbackSent {
            scope: sc.clone(),
            kind: Some(kind.into()),
            content: Some(content.into()),
            ..FeedbackSent::default()
        })
    }

    /// Tells the git guard that what the worktree's refs and HEAD are now is harrow's doing:
    /// the next check puts back only what changes after this.
    pub(super) fn record_guard(&mut self) -> Result<()> {
        if let Some(guard) = &mut self.guard {
            guard.record().map_err(|source| HarnessError::Git {
                what: "cannot record the worktree's git state",
                source,
            })?;
        }
        Ok(())
    }
}
