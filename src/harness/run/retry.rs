//! The operator's `retry_eval` on a task held for the operator: ask the evaluator again about
//! the task's last case, on the work as it stands, and let the gate act on the answer.

use super::Desk;
use super::{Case, Ended, GateEvent, Lane, Result, TaskEnd, Verdict, record, scope};
use crate::session::event::{Event, Payload};
use crate::session::state::StopReason;

impl Lane {
    /// The task's last case, read from where the resumed run found it in the log, with the
    /// iteration that submitted it.
    pub(super) fn last_case(&self, task: &str) -> Result<Option<(Case, u64)>> {
        let log = crate::session::dir::SessionDir::new(&self.shared.dir).events();
        // A resumed run found it in the log; a run that has not resumed looks it up there.
        let mut at = self.shared.records.get(task).last_case;
        if at.is_none() {
            crate::session::scan::scan(&log, |line, f| {
                if f.event_kind() == Some(crate::session::event::EventKind::ToolCall)
                    && f.payload.task_id.get() == Some(task)
                    && crate::session::vocabulary::ToolName::SubmitCase.is(f.payload.tool.get())
                {
                    at = Some(line);
                }
            })?;
        }
        let Some(at) = at else { return Ok(None) };
        let mut line = vec![0; at.len as usize];
        let file = crate::safe_io::open_regular(&log)?;
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut line, at.offset)?;
        let Ok(Event { payload: Payload::ToolCall(call), .. }) = Event::decode(&line) else {
            return Ok(None);
        };
        let case = call.args.and_then(|a| serde_json::from_value::<Case>(a).ok());
        Ok(case.map(|c| (c, call.scope.iter.unwrap_or(0))))
    }

    /// Asks the evaluator again about `task`'s last case. Returns how the run ends, if it does:
    /// an evaluator still out of reach holds the task again.
    pub(super) async fn retry_evaluation(&mut self, task_id: &str) -> Result<Option<Ended>> {
        let Some(task) = self.shared.plan.tasks.iter().find(|t| t.id == task_id).cloned() else {
            return Ok(None);
        };
        let attempt = record::read_ledger(&self.shared.dir, &task.id).len() as u64 + 1;
        let Some((case, iter)) = self.last_case(&task.id)? else {
            self.refuse(Some(&task.id), "retry_eval: the log holds no case of this task to judge")?;
            return Ok(None);
        };
        let sc = scope(&task.id, iter, attempt);
        self.gate(
            &task.id,
            GateEvent::EvaluatorRetried,
            "the operator asked the evaluator again",
            attempt,
        )?;
        let base = self.task_base(&task.id)?;
        let diff = match self.task_diff(&base) {
            Ok(diff) => diff,
            Err(e) => {
                let why = format!("the task's change could not be read: {e}");
                self.gate(&task.id, GateEvent::HeldForOperator, &why, attempt)?;
                return Ok(Some(Ended {
                    reason: StopReason::NeedsOperator,
                    detail: Some(format!("task {} still waits for the operator: {why}", task.id)),
                }));
            }
        };
        let verdict = if diff.is_empty() {
            Verdict::empty_diff()
        } else {
            let asked = super::review::Asked {
                case: &case,
                diff: &diff,
                validator_output: None,
                validators: &[],
            };
            // Asked again, the evaluator's accept rests on witnesses as the first time.
            let judged = match self.evaluate(&task, &asked, &sc, attempt, iter, None).await? {
                Ok(v) => {
                    let v = v.held_to(self.shared.opts.score_threshold);
                    self.weigh_evidence(&task, &asked, v, &sc, attempt, iter).await?
                }
                Err(e) => Err(e),
            };
            match judged {
                Ok(v) => v,
                Err(e) => {
                    let why = e.to_string();
                    self.gate(&task.id, GateEvent::HeldForOperator, &why, attempt)?;
                    return Ok(Some(Ended {
                        reason: StopReason::NeedsOperator,
                        detail: Some(format!(
                            "task {} still waits for the operator: {why}",
                            task.id
                        )),
                    }));
                }
            }
        };
        let mut attempt = attempt;
        let (feedback, end) =
            self.judged(&task, &case, &verdict, &diff, &sc, &mut attempt, iter)?;
        match end {
            Some(TaskEnd::Accepted(acceptance)) => self.land_decided(&task, acceptance),
            // Only a best-of candidate's lane is judged without an end, never the task's own.
            Some(TaskEnd::Landed | TaskEnd::Judged) => Ok(None),
            Some(TaskEnd::Failed(reason)) => self.fail_task(&task, reason).map(Some),
            Some(TaskEnd::Stop(end)) => Ok(Some(end)),
            None => {
                self.control.notes.push((Some(task.id.clone()), feedback));
                Ok(None)
            }
        }
    }
}
