//! The figures a summary holds, as `summary.json` writes them: Tilth's v4 keys and shapes,
//! harrow's own under `harrow`.

use super::super::state::TaskState;
use super::super::weighed::EvidenceGate;
use super::{CallUsage, bump};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Token usage and cost of a set of model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt: i64,
    pub eval: i64,
    pub total: i64,
    pub cached: i64,
    pub reasoning: i64,
    pub cost: f64,
    /// Answered calls whose log gives no token counts (an ACP agent that reports no usage):
    /// the figures above are then a floor, which no reader may show as the whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncounted: u64,
    /// Calls whose counts are estimates from characters (a server that sends no usage, as
    /// llama.cpp's stream): the figures are then approximate, shown with `~`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated: u64,
}

impl Usage {
    pub(super) fn add(&mut self, call: &CallUsage) {
        self.uncounted += u64::from(call.uncounted);
        self.estimated += u64::from(call.estimated);
        self.prompt += call.prompt;
        self.eval += call.eval;
        self.total += call.prompt + call.eval;
        self.cached += call.cached;
        self.reasoning += call.reasoning;
        self.cost += call.cost;
    }
}

/// Usage with Tilth's split into the worker and evaluator phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhasedUsage {
    #[serde(flatten)]
    pub all: Usage,
    pub by_phase: ByPhase,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ByPhase {
    pub worker: Usage,
    pub evaluator: Usage,
}

impl PhasedUsage {
    pub(super) fn add(&mut self, call: &CallUsage) {
        self.all.add(call);
        if call.evaluator {
            self.by_phase.evaluator.add(call);
        } else {
            self.by_phase.worker.add(call);
        }
    }
}

/// Accepts by what harrow found of their witnesses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceCounts {
    /// Every criterion had a witness harrow saw.
    pub seen: u64,
    /// Sent back to the evaluator for evidence.
    pub sent_back: u64,
    /// Held for the operator, still without it.
    pub held: u64,
    /// Landed without it, under `evidence = "warn"`.
    pub warned: u64,
}

impl EvidenceCounts {
    fn is_empty(&self) -> bool {
        *self == EvidenceCounts::default()
    }

    /// Counts one verdict's gate.
    pub(crate) fn count(&mut self, gate: EvidenceGate) {
        match gate {
            EvidenceGate::Seen => self.seen += 1,
            EvidenceGate::SentBack => self.sent_back += 1,
            EvidenceGate::Held => self.held += 1,
            EvidenceGate::Warned => self.warned += 1,
        }
    }

    /// Adds another session's counts.
    pub(crate) fn add(&mut self, other: &EvidenceCounts) {
        self.seen += other.seen;
        self.sent_back += other.sent_back;
        self.held += other.held;
        self.warned += other.warned;
    }
}

/// Verdict counts in Tilth's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    pub accepts: u64,
    pub rejects: u64,
    pub rejection_categories: BTreeMap<String, u64>,
}

impl VerdictCounts {
    pub(crate) fn add(&mut self, accept: bool, category: Option<&str>) {
        if accept {
            self.accepts += 1;
        } else {
            self.rejects += 1;
            if let Some(c) = category {
                bump(&mut self.rejection_categories, c);
            }
        }
    }
}

/// One task in Tilth's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    /// Tilth's vocabulary: `in_progress`, `done` or `failed`.
    pub status: String,
    pub iterations: u64,
    pub tokens: PhasedUsage,
    pub tool_calls: BTreeMap<String, u64>,
    pub hook_blocks: u64,
    pub evaluator: VerdictCounts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

impl Default for TaskSummary {
    fn default() -> Self {
        TaskSummary {
            status: "in_progress".into(),
            iterations: 0,
            tokens: PhasedUsage::default(),
            tool_calls: BTreeMap::new(),
            hook_blocks: 0,
            evaluator: VerdictCounts::default(),
            failure_reason: None,
        }
    }
}

/// The last stop of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopInfo {
    pub reason: Option<String>,
    pub ts: Option<String>,
}

