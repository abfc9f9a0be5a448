//! The scheduler's side of lanes: opening a lane for a task (in place, or in a worktree of
//! its own), the book of lanes at work, parked and idle, decisions routed to the task's lane,
//! and a lane taken back when its task settles. The lane itself is [`super::lane::Lane`].

use super::Desk;
use super::lane::{Lane, LaneControl, LaneLink, Place};
use super::{Ended, HarnessError, Result, Run, Task, TaskState, record};
use crate::hands::Hands;
use crate::hands::git_guard::GitGuard;
use crate::hands::workspace::Workspace;
use crate::session::control::{self, Op};
use crate::session::state::StopReason;
use crate::session::vocabulary::CheckpointStatus;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The lanes of a run: those at work, and those whose task waits for a decision.
#[derive(Debug, Default)]
pub(super) struct LaneBook {
    /// Tasks at work, by task.
    pub(super) running: BTreeMap<String, LaneLink>,
    /// Lanes whose task is held for the operator or failed: kept whole, so a decision acts on
    /// the task's own worktree and a reject goes on in it.
    pub(super) parked: BTreeMap<String, Box<Lane>>,
    /// Parked lanes a decision made workable again, to start as soon as a lane is free.
    pub(super) revived: Vec<String>,
    /// Tasks that failed (at work, or by a decision), with how the run ends on each while it
    /// stays failed (a decision or a rewind can set one going again).
    pub(super) failures: Vec<(String, Ended)>,
    /// Accepted work a resume lands before anything starts.
    pub to_land: BTreeMap<String, super::lane_recover::KeptAccept>,
    /// The hands and git guard of each free lane worktree, by folder, for the next task that
    /// runs there: setting them up reads the worktree's paths, its repository's refs, config
    /// and hooks, the same for every task.
    pub(super) idle: BTreeMap<std::path::PathBuf, (Hands, Option<GitGuard>)>,
    /// Shared by every lane's link.
    pub(super) halt: Arc<Mutex<Option<Ended>>>,
    pub(super) landing: Arc<Mutex<()>>,
}

impl Run {
    /// A lane for `task`, numbered `number`: in the session's own worktree when the run works
    /// in place, else in the task's worktree (cut from the session branch as it stands now,
    /// or the one it already has). It takes the notes kept for the task.
    pub(super) fn open_lane(&mut self, task: &Task, number: u64) -> Result<Lane> {
        let place = if self.apart() { Place::Apart } else { Place::InPlace };
        let workspace = if place == Place::InPlace {
            self.workspace.clone()
        } else {
            // The worktrees other tasks hold, whatever their files say: a worker's command can
            // write the worktree's note of its task while it runs (the guard puts it back).
            let busy: Vec<&std::path::Path> =
                (self.book.running.values().map(|l| l.worktree.as_path()))
                    .chain(self.book.parked.values().map(|l| l.workspace.worktree.as_path()))
                    .collect();
            self.workspace.lane_for(&task.id, &self.workspace.lanes_folder(), &busy)?
        };
        let mut lane = self.lane_in(workspace, number, place).map_err(|e| {
            HarnessError::NotKept(format!("the lane for {} cannot start: {e}", task.id))
        })?;
        if let Some(note) = super::take_notes(&mut self.control.notes, &task.id) {
            lane.control.notes.push((Some(task.id.clone()), note));
        }
        Ok(lane)
    }

