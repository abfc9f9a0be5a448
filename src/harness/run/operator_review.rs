//! The operator's review of a held task's diff, applied: each comment checked against the
//! diff as it stands and quoted with its line, the review logged like a verdict
//! (`operator_review`), and its brief handed to the decision — a reject sends the task back
//! with it, an accept lands the work.

use super::Desk;
use super::{GateEvent, Lane, Result, Task, control, scope, transition};
use crate::harness::operator_review::{brief, check, lines_in};
use crate::session::event::{OperatorReview, ReviewedLine};
use crate::session::state::Ruling;

impl Lane {
    /// Checks and logs a `review` of `task`; the brief its worker reads, or `None` when the
    /// review was refused (logged with why: a comment not on a line of the diff, an unknown
    /// category, a task that cannot be accepted now).
    pub(super) fn operator_review(
        &mut self,
        task: &Task,
        cmd: &control::Command,
    ) -> Result<Option<String>> {
        let category = cmd.category.clone();
        if let Some(c) = category.as_deref()
            && crate::session::state::category_meaning(c).is_none()
        {
            let why =
                format!("review: `{}` is not a rejection category", crate::printable::line(c));
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        let state = self.shared.records.state(&task.id);
        if category.is_none() && transition(&state, GateEvent::Accepted).is_err() {
            let why = format!("review: {} cannot be accepted while it is {state}", task.id);
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        let base = self.task_base(&task.id)?;
        let diff = match self.task_diff(&base) {
            Ok(diff) => diff,
            Err(e) => {
                let why = format!("review: {}'s diff could not be read: {e}", task.id);
                self.refuse(Some(&task.id), &why)?;
                return Ok(None);
            }
        };
        let reviewed = match check(&cmd.comments, &lines_in(&diff.patch())) {
            Ok(reviewed) => reviewed,
            Err(why) => {
                self.refuse(Some(&task.id), &format!("review: {why}"))?;
                return Ok(None);
            }
        };
        // What the worker reads and the log keeps: keys scrubbed, escapes shown as text.
        let reviewed: Vec<ReviewedLine> = reviewed
            .into_iter()
            .map(|r| ReviewedLine { comment: super::steer::plain(&r.comment), ..r })
            .collect();
        let reason = super::steer::plain(cmd.reason.as_deref().unwrap_or(""));
        let (_, attempt) = self.writer.position(&task.id);
        self.emit(&OperatorReview {
            scope: scope(&task.id, 0, attempt),
            verdict: Some(
                if category.is_some() { Ruling::Reject } else { Ruling::Accept }.as_str().into(),
            ),
            rejection_category: category.clone(),
            reason: Some(reason.clone()),
            comments: Some(reviewed.clone()),
            source: Some(cmd.source.clone()),
            ..OperatorReview::default()
        })?;
        Ok(Some(brief(category.as_deref(), &reason, &reviewed)))
    }
}
