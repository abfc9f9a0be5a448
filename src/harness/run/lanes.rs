//! The scheduler: every plan is worked in lanes — one, or up to N ready tasks of a graph plan
//! at once, each in its own worktree, their accepted work landed on the session branch one at
//! a time.
//!
//! The run keeps what belongs to the whole run — the operator's commands, the caps, the
//! session branch — and the one record of every task, which its lanes share; it starts a lane
//! for each task whose dependencies landed. A lane is a worktree, its hands and git guard and
//! the task's conversation, writing to the same log (through a clone of the writer that stamps
//! its number on every event when there are several). With one lane the worktree is the
//! session's own and accepted work is committed where it is. A lane runs on a thread of its
//! own, since tools and validators block.

use super::{
    Acceptance, Ended, GateEvent, HarnessError, Parts, Result, Run, Scope, Task, TaskEnd,
    TaskState, record,
};
use crate::hands::Hands;
use crate::hands::git_guard::GitGuard;
use crate::hands::validators;
use crate::hands::workspace::Workspace;
use crate::session::control::{self, Op};
use crate::session::event::{FeedbackSent, OperatorWait};
use crate::session::state::StopReason;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What ties a lane's run to the run that started it.
#[derive(Debug, Clone)]
pub(super) struct LaneLink {
    /// The lane's number, from 1: what its events are stamped with.
    pub number: u64,
    /// The session's own worktree, on the branch accepted work lands on.
    session: Workspace,
    /// Held while a task lands: the session branch moves under it, one landing at a time.
    landing: Arc<Mutex<()>>,
    /// Raised when the operator fails this lane's task.
    fail: Arc<AtomicBool>,
    /// Set when the whole run stops at once (`stop --now`, Ctrl-C, a lane that cannot go on):
    /// how every lane's task ends.
    halt: Arc<Mutex<Option<Ended>>>,
    /// The lane's hands' cancel flag: raised, the call or tool in flight stops.
    cancel: Arc<crate::hands::cancel::Cancel>,
    /// The lane's worktree, which no other task may take while this one runs there.
    worktree: std::path::PathBuf,
    /// The lane works in the session's own worktree, on the session branch: what it accepts
    /// is committed where it is, with nothing to merge.
    in_place: bool,
}

/// The lanes of a run: those at work, and those whose task waits for a decision.
#[derive(Debug, Default)]
pub(super) struct LaneBook {
    /// Tasks at work, by task.
    running: BTreeMap<String, LaneLink>,
    /// Lanes whose task is held for the operator or failed: kept whole, so a decision acts on
    /// the task's own worktree and a reject goes on in it.
    parked: BTreeMap<String, Box<Run>>,
    /// Parked lanes a decision made workable again, to start as soon as a lane is free.
    revived: Vec<String>,
    /// Accepted work a resume lands before anything starts.
    pub to_land: BTreeMap<String, super::lane_recover::KeptAccept>,
    /// The hands and git guard of each free lane worktree, by folder, for the next task that
    /// runs there: setting them up reads the worktree's paths, its repository's refs, config
    /// and hooks, the same for every task.
    idle: BTreeMap<std::path::PathBuf, (Hands, Option<GitGuard>)>,
    /// Shared by every lane's link.
    halt: Arc<Mutex<Option<Ended>>>,
    landing: Arc<Mutex<()>>,
}

/// How an accepted task's landing went.
pub(super) enum Landing {
    /// On the session branch.
    Landed,
    /// Sent back to the worker with this text: a conflict (in these files), or the
    /// combination fails the validators (no files).
    Rework { text: String, conflicts: Vec<String> },
    /// It could not land and waits for the operator, its work kept.
    Held(Ended),
}

/// Whether a decision was about a lane's task, and how the run ends if it does.
pub(super) enum LaneDecision {
    /// The task is in no lane: the run decides as without lanes.
    NotInLane,
    Decided(Option<Ended>),
}

/// A lane job's result: the lane, its task and how the task ended.
type LaneDone = (Box<Run>, Task, Result<TaskEnd>);

