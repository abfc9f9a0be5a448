//! What the scheduler and its lanes share: the run's facts (`Shared`: its plan, options,
//! records and spend, fixed for the run or changed only through the records' lock) and the
//! record-keeping both do (`Desk`: the log, task moves through the gate, the status files),
//! so a lane holds only its worktree, its hands and the task it serves.

use super::records::Records;
use super::{
    Commit, GateEvent, OperatorAction, Plan, Result, Review, RunOptions, TaskDone, TaskState,
    TaskStateEvent, progress_outcome, record, scope, transition,
};
use crate::hands::workspace::Workspace;
use crate::harness::record::CheckpointFacts;
use crate::session::state::StopReason;
use crate::session::vocabulary::CheckpointStatus;
use crate::session::writer::SessionWriter;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The run's facts, one copy for the scheduler and every lane.
#[derive(Debug)]
pub struct Shared {
    pub id: String,
    pub dir: PathBuf,
    pub plan: Plan,
    pub opts: RunOptions,
    /// Every task's record and the run's spend: the caps see every lane's calls as they are
    /// made, and a decision sees what a lane left.
    pub(super) records: Records,
    /// Raised by Ctrl-C on a headless run: the call or tool in flight is cancelled (through
    /// the hands' cancel flag) and the run stops, resumable.
    pub interrupted: Arc<AtomicBool>,
    pub(super) started: Instant,
}

impl Shared {
    /// Tasks not yet accepted or skipped, in plan order.
    pub fn unfinished(&self) -> Vec<String> {
        (self.plan.tasks.iter())
            .filter(|t| !self.records.state(&t.id).is_settled())
            .map(|t| t.id.clone())
            .collect()
    }

    pub(super) fn settled(&self, task: &str) -> bool {
        self.records.state(task).is_settled()
    }

    /// Evaluator rounds `task` may have: the cap, plus any the operator granted.
    pub(super) fn cap_for(&self, task: &str) -> u64 {
        // A best-of task's attempts worked at once count as its first round.
        let side_by_side = (self.plan.tasks.iter().find(|t| t.id == task))
            .and_then(|t| t.best_of)
            .map_or(0, |n| u64::from(n).saturating_sub(1));
        self.opts.max_attempts + self.records.get(task).granted + side_by_side
    }

    /// Why a failed task waits for the operator rather than being worked again, if it does:
    /// the operator failed it, or its `reviews` reached the cap. A task that failed otherwise
    /// (iterations, no case) is retried by a resume.
    pub(super) fn failed_waiting(&self, task: &str, reviews: u64) -> Option<&'static str> {
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

    /// The task a `needs_operator` end is about: held for a person, or failed at the cap
    /// awaiting a decision.
    pub fn held_task(&self) -> Option<String> {
        self.plan.tasks.iter().map(|t| t.id.clone()).find(|id| match self.records.state(id) {
            TaskState::NeedsOperator => true,
            // Only a failed task can wait for a decision: its ledger is read for it alone.
            TaskState::Failed => {
                self.failed_waiting(id, record::read_ledger(&self.dir, id).len() as u64).is_some()
            }
            _ => false,
        })
    }

    /// How an accepted task's work was let through, as its state says.
    pub(super) fn review_of(&self, task: &str) -> Review {
        match self.records.state(task) {
            TaskState::DoneBelowBar => Review::BelowBar,
            TaskState::DoneUnreviewed => Review::Unreviewed,
            _ => Review::Accepted,
        }
    }

    /// The settled tasks' states, as `task_status.json` has them.
    pub(super) fn status_map(&self) -> BTreeMap<String, String> {
        (self.records.states().into_iter())
            .filter(|(_, s)| s.is_terminal())
            .map(|(k, s)| (k, s.to_string()))
            .collect()
    }

