//! The verdict inspector: one verdict with everything needed to judge it — what its category
//! means, the concern, the evidence, the next step, the case it judged, the validators of that
//! attempt, and the task's earlier verdicts and whether their concerns came back.

use super::panes::{case_lines, validator_lines, verdict_lines};
use crate::session::event::{Event, Payload, Verdict};
use std::fmt::Write as _;

/// What the inspector shows, built once when it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspector {
    pub title: String,
    pub lines: Vec<String>,
    /// The verdict's evidence pointers, in the order the lines number them.
    pub evidence: Vec<String>,
    /// First line shown.
    pub scroll: u16,
    /// Where the session's worktree was, to open evidence from.
    pub worktree: Option<std::path::PathBuf>,
    /// The commit the verdict judged, when its work was committed.
    pub commit: Option<String>,
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
    let mut lines = verdict_lines(&v);
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
    Inspector {
        title: format!(" Verdict on {task}{attempt} "),
        lines,
        evidence: v.evidence.clone().unwrap_or_default(),
        scroll: 0,
        worktree: None,
        commit: None,
    }
}
