//! The vocabulary of where a task stands and why a run stopped, shared by the loop that writes
//! them and every fold, console and command that reads them, so each match is checked by the
//! compiler instead of comparing strings.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a task stands. A log may name a state harrow does not know (Tilth's `in_progress`,
/// a later writer's): it is kept as written in `Other`, so nothing read is lost or refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum TaskState {
    #[default]
    Pending,
    /// Waiting on a task it depends on that is not accepted yet (in rework, or held): with
    /// lanes, rework holds only the tasks downstream of it.
    Blocked,
    Running,
    Validating,
    Evaluating,
    Rework,
    NeedsOperator,
    Done,
    DoneBelowBar,
    /// Accepted without review: the run had review switched off (`--no-eval`).
    DoneUnreviewed,
    Failed,
    Skipped,
    /// A name this build does not know, as written.
    Other(String),
}

impl TaskState {
    pub fn as_str(&self) -> &str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Blocked => "blocked",
            TaskState::Running => "running",
            TaskState::Validating => "validating",
            TaskState::Evaluating => "evaluating",
            TaskState::Rework => "rework",
            TaskState::NeedsOperator => "needs_operator",
            TaskState::Done => "done",
            TaskState::DoneBelowBar => "done_below_bar",
            TaskState::DoneUnreviewed => "done_unreviewed",
            TaskState::Failed => "failed",
            TaskState::Skipped => "skipped",
            TaskState::Other(name) => name,
        }
    }

    /// One of harrow's states, by its written name; `None` for any other name.
    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.iter().find(|t| t.as_str() == s).cloned()
    }

    /// Any written name: harrow's states as themselves, Tilth's `in_progress` as running, and
    /// anything else kept in `Other`.
    pub fn read(s: &str) -> TaskState {
        match s {
            "in_progress" => TaskState::Running,
            _ => TaskState::parse(s).unwrap_or_else(|| TaskState::Other(s.to_owned())),
        }
    }

    /// Accepted or skipped: a resumed run does not take the task up again (a failed one it
    /// does, since a resume is how a person retries it).
    pub fn is_settled(&self) -> bool {
        self.is_accepted() || *self == TaskState::Skipped
    }

    /// Accepted in any way: its work is (or is about to be) committed on the session branch.
    pub fn is_accepted(&self) -> bool {
        matches!(self, TaskState::Done | TaskState::DoneBelowBar | TaskState::DoneUnreviewed)
    }

    /// No more work happens on the task in this run.
    pub fn is_terminal(&self) -> bool {
        self.is_settled() || *self == TaskState::Failed
    }
}

impl TaskState {
    /// Every state, in the order a task usually meets them.
    pub const ALL: [TaskState; 12] = [
        TaskState::Pending,
        TaskState::Blocked,
        TaskState::Running,
        TaskState::Validating,
        TaskState::Evaluating,
        TaskState::Rework,
        TaskState::NeedsOperator,
        TaskState::Done,
        TaskState::DoneBelowBar,
        TaskState::DoneUnreviewed,
        TaskState::Failed,
        TaskState::Skipped,
    ];
}

impl Serialize for TaskState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(TaskState::read(&name))
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run stopped, as the `stop` event's `reason`. Tilth wrote names harrow does not (and
/// later writers may add more): those are kept as they were in `Other`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// Every task was settled.
    AllDone,
    /// A task waits for a person's decision.
    NeedsOperator,
    /// The operator asked the run to stop (resumable).
    OperatorStop,
    /// The operator failed a task.
    OperatorFail,
    /// A task ran out of worker iterations.
    IterCap,
    /// A task ran out of evaluator rounds.
    EvaluatorCap,
    /// The worker never submitted a case.
    NoCase,
    /// The session's wall-clock budget was spent.
    WallClock,
    /// The session's token budget was spent.
    TokenCap,
    /// The session's cost budget was spent.
    CostCap,
    /// A model endpoint kept failing.
    ProviderFailure,
    /// The person pressed Ctrl-C (resumable; the task at work restarts).
    Interrupted,
    /// Every task that could run is done; the rest wait on a task that was not accepted.
    Blocked,
    /// Something the run could not go on from.
    Error,
    /// A name this build does not know.
    Other(String),
}

