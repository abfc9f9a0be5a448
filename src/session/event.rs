//! The typed event model: one envelope, one payload type per event name.
//!
//! Every Tilth event of every era and every harrow event has a payload struct here. Readers must
//! never fail on a well-formed line: fields a struct does not name are kept in `extra`, a payload
//! whose known fields have unexpected types, and any type this build does not know, are kept as
//! [`Payload::Raw`] JSON so the console can still show them.

use super::state::Ruling;
pub use super::weighed::{CandidateSeen, EvidenceGate, WitnessSeen};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Fields a payload does not name, kept verbatim so nothing written by a newer or older writer
/// is lost when an event is displayed or rewritten.
pub type Extra = Map<String, Value>;

/// Where in the run an event happened. Tilth and harrow stamp these on every per-task event;
/// older eras omit some of them, so every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iter: Option<u64>,
    /// harrow only: the evaluator round within the task (1 for the first case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
}

/// One line of `events.jsonl`, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The timestamp as written: seconds (Tilth) or milliseconds (harrow), always UTC.
    pub ts: Option<String>,
    /// harrow's per-session sequence number; Tilth logs have none and file order is the order.
    pub seq: Option<u64>,
    /// The lane that ran the task this event belongs to, in a run with lanes; absent in a
    /// one-lane run, a session from before lanes and Tilth's logs.
    pub lane: Option<u64>,
    /// The event name exactly as written.
    pub kind: String,
    pub payload: Payload,
}

macro_rules! payloads {
    ($( $name:literal => $variant:ident($ty:ident) ),* $(,)?) => {
        /// A decoded payload. `Raw` holds anything this build cannot type: an unknown event name,
        /// or a known name whose payload does not fit its struct.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Payload {
            $( $variant($ty), )*
            Raw(Value),
        }

        /// Every event name harrow writes or reads, so that a fold matching on the kind is told
        /// by the compiler when a new one is added. Names this build does not know (a newer
        /// writer's) have no kind and are kept as [`Payload::Raw`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $( $variant, )*
        }

        impl EventKind {
            /// Every kind, in the order the vocabulary lists them.
            pub const ALL: &'static [EventKind] = &[$( EventKind::$variant, )*];

            /// The name written as the line's `type`.
            pub fn name(self) -> &'static str {
                match self {
                    $( EventKind::$variant => $name, )*
                }
            }

            /// The payload field names written under this kind: what a sparse reader may
            /// ask for.
            pub fn fields(self) -> &'static [&'static str] {
                match self {
                    $( EventKind::$variant => $ty::FIELDS, )*
                }
            }

            /// The kind a written `type` names, if this build knows it.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name {
                    $( $name => Some(EventKind::$variant), )*
                    _ => None,
                }
            }
        }

        $( impl Record for $ty { const KIND: EventKind = EventKind::$variant; } )*

        impl Payload {
            fn decode(kind: &str, raw: &str) -> Payload {
                let typed = match kind {
                    $( $name => serde_json::from_str::<$ty>(raw).map(Payload::$variant), )*
                    _ => return Payload::Raw(serde_json::from_str(raw).unwrap_or(Value::Null)),
                };
                typed.unwrap_or_else(|_| Payload::Raw(serde_json::from_str(raw).unwrap_or(Value::Null)))
            }

            fn to_value(&self) -> serde_json::Result<Value> {
                match self {
                    $( Payload::$variant(p) => serde_json::to_value(p), )*
                    Payload::Raw(v) => Ok(v.clone()),
                }
            }

            /// The kind of a typed payload; `None` for [`Payload::Raw`].
            pub fn kind(&self) -> Option<EventKind> {
                match self {
                    $( Payload::$variant(_) => Some(EventKind::$variant), )*
                    Payload::Raw(_) => None,
                }
            }
        }
    };
}

/// A payload type and the one event name it is written under: what the session writer takes,
/// so no event is ever appended under a misspelt or mismatched name.
pub trait Record: Serialize {
    const KIND: EventKind;
}

