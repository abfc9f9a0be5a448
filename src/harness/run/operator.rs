//! Operator commands at task boundaries: pause, step, stop, notes, and decisions on a task.

use super::{
    Acceptance, Ended, GateEvent, HarnessError, LastOutcome, Op, OperatorAction, Result, Review,
    Run, TaskState, control, record, transition,
};
use crate::session::state::StopReason;

impl Run {
    /// As a task starts: the last task a `step` allows is this one, and nothing starts after
    /// it until the operator says so.
    pub(super) fn count_step(&mut self, task: &str) {
        if let Some(left) = self.control.steps_left {
            if left <= 1 {
                self.control.steps_left = None;
                self.control.paused = true;
                self.control.stepping = Some(task.to_owned());
            } else {
                self.control.steps_left = Some(left - 1);
            }
        }
    }

    /// As a task comes back: when it was the step's, the run now waits, and the log says so
    /// as a pause (from the step), so everything that reads it knows the run waits.
    pub(super) fn step_done(&mut self, task: &str) -> Result<()> {
        if self.control.stepping.as_deref() == Some(task) {
            self.control.stepping = None;
            self.emit(&OperatorAction {
                action: Some("pause".into()),
                reason: Some("the step's task is done".into()),
                source: Some("step".into()),
                ..OperatorAction::default()
            })?;
        }
        Ok(())
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

    /// Reads and applies new operator commands, logging each. A `fail` decision ends the run.
    pub(super) fn poll_control(&mut self) -> Result<Option<Ended>> {
        let (commands, end) = control::read_new(&self.dir, self.control.offset)?;
        if end == self.control.offset {
            return Ok(None);
        }
        self.control.offset = end;
        let mut ended = None;
        for command in commands {
            let mut action =
                OperatorAction { control_offset: Some(end), ..OperatorAction::default() };
            let cmd = match command {
                Ok(c) => c,
                Err(why) => {
                    action.action = Some("unreadable".into());
                    action.reason = Some(why);
                    self.emit(&action)?;
                    continue;
                }
            };
            action.scope.task_id.clone_from(&cmd.task);
            action.action = Some(cmd.op.as_str().into());
            action.reason.clone_from(&cmd.reason);
            action.note.clone_from(&cmd.text);
            action.source = Some(cmd.source.clone());
            self.emit(&action)?;
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
                Op::StopNow => {
                    self.control.stop = Some(
                        cmd.reason
                            .clone()
                            .unwrap_or_else(|| "the operator asked to stop now".into()),
                    );
                    self.control.stop_now = true;
                }
                Op::Note => {
                    if let Some(text) = cmd.text.clone() {
                        self.control.notes.push((cmd.task.clone(), text));
                    }
                }
                Op::Steer | Op::Queue => self.take_word(&cmd)?,
                Op::Approve
                | Op::Reject
                | Op::ForceAccept
                | Op::Skip
                | Op::Fail
                | Op::RetryEval
                | Op::Rewind
                | Op::Review => {
                    if let Some(end) = self.decide(&cmd)? {
                        ended = Some(end);
                    }
                }
            }
        }
        Ok(ended)
    }

