//! The scheduler: every plan is worked in lanes — one, or up to N ready tasks of a graph plan
//! at once — from the run's one record of its tasks. It starts a lane for each task whose
//! dependencies landed, reads the operator's commands and the caps between them, and says how
//! the run ends once nothing more can start.

use super::Desk;
use super::lane::Lane;
use super::lane::LaneDone;
use super::{Ended, HarnessError, Result, Run, Task, TaskEnd, TaskState, record};
use crate::session::event::OperatorWait;
use crate::session::state::StopReason;
use crate::session::vocabulary::CheckpointStatus;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The lanes' dispatch while the plan is worked: the lanes at work, which numbers are
/// free, and what stops the run once the lanes at work come back.
struct Dispatch {
    handle: tokio::runtime::Handle,
    jobs: tokio::task::JoinSet<LaneDone>,
    free: BTreeSet<u64>,
    /// The lane number each working task has.
    numbers: BTreeMap<String, u64>,
    stop: Option<Ended>,
    error: Option<HarnessError>,
    /// Why each held task waits, as its lane said: how the run ends when it still does.
    holds: BTreeMap<String, Ended>,
    /// Tasks a stop cut short: they restart on resume, and the stop says so.
    cut: Vec<String>,
    /// Whether the current wait (paused, or held for a decision) was said already.
    waiting_said: bool,
}

impl Dispatch {
    /// Nothing has stopped the run: new tasks may start.
    fn going(&self) -> bool {
        self.stop.is_none() && self.error.is_none()
    }

    /// Stops the run at `end`: the lanes at work are told to stop, and nothing new starts.
    fn halt(&mut self, run: &mut Run, end: Ended) {
        run.halt_lanes(&end);
        self.stop = Some(end);
    }

    /// Stops the run on an error, which it ends with once the lanes at work come back.
    fn fail(&mut self, run: &mut Run, e: HarnessError) {
        let end = Ended { reason: StopReason::Error, detail: Some(e.to_string()) };
        run.halt_lanes(&end);
        self.error = Some(e);
    }
}

/// What the dispatch does when no lane is working.
enum Idle {
    Ended(Result<Ended>),
    Wait,
    Go,
}

impl Run {
    /// Whether `task` may start in a lane now: unsettled, not at work or parked, and every
    /// task it depends on landed.
    fn ready(&self, task: &Task) -> bool {
        let id = &task.id;
        !self.shared.settled(id)
            && !self.book.running.contains_key(id)
            && !self.book.parked.contains_key(id)
            && self.shared.records.state(id) != TaskState::NeedsOperator
            && (self.shared.records.state(id) != TaskState::Failed
                || self
                    .shared
                    .failed_waiting(id, record::read_ledger(&self.shared.dir, id).len() as u64)
                    .is_none())
            && self.shared.plan.dependencies(id).iter().all(|d| self.landed(d))
    }

    /// Whether `task`'s work is on the session branch: accepted, and its lane back (a lane's
    /// task is accepted before its work lands). In a plan without a graph, settled is enough:
    /// a skipped task lets the next one start.
    fn landed(&self, task: &str) -> bool {
        let state = self.shared.records.state(task);
        let done =
            if self.shared.plan.is_graph() { state.is_accepted() } else { state.is_settled() };
        done && !self.book.running.contains_key(task)
    }

    /// Whether tasks are worked apart, each in a worktree of its own: several lanes on a
    /// graph plan. Otherwise the one lane works in the session's own worktree.
    pub(super) fn apart(&self) -> bool {
        self.shared.opts.lanes > 1 && self.shared.plan.is_graph()
    }

    /// Stops every lane at once with `end`: their calls and tools are cancelled, and their
    /// tasks are left unfinished for a resume.
    fn halt_lanes(&mut self, end: &Ended) {
        *self.book.halt.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(end.clone());
        for link in self.book.running.values() {
            link.cancel.raise();
        }
    }

