//! What the status line says about the run: live, paused, held for a decision, or how it
//! ended — never "LIVE" once the loop is gone.

use super::app::App;
use crate::session::control::Op;
use crate::session::state::{StopReason, TaskState};

impl App {
    /// How the run ended, once it has: the status line's word for it.
    pub(super) fn ended(&self) -> Option<String> {
        let fold = self.player.view.fold();
        let label = self.ended_label(&StopReason::parse(fold.ended()?));
        Some(match fold.pull_request() {
            Some(url) => format!("{label} · PR {url}"),
            None => label,
        })
    }

    /// The run mode for the status line: never "LIVE" once the loop is gone.
    pub fn live_mode(&self) -> String {
        let (at, total) = self.position();
        if at < total {
            return format!("WATCH — {} newer (G)", total - at);
        }
        if let Some(ended) = self.ended() {
            return ended;
        }
        // Only harrow holds a lock while it runs; a live Tilth log has none to look at.
        let harrow = self.player.view.fold().is_harrow();
        if self.live && harrow && self.lock_checked.is_some_and(|(_, alive)| !alive) && total > 0 {
            return format!("CRASHED: no run holds it (harrow resume {})", self.id);
        }
        if let Some(task) = self.player.view.asked() {
            return format!("ASKS: {task}'s agent waits for you — a allow · r deny");
        }
        if let Some(task) = self.player.view.held() {
            return format!(
                "HELD: {task} waits for you — a approve · r reject · F force · v re-judge · u rewind · S skip · K fail"
            );
        }
        let applied = self.player.view.operator();
        let pausing = || match self.player.view.current_task() {
            Some(task) => format!("pausing after {task}"),
            None => "pausing at the next task boundary".into(),
        };
        // With lanes a pause is applied at once: nothing new starts, and the tasks at work
        // finish first.
        let fold = self.player.view.fold();
        let at_work: Vec<String> = (0..fold.task_count())
            .filter_map(|i| fold.task_brief(i))
            .filter(|t| {
                matches!(
                    t.state,
                    TaskState::Running
                        | TaskState::Validating
                        | TaskState::Evaluating
                        | TaskState::Rework
                )
            })
            .map(|t| t.id.to_owned())
            .collect();
        match (self.pending, applied) {
            (Some(Op::Pause), Some(op)) if op != Op::Pause => pausing(),
            (Some(Op::Pause), None) => pausing(),
            _ if applied == Some(Op::Pause) && !at_work.is_empty() => {
                format!("pausing after {}", at_work.join(", "))
            }
            _ if applied == Some(Op::Pause) => "PAUSED (p resumes)".into(),
            _ if self.running_here() => "LIVE".into(),
            _ => "WATCH".into(),
        }
    }

    /// How the run ended, for the status line.
    fn ended_label(&self, reason: &StopReason) -> String {
        let fold = self.player.view.fold();
        let task_in = |state: TaskState| {
            (0..fold.task_count())
                .filter_map(|i| fold.task_brief(i))
                .find(|t| t.state == state)
                .map(|t| t.id.to_owned())
        };
        match reason {
            StopReason::AllDone => "DONE".into(),
            StopReason::NeedsOperator => {
                match task_in(TaskState::NeedsOperator).or_else(|| task_in(TaskState::Failed)) {
                    Some(task) => format!("HELD: {task} waits for you (harrow resume {})", self.id),
                    None => format!("HELD: waits for you (harrow resume {})", self.id),
                }
            }
            reason => match task_in(TaskState::Failed) {
                Some(task) => format!("FAILED {task} ({reason})"),
                None => format!("STOPPED: {reason} (resumable: harrow resume {})", self.id),
            },
        }
    }
}
