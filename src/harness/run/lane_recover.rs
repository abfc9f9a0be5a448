//! Picking a run with lanes up again after a crash at any moment: every accepted task lands
//! exactly once, and every lane's unfinished task goes on in its own worktree.
//!
//! An accepted task's landing can be cut anywhere between its verdict and its `commit` event.
//! Its commit is looked for on the session branch first (it landed; only the log missed it);
//! otherwise the judged work, kept on its attempt ref, is put back in its lane and landed
//! again, as the verdict judged it. A lane's worktree is never trusted for accepted work.

use super::Desk;
use super::{GateEvent, Result, Run, TaskState, record};
use crate::harness::resume::Restored;

/// Accepted work to land again on a resume: the kept commit of the judged attempt, the digest
/// of the diff the verdict judged and the commit it was measured from.
#[derive(Debug, Clone)]
pub(super) struct KeptAccept {
    pub kept: String,
    pub digest: String,
    pub base: String,
}

impl Run {
    /// Readies a resumed run with lanes: logs the commits of tasks that landed before the
    /// crash, queues accepted work that did not, and puts each unfinished lane back at its
    /// task's start with its judged work. Returns the tasks whose commit it logged.
    pub fn recover_lanes(&mut self, r: &Restored) -> Result<Vec<String>> {
        let mut repaired = Vec::new();
        for task in self.shared.plan.tasks.clone() {
            let state = self.shared.records.state(&task.id);
            let accept = r.accepted.get(&task.id).cloned();
            if r.committed.contains(&task.id) || (!state.is_accepted() && accept.is_none()) {
                self.ready_lane(&task.id, r)?;
                continue;
            }
            if let Some(sha) = self.workspace.find_task_commit(&task.id)? {
                if !state.is_accepted() {
                    self.gate(
                        &task.id,
                        GateEvent::Accepted,
                        "accepted before the interruption",
                        0,
                    )?;
                }
                self.log_recovered(&task, r, Some(sha))?;
                repaired.push(task.id.clone());
                continue;
            }
            let kept = accept.and_then(|(digest, base)| {
                let judged = r.judged.get(&task.id)?.values().next_back()?.clone();
                Some(KeptAccept { kept: judged, digest, base })
            });
            if let Some(k) = kept {
                if !state.is_accepted() {
                    let why = "accepted before the interruption";
                    self.gate(&task.id, GateEvent::Accepted, why, 0)?;
                }
                self.book.to_land.insert(task.id.clone(), k);
            } else {
                let why = "its accepted work had not landed when the run was interrupted, and no judged attempt of it is kept; approve it again to land the work in its lane as it stands";
                self.gate(&task.id, GateEvent::LandingFailed, why, 0)?;
            }
        }
        record::write_task_status(&self.shared.dir, &self.shared.status_map())?;
        self.writer.sync()?;
        Ok(repaired)
    }

    /// Puts an unfinished task's lane back at the task's start, with the work its last
    /// judged attempt had on top (as a run in place restarts a rework). A task that waits
    /// for a decision keeps its worktree as it is. A task that had begun and whose lane is gone
    /// (the session moved to another clone, or the folder was removed) gets a new lane at its
    /// start, so its attempts go on from the commit they were measured against.
    fn ready_lane(&mut self, task: &str, r: &Restored) -> Result<()> {
        if self.shared.settled(task) {
            return Ok(());
        }
        let lanes = self.workspace.lanes_folder();
        let found = self.workspace.lane_of(task, &lanes);
        let reviews = record::read_ledger(&self.shared.dir, task).len() as u64;
        let state = self.shared.records.state(task);
        if state == TaskState::NeedsOperator || self.shared.failed_waiting(task, reviews).is_some()
        {
            return Ok(());
        }
        let Some(base) = self.shared.records.get(task).base else { return Ok(()) };
        let lane = match found {
            Some(lane) => lane,
            None => self.workspace.lane_for(task, &lanes, &[])?,
        };
        lane.reset_lane(&base)?;
        if let Some(rewind) = self.shared.records.get(task).rewind {
            // Rewound and not judged since: the attempt starts again from the rewind.
            lane.restore_tree(&rewind.tree)?;
            let fresh = crate::harness::task_record::Rewind { fresh: true, ..rewind };
            self.shared.records.update(task, |r| r.rewind = Some(fresh));
        } else if let Some(sha) = r.judged.get(task).and_then(|j| j.get(&reviews)) {
            lane.restore_files(sha)?;
        }
        Ok(())
    }
}
