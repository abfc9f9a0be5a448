//! The fleet's reader: a thread of its own looks at every session folder when the file system
//! says one changed (inotify, through `notify`, on each sessions folder and each session's own
//! folder — never recursively, a session folder holds a worktree), and again every
//! [`POLL`] in any case, since a network filesystem (a share other machines write to) sends no
//! notifications. It hands the console the rows, so the list draws at once and keys never
//! wait on the disk.

use crate::session::discover::Root;
use crate::session::fleet::{Change, Fleet, SessionRow};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How often the folders are looked at again without a notification: a row is true within
/// this of its event even on a share.
const POLL: Duration = Duration::from_millis(250);

/// After a notification, how long more are let gather before the folders are looked at: a
/// run appending many lines costs one look, not one per line.
const GATHER: Duration = Duration::from_millis(20);

/// What the reader found last.
#[derive(Debug, Default)]
pub struct Found {
    /// Bumped on every change, so the console redraws only when something did.
    pub generation: u64,
    /// Whether the first look at every session is done.
    pub loaded: bool,
    pub rows: Vec<SessionRow>,
    /// State changes not yet taken by the console (for its notifications).
    pub changes: Vec<Change>,
}

/// The running reader; stopped when dropped.
pub struct FleetFeed {
    found: Arc<Mutex<Found>>,
    stop: Arc<AtomicBool>,
    /// Wakes the reader: to stop it at once when the fleet closes.
    wake: Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FleetFeed {
    pub fn start(roots: Vec<Root>) -> FleetFeed {
        FleetFeed::polling(roots, POLL)
    }

    /// [`FleetFeed::start`], looking again every `poll` without a notification.
    fn polling(roots: Vec<Root>, poll: Duration) -> FleetFeed {
        let found = Arc::new(Mutex::new(Found::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, woken) = std::sync::mpsc::channel();
        let thread = {
            let notified = wake.clone();
            let (found, stop) = (Arc::clone(&found), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("harrow-fleet".into())
                .spawn(move || {
                    let mut watch = Watch::new(notified);
                    for root in &roots {
                        watch.add(&root.path);
                    }
                    let mut fleet = Fleet::new(roots);
                    while !stop.load(Ordering::SeqCst) {
                        let (changes, any) = fleet.refresh();
                        let mut f = found.lock().unwrap_or_else(PoisonError::into_inner);
                        if any || !f.loaded {
                            f.rows = fleet.rows();
                            for row in &f.rows {
                                watch.add(&row.dir);
                            }
                            f.changes.extend(changes);
                            f.generation += 1;
                            f.loaded = true;
                        }
                        drop(f);
                        wait(&woken, poll);
                    }
                })
                .ok()
        };
        FleetFeed { found, stop, wake, thread }
    }

    /// Runs `f` on what the reader found last.
    pub fn with<T>(&self, f: impl FnOnce(&mut Found) -> T) -> T {
        f(&mut self.found.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for FleetFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Waits for a notification (or a wake to stop) or the poll, whichever comes first.
fn wait(woken: &Receiver<()>, poll: Duration) {
    if woken.recv_timeout(poll).is_ok() {
        std::thread::sleep(GATHER);
        while woken.try_recv().is_ok() {}
    }
}

/// The folders the reader is told about. A folder that cannot be watched (the watch limit,
/// a share) is polled like the rest.
struct Watch {
    watcher: Option<notify::RecommendedWatcher>,
    watched: HashSet<PathBuf>,
}

impl Watch {
    fn new(wake: Sender<()>) -> Watch {
        let watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = wake.send(());
        })
        .ok();
        Watch { watcher, watched: HashSet::new() }
    }

    fn add(&mut self, dir: &Path) {
        use notify::{RecursiveMode, Watcher};
        let Some(watcher) = self.watcher.as_mut() else { return };
        if self.watched.contains(dir) {
            return;
        }
        if watcher.watch(dir, RecursiveMode::NonRecursive).is_ok() {
            self.watched.insert(dir.to_path_buf());
        }
    }
}

impl std::fmt::Debug for FleetFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetFeed").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::discover::Origin;
    use std::time::Instant;

    fn rows_when(feed: &FleetFeed, ok: impl Fn(&Found) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if feed.with(|f| ok(f)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_line_appended_to_a_log_reaches_the_rows_by_notification_not_by_the_poll() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-dddddd");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join("events.jsonl");
        let start = "{\"ts\":\"2026-11-26T00:00:01Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{\"task_count\":2}}\n";
        std::fs::write(&log, start).unwrap_or_else(|e| panic!("{e}"));
        let root = Root { path: tmp.path().to_path_buf(), origin: Origin::Harrow };
        // A poll an hour apart: only a notification can bring the change in time.
        let feed = FleetFeed::polling(vec![root], Duration::from_secs(3600));
        assert!(rows_when(&feed, |f| f.loaded && f.rows.len() == 1));
        let done = "{\"ts\":\"2026-11-26T00:00:02Z\",\"seq\":2,\"type\":\"task_done\",\"payload\":{\"task_id\":\"T-001\"}}\n";
        let mut file =
            std::fs::OpenOptions::new().append(true).open(&log).unwrap_or_else(|e| panic!("{e}"));
        std::io::Write::write_all(&mut file, done.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(rows_when(&feed, |f| f.rows[0].tasks_done == 1), "the append was not noticed");
        let other = tmp.path().join("20261126-000001-eeeeee");
        std::fs::create_dir_all(&other).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(other.join("events.jsonl"), start).unwrap_or_else(|e| panic!("{e}"));
        assert!(rows_when(&feed, |f| f.rows.len() == 2), "a new session was not noticed");
    }
}
