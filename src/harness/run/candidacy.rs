//! A lane's part in a best-of task, and its attempt as its evaluator judged it: what the lane
//! carries while it works a candidate, and what the task's own lane weighs.

use super::{Case, Verdict};
use crate::session::event::EvidenceGate;

/// A lane's part in a best-of task: which attempt it works, and what became of it.
#[derive(Debug, Default)]
pub(super) struct Candidacy {
    pub(super) number: u64,
    /// The worker model it is worked by.
    pub(super) model: String,
    pub(super) judged: Option<Judged>,
    /// Dollars of its model calls.
    pub(super) spent: f64,
}

/// A candidate's attempt as its evaluator judged it.
#[derive(Debug, Clone)]
pub(super) struct Judged {
    pub(super) verdict: Verdict,
    pub(super) case: Case,
    pub(super) digest: String,
    pub(super) summary: String,
    /// Lines the change adds and removes: a tie goes to the smaller.
    pub(super) changed: u64,
    pub(super) patch: String,
    /// The attempt as judged, kept on the session's refs (none when it could not be kept).
    pub(super) kept: Option<String>,
    /// The `seq` of the last event of its conversation: where a rework goes on from.
    pub(super) last_seq: u64,
}

impl Judged {
    /// Accepted, its evidence seen (or not asked for), and kept: it may land.
    pub(super) fn eligible(&self) -> bool {
        self.verdict.accepted()
            && self.kept.is_some()
            && self.verdict.checked.as_ref().is_none_or(|c| c.gate != EvidenceGate::Held)
    }
}
