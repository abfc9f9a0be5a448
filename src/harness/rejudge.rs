//! Trying another judge on real history: each case a session's evaluator was asked about, read
//! back from the log as the exact prompt it was sent, asked again of another evaluator model —
//! no worker call, nothing written to the session — and the two verdicts side by side.

use super::verdict::{self, Verdict};
use crate::brain::client::{Brain, BrainError, CallTag, Role};
use crate::session::event::{Event, EventKind, EvidenceGate, Payload};
use crate::session::scan::scan_lines_from;
use crate::session::state::Ruling;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

/// What the session's evaluator said of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ruled {
    /// `None` when its answer could not be read as a verdict.
    pub ruling: Option<Ruling>,
    pub category: Option<String>,
}

/// One case as the session's evaluator was asked about it.
#[derive(Debug, Clone, Serialize)]
pub struct Asking {
    pub task: String,
    pub attempt: Option<u64>,
    /// The user message the evaluator was sent, whole, as logged.
    #[serde(skip)]
    pub prompt: String,
    pub was: Ruled,
}

/// The cases of a session's log, and what could not be replayed.
#[derive(Debug, Default)]
pub struct History {
    pub askings: Vec<Asking>,
    /// Askings whose prompt the log keeps only in part (Tilth capped them).
    pub cut: usize,
    /// The evaluator model that answered last in the session, as its calls name it.
    pub was_model: Option<String>,
}

/// A task's evaluator prompt waiting for its verdict.
struct Pending {
    prompt: String,
    cut: bool,
    /// Asked again after an accept was sent back for its evidence: the prompt carries harrow's
    /// words about the first evaluator's witnesses, which another judge never gave.
    second: bool,
}

/// Reads the log's evaluator askings in order: each `prompt_assembled` of the evaluator and
/// the verdict that answered it. A second asking after an accept sent back for evidence is
/// left out (its first asking stands for the case).
pub fn history(events: &Path) -> std::io::Result<History> {
    let mut h = History::default();
    let mut pending: HashMap<String, Pending> = HashMap::new();
    let mut sent_back: HashMap<String, bool> = HashMap::new();
    scan_lines_from(events, 0, 1, |_, line, fact| {
        let p = &fact.payload;
        match fact.event_kind() {
            Some(EventKind::ModelCall)
                if crate::session::vocabulary::CallRole::Evaluator.is(p.role.get()) =>
            {
                if let Some(model) = p.model.get() {
                    h.was_model = Some(model.to_owned());
                }
            }
            Some(EventKind::PromptAssembled) => {
                let Ok(Event { payload: Payload::PromptAssembled(a), .. }) = Event::decode(line)
                else {
                    return;
                };
                let (Some(task), Some(prompt)) = (a.scope.task_id, a.content) else { return };
                if a.role.as_deref() != Some(Role::Evaluator.as_str()) {
                    return;
                }
                let second = sent_back.remove(&task).unwrap_or(false);
                let cut = a.truncated == Some(true);
                pending.insert(task, Pending { prompt, cut, second });
            }
            Some(EventKind::Verdict) if p.by_harness.0 != Some(true) => {
                let Some(task) = p.task_id.get() else { return };
                let Some(asked) = pending.remove(task) else { return };
                let gate = p.evidence_gate.get().and_then(EvidenceGate::named);
                if gate == Some(EvidenceGate::SentBack) {
                    sent_back.insert(task.to_owned(), true);
                }
                if asked.second {
                    return;
                }
                if asked.cut {
                    h.cut += 1;
                    return;
                }
                let unread = p.parse_failed.0 == Some(true);
                h.askings.push(Asking {
                    task: task.to_owned(),
                    attempt: p.attempt.count().filter(|n| *n > 0),
                    prompt: asked.prompt,
                    was: Ruled {
                        ruling: if unread { None } else { fact.ruling() },
                        category: p.rejection_category.get().map(str::to_owned),
                    },
                });
            }
            _ => {}
        }
    })?;
    Ok(h)
}

/// What the other evaluator said of a case.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// `None` with `unreadable` saying why, when no verdict could be read from its reply.
    pub ruling: Option<Ruling>,
    pub category: Option<String>,
    pub concern: Option<String>,
    /// Witnesses it cited (not checked: the attempt's trees may be long gone).
    pub witnesses: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    pub cost: f64,
    pub tokens: u64,
}

impl Answer {
    fn of(verdict: &Verdict) -> Answer {
        Answer {
            ruling: Some(verdict.verdict),
            category: verdict.rejection_category.clone(),
            concern: Some(verdict.concern.clone()),
            witnesses: verdict.witnesses.len(),
            unreadable: None,
            cost: 0.0,
            tokens: 0,
        }
    }
}