/// The lanes' dispatch while a graph plan is worked: the lanes at work, which numbers are
/// free, and what stops the run once the lanes at work come back.
struct Dispatch {
    handle: tokio::runtime::Handle,
    jobs: tokio::task::JoinSet<LaneDone>,
    free: BTreeSet<u64>,
    /// The lane number each working task has.
    numbers: BTreeMap<String, u64>,
    stop: Option<Ended>,
    error: Option<HarnessError>,
    failures: Vec<Ended>,
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
    /// A run of its own for `task` in lane `number`, in the task's worktree (cut from the
    /// session branch as it stands now, or the one it already has).
    fn open_lane(&mut self, task: &Task, number: u64) -> Result<Run> {
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
            self.workspace.lane_for(&task.id, &self.dir.join("lanes"), &busy)?
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
            halt: Arc::clone(&self.book.halt),
            cancel: Arc::clone(&hands.cancel),
            worktree: workspace.worktree.clone(),
            in_place,
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
    async fn lane_job(mut self: Box<Self>, task: Task) -> LaneDone {
        let end = self.lane_work(&task).await;
        (self, task, end)
    }

    async fn lane_work(&mut self, task: &Task) -> Result<TaskEnd> {
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

    /// How a lane's task ends at once, if the run or the operator said so: checked after every
    /// call and tool, as the urgent watcher's flag is in a run without lanes.
    pub(super) fn lane_stopped(&mut self, task: &str) -> Result<Option<TaskEnd>> {
        let Some(link) = self.lane.clone() else { return Ok(None) };
        if link.fail.swap(false, Ordering::SeqCst) {
            link.cancel.lower();
            if let Some(t) = self.plan.tasks.iter().find(|t| t.id == task).cloned() {
                self.set_aside(&t, "failed")?;
            }
            return Ok(Some(TaskEnd::Failed(StopReason::OperatorFail)));
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

    /// Lands a lane's accepted task on the session branch, from its conversation: a conflict
    /// or a combination that fails the validators goes back to the worker (the returned text),
    /// in the same conversation, as a new attempt.
    pub(super) fn land(
        &mut self,
        task: &Task,
        a: Acceptance,
        sc: &Scope,
        attempt: &mut u64,
    ) -> Result<Landing> {
        let landing = self.land_once(task, a)?;
        if let Landing::Rework { text, conflicts } = &landing {
            let why = "the accepted change does not combine with work that landed meanwhile";
            self.gate(&task.id, GateEvent::MergeFailed, why, *attempt)?;
            self.records.update(&task.id, |r| r.granted += 1);
            *attempt += 1;
            self.gate(
                &task.id,
                GateEvent::ReworkStarted,
                "rework in the same conversation",
                *attempt,
            )?;
            self.emit(&FeedbackSent {
                scope: sc.clone(),
                kind: Some("merge".into()),
                content: Some(text.clone()),
                base_commit: self.records.get(&task.id).base,
                conflicts: Some(conflicts.clone()),
                ..FeedbackSent::default()
            })?;
        }
        Ok(landing)
    }

    /// Lands a lane's task accepted by a decision (or by the cap policy): no conversation to
    /// go back to, so work that does not combine waits for the operator.
    pub(super) fn land_decided(&mut self, task: &Task, a: Acceptance) -> Result<Option<Ended>> {
        match self.land_once(task, a)? {
            Landing::Landed => Ok(None),
            Landing::Held(end) => Ok(Some(end)),
            Landing::Rework { conflicts, .. } => {
                let why = format!(
                    "its accepted work was not landed: {}; reject it with guidance to have it reworked, or skip it",
                    crate::session::outcome::not_landed_because(&conflicts)
                );
                self.landing_failed(task, &why).map(Some)
            }
        }
    }

    /// Lands accepted work a crash cut off before it landed: the judged attempt, as kept on
    /// its ref, put back in the lane on the commit it was judged against, then landed as a
    /// decision's would be.
    fn land_kept(
        &mut self,
        task: &Task,
        k: &super::lane_recover::KeptAccept,
    ) -> Result<Option<Ended>> {
        self.workspace.reset_lane(&k.base)?;
        self.workspace.restore_files(&k.kept)?;
        self.records.update(&task.id, |r| r.base = Some(k.base.clone()));
        let review = self.review_of(&task.id);
        let summary = self
            .last_case(&task.id)?
            .map_or_else(|| "accepted before the interruption".into(), |(c, _)| c.summary);
        let accepted = Acceptance {
            review,
            by_operator: false,
            last: None,
            summary,
            judged: Some(k.digest.clone()),
        };
        self.land_decided(task, accepted)
    }

    /// Gives a lane another number: a lane revived by a decision starts in whichever lane is
    /// free, and its events say so.
    fn renumber(&mut self, number: u64) {
        if let Some(link) = self.lane.as_mut().filter(|l| !l.in_place) {
            link.number = number;
            self.writer = self.writer.for_lane(number);
        }
    }

    /// One landing, under the landing lock: the judged work committed on the lane's branch
    /// and the session branch fast-forwarded to it when that has not moved, else merged onto
    /// it (three-way, from the work's tree), checked out in the lane and validated before the
    /// session branch moves.
    fn land_once(&mut self, task: &Task, a: Acceptance) -> Result<Landing> {
        let Some(link) = self.lane.clone() else {
            return Ok(Landing::Held(self.landing_failed(task, "it was accepted outside a lane")?));
        };
        let _turn = link.landing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let base = self.task_base(&task.id)?;
        if link.in_place {
            return match self.commit_judged(task, &a, &base) {
                Ok(sha) => {
                    self.record_guard()?;
                    self.record_landed(task, a, sha).map(|()| Landing::Landed)
                }
                Err(e) => {
                    let why = format!("its accepted work could not be committed: {e}");
                    Ok(Landing::Held(self.landing_failed(task, &why)?))
                }
            };
        }
        let onto = link.session.session_tip()?;
        // Unmoved, the session branch takes the task's commit as it is; moved, the task's
        // work is merged onto it as a tree, and only the combination is committed.
        let change = if onto == base {
            self.commit_judged(task, &a, &base)
        } else {
            self.workspace.judged_tree(&base, a.judged.as_deref())
        };
        let change = match change {
            Ok(change) => change,
            Err(e) => {
                let why = format!("its accepted work could not be committed: {e}");
                return Ok(Landing::Held(self.landing_failed(task, &why)?));
            }
        };
        self.record_guard()?;
        let Some(change) = change else {
            return self.record_landed(task, a, None).map(|()| Landing::Landed);
        };
        let landed = if onto == base {
            change
        } else {
            let mut merged = self.workspace.merge_onto(&base, &change, &onto)?;
            if merged.conflicts.is_empty() && self.opts.validators.is_empty() {
                // Nothing would run on the combination: it is committed as merged, and the
                // worktree, which the next task resets, is left as it is.
                let message = (task.id.as_str(), task.title.as_str(), self.id.as_str(), a.review);
                match self.workspace.commit_merged(&merged, &onto, message) {
                    Ok(sha) => sha,
                    Err(e) => {
                        let why = format!("its merged work could not be committed: {e}");
                        return Ok(Landing::Held(self.landing_failed(task, &why)?));
                    }
                }
            } else {
                match self.bring_up_and_check(task, a.review, &onto, &mut merged)? {
                    Ok(Some(sha)) => sha,
                    Ok(None) => return self.record_landed(task, a, None).map(|()| Landing::Landed),
                    Err(landing) => return Ok(landing),
                }
            }
        };
        if let Err(e) = link.session.advance_session(&onto, &landed) {
            let why = format!(
                "the session branch could not take its work ({e}); the work is in {} as commit {landed}",
                self.workspace.worktree.display()
            );
            return Ok(Landing::Held(self.landing_failed(task, &why)?));
        }
        self.record_guard()?;
        self.record_landed(task, a, Some(landed)).map(|()| Landing::Landed)
    }

    /// Brings the lane up to the merge of its task's change onto `onto` and runs the
    /// validators there; the combination's commit when they pass (`None`: it changes
    /// nothing), else how the landing ends.
    fn bring_up_and_check(
        &mut self,
        task: &Task,
        review: crate::hands::workspace::Review,
        onto: &str,
        merged: &mut crate::hands::lanes::Merged,
    ) -> Result<std::result::Result<Option<String>, Landing>> {
        self.workspace.bring_up(onto, merged)?;
        self.records.update(&task.id, |r| r.base = Some(onto.to_owned()));
        self.record_guard()?;
        if !merged.conflicts.is_empty() {
            return Ok(Err(Landing::Rework {
                text: conflict_feedback(&merged.conflicts),
                conflicts: merged.conflicts.clone(),
            }));
        }
        if let Some(report) = self.validate_combined(task)? {
            return Ok(Err(Landing::Rework {
                text: format!(
                    "Your change was accepted, but combined with work that landed meanwhile it fails the checks. Your worktree now holds the combination; make it pass, then submit again.\n\n{report}"
                ),
                conflicts: Vec::new(),
            }));
        }
        // The combination lands as the merge built it from judged work; whatever the
        // validators left in the worktree stays out.
        let message = (task.id.as_str(), task.title.as_str(), self.id.as_str(), review);
        match self.workspace.commit_merged(merged, onto, message) {
            Ok(sha) => Ok(Ok(Some(sha))),
            Err(e) => {
                let why = format!("its merged work could not be committed: {e}");
                Ok(Err(Landing::Held(self.landing_failed(task, &why)?)))
            }
        }
    }

    /// Runs the validators on the merged tree in the lane; their report when they fail.
    fn validate_combined(&mut self, task: &Task) -> Result<Option<String>> {
        if self.opts.validators.is_empty() {
            return Ok(None);
        }
        let (iter, attempt) = self.writer.position(&task.id);
        let sc = super::scope(&task.id, iter, attempt);
        let tests = self.selected_tests(task);
        // The combination is kept like every checked attempt, so what the validators ran on
        // can be shown later.
        let base = self.task_base(&task.id)?;
        let kept = match self.keep_work(
            &format!("{}/{attempt}-combined", task.id),
            &base,
            &format!("{} attempt {attempt}, combined with the session branch", task.id),
        )? {
            Ok(kept) => kept,
            Err(why) => return Ok(Some(why)),
        };
        self.guard_before();
        let v = validators::run_all(
            &self.opts.validators,
            &self.hands,
            &tests,
            &sc,
            Some(&kept),
            true,
            &mut self.writer,
        )?;
        if let super::Guarded::Held(end) = self.guard_git(&task.id, &sc, "validators")? {
            return Ok(Some(end.detail.unwrap_or_default()));
        }
        Ok(v.report)
    }

    fn record_guard(&mut self) -> Result<()> {
        if let Some(guard) = &mut self.guard {
            guard.record().map_err(|source| HarnessError::Git {
                what: "cannot record the lane's git state",
                source,
            })?;
        }
        Ok(())
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
        let has_lane = self.workspace.lane_of(&task, &self.dir.join("lanes")).is_some();
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
            if matches!(cmd.op, Op::Reject | Op::RetryEval) {
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
    fn after_lane(&mut self, task: &Task, lane: Box<Run>) -> Result<()> {
        let Run { workspace, hands, mut guard, lane: link, .. } = *lane;
        if link.as_ref().is_some_and(|l| l.in_place) {
            if let Some(g) = &mut guard {
                g.record().map_err(|source| HarnessError::Git {
                    what: "cannot record the worktree's git state",
                    source,
                })?;
            }
            self.guard = guard;
        } else if self.settled(&task.id) {
            workspace.release_lane()?;
            self.book.idle.insert(workspace.worktree, (hands, guard));
        }
        self.write_status()?;
        record::write_summary(&self.dir, self.writer.summary())?;
        self.checkpoint("running")?;
        Ok(())
    }

    /// Whether `task` may start in a lane now: unsettled, not at work or parked, and every
    /// task it depends on landed.
    fn ready(&self, task: &Task) -> bool {
        let id = &task.id;
        !self.settled(id)
            && !self.book.running.contains_key(id)
            && !self.book.parked.contains_key(id)
            && self.records.state(id) != TaskState::NeedsOperator
            && (self.records.state(id) != TaskState::Failed
                || self
                    .failed_waiting(id, record::read_ledger(&self.dir, id).len() as u64)
                    .is_none())
            && self.plan.dependencies(id).iter().all(|d| self.landed(d))
    }

    /// Whether `task`'s accepted work is on the session branch: accepted, and its lane back
    /// (a lane's task is accepted before its work lands).
    /// In a plan without a graph, the task before is landed once it is settled: a skipped one
    /// lets the next start, as it always has.
    fn landed(&self, task: &str) -> bool {
        let state = self.records.state(task);
        let done = if self.plan.is_graph() { state.is_accepted() } else { state.is_settled() };
        done && !self.book.running.contains_key(task)
    }

    /// Whether tasks are worked apart, each in a worktree of its own: several lanes on a
    /// graph plan. Otherwise the one lane works in the session's own worktree.
    fn apart(&self) -> bool {
        self.opts.lanes > 1 && self.plan.is_graph()
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

    /// Works a graph plan in up to `lanes` lanes until every task is settled, what is left
    /// waits on something that will not come, or something stops the run.
    pub(super) async fn work_lanes(&mut self) -> Result<Ended> {
        let ended = self.work_in_lanes().await;
        // The session's own worktree shows the branch as the lanes left it, and the lanes'
        // worktrees no task holds go; a failure at either loses nothing (the branch holds
        // the work). In place, the worktree is the work itself and stays as it is.
        if self.apart() {
            let _ = self.workspace.refresh();
            let _ = self.workspace.remove_free_lanes(&self.dir.join("lanes"));
        }
        ended
    }

    async fn work_in_lanes(&mut self) -> Result<Ended> {
        self.workspace.forget_own_refs()?;
        let mut d = Dispatch {
            handle: tokio::runtime::Handle::current(),
            jobs: tokio::task::JoinSet::new(),
            free: (1..=self.opts.lanes.max(1)).collect(),
            numbers: BTreeMap::new(),
            stop: None,
            error: None,
            failures: Vec::new(),
            holds: BTreeMap::new(),
            cut: Vec::new(),
            waiting_said: false,
        };
        *self.book.halt.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.land_what_was_kept()?;
        loop {
            if d.going() {
                match self.lane_boundary().await {
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
            let Some(task) = self.plan.tasks.iter().find(|t| t.id == id).cloned() else {
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
            if let Some(link) = &lane.lane {
                self.book.running.insert(task.id.clone(), link.clone());
            }
            d.numbers.insert(task.id.clone(), number);
            let h = d.handle.clone();
            let task_id = task.id.clone();
            d.jobs.spawn_blocking(move || h.block_on(lane.lane_job(task)));
            self.count_step(&task_id);
            if std::mem::take(&mut d.waiting_said) {
                self.checkpoint("running")?;
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
        let open = self.plan.tasks.iter().any(|t| self.ready(t)) || !self.book.revived.is_empty();
        if self.control.paused && open {
            if !d.waiting_said {
                self.checkpoint("paused")?;
                d.waiting_said = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(Idle::Wait);
        }
        if open {
            return Ok(Idle::Go);
        }
        let held = self.held_task();
        if let Some(held) = held.as_ref().filter(|_| self.opts.wait_for_operator) {
            if !d.waiting_said {
                self.emit(&OperatorWait {
                    scope: super::scope(held, 0, 0),
                    reason: Some(format!("task {held} waits for the operator")),
                    ..OperatorWait::default()
                })?;
                self.checkpoint("needs_operator")?;
                d.waiting_said = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(Idle::Wait);
        }
        let (failures, holds) = (std::mem::take(&mut d.failures), std::mem::take(&mut d.holds));
        Ok(Idle::Ended(self.lanes_ended(failures, holds)))
    }

    /// A lane's task came back: its lane is free again, and its end is acted on.
    fn lane_came_back(&mut self, d: &mut Dispatch, done: LaneDone) -> Result<()> {
        let (mut lane, task, end) = done;
        self.book.running.remove(&task.id);
        self.step_done(&task.id)?;
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
                let held = lane.finish_accepted(&task, a)?;
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
                d.failures.push(ended);
                self.book.parked.insert(task.id.clone(), lane);
            }
            Ok(TaskEnd::Stop(end)) if end.reason == StopReason::NeedsOperator => {
                self.write_status()?;
                d.holds.insert(task.id.clone(), end);
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
    fn startable(&mut self) -> Vec<(Task, Option<Box<Run>>)> {
        let mut out = Vec::new();
        for id in std::mem::take(&mut self.book.revived) {
            if let (Some(task), Some(lane)) =
                (self.plan.tasks.iter().find(|t| t.id == id).cloned(), self.book.parked.remove(&id))
            {
                out.push((task, Some(lane)));
            }
        }
        let ready: Vec<Task> = self
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
    async fn lane_boundary(&mut self) -> Result<Option<Ended>> {
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
        if self.interrupted.load(Ordering::SeqCst) {
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
        if let Some(task) = self.control.retry_eval.take()
            && let Some(end) = self.retry_evaluation(&task).await?
        {
            return Ok(Some(end));
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
        // A cap, like a plain stop, lets the tasks at work finish — as without lanes, where it
        // is read between tasks — and the run ends on it once none is at work.
        let Some(cap) = self.cap_reached() else { return Ok(None) };
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
        failures: Vec<Ended>,
        mut holds: BTreeMap<String, Ended>,
    ) -> Result<Ended> {
        let held = self
            .plan
            .in_order()
            .into_iter()
            .map(|t| t.id.clone())
            .find(|t| self.records.state(t) == TaskState::NeedsOperator);
        let tasks: Vec<Task> = self.plan.in_order().into_iter().cloned().collect();
        let mut blocked = Vec::new();
        for task in &tasks {
            if self.settled(&task.id) || self.book.parked.contains_key(&task.id) {
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
        if let Some(first) = failures.into_iter().next() {
            return Ok(first);
        }
        // A task that failed before this run and waits for a decision is not worked again.
        if let Some(task) = self.held_task() {
            let reviews = record::read_ledger(&self.dir, &task).len() as u64;
            if let Some(why) = self.failed_waiting(&task, reviews) {
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

/// What a worker is told when its accepted change conflicts with work that landed meanwhile.
fn conflict_feedback(files: &[String]) -> String {
    let list: Vec<String> = files.iter().map(|f| format!("- {f}")).collect();
    format!(
        "Your change was accepted, but other work landed on the same lines meanwhile. Your worktree now holds that work with your change applied on top; these files have conflict markers (<<<<<<< ======= >>>>>>>) where both changed:\n{}\n\nResolve them so both changes hold, check, and submit again.",
        list.join("\n")
    )
}