/// harrow's own view of one task.
// Each flag is a field of summary.json that readers test on its own.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDetail {
    /// The task's state (written as harrow names it: pending, running, validating, evaluating,
    /// rework, `needs_operator`, done, `done_below_bar`, failed, skipped; Tilth's names kept).
    #[serde(default)]
    pub state: TaskState,
    /// Evaluator rounds: each ends in a verdict; one still under way counts.
    pub attempts: u64,
    pub below_bar: bool,
    /// Accepted with review switched off (`--no-eval`): nobody judged the work.
    #[serde(default)]
    pub unreviewed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_category: Option<String>,
    pub by_operator: bool,
    pub validator_runs: u64,
    pub validator_failures: u64,
    pub commits: u64,
    pub failure_reasons: Vec<String>,
    /// harrow: the task's title, from the plan the run started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Wall time from the task's first event to its last, in milliseconds (a stop and a
    /// resume in between count too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// harrow: the lane that last worked the task, in a run with lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<u64>,
    /// harrow: the tasks it depends on, from the plan the run started with (a graph plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// How often its accepted work was sent back because it did not combine with work that
    /// landed meanwhile (lanes), and the files of the last conflict.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub merge_reworks: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The worker models the task moved to (a fallback, an escalation), each with the attempt
    /// it moved at: which model made which attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_models: Vec<(u64, String)>,
    /// How many attempts of the task's first round are worked at once (best of N).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<u64>,
    /// A best-of task's attempts as they were weighed, and the one that landed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best_of: Vec<super::super::event::CandidateSeen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_of_landed: Option<u64>,
    #[serde(skip)]
    pub(super) working_since_verdict: bool,
}

/// Counts of validator runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidatorCounts {
    pub runs: u64,
    pub failed: u64,
}

/// Lines of the log that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreadable {
    pub count: u64,
    pub lines: Vec<u64>,
}

/// harrow's figures, beside Tilth's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarrowFigures {
    /// `harrow` when any event carries a sequence number, else `tilth`.
    pub format: String,
    /// running, paused, done, failed, crashed or empty; filled in by the status check.
    pub status: String,
    /// Tasks in the plan, when the log says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_count: Option<u64>,
    pub tasks_done: u64,
    pub tasks: BTreeMap<String, TaskDetail>,
    pub tokens_by_role: BTreeMap<String, Usage>,
    /// Tokens and cost by the model that answered: a run whose role fell back or escalated
    /// used more than one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_by_model: BTreeMap<String, Usage>,
    /// The model the worker moved to last (a fallback, an escalation), while it talks to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_switched_to: Option<String>,
    /// The worker's window as the run learned it last (a compaction fitted to it), when it
    /// learned one: replay, show and the console take it over the one the start recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_window_learned: Option<u64>,
    pub model_calls: u64,
    pub unhealthy_model_calls: u64,
    /// Of the unhealthy calls, those tried again (the rest went to a fallback, a person, or
    /// stopped the run).
    #[serde(default)]
    pub retried_model_calls: u64,
    /// What the gate made of accepts' witnesses (`[gate] evidence`).
    #[serde(default, skip_serializing_if = "EvidenceCounts::is_empty")]
    pub evidence: EvidenceCounts,
    pub verdicts_parse_failed: u64,
    pub validators: ValidatorCounts,
    pub failure_reasons: BTreeMap<String, u64>,
    pub below_bar: Vec<String>,
    /// Tasks accepted without review (`--no-eval`).
    #[serde(default)]
    pub unreviewed: Vec<String>,
    pub operator_actions: u64,
    pub no_eval: bool,
    /// The sandbox the worker's commands ran in (`bubblewrap`, `landlock`, `off`), as the
    /// latest start or resume recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The feature the session is about, as its first start recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
    /// The machine the run works on, as its latest start or resume recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `prep` for a `harrow prep` interview (which works no tasks), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The reason of the last `stop` with no start or resume after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_stop: Option<String>,
    /// Where the session branch was last pushed: `BRANCH on REMOTE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<String>,
    /// The address of the pull request last opened for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    pub events: u64,
    pub unreadable_lines: Unreadable,
    pub blank_lines: u64,
    pub pending_bytes: u64,
    /// Where in the log this summary was folded to: a reader that wants the session as it is
    /// now folds only what was appended after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    /// The task the run waits on for a decision (empty when the log did not name it), while
    /// it waits: an `operator_wait` or a stop for one that no decision has answered yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<String>,
}

/// The whole summary. Serialises to Tilth's v4 keys plus `harrow`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub version: u32,
    pub session_id: Option<String>,
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prep_started_at: Option<String>,
    pub last_event_at: Option<String>,
    pub tokens: PhasedUsage,
    pub tasks: BTreeMap<String, TaskSummary>,
    pub tool_histogram: BTreeMap<String, u64>,
    pub hook_outcomes: BTreeMap<String, BTreeMap<String, u64>>,
    pub evaluator: VerdictCounts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopInfo>,
    pub harrow: HarrowFigures,
}

impl Summary {
    /// The stop that ended the session as it stands: the last `stop` with no start or resume
    /// after it.
    pub fn final_stop(&self) -> Option<&str> {
        self.harrow.final_stop.as_deref()
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if hands a reference
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
