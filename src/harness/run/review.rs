//! A submitted case: parse it, run the validators, ask the evaluator (failing closed), and
//! let the gate act on the verdict.

use super::Desk;
use super::{
    Acceptance, BrainError, CallTag, Case, EVALUATOR_PROMPT, Ended, EvaluatorInputs, GateEvent,
    Guarded, Lane, LastOutcome, LedgerEntry, OnCap, ParseError, Result, Review, Role, Scope, Task,
    TaskEnd, ToolCall, ToolCallRecord, Value, Verdict, VerdictEvent, case, json, memory, record,
    timestamp, tool_message, validators, verdict,
};
use crate::hands::workspace::{DiffInfo, WorkspaceError};
use crate::harness::evidence::{self, EvidenceMode};
use crate::harness::verdict::Evidence;
use crate::session::event::{CaseParseError, EvaluatorParseError, EvidenceGate};
use crate::session::state::StopReason;

/// What the validators said of an attempt.
enum Checks {
    /// They passed: their joined output, for the evaluator, and their names.
    Passed(String, Vec<String>),
    /// They failed or could not run: what the worker reads, and the task's end if it ended.
    Answered(String, Option<TaskEnd>),
}

impl Lane {
    /// Handles one `submit_case`: parse, validators, evaluator, gate. Returns what the worker
    /// reads as the tool result, and the task's end if it ended.
    pub(super) async fn review(
        &mut self,
        task: &Task,
        call: &ToolCallRecord,
        sc: &Scope,
        attempt: &mut u64,
        iter: u64,
    ) -> Result<(String, Option<TaskEnd>)> {
        let case = match case::parse(&call.arguments) {
            Ok(c) => c,
            Err(error) => {
                self.emit(&ToolCall {
                    scope: sc.clone(),
                    tool: Some("submit_case".into()),
                    args: Some(json!("(unparseable case)")),
                    call_id: Some(call.id.clone()),
                    ..ToolCall::default()
                })?;
                let raw = json!([{"name": call.name, "arguments": call.arguments}]);
                self.emit(&CaseParseError(ParseError {
                    scope: sc.clone(),
                    error: Some(error.clone()),
                    raw_tool_calls: Some(raw),
                    ..ParseError::default()
                }))?;
                return Ok((error, None));
            }
        };
        self.emit(&ToolCall {
            scope: sc.clone(),
            tool: Some("submit_case".into()),
            args: serde_json::to_value(&case).ok(),
            call_id: Some(call.id.clone()),
            ..ToolCall::default()
        })?;
        self.gate(&task.id, GateEvent::CaseSubmitted, "case submitted", *attempt)?;
        let base = self.task_base(&task.id)?;
        let diff = match self.task_diff(&base) {
            Ok(diff) => diff,
            Err(WorkspaceError::SpecialFile(path, kind)) => {
                let why = WorkspaceError::SpecialFile(path, kind).to_string();
                self.gate(&task.id, GateEvent::ValidatorsFailed, &why, *attempt)?;
                let text = format!("Your case cannot be checked yet: {why}, then submit again.");
                self.feedback(sc, "workspace", &text)?;
                return Ok((text, None));
            }
            Err(e) => {
                let why = format!("the task's change could not be read: {e}");
                self.gate(&task.id, GateEvent::HeldForOperator, &why, *attempt)?;
                let end = TaskEnd::Stop(Ended {
                    reason: StopReason::NeedsOperator,
                    detail: Some(format!("task {} waits for the operator: {why}", task.id)),
                });
                return Ok(("The review could not be completed; stop here.".into(), Some(end)));
            }
        };
        let mut validator_output = None;
        let mut validators_passed = Vec::new();
        if diff.is_empty() {
            let verdict = Verdict::empty_diff();
            return self.judged(task, &case, &verdict, &diff, sc, attempt, iter);
        }
        if !self.shared.opts.validators.is_empty() {
            match self.check(task, &diff, sc, *attempt, iter)? {
                Checks::Passed(output, names) => {
                    (validator_output, validators_passed) = (Some(output), names);
                }
                Checks::Answered(text, end) => return Ok((text, end)),
            }
        }
        if self.shared.opts.no_eval {
            self.gate(
                &task.id,
                GateEvent::AcceptedUnreviewed,
                "validators passed; accepted unreviewed (--no-eval)",
                *attempt,
            )?;
            return Ok((
                "Accepted.".into(),
                Some(TaskEnd::Accepted(Acceptance {
                    review: Review::Unreviewed,
                    by_operator: false,
                    last: None,
                    summary: case.summary,
                    judged: Some(diff.digest.clone()),
                })),
            ));
        }
        self.gate(&task.id, GateEvent::ValidatorsPassed, "validators passed", *attempt)?;
        let asked = Asked {
            case: &case,
            diff: &diff,
            validator_output: validator_output.as_deref(),
            validators: &validators_passed,
        };
        let verdict = match self.evaluate(task, &asked, sc, *attempt, iter, None).await? {
            Ok(v) => v.held_to(self.shared.opts.score_threshold),
            Err(e) => return self.unreviewed(task, &e, *attempt),
        };
        let verdict = match self.weigh_evidence(task, &asked, verdict, sc, *attempt, iter).await? {
            Ok(v) => v,
            Err(e) => return self.unreviewed(task, &e, *attempt),
        };
        self.judged(task, &case, &verdict, &diff, sc, attempt, iter)
    }

