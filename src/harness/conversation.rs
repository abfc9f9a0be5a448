//! A worker's conversation rebuilt from the log, as it stood at one event: what a rewound
//! task goes on from. The log holds every message the worker was sent or sent itself — its
//! prompt, its replies with their tool calls, each tool's output as it saw it, the answers to
//! its cases, nudges and the operator's words — so the conversation is read back rather than
//! kept a second time.

use crate::session::event::{Event, EventKind as K, Payload};
use crate::session::scan::scan_lines_from;
use serde_json::{Value, json};
use std::io;
use std::path::Path;

/// The user message a steer becomes in the worker's conversation.
pub fn steer_message(text: &str) -> String {
    format!(
        "The operator, watching you work, says:\n\n{text}\n\nTake this into account from here on: it is part of the task now."
    )
}

/// The tool answer given for a call whose result the log does not hold (a duplicate case, a
/// refused tool, arguments that were not JSON): every call needs one.
const UNRECORDED: &str = "(no result was recorded for this call)";

/// One conversation of a task: from a `context_reset` on.
#[derive(Debug, Default)]
struct Segment {
    start: u64,
    /// The attempt it began with: a best-of task's attempts run side by side, each in a
    /// conversation of its own, and their events interleave in the log.
    attempt: Option<u64>,
    /// Where a rewound conversation goes on from, and the operator's words after it.
    continues: Option<(u64, String)>,
    /// Messages with the `seq` of the event each came from.
    items: Vec<(u64, Value)>,
}

/// Reads the log once and keeps the worker messages of `task`'s conversations, up to `until`.
#[derive(Debug, Default)]
struct Builder {
    segments: Vec<Segment>,
    /// A loop nudge that goes with the next tool result.
    loop_note: Option<String>,
}

/// The conversation of `task` as it stood at the event numbered `until`: system prompt,
/// prompt and every message after, each tool call answered. Empty when the log does not hold
/// the conversation (a session from before harrow logged its messages).
pub fn rebuild(dir: &Path, task: &str, system: &str, until: u64) -> io::Result<Vec<Value>> {
    let mut b = Builder::default();
    let events = crate::session::dir::SessionDir::new(dir).events();
    scan_lines_from(&events, 0, 1, |_, line, fact| {
        let seq = fact.seq.count().unwrap_or(0);
        if seq > until || fact.payload.task_id.get() != Some(task) || !carries_message(fact) {
            return;
        }
        if let Ok(event) = Event::decode(line) {
            b.add(seq, event.payload);
        }
    })?;
    Ok(b.assemble(system, until, 0))
}

/// Whether an event can be part of the worker's conversation (the rest is not decoded).
fn carries_message(fact: &crate::session::fact::Fact<'_>) -> bool {
    match fact.event_kind() {
        Some(K::PromptAssembled | K::AssistantMessage) => fact.payload.role.get().is_none_or(|r| {
            crate::session::vocabulary::CallRole::parse(r)
                == crate::session::vocabulary::CallRole::Worker
        }),
        Some(
            K::ContextReset
            | K::ToolResult
            | K::PreToolBlock
            | K::CaseParseError
            | K::FeedbackSent
            | K::Nudge
            | K::LoopDetected
            | K::OperatorSteer,
        ) => true,
        _ => false,
    }
}

