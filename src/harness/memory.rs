//! What each side is told. The worker gets its task and the memory channels — project context
//! files, recent progress, the plan as read-only prose, its own ledger — and nothing of the
//! harness itself. The evaluator gets the task, the diff, the case, the validator output, the
//! seed tests, the project rules and its own earlier verdicts — never the worker's reasoning
//! or tool history.

use super::case::Case;
use super::plan::{Plan, Task};
use super::verdict::Verdict;
use crate::hands::confine::Jail;
use crate::hands::workspace::DiffInfo;
use crate::session::state::{StopReason, TaskState};
use crate::session::vocabulary::Outcome;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

pub const CONTEXT_FILES_MAX_CHARS: usize = 8_000;

/// The most of the seed file the worker's prompt carries.
pub const SEED_MAX_CHARS: usize = 3_000;
pub const PROGRESS_TAIL_LINES: usize = 30;
pub const PROGRESS_MAX_CHARS: usize = 4_000;
pub const OVERVIEW_MAX_CHARS: usize = 4_000;
pub const PLAN_MAX_CHARS: usize = 6_000;
pub const LEDGER_INJECT_LIMIT: usize = 5;
pub const DIFF_MAX_CHARS: usize = 20_000;
/// Earlier tasks' files named beside the diff, at most.
pub const EARLIER_FILES_MAX: usize = 40;
pub const VALIDATOR_OUTPUT_MAX_CHARS: usize = 4_000;
pub const SEED_TESTS_MAX_CHARS: usize = 6_000;

/// One line of a task's ledger: a verdict and what it judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub ts: String,
    pub iter: u64,
    #[serde(default)]
    pub attempt: u64,
    pub diff_summary: String,
    pub case: Option<Case>,
    pub verdict: Verdict,
}

/// Cuts text to `max` characters with a note.
pub fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}\n... [truncated, total {total} chars]")
}

/// Largest file the harness reads from the worktree for a prompt, in bytes.
pub const HARNESS_READ_MAX_BYTES: usize = 64 * 1024;

/// The project's context files (AGENTS.md, CLAUDE.md …) from the workspace root, read through
/// the same confinement as the tools (a file the worker turned into a symlink or hard link is
/// left out).
pub fn project_context(jail: &Jail, names: &[String]) -> Option<(String, Vec<String>)> {
    let found: Vec<(String, String)> = names
        .iter()
        .filter_map(|n| {
            jail.read_for_harness(n, HARNESS_READ_MAX_BYTES).ok().map(|t| (n.clone(), t))
        })
        .filter(|(_, t)| !t.trim().is_empty())
        .collect();
    if found.is_empty() {
        return None;
    }
    let loaded: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
    let text = if found.len() == 1 {
        found[0].1.clone()
    } else {
        found.iter().map(|(n, t)| format!("### {n}\n{t}")).collect::<Vec<_>>().join("\n\n")
    };
    Some((cap(&text, CONTEXT_FILES_MAX_CHARS), loaded))
}

/// The ledger as either side reads it: the last few verdicts, oldest first.
pub fn render_ledger(entries: &[LedgerEntry]) -> String {
    let start = entries.len().saturating_sub(LEDGER_INJECT_LIMIT);
    let mut out = String::new();
    for e in &entries[start..] {
        let _ = writeln!(out, "### Attempt {} — {}", e.attempt.max(1), e.verdict.summary());
        let _ = writeln!(out, "Concern: {}", e.verdict.concern);
        if let Some(n) = &e.verdict.next_step {
            let _ = writeln!(out, "Next step: {n}");
        }
        if !e.verdict.evidence.is_empty() {
            let _ = writeln!(out, "Evidence: {}", e.verdict.evidence.join(", "));
        }
        // What harrow could not confirm: the next attempt can add the test that shows it.
        if let Some(c) = e.verdict.checked.as_ref().filter(|c| !c.unwitnessed.is_empty()) {
            let numbers: Vec<String> = c.unwitnessed.iter().map(u64::to_string).collect();
            let _ = writeln!(
                out,
                "Criteria without evidence harrow could check: {} (a test that fails before your change and passes after it shows one)",
                numbers.join(", ")
            );
        }
        let _ = writeln!(out, "Diff then: {}\n", e.diff_summary);
    }
    out.trim_end().to_owned()
}

