//! The worker's side of a task: a fresh conversation with its context, tool calls through
//! the hands, nudges for quiet turns, and `submit_case` handed to the review.

use super::{
    Acceptance, CallTag, ContextReset, Ended, GateEvent, Guarded, Hands, LedgerEntry, NUDGE,
    NUDGE_LENGTH, Nudge, OnCap, Review, Role, Run, Scope, Task, TaskEnd, ToolCall, ToolCallRecord,
    Value, WORKER_PROMPT, WorkerContext, case, io, json, memory, record, scope, tool_message,
};
use crate::session::state::StopReason;

impl Run {
    /// Takes the operator's notes meant for this task (or for whichever task runs next).
    pub(super) fn take_notes(&mut self, task: &str) -> Option<String> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.control.notes)
            .into_iter()
            .partition(|(t, _)| t.as_deref().is_none_or(|t| t == task));
        self.control.notes = rest;
        let texts: Vec<String> = mine.into_iter().map(|(_, n)| n).collect();
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    }

    pub(super) fn worker_prompt(
        &self,
        task: &Task,
        ledger: &[LedgerEntry],
        note: Option<&str>,
    ) -> String {
        let project = memory::project_context(&self.hands.jail, &self.opts.context_files);
        let progress = record::progress_tail(
            &self.dir,
            memory::PROGRESS_TAIL_LINES,
            memory::PROGRESS_MAX_CHARS,
        );
        let statuses: Vec<(String, crate::session::state::TaskState)> =
            self.states.iter().map(|(k, s)| (k.clone(), s.clone())).collect();
        let ctx = WorkerContext {
            project: project.as_ref().map(|(t, _)| t.as_str()),
            progress: progress.as_deref(),
            statuses: &statuses,
            ledger,
            warnings: &self.warnings,
            operator_note: note,
        };
        memory::worker_prompt(&self.plan, task, &ctx)
    }

    /// A task whose reviews already reached its cap is not worked again. A resume lands here
    /// when a crash fell between the last reject and its consequence (the cap policy is
    /// applied now), or on a task that failed at the cap and waits for a decision (the run
    /// stops and says which decisions there are).
    fn at_the_cap(&mut self, task: &Task, ledger: &[LedgerEntry]) -> io::Result<Option<TaskEnd>> {
        if let Some(why) = self.failed_waiting(&task.id, ledger.len() as u64) {
            return Ok(Some(TaskEnd::Stop(Ended {
                reason: StopReason::NeedsOperator,
                detail: Some(format!(
                    "task {} {why}; decide with `harrow control` (approve, force-accept, reject --text for another attempt, or skip), or leave it failed",
                    task.id
                )),
            })));
        }
        let rejected_last = ledger.last().is_some_and(|e| !e.verdict.accepted());
        if (ledger.len() as u64) < self.cap_for(&task.id) || !rejected_last {
            return Ok(None);
        }
        let last = ledger.last().and_then(|e| e.verdict.outcome());
        Ok(Some(match self.opts.on_cap {
            OnCap::Fail => TaskEnd::Failed(StopReason::EvaluatorCap),
            OnCap::ForceAccept => {
                let reason = "rework cap reached; accepted below the bar by policy";
                self.gate(&task.id, GateEvent::ForceAccepted, reason, ledger.len() as u64)?;
                TaskEnd::Accepted(Acceptance {
                    review: Review::BelowBar,
                    by_operator: false,
                    last,
                    summary: ledger
                        .last()
                        .and_then(|e| e.case.as_ref())
                        .map(|c| c.summary.clone())
                        .unwrap_or_default(),
                    judged: None,
                })
            }
        }))
    }

    /// One task, from a fresh conversation to accept, failure or a stop.
    pub(super) async fn run_task(&mut self, task: &Task) -> io::Result<TaskEnd> {
        let ledger = record::read_ledger(&self.dir, &task.id);
        if let Some(end) = self.at_the_cap(task, &ledger)? {
            return Ok(end);
        }
        let mut attempt = ledger.len() as u64 + 1;
        self.gate(&task.id, GateEvent::Start, "task started", attempt)?;
        let base = match self.task_bases.get(&task.id) {
            Some(base) => base.clone(),
            None => self.workspace.tip().map_err(io::Error::other)?,
        };
        self.task_bases.insert(task.id.clone(), base.clone());
        self.emit(&ContextReset {
            scope: Scope {
                task_id: Some(task.id.clone()),
                attempt: Some(attempt),
                ..Scope::default()
            },
            base_commit: Some(base),
            ..ContextReset::default()
        })?;
        let note = self.take_notes(&task.id);
        let prompt = self.worker_prompt(task, &ledger, note.as_deref());
        self.log_prompt(&scope(&task.id, 0, attempt), "worker", &prompt)?;
        let mut messages = vec![
            json!({"role": "system", "content": WORKER_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let mut tools = Hands::schemas();
        tools.push(case::schema());
        let mut quiet = 0u64;
        let mut turn = 0usize;
        for iter in 1..=self.opts.max_iterations {
            let answer = self
                .call(
                    CallTag { role: Role::Worker, task: &task.id, attempt, turn },
                    iter,
                    &messages,
                    &tools,
                )
                .await?;
            if let Some(end) = self.act_now(&task.id)? {
                return Ok(end);
            }
            let reply = match answer {
                Ok(r) => r,
                Err(e) => {
                    let reason = if e.is_transient() {
                        StopReason::ProviderFailure
                    } else {
                        StopReason::Error
                    };
                    return Ok(TaskEnd::Stop(Ended { reason, detail: Some(e.to_string()) }));
                }
            };
            turn += 1;
            messages.push(reply.history_message());
            let (cases, work): (Vec<&ToolCallRecord>, Vec<&ToolCallRecord>) =
                reply.tool_calls.iter().partition(|c| c.name == "submit_case");
            let sc = scope(&task.id, iter, attempt);
            for call in &work {
                // Only a command can reach git; the file tools are confined away from `.git`.
                let guarded = Hands::runs_commands(&call.name);
                if guarded {
                    self.guard_before();
                }
                let mut output = match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(args) => {
                        self.hands
                            .call(&sc, Some(&call.id), &call.name, &args, &mut self.writer)?
                            .output
                    }
                    Err(e) => {
                        self.emit(&ToolCall {
                            scope: sc.clone(),
                            tool: Some(call.name.clone()),
                            args: Some(json!("(unparseable JSON)")),
                            call_id: Some(call.id.clone()),
                            ..ToolCall::default()
                        })?;
                        if reply.finish_reason.as_deref() == Some("length") {
                            format!(
                                "ERROR: {}: your reply was cut off by the output length limit before these arguments were complete; nothing was run. Send a smaller change, one tool call at a time.",
                                call.name
                            )
                        } else {
                            format!(
                                "ERROR: {}: the arguments are not valid JSON ({e}); send one JSON object",
                                call.name
                            )
                        }
                    }
                };
                if guarded {
                    match self.guard_git(&task.id, &sc, &call.name)? {
                        Guarded::Clean => {}
                        Guarded::PutBack(note) => output = format!("{output}\n{note}"),
                        Guarded::Held(end) => return Ok(TaskEnd::Stop(end)),
                    }
                }
                messages.push(tool_message(&call.id, &output));
                if let Some(end) = self.act_now(&task.id)? {
                    return Ok(end);
                }
            }
            let Some(first) = cases.first() else {
                if work.is_empty() {
                    quiet += 1;
                    if quiet >= self.opts.max_quiet_turns {
                        return Ok(TaskEnd::Failed(StopReason::NoCase));
                    }
                    let (kind, text) = if reply.finish_reason.as_deref() == Some("length") {
                        ("length", NUDGE_LENGTH)
                    } else {
                        ("no_case", NUDGE)
                    };
                    self.emit(&Nudge {
                        scope: sc.clone(),
                        kind: Some(kind.into()),
                        streak: Some(quiet),
                        content: Some(text.into()),
                        ..Nudge::default()
                    })?;
                    messages.push(json!({"role": "user", "content": text}));
                } else {
                    quiet = 0;
                }
                continue;
            };
            quiet = 0;
            for dup in cases.iter().skip(1) {
                messages.push(tool_message(
                    &dup.id,
                    "Duplicate submit_case ignored; the first one in this reply is being reviewed.",
                ));
            }
            let before = attempt;
            let (result, end) = self.review(task, first, &sc, &mut attempt, iter).await?;
            if end.is_none()
                && let Some(now) = self.act_now(&task.id)?
            {
                return Ok(now);
            }
            if attempt != before {
                turn = 0;
            }
            messages.push(tool_message(&first.id, &result));
            if let Some(end) = end {
                return Ok(end);
            }
        }
        Ok(TaskEnd::Failed(StopReason::IterCap))
    }
}
