//! The operator's decisions and commands from the console: which task a decision is about,
//! the editor that takes its reason, and what the console says once the event loop has sent
//! it — or offers when no run is there to act on it.

use super::app::App;
use super::modal::{Editor, text_box};
use crate::session::control::{self, Op};
use crate::session::state::TaskState;
use std::io;

impl App {
    /// The task a decision is about: the one the operator picked in the plan, else the one
    /// waiting for the operator.
    pub(super) fn decision_task(&self) -> Option<String> {
        let fold = self.player.view.fold();
        if !self.sel.plan_follow {
            return fold.task_line(self.sel.plan_selected).map(|t| t.id.to_owned());
        }
        self.player.view.held().map(str::to_owned).or_else(|| {
            (0..fold.task_count())
                .filter_map(|i| fold.task_brief(i))
                .find(|t| t.state == TaskState::NeedsOperator)
                .map(|t| t.id.to_owned())
        })
    }

    /// The task whose agent waits for a permission, when the keys are about it: nothing
    /// else is picked in the plan, or it is.
    pub(super) fn asked_task(&self) -> Option<String> {
        let asked = self.player.view.asked()?;
        let fold = self.player.view.fold();
        let picked = fold.task_line(self.sel.plan_selected).map(|t| t.id);
        (self.sel.plan_follow || picked == Some(asked)).then(|| asked.to_owned())
    }

    /// Opens the editor for an operator command; a decision with no task to be about is refused
    /// here, rather than typed and then refused by the run.
    pub(super) fn open_editor(&mut self, op: Op, title: &str) {
        // `K` is about the task at work when no other is picked or waiting.
        let at_work = || self.player.view.current_task().map(str::to_owned);
        let task = self.decision_task().or_else(|| if op == Op::Fail { at_work() } else { None });
        if task.is_none() && op != Op::Note {
            self.notice = Some(
                "no task is waiting for a decision: Tab to the plan and select one first".into(),
            );
            return;
        }
        let title = task.as_deref().map_or_else(
            || "A note for the worker, read when its next task starts".into(),
            |who| title.replace("{task}", who),
        );
        let text = text_box("Enter sends, Esc cancels", "");
        let detail = super::outcome::Detail::None;
        self.views.only(Editor { op, task, title, text, detail });
    }

    /// `i`: the editor for words to the task at work — the one picked in the plan, else the
    /// one the log worked on last. Tab in it turns the steer into a queue.
    pub(super) fn open_steer(&mut self) {
        let picked = if self.sel.plan_follow { None } else { self.decision_task() };
        let task = picked.or_else(|| self.player.view.current_task().map(str::to_owned));
        let Some(task) = task else {
            self.notice = Some(
                "no task is at work yet: e leaves a note for the next task's first turn".into(),
            );
            return;
        };
        let title = super::modal::words_title(Op::Steer, &task);
        let text = text_box("Enter sends · Tab: queue instead · Esc cancels", "");
        self.views.only(Editor {
            op: Op::Steer,
            task: Some(task),
            title,
            text,
            detail: super::outcome::Detail::None,
        });
    }

