//! The fleet's reader: a thread of its own looks at every session folder again and again and
//! hands the console the rows, so the list draws at once and keys never wait on the disk.

use crate::session::discover::Root;
use crate::session::fleet::{Change, Fleet, FleetRow};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How often the folders are looked at again: a row is true within this of its event.
const POLL: Duration = Duration::from_millis(250);

/// What the reader found last.
#[derive(Debug, Default)]
pub struct Found {
    /// Bumped on every change, so the console redraws only when something did.
    pub generation: u64,
    /// Whether the first look at every session is done.
    pub loaded: bool,
    pub rows: Vec<FleetRow>,
    /// State changes not yet taken by the console (for its notifications).
    pub changes: Vec<Change>,
}

/// The running reader; stopped when dropped.
#[derive(Debug)]
pub struct FleetFeed {
    found: Arc<Mutex<Found>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FleetFeed {
    pub fn start(roots: Vec<Root>) -> FleetFeed {
        let found = Arc::new(Mutex::new(Found::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (found, stop) = (Arc::clone(&found), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("harrow-fleet".into())
                .spawn(move || {
                    let mut fleet = Fleet::new(roots);
                    while !stop.load(Ordering::SeqCst) {
                        let (changes, any) = fleet.refresh();
                        let mut f = found.lock().unwrap_or_else(PoisonError::into_inner);
                        if any || !f.loaded {
                            f.rows = fleet.rows();
                            f.changes.extend(changes);
                            f.generation += 1;
                            f.loaded = true;
                        }
                        drop(f);
                        std::thread::sleep(POLL);
                    }
                })
                .ok()
        };
        FleetFeed { found, stop, thread }
    }

    /// Runs `f` on what the reader found last.
    pub fn with<T>(&self, f: impl FnOnce(&mut Found) -> T) -> T {
        f(&mut self.found.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for FleetFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
