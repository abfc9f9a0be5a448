//! Repairs a resumed run needs before it continues.

use super::{Commit, Run, Task, TaskDone, TaskState, io, json, record, scope};

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
            .filter(|t| {
                matches!(self.states.get(&t.id), Some(TaskState::Done | TaskState::DoneBelowBar))
            })
            .cloned()
            .collect();
        for task in &accepted {
            if r.committed.contains(&task.id) {
                continue;
            }
            let below_bar = self.states.get(&task.id) == Some(&TaskState::DoneBelowBar);
            if !r.done_logged.contains(&task.id) {
                self.emit(
                    "task_done",
                    &TaskDone {
                        scope: scope(&task.id, 0, 0),
                        below_bar: Some(below_bar),
                        ..TaskDone::default()
                    },
                )?;
            }
            let sha = match self.workspace.find_task_commit(&task.id).map_err(io::Error::other)? {
                Some(sha) => Some(sha),
                None => self
                    .workspace
                    .commit_task(&task.id, &task.title, &self.id)
                    .map_err(io::Error::other)?,
            };
            let mut commit = Commit {
                scope: scope(&task.id, 0, 0),
                sha,
                message: Some(format!("{}: {}", task.id, task.title)),
                ..Commit::default()
            };
            commit.extra.insert("recovered".into(), json!(true));
            self.emit("commit", &commit)?;
            record::append_progress(
                &self.dir,
                &task.id,
                if below_bar { "done (below the bar)" } else { "done" },
                &task.title,
            )?;
            repaired.push(task.id.clone());
        }
        record::write_task_status(&self.dir, &self.status_map())?;
        self.writer.sync()?;
        Ok(repaired)
    }
}