impl Builder {
    fn add(&mut self, seq: u64, payload: Payload) {
        let attempt = payload.scope().and_then(|s| s.attempt);
        if let Payload::ContextReset(r) = &payload {
            let continues = r
                .continues_at
                .filter(|at| *at > 0)
                .map(|at| (at, r.operator_note.clone().unwrap_or_default()));
            self.segments.push(Segment { start: seq, attempt, continues, items: Vec::new() });
            self.loop_note = None;
            return;
        }
        // A message goes to the conversation its attempt began, else (a rework in the same
        // conversation) to the latest one.
        let own = attempt.and_then(|a| self.segments.iter().rposition(|s| s.attempt == Some(a)));
        let Some(at) = own.or(self.segments.len().checked_sub(1)) else { return };
        let segment = &mut self.segments[at];
        let message = match payload {
            Payload::PromptAssembled(p) => json!({"role": "user", "content": p.content}),
            Payload::AssistantMessage(m) => {
                let mut out = json!({"role": "assistant", "content": m.content});
                let calls = m.tool_calls.unwrap_or_default();
                if !calls.is_empty() {
                    out["tool_calls"] = calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                if let Some(r) = m.reasoning.filter(|r| !r.is_empty()) {
                    out["reasoning"] = json!(r);
                }
                out
            }
            Payload::ToolResult(r)
            | Payload::PreToolBlock(crate::session::event::PreToolBlock(r)) => {
                let mut output = r.output.or(r.result_preview).unwrap_or_default();
                if let Some(note) = self.loop_note.take() {
                    output = format!("{output}\n{note}");
                }
                json!({"role": "tool", "tool_call_id": r.call_id.unwrap_or_default(), "content": output})
            }
            // The answer to a case: the call it answers is found when the messages are put
            // together.
            Payload::CaseParseError(e) => {
                json!({"role": "tool", "tool_call_id": "", "content": e.0.error.unwrap_or_default()})
            }
            Payload::FeedbackSent(f) => {
                json!({"role": "tool", "tool_call_id": "", "content": f.content.unwrap_or_default()})
            }
            Payload::Nudge(n) => json!({"role": "user", "content": n.content}),
            Payload::LoopDetected(l)
                if crate::session::vocabulary::LoopAction::Nudged.is(l.action.as_deref()) =>
            {
                let content = l.content.unwrap_or_default();
                if l.tool.as_deref() == Some(crate::session::vocabulary::WORKTREE_LOOP) {
                    json!({"role": "user", "content": content})
                } else {
                    self.loop_note = Some(content);
                    return;
                }
            }
            Payload::OperatorSteer(s) if s.delivered == Some(true) => {
                json!({"role": "user", "content": steer_message(&s.text.unwrap_or_default())})
            }
            _ => return,
        };
        segment.items.push((seq, message));
    }

    /// The conversation as it stood at `until`: the segment it falls in, after what that
    /// segment goes on from. `depth` bounds a chain of rewinds that points nowhere sensible.
    fn assemble(&self, system: &str, until: u64, depth: usize) -> Vec<Value> {
        // The conversation that holds the event `until`, when it is one of its messages (the
        // attempts of a best-of task interleave); else the latest begun by then.
        let holding = self.segments.iter().rposition(|s| s.items.iter().any(|(q, _)| *q == until));
        let Some(at) = holding.or_else(|| self.segments.iter().rposition(|s| s.start <= until))
        else {
            return Vec::new();
        };
        let segment = &self.segments[at];
        let mut messages = match &segment.continues {
            Some((from, note)) if *from < segment.start && depth < 64 => {
                let mut earlier = self.assemble(system, *from, depth + 1);
                if earlier.is_empty() {
                    return Vec::new();
                }
                earlier.push(json!({"role": "user", "content": note}));
                earlier
            }
            _ => vec![json!({"role": "system", "content": system})],
        };
        let mut open: Vec<String> = Vec::new();
        for (_, message) in segment.items.iter().filter(|(seq, _)| *seq <= until) {
            match message["role"].as_str() {
                Some("assistant") => {
                    answer_all(&mut messages, &mut open);
                    open = (message["tool_calls"].as_array().into_iter().flatten())
                        .filter_map(|c| c["id"].as_str().map(str::to_owned))
                        .collect();
                    messages.push(message.clone());
                }
                Some("tool") => {
                    let id = message["tool_call_id"].as_str().unwrap_or("");
                    // A case's answer names no call. The tools of the case's turn were answered
                    // before it was reviewed, so the calls open are cases: the first is judged.
                    let id =
                        if id.is_empty() { open.first().cloned() } else { Some(id.to_owned()) };
                    let Some(id) = id.filter(|id| open.contains(id)) else { continue };
                    open.retain(|o| *o != id);
                    messages.push(
                        json!({"role": "tool", "tool_call_id": id, "content": message["content"]}),
                    );
                }
                _ => {
                    answer_all(&mut messages, &mut open);
                    messages.push(message.clone());
                }
            }
        }
        answer_all(&mut messages, &mut open);
        if messages.len() < 2 {
            return Vec::new();
        }
        messages
    }
}

/// Answers the calls still open, so the conversation is one a server accepts.
fn answer_all(messages: &mut Vec<Value>, open: &mut Vec<String>) {
    for id in open.drain(..) {
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": UNRECORDED}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(dir: &Path, lines: &[Value]) {
        let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        std::fs::write(dir.join("events.jsonl"), text).unwrap();
    }

    fn ev(seq: u64, kind: &str, payload: &Value) -> Value {
        json!({"ts": "t", "seq": seq, "type": kind, "payload": payload})
    }

    fn call(id: &str, name: &str) -> Value {
        json!({"id": id, "name": name, "arguments": "{}"})
    }

    /// Two attempts of T-001 with another task's events between, then a rewound
    /// conversation that goes on from the end of attempt 1.
    fn session() -> Vec<Value> {
        vec![
            ev(1, "context_reset", &json!({"task_id": "T-001", "attempt": 1})),
            ev(
                2,
                "prompt_assembled",
                &json!({"task_id": "T-001", "role": "worker", "content": "PROMPT"}),
            ),
            ev(
                3,
                "assistant_message",
                &json!({"task_id": "T-001", "role": "worker", "content": "a", "tool_calls": [call("c1", "write_file"), call("c2", "bash")]}),
            ),
            ev(
                4,
                "tool_result",
                &json!({"task_id": "T-002", "call_id": "c1", "output": "OTHER TASK"}),
            ),
            ev(
                5,
                "loop_detected",
                &json!({"task_id": "T-001", "tool": "bash", "action": "nudged", "content": "LOOP"}),
            ),
            ev(6, "tool_result", &json!({"task_id": "T-001", "call_id": "c1", "output": "wrote"})),
            ev(
                7,
                "operator_steer",
                &json!({"task_id": "T-001", "text": "STEER", "delivered": true}),
            ),
            ev(
                8,
                "assistant_message",
                &json!({"task_id": "T-001", "role": "worker", "tool_calls": [call("c3", "submit_case"), call("c4", "submit_case")]}),
            ),
            ev(
                9,
                "prompt_assembled",
                &json!({"task_id": "T-001", "role": "evaluator", "content": "EVALUATOR"}),
            ),
            ev(
                10,
                "feedback_sent",
                &json!({"task_id": "T-001", "attempt": 1, "kind": "verdict", "content": "REJECTED 1"}),
            ),
            ev(
                11,
                "assistant_message",
                &json!({"task_id": "T-001", "role": "worker", "content": "ATTEMPT 2", "tool_calls": [call("c5", "submit_case")]}),
            ),
            ev(
                12,
                "feedback_sent",
                &json!({"task_id": "T-001", "attempt": 2, "kind": "verdict", "content": "REJECTED 2"}),
            ),
            ev(
                13,
                "context_reset",
                &json!({"task_id": "T-001", "attempt": 3, "continues_at": 10, "operator_note": "REWOUND"}),
            ),
            ev(
                14,
                "assistant_message",
                &json!({"task_id": "T-001", "role": "worker", "content": "ATTEMPT 3"}),
            ),
        ]
    }

    fn texts(messages: &[Value]) -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                format!("{}:{}", m["role"].as_str().unwrap(), m["content"].as_str().unwrap_or(""))
            })
            .collect()
    }

    #[test]
    fn a_conversation_is_read_back_with_every_call_answered_and_only_its_own_tasks_messages() {
        let dir = tempfile::tempdir().unwrap();
        log(dir.path(), &session());
        let at_attempt_1 = rebuild(dir.path(), "T-001", "SYSTEM", 10).unwrap();
        assert_eq!(
            texts(&at_attempt_1),
            vec![
                "system:SYSTEM",
                "user:PROMPT",
                "assistant:a",
                "tool:wrote\nLOOP",
                format!("tool:{UNRECORDED}").as_str(),
                format!("user:{}", steer_message("STEER")).as_str(),
                "assistant:",
                "tool:REJECTED 1",
                format!("tool:{UNRECORDED}").as_str(),
            ]
        );
        assert_eq!(at_attempt_1[7]["tool_call_id"], "c3", "the case's answer goes to the case");
    }

    #[test]
    fn a_rewound_conversation_goes_on_from_where_it_was_rewound_to() {
        let dir = tempfile::tempdir().unwrap();
        log(dir.path(), &session());
        let all = texts(&rebuild(dir.path(), "T-001", "SYSTEM", 99).unwrap());
        assert!(all.contains(&"tool:REJECTED 1".to_owned()));
        assert!(
            !all.iter().any(|m| m.contains("ATTEMPT 2") || m.contains("REJECTED 2")),
            "{all:?}"
        );
        assert_eq!(&all[all.len() - 2..], ["user:REWOUND", "assistant:ATTEMPT 3"]);
        assert!(
            !all.iter().any(|m| m.contains("EVALUATOR")),
            "the evaluator's prompt is not the worker's"
        );
    }

    #[test]
    fn a_log_without_the_conversation_gives_nothing_to_go_on_from() {
        let dir = tempfile::tempdir().unwrap();
        log(dir.path(), &[ev(1, "context_reset", &json!({"task_id": "T-001"}))]);
        assert!(rebuild(dir.path(), "T-001", "SYSTEM", 5).unwrap().is_empty());
        assert!(rebuild(dir.path(), "T-009", "SYSTEM", 5).unwrap().is_empty());
    }
}