payloads! {
    "session_start" => SessionStart(SessionStart),
    "session_resume" => SessionResume(SessionResume),
    "context_reset" => ContextReset(ContextReset),
    "memory_load" => MemoryLoad(MemoryLoad),
    "prompt_assembled" => PromptAssembled(PromptAssembled),
    "model_call" => ModelCall(ModelCall),
    "assistant_message" => AssistantMessage(AssistantMessage),
    "tool_call" => ToolCall(ToolCall),
    "hook_run" => HookRun(HookRun),
    "tool_result" => ToolResult(ToolResult),
    "pre_tool_block" => PreToolBlock(PreToolBlock),
    "nudge" => Nudge(Nudge),
    "loop_detected" => LoopDetected(LoopDetected),
    "case_parse_error" => CaseParseError(CaseParseError),
    "evaluator_parse_error" => EvaluatorParseError(EvaluatorParseError),
    "evaluator_verdict" => Verdict(Verdict),
    "ledger_appended" => LedgerAppended(LedgerAppended),
    "validator_run" => ValidatorRun(ValidatorRun),
    "feedback_sent" => FeedbackSent(FeedbackSent),
    "task_state" => TaskState(TaskState),
    "task_done" => TaskDone(TaskDone),
    "task_failed" => TaskFailed(TaskFailed),
    "commit" => Commit(Commit),
    "operator_action" => OperatorAction(OperatorAction),
    "operator_wait" => OperatorWait(OperatorWait),
    "operator_steer" => OperatorSteer(OperatorSteer),
    "operator_queue" => OperatorQueue(OperatorQueue),
    "turn_tree" => TurnTree(TurnTree),
    "task_rewound" => TaskRewound(TaskRewound),
    "operator_review" => OperatorReview(OperatorReview),
    "context_compacted" => ContextCompacted(ContextCompacted),
    "model_switch" => ModelSwitch(ModelSwitch),
    "best_of" => BestOf(BestOf),
    "log_repaired" => LogRepaired(LogRepaired),
    "stop" => Stop(Stop),
    "archived" => Archived(Archived),
    "judge_verdict" => JudgeVerdict(JudgeVerdict),
    "proposed_learnings" => ProposedLearnings(ProposedLearnings),
    "agents_md_update" => AgentsMdUpdate(AgentsMdUpdate),
    "empty_model_response" => EmptyModelResponse(EmptyModelResponse),
    "session_prepared" => SessionPrepared(SessionPrepared),
    "seed_committed" => SeedCommitted(SeedCommitted),
    "plan_written" => PlanWritten(PlanWritten),
    "push" => Push(Push),
    "pull_request" => PullRequest(PullRequest),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    lane: Option<u64>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

/// Why a line is not an event.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not UTF-8")]
    NotUtf8,
    #[error("not an event object: {0}")]
    Json(#[from] serde_json::Error),
}

impl Event {
    /// Decodes one line (without its newline). Fails only when the line is not a JSON object
    /// with a string `type`; anything else about the payload is tolerated.
    pub fn decode(line: &[u8]) -> Result<Event, DecodeError> {
        let text = std::str::from_utf8(line).map_err(|_| DecodeError::NotUtf8)?;
        let env: Envelope<'_> = serde_json::from_str(text)?;
        let payload = match env.payload {
            Some(raw) => Payload::decode(&env.kind, raw.get()),
            None => Payload::Raw(Value::Null),
        };
        Ok(Event { ts: env.ts, seq: env.seq, lane: env.lane, kind: env.kind, payload })
    }

    /// The payload as JSON, with unknown fields included, for raw display and re-encoding.
    pub fn payload_value(&self) -> Value {
        self.payload.to_value().unwrap_or(Value::Null)
    }

    /// The task this event belongs to, when it belongs to one.
    pub fn task_id(&self) -> Option<&str> {
        match &self.payload {
            Payload::Raw(v) => v.get("task_id").and_then(Value::as_str),
            other => other.scope().and_then(|s| s.task_id.as_deref()),
        }
    }
}

impl Verdict {
    /// What the verdict decided; `None` for a word that is neither accept nor reject.
    pub fn ruling(&self) -> Option<Ruling> {
        self.verdict.as_deref().and_then(Ruling::read)
    }
}

impl OperatorReview {
    /// What the operator's review decided; `None` for a word that is neither accept nor
    /// reject.
    pub fn ruling(&self) -> Option<Ruling> {
        self.verdict.as_deref().and_then(Ruling::read)
    }
}

impl Payload {
    /// What a verdict decided: the evaluator's (`evaluator_verdict`) or Tilth's judge's
    /// (`judge_verdict`); `None` for any other event.
    pub fn ruling(&self) -> Option<Ruling> {
        match self {
            Payload::Verdict(v) => v.ruling(),
            Payload::JudgeVerdict(v) => {
                Some(if v.accept == Some(true) { Ruling::Accept } else { Ruling::Reject })
            }
            _ => None,
        }
    }

    /// The task scope, for payload types that carry one.
    pub fn scope(&self) -> Option<&Scope> {
        Some(match self {
            Payload::ContextReset(p) => &p.scope,
            Payload::MemoryLoad(p) => &p.scope,
            Payload::PromptAssembled(p) => &p.scope,
            Payload::ModelCall(p) => &p.scope,
            Payload::AssistantMessage(p) => &p.scope,
            Payload::ToolCall(p) => &p.scope,
            Payload::HookRun(p) => &p.scope,
            Payload::ToolResult(p) => &p.scope,
            Payload::PreToolBlock(p) => &p.0.scope,
            Payload::Nudge(p) => &p.scope,
            Payload::LoopDetected(p) => &p.scope,
            Payload::CaseParseError(p) => &p.0.scope,
            Payload::EvaluatorParseError(p) => &p.0.scope,
            Payload::Verdict(p) => &p.scope,
            Payload::LedgerAppended(p) => &p.scope,
            Payload::ValidatorRun(p) => &p.scope,
            Payload::FeedbackSent(p) => &p.scope,
            Payload::TaskState(p) => &p.scope,
            Payload::TaskDone(p) => &p.scope,
            Payload::TaskFailed(p) => &p.scope,
            Payload::Commit(p) => &p.scope,
            Payload::JudgeVerdict(p) => &p.scope,
            Payload::ProposedLearnings(p) => &p.scope,
            Payload::AgentsMdUpdate(p) => &p.scope,
            Payload::EmptyModelResponse(p) => &p.scope,
            Payload::OperatorAction(p) => &p.scope,
            Payload::OperatorWait(p) => &p.scope,
            Payload::OperatorSteer(p) => &p.scope,
            Payload::OperatorQueue(p) => &p.scope,
            Payload::TurnTree(p) => &p.scope,
            Payload::TaskRewound(p) => &p.scope,
            Payload::OperatorReview(p) => &p.scope,
            Payload::ContextCompacted(p) => &p.scope,
            Payload::ModelSwitch(p) => &p.scope,
            Payload::BestOf(p) => &p.scope,
            Payload::SessionStart(_)
            | Payload::SessionResume(_)
            | Payload::LogRepaired(_)
            | Payload::Stop(_)
            | Payload::Archived(_)
            | Payload::SessionPrepared(_)
            | Payload::SeedCommitted(_)
            | Payload::PlanWritten(_)
            | Payload::Push(_)
            | Payload::PullRequest(_)
            | Payload::Raw(_) => return None,
        })
    }
}

/// Encodes an event as one `events.jsonl` line, without the newline.
pub fn encode_line<P: Record>(
    ts: &str,
    seq: u64,
    lane: Option<u64>,
    payload: &P,
) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Out<'a, P> {
        ts: &'a str,
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        lane: Option<u64>,
        #[serde(rename = "type")]
        kind: &'a str,
        payload: &'a P,
    }
    serde_json::to_vec(&Out { ts, seq, lane, kind: P::KIND.name(), payload })
}

