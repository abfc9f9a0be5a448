//! Task states and the one function that moves a task between them.
//!
//! Every change of a task's state in a run goes through [`transition`], which refuses moves the
//! design does not allow, so a bug in the loop shows up as an error instead of a task quietly
//! done twice or skipped without a record. The loop logs each accepted move as `task_state`.

pub use crate::session::state::TaskState;

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateEvent {
    /// The worker starts (or resumes) on the task.
    Start,
    /// A valid case was submitted.
    CaseSubmitted,
    /// Validators failed; back to the worker.
    ValidatorsFailed,
    /// Validators passed; the evaluator is asked.
    ValidatorsPassed,
    /// The operator asked the evaluator again about a held task's last case.
    EvaluatorRetried,
    /// The evaluator (or the operator) accepted.
    Accepted,
    /// Validators passed in a run with review switched off.
    AcceptedUnreviewed,
    /// Rejected with attempts left: rework in the same conversation.
    Rejected,
    /// The worker picks the rework up.
    ReworkStarted,
    /// Accepted at the rework cap without passing review.
    ForceAccepted,
    /// The evaluator could not be reached; a person decides.
    HeldForOperator,
    /// Accepted work could not be committed (it changed after it was judged, or git refused):
    /// the task waits for a person, its accept standing.
    LandingFailed,
    /// The evaluator accepted while a review or rewind the operator sent during the attempt
    /// waited for it: the operator's word outranks the accept, so the task waits for it.
    DecisionWaiting,
    /// A lane's accepted change conflicts with, or fails the checks combined with, work that
    /// landed meanwhile: it goes back to its worker.
    MergeFailed,
    /// A task it depends on is not accepted yet: it waits without a worker.
    Blocked,
    /// The operator set the task back to an earlier attempt or turn: it goes on from there.
    Rewound,
    /// What it waited on was accepted: it can be started.
    Unblocked,
    Failed,
    Skipped,
}

/// A move the design does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task state {from} cannot take {event:?}")]
pub struct IllegalTransition {
    pub from: TaskState,
    pub event: GateEvent,
}

