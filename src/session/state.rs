//! The vocabulary of where a task stands and why a run stopped, shared by the loop that writes
//! them and every fold, console and command that reads them, so each match is checked by the
//! compiler instead of comparing strings.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An enum of written names with a catch-all (`Other`) for names this build does not know: each
/// variant and its name are written once, and `ALL` (every known variant) is built from the
/// same list, so a new variant cannot be left out of it.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $written:literal, )*
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A name this build does not know, kept as written.
            Other(String),
        }

        impl $name {
            /// Every variant harrow writes, in the order declared.
            pub const ALL: [$name; [$($written),*].len()] = [$($name::$variant),*];

            /// The name written in the log.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $written, )*
                    $name::Other(name) => name,
                }
            }

            /// The name written in the log, for a variant this build knows.
            pub fn known_name(&self) -> Option<&'static str> {
                match self {
                    $( $name::$variant => Some($written), )*
                    $name::Other(_) => None,
                }
            }

            /// Whether a written name (absent: not said) names this variant.
            pub fn is(&self, written: Option<&str>) -> bool {
                written.and_then(Self::known).is_some_and(|known| known == *self)
            }

            /// The variant a written name names, if this build knows it.
            fn known(name: &str) -> Option<$name> {
                match name {
                    $( $written => Some($name::$variant), )*
                    _ => None,
                }
            }
        }
    };
}
pub(super) use named_enum;

named_enum! {
    /// Where a task stands. A log may name a state harrow does not know (Tilth's `in_progress`,
    /// a later writer's): it is kept as written in `Other`, so nothing read is lost or refused.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    pub enum TaskState {
        #[default]
        Pending => "pending",
        /// Waiting on a task it depends on that is not accepted yet (in rework, or held): with
        /// lanes, rework holds only the tasks downstream of it.
        Blocked => "blocked",
        Running => "running",
        Validating => "validating",
        Evaluating => "evaluating",
        Rework => "rework",
        NeedsOperator => "needs_operator",
        Done => "done",
        DoneBelowBar => "done_below_bar",
        /// Accepted without review: the run had review switched off (`--no-eval`).
        DoneUnreviewed => "done_unreviewed",
        Failed => "failed",
        Skipped => "skipped",
    }
}

impl TaskState {
    /// One of harrow's states, by its written name; `None` for any other name.
    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::known(s)
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

    /// A task at work: a lane (or the run) is busy with it.
    pub fn is_at_work(&self) -> bool {
        matches!(
            self,
            TaskState::Running | TaskState::Validating | TaskState::Evaluating | TaskState::Rework
        )
    }
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

named_enum! {
    /// Why a run stopped, as the `stop` event's `reason`. Tilth wrote names harrow does not (and
    /// later writers may add more): those are kept as they were in `Other`.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum StopReason {
        /// Every task was settled.
        AllDone => "all_done",
        /// A task waits for a person's decision.
        NeedsOperator => "needs_operator",
        /// The operator asked the run to stop (resumable).
        OperatorStop => "operator_stop",
        /// The operator failed a task.
        OperatorFail => "operator_fail",
        /// A task ran out of worker iterations.
        IterCap => "iter_cap",
        /// A task ran out of evaluator rounds.
        EvaluatorCap => "evaluator_cap",
        /// The worker never submitted a case.
        NoCase => "no_case",
        /// The session's wall-clock budget was spent.
        WallClock => "wall_clock",
        /// The session's token budget was spent.
        TokenCap => "token_cap",
        /// The session's cost budget was spent.
        CostCap => "cost_cap",
        /// A model endpoint kept failing.
        ProviderFailure => "provider_failure",
        /// The person pressed Ctrl-C (resumable; the task at work restarts).
        Interrupted => "interrupted",
        /// Every task that could run is done; the rest wait on a task that was not accepted.
        Blocked => "blocked",
        /// Something the run could not go on from.
        Error => "error",
    }
}

/// The names Tilth wrote for a run that ended on a failure, beside harrow's own.
const TILTH_FAILURES: [&str; 4] = ["judge_cap", "empty_responses", "task_failed", "failed"];

impl StopReason {
    /// Reads a written name; unknown names are kept, never refused.
    pub fn parse(name: &str) -> StopReason {
        StopReason::known(name).unwrap_or_else(|| StopReason::Other(name.to_owned()))
    }

    /// The run ended as failed rather than stopped: a task failure of harrow's, or a name Tilth
    /// wrote for one.
    pub fn is_failure(&self) -> bool {
        self.is_task_failure()
            || matches!(self, StopReason::Other(name) if TILTH_FAILURES.contains(&name.as_str()))
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

named_enum! {
    /// The closed set of rejection categories a verdict (or a person's review) names.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum Category {
        ScopeCreep => "scope_creep",
        AcceptanceGap => "acceptance_gap",
        WeakTest => "weak_test",
        TestsPassButWrong => "tests_pass_but_wrong",
        HalfFinished => "half_finished",
        SpecViolation => "spec_violation",
    }
}

impl Category {
    /// Reads a written category; unknown names are kept.
    pub fn parse(name: &str) -> Category {
        Category::known(name).unwrap_or_else(|| Category::Other(name.to_owned()))
    }

    /// What the category means, for the evaluator, the worker and the inspector; `None` for
    /// a name that is not one of harrow's.
    pub fn meaning(&self) -> Option<&'static str> {
        Some(match self {
            Category::ScopeCreep => {
                "work that belongs to another task, or changes to unrelated files"
            }
            Category::AcceptanceGap => "an acceptance criterion is not satisfied by the diff",
            Category::WeakTest => {
                "the test passes but does not exercise the behaviour the criterion describes"
            }
            Category::TestsPassButWrong => {
                "meets the letter of the test, not its intent (hard-coded values, wrong mocks, deleted assertions)"
            }
            Category::HalfFinished => {
                "debug output, TODOs, dead code or a partial implementation left behind"
            }
            Category::SpecViolation => {
                "breaks an explicit constraint of the task, its criteria or the project's rules"
            }
            Category::Other(_) => return None,
        })
    }

    /// Every category's written name, in order.
    pub fn names() -> Vec<&'static str> {
        Category::ALL.iter().filter_map(Category::known_name).collect()
    }
}

/// What a category means, for the inspector and the worker.
pub fn category_meaning(category: &str) -> Option<&'static str> {
    Category::parse(category).meaning()
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