/// Asks the brain's evaluator about one case, as the run would have: harrow's evaluator
/// instructions, the logged prompt, the verdict tool. A reply without a readable verdict is
/// an answer that says so, not a failure; a model that cannot be reached is.
pub async fn ask(brain: &Brain, asking: &Asking) -> Result<Answer, BrainError> {
    let messages = [
        json!({"role": "system", "content": super::run::EVALUATOR_PROMPT}),
        json!({"role": "user", "content": asking.prompt}),
    ];
    let tools = [verdict::schema(false)];
    let tag = CallTag {
        role: Role::Evaluator,
        task: &asking.task,
        attempt: asking.attempt.unwrap_or(0),
        turn: 0,
    };
    let reply = brain.chat(&tag, &messages, &tools, |_, _| {}).await?;
    let read = reply
        .tool_calls
        .iter()
        .filter(|c| crate::session::vocabulary::ToolName::SubmitVerdict.is(Some(&c.name)))
        .map(|c| verdict::parse_held(&c.arguments, None))
        .reduce(Result::or);
    let mut answer = match read {
        Some(Ok(v)) => Answer::of(&v),
        Some(Err(why)) => unread(why),
        None => unread("no submit_verdict call in the reply".into()),
    };
    answer.cost = reply.usage.cost;
    answer.tokens = reply.usage.prompt + reply.usage.completion;
    Ok(answer)
}

fn unread(why: String) -> Answer {
    Answer {
        ruling: None,
        category: None,
        concern: None,
        witnesses: 0,
        unreadable: Some(why),
        cost: 0.0,
        tokens: 0,
    }
}

/// How a case's two verdicts compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    Agree,
    /// Both reject, for different categories.
    OtherCategory,
    AcceptNowReject,
    RejectNowAccept,
    /// One of the two gave no readable verdict.
    NoVerdict,
}

/// Compares what the session's evaluator said with the other one's answer.
pub fn compare(was: &Ruled, now: &Answer) -> Agreement {
    match (was.ruling, now.ruling) {
        (Some(Ruling::Accept), Some(Ruling::Accept)) => Agreement::Agree,
        (Some(Ruling::Reject), Some(Ruling::Reject)) if was.category == now.category => {
            Agreement::Agree
        }
        (Some(Ruling::Reject), Some(Ruling::Reject)) => Agreement::OtherCategory,
        (Some(Ruling::Accept), Some(Ruling::Reject)) => Agreement::AcceptNowReject,
        (Some(Ruling::Reject), Some(Ruling::Accept)) => Agreement::RejectNowAccept,
        _ => Agreement::NoVerdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn was(ruling: Option<Ruling>, category: Option<&str>) -> Ruled {
        Ruled { ruling, category: category.map(str::to_owned) }
    }

    fn now(ruling: Option<Ruling>, category: Option<&str>) -> Answer {
        let mut a = unread(String::new());
        a.ruling = ruling;
        a.category = category.map(str::to_owned);
        a
    }

    #[test]
    fn a_second_asking_for_evidence_and_a_cut_prompt_are_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        let line =
            |kind: &str, payload: Value| json!({"type": kind, "payload": payload}).to_string();
        let prompt = |task: &str, text: &str, cut: bool| {
            line(
                "prompt_assembled",
                json!({"task_id": task, "role": "evaluator", "content": text, "truncated": cut}),
            )
        };
        let verdict = |task: &str, word: &str, gate: Option<&str>| {
            line(
                "evaluator_verdict",
                json!({"task_id": task, "attempt": 1, "verdict": word, "evidence_gate": gate}),
            )
        };
        let lines = [
            prompt("T-1", "first", false),
            line("prompt_assembled", json!({"task_id": "T-1", "role": "worker", "content": "w"})),
            verdict("T-1", "accept", Some("sent_back")),
            prompt("T-1", "first, with harrow's check", false),
            verdict("T-1", "accept", Some("held")),
            prompt("T-2", "cut", true),
            verdict("T-2", "reject", None),
            verdict("T-3", "reject", None),
            prompt("T-4", "by harrow", false),
            line(
                "evaluator_verdict",
                json!({"task_id": "T-4", "verdict": "reject", "by_harness": true}),
            ),
            verdict("T-4", "reject", None),
        ];
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let h = history(&log).unwrap();
        let asked: Vec<(&str, &str)> =
            h.askings.iter().map(|a| (a.task.as_str(), a.prompt.as_str())).collect();
        assert_eq!(asked, [("T-1", "first"), ("T-4", "by harrow")]);
        assert_eq!(h.askings[0].was.ruling, Some(Ruling::Accept));
        assert_eq!(h.cut, 1);
    }

    #[test]
    fn two_verdicts_compare_by_ruling_then_by_a_rejects_category() {
        let (acc, rej) = (Some(Ruling::Accept), Some(Ruling::Reject));
        assert_eq!(compare(&was(acc, None), &now(acc, None)), Agreement::Agree);
        let weak = Some("weak_test");
        assert_eq!(compare(&was(rej, weak), &now(rej, weak)), Agreement::Agree);
        assert_eq!(
            compare(&was(rej, weak), &now(rej, Some("incomplete"))),
            Agreement::OtherCategory
        );
        assert_eq!(compare(&was(acc, None), &now(rej, weak)), Agreement::AcceptNowReject);
        assert_eq!(compare(&was(rej, weak), &now(acc, None)), Agreement::RejectNowAccept);
        assert_eq!(compare(&was(None, None), &now(acc, None)), Agreement::NoVerdict);
        assert_eq!(compare(&was(acc, None), &now(None, None)), Agreement::NoVerdict);
    }
}
