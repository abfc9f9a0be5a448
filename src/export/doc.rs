//! What an export says of a task, once for every format: a task is written as blocks —
//! headings, paragraphs, lists, an attempt the reader may fold — of inline pieces that say
//! where their words came from. Markdown and HTML each render the blocks their way, so the two
//! cannot come to say different things, and every piece a model or a log wrote is escaped by
//! the one function of its format that knows how.

use super::{Attempt, TaskExport};
use crate::session::event::EvidenceGate;
use crate::session::timestamp::span;

/// A piece of a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    /// harrow's own words: written as they are.
    Own(String),
    /// Words from a model, a tool or a log: made inert for the format.
    Text(String),
    /// A file, a command or a pointer: as code, made inert too.
    Code(String),
    /// Stressed, like a task's state or a verdict.
    Strong(String),
}

/// How an attempt ended, for a format that colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Accepted,
    Rejected,
    NotJudged,
}

/// A list item, with the items under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub line: Vec<Inline>,
    pub under: Vec<Vec<Inline>>,
}

/// A part of a task's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading of `level` (2: a task), with the anchor the head's table links to.
    Heading {
        level: u8,
        anchor: Option<String>,
        line: Vec<Inline>,
    },
    Para(Vec<Inline>),
    List(Vec<Item>),
    /// Rows under a header of harrow's own words: a verdict's witnesses, criterion by
    /// criterion.
    Table {
        header: Vec<&'static str>,
        rows: Vec<Vec<Vec<Inline>>>,
    },
    /// A part the reader may fold away: an attempt, its outcome on the line that stays.
    Fold {
        line: Vec<Inline>,
        tone: Tone,
        blocks: Vec<Block>,
    },
}

/// A format the blocks are written in.
pub trait Render {
    /// Writes one block.
    fn block(out: &mut String, b: &Block);

    /// A task, every block of it written the format's way.
    fn task(t: &TaskExport) -> String {
        let mut out = String::new();
        for b in &task(t) {
            Self::block(&mut out, b);
        }
        out
    }
}

/// `text` as the words of a model or a log.
fn text(s: &str) -> Inline {
    Inline::Text(s.to_owned())
}

fn own(s: impl Into<String>) -> Inline {
    Inline::Own(s.into())
}

/// A task: its heading, the facts of how it ended, each attempt and the operator's decisions.
pub fn task(t: &TaskExport) -> Vec<Block> {
    let mut line = vec![text(&t.id)];
    if let Some(title) = &t.title {
        line.extend([own(" — "), text(title)]);
    }
    let mut blocks = vec![Block::Heading { level: 2, anchor: Some(t.id.clone()), line }];
    let mut facts = vec![Inline::Strong(t.state.clone())];
    let mut fact = |piece: Inline| facts.extend([own(" · "), piece]);
    if let Some(why) = &t.ended_because {
        fact(text(why));
    }
    if let Some(ms) = t.elapsed_ms {
        fact(own(span(ms)));
    }
    let tilde = if t.tokens_estimated_calls > 0 { "~" } else { "" };
    fact(own(format!("{tilde}{} tokens", t.tokens)));
    fact(own(super::cost_said(t.tokens_estimated_calls, t.cost)));
    if let Some(sha) = &t.commit {
        facts.extend([own(" · commit "), Inline::Code(sha.chars().take(7).collect())]);
    }
    blocks.push(Block::Para(facts));
    blocks.extend(t.attempts.iter().map(attempt));
    if !t.decisions.is_empty() {
        blocks.push(Block::Para(vec![Inline::Strong("Operator".into())]));
        let items = t.decisions.iter().map(|d| {
            let mut line = vec![text(&d.action)];
            if let Some(why) = &d.reason {
                line.extend([own(" — "), text(why)]);
            }
            Item { line, under: Vec::new() }
        });
        blocks.push(Block::List(items.collect()));
    }
    blocks
}

