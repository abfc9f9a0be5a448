//! The operator's words for a task while it works, two different acts: a *steer* goes into
//! the worker's conversation before its next model request — between tool calls, not at the
//! next attempt — and a *queue* waits for the task's next attempt (or its first turn). The
//! scheduler takes both from the control file and hands them to the task's lane through its
//! inbox; the lane's worker takes the steers at its next turn, its review the queued words
//! when a reject starts the next attempt. The evaluator is told what was asked during the
//! attempt it judges.

use super::Desk;
use super::{Lane, Op, OperatorQueue, OperatorSteer, Result, Run, control, scope};
use crate::harness::conversation::steer_message;
use std::sync::{Arc, Mutex, PoisonError};

/// The most of one message that is kept: words for a worker, not a file.
const WORDS_MAX_CHARS: usize = 4_000;

/// Words from the operator waiting for a lane's task.
#[derive(Debug, Clone)]
pub(super) struct Word {
    pub op: Op,
    pub text: String,
    pub source: String,
}

/// What the scheduler has for a lane's task and its worker has not taken yet: shared by the
/// two through the lane's link.
#[derive(Debug, Clone, Default)]
pub(super) struct Inbox(Arc<Mutex<Vec<Word>>>);

impl Inbox {
    fn push(&self, word: Word) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(word);
    }

    /// Whether words of kind `op` wait (an agent's turn is cancelled for a steer).
    pub(super) fn has(&self, op: Op) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|w| w.op == op)
    }

    /// Takes the words of kind `op`, in the order they came.
    pub(super) fn take(&self, op: Op) -> Vec<Word> {
        self.take_any(&[op])
    }

    /// Takes the words of any of the kinds `ops`, in the order they came.
    pub(super) fn take_any(&self, ops: &[Op]) -> Vec<Word> {
        let mut words = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (taken, kept) =
            std::mem::take(&mut *words).into_iter().partition(|w| ops.contains(&w.op));
        *words = kept;
        taken
    }
}

/// The operator's text as the model and the log get it: keys scrubbed, every character a
/// terminal would act on shown escaped (so it reaches the model as plain text), trimmed and
/// cut to [`WORDS_MAX_CHARS`].
pub(super) fn plain(text: &str) -> String {
    let scrubbed = crate::keys::scrub(text);
    let shown = crate::printable::text(&scrubbed);
    shown.trim().chars().take(WORDS_MAX_CHARS).collect()
}

