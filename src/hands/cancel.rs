//! The flag that stops what is in flight — a model call, a tool's process, the validators —
//! when the operator fails the task or stops the run at once, or on Ctrl-C.
//!
//! Processes are watched by polling (their wait loop looks at the flag between checks), but a
//! model call is awaited: it waits on the flag's notification instead of waking the runtime
//! every few milliseconds to look, so an idle run that waits on a slow model costs no CPU.

use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// Raised from any thread; looked at or awaited from any other.
#[derive(Debug, Default)]
pub struct Cancel {
    raised: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// Raises the flag and wakes every task awaiting [`Cancel::raised`].
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Lowers the flag once what raised it was handled.
    pub fn lower(&self) {
        self.raised.store(false, Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Returns once the flag is raised (at once if it is already).
    pub async fn raised(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a raise in between is not missed.
            notified.as_mut().enable();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_raise_from_another_thread_wakes_the_waiter_and_a_raised_flag_returns_at_once() {
        let cancel = Arc::new(Cancel::default());
        let raiser = Arc::clone(&cancel);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            raiser.raise();
        });
        tokio::time::timeout(Duration::from_secs(5), cancel.raised()).await.unwrap();
        thread.join().unwrap();
        tokio::time::timeout(Duration::from_millis(10), cancel.raised()).await.unwrap();
        cancel.lower();
        assert!(!cancel.is_raised());
        let waited = tokio::time::timeout(Duration::from_millis(100), cancel.raised()).await;
        assert!(waited.is_err(), "a lowered flag is waited on");
    }
}