    /// The evaluator gave no verdict: stopped (the worker goes on), or failed (a person
    /// decides).
    fn unreviewed(
        &mut self,
        task: &Task,
        e: &BrainError,
        attempt: u64,
    ) -> Result<(String, Option<TaskEnd>)> {
        if let BrainError::Cancelled(_) = e {
            return Ok(("The review was stopped.".into(), None));
        }
        let why = e.to_string();
        self.gate(&task.id, GateEvent::HeldForOperator, &why, attempt)?;
        let end = TaskEnd::Stop(Ended {
            reason: StopReason::NeedsOperator,
            detail: Some(format!("task {} waits for the operator: {why}", task.id)),
        });
        Ok(("The review could not be completed; stop here.".into(), Some(end)))
    }

    /// An accept's witnesses, checked. Every criterion witnessed: the accept stands. Else,
    /// by `[gate] evidence`: `warn` lets it stand, marked; `required` logs it as sent back and
    /// asks the evaluator once more with what failed — an accept that still lacks evidence
    /// then holds the task (in `judged`). `off`, and rejects: the verdict as given.
    pub(super) async fn weigh_evidence(
        &mut self,
        task: &Task,
        asked: &Asked<'_>,
        mut verdict: Verdict,
        sc: &Scope,
        attempt: u64,
        iter: u64,
    ) -> Result<Result<Verdict, BrainError>> {
        let mode = self.shared.opts.evidence;
        if mode == EvidenceMode::Off || !verdict.accepted() {
            return Ok(Ok(verdict));
        }
        let (seen, commit) =
            match self.check_witnesses(task, &verdict, asked.diff, asked.validators, attempt)? {
                Ok(checked) => checked,
                Err(why) => return Ok(Ok(unkept(verdict, task, why))),
            };
        let missing = evidence::unwitnessed(task.criteria.len(), &seen);
        let gate = match (missing.is_empty(), mode) {
            (true, _) => EvidenceGate::Seen,
            (false, EvidenceMode::Warn) => EvidenceGate::Warned,
            (false, _) => EvidenceGate::SentBack,
        };
        verdict.checked = Some(Evidence {
            seen: seen.clone(),
            unwitnessed: missing.clone(),
            gate,
            commit,
            unkept: None,
        });
        if gate != EvidenceGate::SentBack {
            return Ok(Ok(verdict));
        }
        let event = Self::verdict_event(&verdict, asked.diff, sc);
        self.emit(&event)?;
        let note = evidence::sent_back(&task.criteria, &seen, &missing);
        let mut again = match self.evaluate(task, asked, sc, attempt, iter, Some(&note)).await? {
            Ok(v) => v.held_to(self.shared.opts.score_threshold),
            Err(e) => return Ok(Err(e)),
        };
        if !again.accepted() {
            return Ok(Ok(again));
        }
        let (seen, commit) =
            match self.check_witnesses(task, &again, asked.diff, asked.validators, attempt)? {
                Ok(checked) => checked,
                Err(why) => return Ok(Ok(unkept(again, task, why))),
            };
        let missing = evidence::unwitnessed(task.criteria.len(), &seen);
        let gate = if missing.is_empty() { EvidenceGate::Seen } else { EvidenceGate::Held };
        again.checked = Some(Evidence { seen, unwitnessed: missing, gate, commit, unkept: None });
        Ok(Ok(again))
    }

