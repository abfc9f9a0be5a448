//! The export as one standalone HTML page: no script, no network, no file beside it; each
//! attempt folds open with `<details>`, so it reads in any browser and in a mail client.

use super::doc::{Block, Inline, Render, Tone};
use super::{ExportHead, FileChange, Row};
use crate::session::timestamp::span;
use std::fmt::Write as _;

/// Text made safe inside HTML.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}\
code{background:#f3f3f3;padding:0 .2rem}details{margin:.4rem 0 .4rem 1rem}summary{cursor:pointer}\
.accept{color:#176b2c}.reject{color:#a4161a}.muted{color:#666}";

/// The whole page, with its style inline.
/// The page's start: its head, the session in a line and a table of its tasks.
pub fn head(e: &ExportHead, rows: &[Row]) -> String {
    let mut out = String::new();
    let feature = e.feature.as_deref().map(|f| format!(": {}", esc(f))).unwrap_or_default();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>harrow session {}</title><style>{STYLE}</style></head><body>\n",
        esc(&e.session)
    );
    let _ = writeln!(out, "<h1>harrow session {}{feature}</h1>", esc(&e.session));
    let _ = writeln!(
        out,
        "<p>{}{} of {} tasks done · {} tokens · {} · {}{}</p>",
        match (&e.worker_model, &e.evaluator_model) {
            (Some(w), Some(v)) => {
                format!("worker <code>{}</code>, evaluator <code>{}</code> · ", esc(w), esc(v))
            }
            (Some(w), None) => format!("worker <code>{}</code> · ", esc(w)),
            _ => String::new(),
        },
        e.tasks_done,
        e.task_count,
        esc(&e.tokens_said()),
        esc(&e.cost_said()),
        esc(&e.status),
        e.stop.as_deref().map(|s| format!(" (stopped: {})", esc(s))).unwrap_or_default()
    );
    out.push_str("<table><tr><th>Task</th><th>Title</th><th>State</th><th>Attempts</th><th>Time</th><th>Cost</th></tr>\n");
    for t in rows {
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(t.title.as_deref().unwrap_or("")),
            esc(&t.state),
            t.rounds,
            t.elapsed_ms.map_or_else(|| "-".into(), span),
            esc(&super::cost_said(t.estimated, t.cost)),
            id = esc(&t.id),
        );
    }
    out.push_str("</table>\n");
    out
}

/// The page's end: the files the session's branch changed, when known.
pub fn tail(changes: Option<&[FileChange]>) -> String {
    let mut out = String::new();
    if let Some(changes) = changes {
        out.push_str("<h2>Changes on the session branch</h2>\n<table><tr><th>File</th><th>+</th><th>−</th></tr>\n");
        for f in changes {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                esc(&f.path),
                f.added,
                f.removed
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// HTML: an attempt folds open with `<details>`.
pub struct Html;

impl Render for Html {
    fn block(out: &mut String, b: &Block) {
        match b {
            Block::Heading { level, anchor, line } => {
                let id =
                    anchor.as_deref().map(|a| format!(" id=\"{}\"", esc(a))).unwrap_or_default();
                let _ = writeln!(out, "<h{level}{id}>{}</h{level}>", inline(line));
            }
            Block::Para(line) => {
                let _ = writeln!(out, "<p>{}</p>", inline(line));
            }
            Block::List(items) => {
                out.push_str("<ul>");
                for item in items {
                    let _ = write!(out, "<li>{}", inline(&item.line));
                    if !item.under.is_empty() {
                        out.push_str("<ul>");
                        for under in &item.under {
                            let _ = write!(out, "<li>{}</li>", inline(under));
                        }
                        out.push_str("</ul>");
                    }
                    out.push_str("</li>");
                }
                out.push_str("</ul>\n");
            }
            Block::Table { header, rows } => {
                out.push_str("<table><tr>");
                for h in header {
                    let _ = write!(out, "<th>{}</th>", esc(h));
                }
                out.push_str("</tr>");
                for row in rows {
                    out.push_str("<tr>");
                    for c in row {
                        let _ = write!(out, "<td>{}</td>", inline(c));
                    }
                    out.push_str("</tr>");
                }
                out.push_str("</table>\n");
            }
            Block::Fold { line, tone, blocks } => {
                let class = match tone {
                    Tone::Accepted => "accept",
                    Tone::Rejected => "reject",
                    Tone::NotJudged => "muted",
                };
                let _ = writeln!(
                    out,
                    "<details><summary><span class=\"{class}\">{}</span></summary>",
                    inline(line)
                );
                for b in blocks {
                    Self::block(out, b);
                }
                out.push_str("</details>\n");
            }
        }
    }
}

/// A line, every piece of it escaped: harrow's own words too, which carry no markup.
fn inline(line: &[Inline]) -> String {
    line.iter()
        .map(|piece| match piece {
            Inline::Own(s) | Inline::Text(s) => esc(s),
            Inline::Code(s) => format!("<code>{}</code>", esc(s)),
            Inline::Strong(s) => format!("<b>{}</b>", esc(s)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Attempt, Case, Decision, TaskExport, VerdictExport};

    /// Every word of a task that a model, a tool or a log wrote reaches the page as text: a
    /// tag in a title, a criterion, an evidence pointer, an anchor or an operator's reason
    /// stays text.
    #[test]
    fn model_and_log_words_never_become_markup() {
        let evil = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let attempt = Attempt {
            number: 1,
            case: Some(Case { summary: evil.into(), criteria: vec![(evil.into(), evil.into())] }),
            verdict: Some(VerdictExport {
                verdict: evil.into(),
                category: Some(evil.into()),
                concern: evil.into(),
                evidence: vec![evil.into()],
                next_step: Some(evil.into()),
                ..VerdictExport::default()
            }),
            ..Attempt::default()
        };
        let t = TaskExport {
            id: evil.into(),
            title: Some(evil.into()),
            state: evil.into(),
            commit: Some(evil.into()),
            attempts: vec![attempt],
            decisions: vec![Decision { action: evil.into(), reason: Some(evil.into()) }],
            ..TaskExport::default()
        };
        let page = <super::Html as super::Render>::task(&t);
        assert!(!page.contains("<script") && !page.contains("<img"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;"), "{page}");
    }
}