    /// A lane in `workspace`, with the hands and guard kept for that worktree when it was
    /// worked before. In place, the run's own guard goes with it: one guard per worktree, so
    /// none puts back what another recorded.
    fn lane_in(
        &mut self,
        workspace: Workspace,
        number: u64,
        place: Place,
    ) -> Result<Lane, crate::hands::HandsError> {
        let stamp = match place {
            Place::InPlace => 0,
            Place::Apart => number,
        };
        let config = crate::hands::HandsConfig {
            lane: (stamp > 0).then_some(stamp),
            ..self.hands.config.clone()
        };
        let (hands, guard) = match self.book.idle.remove(&workspace.worktree) {
            Some((mut hands, guard)) => {
                hands.config = config;
                hands.cancel = Arc::default();
                // A guard that cannot take the new branch is set up anew when the task starts.
                let guard = guard.and_then(|mut g| g.retarget(&workspace.branch).ok().map(|()| g));
                (hands, guard)
            }
            None => (Hands::new(&workspace.worktree, Some(&self.shared.dir), config)?, None),
        };
        let link = LaneLink {
            number,
            session: self.workspace.clone(),
            landing: Arc::clone(&self.book.landing),
            fail: Arc::default(),
            decide_now: Arc::default(),
            decision_waiting: Arc::default(),
            halt: Arc::clone(&self.book.halt),
            cancel: Arc::clone(&hands.cancel),
            worktree: workspace.worktree.clone(),
            place,
            inbox: super::steer::Inbox::default(),
        };
        Ok(Lane {
            shared: Arc::clone(&self.shared),
            writer: self.writer.for_lane(stamp),
            workspace,
            hands,
            brain: self.brain.clone(),
            guard: match place {
                Place::InPlace => self.guard.take(),
                Place::Apart => guard,
            },
            guard_blind: None,
            link,
            control: LaneControl { offset: self.control.offset, ..LaneControl::default() },
            candidate: None,
        })
    }

    /// Runs `f` in a lane on the session's own worktree, outside the scheduler: what a resume
    /// repairs before the run goes on.
    pub(super) fn at_home<T>(&mut self, f: impl FnOnce(&mut Lane) -> Result<T>) -> Result<T> {
        let mut lane = self.lane_in(self.workspace.clone(), 0, Place::InPlace).map_err(|e| {
            HarnessError::NotKept(format!("the session's worktree cannot be worked in: {e}"))
        })?;
        let out = f(&mut lane);
        self.take_back(lane)?;
        out
    }

    /// A decision on a task: the one named, else the one waiting for the operator. It is
    /// taken in the task's lane — the one it is parked in, else one opened for it — never on a
    /// task at work: `fail` stops its attempt, `review` or `rewind` with `--now` stop it for
    /// the decision, and anything else waits for the next boundary.
    pub(super) fn decide(&mut self, cmd: &control::Command) -> Result<Option<Ended>> {
        let target =
            cmd.task.clone().or_else(|| self.shared.records.first_in(&TaskState::NeedsOperator));
        let Some(task) =
            target.and_then(|id| self.shared.plan.tasks.iter().find(|t| t.id == id).cloned())
        else {
            let why = format!(
                "{} names no task of the plan and none is waiting for a decision",
                cmd.op.as_str()
            );
            self.refuse(None, &why)?;
            return Ok(None);
        };
        if let Some(link) = self.book.running.get(&task.id) {
            if cmd.op == Op::Fail {
                link.fail.store(true, Ordering::SeqCst);
                link.cancel.raise();
            } else {
                if matches!(cmd.op, Op::Review | Op::Rewind) {
                    link.decision_waiting.store(true, Ordering::SeqCst);
                    if cmd.now {
                        link.decide_now.store(true, Ordering::SeqCst);
                        link.cancel.raise();
                    }
                }
                self.supersede(&task.id, cmd)?;
                self.control.deferred.push(cmd.clone());
            }
            return Ok(None);
        }
        if !self.apart() && !self.book.running.is_empty() {
            // In place, the session's worktree is the work at hand: a decision about another
            // task (its work set aside, or taken back) waits until that work is done.
            self.control.deferred.push(cmd.clone());
            return Ok(None);
        }
        if let Some(why) = self.not_decidable(&task, cmd) {
            self.refuse(Some(&task.id), &why)?;
            return Ok(None);
        }
        let mut lane = match self.book.parked.remove(&task.id) {
            Some(lane) => lane,
            None => Box::new(self.open_lane(&task, 0)?),
        };
        lane.control.offset = self.control.offset;
        // The decision that waited for the attempt is taken now: a later accept lands again.
        lane.link.decision_waiting.store(false, Ordering::SeqCst);
        let end = lane.decide(&task, cmd)?;
        if let Some(failed) = end.clone().filter(|e| e.reason.is_task_failure()) {
            self.book.failures.push((task.id.clone(), failed));
        }
        if self.shared.settled(&task.id) {
            self.after_lane(&task, lane)?;
        } else {
            self.book.parked.insert(task.id.clone(), lane);
            if matches!(cmd.op, Op::Reject | Op::RetryEval | Op::Rewind | Op::Review) {
                self.book.revived.push(task.id.clone());
            }
        }
        Ok(end.filter(|e| e.reason != StopReason::NeedsOperator && !e.reason.is_task_failure()))
    }

