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
}