    /// The cap the run has reached, if one: wall clock, tokens or dollars.
    pub(super) fn cap_reached(&self) -> Option<StopReason> {
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
}

/// The record-keeping the scheduler and a lane both do, each through its own writer (a lane's
/// stamps its number on what it logs).
pub(super) trait Desk {
    fn shared(&self) -> &Shared;
    fn writer(&mut self) -> &mut SessionWriter;
    /// The session's own worktree, which the checkpoint names.
    fn session(&self) -> &Workspace;
    /// How far the control file was read, for a refusal to say.
    fn control_offset(&self) -> u64;
    /// Whether this works one of a best-of task's attempts: the task's state is its own
    /// lane's to move, once the attempts are weighed, never a candidate's.
    fn is_candidate(&self) -> bool {
        false
    }

    fn emit<P: crate::session::event::Record>(&mut self, payload: &P) -> Result<()> {
        self.writer().append(payload)?;
        Ok(())
    }

    /// Moves a task through the gate and logs the move: the one place a task's state changes.
    fn gate(
        &mut self,
        task: &str,
        event: GateEvent,
        reason: &str,
        attempt: u64,
    ) -> Result<TaskState> {
        let from = self.shared().records.state(task);
        if self.is_candidate() {
            return Ok(from);
        }
        let to = transition(&from, event)?;
        self.shared().records.update(task, |r| r.state = to.clone());
        self.emit(&TaskStateEvent {
            scope: scope(task, 0, attempt),
            from: Some(from),
            to: Some(to.clone()),
            reason: Some(reason.to_owned()),
            ..TaskStateEvent::default()
        })?;
        Ok(to)
    }

    /// Writes `task_status.json` from every task's record, whichever lane writes it.
    fn write_status(&self) -> Result<()> {
        record::write_task_status(&self.shared().dir, &self.shared().status_map())?;
        Ok(())
    }

    fn checkpoint(&self, status: CheckpointStatus) -> Result<()> {
        let (shared, session) = (self.shared(), self.session());
        record::write_checkpoint(
            &shared.dir,
            &CheckpointFacts {
                id: &shared.id,
                source: &session.source,
                plan: &shared.plan.source,
                workspace: &session.worktree,
                branch: &session.branch,
                base: &session.base,
                usage: &shared.records.usage(),
                status: &status,
            },
        )?;
        Ok(())
    }

    /// Records that an operator command could not be applied, and why.
    fn refuse(&mut self, task: Option<&str>, why: &str) -> Result<()> {
        let mut refused = OperatorAction {
            action: Some("refused".into()),
            reason: Some(why.to_owned()),
            control_offset: Some(self.control_offset()),
            ..OperatorAction::default()
        };
        refused.scope.task_id = task.map(str::to_owned);
        self.emit(&refused)
    }

    /// Logs what a crash kept out of the log for an accepted task whose commit is on the
    /// branch: its `task_done` (unless logged), the `commit` marked recovered, and its line in
    /// `progress.txt`.
    fn log_recovered(
        &mut self,
        task: &super::Task,
        r: &crate::harness::resume::Restored,
        sha: Option<String>,
    ) -> Result<()> {
        let review = self.shared().review_of(&task.id);
        let (iter, attempt) = self.writer().position(&task.id);
        if !r.done_logged.contains(&task.id) {
            self.emit(&TaskDone {
                scope: scope(&task.id, iter, attempt),
                below_bar: Some(review == Review::BelowBar),
                reviewed: (review == Review::Unreviewed).then_some(false),
                ..TaskDone::default()
            })?;
        }
        let mut commit = Commit {
            scope: scope(&task.id, iter, attempt),
            sha,
            message: Some(format!("{}: {}", task.id, task.title)),
            ..Commit::default()
        };
        commit.recovered = Some(true);
        self.emit(&commit)?;
        record::append_progress(
            &self.shared().dir,
            &task.id,
            &progress_outcome(review),
            &task.title,
        )?;
        Ok(())
    }
}
