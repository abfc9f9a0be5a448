//! How the evaluator fared in one session, as `harrow stats` sums it over many: its rulings,
//! where the operator overruled it, what harrow's check of its evidence found, and what the
//! rework it asked for cost.
//!
//! Read from the log alone, so a session from another machine, an old one, or Tilth's counts
//! the same as one that ran here.

use super::control::Op;
use super::event::{EventKind, EvidenceGate};
use super::fact::Fact;
use super::state::Ruling;
use super::summary::{EvidenceCounts, Summary, VerdictCounts};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Decisions of the operator that went against the evaluator's last word on a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    /// The operator accepted a task the evaluator had just rejected.
    pub approved_after_reject: u64,
    /// The operator sent back a task the evaluator had accepted (an accept held for its
    /// evidence or its score, then rejected or reviewed as a reject).
    pub rejected_after_accept: u64,
    /// The operator accepted a task below the bar.
    pub force_accepted: u64,
}

impl Overrides {
    pub fn total(&self) -> u64 {
        self.approved_after_reject + self.rejected_after_accept + self.force_accepted
    }

    fn add(&mut self, o: &Overrides) {
        self.approved_after_reject += o.approved_after_reject;
        self.rejected_after_accept += o.rejected_after_accept;
        self.force_accepted += o.force_accepted;
    }
}

/// The judge's record over one session or many.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeFigures {
    /// The evaluator's rulings (Tilth's judge's too); an accept sent back for its evidence is
    /// not one (the answer after it is).
    pub verdicts: VerdictCounts,
    /// Verdicts harrow gave itself (an empty diff), which no evaluator made.
    pub by_harness: u64,
    /// Answers of the evaluator that could not be read as a verdict.
    pub unreadable: u64,
    pub overrides: Overrides,
    /// What harrow's check of accepts' witnesses found.
    pub evidence: EvidenceCounts,
    /// Accepts whose witnesses harrow checked at their first asking, and how many of those
    /// failed the check (sent back, or landed marked under `warn`).
    pub evidence_checked: u64,
    pub evidence_failed: u64,
    /// Tasks accepted and landed.
    pub landed: u64,
    /// Dollars of every model call (every role's).
    pub cost: f64,
    /// Dollars of the calls a task made after its first verdict: the rework the judge asked
    /// for (or the operator did).
    pub rework_cost: f64,
    /// Calls whose log gives no tokens or cost (an ACP agent's): the dollars are then a floor.
    pub uncounted_calls: u64,
}

impl JudgeFigures {
    /// Adds another session's figures.
    pub fn add(&mut self, other: &JudgeFigures) {
        let v = &mut self.verdicts;
        v.accepts += other.verdicts.accepts;
        v.rejects += other.verdicts.rejects;
        for (category, n) in &other.verdicts.rejection_categories {
            *v.rejection_categories.entry(category.clone()).or_default() += n;
        }
        self.by_harness += other.by_harness;
        self.unreadable += other.unreadable;
        self.overrides.add(&other.overrides);
        self.evidence.add(&other.evidence);
        self.evidence_checked += other.evidence_checked;
        self.evidence_failed += other.evidence_failed;
        self.landed += other.landed;
        self.cost += other.cost;
        self.rework_cost += other.rework_cost;
        self.uncounted_calls += other.uncounted_calls;
    }

    /// The evaluator's own rulings.
    pub fn judged(&self) -> u64 {
        self.verdicts.accepts + self.verdicts.rejects
    }
}

/// What an `operator_action` says was done: a command the loop applied, or a word of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Logged {
    Command(Op),
    Own(OwnAction),
}

/// The loop's own words in `operator_action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OwnAction {
    /// The command logged just before it could not be applied.
    Refused,
    #[serde(other)]
    Other,
}

fn logged(action: &str) -> Option<Logged> {
    serde_json::from_value(serde_json::Value::String(action.to_owned())).ok()
}

/// One task while folding.
#[derive(Debug, Default)]
struct TaskTrack {
    /// The evaluator's last ruling on the task.
    last: Option<Ruling>,
    /// Whether any ruling has come: calls after it are rework.
    judged: bool,
    /// A reject of the operator's against an accept, counted unless the loop refuses it.
    pending_reject: bool,
    /// The last accept was sent back for its evidence: the next answer is its second asking.
    sent_back: bool,
}

/// Folds one session's events, in file order, into its [`JudgeFigures`].
#[derive(Debug, Default)]
pub struct JudgeFold {
    figures: JudgeFigures,
    tasks: HashMap<String, TaskTrack>,
}

