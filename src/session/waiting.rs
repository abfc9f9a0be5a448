//! The wait for a decision a log is in: one fold of it, shared by the summary, the fleet and
//! every reader that says what a run waits on.

use super::event::EventKind;
use super::state::TaskState;

/// The wait for a decision a log is in, folded the same way by every reader: an
/// `operator_wait` (or a stop for one) opens it, the waiting task's move to another state or a
/// new start closes it. A note or a refused decision leaves it as it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    /// The task waited on (empty when the log did not say) and why.
    pub on: Option<(String, String)>,
    /// The task last moved to `needs_operator` and the gate's reason (an evaluator that
    /// answered 503, a case that could not be read): what the wait for it is about.
    held_because: Option<(String, String)>,
}

impl Waiting {
    /// Folds one event of the log.
    pub fn apply(
        &mut self,
        kind: Option<EventKind>,
        task: Option<&str>,
        to: Option<&TaskState>,
        why: Option<&str>,
    ) {
        match kind {
            Some(EventKind::SessionStart | EventKind::SessionResume) => {
                self.on = None;
                self.held_because = None;
            }
            Some(EventKind::OperatorWait) => {
                let mut why = why.unwrap_or("waits for the operator").to_owned();
                if let Some((held, because)) = &self.held_because
                    && Some(held.as_str()) == task
                    && !why.contains(because.as_str())
                {
                    why = format!("{why}: {because}");
                }
                self.on = Some((task.unwrap_or_default().to_owned(), why));
            }
            Some(EventKind::TaskState) => {
                let moved_on = to.is_some_and(|to| *to != TaskState::NeedsOperator);
                if to == Some(&TaskState::NeedsOperator)
                    && let (Some(task), Some(why)) = (task, why)
                {
                    self.held_because = Some((task.to_owned(), why.to_owned()));
                } else if moved_on
                    && self.held_because.as_ref().is_some_and(|(h, _)| Some(h.as_str()) == task)
                {
                    self.held_because = None;
                }
                if moved_on && self.on.as_ref().is_some_and(|(w, _)| Some(w.as_str()) == task) {
                    self.on = None;
                }
            }
            // A hook of the waited task's: it is at work again (its agent's permission request
            // was answered), so nothing waits on a person.
            Some(EventKind::HookRun)
                if self.on.as_ref().is_some_and(|(w, _)| Some(w.as_str()) == task) =>
            {
                self.on = None;
            }
            _ => {}
        }
    }

    /// A stop for a decision: the run waits on `task` (or the task it already waited on).
    pub fn stopped_for_decision(&mut self, task: Option<&str>, why: Option<&str>) {
        let why = why.unwrap_or("waits for a decision").to_owned();
        let held = task.map(str::to_owned).or_else(|| self.on.take().map(|(t, _)| t));
        self.on = Some((held.unwrap_or_default(), why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_only_when_its_task_moves_on_or_the_run_starts_again() {
        let mut w = Waiting::default();
        w.apply(Some(EventKind::OperatorWait), Some("T-1"), None, Some("held"));
        w.apply(Some(EventKind::OperatorAction), Some("T-1"), None, Some("a note"));
        w.apply(Some(EventKind::TaskState), Some("T-2"), Some(&TaskState::Running), None);
        w.apply(Some(EventKind::TaskState), Some("T-1"), Some(&TaskState::NeedsOperator), None);
        assert_eq!(w.on, Some(("T-1".into(), "held".into())));
        w.apply(Some(EventKind::TaskState), Some("T-1"), Some(&TaskState::Done), None);
        assert_eq!(w.on, None);
        w.stopped_for_decision(None, None);
        assert_eq!(w.on, Some((String::new(), "waits for a decision".into())));
        w.apply(Some(EventKind::SessionResume), None, None, None);
        assert_eq!(w.on, None);
    }

    /// The wait says why the task is held (the gate's reason), not only that it waits.
    #[test]
    fn a_wait_carries_the_reason_its_task_was_held_for() {
        let mut w = Waiting::default();
        let why = "the evaluator endpoint answered 503 Service Unavailable";
        w.apply(
            Some(EventKind::TaskState),
            Some("T-1"),
            Some(&TaskState::NeedsOperator),
            Some(why),
        );
        w.apply(
            Some(EventKind::OperatorWait),
            Some("T-1"),
            None,
            Some("task T-1 waits for the operator"),
        );
        let said = w.on.clone().unwrap().1;
        assert_eq!(said, format!("task T-1 waits for the operator: {why}"));
        // Worked again, then waiting on its agent's question: the old reason is not it.
        w.apply(
            Some(EventKind::TaskState),
            Some("T-1"),
            Some(&TaskState::Running),
            Some("decided"),
        );
        w.apply(Some(EventKind::OperatorWait), Some("T-1"), None, Some("its agent asks"));
        assert_eq!(w.on.unwrap().1, "its agent asks");
    }
}
