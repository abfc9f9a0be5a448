//! The operator's urgent commands — `fail` and `stop --now` — acted on at once, not at the
//! next task boundary.
//!
//! A watcher thread reads `control.jsonl` a few times a second. When an urgent command for
//! the task at work arrives it raises a flag that the model call in flight, the tool's process
//! and the validators all watch: the call is dropped, the process group killed. The loop then
//! applies the command from the log as it applies every other one, so it is recorded the same
//! way.

use crate::hands::cancel::Cancel;
use crate::session::control::{self, Op};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watcher reads the control file.
const POLL: Duration = Duration::from_millis(100);

/// The watcher of one run.
#[derive(Debug)]
pub struct Urgent {
    /// Raised when an urgent command for the task at work arrived.
    pub cancel: Arc<Cancel>,
    task: Arc<Mutex<Option<String>>>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Urgent {
    /// Watches `dir`'s control file from `offset` (what the loop has read), raising `cancel`.
    pub fn watch(dir: &Path, offset: u64, cancel: Arc<Cancel>) -> Urgent {
        let task: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let done = Arc::new(AtomicBool::new(false));
        let (dir, seen_task, seen_done, flag): (PathBuf, _, _, _) =
            (dir.to_path_buf(), Arc::clone(&task), Arc::clone(&done), Arc::clone(&cancel));
        let at = AtomicU64::new(offset);
        let thread = std::thread::Builder::new()
            .name("harrow-urgent".into())
            .spawn(move || {
                while !seen_done.load(Ordering::SeqCst) {
                    if let Ok((commands, end)) = control::read_new(&dir, at.load(Ordering::SeqCst))
                    {
                        at.store(end, Ordering::SeqCst);
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
                    std::thread::sleep(POLL);
                }
            })
            .ok();
        Urgent { cancel, task, done, thread }
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
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
