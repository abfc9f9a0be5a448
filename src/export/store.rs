//! Where an export keeps the tasks it has gathered: the few touched last in memory, the rest
//! written out to a temporary file and read back when a later event or the rendering needs
//! one. So an export's memory is bounded by its largest tasks, not by the session: a log of
//! 20,000 tasks holds at most [`OPEN`] of them at a time.

use super::TaskExport;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// How many tasks stay in memory. Tasks come and go in the order they run, a few at a time
/// (one per lane), so a task written out is rarely read back before the rendering.
pub(super) const OPEN: usize = 32;

/// A task written out: where its JSON sits in the file, and its judged attempts.
#[derive(Debug, Clone, Copy)]
struct Spilled {
    at: u64,
    len: usize,
    judged: u64,
}

#[derive(Debug, Default)]
pub(super) struct TaskStore {
    /// Each task in memory with the tick it was last touched at.
    open: HashMap<String, (TaskExport, u64)>,
    spilled: HashMap<String, Spilled>,
    file: Option<File>,
    end: u64,
    tick: u64,
}

impl TaskStore {
    /// Whether the export has gathered anything of `id`.
    pub(super) fn has(&self, id: &str) -> bool {
        self.open.contains_key(id) || self.spilled.contains_key(id)
    }

    /// The task `id`, read back or begun when it is not in memory.
    pub(super) fn get(&mut self, id: &str) -> io::Result<&mut TaskExport> {
        self.tick += 1;
        if !self.open.contains_key(id) {
            let task = match self.spilled.remove(id) {
                Some(s) => self.read(s)?,
                None => TaskExport { id: id.to_owned(), ..TaskExport::default() },
            };
            if self.open.len() >= OPEN {
                self.spill_oldest()?;
            }
            self.open.insert(id.to_owned(), (task, 0));
        }
        let tick = self.tick;
        match self.open.get_mut(id) {
            Some((task, touched)) => {
                *touched = tick;
                Ok(task)
            }
            None => Err(io::Error::other(format!("task {id} was lost from the export's store"))),
        }
    }

    /// Takes the task `id` out for rendering.
    pub(super) fn take(&mut self, id: &str) -> io::Result<Option<TaskExport>> {
        if let Some((task, _)) = self.open.remove(id) {
            return Ok(Some(task));
        }
        match self.spilled.remove(id) {
            Some(s) => self.read(s).map(Some),
            None => Ok(None),
        }
    }

    /// How many of the task's attempts have a verdict.
    pub(super) fn judged(&self, id: &str) -> u64 {
        match (self.open.get(id), self.spilled.get(id)) {
            (Some((task, _)), _) => judged(task),
            (None, Some(s)) => s.judged,
            (None, None) => 0,
        }
    }

    /// How many tasks are in memory now.
    #[cfg(test)]
    pub(super) fn in_memory(&self) -> usize {
        self.open.len()
    }

    fn spill_oldest(&mut self) -> io::Result<()> {
        let Some(oldest) =
            self.open.iter().min_by_key(|(_, (_, touched))| *touched).map(|(id, _)| id.clone())
        else {
            return Ok(());
        };
        let Some((task, _)) = self.open.remove(&oldest) else { return Ok(()) };
        let bytes = serde_json::to_vec(&task).map_err(io::Error::other)?;
        let file = match &mut self.file {
            Some(file) => file,
            empty => empty.insert(tempfile::tempfile()?),
        };
        file.seek(SeekFrom::Start(self.end))?;
        file.write_all(&bytes)?;
        let spilled = Spilled { at: self.end, len: bytes.len(), judged: judged(&task) };
        self.end += bytes.len() as u64;
        self.spilled.insert(oldest, spilled);
        Ok(())
    }

    fn read(&mut self, s: Spilled) -> io::Result<TaskExport> {
        let file = self.file.as_mut().ok_or_else(|| io::Error::other("no spilled tasks"))?;
        file.seek(SeekFrom::Start(s.at))?;
        let mut bytes = vec![0; s.len];
        file.read_exact(&mut bytes)?;
        serde_json::from_slice(&bytes).map_err(io::Error::other)
    }
}

fn judged(task: &TaskExport) -> u64 {
    task.attempts.iter().filter(|a| a.verdict.is_some()).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_tasks_leave_only_the_last_touched_in_memory_and_come_back_whole() {
        let mut store = TaskStore::default();
        for n in 0..500 {
            let task = store.get(&format!("T-{n}")).unwrap();
            task.attempts.push(super::super::Attempt { number: n, ..Default::default() });
            task.commit = Some(format!("c{n}"));
        }
        assert_eq!(store.in_memory(), OPEN);
        store.get("T-3").unwrap().attempts.push(super::super::Attempt::default());
        for n in 0..500 {
            let task = store.take(&format!("T-{n}")).unwrap().unwrap();
            assert_eq!(task.commit, Some(format!("c{n}")));
            assert_eq!(task.attempts.len(), if n == 3 { 2 } else { 1 });
        }
        assert!(store.take("T-0").unwrap().is_none());
    }
}
