//! The export as Markdown: short enough for a pull request description or an issue comment,
//! complete enough to see why each task ended as it did.

use super::doc::{Block, Inline, Render};
use super::{ExportHead, FileChange, Row};
use crate::session::timestamp::span;
use crate::session::vocabulary::WrittenBy;
use std::fmt::Write as _;

/// Model-written text as inert Markdown: on one line, so it cannot break a table cell or start
/// a list; `<`, `>` and `&` as entities, so no HTML (`<script>`, `<img onerror>`, `<iframe>`)
/// or autolink survives; `[`, `]` and `|` escaped, so it cannot make a link or image
/// (`[x](javascript:…)`) or a new cell.
fn cell(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Model-written text as a code span, fenced with more backticks than it contains. Text with
/// markup characters is given as escaped plain text instead, so no renderer that treats code
/// spans loosely ever sees a tag.
fn code(text: &str) -> String {
    if text.contains(['<', '>', '&', '[', ']']) {
        return cell(text);
    }
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let longest = one_line.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if one_line.starts_with('`') || one_line.ends_with('`') {
        format!("{fence} {one_line} {fence}")
    } else {
        format!("{fence}{one_line}{fence}")
    }
}

/// The export's head as Markdown: the session in a line, then a table of its tasks.
pub fn head(e: &ExportHead, rows: &[Row]) -> String {
    let mut out = String::new();
    let feature = e.feature.as_deref().map(|f| format!(": {}", cell(f))).unwrap_or_default();
    let _ = writeln!(out, "# harrow session {}{feature}\n", e.session);
    let models = match (&e.worker_model, &e.evaluator_model) {
        (Some(w), Some(v)) => format!("worker {}, evaluator {} · ", code(w), code(v)),
        (Some(w), None) => format!("worker {} · ", code(w)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{models}{} of {} tasks done · {} tokens · {} · {}{}\n",
        e.tasks_done,
        e.task_count,
        e.tokens_said(),
        e.cost_said(),
        e.status,
        e.stop.as_deref().map(|s| format!(" (stopped: {})", cell(s))).unwrap_or_default()
    );
    if WrittenBy::Tilth.is(Some(&e.written_by)) {
        out.push_str("_Written by Tilth: it kept less than harrow does (no validator output, no kept attempts)._\n\n");
    }
    out.push_str("| Task | Title | State | Attempts | Time | Cost |\n|---|---|---|---|---|---|\n");
    for t in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&t.id),
            cell(t.title.as_deref().unwrap_or("")),
            t.state,
            t.rounds,
            t.elapsed_ms.map_or_else(|| "-".into(), span),
            super::cost_said(t.estimated, t.cost)
        );
    }
    out
}

/// The files the session's branch changed, when the repository was there to ask.
pub fn tail(changes: Option<&[FileChange]>) -> String {
    let mut out = String::new();
    if let Some(changes) = changes {
        out.push_str("\n## Changes on the session branch\n\n");
        if changes.is_empty() {
            out.push_str("No file changed.\n");
        } else {
            out.push_str("| File | + | − |\n|---|---|---|\n");
            for f in changes {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    code(&f.path).replace('|', "\\|"),
                    f.added,
                    f.removed
                );
            }
        }
    }
    out
}

/// Markdown: an attempt is a heading under its task, since Markdown folds nothing.
pub struct Markdown;

impl Render for Markdown {
    /// A block, after a blank line.
    fn block(out: &mut String, b: &Block) {
        match b {
            Block::Heading { level, line, .. } => {
                let _ = writeln!(out, "\n{} {}", "#".repeat(usize::from(*level)), inline(line));
            }
            Block::Para(line) => {
                let _ = writeln!(out, "\n{}", inline(line));
            }
            Block::List(items) => {
                out.push('\n');
                for item in items {
                    let _ = writeln!(out, "- {}", inline(&item.line));
                    for under in &item.under {
                        let _ = writeln!(out, "  - {}", inline(under));
                    }
                }
            }
            Block::Table { header, rows } => {
                let _ = writeln!(out, "\n| {} |", header.join(" | "));
                let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|c| inline(c)).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
            }
            // Markdown folds nothing: the attempt is a heading under its task.
            Block::Fold { line, blocks, .. } => {
                let _ = writeln!(out, "\n### {}", inline(line));
                for b in blocks {
                    Self::block(out, b);
                }
            }
        }
    }
}

/// A line: harrow's words as they are, anything else made inert.
fn inline(line: &[Inline]) -> String {
    line.iter()
        .map(|piece| match piece {
            Inline::Own(s) => s.clone(),
            Inline::Text(s) => cell(s),
            Inline::Code(s) => code(s),
            Inline::Strong(s) => format!("**{}**", cell(s)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Attempt, TaskExport, VerdictExport};

    /// A conflicting file the worker named to break out of its line — a heading, a link — stays
    /// text inside the attempt's heading.
    #[test]
    fn a_hostile_file_name_in_an_outcome_stays_one_cell() {
        let attempt = Attempt {
            number: 1,
            verdict: Some(VerdictExport { verdict: "accept".into(), ..VerdictExport::default() }),
            sent_back: Some("it conflicted in a\n## Injected [x](javascript:alert(1))".into()),
            ..Attempt::default()
        };
        let t = TaskExport { id: "T-1".into(), attempts: vec![attempt], ..TaskExport::default() };
        let md = <super::Markdown as super::Render>::task(&t);
        assert!(!md.lines().any(|l| l.starts_with("## Injected")), "{md}");
        assert!(md.contains("\\[x\\](javascript:alert(1))"), "the link is escaped: {md}");
    }

    /// A witness the evaluator cited with a cell break, a tag and a line break in it stays one
    /// cell of one row.
    #[test]
    fn a_hostile_witness_stays_one_cell_of_its_row() {
        let witness = crate::session::event::WitnessSeen {
            criterion: 1,
            kind: "code".into(),
            cited: "a.rs:1 | <img src=x onerror=alert(1)>\n| 9 | forged | row |".into(),
            seen: false,
            why: Some("not | in the diff".into()),
        };
        let verdict = VerdictExport {
            verdict: "accept".into(),
            witnesses: vec![witness],
            ..VerdictExport::default()
        };
        let attempt = Attempt { number: 1, verdict: Some(verdict), ..Attempt::default() };
        let t = TaskExport { id: "T-1".into(), attempts: vec![attempt], ..TaskExport::default() };
        let md = <super::Markdown as super::Render>::task(&t);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 2, "the header and one row: {md}");
        assert_eq!(rows[1].matches(" | ").count(), 3, "four cells: {}", rows[1]);
        assert!(!md.contains("<img"), "{md}");
    }
}
