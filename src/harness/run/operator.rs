//! Operator commands at task boundaries: pause, step, stop, notes, and decisions on a task.

use super::Desk;
use super::{Ended, Op, OperatorAction, Result, Run, control};

impl Run {
    /// As a task starts: the last task a `step` allows is this one, and nothing starts after
    /// it until the operator says so.
    pub(super) fn count_step(&mut self, task: &str) {
        if let Some(left) = self.control.steps_left {
            if left <= 1 {
                self.control.steps_left = None;
                self.control.paused = true;
                self.control.stepping = Some(task.to_owned());
            } else {
                self.control.steps_left = Some(left - 1);
            }
        }
    }

    /// As a task comes back: when it was the step's, the run now waits, and the log says so
    /// as a pause (from the step), so everything that reads it knows the run waits.
    pub(super) fn step_done(&mut self, task: &str) -> Result<()> {
        if self.control.stepping.as_deref() == Some(task) {
            self.control.stepping = None;
            self.emit(&OperatorAction {
                action: Some("pause".into()),
                reason: Some("the step's task is done".into()),
                source: Some("step".into()),
                ..OperatorAction::default()
            })?;
        }
        Ok(())
    }

    /// Reads and applies new operator commands, logging each. A `fail` decision ends the run.
    pub(super) fn poll_control(&mut self) -> Result<Option<Ended>> {
        let (commands, end) = control::read_new(&self.shared.dir, self.control.offset)?;
        if end == self.control.offset {
            return Ok(None);
        }
        self.control.offset = end;
        let mut ended = None;
        for command in commands {
            let mut action =
                OperatorAction { control_offset: Some(end), ..OperatorAction::default() };
            let cmd = match command {
                Ok(c) => c,
                Err(why) => {
                    action.action = Some("unreadable".into());
                    action.reason = Some(why);
                    self.emit(&action)?;
                    continue;
                }
            };
            action.scope.task_id.clone_from(&cmd.task);
            action.action = Some(cmd.op.as_str().into());
            action.reason.clone_from(&cmd.reason);
            action.note.clone_from(&cmd.text);
            action.source = Some(cmd.source.clone());
            self.emit(&action)?;
            match cmd.op {
                Op::Pause => self.control.paused = true,
                Op::Resume => {
                    self.control.paused = false;
                    self.control.steps_left = None;
                }
                Op::Step => {
                    self.control.paused = false;
                    self.control.steps_left = Some(1);
                }
                Op::Stop => {
                    self.control.stop = Some(
                        cmd.reason.clone().unwrap_or_else(|| "the operator asked to stop".into()),
                    );
                }
                Op::StopNow => {
                    self.control.stop = Some(
                        cmd.reason
                            .clone()
                            .unwrap_or_else(|| "the operator asked to stop now".into()),
                    );
                    self.control.stop_now = true;
                }
                Op::Note => {
                    if let Some(text) = cmd.text.clone() {
                        self.control.notes.push((cmd.task.clone(), text));
                    }
                }
                Op::Steer | Op::Queue => self.take_word(&cmd)?,
                Op::Allow | Op::Deny => self.take_answer(&cmd)?,
                Op::Approve
                | Op::Reject
                | Op::ForceAccept
                | Op::Skip
                | Op::Fail
                | Op::RetryEval
                | Op::Rewind
                | Op::Review => {
                    if let Some(end) = self.decide(&cmd)? {
                        ended = Some(end);
                    }
                }
            }
        }
        Ok(ended)
    }
}