macro_rules! payload_struct {
    ($(#[$meta:meta])* $name:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? } scoped) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            #[serde(flatten)]
            pub scope: Scope,
            $( $(#[$fmeta])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
            #[serde(flatten)]
            pub extra: Extra,
        }

        impl $name {
            /// The names the payload's own fields are written under (its scope's too).
            pub const FIELDS: &'static [&'static str] = &[
                "task_id", "trace_id", "span_id", "iter", "attempt", $( stringify!($field), )*
            ];
        }
    };
    ($(#[$meta:meta])* $name:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            $( $(#[$fmeta])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
            #[serde(flatten)]
            pub extra: Extra,
        }

        impl $name {
            /// The names the payload's fields are written under.
            pub const FIELDS: &'static [&'static str] = &[$( stringify!($field), )*];
        }
    };
}

/// A payload written under a name of its own but shaped like another: the same fields on the
/// line, a distinct type for the writer and the folds.
macro_rules! payload_newtype {
    ($(#[$meta:meta])* $name:ident($inner:ident)) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The same fields as the payload it is shaped like.
            pub const FIELDS: &'static [&'static str] = $inner::FIELDS;
        }

        impl std::ops::Deref for $name {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }
    };
}

payload_struct!(
    /// A run began: where, on what plan, with which models and limits.
    SessionStart {
        source: String, feature_dir: String, feature: String, phase: String, worktree: String,
        branch: String, worker_model: String, evaluator_model: String, base_url: String,
        limits: Value, task_count: u64,
        /// harrow: the plan file or folder the run was started from.
        plan: String,
        /// harrow: the session id, so a moved folder still names itself.
        session_id: String,
        /// harrow: the commit the session branch was cut from.
        base_commit: String,
        /// harrow: true when the evaluator is switched off and work goes unreviewed.
        no_eval: bool,
        /// harrow: the plan's tasks in order, `[{"id", "title"}]`, so readers can list the
        /// ones not yet begun.
        plan_tasks: Value,
        /// harrow: each role's endpoint as recorded (`base_url`, `model`, `key_var`), so a
        /// resume talks to the same models.
        endpoints: Value,
        /// harrow: the `prep` interview that wrote the plan, when one did.
        prep_session: String,
        /// harrow: the sandbox the worker's commands run in (`bubblewrap`, `landlock`, `off`).
        sandbox: String,
        /// harrow: the sandbox in a sentence, for `show`.
        sandbox_detail: String,
        /// harrow: the validator commands of the run, so a resume runs the same ones.
        validators: Value,
        /// harrow: what creating the session had to say (a reused branch, a cleaned folder).
        notices: Vec<String>,
        /// harrow: the feature's name as its overview's first heading says it (a pull
        /// request's title), where the folder's name is only a file name.
        title: String,
        /// harrow: set by `harrow demo` (`{"fast": bool}`).
        demo: Value,
        /// harrow: the machine the run works on, so a fleet watching a shared folder can say
        /// where each run is.
        host: String,
    }
);
payload_struct!(
    /// A stopped session was picked up again.
    SessionResume {
        session_id: String, last_stop: String, retried: Vec<String>, pending: Vec<String>,
        unwound_commit: bool, plan: String,
        /// harrow: accepted tasks whose commit was made again on resume.
        repaired_commits: Value,
        /// harrow: accepts found in the log that were landed on resume.
        honoured_accepts: Value,
        /// harrow: endpoints given on the command line instead of the recorded ones.
        endpoint_overrides: Value,
        /// harrow: uncommitted work set aside when the run restarted a task.
        discarded: Value,
        /// harrow: the machine the run goes on on (it may not be where it started).
        host: String,
        /// harrow: git lock files the interrupted run left (no process had them open), removed
        /// so the worktrees can be used again.
        removed_locks: Value,
        /// harrow: the clone the run goes on in when it moved (`resume --repo`): its branch and
        /// kept attempts were brought from the session folder.
        source: String,
        /// harrow: the clone the run worked in before it moved.
        moved_from: String,
    }
);
payload_struct!(
    /// A task attempt started with a fresh worker conversation.
    ContextReset {
        /// harrow: the commit the task starts from, which its diff is measured against.
        base_commit: String,
        /// harrow: not a fresh conversation but one rewound by the operator: it goes on from
        /// the conversation as it stood at the event of this `seq`, with `operator_note` as
        /// the next message.
        continues_at: u64,
        /// harrow: the operator's words a rewound conversation goes on with.
        operator_note: String,
    } scoped
);
payload_struct!(
    /// Which memory channels were loaded into the worker prompt, and how large they were.
    MemoryLoad { trigger: String, channels: Value, user_prompt_chars: u64 } scoped
);
payload_struct!(
    /// The user prompt sent to a role (capped in the log; `chars` is the full length).
    PromptAssembled { role: String, content: String, chars: u64, truncated: bool } scoped
);
payload_struct!(
    /// One request to a model endpoint, with its usage and health.
    ModelCall {
        phase: String, call_attempt: u64, prompt_tokens: u64, eval_tokens: u64,
        cached_tokens: u64, reasoning_tokens: u64, cost: f64, tokens_used_total: u64,
        health: String, health_detail: String, retry_backoff_seconds: f64, finish_reason: String,
        model: String, provider: String, response_id: String, reasoning: String,
        reasoning_details: Value,
        /// harrow: the role that made the call (worker, evaluator, learnings, prep).
        role: String,
        /// harrow: the server sent no usage; the token counts are estimated from characters.
        tokens_estimated: bool,
        /// harrow: wall time of the request in milliseconds.
        duration_ms: u64,
        /// harrow: the HTTP status of a request that failed.
        http_status: u64,
        /// harrow: what kind of failure it was (`unauthorized`, `unreachable`, `rejected`,
        /// `model_not_found`, `context_exceeded`, `empty`, `provider_error` …).
        error_class: String,
    } scoped
);
payload_struct!(
    /// harrow: the assistant's whole reply — prose, reasoning and tool calls — which Tilth never
    /// recorded.
    AssistantMessage {
        role: String, content: String, reasoning: String, tool_calls: Vec<ToolCallRecord>,
    } scoped
);
payload_struct!(
    /// A tool the worker asked for, with its parsed arguments.
    ToolCall {
        tool: String, args: Value, phase: String,
        /// harrow: the provider's id for the call, linking it to its result.
        call_id: String,
    } scoped
);
payload_struct!(
    /// One hook invocation: allowed, blocked, silent or warned.
    HookRun { tool: String, hook: String, outcome: String, reason: String } scoped
);
payload_struct!(
    /// A tool's result (`tool_result`) or a hook's refusal (`pre_tool_block`).
    ToolResult {
        tool: String, result_preview: String, result_chars: u64, phase: String,
        /// harrow: the output the model saw (capped at the harness's output cap).
        output: String,
        call_id: String,
        is_error: bool,
        duration_ms: u64,
    } scoped
);
payload_struct!(
    /// The worker went quiet and was told to submit its case.
    Nudge { kind: String, streak: u64, content: String } scoped
);
payload_struct!(
    /// The worker made the same tool call with the same arguments `times` in a row: at the
    /// threshold it was `nudged` (`content`: what it was told), past it the task was `held`.
    LoopDetected { tool: String, arguments: String, times: u64, action: String, content: String } scoped
);
payload_struct!(
    /// A `submit_case` or `submit_verdict` call that could not be parsed.
    ParseError {
        error: String, raw_tool_calls: Value,
        /// harrow: which try at a readable verdict this was (1 for the first).
        parse_attempt: u64,
    } scoped
);
payload_newtype!(
    /// A hook refused a tool call: written like a tool's result, under its own name.
    PreToolBlock(ToolResult)
);
payload_newtype!(
    /// The worker's `submit_case` could not be parsed.
    CaseParseError(ParseError)
);
payload_newtype!(
    /// The evaluator's `submit_verdict` could not be parsed.
    EvaluatorParseError(ParseError)
);
payload_struct!(
    /// The evaluator's verdict on a case.
    Verdict {
        schema_version: u64, verdict: String, rejection_category: String, concern: String,
        evidence: Vec<String>, next_step: String, parse_failed: bool, score: f64,
        /// harrow: digest of the exact diff the verdict judged.
        diff_digest: String,
        /// harrow: the commit the judged diff sits on top of.
        base_commit: String,
        /// harrow: the judged attempt, kept as a commit in the session's attempts.
        attempt_commit: String,
        /// harrow: the evaluator accepted, but scored under the bar, so the task is held.
        below_threshold: bool,
        /// harrow: the judged diff in a line (files, insertions, deletions).
        diff_summary: String,
        /// harrow: the harness judged (an empty diff), not the evaluator.
        by_harness: bool,
        /// harrow: each witness the evaluator cited, as harrow checked it.
        witnesses: Vec<WitnessSeen>,
        /// harrow: on an accept, the criteria (by number) no witness harrow saw stands for.
        unwitnessed: Vec<u64>,
        /// harrow: what the gate made of an accept's evidence.
        evidence_gate: EvidenceGate,
        /// harrow: the attempt as kept to check its witnesses on (a kept ref the log names).
        witnessed_commit: String,
    } scoped
);
payload_struct!(
    /// A verdict was appended to the task's ledger.
    LedgerAppended { verdict_summary: String } scoped
);
payload_struct!(
    /// Validators ran on a case. Tilth recorded only pass/fail per validator; harrow records the
    /// command, exit code, duration and capped output of each.
    ValidatorRun {
        passed: bool, results: Vec<ValidatorResult>,
        /// harrow: the attempt the validators ran on, kept as a commit.
        attempt_commit: String,
        /// harrow: they ran on an accepted change merged with work that landed meanwhile,
        /// before it lands (a run with lanes).
        combined: bool,
    } scoped
);
payload_struct!(
    /// harrow: the exact text returned to the worker as the `submit_case` result.
    FeedbackSent {
        kind: String,
        content: String,
        /// A lane brought up to the session branch after a merge: the task's change is
        /// measured from this commit from now on.
        base_commit: String,
        /// `merge`: the files where the accepted change and work that landed meanwhile both
        /// changed the same lines (none when they combine but fail the checks together).
        conflicts: Vec<String>,
    } scoped
);
payload_struct!(
    /// harrow: a task state transition made by the gate.
    TaskState { from: super::state::TaskState, to: super::state::TaskState, reason: String } scoped
);
payload_struct!(
    /// A task was accepted.
    TaskDone {
        summary: String,
        /// harrow: accepted at the rework cap without passing review.
        below_bar: bool,
        last_category: String,
        /// harrow: accepted by the operator rather than the evaluator.
        by_operator: bool,
        /// harrow: false when nobody reviewed the work (the run had `--no-eval`).
        reviewed: bool,
        /// harrow: for an accept below the bar, what last happened to the work
        /// (`not_reviewed`, `validators_failed`, `rejected`, `review_unreadable`,
        /// `below_threshold`).
        last_outcome: String,
    } scoped
);
payload_struct!(
    /// A task failed, with the reason and the counter that tripped.
    TaskFailed {
        reason: String, call_attempts: u64, nudges: u64, evaluator_calls: u64, streak: u64,
        judge_calls: u64, detail: String,
    } scoped
);
payload_struct!(
    /// The accepted work was committed on the session branch.
    Commit {
        sha: String, message: String,
        /// harrow: made again on resume, for an accept whose commit was lost.
        recovered: bool,
    } scoped
);
payload_struct!(
    /// harrow: a best-of task's attempts, worked at once, weighed: each candidate, the one
    /// that lands (`winner`) or, when none was accepted, the one reworked (`reworked`), how it
    /// was chosen and why.
    BestOf {
        candidates: Vec<CandidateSeen>,
        winner: u64,
        reworked: u64,
        /// `only_accept`, `evaluator`, `smaller_diff`, `best_rated`, `none`.
        chosen_by: String,
        why: String,
    } scoped
);
payload_struct!(
    /// harrow: something the operator did, with the reason they gave.
    OperatorAction {
        action: String, reason: String, note: String, source: String,
        /// harrow: how far the control file had been read when the action was taken.
        control_offset: u64,
        /// harrow: a retry that granted the task one more attempt over the cap.
        granted_attempt: bool,
        /// harrow: the commit uncommitted work was set aside to.
        set_aside: String,
    } scoped
);
payload_struct!(
    /// harrow: a task is held for a person and the run waits for the decision instead of
    /// stopping (the console drives it, or `--wait-for-operator`) — or, with `tool`, a task at
    /// work waits for the person to allow or deny what its agent asked permission for.
    OperatorWait { reason: String, tool: String } scoped
);
payload_struct!(
    /// harrow: the operator's words for the task at work (`steer`), put into its worker's
    /// conversation before the worker's next model request — or not, when the task ended
    /// first (`delivered` false, `reason` why).
    OperatorSteer { text: String, delivered: bool, reason: String, source: String } scoped
);
payload_struct!(
    /// harrow: the operator's words kept for a task (`queue`): its next attempt's brief, or its
    /// first turn when it has not begun (`until`: `next attempt`, `first turn`).
    OperatorQueue { text: String, until: String, source: String } scoped
);
payload_struct!(
    /// harrow: the worktree's files (new files not ignored included) as a git tree, taken
    /// before a worker request after a turn that could change them: the state turn `iter` left,
    /// which the operator can rewind the task to.
    TurnTree { tree: String } scoped
);
payload_struct!(
    /// harrow: the operator rewound a task to an attempt (`to_attempt`) or a turn
    /// (`to_turn`, within `to_attempt`): its worktree was set to that state's `tree`, the work
    /// it held was kept on `set_aside`, and the attempts after it are `rewound` (kept, no
    /// longer counted against the cap: `granted` more were allowed).
    TaskRewound {
        to_attempt: u64, to_turn: u64, tree: String, set_aside: String, rewound: Vec<u64>,
        granted: u64, reason: String, source: String,
        /// The `seq` of the last event of the conversation the task goes on from.
        continues_at: u64,
    } scoped
);
payload_struct!(
    /// harrow: the operator's review of a task's diff, logged like a verdict: `verdict`
    /// (`reject` with a `rejection_category`, or `accept`), what they said, and each comment at
    /// the line it is about.
    OperatorReview {
        verdict: String, rejection_category: String, reason: String,
        comments: Vec<ReviewedLine>, source: String,
    } scoped
);
payload_struct!(
    /// harrow: the worker's conversation was rebuilt to fit its model's window — before a
    /// request would pass `[models] compact_at` of it (`trigger` `threshold`), or after the
    /// server said the request was too long (`server`): the tokens before and after (as
    /// estimated), the window, what was kept, the message that replaced the dropped turns
    /// (`summary`, as the worker read it) and what was cut from the kept turns to fit.
    ContextCompacted {
        trigger: String, tokens_before: u64, tokens_after: u64, window: u64, dropped: u64,
        kept: Vec<String>, summary: String, cut: Vec<String>,
    } scoped
);
payload_struct!(
    /// harrow: a role's calls went to another endpoint from here on: its own had spent its
    /// tries (`why`), and the next of its `[models.<role>] fallback` took the call. Addresses
    /// only, never keys.
    ModelSwitch {
        role: String, from_model: String, from_base_url: String, to_model: String,
        to_base_url: String, why: String,
        /// `fallback` (the endpoint failed, or failed lately) or `escalation` (a stronger
        /// model after rejects).
        kind: String,
    } scoped
);
payload_struct!(
    /// harrow: a torn tail was cut back on resume.
    LogRepaired { cut_bytes: u64, at_offset: u64 }
);
payload_struct!(
    /// The loop stopped, and why.
    Stop { reason: String, error: String, task_id: String }
);
payload_struct!(
    /// The session's worktree and branch were removed; the log stays.
    Archived { branch: String, worktree: String }
);
payload_struct!(
    /// Era A/B: the judge's free-text verdict.
    JudgeVerdict { accept: bool, reasoning: String, raw: String } scoped
);
payload_struct!(
    /// Era B/C: the self-improvement step's proposal.
    ProposedLearnings { emitted: bool, entry: String, reason: String, raw: String } scoped
);
payload_struct!(
    /// Era A: the self-improvement step edited AGENTS.md.
    AgentsMdUpdate { applied: bool, section: String, entry: String, reason: String, raw: String } scoped
);
payload_struct!(
    /// Era C: the model answered with nothing.
    EmptyModelResponse { streak: u64, finish_reason: String, prompt_tokens: u64, eval_tokens: u64 } scoped
);
payload_struct!(
    /// Era B/C: `prep-feature` wrote the plan and seed tests.
    SessionPrepared {
        trace_id: String, interviewer_model: String, prd_entries: u64, test_files: u64,
        tokens_used: u64,
    }
);
payload_struct!(
    /// Era B/C: the seed tests were committed.
    SeedCommitted { sha: String, branch: String }
);

