//! What last happened to a task's work, so that a task accepted below the bar is described
//! truthfully to the operator and to every later task: never reviewed, failed its checks,
//! rejected as a category, or reviewed without a usable answer.

/// Why accepted work did not land on the session branch (lanes), in words: the files where it
/// conflicted with work that landed meanwhile, or that the two together failed the checks.
pub fn not_landed_because(conflicts: &[String]) -> String {
    if conflicts.is_empty() {
        "combined with work that landed meanwhile it failed the checks".to_owned()
    } else {
        format!("it conflicted with work that landed meanwhile in {}", conflicts.join(", "))
    }
}

/// Where a rewind took a task, in words: "attempt 2, as it was judged", "turn 5 of attempt 2".
pub fn rewound_to(attempt: u64, turn: Option<u64>) -> String {
    match turn {
        Some(turn) => format!("turn {turn} of attempt {attempt}"),
        None => format!("attempt {attempt}, as it was judged"),
    }
}

/// The last judgement a task's work received before it was let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastOutcome {
    /// No attempt of the task was ever judged: no case, or review could not be reached.
    NotReviewed,
    /// The last case failed the validators (lint or tests).
    ValidatorsFailed,
    /// The last review rejected it, with its category.
    Rejected(String),
    /// The last review gave no usable answer and the harness rejected it to fail closed.
    ReviewUnreadable,
    /// The last review accepted it with a score below the run's bar.
    BelowThreshold,
}

impl LastOutcome {
    /// The code written as `task_done.last_outcome`.
    pub fn code(&self) -> &'static str {
        match self {
            LastOutcome::NotReviewed => "not_reviewed",
            LastOutcome::ValidatorsFailed => "validators_failed",
            LastOutcome::Rejected(_) => "rejected",
            LastOutcome::ReviewUnreadable => "review_unreadable",
            LastOutcome::BelowThreshold => "below_threshold",
        }
    }

    /// The category, for a rejection.
    pub fn category(&self) -> Option<&str> {
        match self {
            LastOutcome::Rejected(c) if !c.is_empty() => Some(c),
            _ => None,
        }
    }

    /// Reads back what `code` and `category` wrote. An older `task_done` without a code but
    /// with a category was a rejection.
    pub fn parse(code: Option<&str>, category: Option<&str>) -> LastOutcome {
        match (code, category) {
            (Some("validators_failed"), _) => LastOutcome::ValidatorsFailed,
            (Some("review_unreadable"), _) => LastOutcome::ReviewUnreadable,
            (Some("below_threshold"), _) => LastOutcome::BelowThreshold,
            (Some("rejected") | None, Some(c)) => LastOutcome::Rejected(c.to_owned()),
            _ => LastOutcome::NotReviewed,
        }
    }

    /// Finishes "accepted below the quality bar …", in words fit for the worker.
    pub fn describe(&self) -> String {
        match self {
            LastOutcome::NotReviewed => "it was never reviewed".into(),
            LastOutcome::ValidatorsFailed => {
                "its last attempt failed the checks (lint or tests)".into()
            }
            LastOutcome::Rejected(c) if c.is_empty() => "its last review rejected it".into(),
            LastOutcome::Rejected(c) => format!("its last review rejected it as {c}"),
            LastOutcome::ReviewUnreadable => {
                "its last review could not be completed, so it was not accepted on merit".into()
            }
            LastOutcome::BelowThreshold => "its last review scored it below the bar".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back() {
        for o in [
            LastOutcome::NotReviewed,
            LastOutcome::ValidatorsFailed,
            LastOutcome::Rejected("weak_test".into()),
            LastOutcome::ReviewUnreadable,
            LastOutcome::BelowThreshold,
        ] {
            assert_eq!(LastOutcome::parse(Some(o.code()), o.category()), o);
        }
        assert_eq!(
            LastOutcome::parse(None, Some("half_finished")),
            LastOutcome::Rejected("half_finished".into()),
            "a task_done from before the code"
        );
        assert_eq!(LastOutcome::parse(None, None), LastOutcome::NotReviewed);
    }

    #[test]
    fn never_says_rejected_when_it_was_not() {
        assert_eq!(LastOutcome::NotReviewed.describe(), "it was never reviewed");
        assert!(!LastOutcome::ValidatorsFailed.describe().contains("reject"));
    }
}