    /// Works the plan in up to `lanes` lanes until every task is settled, what is left waits
    /// on something that will not come, or something stops the run.
    pub(super) async fn work_lanes(&mut self) -> Result<Ended> {
        let ended = self.work_in_lanes().await;
        // The session's own worktree shows the branch as the lanes left it, and the lanes'
        // worktrees no task holds go; a failure at either loses nothing (the branch holds
        // the work). In place, the worktree is the work itself and stays as it is.
        if self.apart() {
            let _ = self.workspace.refresh();
            let _ = self.workspace.remove_free_lanes(&self.workspace.lanes_folder());
        }
        ended
    }

    async fn work_in_lanes(&mut self) -> Result<Ended> {
        self.workspace.forget_own_refs()?;
        let mut d = Dispatch {
            handle: tokio::runtime::Handle::current(),
            jobs: tokio::task::JoinSet::new(),
            free: (1..=self.shared.opts.lanes.max(1)).collect(),
            numbers: BTreeMap::new(),
            stop: None,
            error: None,
            holds: BTreeMap::new(),
            cut: Vec::new(),
            waiting_said: false,
        };
        *self.book.halt.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.land_what_was_kept()?;
        loop {
            if d.going() {
                match self.lane_boundary() {
                    Ok(Some(end)) => d.halt(self, end),
                    Ok(None) => {}
                    Err(e) => d.fail(self, e),
                }
            }
            if d.going() && !self.control.paused {
                self.start_lanes(&mut d)?;
            }
            if d.jobs.is_empty() {
                match self.idle(&mut d).await? {
                    Idle::Ended(end) => return end,
                    Idle::Wait => continue,
                    Idle::Go => {}
                }
            }
            let joined = tokio::select! {
                j = d.jobs.join_next(), if !d.jobs.is_empty() => j,
                () = tokio::time::sleep(Duration::from_millis(200)) => None,
            };
            if let Some(joined) = joined {
                let done = joined.map_err(|e| {
                    HarnessError::NotKept(format!("a lane stopped unexpectedly: {e}"))
                })?;
                self.lane_came_back(&mut d, done)?;
            }
        }
    }

    /// Work accepted before a resume that has not landed yet lands first, each from its kept
    /// attempt in a lane of its own.
    fn land_what_was_kept(&mut self) -> Result<()> {
        for (id, kept) in std::mem::take(&mut self.book.to_land) {
            let Some(task) = self.shared.plan.tasks.iter().find(|t| t.id == id).cloned() else {
                continue;
            };
            let mut lane = Box::new(self.open_lane(&task, 1)?);
            let held = lane.land_kept(&task, &kept)?;
            match held {
                None => self.after_lane(&task, lane)?,
                Some(_) => {
                    self.book.parked.insert(task.id.clone(), lane);
                }
            }
        }
        Ok(())
    }

    /// Starts what can start, one free lane a task, until the lanes are full or a pause.
    fn start_lanes(&mut self, d: &mut Dispatch) -> Result<()> {
        for (task, lane) in self.startable() {
            let Some(&number) = d.free.iter().next() else {
                if let Some(lane) = lane {
                    self.book.parked.insert(task.id.clone(), lane);
                    self.book.revived.push(task.id.clone());
                }
                continue;
            };
            let mut lane = match lane {
                Some(lane) => lane,
                // A task marked blocked before (a resume after a decision on what it waits
                // on) is unblocked as it starts.
                None => match self.waits_on(&task.id).and_then(|_| self.open_lane(&task, number)) {
                    Ok(lane) => Box::new(lane),
                    Err(e) => {
                        d.fail(self, e);
                        return Ok(());
                    }
                },
            };
            lane.renumber(number);
            d.free.remove(&number);
            self.book.running.insert(task.id.clone(), lane.link.clone());
            d.numbers.insert(task.id.clone(), number);
            let h = d.handle.clone();
            let task_id = task.id.clone();
            d.jobs.spawn_blocking(move || h.block_on(lane.lane_job(task)));
            self.count_step(&task_id);
            if std::mem::take(&mut d.waiting_said) {
                self.checkpoint(CheckpointStatus::Running)?;
            }
            if self.control.paused {
                break;
            }
        }
        Ok(())
    }