impl JudgeFold {
    /// Applies one event. Everything is read from the fact's lenient fields, so a verdict
    /// with one odd field still counts by the fields that read.
    pub fn apply(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        let kind = fact.event_kind();
        if kind == Some(EventKind::ModelCall) {
            let task = p.task_id.get().and_then(|t| self.tasks.get(t));
            if task.is_some_and(|t| t.judged) {
                self.figures.rework_cost += p.cost.0.unwrap_or(0.0);
            }
            return;
        }
        let Some(task) = p.task_id.get() else { return };
        match kind {
            Some(EventKind::Verdict) => self.verdict(task, fact),
            Some(EventKind::JudgeVerdict) => self.ruled(task, fact.ruling(), None),
            Some(EventKind::TaskDone) => {
                let track = self.tasks.entry(task.to_owned()).or_default();
                track.pending_reject = false;
                if p.by_operator.0 == Some(true) {
                    let o = &mut self.figures.overrides;
                    if p.below_bar.0 == Some(true) {
                        o.force_accepted += 1;
                    } else if track.last == Some(Ruling::Reject) {
                        o.approved_after_reject += 1;
                    }
                }
            }
            Some(EventKind::OperatorAction) => match p.action.get().and_then(logged) {
                Some(Logged::Own(OwnAction::Refused)) => {
                    if let Some(track) = self.tasks.get_mut(task) {
                        track.pending_reject = false;
                    }
                }
                Some(Logged::Command(Op::Reject)) => self.operator_rejected(task),
                _ => self.settle(task),
            },
            Some(EventKind::OperatorReview)
                if p.verdict.get().and_then(Ruling::read) == Some(Ruling::Reject) =>
            {
                self.operator_rejected(task);
            }
            _ => {}
        }
    }

    fn verdict(&mut self, task: &str, fact: &Fact<'_>) {
        let p = &fact.payload;
        if p.by_harness.0 == Some(true) {
            self.figures.by_harness += 1;
            return;
        }
        let track = self.tasks.entry(task.to_owned()).or_default();
        let second_asking = std::mem::take(&mut track.sent_back);
        if let Some(gate) = p.evidence_gate.get().and_then(EvidenceGate::named) {
            let f = &mut self.figures;
            if !second_asking {
                f.evidence_checked += 1;
                f.evidence_failed +=
                    u64::from(matches!(gate, EvidenceGate::SentBack | EvidenceGate::Warned));
            }
            f.evidence.count(gate);
            if gate == EvidenceGate::SentBack {
                track.sent_back = true;
                return;
            }
        }
        if p.parse_failed.0 == Some(true) {
            self.figures.unreadable += 1;
            return;
        }
        self.ruled(task, fact.ruling(), p.rejection_category.get());
    }

    /// A reject of the operator's: an override when the evaluator's last word was an accept,
    /// counted once the loop has not refused it.
    fn operator_rejected(&mut self, task: &str) {
        self.settle(task);
        let track = self.tasks.entry(task.to_owned()).or_default();
        track.pending_reject = track.last == Some(Ruling::Accept);
    }

    /// Counts a reject of the operator's that the loop did not refuse.
    fn settle(&mut self, task: &str) {
        if let Some(track) = self.tasks.get_mut(task)
            && std::mem::take(&mut track.pending_reject)
        {
            track.last = Some(Ruling::Reject);
            self.figures.overrides.rejected_after_accept += 1;
        }
    }

    fn ruled(&mut self, task: &str, ruling: Option<Ruling>, category: Option<&str>) {
        self.settle(task);
        let Some(ruling) = ruling else {
            self.figures.unreadable += 1;
            return;
        };
        self.figures.verdicts.add(ruling == Ruling::Accept, category);
        let track = self.tasks.entry(task.to_owned()).or_default();
        track.last = Some(ruling);
        track.judged = true;
    }

    /// The session's figures, with what its summary (folded in the same pass) counts of
    /// landed tasks and cost; a reject of the operator's still pending counts (the log ended
    /// after it).
    pub fn finish(mut self, summary: &Summary) -> JudgeFigures {
        self.figures.landed = summary.harrow.tasks_done;
        self.figures.cost = summary.tokens.all.cost;
        self.figures.uncounted_calls = summary.tokens.all.uncounted;
        let pending: Vec<String> =
            self.tasks.iter().filter(|(_, t)| t.pending_reject).map(|(id, _)| id.clone()).collect();
        for task in pending {
            self.settle(&task);
        }
        self.figures
    }
}
