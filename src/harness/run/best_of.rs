//! A best-of task: its first attempt worked N times at once, each candidate in a worktree and
//! a conversation of its own (on the model `[models.worker] best_of` gives it), validated and
//! judged on its own — evidence included — then weighed by the task's own lane. One accepted
//! candidate lands; among several, the evaluator chooses with the diffs side by side (a tie
//! goes to the smaller diff); when none was accepted, the best-rated one is reworked in its
//! own conversation. Every candidate stays an attempt of the task: its events, its Ledger row
//! and its kept ref carry its attempt number.

use super::Desk;
use super::candidacy::{Candidacy, Judged};
use super::lane::{Lane, LaneControl, LaneLink, Place};
use super::{
    Acceptance, CallTag, ContextReset, Ended, GateEvent, HarnessError, OnCap, Result, Review, Role,
    Scope, Task, TaskEnd, Value, WORKER_PROMPT, json, scope,
};
use crate::brain::client::BrainError;
use crate::hands::Hands;
use crate::harness::choice::{self, Offered};
use crate::session::event::{BestOf, CandidateSeen};
use crate::session::state::StopReason;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A candidate back from its work.
struct Back {
    lane: Box<Lane>,
    end: Result<TaskEnd>,
    messages: Vec<Value>,
    elapsed: Duration,
}

impl Back {
    fn number(&self) -> u64 {
        self.lane.candidate.as_ref().map_or(0, |c| c.number)
    }

    fn judged(&self) -> Option<&Judged> {
        self.lane.candidate.as_ref().and_then(|c| c.judged.as_ref())
    }

    /// What it came to, in words.
    fn outcome(&self) -> String {
        match self.judged() {
            Some(j) if j.eligible() => "accepted".to_owned(),
            Some(j) if j.verdict.accepted() => "accepted without evidence".to_owned(),
            Some(j) => match &j.verdict.rejection_category {
                Some(c) => format!("rejected ({c})"),
                None => "rejected".to_owned(),
            },
            None => format!("not judged: {}", self.why_unjudged()),
        }
    }

    fn why_unjudged(&self) -> String {
        match &self.end {
            Ok(TaskEnd::Stop(Ended { detail: Some(d), .. })) => d.clone(),
            Ok(TaskEnd::Failed(StopReason::IterCap)) => format!(
                "its {} iterations ran out before a case passed the validators",
                self.lane.shared.opts.max_iterations
            ),
            Ok(TaskEnd::Stop(Ended { reason, .. }) | TaskEnd::Failed(reason)) => {
                reason.as_str().to_owned()
            }
            Ok(_) => "it ended without a verdict".to_owned(),
            Err(e) => e.to_string(),
        }
    }

    /// How it ranks for a rework when none was accepted: an accept that lacked evidence
    /// first, then rejects by score, then the smaller change; the unjudged never.
    fn rank(&self) -> Option<(u8, i64, u64, u64)> {
        let j = self.judged()?;
        j.kept.as_ref()?;
        let first = u8::from(!j.verdict.accepted());
        #[allow(clippy::cast_possible_truncation)] // a score is 0–100
        let score = -(j.verdict.score.unwrap_or(0.0) as i64);
        Some((first, score, j.changed, self.number()))
    }
}

/// How the attempts were weighed.
struct Weighed {
    winner: Option<u64>,
    reworked: Option<u64>,
    chosen_by: &'static str,
    why: String,
    why_not: Vec<(u64, String)>,
}