    /// No lane is working: the run ends, waits (paused, or held for a decision), or goes on.
    async fn idle(&mut self, d: &mut Dispatch) -> Result<Idle> {
        if let Some(e) = d.error.take() {
            return Ok(Idle::Ended(Err(e)));
        }
        if let Some(mut end) = d.stop.take() {
            let cut = std::mem::take(&mut d.cut);
            if let Some(detail) = end.detail.as_mut().filter(|_| !cut.is_empty()) {
                let (who, verb) = match cut.as_slice() {
                    [one] => (one.clone(), "is unfinished and restarts"),
                    many => (many.join(", "), "are unfinished and restart"),
                };
                *detail = format!("{detail}; {who} {verb} on resume");
            }
            return Ok(Idle::Ended(Ok(end)));
        }
        let open =
            self.shared.plan.tasks.iter().any(|t| self.ready(t)) || !self.book.revived.is_empty();
        if self.control.paused && open {
            if !d.waiting_said {
                self.checkpoint(CheckpointStatus::Paused)?;
                d.waiting_said = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(Idle::Wait);
        }
        if open {
            return Ok(Idle::Go);
        }
        let held = self.shared.held_task();
        if let Some(held) = held.as_ref().filter(|_| self.shared.opts.wait_for_operator) {
            if !d.waiting_said {
                self.emit(&OperatorWait {
                    scope: super::scope(held, 0, 0),
                    reason: Some(format!("task {held} waits for the operator")),
                    ..OperatorWait::default()
                })?;
                self.checkpoint(CheckpointStatus::NeedsOperator)?;
                d.waiting_said = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(Idle::Wait);
        }
        let (failures, holds) =
            (std::mem::take(&mut self.book.failures), std::mem::take(&mut d.holds));
        Ok(Idle::Ended(self.lanes_ended(failures, holds)))
    }

    /// A lane's task came back: its lane is free again, and its end is acted on.
    fn lane_came_back(&mut self, d: &mut Dispatch, done: LaneDone) -> Result<()> {
        let (mut lane, task, end) = done;
        self.book.running.remove(&task.id);
        self.step_done(&task.id)?;
        self.steers_left(&task.id, &lane)?;
        if let Some(n) = d.numbers.remove(&task.id) {
            d.free.insert(n);
        }
        match end {
            Err(e) => {
                if d.error.is_none() {
                    d.fail(self, e);
                }
                self.book.parked.insert(task.id.clone(), lane);
            }
            Ok(TaskEnd::Landed) => self.after_lane(&task, lane)?,
            Ok(TaskEnd::Accepted(a)) => {
                let held = lane.land_decided(&task, a)?;
                match held {
                    None => self.after_lane(&task, lane)?,
                    Some(end) => {
                        d.holds.insert(task.id.clone(), end);
                        self.book.parked.insert(task.id.clone(), lane);
                    }
                }
            }
            Ok(TaskEnd::Failed(reason)) => {
                let ended = lane.fail_task(&task, reason)?;
                self.write_status()?;
                self.book.failures.push((task.id.clone(), ended));
                self.book.parked.insert(task.id.clone(), lane);
            }
            Ok(TaskEnd::Stop(end)) if end.reason == StopReason::NeedsOperator => {
                self.write_status()?;
                d.holds.insert(task.id.clone(), end);
                self.book.parked.insert(task.id.clone(), lane);
            }
            Ok(TaskEnd::Judged) => {
                let e = HarnessError::NotKept(format!(
                    "{}'s lane came back with an attempt judged but not weighed",
                    task.id
                ));
                d.fail(self, e);
                self.book.parked.insert(task.id.clone(), lane);
            }
            Ok(TaskEnd::Stop(end)) => {
                if d.stop.is_none() {
                    d.halt(self, end);
                } else {
                    d.cut.push(task.id.clone());
                }
                self.book.parked.insert(task.id.clone(), lane);
            }
        }
        Ok(())
    }

    /// The tasks to start now, in plan order: parked lanes a decision revived first (with
    /// their lane), then ready tasks (a new lane each).
    fn startable(&mut self) -> Vec<(Task, Option<Box<Lane>>)> {
        let mut out = Vec::new();
        for id in std::mem::take(&mut self.book.revived) {
            if let (Some(task), Some(lane)) = (
                self.shared.plan.tasks.iter().find(|t| t.id == id).cloned(),
                self.book.parked.remove(&id),
            ) {
                out.push((task, Some(lane)));
            }
        }
        let ready: Vec<Task> = self
            .shared
            .plan
            .in_order()
            .into_iter()
            .filter(|t| self.ready(t) && !out.iter().any(|(r, _)| r.id == t.id))
            .cloned()
            .collect();
        out.extend(ready.into_iter().map(|t| (t, None)));
        out
    }

    /// A task boundary for the whole run, without waiting: operator commands (decisions
    /// about a task at work wait until it is no longer at work), a stop, the caps.
    fn lane_boundary(&mut self) -> Result<Option<Ended>> {
        let deferred = std::mem::take(&mut self.control.deferred);
        for cmd in deferred {
            let at_work = cmd.task.as_ref().is_some_and(|t| self.book.running.contains_key(t))
                || (!self.apart() && !self.book.running.is_empty());
            if at_work {
                self.control.deferred.push(cmd);
            } else if let Some(end) = self.decide(&cmd)? {
                return Ok(Some(end));
            }
        }
        if self.shared.interrupted.load(Ordering::SeqCst) {
            return Ok(Some(Ended {
                reason: StopReason::Interrupted,
                detail: Some(format!("interrupted ({})", super::interrupted_by())),
            }));
        }
        if let Some(end) = self.poll_control()? {
            return Ok(Some(end));
        }
        if self.control.stop_now {
            let why = self.control.stop.take().unwrap_or_default();
            return Ok(Some(Ended {
                reason: StopReason::OperatorStop,
                detail: Some(format!("stopped now by the operator ({why})")),
            }));
        }
        if self.book.running.is_empty()
            && let Some(why) = self.control.stop.take()
        {
            return Ok(Some(Ended { reason: StopReason::OperatorStop, detail: Some(why) }));
        }
        if self.control.stop.is_some() {
            // A plain stop lets the tasks at work finish; no new one starts.
            self.control.paused = true;
        }
        // A cap, like a plain stop, lets the tasks at work finish, and the run ends on it once
        // none is at work.
        let Some(cap) = self.shared.cap_reached() else { return Ok(None) };
        if self.book.running.is_empty() {
            return Ok(Some(Ended { reason: cap, detail: None }));
        }
        self.control.paused = true;
        Ok(None)
    }

    /// How a run with lanes ends once nothing more can start: a task held for a person
    /// first, then a failure (one failed by the person included), then tasks blocked by what
    /// they depend on.
    fn lanes_ended(
        &mut self,
        failures: Vec<(String, Ended)>,
        mut holds: BTreeMap<String, Ended>,
    ) -> Result<Ended> {
        let held = self
            .shared
            .plan
            .in_order()
            .into_iter()
            .map(|t| t.id.clone())
            .find(|t| self.shared.records.state(t) == TaskState::NeedsOperator);
        let tasks: Vec<Task> = self.shared.plan.in_order().into_iter().cloned().collect();
        let mut blocked = Vec::new();
        for task in &tasks {
            if self.shared.settled(&task.id) || self.book.parked.contains_key(&task.id) {
                continue;
            }
            if let Some(why) = self.waits_on(&task.id)? {
                blocked.push(why);
            }
        }
        self.write_status()?;
        if let Some(task) = held {
            return Ok(holds.remove(&task).unwrap_or_else(|| Ended {
                reason: StopReason::NeedsOperator,
                detail: Some(format!("task {task} waits for the operator")),
            }));
        }
        let still_failed = failures
            .into_iter()
            .find(|(task, _)| self.shared.records.state(task) == TaskState::Failed)
            .map(|(_, end)| end);
        if let Some(first) = still_failed {
            return Ok(first);
        }
        // A task that failed before this run and waits for a decision is not worked again.
        if let Some(task) = self.shared.held_task() {
            let reviews = record::read_ledger(&self.shared.dir, &task).len() as u64;
            if let Some(why) = self.shared.failed_waiting(&task, reviews) {
                return Ok(super::worker::decision_awaited(&task, why));
            }
        }
        if blocked.is_empty() {
            Ok(Ended { reason: StopReason::AllDone, detail: None })
        } else {
            Ok(Ended { reason: StopReason::Blocked, detail: Some(blocked.join("; ")) })
        }
    }
}