/// One attempt: folded under its outcome, the case, the checks and the verdict.
fn attempt(a: &Attempt) -> Block {
    let tone = match &a.verdict {
        Some(v) if v.accepted() => Tone::Accepted,
        None if a.outcome() == "not judged" => Tone::NotJudged,
        _ => Tone::Rejected,
    };
    // The outcome can name files the worker made (a merge conflict's): words to escape.
    let line = vec![own(format!("Attempt {} — ", a.number)), text(&a.outcome())];
    let mut items = Vec::new();
    if let Some(case) = &a.case {
        let under = case
            .criteria
            .iter()
            .map(|(criterion, by)| vec![text(criterion), own(" → "), Inline::Code(by.clone())])
            .collect();
        items.push(Item { line: vec![own("Case: "), text(&case.summary)], under });
    }
    if let Some(model) = &a.model {
        let mut line = vec![own("Worker model: "), Inline::Code(model.clone())];
        if let Some(via) = &a.model_via {
            line.push(own(" "));
            line.push(text(via));
        }
        items.push(Item { line, under: Vec::new() });
    }
    if !a.validator_runs.is_empty() {
        let line = vec![own("Validators: "), text(&a.checks_line())];
        items.push(Item { line, under: Vec::new() });
    }
    if let Some(v) = &a.verdict {
        let mut line = vec![own("Verdict: "), Inline::Strong(v.verdict.clone())];
        if let Some(category) = &v.category {
            line.extend([own(" ("), text(category), own(")")]);
        }
        if v.by_harness {
            line.push(own(" (by harrow, not the evaluator)"));
        }
        if let Some(score) = v.score {
            line.push(own(format!(", score {score}")));
        }
        line.extend([own(": "), text(&v.concern)]);
        let mut under: Vec<Vec<Inline>> = v
            .evidence
            .iter()
            .map(|pointer| vec![own("Evidence: "), Inline::Code(pointer.clone())])
            .collect();
        if let Some(next) = &v.next_step {
            under.push(vec![own("Next step: "), text(next)]);
        }
        match v.evidence_gate {
            Some(EvidenceGate::SentBack) => {
                under.push(vec![own(
                    "Sent back to the evaluator: a criterion had no witness harrow saw",
                )]);
            }
            Some(EvidenceGate::Held) => {
                under
                    .push(vec![own("Held for the operator: accepted without evidence harrow saw")]);
            }
            Some(EvidenceGate::Warned) => {
                under.push(vec![own("Landed without evidence harrow saw (evidence = warn)")]);
            }
            Some(EvidenceGate::Seen) | None => {}
        }
        items.push(Item { line, under });
    }
    let mut blocks = if items.is_empty() { Vec::new() } else { vec![Block::List(items)] };
    if let Some(table) = a.verdict.as_ref().and_then(witness_table) {
        blocks.push(table);
    }
    Block::Fold { line, tone, blocks }
}

/// A verdict's witnesses as harrow checked them: which criterion, what kind, what was cited,
/// and ✓ seen or ✗ with why not.
fn witness_table(v: &super::VerdictExport) -> Option<Block> {
    if v.witnesses.is_empty() {
        return None;
    }
    let rows = v
        .witnesses
        .iter()
        .map(|w| {
            let found = match (w.seen, w.why.as_deref()) {
                (true, Some(what)) => vec![own("✓ "), text(what)],
                (true, None) => vec![own("✓ seen")],
                (false, Some(why)) => vec![own("✗ "), text(why)],
                (false, None) => vec![own("✗ not seen")],
            };
            vec![
                vec![own(w.criterion.to_string())],
                vec![text(&w.kind)],
                vec![text(&w.cited)],
                found,
            ]
        })
        .collect();
    Some(Block::Table { header: vec!["Criterion", "Witness", "Cited", "harrow's check"], rows })
}

#[cfg(test)]
mod tests {
    use super::super::{Attempt, Check, TaskExport, VerdictExport};
    use super::*;

    /// Whatever the format, every word of a task's attempts, verdicts and decisions is in its
    /// blocks: the formats only choose how to write them.
    #[test]
    fn a_task_says_every_fact_once_for_every_format() {
        let verdict = VerdictExport {
            verdict: "reject".into(),
            category: Some("weak_test".into()),
            concern: "no test for the empty input".into(),
            evidence: vec!["tests/a.rs:3".into()],
            next_step: Some("test it".into()),
            score: Some(40.0),
            ..VerdictExport::default()
        };
        let attempt = Attempt {
            number: 1,
            validator_runs: vec![vec![Check { name: "tests".into(), passed: true }]],
            verdict: Some(verdict),
            ..Attempt::default()
        };
        let t = TaskExport {
            id: "T-001".into(),
            title: Some("Count".into()),
            state: "failed".into(),
            attempts: vec![attempt],
            ..TaskExport::default()
        };
        let words = format!("{:?}", task(&t));
        for fact in [
            "T-001",
            "Count",
            "Attempt 1 — ",
            "rejected (weak_test)",
            "✓ tests",
            "weak_test",
            ", score 40",
            "no test for the empty input",
            "tests/a.rs:3",
            "test it",
        ] {
            assert!(words.contains(fact), "{fact}: {words}");
        }
    }
}
