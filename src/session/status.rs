//! What state a session is in, from its log, checkpoint and lock.

use super::checkpoint::CheckpointRead;
use serde::Serialize;
use std::fmt;

/// The state of a session as a person would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A live process holds the lock and has not stopped.
    Running,
    /// Stopped cleanly for a reason that allows `resume` (a cap, an interrupt, the operator).
    Paused,
    /// Every task finished.
    Done,
    /// Stopped on a failed task or an error.
    Failed,
    /// No final stop, no live lock, and the checkpoint says running: the process died.
    Crashed,
    /// Nothing recorded yet.
    Empty,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Paused => "paused",
            SessionStatus::Done => "done",
            SessionStatus::Failed => "failed",
            SessionStatus::Crashed => "crashed",
            SessionStatus::Empty => "empty",
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Stop reasons that end a run for good (Tilth's `_stop_to_status` plus harrow's).
pub(crate) fn is_failure(reason: &str) -> bool {
    matches!(
        reason,
        "iter_cap"
            | "evaluator_cap"
            | "no_case"
            | "error"
            | "judge_cap"
            | "empty_responses"
            | "task_failed"
            | "failed"
            | "operator_fail"
    )
}

/// Decides the status. `final_stop` is the reason of the last stop not followed by a start or
/// resume; `events` is how many events the log holds.
pub fn session_status(
    final_stop: Option<&str>,
    events: u64,
    checkpoint: &CheckpointRead,
    locked: bool,
) -> SessionStatus {
    if let Some(reason) = final_stop {
        return match reason {
            "all_done" => SessionStatus::Done,
            r if is_failure(r) => SessionStatus::Failed,
            _ => SessionStatus::Paused,
        };
    }
    if locked {
        return SessionStatus::Running;
    }
    let said = checkpoint.checkpoint().and_then(|c| c.status.as_deref());
    match said {
        Some("all_done") => SessionStatus::Done,
        Some("failed") => SessionStatus::Failed,
        Some("paused") => SessionStatus::Paused,
        Some(_) => SessionStatus::Crashed,
        None if events > 0 => SessionStatus::Crashed,
        None => SessionStatus::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::checkpoint::Checkpoint;

    fn cp(status: &str) -> CheckpointRead {
        CheckpointRead::Ok(Checkpoint { status: Some(status.into()), ..Checkpoint::default() })
    }

    #[test]
    fn decides_every_status() {
        use SessionStatus::*;
        assert_eq!(session_status(Some("all_done"), 5, &cp("running"), false), Done);
        assert_eq!(session_status(Some("evaluator_cap"), 5, &cp("failed"), false), Failed);
        assert_eq!(session_status(Some("wall_clock"), 5, &cp("running"), false), Paused);
        assert_eq!(session_status(None, 5, &cp("running"), true), Running);
        assert_eq!(session_status(None, 5, &cp("running"), false), Crashed);
        assert_eq!(session_status(None, 5, &CheckpointRead::Missing, false), Crashed);
        assert_eq!(session_status(None, 0, &CheckpointRead::Missing, false), Empty);
        assert_eq!(session_status(None, 0, &CheckpointRead::Missing, true), Running);
    }
}