impl StopReason {
    /// The name written in the log.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::AllDone => "all_done",
            StopReason::NeedsOperator => "needs_operator",
            StopReason::OperatorStop => "operator_stop",
            StopReason::OperatorFail => "operator_fail",
            StopReason::IterCap => "iter_cap",
            StopReason::EvaluatorCap => "evaluator_cap",
            StopReason::NoCase => "no_case",
            StopReason::WallClock => "wall_clock",
            StopReason::TokenCap => "token_cap",
            StopReason::CostCap => "cost_cap",
            StopReason::ProviderFailure => "provider_failure",
            StopReason::Interrupted => "interrupted",
            StopReason::Blocked => "blocked",
            StopReason::Error => "error",
            StopReason::Other(name) => name,
        }
    }

    /// Reads a written name; unknown names are kept, never refused.
    pub fn parse(name: &str) -> StopReason {
        [
            StopReason::AllDone,
            StopReason::NeedsOperator,
            StopReason::OperatorStop,
            StopReason::OperatorFail,
            StopReason::IterCap,
            StopReason::EvaluatorCap,
            StopReason::NoCase,
            StopReason::WallClock,
            StopReason::TokenCap,
            StopReason::CostCap,
            StopReason::ProviderFailure,
            StopReason::Interrupted,
            StopReason::Blocked,
            StopReason::Error,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
        .unwrap_or_else(|| StopReason::Other(name.to_owned()))
    }

    /// A task failed: the run ends as failed rather than paused.
    pub fn is_task_failure(&self) -> bool {
        matches!(
            self,
            StopReason::IterCap
                | StopReason::EvaluatorCap
                | StopReason::NoCase
                | StopReason::Error
                | StopReason::OperatorFail
        )
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for StopReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a verdict decided. Written as `accept` / `reject`; a word this build does not know
/// reads as no ruling at all, which every reader treats as "not accepted".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ruling {
    Accept,
    Reject,
}

impl Ruling {
    pub fn as_str(self) -> &'static str {
        match self {
            Ruling::Accept => "accept",
            Ruling::Reject => "reject",
        }
    }

    /// The ruling a written word names, if it names one.
    pub fn read(word: &str) -> Option<Ruling> {
        match word {
            "accept" => Some(Ruling::Accept),
            "reject" => Some(Ruling::Reject),
            _ => None,
        }
    }
}

impl fmt::Display for Ruling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The closed set of rejection categories, with what each means.
pub const CATEGORIES: &[(&str, &str)] = &[
    ("scope_creep", "work that belongs to another task, or changes to unrelated files"),
    ("acceptance_gap", "an acceptance criterion is not satisfied by the diff"),
    ("weak_test", "the test passes but does not exercise the behaviour the criterion describes"),
    (
        "tests_pass_but_wrong",
        "meets the letter of the test, not its intent (hard-coded values, wrong mocks, deleted assertions)",
    ),
    ("half_finished", "debug output, TODOs, dead code or a partial implementation left behind"),
    (
        "spec_violation",
        "breaks an explicit constraint of the task, its criteria or the project's rules",
    ),
];

/// What a category means, for the inspector and the worker.
pub fn category_meaning(category: &str) -> Option<&'static str> {
    CATEGORIES.iter().find(|(c, _)| *c == category).map(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_round_trip_and_keep_unknown_names() {
        for name in ["all_done", "needs_operator", "operator_stop", "iter_cap", "cost_cap"] {
            assert_eq!(StopReason::parse(name).as_str(), name);
            assert!(!matches!(StopReason::parse(name), StopReason::Other(_)));
        }
        assert_eq!(StopReason::parse("judge_cap"), StopReason::Other("judge_cap".into()));
        assert!(StopReason::EvaluatorCap.is_task_failure());
        assert!(!StopReason::TokenCap.is_task_failure());
    }
}