impl Lane {
    /// Works `task`'s first attempt `n` times at once from `prompt`, and lands the best
    /// judged one — or reworks the best-rated, or ends as the attempts did.
    pub(super) async fn best_of(
        &mut self,
        task: &Task,
        n: u64,
        base: &str,
        prompt: &str,
    ) -> Result<TaskEnd> {
        let mut lanes = Vec::new();
        for k in 1..=n {
            match self.candidate_lane(task, k, base) {
                Ok(lane) => lanes.push(lane),
                Err(e) => {
                    self.drop_candidates(task, n);
                    return Err(e);
                }
            }
        }
        let links: Vec<LaneLink> = lanes.iter().map(|l| l.link.clone()).collect();
        let handle = tokio::runtime::Handle::current();
        let mut jobs = tokio::task::JoinSet::new();
        for lane in lanes {
            let (h, task, prompt) = (handle.clone(), task.clone(), prompt.to_owned());
            jobs.spawn_blocking(move || h.block_on(lane.candidate_job(task, prompt)));
        }
        let mut back = Vec::new();
        while !jobs.is_empty() {
            tokio::select! {
                joined = jobs.join_next() => match joined {
                    Some(Ok(b)) => back.push(b),
                    Some(Err(e)) => {
                        self.drop_candidates(task, n);
                        return Err(HarnessError::NotKept(format!(
                            "an attempt of {} stopped unexpectedly: {e}", task.id
                        )));
                    }
                    None => {}
                },
                () = tokio::time::sleep(Duration::from_millis(200)) => self.pass_on(&links),
            }
        }
        back.sort_by_key(Back::number);
        self.drop_candidates(task, n);
        if let Some(end) = self.act_now(&task.id)? {
            return Ok(end);
        }
        let weighed = self.weigh(task, &back).await?;
        self.log_weighed(task, &back, &weighed)?;
        if let Some(k) = weighed.winner {
            return self.land_candidate(task, &back, k, &weighed.why);
        }
        if let Some(k) = weighed.reworked {
            return self.rework_candidate(task, back, k, n).await;
        }
        Ok(unjudged_end(task, back))
    }

    /// A lane of its own for attempt `k`: a worktree at the task's base, its own hands and
    /// git guard, its model, this lane's writer and halt; its fail and cancel flags are passed
    /// on from this lane's while it works.
    fn candidate_lane(&self, task: &Task, k: u64, base: &str) -> Result<Box<Lane>> {
        let workspace = self.link.session.candidate(&task.id, k, base)?;
        let hands =
            Hands::new(&workspace.worktree, Some(&self.shared.dir), self.hands.config.clone())
                .map_err(|e| {
                    HarnessError::NotKept(format!("attempt {k} of {} cannot start: {e}", task.id))
                })?;
        let brain = self.brain.candidate(k).map_err(|e| {
            HarnessError::NotKept(format!(
                "attempt {k} of {}'s model cannot be set up: {e}",
                task.id
            ))
        })?;
        let model = brain.endpoint(Role::Worker).map(|e| e.model.clone()).unwrap_or_default();
        let link = LaneLink {
            number: self.link.number,
            session: self.link.session.clone(),
            landing: Arc::clone(&self.link.landing),
            fail: Arc::default(),
            decide_now: Arc::default(),
            decision_waiting: Arc::default(),
            halt: Arc::clone(&self.link.halt),
            cancel: Arc::clone(&hands.cancel),
            worktree: workspace.worktree.clone(),
            place: Place::Apart,
            inbox: super::steer::Inbox::default(),
        };
        Ok(Box::new(Lane {
            shared: Arc::clone(&self.shared),
            writer: self.writer.clone(),
            workspace,
            hands,
            brain,
            guard: None,
            guard_blind: None,
            link,
            control: LaneControl { offset: self.control.offset, ..LaneControl::default() },
            candidate: Some(Candidacy { number: k, model, ..Candidacy::default() }),
        }))
    }

    /// The operator's `fail`, a decision taken now, and a cancel reach every candidate.
    fn pass_on(&self, links: &[LaneLink]) {
        let fail = self.link.fail.load(Ordering::SeqCst);
        let now = self.link.decide_now.load(Ordering::SeqCst);
        let cancel = self.hands.cancel.is_raised();
        for link in links {
            if fail {
                link.fail.store(true, Ordering::SeqCst);
            }
            if now {
                link.decide_now.store(true, Ordering::SeqCst);
            }
            if fail || now || cancel {
                link.cancel.raise();
            }
        }
    }

