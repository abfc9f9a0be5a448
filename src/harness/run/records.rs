//! The run's one record of its tasks and its spend, shared by every lane: a lane writes its
//! own task's record and its calls' spend where the scheduler reads them, so nothing is copied
//! into a lane or back out of it.

use super::below_bar_warning;
use crate::harness::gate::TaskState;
use crate::harness::plan::Plan;
use crate::harness::resume::Restored;
use crate::harness::task_record::TaskRecord;
use crate::session::summary::Usage;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Every task's record, what the run has spent by role, and what later tasks are warned of.
#[derive(Debug, Default)]
pub(super) struct Records(Mutex<Book>);

#[derive(Debug, Default)]
struct Book {
    tasks: BTreeMap<String, TaskRecord>,
    usage: BTreeMap<String, Usage>,
    tokens: u64,
    dollars: f64,
    warnings: Vec<String>,
}

impl Records {
    /// A record, pending, for each of the plan's tasks.
    pub fn new(plan: &Plan) -> Records {
        let tasks = plan.tasks.iter().map(|t| (t.id.clone(), TaskRecord::default())).collect();
        Records(Mutex::new(Book { tasks, ..Book::default() }))
    }

    /// The records a resume rebuilt from the log (for the plan's tasks), its spend, and the
    /// warnings its accepts below the bar give later tasks.
    pub fn restored(plan: &Plan, r: &Restored) -> Records {
        let records = Records::new(plan);
        {
            let mut book = records.lock();
            for (task, record) in &r.tasks {
                if let Some(slot) = book.tasks.get_mut(task) {
                    slot.clone_from(record);
                }
            }
            book.usage.clone_from(&r.usage);
            book.tokens = r.tokens_total;
            book.dollars = r.usage.values().map(|u| u.cost).sum();
            for (task, last) in &r.below_bar {
                let title = plan.tasks.iter().find(|t| &t.id == task).map_or("", |t| &t.title);
                book.warnings.push(below_bar_warning(task, title, last));
            }
        }
        records
    }

    /// A lane that panicked while holding the records leaves them as its last whole change
    /// did: every change is one field or one entry.
    fn lock(&self) -> MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `task`'s record as it is now.
    pub fn get(&self, task: &str) -> TaskRecord {
        self.lock().tasks.get(task).cloned().unwrap_or_default()
    }

    pub fn state(&self, task: &str) -> TaskState {
        self.lock().tasks.get(task).map(|r| r.state.clone()).unwrap_or_default()
    }

    /// Changes `task`'s record.
    pub fn update<T>(&self, task: &str, change: impl FnOnce(&mut TaskRecord) -> T) -> T {
        change(self.lock().tasks.entry(task.to_owned()).or_default())
    }

    /// The first task (by id) in `state`.
    pub fn first_in(&self, state: &TaskState) -> Option<String> {
        self.lock().tasks.iter().find(|(_, r)| &r.state == state).map(|(t, _)| t.clone())
    }

    /// Every task's state.
    pub fn states(&self) -> BTreeMap<String, TaskState> {
        self.lock().tasks.iter().map(|(t, r)| (t.clone(), r.state.clone())).collect()
    }

    /// Adds one call's spend for `role`; the run's tokens so far.
    pub fn spend(&self, role: &str, u: &crate::brain::client::CallUsage) -> u64 {
        let mut book = self.lock();
        book.tokens += u.prompt + u.completion;
        book.dollars += u.cost;
        let entry = book.usage.entry(role.to_owned()).or_default();
        entry.prompt += u.prompt as i64;
        entry.eval += u.completion as i64;
        entry.total += (u.prompt + u.completion) as i64;
        entry.cached += u.cached as i64;
        entry.reasoning += u.reasoning as i64;
        entry.cost += u.cost;
        book.tokens
    }

    /// Tokens and dollars spent so far by the run and all its lanes.
    pub fn spent(&self) -> (u64, f64) {
        let book = self.lock();
        (book.tokens, book.dollars)
    }

    /// What each role has spent.
    pub fn usage(&self) -> BTreeMap<String, Usage> {
        self.lock().usage.clone()
    }

    /// Warns every later task, once, of what an earlier one left.
    pub fn warn(&self, warning: String) {
        let mut book = self.lock();
        if !book.warnings.contains(&warning) {
            book.warnings.push(warning);
        }
    }

    pub fn warnings(&self) -> Vec<String> {
        self.lock().warnings.clone()
    }
}
