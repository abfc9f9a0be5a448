//! Repairs a resumed run needs before it continues.

use super::Desk;
use super::{Acceptance, GateEvent, Lane, Result, Review, Task, TaskState, record};
use crate::harness::task_record::Rewind;

/// Where the first unfinished task picks up after a resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restart {
    /// Its work stays as it is: it waits for a decision (held, or failed at the cap).
    Kept,
    /// A rework restarts from the work its last reject judged, as kept then.
    FromJudged { attempt: u64 },
    /// It restarts from the last commit; these paths were thrown away.
    FromLastCommit { discarded: Vec<String> },
    /// The operator rewound it and nothing was judged since: it restarts from the rewound
    /// files and conversation.
    FromRewind,
}

impl Lane {
    /// Commits the work of every task whose accept was logged but not finished (a crash fell
    /// between the verdict and the commit): the accept is durable from its verdict. The
    /// worktree must hold exactly what was judged (the verdict's diff digest); when it does
    /// not, the task waits for the operator rather than commit something else or redo it.
    pub(super) fn honour_accepts(
        &mut self,
        r: &crate::harness::resume::Restored,
    ) -> Result<Vec<String>> {
        let mut honoured = Vec::new();
        let tasks: Vec<Task> = self.shared.plan.tasks.clone();
        for task in &tasks {
            let Some((digest, base)) = r.accepted.get(&task.id) else { continue };
            let state = self.shared.records.state(&task.id);
            if state.is_accepted() || state == TaskState::NeedsOperator {
                // Landed, or already held for a person (an earlier resume found the work
                // changed): the decision is the operator's, and the run says which there are.
                continue;
            }
            let same = self.task_diff(base).is_ok_and(|d| d.digest == *digest);
            if !same {
                let why = "the worktree no longer holds the work that was accepted (its diff differs from the one judged)";
                self.gate(&task.id, GateEvent::HeldForOperator, why, 0)?;
                continue;
            }
            self.gate(&task.id, GateEvent::Accepted, "accepted before the interruption", 0)?;
            let summary = self
                .last_case(&task.id)?
                .map_or_else(|| "accepted before the interruption".into(), |(c, _)| c.summary);
            let judged = Some(digest.clone());
            let acceptance = Acceptance {
                review: Review::Accepted,
                by_operator: false,
                last: None,
                summary,
                judged,
            };
            if self.land_decided(task, acceptance)?.is_none() {
                honoured.push(task.id.clone());
            }
        }
        Ok(honoured)
    }

    /// Readies the worktree for the first unfinished task: keeps a held or capped task's
    /// work for the decision, restarts an interrupted rework from the work its last reject
    /// judged, and anything else from the last commit.
    pub(super) fn prepare_restart(
        &mut self,
        r: &crate::harness::resume::Restored,
    ) -> Result<Restart> {
        let Some(task) = self.shared.unfinished().into_iter().next() else {
            return Ok(Restart::Kept);
        };
        let state = self.shared.records.state(&task);
        let reviews = record::read_ledger(&self.shared.dir, &task).len() as u64;
        if state == TaskState::NeedsOperator || self.shared.failed_waiting(&task, reviews).is_some()
        {
            return Ok(Restart::Kept);
        }
        if let Some(rewind) = self.shared.records.get(&task).rewind {
            // Rewound and not judged since: the attempt starts again from the rewind.
            self.workspace.restore_tree(&rewind.tree)?;
            self.shared
                .records
                .update(&task, |r| r.rewind = Some(Rewind { fresh: true, ..rewind }));
            return Ok(Restart::FromRewind);
        }
        if let Some(sha) = r.judged.get(&task).and_then(|j| j.get(&reviews)) {
            self.workspace.restore_files(sha)?;
            return Ok(Restart::FromJudged { attempt: reviews });
        }
        let discarded = self.workspace.discard_uncommitted()?;
        Ok(Restart::FromLastCommit { discarded })
    }

    /// Makes sure every accepted task has its `task_done` and exactly one commit: a crash can
    /// fall between the accept and the commit. Returns the tasks it repaired.
    pub(super) fn repair_accepted(
        &mut self,
        r: &crate::harness::resume::Restored,
    ) -> Result<Vec<String>> {
        let mut repaired = Vec::new();
        let accepted: Vec<Task> = self
            .shared
            .plan
            .tasks
            .iter()
            .filter(|t| self.shared.records.state(&t.id).is_accepted())
            .cloned()
            .collect();
        for task in &accepted {
            // Committed before the crash, or just now by `honour_accepts`: once is enough.
            if r.committed.contains(&task.id) || self.writer.commits_of(&task.id) > 0 {
                continue;
            }
            let found = self.workspace.find_task_commit(&task.id)?;
            let sha = if found.is_some() {
                found
            } else {
                let base = self.task_base(&task.id)?;
                let review = self.shared.review_of(&task.id);
                self.workspace.commit_task(
                    &task.id,
                    &task.title,
                    &self.shared.id,
                    review,
                    Some(&base),
                    None,
                )?
            };
            self.log_recovered(task, r, sha)?;
            repaired.push(task.id.clone());
        }
        record::write_task_status(&self.shared.dir, &self.shared.status_map())?;
        self.writer.sync()?;
        Ok(repaired)
    }
}
