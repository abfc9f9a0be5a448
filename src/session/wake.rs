//! Waking a background reader of a session file: told the file changed, or told to stop. A
//! watcher tells it of changes; a timer stands in for a change it might miss.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// What wakes a reader.
pub enum Wake {
    Changed,
    Stop,
}

/// Waits until told of a change or until `every` has passed, then takes every change told
/// meanwhile: one look answers them all. `false` when told to stop (a stop among the changes
/// counts) or when no one is left to tell.
pub fn wait(wakes: &Receiver<Wake>, every: Duration) -> bool {
    match wakes.recv_timeout(every) {
        Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => false,
        Ok(Wake::Changed) | Err(RecvTimeoutError::Timeout) => {
            wakes.try_iter().all(|w| matches!(w, Wake::Changed))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_stop_behind_changes_still_stops_and_changes_alone_do_not() {
        let (tell, wakes) = mpsc::channel();
        tell.send(Wake::Changed).unwrap();
        tell.send(Wake::Changed).unwrap();
        assert!(wait(&wakes, Duration::from_secs(5)), "changes wake the reader");
        assert!(wakes.try_recv().is_err(), "one look answers every change told");
        tell.send(Wake::Changed).unwrap();
        tell.send(Wake::Stop).unwrap();
        assert!(!wait(&wakes, Duration::from_secs(5)), "a stop among changes is not lost");
        assert!(wait(&wakes, Duration::from_millis(10)), "nothing told: the timer wakes it");
        drop(tell);
        assert!(!wait(&wakes, Duration::from_secs(5)), "no one left to tell");
    }
}