    /// What the event loop reports after carrying out a [`Effect::Send`]: the notice says what
    /// happens next, or why it could not be sent. When no run is there to read it, the console
    /// offers to start one.
    pub fn sent(&mut self, cmd: &control::Command, result: io::Result<()>) {
        if let Err(e) = result {
            self.notice = Some(format!(
                "could not send {}: {e} (is the session folder still there?)",
                cmd.op.as_str()
            ));
            return;
        }
        if matches!(cmd.op, Op::Pause | Op::Resume | Op::Step | Op::Stop) {
            self.pending = Some(cmd.op);
        }
        if self.live && !self.run_alive() {
            self.views.only(super::modal::ResumeOffer(cmd.op));
            return;
        }
        self.notice = Some(match cmd.op {
            Op::Pause => PAUSING.into(),
            Op::Resume => RESUMING.into(),
            Op::Step => "one more task, then a pause".into(),
            Op::RetryEval => format!(
                "sent retry_eval for {}; the run asks the evaluator again",
                cmd.task.as_deref().unwrap_or("the task")
            ),
            op if op.is_urgent() => format!("sent {}; the run acts on it at once", op.as_str()),
            Op::Steer => format!(
                "sent to {}: its worker reads it before its next model request (a ✎ row says when)",
                cmd.task.as_deref().unwrap_or("the task")
            ),
            Op::Queue => format!(
                "queued for {}'s next attempt (or its first turn)",
                cmd.task.as_deref().unwrap_or("the task")
            ),
            Op::Allow | Op::Deny => format!(
                "sent {} for what {}'s agent asked; it goes on at once",
                cmd.op.as_str(),
                cmd.task.as_deref().unwrap_or("the task")
            ),
            Op::Rewind => format!(
                "sent rewind for {}: the run sets it back once it is not at work (at once while it waits for a decision; an accept that comes first waits for it)",
                cmd.task.as_deref().unwrap_or("the task")
            ),
            Op::Review if self.player.view.held().is_none() => format!(
                "sent review for {}: the run decides it when its attempt ends, and an accept that comes first waits for it",
                cmd.task.as_deref().unwrap_or("the task")
            ),
            op if self.player.view.held().is_some() => {
                format!("sent {}; the waiting run acts on it now", op.as_str())
            }
            op => format!("sent {}; the run applies it at the next task boundary", op.as_str()),
        });
    }

    /// What the event loop reports after trying to start `harrow resume`.
    pub fn resumed(&mut self, result: Result<(), String>) {
        self.lock_checked = None;
        self.notice = Some(match result {
            Ok(()) => format!("resuming {}: the run picks up your decision", self.id),
            Err(e) => format!("`harrow resume {}` did not start: {e}", self.id),
        });
    }
    /// How far the export running in the background has read the log.
    pub fn exporting(&mut self, progress: crate::export::Progress) {
        self.notice = Some(format!("exporting the session… {} %", progress.percent()));
    }

    /// What the export job reports when it has written the file, or failed.
    pub fn exported(&mut self, result: Result<std::path::PathBuf, String>) {
        self.notice = Some(match result {
            Ok(path) => {
                format!("exported to {} (harrow export has HTML and JSON too)", path.display())
            }
            Err(e) => format!("could not export the session: {e}"),
        });
    }

    /// Shows the evidence file a job read, over the inspector it was opened from (if that is
    /// still open).
    pub fn evidence_loaded(&mut self, result: Result<super::evidence::Source, String>) {
        match result {
            Ok(source) => {
                if self.views.top::<super::inspector::Inspector>().is_some() {
                    self.views.open(source);
                }
            }
            Err(why) => self.notice = Some(why),
        }
    }

    /// Shows a diff the job read, over what is open now.
    pub fn diff_loaded(&mut self, result: Result<super::diff::DiffView, String>) {
        match result {
            Ok(view) => {
                self.notice = None;
                self.views.open(view);
            }
            Err(why) => self.notice = Some(why),
        }
    }

    /// A notice about a pause or resume on its way is taken down once the run has acted on
    /// it (the status line says PAUSED, or the run moved on) or has ended: it never outlives
    /// its truth.
    pub(super) fn retire_stale_notice(&mut self) {
        let pausing = self.notice.as_deref() == Some(PAUSING);
        let resuming = self.notice.as_deref() == Some(RESUMING);
        if !pausing && !resuming {
            return;
        }
        let applied = self.player.view.operator();
        let ended = self.ended().is_some();
        if ended
            || (pausing && applied == Some(Op::Pause))
            || (resuming && applied != Some(Op::Pause))
        {
            self.notice = None;
        }
    }
}

/// What the console says while a pause is on its way to the run.
const PAUSING: &str = "pausing at the next task boundary";
/// What the console says while a resume is on its way to the run.
const RESUMING: &str = "resuming";

