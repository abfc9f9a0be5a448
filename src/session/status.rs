//! What state a session is in: one ladder from what its log, checkpoint and lock say, used by
//! `show`, `sessions`, the fleet and `--follow` alike, so no two of them name a run
//! differently.

use super::checkpoint::CheckpointRead;
use super::state::StopReason;
use super::vocabulary::CheckpointStatus;
use serde::Serialize;
use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a run on another machine may write nothing before it reads as silent.
pub const SILENT_AFTER: Duration = Duration::from_secs(10 * 60);

/// The state of a session as a person would name it. Ordered as the fleet lists runs: what
/// needs a person first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A task waits for a decision.
    Held,
    /// No final stop, no live lock, and the checkpoint says running: the process died.
    Crashed,
    /// Stopped on a failed task or an error.
    Failed,
    /// Held by a process on another machine that has written nothing for a long while.
    Silent,
    /// A live process holds the lock and works.
    Running,
    /// Live, not starting new tasks until someone resumes it.
    Paused,
    /// Ended for a reason `resume` gets past (a cap, an interrupt, the operator).
    Stopped,
    /// Every task finished.
    Done,
    /// Nothing recorded yet.
    Empty,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Held => "held",
            SessionStatus::Crashed => "crashed",
            SessionStatus::Failed => "failed",
            SessionStatus::Silent => "silent",
            SessionStatus::Running => "running",
            SessionStatus::Paused => "paused",
            SessionStatus::Stopped => "stopped",
            SessionStatus::Done => "done",
            SessionStatus::Empty => "empty",
        }
    }

    /// Whether the run waits for a person: held, crashed or failed.
    pub fn needs_person(self) -> bool {
        matches!(self, SessionStatus::Held | SessionStatus::Crashed | SessionStatus::Failed)
    }

    /// Whether a live process works the session (a held run may be live or ended: the lock
    /// says which).
    pub fn is_working(self) -> bool {
        matches!(self, SessionStatus::Running | SessionStatus::Paused | SessionStatus::Silent)
    }

    /// The ladder: the last stop decides an ended run; a live lock with a wait, a pause or a
    /// long silence decides a live one; the checkpoint, an unlocked one with no final stop.
    pub fn decide(facts: &StatusFacts<'_>) -> SessionStatus {
        use SessionStatus as S;
        let said = facts.checkpoint;
        match (facts.final_stop, &facts.holder) {
            (Some(StopReason::NeedsOperator), _) => S::Held,
            (Some(StopReason::AllDone), _) => S::Done,
            (Some(r), _) if r.is_failure() => S::Failed,
            (Some(_), _) => S::Stopped,
            (None, Some(h)) if h.elsewhere && h.quiet_for >= SILENT_AFTER => S::Silent,
            (None, Some(_)) if facts.waiting => S::Held,
            (None, Some(_)) if said == Some(Said::Paused) => S::Paused,
            (None, Some(_)) => S::Running,
            (None, None) => match said {
                Some(Said::AllDone) => S::Done,
                Some(Said::Failed) => S::Failed,
                Some(Said::Paused) => S::Stopped,
                Some(Said::Other) => S::Crashed,
                None if facts.events > 0 => S::Crashed,
                None => S::Empty,
            },
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a checkpoint's `status` says, as far as the ladder cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    AllDone,
    Failed,
    Paused,
    Other,
}

impl Said {
    /// Reads a checkpoint's written status.
    pub fn read(status: &str) -> Said {
        // Tilth's checkpoints say how its run stopped: a failure's name is a failure.
        match CheckpointStatus::parse(status) {
            CheckpointStatus::AllDone => Said::AllDone,
            CheckpointStatus::Failed => Said::Failed,
            CheckpointStatus::Paused => Said::Paused,
            CheckpointStatus::Other(name) if StopReason::parse(&name).is_failure() => Said::Failed,
            _ => Said::Other,
        }
    }

    /// What the checkpoint read says, if it says anything.
    pub fn of(checkpoint: &CheckpointRead) -> Option<Said> {
        checkpoint.checkpoint().and_then(|c| c.status.as_deref()).map(Said::read)
    }
}

/// The live process that holds a session's lock.
#[derive(Debug, Clone, Copy)]
pub struct Holder {
    /// It runs on another machine (its liveness cannot be checked from here).
    pub elsewhere: bool,
    /// How long the log has not grown.
    pub quiet_for: Duration,
}

impl Holder {
    /// The live holder of the session in `dir`, if any; `quiet_for` is the log's age.
    pub fn of(dir: &Path) -> Option<Holder> {
        let holder = super::lock::live_holder(dir)?;
        let quiet_for = std::fs::metadata(super::dir::SessionDir::new(dir).events())
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| SystemTime::now().duration_since(at).ok())
            .unwrap_or_default();
        Some(Holder { elsewhere: holder.host != super::lock::hostname(), quiet_for })
    }
}

