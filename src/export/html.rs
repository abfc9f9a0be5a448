//! The export as one standalone HTML page: no script, no network, no file beside it; each
//! attempt folds open with `<details>`, so it reads in any browser and in a mail client.

use super::{Attempt, ExportHead, FileChange, Row, TaskExport};
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
        "<p>{}{} of {} tasks done · {} tokens · ${:.3} · {}{}</p>",
        match (&e.worker_model, &e.evaluator_model) {
            (Some(w), Some(v)) => {
                format!("worker <code>{}</code>, evaluator <code>{}</code> · ", esc(w), esc(v))
            }
            (Some(w), None) => format!("worker <code>{}</code> · ", esc(w)),
            _ => String::new(),
        },
        e.tasks_done,
        e.task_count,
        e.tokens,
        e.cost,
        esc(&e.status),
        e.stop.as_deref().map(|s| format!(" (stopped: {})", esc(s))).unwrap_or_default()
    );
    out.push_str("<table><tr><th>Task</th><th>Title</th><th>State</th><th>Attempts</th><th>Time</th><th>Cost</th></tr>\n");
    for t in rows {
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>${:.3}</td></tr>",
            esc(t.title.as_deref().unwrap_or("")),
            esc(&t.state),
            t.rounds,
            t.elapsed_ms.map_or_else(|| "-".into(), span),
            t.cost,
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

/// One task's section.
pub fn task(t: &TaskExport) -> String {
    let mut out = String::new();
    write_task(&mut out, t);
    out
}

fn write_task(out: &mut String, t: &TaskExport) {
    let title = t.title.as_deref().map(|x| format!(" — {}", esc(x))).unwrap_or_default();
    let _ = writeln!(out, "<section id=\"{id}\"><h2>{id}{title}</h2>", id = esc(&t.id));
    let _ = writeln!(
        out,
        "<p><b>{}</b>{} · {} · {} tokens · ${:.3}{}</p>",
        esc(&t.state),
        t.ended_because.as_deref().map(|w| format!(" · {}", esc(w))).unwrap_or_default(),
        t.elapsed_ms.map_or_else(|| "-".into(), span),
        t.tokens,
        t.cost,
        t.commit
            .as_deref()
            .map(|c| format!(
                " · commit <code>{}</code>",
                esc(&c.chars().take(7).collect::<String>())
            ))
            .unwrap_or_default()
    );
    for a in &t.attempts {
        attempt(out, a);
    }
    if !t.decisions.is_empty() {
        out.push_str("<p>Operator:</p><ul>");
        for d in &t.decisions {
            let why = d.reason.as_deref().map(|r| format!(" — {}", esc(r))).unwrap_or_default();
            let _ = write!(out, "<li>{}{why}</li>", esc(&d.action));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn attempt(out: &mut String, a: &Attempt) {
    let outcome = a.outcome();
    let class = match &a.verdict {
        Some(v) if v.accepted() => "accept",
        None if outcome == "not judged" => "muted",
        _ => "reject",
    };
    let _ = writeln!(
        out,
        "<details><summary>Attempt {} — <span class=\"{class}\">{}</span></summary>",
        a.number,
        esc(&outcome)
    );
    if let Some(case) = &a.case {
        let _ = write!(out, "<p>Case: {}</p><ul>", esc(&case.summary));
        for (criterion, by) in &case.criteria {
            let _ = write!(out, "<li>{} → <code>{}</code></li>", esc(criterion), esc(by));
        }
        out.push_str("</ul>\n");
    }
    if !a.validator_runs.is_empty() {
        let _ = writeln!(out, "<p>Validators: {}</p>", esc(&a.checks_line()));
    }
    if let Some(v) = &a.verdict {
        let by = if v.by_harness { " (by harrow, not the evaluator)" } else { "" };
        let _ = write!(
            out,
            "<p>Verdict: <b class=\"{class}\">{}</b>{}{by}: {}</p><ul>",
            esc(&v.verdict),
            v.category.as_deref().map(|c| format!(" ({})", esc(c))).unwrap_or_default(),
            esc(&v.concern)
        );
        for pointer in &v.evidence {
            let _ = write!(out, "<li>Evidence: <code>{}</code></li>", esc(pointer));
        }
        if let Some(next) = &v.next_step {
            let _ = write!(out, "<li>Next step: {}</li>", esc(next));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</details>\n");
}