impl App {
    /// `u`: the editor for a rewind of the verdict picked in the Ledger (its attempt, as
    /// judged) or of the ◆ turn picked in the Worker pane; refused here, with what to pick,
    /// when nothing that can be rewound to is in focus.
    pub(super) fn open_rewind(&mut self) {
        match self.rewind_in_focus() {
            Ok((task, to)) => {
                let state = crate::session::outcome::rewound_to(to.attempt, to.turn);
                let title = format!(
                    "Rewind {} to {state} — why? (its worker reads this)",
                    crate::printable::line(&task)
                );
                let text = text_box("Enter rewinds · Esc cancels", "");
                self.views.only(Editor {
                    op: Op::Rewind,
                    task: Some(task),
                    title,
                    text,
                    detail: super::outcome::Detail::Rewind(to),
                });
            }
            Err(why) => self.notice = Some(why),
        }
    }

    /// The task and state a rewind would go back to: the attempt of the Ledger's picked
    /// verdict, or the turn of the Worker pane's picked row when that turn was kept.
    fn rewind_in_focus(&mut self) -> Result<(String, super::outcome::RewindTo), String> {
        use crate::session::event::Payload;
        let pick = "u rewinds to a verdict picked in the Ledger, or a ◆ turn picked in the Worker pane (↑/↓ there)";
        let pos = match self.sel.focus {
            super::layout::Pane::Ledger => {
                let rows = &self.prepared.side.ledger;
                let row = self.sel.ledger_selected.map_or(rows.last(), |i| rows.get(i));
                row.map(|(pos, _)| *pos).ok_or_else(|| "this task's ledger is empty".to_owned())?
            }
            super::layout::Pane::Worker => self.sel.picked.ok_or_else(|| pick.to_owned())?,
            _ => return Err(pick.to_owned()),
        };
        let event = self.player.fetch(pos).map_err(|e| format!("event {pos}: {e}"))?;
        let scope = event.payload.scope().cloned().unwrap_or_default();
        let task = scope.task_id.clone().ok_or_else(|| pick.to_owned())?;
        let attempt = scope.attempt.unwrap_or(0);
        let to = match (&event.payload, self.sel.focus) {
            (Payload::Verdict(_), super::layout::Pane::Ledger) => {
                super::outcome::RewindTo { attempt, turn: None }
            }
            (_, super::layout::Pane::Ledger) => {
                return Err("pick a verdict row: u rewinds to the attempt it judged".into());
            }
            _ => {
                let turn = scope.iter.unwrap_or(0);
                if turn == 0 || !self.player.view.checkpoint(&task, attempt, turn) {
                    return Err(format!(
                        "turn {turn} of {task} left no kept worktree (it changed no file): {pick}"
                    ));
                }
                super::outcome::RewindTo { attempt, turn: Some(turn) }
            }
        };
        let fold = self.player.view.fold();
        let state = fold.task_position(&task).and_then(|i| fold.task_line(i)).map(|t| t.state);
        if state.as_ref().is_some_and(TaskState::is_accepted) {
            return Err(format!(
                "{task} is done: its work is on the session branch, and a rewind does not take landed work back"
            ));
        }
        Ok((task, to))
    }
}

impl App {
    /// Sends what the editor decided, with what it carries beyond its words.
    pub(super) fn send_decided(
        &mut self,
        op: Op,
        task: Option<String>,
        text: String,
        detail: super::outcome::Detail,
    ) {
        use super::outcome::Detail;
        if !self.live {
            self.notice = Some("decisions steer a live run; this is a replay".into());
            return;
        }
        let (reason, body) = match op {
            Op::Note | Op::Steer | Op::Queue => (None, Some(text)),
            Op::Reject => (Some(text.clone()), Some(text)),
            // A review may be sent without words: no reason then, not an empty one.
            _ => (Some(text).filter(|t| !t.is_empty()), None),
        };
        let mut cmd = super::effect::command(op, task, reason, body);
        match detail {
            Detail::None => {}
            Detail::Rewind(to) => {
                cmd.to_attempt = Some(to.attempt);
                cmd.to_turn = to.turn;
            }
            Detail::Review(draft) => {
                cmd.category = draft.category.as_ref().map(|c| c.as_str().to_owned());
                cmd.comments = (draft.comments.into_iter())
                    .map(|c| control::LineComment {
                        path: c.path,
                        line: c.line,
                        comment: c.comment,
                    })
                    .collect();
            }
        }
        self.effects.push(super::Effect::Send(cmd));
    }
}