/// The status of a session whose log folded into `summary`, with its checkpoint and lock.
pub fn session_status(
    summary: &super::summary::Summary,
    checkpoint: &CheckpointRead,
    holder: Option<Holder>,
) -> SessionStatus {
    let stop = summary.final_stop().map(StopReason::parse);
    SessionStatus::decide(&StatusFacts {
        final_stop: stop.as_ref(),
        waiting: summary.harrow.waiting_on.is_some(),
        holder,
        checkpoint: Said::of(checkpoint),
        events: summary.harrow.events,
    })
}

/// What the ladder decides from.
#[derive(Debug, Clone, Copy)]
pub struct StatusFacts<'a> {
    /// The reason of the last stop not followed by a start or resume.
    pub final_stop: Option<&'a StopReason>,
    /// A task waits for a decision (an `operator_wait` no decision has answered yet).
    pub waiting: bool,
    pub holder: Option<Holder>,
    pub checkpoint: Option<Said>,
    /// How many events the log holds.
    pub events: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(
        stop: Option<&'a StopReason>,
        holder: Option<Holder>,
        said: Option<&str>,
    ) -> StatusFacts<'a> {
        StatusFacts {
            final_stop: stop,
            waiting: false,
            holder,
            checkpoint: said.map(Said::read),
            events: 5,
        }
    }

    #[test]
    fn decides_every_status() {
        use SessionStatus::*;
        let here = Some(Holder { elsewhere: false, quiet_for: Duration::ZERO });
        let quiet_elsewhere = Some(Holder { elsewhere: true, quiet_for: SILENT_AFTER });
        let decide = |f: &StatusFacts<'_>| SessionStatus::decide(f);
        assert_eq!(decide(&facts(Some(&StopReason::AllDone), None, Some("running"))), Done);
        assert_eq!(decide(&facts(Some(&StopReason::EvaluatorCap), None, Some("failed"))), Failed);
        assert_eq!(decide(&facts(Some(&StopReason::parse("judge_cap")), None, None)), Failed);
        assert_eq!(decide(&facts(Some(&StopReason::WallClock), None, Some("running"))), Stopped);
        assert_eq!(decide(&facts(Some(&StopReason::NeedsOperator), None, None)), Held);
        assert_eq!(decide(&facts(None, here, Some("running"))), Running);
        assert_eq!(decide(&facts(None, here, Some("paused"))), Paused);
        assert_eq!(decide(&StatusFacts { waiting: true, ..facts(None, here, None) }), Held);
        assert_eq!(decide(&facts(None, quiet_elsewhere, Some("running"))), Silent);
        assert_eq!(decide(&facts(None, None, Some("running"))), Crashed);
        assert_eq!(decide(&facts(None, None, Some("paused"))), Stopped);
        assert_eq!(decide(&facts(None, None, Some("all_done"))), Done);
        assert_eq!(decide(&facts(None, None, None)), Crashed);
        assert_eq!(decide(&StatusFacts { events: 0, ..facts(None, None, None) }), Empty);
        assert_eq!(decide(&StatusFacts { events: 0, ..facts(None, here, None) }), Running);
    }
}