/// The one place task states change.
// One row per (state, event) reads as the design's table; merging rows that share a target
// state would hide which events lead there.
#[allow(clippy::match_same_arms)]
pub fn transition(from: &TaskState, event: GateEvent) -> Result<TaskState, IllegalTransition> {
    use GateEvent as E;
    use TaskState as S;
    let to = match (from.clone(), event) {
        // A crash can leave a task in any unfinished state; resume starts it again from there.
        (
            S::Pending
            | S::Running
            | S::Validating
            | S::Evaluating
            | S::Rework
            | S::NeedsOperator
            | S::Failed,
            E::Start,
        ) => S::Running,
        (S::Pending, E::Blocked) => S::Blocked,
        (S::Blocked, E::Unblocked) => S::Pending,
        (S::Running, E::CaseSubmitted) => S::Validating,
        (S::Validating, E::ValidatorsFailed) => S::Running,
        (S::Validating, E::ValidatorsPassed) => S::Evaluating,
        (S::Validating, E::AcceptedUnreviewed) => S::DoneUnreviewed,
        (S::Validating | S::Evaluating | S::NeedsOperator | S::Rework, E::Accepted) => S::Done,
        (S::Validating | S::Evaluating | S::NeedsOperator, E::Rejected) => S::Rework,
        (S::Rework, E::ReworkStarted) => S::Running,
        (S::Validating | S::Evaluating | S::NeedsOperator | S::Rework, E::ForceAccepted) => {
            S::DoneBelowBar
        }
        (S::Validating | S::Evaluating | S::Running, E::HeldForOperator) => S::NeedsOperator,
        (S::Done | S::DoneBelowBar | S::DoneUnreviewed, E::LandingFailed) => S::NeedsOperator,
        (S::Done | S::DoneBelowBar | S::DoneUnreviewed, E::DecisionWaiting) => S::NeedsOperator,
        (S::Done | S::DoneBelowBar | S::DoneUnreviewed, E::MergeFailed) => S::Rework,
        (S::NeedsOperator, E::EvaluatorRetried) => S::Evaluating,
        // Any unfinished state that is not at work this moment (held, failed at the cap, left
        // by a crash) can be taken back; landed work cannot.
        (
            S::Pending
            | S::Running
            | S::Validating
            | S::Evaluating
            | S::Rework
            | S::NeedsOperator
            | S::Failed,
            E::Rewound,
        ) => S::Rework,
        // The operator may still accept, force-accept or skip a task that failed at the cap.
        (S::Failed, E::Accepted) => S::Done,
        (S::Failed, E::ForceAccepted) => S::DoneBelowBar,
        (S::Failed, E::Skipped) => S::Skipped,
        (s, E::Failed) if !s.is_terminal() => S::Failed,
        (s, E::Skipped) if !s.is_terminal() => S::Skipped,
        _ => return Err(IllegalTransition { from: from.clone(), event }),
    };
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use GateEvent as E;
    use TaskState as S;

    #[test]
    fn a_blocked_task_waits_until_unblocked_and_can_still_be_skipped() {
        let blocked = transition(&S::Pending, E::Blocked).unwrap();
        assert_eq!(blocked, S::Blocked);
        assert!(transition(&blocked, E::Start).is_err(), "a blocked task is not worked");
        assert_eq!(transition(&blocked, E::Unblocked).unwrap(), S::Pending);
        assert_eq!(transition(&blocked, E::Skipped).unwrap(), S::Skipped);
        assert!(transition(&S::Running, E::Blocked).is_err());
    }

    #[test]
    fn the_happy_path_and_rework() {
        let mut s = S::Pending;
        for (event, want) in [
            (E::Start, S::Running),
            (E::CaseSubmitted, S::Validating),
            (E::ValidatorsFailed, S::Running),
            (E::CaseSubmitted, S::Validating),
            (E::ValidatorsPassed, S::Evaluating),
            (E::Rejected, S::Rework),
            (E::ReworkStarted, S::Running),
            (E::CaseSubmitted, S::Validating),
            (E::ValidatorsPassed, S::Evaluating),
            (E::Accepted, S::Done),
        ] {
            s = transition(&s, event).unwrap();
            assert_eq!(s, want, "{event:?}");
        }
    }

    #[test]
    fn refuses_what_the_design_forbids() {
        assert!(transition(&S::Done, E::Start).is_err(), "a done task is never redone");
        assert!(transition(&S::DoneBelowBar, E::Start).is_err());
        assert!(transition(&S::DoneUnreviewed, E::Start).is_err());
        assert_eq!(transition(&S::Validating, E::AcceptedUnreviewed), Ok(S::DoneUnreviewed));
        assert!(
            transition(&S::Evaluating, E::AcceptedUnreviewed).is_err(),
            "only work that skipped review is accepted unreviewed"
        );
        assert!(transition(&S::Skipped, E::Start).is_err());
        for crashed_in in [S::Running, S::Validating, S::Evaluating, S::Rework] {
            assert_eq!(transition(&crashed_in, E::Start), Ok(S::Running), "resume after a crash");
        }
        assert!(transition(&S::Done, E::Failed).is_err());
        assert!(
            transition(&S::Pending, E::Accepted).is_err(),
            "nothing is accepted without a case"
        );
        assert!(transition(&S::Running, E::ValidatorsPassed).is_err());
        assert_eq!(transition(&S::Evaluating, E::HeldForOperator), Ok(S::NeedsOperator));
        assert_eq!(
            transition(&S::NeedsOperator, E::Accepted),
            Ok(S::Done),
            "the operator may approve"
        );
        assert_eq!(transition(&S::Rework, E::ForceAccepted), Ok(S::DoneBelowBar));
        assert_eq!(
            transition(&S::NeedsOperator, E::EvaluatorRetried),
            Ok(S::Evaluating),
            "the operator may ask the evaluator again about a held task"
        );
        for s in [S::Running, S::Rework, S::Done, S::Failed] {
            assert!(transition(&s, E::EvaluatorRetried).is_err(), "only a held task is re-judged");
        }
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(s));
        }
    }
}