    /// A review or rewind waiting for `task`'s attempt to end is replaced by one sent after
    /// it: one decision on the attempt, the latest, never both one after the other. The
    /// replaced one is refused in the log, saying by what.
    fn supersede(&mut self, task: &str, cmd: &control::Command) -> Result<()> {
        let deciding = |op: Op| matches!(op, Op::Review | Op::Rewind);
        if !deciding(cmd.op) {
            return Ok(());
        }
        let (replaced, kept): (Vec<control::Command>, Vec<control::Command>) =
            std::mem::take(&mut self.control.deferred)
                .into_iter()
                .partition(|c| c.task.as_deref() == Some(task) && deciding(c.op));
        self.control.deferred = kept;
        for old in replaced {
            let why = format!(
                "{} on {task}, sent while it worked, is replaced by the {} sent after it",
                old.op.as_str(),
                cmd.op.as_str()
            );
            self.refuse(Some(task), &why)?;
        }
        Ok(())
    }

    /// Why a decision cannot apply to `task` as it stands, whatever its worktree holds: a
    /// settled task takes none, and a rewind never takes landed work back.
    fn not_decidable(&self, task: &Task, cmd: &control::Command) -> Option<String> {
        let state = self.shared.records.state(&task.id);
        if cmd.op == Op::Rewind && state.is_accepted() {
            return Some(format!(
                "rewind: {} is {state}: its work is on the session branch, and a rewind does not take landed work back",
                task.id
            ));
        }
        state.is_settled().then(|| {
            format!("{} cannot be applied to {} while it is {state}", cmd.op.as_str(), task.id)
        })
    }

    /// A lane whose task settled: the run records it, and the lane's worktree is freed for
    /// the next task once its work is on the session branch (a skipped task's work is on its
    /// set-aside ref).
    pub(super) fn after_lane(&mut self, task: &Task, lane: Box<Lane>) -> Result<()> {
        if lane.link.place == Place::InPlace || self.shared.settled(&task.id) {
            self.take_back(*lane)?;
        }
        self.write_status()?;
        record::write_summary(&self.shared.dir, self.writer.summary())?;
        self.checkpoint(CheckpointStatus::Running)?;
        Ok(())
    }

    /// Frees a lane: in place, its guard comes back to the run; a worktree of its own is
    /// released. Its hands and guard are kept for the next task there.
    fn take_back(&mut self, mut lane: Lane) -> Result<()> {
        if lane.link.place == Place::InPlace {
            lane.record_guard()?;
        }
        let Lane { workspace, hands, guard, link, .. } = lane;
        if link.place == Place::InPlace {
            // A lane opened in place while another held the guard had none to give back.
            if guard.is_some() {
                self.guard = guard;
            }
            self.book.idle.insert(workspace.worktree, (hands, None));
        } else {
            workspace.release_lane()?;
            self.book.idle.insert(workspace.worktree, (hands, guard));
        }
        Ok(())
    }
}