pub(crate) fn task_block(task: &Task, numbered: bool) -> String {
    let mut out = format!("**ID:** {}\n**Title:** {}\n\n", task.id, task.title);
    if !task.description.trim().is_empty() {
        let _ = writeln!(out, "{}\n", task.description.trim());
    }
    out.push_str("### Acceptance criteria\n");
    for (n, c) in task.criteria.iter().enumerate() {
        if numbered {
            let _ = writeln!(out, "{}. {c}", n + 1);
        } else {
            let _ = writeln!(out, "- {c}");
        }
    }
    if !task.tests.is_empty() {
        let _ = writeln!(out, "\nTests for this task: {}", task.tests.join(", "));
    }
    out
}

/// Everything the worker's first message carries.
#[derive(Debug, Clone, Default)]
pub struct WorkerContext<'a> {
    pub project: Option<&'a str>,
    pub progress: Option<&'a str>,
    /// `(task, status)` for every task of the plan.
    pub statuses: &'a [(String, TaskState)],
    pub ledger: &'a [LedgerEntry],
    /// Warnings about earlier tasks accepted below the bar.
    pub warnings: &'a [String],
    /// A note the operator left for this attempt.
    pub operator_note: Option<&'a str>,
}

/// The worker's task message.
pub fn worker_prompt(plan: &Plan, task: &Task, ctx: &WorkerContext<'_>) -> String {
    let mut out = String::new();
    for w in ctx.warnings {
        let _ = writeln!(out, "> Warning: {w}");
    }
    if !ctx.warnings.is_empty() {
        out.push('\n');
    }
    if let Some(p) = ctx.project {
        let _ = writeln!(out, "## Project context\n\n{p}\n");
    }
    if let Some(p) = ctx.progress.filter(|p| !p.trim().is_empty()) {
        let _ = writeln!(out, "## Recent progress (this session)\n\n{}\n", progress_in_words(p));
    }
    if let Some(o) = &plan.overview {
        let _ = writeln!(
            out,
            "## Feature overview (why this feature, what is in and out of scope)\n\n{}\n",
            cap(o.trim(), OVERVIEW_MAX_CHARS)
        );
    }
    if let Some(seed) = &plan.seed {
        let _ = writeln!(
            out,
            "## Seed context (what the planning interview settled — context, not work to do)\n\n{}\n",
            cap(seed.trim(), SEED_MAX_CHARS)
        );
    }
    let mut full = String::new();
    for t in &plan.tasks {
        let state = ctx.statuses.iter().find(|(id, _)| *id == t.id).map(|(_, s)| s);
        let status = state.map_or("not started", state_in_words);
        if t.id == task.id {
            let _ = writeln!(full, "### {} — {}  ← your task (full detail below)", t.id, t.title);
        } else {
            let _ = writeln!(
                full,
                "### {} — {}  [{status}]\n{}",
                t.id,
                t.title,
                t.criteria.iter().map(|c| format!("- {c}")).collect::<Vec<_>>().join("\n")
            );
        }
    }
    let _ = writeln!(
        out,
        "## Full feature plan (all tasks — context, not work to do)\n\n{}\n",
        cap(full.trim(), PLAN_MAX_CHARS)
    );
    let _ = writeln!(out, "## Your task\n\n{}", task_block(task, false));
    if !ctx.ledger.is_empty() {
        let _ = writeln!(
            out,
            "## Prior iterations on this task (from review)\n\n{}\n",
            render_ledger(ctx.ledger)
        );
    }
    if let Some(note) = ctx.operator_note {
        let _ = writeln!(out, "## A note from the operator\n\n{note}\n");
    }
    out.push_str("Your workspace is the current folder of bash and the root of every file path. When the task is done and verified, call submit_case.");
    out
}