impl Run {
    /// A `steer` or `queue` command: handed to the task's lane, kept for its first turn, or
    /// refused in the log with the task's state when there is nothing to give it to.
    pub(super) fn take_word(&mut self, cmd: &control::Command) -> Result<()> {
        let text = plain(cmd.text.as_deref().unwrap_or(""));
        let verb = cmd.op.as_str();
        // Without --task: the one task at work, when there is exactly one.
        let at_work: Vec<&String> = self.book.running.keys().collect();
        let named = cmd.task.clone().or_else(|| match at_work.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        });
        let Some(task) = named.filter(|t| self.shared.plan.tasks.iter().any(|p| &p.id == t)) else {
            let why = format!("{verb} names no task of the plan, and not exactly one is at work");
            return self.refuse(cmd.task.as_deref(), &why);
        };
        if text.is_empty() {
            return self.refuse(Some(&task), &format!("{verb} without words: nothing to send"));
        }
        let state = self.shared.records.state(&task);
        let source = Some(cmd.source.clone());
        if cmd.op == Op::Steer {
            if let Some(link) = self.book.running.get(&task) {
                link.inbox.push(Word { op: Op::Steer, text, source: cmd.source.clone() });
                return Ok(());
            }
            let reason = format!(
                "{task} is {}, not at work: nothing was sent; queue it for its {} instead",
                state.as_str(),
                if self.shared.records.get(&task).base.is_some() {
                    "next attempt"
                } else {
                    "first turn"
                }
            );
            return self.emit(&OperatorSteer {
                scope: scope(&task, 0, 0),
                text: Some(text),
                delivered: Some(false),
                reason: Some(reason),
                source,
                ..OperatorSteer::default()
            });
        }
        if state.is_settled() {
            let why = format!("{task} is {}: there is no attempt to queue for", state.as_str());
            return self.refuse(Some(&task), &why);
        }
        let begun = self.shared.records.get(&task).base.is_some();
        if let Some(link) = self.book.running.get(&task) {
            link.inbox.push(Word { op: Op::Queue, text: text.clone(), source: cmd.source.clone() });
        } else if let Some(parked) = self.book.parked.get_mut(&task) {
            parked.control.notes.push((Some(task.clone()), text.clone()));
        } else {
            self.control.notes.push((Some(task.clone()), text.clone()));
        }
        self.emit(&OperatorQueue {
            scope: scope(&task, 0, 0),
            text: Some(text),
            until: Some(if begun { "next attempt" } else { "first turn" }.into()),
            source,
            ..OperatorQueue::default()
        })
    }

    /// An `allow` or `deny`: handed to the lane of the task at work, whose agent's oldest
    /// open permission request it answers; refused in the log when there is none to give it.
    pub(super) fn take_answer(&mut self, cmd: &control::Command) -> Result<()> {
        let verb = cmd.op.as_str();
        if self.shared.opts.agent.is_none() {
            let why = format!(
                "{verb} answers an ACP agent's permission request; this run's worker is harrow's own"
            );
            return self.refuse(cmd.task.as_deref(), &why);
        }
        let at_work: Vec<&String> = self.book.running.keys().collect();
        let named = cmd.task.clone().or_else(|| match at_work.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        });
        if let Some(link) = named.as_ref().and_then(|t| self.book.running.get(t)) {
            link.inbox.push(Word { op: cmd.op, text: String::new(), source: cmd.source.clone() });
            return Ok(());
        }
        let why = format!("{verb} names no task at work (name it with --task when several are)");
        self.refuse(named.as_deref(), &why)
    }

    /// Steers a lane's task did not live to take: logged as not sent, with why; answers to a
    /// permission request that was no longer open, refused.
    pub(super) fn steers_left(&mut self, task: &str, lane: &Lane) -> Result<()> {
        for word in lane.link.inbox.take_any(&[Op::Allow, Op::Deny]) {
            let why = format!(
                "{} came after {task}'s agent had no permission request open: nothing was answered",
                word.op.as_str()
            );
            self.refuse(Some(task), &why)?;
        }
        for word in lane.link.inbox.take(Op::Steer) {
            let reason = format!(
                "{task}'s worker made no model request after it came (its attempt was over): not sent; queue it for the next attempt if it still stands"
            );
            self.emit(&OperatorSteer {
                scope: scope(task, 0, 0),
                text: Some(word.text),
                delivered: Some(false),
                reason: Some(reason),
                source: Some(word.source),
                ..OperatorSteer::default()
            })?;
        }
        Ok(())
    }
}

impl Lane {
    /// The words queued for `task`'s next attempt, taken now that it starts: what its lane's
    /// inbox holds and the notes kept for it.
    pub(super) fn take_queued(&mut self, task: &str) -> Vec<String> {
        let mut words: Vec<String> =
            self.link.inbox.take(Op::Queue).into_iter().map(|w| w.text).collect();
        words.extend(super::take_notes(&mut self.control.notes, task));
        words
    }

    /// Puts the steers waiting for this lane's task into its worker's conversation, before its
    /// next model request, each logged; remembered for the evaluator of `attempt`.
    pub(super) fn deliver_steers(
        &mut self,
        task: &str,
        iter: u64,
        attempt: u64,
        messages: &mut Vec<serde_json::Value>,
    ) -> Result<()> {
        for text in self.take_steers(task, iter, attempt)? {
            messages.push(serde_json::json!({"role": "user", "content": text}));
        }
        Ok(())
    }

    /// Takes the steers waiting for this lane's task, as the words the worker is given (a
    /// message of harrow's own worker, a prompt of an ACP agent's), each logged as delivered;
    /// remembered for the evaluator of `attempt`.
    pub(super) fn take_steers(
        &mut self,
        task: &str,
        iter: u64,
        attempt: u64,
    ) -> Result<Vec<String>> {
        let mut texts = Vec::new();
        for word in self.link.inbox.take(Op::Steer) {
            texts.push(steer_message(&word.text));
            self.control.steered.push((task.to_owned(), attempt, word.text.clone()));
            self.emit(&OperatorSteer {
                scope: scope(task, iter, attempt),
                text: Some(word.text),
                delivered: Some(true),
                source: Some(word.source),
                ..OperatorSteer::default()
            })?;
        }
        Ok(texts)
    }

    /// What the operator told the worker during `attempt` of `task`, for its evaluator.
    pub(super) fn asked_during(&self, task: &str, attempt: u64) -> Vec<String> {
        (self.control.steered.iter())
            .filter(|(t, a, _)| t == task && *a == attempt)
            .map(|(_, _, text)| text.clone())
            .collect()
    }
}
