//! Lanes: a lane is a worktree, its hands and git guard and the conversation of the task it
//! serves, writing to the run's log (through a clone of the writer that stamps its number on
//! every event when there are several) and to the run's one record of its task. With one lane
//! the worktree is the session's own; with several, each task has one of its own under
//! `lanes/`. A lane runs on a thread of its own, since tools and validators block.

use super::{Ended, HarnessError, Parts, Result, Run, Task, TaskEnd, TaskState, record};
use crate::hands::Hands;
use crate::hands::git_guard::GitGuard;
use crate::hands::workspace::Workspace;
use crate::session::control::{self, Op};
use crate::session::state::StopReason;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What ties a lane's run to the run that started it.
#[derive(Debug, Clone)]
pub(super) struct LaneLink {
    /// The lane's number, from 1: what its events are stamped with.
    pub number: u64,
    /// The session's own worktree, on the branch accepted work lands on.
    pub(super) session: Workspace,
    /// Held while a task lands: the session branch moves under it, one landing at a time.
    pub(super) landing: Arc<Mutex<()>>,
    /// Raised when the operator fails this lane's task.
    pub(super) fail: Arc<AtomicBool>,
    /// Raised when a decision about this lane's task takes it now (`review`, `rewind` with
    /// `--now`): its attempt stops and the task waits for that decision.
    pub(super) decide_now: Arc<AtomicBool>,
    /// Set when the whole run stops at once (`stop --now`, Ctrl-C, a lane that cannot go on):
    /// how every lane's task ends.
    pub(super) halt: Arc<Mutex<Option<Ended>>>,
    /// The lane's hands' cancel flag: raised, the call or tool in flight stops.
    pub(super) cancel: Arc<crate::hands::cancel::Cancel>,
    /// The lane's worktree, which no other task may take while this one runs there.
    pub(super) worktree: std::path::PathBuf,
    /// The lane works in the session's own worktree, on the session branch: what it accepts
    /// is committed where it is, with nothing to merge.
    pub(super) in_place: bool,
    /// The operator's words for the lane's task, from the scheduler to its worker.
    pub(super) inbox: super::steer::Inbox,
}