/// Everything the evaluator is given.
#[derive(Debug, Clone)]
pub struct EvaluatorInputs<'a> {
    pub plan: &'a Plan,
    pub task: &'a Task,
    pub project: Option<&'a str>,
    pub ledger: &'a [LedgerEntry],
    pub case: &'a Case,
    /// The task's own change, against the commit it started from.
    pub diff: &'a DiffInfo,
    /// Files earlier tasks of the session changed (already accepted; not under review).
    pub earlier_files: &'a [String],
    pub validator_output: Option<&'a str>,
    /// `(path, content)` of the task's seed tests.
    pub seed_tests: &'a [(String, String)],
    /// The score an accept needs, when the run sets one.
    pub score_threshold: Option<f64>,
    /// What the operator told the worker while it worked on this attempt (`steer`): the work
    /// is judged against what was asked, not only the plan.
    pub operator_asked: &'a [String],
    /// The most of the diff the message carries: bounded by the evaluator's window when it is
    /// known, so a long diff is cut file by file (named) rather than refused by the server.
    pub diff_max_chars: usize,
}

/// The evaluator's message.
pub fn evaluator_prompt(i: &EvaluatorInputs<'_>) -> String {
    let mut out = format!("# Task to evaluate: {} — {}\n\n", i.task.id, i.task.title);
    // Numbered: an accept's witnesses name each criterion by its number.
    out.push_str(&task_block(i.task, true));
    if let Some(o) = &i.plan.overview {
        let _ = writeln!(out, "\n## Feature overview (the why and the scope)\n\n{}", o.trim());
    }
    if let Some(p) = i.project {
        let _ = writeln!(out, "\n## Project rules\n\n{p}");
    }
    if !i.ledger.is_empty() {
        let _ =
            writeln!(out, "\n## Your earlier verdicts on this task\n\n{}", render_ledger(i.ledger));
    }
    if !i.operator_asked.is_empty() {
        let said: Vec<String> =
            i.operator_asked.iter().map(|t| format!("> {}", t.replace('\n', "\n> "))).collect();
        let _ = writeln!(
            out,
            "\n## The operator asked during this attempt\n\nThe operator asked during this attempt:\n\n{}\n\nJudge the work against the task and what the operator asked.",
            said.join("\n\n")
        );
    }
    let _ = writeln!(out, "\n## The worker's case\n\n{}", i.case.render());
    if let Some(v) = i.validator_output {
        let _ = writeln!(
            out,
            "## Validator output (all passed)\n\n```\n{}\n```",
            cap(v, VALIDATOR_OUTPUT_MAX_CHARS)
        );
    }
    for (path, content) in i.seed_tests {
        let _ = writeln!(
            out,
            "\n## Seed test {path}\n\n```\n{}\n```",
            cap(content, SEED_TESTS_MAX_CHARS)
        );
    }
    let _ = writeln!(
        out,
        "\n## Diff (this task's own change: {})\n\n```diff\n{}```",
        i.diff.summary(),
        i.diff.excerpt(i.diff_max_chars)
    );
    if !i.earlier_files.is_empty() {
        let mut names: Vec<&str> =
            i.earlier_files.iter().take(EARLIER_FILES_MAX).map(String::as_str).collect();
        let more = i.earlier_files.len().saturating_sub(EARLIER_FILES_MAX);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        names.sort_unstable();
        let _ = writeln!(
            out,
            "\nEarlier tasks, already accepted and not under review here, changed: {}{more}.",
            names.join(", ")
        );
    }
    if let Some(bar) = i.score_threshold {
        let _ = writeln!(
            out,
            "\nScore the work from 0 to 100 in every verdict: this run accepts only work scored {bar:.0} or more."
        );
    }
    out.push_str("\nCall submit_verdict exactly once.");
    out
}

