//! Landing: a lane's accepted work on the session branch, one landing at a time — committed
//! where it is when the lane works in place, else fast-forwarded or merged onto what landed
//! meanwhile and validated there; what does not combine goes back to the worker.

use super::Desk;
use super::{Acceptance, Ended, GateEvent, Lane, Result, Scope, Task};
use crate::hands::validators;
use crate::session::event::FeedbackSent;

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

impl Lane {
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
        if self.link.decision_waiting.swap(false, std::sync::atomic::Ordering::SeqCst) {
            // The operator's review or rewind was sent before this accept came: it is the
            // operator's word on the attempt, so the work waits for it instead of landing.
            let why =
                "the operator's decision, sent while it worked, outranks the evaluator's accept";
            self.gate(&task.id, super::GateEvent::DecisionWaiting, why, *attempt)?;
            self.write_status()?;
            let detail = format!("task {} waits for the operator: {why}", task.id);
            return Ok(Landing::Held(Ended {
                reason: crate::session::state::StopReason::NeedsOperator,
                detail: Some(detail),
            }));
        }
        let landing = self.land_once(task, a)?;
        if let Landing::Rework { text, conflicts } = &landing {
            let why = "the accepted change does not combine with work that landed meanwhile";
            self.gate(&task.id, GateEvent::MergeFailed, why, *attempt)?;
            // What was sent back, and why, comes before the rework it starts.
            self.emit(&FeedbackSent {
                scope: sc.clone(),
                kind: Some(crate::session::vocabulary::FeedbackKind::Merge.as_str().to_owned()),
                content: Some(text.clone()),
                base_commit: self.shared.records.get(&task.id).base,
                conflicts: Some(conflicts.clone()),
                ..FeedbackSent::default()
            })?;
            self.shared.records.update(&task.id, |r| r.granted += 1);
            *attempt += 1;
            self.gate(
                &task.id,
                GateEvent::ReworkStarted,
                "rework in the same conversation",
                *attempt,
            )?;
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
    pub(super) fn land_kept(
        &mut self,
        task: &Task,
        k: &super::lane_recover::KeptAccept,
    ) -> Result<Option<Ended>> {
        self.workspace.reset_lane(&k.base)?;
        self.workspace.restore_files(&k.kept)?;
        self.shared.records.update(&task.id, |r| r.base = Some(k.base.clone()));
        let review = self.shared.review_of(&task.id);
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

    /// One landing, under the landing lock: the judged work committed on the lane's branch
    /// and the session branch fast-forwarded to it when that has not moved, else merged onto
    /// it (three-way, from the work's tree), checked out in the lane and validated before the
    /// session branch moves.
    pub(super) fn land_once(&mut self, task: &Task, a: Acceptance) -> Result<Landing> {
        let landing = std::sync::Arc::clone(&self.link.landing);
        let _turn = landing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let base = self.task_base(&task.id)?;
        if self.link.place == super::lane::Place::InPlace {
            return match self.commit_judged(task, &a, &base) {
                // `record_landed` tells the guard of the commit, once the log has it.
                Ok(sha) => self.record_landed(task, a, sha).map(|()| Landing::Landed),
                Err(e) => {
                    let why = format!("its accepted work could not be committed: {e}");
                    Ok(Landing::Held(self.landing_failed(task, &why)?))
                }
            };
        }
        let onto = self.link.session.session_tip()?;
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
            if merged.conflicts.is_empty() && self.shared.opts.validators.is_empty() {
                // Nothing would run on the combination: it is committed as merged, and the
                // worktree, which the next task resets, is left as it is.
                let message =
                    (task.id.as_str(), task.title.as_str(), self.shared.id.as_str(), a.review);
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
        if let Err(e) = self.link.session.advance_session(&onto, &landed) {
            let why = format!(
                "the session branch could not take its work ({e}); the work is in {} as commit {landed}",
                self.workspace.worktree.display()
            );
            return Ok(Landing::Held(self.landing_failed(task, &why)?));
        }
        self.record_landed(task, a, Some(landed)).map(|()| Landing::Landed)
    }

    /// Brings the lane up to the merge of its task's change onto `onto` and runs the
    /// validators there; the combination's commit when they pass (`None`: it changes
    /// nothing), else how the landing ends.
    pub(super) fn bring_up_and_check(
        &mut self,
        task: &Task,
        review: crate::hands::workspace::Review,
        onto: &str,
        merged: &mut crate::hands::lanes::Merged,
    ) -> Result<std::result::Result<Option<String>, Landing>> {
        self.workspace.bring_up(onto, merged)?;
        self.shared.records.update(&task.id, |r| r.base = Some(onto.to_owned()));
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
        let message = (task.id.as_str(), task.title.as_str(), self.shared.id.as_str(), review);
        match self.workspace.commit_merged(merged, onto, message) {
            Ok(sha) => Ok(Ok(Some(sha))),
            Err(e) => {
                let why = format!("its merged work could not be committed: {e}");
                Ok(Err(Landing::Held(self.landing_failed(task, &why)?)))
            }
        }
    }

    /// Runs the validators on the merged tree in the lane; their report when they fail.
    pub(super) fn validate_combined(&mut self, task: &Task) -> Result<Option<String>> {
        if self.shared.opts.validators.is_empty() {
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
            &self.shared.opts.validators,
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
}

/// What a worker is told when its accepted change conflicts with work that landed meanwhile.
fn conflict_feedback(files: &[String]) -> String {
    let list: Vec<String> = files.iter().map(|f| format!("- {f}")).collect();
    format!(
        "Your change was accepted, but other work landed on the same lines meanwhile. Your worktree now holds that work with your change applied on top; these files have conflict markers (<<<<<<< ======= >>>>>>>) where both changed:\n{}\n\nResolve them so both changes hold, check, and submit again.",
        list.join("\n")
    )
}
