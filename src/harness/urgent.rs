//! The operator's urgent commands — `fail` and `stop --now` — acted on at once, not at the
//! next task boundary.
//!
//! A watcher thread reads `control.jsonl` whenever it changes. When an urgent command for
//! the task at work arrives it raises a flag that the model call in flight, the tool's process
//! and the validators all watch: the call is dropped, the process group killed. The loop then
//! applies the command from the log as it applies every other one, so it is recorded the same
//! way.

use crate::hands::cancel::Cancel;
use crate::session::control::{self, Op};
use crate::session::wake::{self, Wake};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watcher reads the control file when the file system cannot tell it of
/// changes.
const POLL: Duration = Duration::from_millis(100);
/// How often it reads the file anyway while told of changes: for a file system that does not
/// report every write (a network mount written from another machine), or a file replaced
/// rather than appended to. A model call can take minutes, and reading every 100 ms woke the
/// run ten times a second for nothing.
const SAFETY_POLL: Duration = Duration::from_secs(2);

/// The watcher of one run.
#[derive(Debug)]
pub struct Urgent {
    /// Raised when an urgent command for the task at work arrived.
    pub cancel: Arc<Cancel>,
    task: Arc<Mutex<Option<String>>>,
    wake: Sender<Wake>,
    thread: Option<JoinHandle<()>>,
    // Held for its side effect: dropping it stops the notifications.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Urgent {
    /// Watches `dir`'s control file from `offset` (what the loop has read), raising `cancel`.
    pub fn watch(dir: &Path, offset: u64, cancel: Arc<Cancel>) -> Urgent {
        let task: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let (wake, wakes) = mpsc::channel();
        let told = wake.clone();
        let watcher = control::watch(dir, move || {
            let _ = told.send(Wake::Changed);
        })
        .ok();
        let every = if watcher.is_some() { SAFETY_POLL } else { POLL };
        let (dir, seen_task, flag): (PathBuf, _, _) =
            (dir.to_path_buf(), Arc::clone(&task), Arc::clone(&cancel));
        let mut at = offset;
        let thread = std::thread::Builder::new()
            .name("harrow-urgent".into())
            .spawn(move || {
                loop {
                    if let Ok((commands, end)) = control::read_new(&dir, at) {
                        at = end;
                        let running = seen_task.lock().ok().and_then(|t| t.clone());
                        let urgent = commands.iter().flatten().any(|c| match c.op {
                            Op::StopNow => true,
                            Op::Fail => {
                                running.is_some() && (c.task.is_none() || c.task == running)
                            }
                            _ => false,
                        });
                        if urgent {
                            flag.raise();
                        }
                    }
                    if !wake::wait(&wakes, every) {
                        return;
                    }
                }
            })
            .ok();
        Urgent { cancel, task, wake, thread, _watcher: watcher }
    }

    /// Which task is at work, so a `fail` for another task waits for the boundary.
    pub fn working_on(&self, task: Option<&str>) {
        if let Ok(mut t) = self.task.lock() {
            *t = task.map(str::to_owned);
        }
    }

    /// Whether an urgent command is waiting to be applied.
    pub fn raised(&self) -> bool {
        self.cancel.is_raised()
    }

    /// Lowers the flag once the loop has applied the command.
    pub fn lower(&self) {
        self.cancel.lower();
    }
}

impl Drop for Urgent {
    fn drop(&mut self) {
        let _ = self.wake.send(Wake::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Whether the flag is raised within `limit`.
    fn raised_within(cancel: &Cancel, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if cancel.is_raised() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn an_urgent_command_is_seen_as_it_is_written_not_at_the_next_safety_read() {
        let tmp = tempfile::tempdir().unwrap();
        let cancel = Arc::new(Cancel::default());
        let urgent = Urgent::watch(tmp.path(), 0, Arc::clone(&cancel));
        assert!(tmp.path().join("control.jsonl").exists(), "the file is made to be watched");
        // Past the watcher's first read: from here only a change wakes it before its
        // safety read.
        std::thread::sleep(Duration::from_millis(200));
        assert!(!cancel.is_raised());
        control::send(tmp.path(), &control::plain(Op::StopNow)).unwrap();
        assert!(
            raised_within(&cancel, SAFETY_POLL / 2),
            "stop --now was not acted on within {:?}",
            SAFETY_POLL / 2
        );
        let start = Instant::now();
        drop(urgent);
        assert!(
            start.elapsed() < SAFETY_POLL / 2,
            "the watcher stops when told, not at its next read"
        );
    }
}