    /// Removes the candidates' worktrees: what they did is on their kept refs and in the log.
    fn drop_candidates(&self, task: &Task, n: u64) {
        for k in 1..=n {
            let _ = self.link.session.remove_candidate(&task.id, k);
        }
    }

    /// One candidate's work: its conversation from the task's prompt until it is judged, or
    /// ends without a verdict.
    async fn candidate_job(mut self: Box<Self>, task: Task, prompt: String) -> Back {
        let started = Instant::now();
        let mut messages = vec![
            json!({"role": "system", "content": WORKER_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let end = self.candidate_work(&task, &prompt, &mut messages).await;
        Back { lane: self, end, messages, elapsed: started.elapsed() }
    }

    async fn candidate_work(
        &mut self,
        task: &Task,
        prompt: &str,
        messages: &mut Vec<Value>,
    ) -> Result<TaskEnd> {
        let k = self.candidate.as_ref().map_or(1, |c| c.number);
        self.guard = Some(super::lane::guard_on(&self.workspace)?);
        let base = self.workspace.tip()?;
        self.emit(&ContextReset {
            scope: Scope { task_id: Some(task.id.clone()), attempt: Some(k), ..Scope::default() },
            base_commit: Some(base),
            ..ContextReset::default()
        })?;
        self.log_prompt(&scope(&task.id, 0, k), "worker", prompt)?;
        self.drive_worker(task, k, messages, 1).await
    }

    /// The attempt to land, or to rework, and why.
    async fn weigh(&mut self, task: &Task, back: &[Back]) -> Result<Weighed> {
        let eligible: Vec<&Back> =
            back.iter().filter(|b| b.judged().is_some_and(Judged::eligible)).collect();
        let smallest = |among: &[&Back]| {
            among
                .iter()
                .min_by_key(|b| (b.judged().map_or(u64::MAX, |j| j.changed), b.number()))
                .map(|b| b.number())
        };
        match eligible.as_slice() {
            [] => {
                let best = back.iter().filter_map(|b| b.rank().map(|r| (r, b.number()))).min();
                Ok(match best {
                    Some((_, k)) => Weighed {
                        winner: None,
                        reworked: Some(k),
                        chosen_by: "best_rated",
                        why: format!(
                            "none was accepted with its evidence seen; attempt {k} is the best rated, and is reworked"
                        ),
                        why_not: Vec::new(),
                    },
                    None => Weighed {
                        winner: None,
                        reworked: None,
                        chosen_by: "none",
                        why: "no attempt was judged".to_owned(),
                        why_not: Vec::new(),
                    },
                })
            }
            [only] => Ok(Weighed {
                winner: Some(only.number()),
                reworked: None,
                chosen_by: "only_accept",
                why: format!(
                    "attempt {} is the only one accepted with its evidence seen",
                    only.number()
                ),
                why_not: Vec::new(),
            }),
            many => {
                let offered: Vec<Offered<'_>> = many
                    .iter()
                    .filter_map(|b| {
                        let j = b.judged()?;
                        Some(Offered {
                            attempt: b.number(),
                            summary: &j.case.summary,
                            concern: &j.verdict.concern,
                            diff_summary: &j.summary,
                            patch: &j.patch,
                        })
                    })
                    .collect();
                let smaller = smallest(many).unwrap_or(0);
                Ok(match self.choose(task, &offered).await? {
                    Ok(choice) => match choice.winner {
                        Some(k) => Weighed {
                            winner: Some(k),
                            reworked: None,
                            chosen_by: "evaluator",
                            why: format!(
                                "the evaluator chose attempt {k} of {} accepted",
                                many.len()
                            ),
                            why_not: choice.why_not,
                        },
                        None => Weighed {
                            winner: Some(smaller),
                            reworked: None,
                            chosen_by: "smaller_diff",
                            why: format!(
                                "the evaluator could not tell them apart; attempt {smaller}'s change is the smallest"
                            ),
                            why_not: choice.why_not,
                        },
                    },
                    Err(why) => Weighed {
                        winner: Some(smaller),
                        reworked: None,
                        chosen_by: "smaller_diff",
                        why: format!(
                            "the evaluator's choice could not be had ({why}); attempt {smaller}'s change is the smallest"
                        ),
                        why_not: Vec::new(),
                    },
                })
            }
        }
    }

    /// Asks the evaluator to choose among the accepted attempts, with one retry for an
    /// unreadable answer. The reason it could not, when it could not.
    async fn choose(
        &mut self,
        task: &Task,
        offered: &[Offered<'_>],
    ) -> Result<Result<choice::Choice, String>> {
        let prompt = choice::prompt(task, offered);
        let sc = scope(&task.id, 0, 0);
        self.log_prompt(&sc, "evaluator", &prompt)?;
        let attempts: Vec<u64> = offered.iter().map(|o| o.attempt).collect();
        let messages = [
            json!({"role": "system", "content": choice::CHOOSE_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let tools = [choice::schema(offered)];
        let mut last = String::new();
        for turn in 0..2 {
            let tag = CallTag { role: Role::Evaluator, task: &task.id, attempt: 0, turn };
            let reply = match self.call(tag, 0, &messages, &tools).await? {
                Ok(reply) => reply,
                Err(BrainError::Cancelled(_)) => return Ok(Err("it was stopped".to_owned())),
                Err(e) => return Ok(Err(e.to_string())),
            };
            let call = reply
                .tool_calls
                .iter()
                .find(|c| crate::session::vocabulary::ToolName::SubmitChoice.is(Some(&c.name)));
            match call.map(|c| choice::parse(&c.arguments, &attempts)) {
                Some(Ok(choice)) => return Ok(Ok(choice)),
                Some(Err(why)) => last = why,
                None => "no submit_choice call in the reply".clone_into(&mut last),
            }
        }
        Ok(Err(last))
    }

    /// The `best_of` event: every candidate as weighed, and what comes of them.
    fn log_weighed(&mut self, task: &Task, back: &[Back], w: &Weighed) -> Result<()> {
        let candidates = back
            .iter()
            .map(|b| {
                let k = b.number();
                let j = b.judged();
                let why_not = w.why_not.iter().find(|(a, _)| *a == k).map(|(_, why)| why.clone());
                CandidateSeen {
                    attempt: k,
                    model: b.lane.candidate.as_ref().map(|c| c.model.clone()).unwrap_or_default(),
                    outcome: b.outcome(),
                    eligible: j.is_some_and(Judged::eligible),
                    diff_summary: j.map(|j| j.summary.clone()).unwrap_or_default(),
                    changed_lines: j.map_or(0, |j| j.changed),
                    cost: b.lane.candidate.as_ref().map_or(0.0, |c| c.spent),
                    elapsed_ms: u64::try_from(b.elapsed.as_millis()).unwrap_or(u64::MAX),
                    why_not,
                    attempt_commit: j.and_then(|j| j.kept.clone()),
                }
            })
            .collect();
        let at = w.winner.or(w.reworked).unwrap_or(0);
        self.emit(&BestOf {
            scope: scope(&task.id, 0, at),
            candidates: Some(candidates),
            winner: w.winner,
            reworked: w.reworked,
            chosen_by: Some(w.chosen_by.to_owned()),
            why: Some(w.why.clone()),
            ..BestOf::default()
        })
    }

    /// The chosen attempt's files in this lane's worktree, and the task accepted on its
    /// verdict: it lands as any accepted task, bound to the diff that was judged.
    fn land_candidate(&mut self, task: &Task, back: &[Back], k: u64, why: &str) -> Result<TaskEnd> {
        let Some(j) = back.iter().find(|b| b.number() == k).and_then(Back::judged) else {
            return Err(HarnessError::NotKept(format!(
                "attempt {k} of {} is not among its attempts",
                task.id
            )));
        };
        let kept = j.kept.clone().unwrap_or_default();
        self.workspace.restore_tree(&kept)?;
        let said = format!("best of {}: {why}", back.len());
        self.gate(&task.id, GateEvent::CaseSubmitted, &said, k)?;
        self.gate(&task.id, GateEvent::ValidatorsPassed, &said, k)?;
        self.gate(&task.id, GateEvent::Accepted, &said, k)?;
        Ok(TaskEnd::Accepted(Acceptance {
            review: Review::Accepted,
            by_operator: false,
            last: None,
            summary: j.case.summary.clone(),
            judged: Some(j.digest.clone()),
        }))
    }

    /// None was accepted: attempt `k` — the best rated — goes on as the task's rework, in its
    /// own conversation and on its model, its files in this lane's worktree.
    async fn rework_candidate(
        &mut self,
        task: &Task,
        mut back: Vec<Back>,
        k: u64,
        n: u64,
    ) -> Result<TaskEnd> {
        let Some(at) = back.iter().position(|b| b.number() == k) else {
            return Err(HarnessError::NotKept(format!(
                "attempt {k} of {} is not among its attempts",
                task.id
            )));
        };
        let chosen = back.swap_remove(at);
        let Some(j) = chosen.judged().cloned() else {
            return Err(HarnessError::NotKept(format!(
                "attempt {k} of {} was not judged",
                task.id
            )));
        };
        self.workspace.restore_tree(j.kept.as_deref().unwrap_or_default())?;
        self.brain = chosen.lane.brain.clone();
        let said = format!("best of {n}: none accepted; attempt {k} is reworked");
        self.gate(&task.id, GateEvent::CaseSubmitted, &said, k)?;
        self.gate(&task.id, GateEvent::ValidatorsPassed, &said, k)?;
        // The attempts side by side may have used the task's rounds: the cap applies as to
        // any rejected attempt.
        let judged = super::record::read_ledger(&self.shared.dir, &task.id).len() as u64;
        if judged >= self.shared.cap_for(&task.id) {
            return match self.shared.opts.on_cap {
                OnCap::Fail => Ok(TaskEnd::Failed(StopReason::EvaluatorCap)),
                OnCap::ForceAccept => {
                    let why = "rework cap reached; accepted below the bar by policy";
                    self.gate(&task.id, GateEvent::ForceAccepted, why, k)?;
                    Ok(TaskEnd::Accepted(Acceptance {
                        review: Review::BelowBar,
                        by_operator: false,
                        last: j.verdict.outcome(),
                        summary: j.case.summary.clone(),
                        judged: Some(j.digest.clone()),
                    }))
                }
            };
        }
        self.gate(&task.id, GateEvent::Rejected, &j.verdict.summary(), k)?;
        let attempt = n + 1;
        self.gate(
            &task.id,
            GateEvent::ReworkStarted,
            "rework in attempt's own conversation",
            attempt,
        )?;
        self.emit(&ContextReset {
            scope: Scope {
                task_id: Some(task.id.clone()),
                attempt: Some(attempt),
                ..Scope::default()
            },
            base_commit: Some(self.task_base(&task.id)?),
            continues_at: Some(j.last_seq),
            ..ContextReset::default()
        })?;
        let mut messages = chosen.messages;
        let first = self.writer.turns_of(&task.id) + 1;
        self.drive_worker(task, attempt, &mut messages, first).await
    }
}

/// How a best-of task ends when no attempt was judged: as its attempts did — a stop of the
/// run first, then an error, then the first attempt's failure.
fn unjudged_end(task: &Task, back: Vec<Back>) -> TaskEnd {
    let mut failed = None;
    for b in back {
        match b.end {
            Ok(TaskEnd::Stop(end)) if end.reason != StopReason::NeedsOperator => {
                return TaskEnd::Stop(end);
            }
            Ok(TaskEnd::Failed(reason)) => {
                failed.get_or_insert(reason);
            }
            _ => {}
        }
    }
    match failed {
        Some(reason) => TaskEnd::Failed(reason),
        None => TaskEnd::Stop(Ended {
            reason: StopReason::NeedsOperator,
            detail: Some(format!(
                "task {} waits for the operator: none of its attempts was judged",
                task.id
            )),
        }),
    }
}