    /// Runs the validators on the attempt as it stands, kept first so what they check is
    /// what is judged. Returns their output when they pass, else what the worker reads.
    fn check(
        &mut self,
        task: &Task,
        diff: &DiffInfo,
        sc: &Scope,
        attempt: u64,
        iter: u64,
    ) -> Result<Checks> {
        let tests = self.selected_tests(task);
        let kept = match self.keep_work(
            &format!("{}/{}-checks-{iter}", task.id, attempt),
            &diff.base,
            &format!("{} attempt {}, as checked at iteration {iter}", task.id, attempt),
        )? {
            Ok(kept) => kept,
            Err(why) => {
                let end = self.hold(&task.id, &why, attempt)?;
                return Ok(Checks::Answered(
                    "The checks could not be completed; stop here.".into(),
                    Some(end),
                ));
            }
        };
        self.guard_before();
        let v = validators::run_all(
            &self.shared.opts.validators,
            &self.hands,
            &tests,
            sc,
            Some(&kept),
            false,
            &mut self.writer,
        )?;
        let put_back = match self.guard_git(&task.id, sc, "validators")? {
            Guarded::Clean => None,
            Guarded::PutBack(note) => Some(note),
            Guarded::Held(end) => {
                return Ok(Checks::Answered(
                    "The checks could not be completed; stop here.".into(),
                    Some(TaskEnd::Stop(end)),
                ));
            }
        };
        if let Some(report) = v.report {
            let report = match put_back {
                Some(note) => format!("{report}\n\n{note}"),
                None => report,
            };
            self.shared
                .records
                .update(&task.id, |r| r.last_outcome = Some(LastOutcome::ValidatorsFailed));
            self.gate(&task.id, GateEvent::ValidatorsFailed, "validators failed", attempt)?;
            self.feedback(sc, "validators", &report)?;
            return Ok(Checks::Answered(report, None));
        }
        let joined: Vec<String> = v
            .results
            .iter()
            .map(|r| {
                format!(
                    "$ {}\n{}",
                    r.command.as_deref().unwrap_or(&r.name),
                    r.output.as_deref().unwrap_or("")
                )
            })
            .collect();
        let names = v.results.iter().map(|r| r.name.clone()).collect();
        Ok(Checks::Passed(joined.join("\n"), names))
    }

