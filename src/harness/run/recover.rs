//! Repairs a resumed run needs before it continues.

use super::{
    Commit, Review, Run, Task, TaskDone, TaskState, io, json, progress_outcome, record, scope,
};

impl Run {
    /// Makes sure every accepted task has its `task_done` and exactly one commit: a crash can
    /// fall between the accept and the commit. Returns the tasks it repaired.
    pub fn repair_accepted(
        &mut self,
        r: &crate::harness::resume::Restored,
    ) -> io::Result<Vec<String>> {
        let mut repaired = Vec::new();
        let accepted: Vec<Task> = self
            .plan
            .tasks
            .iter()
            .filter(|t| self.states.get(&t.id).is_some_and(|s| s.is_accepted()))
            .cloned()
            .collect();
        for task in &accepted {
            if r.committed.contains(&task.id) {
                continue;
            }
            let review = match self.states.get(&task.id) {
                Some(TaskState::DoneBelowBar) => Review::BelowBar,
                Some(TaskState::DoneUnreviewed) => Review::Unreviewed,
                _ => Review::Accepted,
            };
            if !r.done_logged.contains(&task.id) {
                self.emit(
                    "task_done",
                    &TaskDone {
                        scope: scope(&task.id, 0, 0),
                        below_bar: Some(review == Review::BelowBar),
                        reviewed: (review == Review::Unreviewed).then_some(false),
                        ..TaskDone::default()
                    },
                )?;
            }
            let found = self.workspace.find_task_commit(&task.id).map_err(io::Error::other)?;
            let sha = if found.is_some() {
                found
            } else {
                let base = self.task_base(&task.id)?;
                self.workspace
                    .commit_task(&task.id, &task.title, &self.id, review, Some(&base))
                    .map_err(io::Error::other)?
            };
            let mut commit = Commit {
                scope: scope(&task.id, 0, 0),
                sha,
                message: Some(format!("{}: {}", task.id, task.title)),
                ..Commit::default()
            };
            commit.extra.insert("recovered".into(), json!(true));
            self.emit("commit", &commit)?;
            record::append_progress(&self.dir, &task.id, progress_outcome(review), &task.title)?;
            repaired.push(task.id.clone());
        }
        record::write_task_status(&self.dir, &self.status_map())?;
        self.writer.sync()?;
        Ok(repaired)
    }
}
