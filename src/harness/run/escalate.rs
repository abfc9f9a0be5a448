//! A task its evaluator keeps rejecting goes to a stronger worker model: after
//! `[models.worker] escalate_after_rejects` rejects of the task, its lane's worker talks to
//! `escalate_to` for the rest of the task — a lane is one task's, so the next task starts on the
//! first model again. Every switch is a `model_switch`.

use super::Desk;
use super::{Lane, Result, Role, scope};
use crate::session::event::ModelSwitch;

impl Lane {
    /// Moves the task's worker to the stronger model once its rejects reach the number set;
    /// nothing when none is configured, too few were rejected, or it is there already.
    pub(super) fn escalate_if_due(&mut self, task: &str, iter: u64, attempt: u64) -> Result<()> {
        let Some((to, after)) = self.brain.escalation().cloned() else { return Ok(()) };
        let rejects =
            self.ledger_standing(task).iter().filter(|e| !e.verdict.accepted()).count() as u64;
        let now = self.brain.endpoint(Role::Worker).cloned();
        let there = now.as_ref().is_some_and(|n| n.base_url == to.base_url && n.model == to.model);
        if rejects < after || there {
            return Ok(());
        }
        let Ok(switched) = self.brain.switched(Role::Worker, &to) else { return Ok(()) };
        self.brain = switched;
        let url = |u: &str| crate::printable::line(&crate::keys::scrub(u));
        self.emit(&ModelSwitch {
            scope: scope(task, iter, attempt),
            role: Some("worker".into()),
            from_model: now.as_ref().map(|n| n.model.clone()),
            from_base_url: now.as_ref().map(|n| url(&n.base_url)),
            to_model: Some(to.model.clone()),
            to_base_url: Some(url(&to.base_url)),
            why: Some(format!(
                "{task} was rejected {rejects} time(s): a stronger model takes it (escalate_after_rejects = {after})"
            )),
            kind: Some(crate::session::vocabulary::SwitchKind::Escalation.as_str().to_owned()),
            ..ModelSwitch::default()
        })
    }
}
