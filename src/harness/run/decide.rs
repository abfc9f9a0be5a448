//! The operator's decisions on a task, taken in the task's lane: approve, force-accept, skip,
//! fail, reject, retry the evaluation, rewind, review.

use super::{
    Acceptance, Desk, Ended, GateEvent, HarnessError, Lane, LastOutcome, Op, OperatorAction,
    Result, Review, Task, control, record, transition,
};
use crate::session::state::StopReason;

impl Lane {
    /// Applies a decision on the lane's task, in the lane's worktree: the scheduler hands it
    /// over only when the task is not at work and the decision can apply to its state.
    pub(super) fn decide(&mut self, task: &Task, cmd: &control::Command) -> Result<Option<Ended>> {
        let reason = cmd.reason.clone().unwrap_or_default();
        if cmd.op == Op::Rewind {
            self.rewind(task, cmd)?;
            return Ok(None);
        }
        let reviewed = if cmd.op == Op::Review {
            match self.operator_review(task, cmd)? {
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
                let reviews = record::read_ledger(&self.shared.dir, &task.id).len() as u64;
                if reviews >= self.shared.cap_for(&task.id) {
                    self.shared.records.update(&task.id, |r| r.granted += 1);
                    let mut granted = OperatorAction {
                        action: Some("grant_attempt".into()),
                        reason: Some(format!(
                            "one more attempt beyond the cap of {}, with the operator's guidance",
                            self.shared.opts.max_attempts
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
        let from = self.shared.records.state(&task.id);
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
                self.take_back_set_aside(task)?;
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                let review =
                    if cmd.op == Op::ForceAccept { Review::BelowBar } else { Review::Operator };
                let last = self
                    .shared
                    .records
                    .get(&task.id)
                    .last_outcome
                    .unwrap_or(LastOutcome::NotReviewed);
                // The person accepts the work as it stands now: no judged diff binds it.
                self.land_decided(
                    task,
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
                self.set_aside(task, "skipped")?;
                self.gate(&task.id, event, &format!("operator: {reason}"), 0)?;
                record::append_progress(
                    &self.shared.dir,
                    &task.id,
                    &crate::session::vocabulary::Outcome::Skipped,
                    &task.title,
                )?;
                self.write_status()?;
                Ok(None)
            }
            _ => {
                self.set_aside(task, "failed")?;
                self.fail_task(task, StopReason::OperatorFail).map(Some)
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
            self.shared.records.update(&task.id, |r| r.set_aside = Some(sha.clone()));
            let mut aside = OperatorAction {
                action: Some("set_aside".into()),
                reason: Some(format!(
                    "the task's work is kept on refs/harrow/{}/{what}/{}",
                    self.shared.id, task.id
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
        let Some(sha) = self.shared.records.get(&task.id).set_aside else { return Ok(()) };
        let base = self.task_base(&task.id)?;
        if self.task_diff(&base).is_ok_and(|d| d.is_empty()) {
            self.workspace.restore_files(&sha)?;
        }
        Ok(())
    }
}
