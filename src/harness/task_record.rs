//! What the run knows of one task beyond its place in the log: the facts a decision, a
//! landing or a resume acts on. There is one record per task, whichever lane works it, and a
//! resume rebuilds every record from the log once.

use super::gate::TaskState;
use crate::session::outcome::LastOutcome;
use crate::session::scan::LineAt;
use crate::session::state::StopReason;

/// One task's record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskRecord {
    pub state: TaskState,
    /// The commit the task started from: what its diff is measured from and its accepted
    /// commit is made on, whatever the worker does to HEAD or the branch meanwhile.
    pub base: Option<String>,
    /// What last happened to its work (validators, verdicts), for describing an accept below
    /// the bar truthfully.
    pub last_outcome: Option<LastOutcome>,
    /// Where its last case is in the log: what a `retry_eval` judges again.
    pub last_case: Option<LineAt>,
    /// Attempts the operator (or a landing that sent the work back) granted beyond the cap.
    pub granted: u64,
    /// Why it failed, when it did.
    pub failed_because: Option<StopReason>,
    /// The commit its work was set aside on, when it was skipped or failed.
    pub set_aside: Option<String>,
    /// Attempts the operator rewound past: kept, no longer the task's work.
    pub rewound: Vec<u64>,
    /// The last rewind, until the work that goes on from it is judged.
    pub rewind: Option<Rewind>,
}

/// A rewind the task has not been judged since: where its files and its conversation went
/// back to, and what its worker is told there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewind {
    /// The worktree's files as the rewind set them, a git tree.
    pub tree: String,
    /// The `seq` of the last event of the conversation kept.
    pub continues_at: u64,
    /// The message the worker goes on with.
    pub note: String,
    /// The next attempt goes on from here rather than from a fresh conversation: true from
    /// the rewind until an attempt takes it up (and again when a resume restarts that one).
    pub fresh: bool,
}