/// A task's state as the worker is told it: in words, never the harness's names.
fn state_in_words(state: &TaskState) -> &'static str {
    match state {
        TaskState::Pending => "not started",
        TaskState::Blocked => "waiting for a task it depends on",
        TaskState::Running | TaskState::Validating | TaskState::Evaluating | TaskState::Rework => {
            "in progress"
        }
        TaskState::Done => "done",
        TaskState::DoneBelowBar => "done, accepted below the quality bar",
        TaskState::DoneUnreviewed => "done, not reviewed",
        TaskState::NeedsOperator => "waiting for a person",
        TaskState::Failed => "not done",
        TaskState::Skipped => "skipped",
        TaskState::Other(_) => "in an unknown state",
    }
}

/// `progress.txt`'s lines (`ID<TAB>OUTCOME<TAB>TITLE`) as sentences: the worker reads what
/// happened, not how the harness files it.
fn progress_in_words(tail: &str) -> String {
    tail.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut parts = line.splitn(3, '\t');
            let (id, outcome, title) = (parts.next(), parts.next(), parts.next());
            let Some(outcome) = outcome else { return line.to_owned() };
            let words = match Outcome::read(outcome) {
                Outcome::Accepted => "accepted",
                Outcome::AcceptedBelowBar => "accepted below the quality bar",
                Outcome::Unreviewed => "accepted without review",
                Outcome::Skipped => "skipped",
                Outcome::Failed(StopReason::OperatorFail) => "stopped by a person",
                Outcome::Failed(_) => "not accepted",
                Outcome::Other(_) => "ended",
            };
            let title = title.map(|t| format!(" ({t})")).unwrap_or_default();
            format!("- {}{title}: {words}", id.unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_is_told_every_state_in_words() {
        for state in TaskState::ALL {
            let words = state_in_words(&state);
            assert!(!words.contains('_') && words != "in an unknown state", "{state}: {words}");
        }
    }

    #[test]
    fn a_resumed_workers_prompt_carries_its_review_history_in_the_projects_words() {
        let task = Task {
            id: "T-001".into(),
            title: "Count words".into(),
            description: String::new(),
            criteria: vec!["counts words".into()],
            tests: vec!["tests/count.rs".into()],
            depends_on: None,
            best_of: None,
        };
        let plan = Plan {
            source: "plan".into(),
            feature: "f".into(),
            overview: None,
            tasks: vec![task.clone()],
            seed: None,
        };
        let reject = Verdict {
            verdict: crate::session::state::Ruling::Reject,
            rejection_category: Some("weak_test".into()),
            concern: "No test counts two words.".into(),
            evidence: vec!["tests/count.rs:3".into()],
            next_step: Some("Test two words.".into()),
            score: None,
            parse_failed: false,
            below_threshold: false,
            witnesses: Vec::new(),
            checked: None,
        };
        let entry = |attempt, verdict: Verdict| LedgerEntry {
            ts: "t".into(),
            iter: 2,
            attempt,
            diff_summary: "src/lib.rs (+3 -0)".into(),
            case: None,
            verdict,
        };
        let ledger = [entry(1, reject), entry(2, Verdict::parse_failed())];
        let warnings = ["T-000 (Setup) was accepted below the quality bar: it was never reviewed; do not rely on it blindly.".to_owned()];
        let prompt = worker_prompt(
            &plan,
            &task,
            &WorkerContext { ledger: &ledger, warnings: &warnings, ..WorkerContext::default() },
        );
        assert!(prompt.contains("## Prior iterations on this task (from review)"), "{prompt}");
        assert!(prompt.contains("Next step: Re-check every acceptance criterion"), "{prompt}");
        for word in ["evaluator", "verdict", "harness", "ledger", "token"] {
            assert!(!prompt.to_lowercase().contains(word), "'{word}' in {prompt}");
        }
    }

    #[test]
    fn caps_say_how_much_there_was() {
        assert_eq!(cap("abc", 5), "abc");
        assert_eq!(cap("abcdef", 3), "abc\n... [truncated, total 6 chars]");
    }
}