payload_struct!(
    /// harrow: `prep` wrote the plan the person accepted: the feature folder and its files.
    PlanWritten { feature: String, dir: String, tasks: u64, files: Vec<String> }
);

payload_struct!(
    /// harrow: the session branch was pushed to a remote (or the push failed, with `error`).
    Push {
        /// The remote's name, or its address when it was given as one (never credentials).
        remote: String,
        /// The remote's address with any user and password taken out.
        url: String,
        /// The branch's name on the remote.
        branch: String,
        /// The commit the remote branch was set to.
        sha: String,
        /// Pushed with `--force-with-lease` over a branch that had moved on.
        forced: bool,
        /// Pushed with `--partial`: some tasks had not finished.
        partial: bool,
        /// The remote branch was already at `sha`: nothing was sent.
        already_there: bool,
        /// Why the push failed, in one line.
        error: String,
    }
);
payload_struct!(
    /// harrow: a pull request (a merge request on GitLab) was opened for the pushed branch, or
    /// its body was written to a file for a person to paste (no token), or opening it failed.
    PullRequest {
        /// `github`, `gitlab` or `gitea`.
        forge: String,
        /// The pull request's address on the forge.
        url: String,
        number: u64,
        /// The branch it asks to merge, and the one it merges into.
        branch: String,
        base: String,
        draft: bool,
        /// Without a token: the forge's page to open it by hand, and the body's file.
        compare_url: String,
        body_file: String,
        /// The body was cut to the forge's limit.
        cut: bool,
        /// Why it could not be opened, in one line.
        error: String,
    }
);