    /// The task's change, read a second time before giving up: a path the worker's last
    /// command left changing can make one read fail.
    pub(super) fn task_diff(&self, base: &str) -> Result<DiffInfo, WorkspaceError> {
        match self.workspace.diff_from(base) {
            Err(e) if !matches!(e, WorkspaceError::SpecialFile(..)) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
                self.workspace.diff_from(base)
            }
            other => other,
        }
    }

    /// The tests the validators run for `task`: those of every task accepted so far, then its
    /// own, each once.
    pub(super) fn selected_tests(&self, task: &Task) -> Vec<String> {
        let mut tests: Vec<String> = Vec::new();
        let done = self
            .shared
            .plan
            .tasks
            .iter()
            .filter(|t| t.id != task.id && self.shared.records.state(&t.id).is_accepted());
        for t in done.chain(std::iter::once(task)) {
            for path in &t.tests {
                if !tests.contains(path) {
                    tests.push(path.clone());
                }
            }
        }
        tests
    }

    /// Records a verdict in the ledger and lets the gate act on it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn judged(
        &mut self,
        task: &Task,
        case: &Case,
        verdict: &Verdict,
        diff: &DiffInfo,
        sc: &Scope,
        attempt: &mut u64,
        iter: u64,
    ) -> Result<(String, Option<TaskEnd>)> {
        let mut event = Self::verdict_event(verdict, diff, sc);
        // The verdict is logged (and an accept stays durable, to land by its digest on a
        // resume) even when the work it judged could not be kept; the task then waits.
        let witnessed = verdict.checked.as_ref().and_then(|c| c.commit.clone());
        let unkept = if diff.is_empty() {
            event.by_harness = Some(true);
            None
        } else if let Some(kept) = witnessed {
            // Kept already, as its witnesses were checked on it.
            event.attempt_commit = Some(kept);
            None
        } else {
            match self.keep_work(
                &format!("{}/{}", task.id, *attempt),
                &diff.base,
                &format!("{} attempt {}, as judged", task.id, *attempt),
            )? {
                Ok(kept) => {
                    event.attempt_commit = Some(kept);
                    None
                }
                Err(why) => Some(why),
            }
        };
        if verdict.below_threshold {
            event.below_threshold = Some(true);
        }
        self.emit(&event)?;
        // The work that went on from a rewind is judged: a restart goes on from this attempt.
        self.shared.records.update(&task.id, |r| r.rewind = None);
        let entry = LedgerEntry {
            ts: timestamp::now(),
            iter,
            attempt: *attempt,
            diff_summary: diff.summary(),
            case: Some(case.clone()),
            verdict: verdict.clone(),
        };
        record::append_ledger(&self.shared.dir, &task.id, &entry)?;
        self.emit(&crate::session::event::LedgerAppended {
            scope: sc.clone(),
            verdict_summary: Some(verdict.summary()),
            ..Default::default()
        })?;
        self.writer.sync()?;
        if self.candidate.is_some() {
            // One of a best-of task's attempts: weighed with the others by the task's lane.
            let text = if verdict.accepted() { "Accepted.".to_owned() } else { verdict.feedback() };
            let last_seq = self.writer.append(&crate::session::event::FeedbackSent {
                scope: sc.clone(),
                kind: Some(crate::session::vocabulary::FeedbackKind::Verdict.as_str().to_owned()),
                content: Some(text.clone()),
                ..Default::default()
            })?;
            let judged = super::candidacy::Judged {
                verdict: verdict.clone(),
                case: case.clone(),
                digest: diff.digest.clone(),
                summary: diff.summary(),
                changed: diff.files.iter().map(|f| (f.stat.added + f.stat.deleted) as u64).sum(),
                patch: diff.patch(),
                kept: event.attempt_commit.clone().filter(|_| unkept.is_none()),
                last_seq,
            };
            if let Some(c) = self.candidate.as_mut() {
                c.judged = Some(judged);
            }
            return Ok((text, Some(TaskEnd::Judged)));
        }
        if let Some(why) = unkept {
            let end = self.hold(&task.id, &why, *attempt)?;
            return Ok(("The review could not be completed; stop here.".into(), Some(end)));
        }
        let outcome = verdict.outcome();
        self.shared.records.update(&task.id, |r| r.last_outcome.clone_from(&outcome));
        let Some(outcome) = outcome else {
            if let Some(e) = verdict.checked.as_ref().filter(|e| e.gate == EvidenceGate::Held) {
                let why = match &e.unkept {
                    Some(why) => {
                        format!("the attempt could not be kept to check its witnesses on: {why}")
                    }
                    None => evidence::without_evidence(&task.criteria, &e.unwitnessed),
                };
                let end = self.hold(&task.id, &why, *attempt)?;
                return Ok(("The review could not be completed; stop here.".into(), Some(end)));
            }
            self.gate(&task.id, GateEvent::Accepted, "the evaluator accepted", *attempt)?;
            return Ok((
                "Accepted.".into(),
                Some(TaskEnd::Accepted(Acceptance {
                    review: Review::Accepted,
                    by_operator: false,
                    last: None,
                    summary: case.summary.clone(),
                    judged: Some(diff.digest.clone()),
                })),
            ));
        };
        if *attempt >= self.shared.cap_for(&task.id) {
            return Ok(match self.shared.opts.on_cap {
                OnCap::Fail => (
                    "Rejected at the rework cap.".into(),
                    Some(TaskEnd::Failed(StopReason::EvaluatorCap)),
                ),
                OnCap::ForceAccept => {
                    self.gate(
                        &task.id,
                        GateEvent::ForceAccepted,
                        "rework cap reached; accepted below the bar by policy",
                        *attempt,
                    )?;
                    let end = TaskEnd::Accepted(Acceptance {
                        review: Review::BelowBar,
                        by_operator: false,
                        last: Some(outcome),
                        summary: case.summary.clone(),
                        judged: Some(diff.digest.clone()),
                    });
                    ("Accepted below the bar.".into(), Some(end))
                }
            });
        }
        self.gate(&task.id, GateEvent::Rejected, &verdict.summary(), *attempt)?;
        *attempt += 1;
        self.gate(&task.id, GateEvent::ReworkStarted, "rework in the same conversation", *attempt)?;
        self.escalate_if_due(&task.id, iter, *attempt)?;
        let text = with_queued(verdict.feedback(), &self.take_queued(&task.id));
        self.feedback(sc, "verdict", &text)?;
        Ok((text, None))
    }

    /// A verdict as the log records it: what the evaluator said, what it judged, and what
    /// harrow found of its witnesses.
    fn verdict_event(verdict: &Verdict, diff: &DiffInfo, sc: &Scope) -> VerdictEvent {
        let checked = verdict.checked.as_ref();
        VerdictEvent {
            scope: sc.clone(),
            schema_version: Some(1),
            verdict: Some(verdict.verdict.as_str().to_owned()),
            rejection_category: verdict.rejection_category.clone(),
            concern: Some(verdict.concern.clone()),
            evidence: Some(verdict.evidence.clone()),
            next_step: verdict.next_step.clone(),
            parse_failed: verdict.parse_failed.then_some(true),
            score: verdict.score,
            diff_digest: Some(diff.digest.clone()),
            base_commit: Some(diff.base.clone()),
            diff_summary: Some(diff.summary()),
            witnesses: checked.map(|c| c.seen.clone()),
            unwitnessed: checked.map(|c| c.unwitnessed.clone()),
            evidence_gate: checked.map(|c| c.gate),
            witnessed_commit: checked.and_then(|c| c.commit.clone()),
            ..VerdictEvent::default()
        }
    }

    /// Asks the evaluator, with one retry for an unparseable answer. An error (unreachable,
    /// a refused key …) is neither accept nor reject: a person must decide. `sent_back`:
    /// what harrow found of its last accept's witnesses, when it is asked again for them.
    pub(super) async fn evaluate(
        &mut self,
        task: &Task,
        asked: &Asked<'_>,
        sc: &Scope,
        attempt: u64,
        iter: u64,
        sent_back: Option<&str>,
    ) -> Result<Result<Verdict, BrainError>> {
        let (case, diff, validator_output) = (asked.case, asked.diff, asked.validator_output);
        let project = memory::project_context(&self.hands.jail, &self.shared.opts.context_files);
        let ledger = self.ledger_standing(&task.id);
        let seed_tests: Vec<(String, String)> = task
            .tests
            .iter()
            .filter_map(|t| {
                self.hands
                    .jail
                    .read_for_harness(t, memory::HARNESS_READ_MAX_BYTES)
                    .ok()
                    .map(|c| (t.clone(), c))
            })
            .collect();
        let earlier_files = self.workspace.earlier_files()?;
        let asked = self.asked_during(&task.id, attempt);
        let prompt = memory::evaluator_prompt(&EvaluatorInputs {
            plan: &self.shared.plan,
            task,
            project: project.as_ref().map(|(t, _)| t.as_str()),
            ledger: &ledger,
            case,
            diff,
            earlier_files: &earlier_files,
            validator_output,
            seed_tests: &seed_tests,
            score_threshold: self.shared.opts.score_threshold,
            operator_asked: &asked,
            // Half the evaluator's window at most, as characters at 3.5 a token.
            diff_max_chars: self.shared.opts.evaluator_window.map_or(memory::DIFF_MAX_CHARS, |w| {
                ((w as f64 * crate::harness::compact::CHARS_PER_TOKEN / 2.0) as usize)
                    .min(memory::DIFF_MAX_CHARS)
            }),
        });
        let prompt = match sent_back {
            Some(note) => format!("{prompt}\n\n## harrow's check of your accept\n\n{note}"),
            None => prompt,
        };
        self.log_prompt(sc, "evaluator", &prompt)?;
        let mut messages = vec![
            json!({"role": "system", "content": EVALUATOR_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let tools = vec![verdict::schema(self.shared.opts.score_threshold.is_some())];
        // A second asking is the evaluator's next turns on this attempt.
        let first = if sent_back.is_some() { 2 } else { 0 };
        for try_n in 0..2usize {
            let reply = match self
                .call(
                    CallTag { role: Role::Evaluator, task: &task.id, attempt, turn: first + try_n },
                    iter,
                    &messages,
                    &tools,
                )
                .await?
            {
                Ok(reply) => reply,
                Err(e) => return Ok(Err(e)),
            };
            let calls: Vec<&ToolCallRecord> = reply
                .tool_calls
                .iter()
                .filter(|c| crate::session::vocabulary::ToolName::SubmitVerdict.is(Some(&c.name)))
                .collect();
            let threshold = self.shared.opts.score_threshold;
            let answers: Vec<Result<Verdict, String>> =
                calls.iter().map(|c| verdict::parse_held(&c.arguments, threshold)).collect();
            if let Some(v) = answers.iter().find_map(|a| a.as_ref().ok()) {
                return Ok(Ok(v.clone()));
            }
            let last_error = match answers.into_iter().next() {
                Some(answer) => answer.err().unwrap_or_default(),
                None => "no submit_verdict call in the reply".into(),
            };
            let raw: Vec<Value> = reply
                .tool_calls
                .iter()
                .map(|c| json!({"name": c.name, "arguments": c.arguments}))
                .collect();
            let mut event = ParseError {
                scope: sc.clone(),
                error: Some(last_error.clone()),
                raw_tool_calls: Some(Value::Array(raw)),
                ..ParseError::default()
            };
            event.parse_attempt = Some(u64::try_from(try_n).unwrap_or(u64::MAX).saturating_add(1));
            self.emit(&EvaluatorParseError(event))?;
            messages.push(reply.history_message());
            let retry = format!(
                "Your verdict could not be used: {last_error}. Call submit_verdict once with valid arguments."
            );
            if reply.tool_calls.is_empty() {
                messages.push(json!({"role": "user", "content": retry}));
            } else {
                for c in &reply.tool_calls {
                    messages.push(tool_message(&c.id, &retry));
                }
            }
        }
        Ok(Ok(Verdict::parse_failed()))
    }
}

/// An accept whose attempt could not be kept to check its witnesses on (the work changed
/// under the check): held, saying why, with no witness taken for seen.
fn unkept(mut verdict: Verdict, task: &Task, why: String) -> Verdict {
    verdict.checked = Some(Evidence {
        seen: Vec::new(),
        unwitnessed: (1..=task.criteria.len() as u64).collect(),
        gate: EvidenceGate::Held,
        commit: None,
        unkept: Some(why),
    });
    verdict
}

/// What the evaluator is asked about: the case, the diff, and what the validators said.
pub(super) struct Asked<'a> {
    pub case: &'a Case,
    pub diff: &'a DiffInfo,
    pub validator_output: Option<&'a str>,
    /// The validators that ran on the attempt and passed, by name.
    pub validators: &'a [String],
}

/// A rework's brief with the words the operator queued for the attempt it starts.
pub(super) fn with_queued(brief: String, queued: &[String]) -> String {
    if queued.is_empty() {
        return brief;
    }
    let words: Vec<String> =
        queued.iter().map(|q| format!("> {}", q.replace('\n', "\n> "))).collect();
    format!("{brief}\n\nThe operator adds, for this attempt:\n\n{}", words.join("\n\n"))
}
