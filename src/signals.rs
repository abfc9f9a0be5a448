//! SIGTERM and SIGHUP as a graceful stop, like the first Ctrl-C: the work in flight is
//! cancelled, the run logs its `stop` (resumable) and the terminal is given back. Kubernetes
//! ends a pod (deadline, eviction, drain) with SIGTERM and a closed terminal sends SIGHUP; as
//! PID 1 in a container a signal without a handler is ignored altogether, so harrow installs its
//! own. The process then exits with 128 + the signal's number, as a shell reports it (143 for
//! SIGTERM, 129 for SIGHUP).

use std::sync::atomic::{AtomicI32, Ordering};

/// The terminating signal received, 0 while none was.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The terminating signal this process received, if one was.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|s| *s != 0)
}

/// Waits (in a tokio runtime) for SIGTERM or SIGHUP and notes it. `None` when no handler could
/// be installed.
pub async fn termination() -> Option<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok()?;
    let mut hup = signal(SignalKind::hangup()).ok()?;
    let number = tokio::select! {
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    };
    RECEIVED.store(number, Ordering::SeqCst);
    Some(number)
}

/// The signal's name, for a message.
pub fn name(number: i32) -> &'static str {
    match number {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The exit status after a stop by `number`: 128 + the signal's number.
pub fn exit_status(number: i32) -> u8 {
    u8::try_from(128 + number).unwrap_or(1)
}