/// One comment of an operator's review, at the line of the diff it is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewedLine {
    #[serde(default)]
    pub path: String,
    /// The line's number in the file as the task left it.
    #[serde(default)]
    pub line: u64,
    /// The line as it reads there.
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub comment: String,
}

/// One tool call inside an assistant message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// The arguments exactly as the model sent them (they may not be valid JSON).
    #[serde(default)]
    pub arguments: String,
}

/// One validator's outcome inside a `validator_run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidatorResult {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_type_keeps_unknown_fields() {
        let line = br#"{"ts":"2026-11-22T04:28:43Z","type":"commit","payload":{"task_id":"T-001","sha":"abc1234","future":{"x":1}}}"#;
        let ev = Event::decode(line).unwrap();
        let Payload::Commit(c) = &ev.payload else { panic!("expected commit, got {ev:?}") };
        assert_eq!(c.sha.as_deref(), Some("abc1234"));
        assert_eq!(c.scope.task_id.as_deref(), Some("T-001"));
        assert_eq!(c.extra["future"]["x"], 1);
        assert_eq!(ev.payload_value()["future"]["x"], 1);
        assert_eq!(ev.task_id(), Some("T-001"));
    }

    #[test]
    fn unknown_type_is_raw_not_an_error() {
        let ev =
            Event::decode(br#"{"type":"from_the_future","payload":{"task_id":"T-9","a":[1]}}"#)
                .unwrap();
        assert!(matches!(ev.payload, Payload::Raw(_)));
        assert_eq!(ev.task_id(), Some("T-9"));
    }

    #[test]
    fn mistyped_known_payload_falls_back_to_raw() {
        let ev =
            Event::decode(br#"{"type":"model_call","payload":{"prompt_tokens":"many"}}"#).unwrap();
        assert!(matches!(ev.payload, Payload::Raw(ref v) if v["prompt_tokens"] == "many"));
    }

    #[test]
    fn missing_payload_and_seq_are_tolerated() {
        let ev = Event::decode(br#"{"type":"stop"}"#).unwrap();
        assert_eq!(ev.seq, None);
        assert_eq!(ev.ts, None);
    }

    #[test]
    fn not_an_event() {
        assert!(Event::decode(b"{\"ts\":1").is_err());
        assert!(Event::decode(b"[1,2]").is_err());
        assert!(matches!(
            Event::decode(b"{\"type\":\"stop\",\"x\":\"\xff\"}"),
            Err(DecodeError::NotUtf8)
        ));
    }

    #[test]
    fn encode_round_trips() {
        let stop = Stop { reason: Some("all_done".into()), ..Stop::default() };
        let line = encode_line("2026-11-22T04:28:43.123Z", 7, None, &stop).unwrap();
        let ev = Event::decode(&line).unwrap();
        assert_eq!(ev.seq, Some(7));
        assert_eq!(ev.payload, Payload::Stop(stop));
        assert_eq!(ev.payload.kind(), Some(EventKind::Stop));
    }

    #[test]
    fn every_kind_round_trips_its_name() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.name()), Some(*kind));
        }
        assert_eq!(EventKind::from_name("from_the_future"), None);
        let block = PreToolBlock(ToolResult { tool: Some("bash".into()), ..ToolResult::default() });
        let line = encode_line("t", 1, None, &block).unwrap();
        let ev = Event::decode(&line).unwrap();
        assert_eq!(ev.kind, "pre_tool_block");
        assert_eq!(ev.payload, Payload::PreToolBlock(block));
    }
}
