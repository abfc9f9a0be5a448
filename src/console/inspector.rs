//! The verdict inspector: one verdict with everything needed to judge it — what its category
//! means, the concern, the evidence, the next step, the case it judged, the validators of that
//! attempt, and the task's earlier verdicts and whether their concerns came back.

use crate::harness::verdict::category_meaning;
use crate::session::event::{Event, Payload, ValidatorRun, Verdict};
use serde_json::Value;
use std::fmt::Write as _;

/// What the inspector shows, built once when it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspector {
    pub title: String,
    pub lines: Vec<String>,
}

fn verdict_of(e: &Event) -> Option<&Verdict> {
    match &e.payload {
        Payload::Verdict(v) => Some(v),
        _ => None,
    }
}

/// Builds the inspector for `verdict`, given the task's earlier events in order: its earlier
/// verdicts, its submitted cases and its validator runs (latest last).
pub fn build(verdict: &Event, earlier: &[Event]) -> Inspector {
    let v = verdict_of(verdict).cloned().unwrap_or_default();
    let task = verdict.task_id().unwrap_or("?").to_owned();
    let attempt = match (v.scope.attempt, v.scope.iter) {
        (Some(a), _) => format!(" · attempt {a}"),
        (None, Some(i)) => format!(" · iteration {i}"),
        (None, None) => String::new(),
    };
    let mut lines = Vec::new();
    let outcome = v.verdict.as_deref().unwrap_or("?").to_uppercase();
    match v.rejection_category.as_deref() {
        Some(c) => {
            lines.push(format!("{outcome} — {c}"));
            lines.push(format!(
                "  {c}: {}",
                category_meaning(c).unwrap_or("(not a known category)")
            ));
        }
        None if v.parse_failed == Some(true) => lines
            .push(format!("{outcome} — fail-closed: the evaluator's answer could not be parsed")),
        None => lines.push(outcome),
    }
    if let Some(score) = v.score {
        lines.push(format!("Score: {score:.0}"));
    }
    lines.push(String::new());
    lines.push(format!("Concern: {}", v.concern.as_deref().unwrap_or("")));
    let evidence = v.evidence.clone().unwrap_or_default();
    if !evidence.is_empty() {
        lines.push("Evidence:".into());
        lines.extend(evidence.iter().map(|e| format!("  • {e}")));
    }
    if let Some(n) = &v.next_step {
        lines.push(format!("Next step: {n}"));
    }
    if let Some(case) = earlier.iter().rev().find_map(|e| match &e.payload {
        Payload::ToolCall(c) if c.tool.as_deref() == Some("submit_case") => c.args.clone(),
        _ => None,
    }) {
        lines.push(String::new());
        lines.extend(case_lines(&case));
    }
    if let Some(run) = earlier.iter().rev().find_map(|e| match &e.payload {
        Payload::ValidatorRun(r) => Some(r.clone()),
        _ => None,
    }) {
        lines.push(String::new());
        lines.extend(validator_lines(&run));
    }
    let prior: Vec<&Verdict> = earlier.iter().filter_map(verdict_of).collect();
    if !prior.is_empty() {
        lines.push(String::new());
        lines.push("Earlier verdicts on this task:".into());
        for (i, p) in prior.iter().enumerate() {
            let category = p.rejection_category.as_deref();
            let later = prior[i + 1..]
                .iter()
                .map(|q| q.rejection_category.as_deref())
                .chain(std::iter::once(v.rejection_category.as_deref()));
            let status = match category {
                None => String::new(),
                Some(c) if later.clone().any(|l| l == Some(c)) => format!(" — {c} came back"),
                Some(_) => " — resolved".into(),
            };
            let mut line = format!("  {}. {}", i + 1, p.verdict.as_deref().unwrap_or("?"));
            if let Some(c) = category {
                let _ = write!(line, " ({c})");
            }
            let _ = write!(line, "{status}: {}", p.concern.as_deref().unwrap_or(""));
            lines.push(line);
        }
    }
    Inspector { title: format!(" Verdict on {task}{attempt} "), lines }
}

fn case_lines(case: &Value) -> Vec<String> {
    let mut out = vec![format!("Case: {}", case["summary"].as_str().unwrap_or(""))];
    for c in case["ac_coverage"].as_array().into_iter().flatten() {
        out.push(format!(
            "  {} → {}",
            c["criterion"].as_str().unwrap_or("?"),
            c["addressed_by"].as_str().unwrap_or("?")
        ));
    }
    for (title, key) in [("Work-arounds", "work_arounds"), ("Uncertainties", "uncertainties")] {
        let items: Vec<&str> =
            case[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if !items.is_empty() {
            out.push(format!("{title}:"));
            out.extend(items.iter().map(|i| format!("  • {i}")));
        }
    }
    out
}

fn validator_lines(run: &ValidatorRun) -> Vec<String> {
    let mut out =
        vec![format!("Validators: {}", if run.passed == Some(true) { "passed" } else { "failed" })];
    for r in run.results.iter().flatten() {
        let detail = r.exit_code.map(|c| format!(" exit {c}")).unwrap_or_default();
        out.push(format!(
            "  {} {}{detail}",
            if r.passed { "✓" } else { "✗" },
            r.command.as_deref().unwrap_or(&r.name)
        ));
    }
    out
}
