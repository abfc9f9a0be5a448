//! The operator's rewind, applied: a task not at work is set back to an attempt as it was
//! judged, or to the worktree a turn left. The work it holds is kept first (nothing is lost),
//! the files are made exactly the kept state's, the attempts after it are set aside (kept on
//! their refs, no longer counted against the cap), and the task's next attempt goes on from
//! that point of its conversation with the operator's reason — and lands only once judged.

use super::Desk;
use super::{GateEvent, Lane, Result, Task, control, scope};
use crate::harness::rewind::{self, Kept, Target};
use crate::harness::task_record::Rewind;
use crate::session::event::TaskRewound;

impl Lane {
    /// Applies a `rewind` on `task`, which is not at work: refused in the log, with why and
    /// what there is, when the state cannot be found or put back.
    pub(super) fn rewind(&mut self, task: &Task, cmd: &control::Command) -> Result<()> {
        // What the worker reads: keys scrubbed, escapes shown as text.
        let reason = super::steer::plain(cmd.reason.as_deref().unwrap_or(""));
        let found =
            rewind::find(&self.shared.dir, &task.id, &self.shared.id, cmd.to_attempt, cmd.to_turn)?;
        let target = match found {
            Ok(target) => target,
            Err(why) => return self.refuse(Some(&task.id), &format!("rewind: {why}")),
        };
        let kept = match &target.state {
            Kept::Commit(sha) | Kept::Tree(sha) => sha.clone(),
        };
        let Some(tree) = self.workspace.tree_of(&kept)? else {
            let refs = self.workspace.kept_refs(&task.id)?;
            let there = if refs.is_empty() {
                "this repository keeps no attempt of it".to_owned()
            } else {
                format!("the refs there are {}", refs.join(", "))
            };
            let why = format!(
                "rewind: {} of {} ({kept}) is not in the repository any more; {there}",
                target.described(),
                task.id
            );
            return self.refuse(Some(&task.id), &why);
        };
        let set_aside = self.keep_before_rewind(task)?;
        self.workspace.restore_tree(&tree)?;
        let granted = self.grant_for(&task.id, &target);
        let note = rewind::note(&target.described(), &reason);
        self.shared.records.update(&task.id, |r| {
            r.granted += granted;
            r.rewound.extend(target.rewound.iter().copied());
            r.rewind = Some(Rewind {
                tree: tree.clone(),
                continues_at: target.continues_at,
                note,
                fresh: true,
            });
        });
        let why = format!("rewound by the operator to {}: {reason}", target.described());
        self.gate(&task.id, GateEvent::Rewound, &why, target.attempt)?;
        self.emit(&TaskRewound {
            scope: scope(&task.id, target.turn.unwrap_or(0), target.attempt),
            to_attempt: Some(target.attempt),
            to_turn: target.turn,
            tree: Some(tree),
            set_aside,
            rewound: Some(target.rewound.clone()),
            granted: Some(granted),
            reason: Some(reason),
            source: Some(cmd.source.clone()),
            continues_at: Some(target.continues_at),
            ..TaskRewound::default()
        })?;
        self.write_status()
    }

    /// Keeps the task's work as it is before a rewind replaces it, on
    /// `refs/harrow/<session>/rewound/<task>`: the commit, when there was anything to keep.
    fn keep_before_rewind(&mut self, task: &Task) -> Result<Option<String>> {
        let base = self.task_base(&task.id)?;
        if self.task_diff(&base).is_ok_and(|d| d.is_empty()) {
            return Ok(None);
        }
        let message = format!("{}: its work as it was when the operator rewound it", task.id);
        match self.keep_work(&format!("rewound/{}", task.id), &base, &message)? {
            Ok(sha) => Ok(Some(sha)),
            Err(why) => Err(super::HarnessError::NotKept(why)),
        }
    }

    /// `task`'s ledger without the attempts a rewind set aside: the verdicts on work that is
    /// still the task's, which its worker and evaluator are shown.
    pub(super) fn ledger_standing(&self, task: &str) -> Vec<super::LedgerEntry> {
        // A best-of task's attempt is judged on its own, never beside the others' verdicts.
        if self.candidate.is_some() {
            return Vec::new();
        }
        let rewound = self.shared.records.get(task).rewound;
        let mut ledger = super::record::read_ledger(&self.shared.dir, task);
        ledger.retain(|e| !rewound.contains(&e.attempt));
        ledger
    }

    /// The attempts a rewind gives back: those it sets aside, and one more when even then the
    /// task would be at its cap (the operator asks for another attempt by rewinding).
    fn grant_for(&self, task: &str, target: &Target) -> u64 {
        let judged = super::record::read_ledger(&self.shared.dir, task).len() as u64;
        let given_back = target.rewound.len() as u64;
        let cap = self.shared.cap_for(task) + given_back;
        given_back + (judged + 1).saturating_sub(cap)
    }
}

/// What a task's next attempt starts from after a rewind.
pub(super) enum Taken {
    /// The conversation as it stood at the rewind, the operator's reason last.
    Conversation(Vec<serde_json::Value>),
    /// The log does not hold the conversation: a fresh one, told of the rewind.
    Note(String),
    /// No rewind waits.
    Nothing,
}

impl Lane {
    /// Takes up a rewind that waits for `task`'s next attempt: its conversation is read back
    /// from the log to where the rewind went, and goes on with the operator's reason (and
    /// anything queued for the attempt) as a `context_reset` that says where it goes on from.
    pub(super) fn take_rewind(&mut self, task: &Task, attempt: u64, base: &str) -> Result<Taken> {
        let Some(rewind) = self.shared.records.get(&task.id).rewind.filter(|r| r.fresh) else {
            return Ok(Taken::Nothing);
        };
        self.shared.records.update(&task.id, |r| {
            if let Some(r) = &mut r.rewind {
                r.fresh = false;
            }
        });
        let queued = self.take_queued(&task.id);
        let note = super::review::with_queued(rewind.note, &queued);
        // An ACP agent's conversation is its own and cannot be rewound: its new session starts
        // from the brief, told of the rewind.
        if self.shared.opts.agent.is_some() {
            return Ok(Taken::Note(note));
        }
        let mut messages = crate::harness::conversation::rebuild(
            &self.shared.dir,
            &task.id,
            super::WORKER_PROMPT,
            rewind.continues_at,
        )?;
        if messages.is_empty() {
            return Ok(Taken::Note(note));
        }
        self.emit(&crate::session::event::ContextReset {
            scope: scope(&task.id, 0, attempt),
            base_commit: Some(base.to_owned()),
            continues_at: Some(rewind.continues_at),
            operator_note: Some(note.clone()),
            ..Default::default()
        })?;
        messages.push(serde_json::json!({"role": "user", "content": note}));
        Ok(Taken::Conversation(messages))
    }
}