    /// Applies a decision on a task: the one named, else the one waiting for the operator. A
    /// decision about the task at work (other than `fail`) waits for the next boundary.
    pub(super) fn decide(&mut self, cmd: &control::Command) -> Result<Option<Ended>> {
        if self.lane.is_none()
            && let super::lanes::LaneDecision::Decided(end) = self.decide_in_lane(cmd)?
        {
            return Ok(end);
        }
        let target = cmd.task.clone().or_else(|| self.records.first_in(&TaskState::NeedsOperator));
        let Some(task) = target.and_then(|id| self.plan.tasks.iter().find(|t| t.id == id).cloned())
        else {
            let why = format!(
                "{} names no task of the plan and none is waiting for a decision",
                cmd.op.as_str()
            );
            self.refuse(None, &why)?;
            return Ok(None);
        };
        let reason = cmd.reason.clone().unwrap_or_default();
        let state = self.records.state(&task.id);
        if cmd.op == Op::Rewind && state.is_accepted() {
            let why = format!(
                "rewind: {} is {state}: its work is on the session branch, and a rewind does not take landed work back",
                task.id
            );
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        if state.is_settled() {
            let why =
                format!("{} cannot be applied to {} while it is {state}", cmd.op.as_str(), task.id);
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        if cmd.op == Op::Rewind {
            self.rewind(&task, cmd)?;
            return Ok(None);
        }
        let reviewed = if cmd.op == Op::Review {
            match self.operator_review(&task, cmd)? {
                Some(brief) => Some(brief),
                None => return Ok(None),
            }
        } else {
            None
        };
        let event = match cmd.op {
            Op::Review if cmd.category.is_none() => GateEvent::Accepted,
            Op::RetryEval => GateEvent::EvaluatorRetried,
            Op::Approve => GateEvent::Accepted,
            Op::ForceAccept => GateEvent::ForceAccepted,
            Op::Skip => GateEvent::Skipped,
            Op::Fail => GateEvent::Failed,
            _ => {
                let guidance = cmd.text.clone().unwrap_or_default();
                let brief = reviewed.unwrap_or_else(|| {
                    format!("The operator rejected the last attempt ({reason}). {guidance}")
                        .trim()
                        .to_owned()
                });
                self.control.notes.push((Some(task.id.clone()), brief));
                let reviews = record::read_ledger(&self.dir, &task.id).len() as u64;
                if reviews >= self.cap_for(&task.id) {
                    self.records.update(&task.id, |r| r.granted += 1);
                    let mut granted = OperatorAction {
                        action: Some("grant_attempt".into()),
                        reason: Some(format!(
                            "one more attempt beyond the cap of {}, with the operator's guidance",
                            self.opts.max_attempts
                        )),
                        ..OperatorAction::default()
                    };
                    granted.scope.task_id = Some(task.id.clone());
                    granted.granted_attempt = Some(true);
                    self.emit(&granted)?;
                }
                return Ok(None);
            }
        };
        let from = self.records.state(&task.id);
        if transition(&from, event).is_err() {
            let why =
                format!("{} cannot be applied to {} while it is {from}", cmd.op.as_str(), task.id);
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        match cmd.op {
            Op::RetryEval => {
                self.control.retry_eval = Some(task.id.clone());
                Ok(None)
            }
            Op::Approve | Op::ForceAccept | Op::Review => {
                self.take_back_set_aside(&task)?;
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                let review =
                    if cmd.op == Op::ForceAccept { Review::BelowBar } else { Review::Operator };
                let last =
                    self.records.get(&task.id).last_outcome.unwrap_or(LastOutcome::NotReviewed);
                // The person accepts the work as it stands now: no judged diff binds it.
                self.finish_accepted(
                    &task,
                    Acceptance {
                        review,
                        by_operator: true,
                        last: Some(last),
                        summary: if cmd.op == Op::Review {
                            format!("accepted by the operator's review, with comments: {reason}")
                        } else {
                            format!("accepted by the operator: {reason}")
                        },
                        judged: None,
                    },
                )
            }
            Op::Skip => {
                self.set_aside(&task, "skipped")?;
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                record::append_progress(&self.dir, &task.id, "skipped", &task.title)?;
                self.write_status()?;
                Ok(None)
            }
            _ => {
                self.set_aside(&task, "failed")?;
                self.fail_task(&task, StopReason::OperatorFail).map(Some)
            }
        }
    }

    /// Sets a skipped or failed task's work aside — a commit on
    /// `refs/harrow/<session>/<what>/<task>`, so nothing is lost — and puts the worktree back
    /// at the last accepted commit, so the next task starts clean.
    pub(super) fn set_aside(&mut self, task: &super::Task, what: &str) -> Result<()> {
        let base = self.task_base(&task.id)?;
        let changed = self.task_diff(&base).map_or(true, |d| !d.is_empty());
        if changed {
            // Work that cannot be kept is not discarded: the action fails and the run says why.
            let sha = self
                .keep_work(
                    &format!("{what}/{}", task.id),
                    &base,
                    &format!("{}: its work, set aside when the operator {what} it", task.id),
                )?
                .map_err(HarnessError::NotKept)?;
            self.records.update(&task.id, |r| r.set_aside = Some(sha.clone()));
            let mut aside = OperatorAction {
                action: Some("set_aside".into()),
                reason: Some(format!(
                    "the task's work is kept on refs/harrow/{}/{what}/{}",
                    self.id, task.id
                )),
                set_aside: Some(sha.clone()),
                ..OperatorAction::default()
            };
            aside.scope.task_id = Some(task.id.clone());
            self.emit(&aside)?;
        }
        self.workspace.discard_uncommitted()?;
        Ok(())
    }

    /// Before an approve or force-accept of a task whose work was set aside, puts that work
    /// back in the worktree: it is what the decision is about.
    fn take_back_set_aside(&mut self, task: &super::Task) -> Result<()> {
        let Some(sha) = self.records.get(&task.id).set_aside else { return Ok(()) };
        let base = self.task_base(&task.id)?;
        if self.task_diff(&base).is_ok_and(|d| d.is_empty()) {
            self.workspace.restore_files(&sha)?;
        }
        Ok(())
    }

    /// Records that an operator command could not be applied, and why.
    pub(super) fn refuse(&mut self, task: Option<&str>, why: &str) -> Result<()> {
        let mut refused = OperatorAction {
            action: Some("refused".into()),
            reason: Some(why.to_owned()),
            control_offset: Some(self.control.offset),
            ..OperatorAction::default()
        };
        refused.scope.task_id = task.map(str::to_owned);
        self.emit(&refused)
    }
}