/// The lanes of a run: those at work, and those whose task waits for a decision.
#[derive(Debug, Default)]
pub(super) struct LaneBook {
    /// Tasks at work, by task.
    pub(super) running: BTreeMap<String, LaneLink>,
    /// Lanes whose task is held for the operator or failed: kept whole, so a decision acts on
    /// the task's own worktree and a reject goes on in it.
    pub(super) parked: BTreeMap<String, Box<Run>>,
    /// Parked lanes a decision made workable again, to start as soon as a lane is free.
    pub(super) revived: Vec<String>,
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

/// Whether a decision was about a lane's task, and how the run ends if it does.
pub(super) enum LaneDecision {
    /// The task is in no lane: the run decides it itself, on the session's worktree.
    NotInLane,
    Decided(Option<Ended>),
}

/// A lane job's result: the lane, its task and how the task ended.
pub(super) type LaneDone = (Box<Run>, Task, Result<TaskEnd>);

impl Run {
    /// A run of its own for `task` in lane `number`, in the task's worktree (cut from the
    /// session branch as it stands now, or the one it already has).
    pub(super) fn open_lane(&mut self, task: &Task, number: u64) -> Result<Run> {
        let in_place = !self.apart();
        let workspace = if in_place {
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
        let stamp = if in_place { 0 } else { number };
        let config = crate::hands::HandsConfig {
            lane: (stamp > 0).then_some(stamp),
            ..self.hands.config.clone()
        };
        let (hands, guard) = if let Some((mut hands, guard)) =
            self.book.idle.remove(&workspace.worktree)
        {
            hands.config = config;
            hands.cancel = Arc::default();
            // A guard that cannot take the new branch is set up anew when the task starts.
            let guard = guard.and_then(|mut g| g.retarget(&workspace.branch).ok().map(|()| g));
            (hands, guard)
        } else {
            let hands = Hands::new(&workspace.worktree, Some(&self.dir), config).map_err(|e| {
                HarnessError::NotKept(format!("the lane for {} cannot start: {e}", task.id))
            })?;
            (hands, None)
        };
        let link = LaneLink {
            number,
            session: self.workspace.clone(),
            landing: Arc::clone(&self.book.landing),
            fail: Arc::default(),
            decide_now: Arc::default(),
            halt: Arc::clone(&self.book.halt),
            cancel: Arc::clone(&hands.cancel),
            worktree: workspace.worktree.clone(),
            in_place,
            inbox: super::steer::Inbox::default(),
        };
        let mut lane = Run::new(Parts {
            id: self.id.clone(),
            dir: self.dir.clone(),
            writer: self.writer.for_lane(stamp),
            plan: self.plan.clone(),
            workspace,
            hands,
            brain: self.brain.clone(),
            opts: self.opts.clone(),
        });
        lane.records = Arc::clone(&self.records);
        lane.interrupted = Arc::clone(&self.interrupted);
        lane.control.offset = self.control.offset;
        if let Some(note) = self.take_notes(&task.id) {
            lane.control.notes.push((Some(task.id.clone()), note));
        }
        lane.lane = Some(link);
        // In place, the run's own guard goes with the work: one guard per worktree, so none
        // puts back what another recorded.
        lane.guard = if in_place { self.guard.take() } else { guard };
        Ok(lane)
    }

    /// A lane's work on its task: a re-evaluation the operator asked for, else the task's
    /// conversation, from its start or from where a decision left it.
    pub(super) async fn lane_job(mut self: Box<Self>, task: Task) -> LaneDone {
        let end = self.lane_work(&task).await;
        (self, task, end)
    }

    pub(super) async fn lane_work(&mut self, task: &Task) -> Result<TaskEnd> {
        if self.guard.is_none() {
            let mut guard =
                GitGuard::new(&self.workspace.worktree, &self.workspace.branch).map_err(
                    |source| HarnessError::Git { what: "cannot read the lane's git state", source },
                )?;
            guard.restore().map_err(|source| HarnessError::Git {
                what: "cannot put HEAD on the lane's branch",
                source,
            })?;
            self.guard = Some(guard);
        }
        if let Some(id) = self.control.retry_eval.take() {
            match self.retry_evaluation(&id).await? {
                Some(end) if end.reason.is_task_failure() => {
                    return Ok(TaskEnd::Failed(end.reason));
                }
                Some(end) => return Ok(TaskEnd::Stop(end)),
                None if self.settled(&task.id) => return Ok(TaskEnd::Landed),
                None => {}
            }
        }
        let end = self.run_task(task).await?;
        match end {
            TaskEnd::Landed if self.opts.learnings => {
                self.propose_learning(task).await?;
                Ok(end)
            }
            end => Ok(end),
        }
    }

    /// How a lane's task ends at once, if the run or the operator said so (`fail`, `stop
    /// --now`, Ctrl-C: the scheduler raises the lane's flags): checked after every call and
    /// tool.
    pub(super) fn act_now(&mut self, task: &str) -> Result<Option<TaskEnd>> {
        let Some(link) = self.lane.clone() else { return Ok(None) };
        if link.fail.swap(false, Ordering::SeqCst) {
            link.cancel.lower();
            if let Some(t) = self.plan.tasks.iter().find(|t| t.id == task).cloned() {
                self.set_aside(&t, "failed")?;
            }
            return Ok(Some(TaskEnd::Failed(StopReason::OperatorFail)));
        }
        if link.decide_now.swap(false, Ordering::SeqCst) {
            link.cancel.lower();
            let (_, attempt) = self.writer.position(task);
            let why = "the operator's decision takes it now: its attempt was stopped";
            return self.hold(task, why, attempt).map(Some);
        }
        let halt = link.halt.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok(halt.map(|end| {
            TaskEnd::Stop(Ended {
                reason: end.reason,
                detail: Some(format!(
                    "{}; {task} is unfinished and restarts on resume",
                    end.detail.unwrap_or_default()
                )),
            })
        }))
    }

    /// Gives a lane another number: a lane revived by a decision starts in whichever lane is
    /// free, and its events say so.
    pub(super) fn renumber(&mut self, number: u64) {
        if let Some(link) = self.lane.as_mut().filter(|l| !l.in_place) {
            link.number = number;
            self.writer = self.writer.for_lane(number);
        }
    }

    /// A decision about a task that is at work in a lane or parked there.
    pub(super) fn decide_in_lane(&mut self, cmd: &control::Command) -> Result<LaneDecision> {
        let target = cmd.task.clone().or_else(|| self.records.first_in(&TaskState::NeedsOperator));
        let Some(task) = target else { return Ok(LaneDecision::NotInLane) };
        if let Some(link) = self.book.running.get(&task) {
            if cmd.op == Op::Fail {
                link.fail.store(true, Ordering::SeqCst);
                link.cancel.raise();
            } else {
                if cmd.now && matches!(cmd.op, Op::Review | Op::Rewind) {
                    link.decide_now.store(true, Ordering::SeqCst);
                    link.cancel.raise();
                }
                self.control.deferred.push(cmd.clone());
            }
            return Ok(LaneDecision::Decided(None));
        }
        if !self.apart() && !self.book.running.is_empty() {
            // In place, the session's worktree is the work at hand: a decision about another
            // task (its work set aside, or taken back) waits until that work is done.
            self.control.deferred.push(cmd.clone());
            return Ok(LaneDecision::Decided(None));
        }
        let has_lane = self.workspace.lane_of(&task, &self.workspace.lanes_folder()).is_some();
        if !self.book.parked.contains_key(&task)
            && has_lane
            && let Some(t) = self.plan.tasks.iter().find(|t| t.id == task).cloned()
        {
            let lane = self.open_lane(&t, 0)?;
            self.book.parked.insert(task.clone(), Box::new(lane));
        }
        let Some(mut lane) = self.book.parked.remove(&task) else {
            return Ok(LaneDecision::NotInLane);
        };
        lane.control.offset = self.control.offset;
        let end = lane.decide(cmd)?;
        let Some(t) = self.plan.tasks.iter().find(|t| t.id == task).cloned() else {
            return Ok(LaneDecision::Decided(None));
        };
        if self.settled(&task) {
            self.after_lane(&t, lane)?;
        } else if cmd.op == Op::Fail {
            self.book.parked.insert(task, lane);
        } else {
            self.book.parked.insert(task.clone(), lane);
            if matches!(cmd.op, Op::Reject | Op::RetryEval | Op::Rewind | Op::Review) {
                self.book.revived.push(task);
            }
        }
        Ok(LaneDecision::Decided(
            end.filter(|e| e.reason != StopReason::NeedsOperator && !e.reason.is_task_failure()),
        ))
    }

    /// A lane whose task settled: the run records it, and the lane's worktree is freed for
    /// the next task once its work is on the session branch (a skipped task's work is on its
    /// set-aside ref).
    pub(super) fn after_lane(&mut self, task: &Task, lane: Box<Run>) -> Result<()> {
        let Run { workspace, hands, mut guard, lane: link, .. } = *lane;
        if link.as_ref().is_some_and(|l| l.in_place) {
            if let Some(g) = &mut guard {
                g.record().map_err(|source| HarnessError::Git {
                    what: "cannot record the worktree's git state",
                    source,
                })?;
            }
            self.guard = guard;
            self.book.idle.insert(workspace.worktree, (hands, None));
        } else if self.settled(&task.id) {
            workspace.release_lane()?;
            self.book.idle.insert(workspace.worktree, (hands, guard));
        }
        self.write_status()?;
        record::write_summary(&self.dir, self.writer.summary())?;
        self.checkpoint("running")?;
        Ok(())
    }
}
