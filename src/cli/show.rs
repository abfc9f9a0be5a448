//! `harrow show`: one session's summary, as a table or as Tilth-compatible JSON.

use super::SessionArg;
use super::format::{dollars, short_ts, table, thousands};
use crate::session::checkpoint::CheckpointRead;
use crate::session::listing::tasks_total;
use crate::session::state::TaskState;
use crate::session::status::SessionStatus;
use crate::session::summary::{Usage, VerdictCounts};
use crate::session::timestamp::span;
use crate::session::{Overview, overview};
use color_eyre::eyre::{Result, WrapErr};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// Print the summary as JSON: Tilth's summary.json v4 keys, plus harrow's under "harrow".
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let o = overview(&found.dir, &found.id)
        .wrap_err_with(|| format!("cannot read session {}", found.dir.display()))?;
    let mut out = super::out::stdout();
    if args.json {
        // Serde writes a token at a time: gathered into large pieces before the escaping.
        let mut pieces = std::io::BufWriter::with_capacity(1 << 16, &mut out);
        crate::printable::json_pretty_to(&mut pieces, &o.summary)?;
        writeln!(pieces)?;
        pieces.flush()?;
        drop(pieces);
    } else {
        out.write_all(render(&o).as_bytes())?;
    }
    out.flush()?;
    // The process ends with this verb: a large session's summary (tens of thousands of
    // tasks) is left to the exit rather than freed map by map, which took 4 % of the time.
    std::mem::forget(o);
    Ok(ExitCode::SUCCESS)
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    let mut pairs: Vec<(&String, &u64)> = map.iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    pairs.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

fn verdicts(v: &VerdictCounts) -> String {
    let mut s = format!("{} accepted, {} rejected", v.accepts, v.rejects);
    if !v.rejection_categories.is_empty() {
        let _ = write!(s, " ({})", counts(&v.rejection_categories));
    }
    s
}

fn usage_line(u: &Usage) -> String {
    // Calls that reported no usage leave the tokens unknown, or the figures a floor.
    let total = match (u.uncounted, u.total) {
        (0, t) => thousands(t),
        (n, 0) => return format!("unknown ({n} call(s) reported no usage)  {}", dollars(u.cost)),
        (n, t) => format!("{}+? ({n} call(s) reported no usage)", thousands(t)),
    };
    // A server that counts nothing (llama.cpp's stream) has its calls estimated from
    // characters: the figures are approximate, and say so.
    let total = match u.estimated {
        0 => total,
        n => format!("~{total} ({n} call(s) estimated from characters: the server sent no usage)"),
    };
    // What the server did not count, it did not price either: that cost is unknown.
    let cost = match (u.estimated, u.cost) {
        (0, c) => dollars(c),
        (_, 0.0) => "cost unknown".to_owned(),
        (_, c) => format!("{}+? (the estimated calls' cost unknown)", dollars(c)),
    };
    format!(
        "{} (prompt {} · completion {} · cached {} · reasoning {})  {}",
        total,
        thousands(u.prompt),
        thousands(u.eval),
        thousands(u.cached),
        thousands(u.reasoning),
        cost
    )
}

fn status_sentence(o: &Overview) -> String {
    let s = &o.summary;
    let stop = s.final_stop().unwrap_or("");
    let waits_on = s.harrow.waiting_on.as_deref().filter(|t| !t.is_empty());
    match o.status {
        SessionStatus::Running => "running: a live process holds the session".into(),
        SessionStatus::Held => match waits_on {
            Some(task) => format!("held: task {task} waits for a decision"),
            None => "held: a task waits for a decision".into(),
        },
        SessionStatus::Paused => "paused: live, starting no new task until resumed".into(),
        SessionStatus::Silent => {
            "silent: held by a process on another machine that has written nothing for ten minutes or more".into()
        }
        SessionStatus::Stopped => format!("stopped: stopped on '{stop}', resumable"),
        SessionStatus::Done => "done: every task finished".into(),
        SessionStatus::Failed => format!("failed: stopped on '{stop}'"),
        SessionStatus::Crashed => {
            "crashed: no final stop in the log, no live process holds it, and the checkpoint says running".into()
        }
        SessionStatus::Empty => "empty: nothing has been recorded".into(),
    }
}

/// The readable summary.
pub fn render(o: &Overview) -> String {
    let s = &o.summary;
    let h = &s.harrow;
    let mut out = String::new();
    let id = s.session_id.as_deref().unwrap_or("?");
    let _ = writeln!(out, "Session   {id}  ({} format)", h.format);
    let _ = writeln!(out, "Folder    {}", o.dir.display());
    let _ = writeln!(out, "Status    {}", status_sentence(o));
    if let Some(sandbox) = &h.sandbox {
        let _ = writeln!(out, "Sandbox   {}", crate::printable::line(sandbox));
    }
    if h.no_eval {
        let _ =
            writeln!(out, "Review    none: this run had the evaluator switched off (unreviewed)");
    }
    let _ = writeln!(
        out,
        "Time      started {}, last event {}",
        short_ts(s.started_at.as_deref()),
        short_ts(s.last_event_at.as_deref())
    );
    let _ = writeln!(out, "Tasks     {} of {} done", h.tasks_done, tasks_total(o));
    if let Some(pushed) = &h.pushed {
        let _ = writeln!(out, "Pushed    {}", crate::printable::line(pushed));
    }
    if let Some(url) = &h.pull_request {
        let _ = writeln!(out, "Pull req. {}", crate::printable::line(url));
    }
    let _ = writeln!(out, "Tokens    {}", usage_line(&s.tokens.all));
    for (role, u) in &h.tokens_by_role {
        let _ = writeln!(out, "  {role:<10}{}", usage_line(u));
    }
    // A role that fell back or escalated used more than one model: what each cost.
    if h.tokens_by_model.len() > 1 {
        let _ = writeln!(out, "By model");
        let names: Vec<String> =
            h.tokens_by_model.keys().map(|m| crate::printable::line(m)).collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        for (name, u) in names.iter().zip(h.tokens_by_model.values()) {
            let _ = writeln!(out, "  {name:<width$}  {}", usage_line(u));
        }
    }
    let _ = writeln!(
        out,
        "Calls     {} model calls, {} unhealthy ({} of them retried)",
        h.model_calls, h.unhealthy_model_calls, h.retried_model_calls
    );
    let _ = writeln!(out, "Verdicts  {}", verdicts(&s.evaluator));
    if h.verdicts_parse_failed > 0 {
        let _ = writeln!(
            out,
            "          {} failed closed after unparseable answers",
            h.verdicts_parse_failed
        );
    }
    if h.validators.runs > 0 {
        let _ = writeln!(
            out,
            "Checks    {} validator runs, {} failed",
            h.validators.runs, h.validators.failed
        );
    }
    if !s.tool_histogram.is_empty() {
        let _ = writeln!(out, "Tools     {}", counts(&s.tool_histogram));
    }
    for (hook, outcomes) in &s.hook_outcomes {
        let _ = writeln!(out, "Hooks     {hook}: {}", counts(outcomes));
    }
    if !h.unreviewed.is_empty() {
        let _ = writeln!(
            out,
            "Unreviewed {} (accepted with the evaluator switched off: --no-eval)",
            h.unreviewed.join(", ")
        );
    }
    if !h.below_bar.is_empty() {
        let _ = writeln!(
            out,
            "Below bar {} (accepted at the rework cap without passing review)",
            h.below_bar.join(", ")
        );
    }
    if !s.tasks.is_empty() {
        out.push('\n');
        out.push_str(&task_table(o));
    }
    best_of_lines(o, &mut out);
    out.push('\n');
    render_end(o, &mut out);
    out
}

/// Each best-of task's attempts as they were weighed: model, outcome, change, cost, time.
fn best_of_lines(o: &Overview, out: &mut String) {
    for (id, d) in o.summary.harrow.tasks.iter().filter(|(_, d)| !d.best_of.is_empty()) {
        let landed = d
            .best_of_landed
            .map_or_else(|| "none landed".to_owned(), |k| format!("attempt {k} landed"));
        let _ = writeln!(
            out,
            "\nBest of {} for {}: {landed}",
            d.best_of.len(),
            crate::printable::line(id)
        );
        let rows: Vec<Vec<String>> = d
            .best_of
            .iter()
            .map(|c| {
                let mut outcome = crate::printable::line(&c.outcome);
                if let Some(why) = &c.why_not {
                    let _ = write!(outcome, " — {}", crate::printable::line(why));
                }
                vec![
                    c.attempt.to_string(),
                    crate::printable::line(&c.model),
                    crate::printable::line(&c.diff_summary),
                    dollars(c.cost),
                    format!("{:.1} s", c.elapsed_ms as f64 / 1000.0),
                    outcome,
                ]
            })
            .collect();
        out.push_str(&table(&["ATTEMPT", "MODEL", "CHANGE", "COST", "TIME", "OUTCOME"], &rows));
    }
}

/// One row a task: its state, lane, dependencies, attempts, time, usage and a note.
fn task_table(o: &Overview) -> String {
    let s = &o.summary;
    let h = &s.harrow;
    let not_begun = h.tasks.keys().filter(|id| !s.tasks.contains_key(*id));
    // A task at work when the run ended, and nothing works it now, restarts on resume.
    let ended = !o.live
        && matches!(
            o.status,
            SessionStatus::Stopped | SessionStatus::Failed | SessionStatus::Crashed
        );
    let state = |d: &crate::session::summary::TaskDetail| {
        if ended && d.state.is_at_work() {
            format!("interrupted ({}; restarts on resume)", d.state)
        } else {
            d.state.to_string()
        }
    };
    let empty = crate::session::summary::TaskSummary::default();
    let rows: Vec<Vec<String>> = s
        .tasks
        .iter()
        .chain(not_begun.map(|id| (id, &empty)))
        .map(|(id, t)| {
            let d = h.tasks.get(id);
            let mut note = Vec::new();
            if let Some(d) = d.filter(|d| !d.failure_reasons.is_empty()) {
                let verb = if d.state == TaskState::Failed { "failed" } else { "failed before" };
                note.push(format!("{verb}: {}", d.failure_reasons.join(", ")));
            }
            if let Some(d) = d.filter(|d| d.merge_reworks > 0) {
                let times = if d.merge_reworks > 1 {
                    format!(" ({}×)", d.merge_reworks)
                } else {
                    String::new()
                };
                note.push(format!(
                    "sent back after its accept{times}: {}",
                    crate::session::outcome::not_landed_because(&d.conflicts)
                ));
            }
            if let Some(c) = d.and_then(|d| d.last_category.as_deref()) {
                note.push(format!("last reject: {c}"));
            }
            if d.is_some_and(|d| d.by_operator) {
                note.push("accepted by the operator".into());
            }
            for (attempt, model) in d.map(|d| d.worker_models.as_slice()).unwrap_or_default() {
                let model = crate::printable::line(model);
                note.push(format!("from attempt {attempt}: {model}"));
            }
            vec![
                id.clone(),
                d.map_or_else(|| t.status.clone(), state),
                d.and_then(|d| d.lane).map_or_else(|| "-".into(), |n| n.to_string()),
                d.map(|d| d.depends_on.join(","))
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| "-".into()),
                d.map_or(0, |d| d.attempts).to_string(),
                t.iterations.to_string(),
                d.and_then(|d| d.elapsed_ms).map_or_else(|| "-".into(), span),
                thousands(t.tokens.all.total),
                dollars(t.tokens.all.cost),
                t.tool_calls.values().sum::<u64>().to_string(),
                t.hook_blocks.to_string(),
                format!("{}✓ {}✗", t.evaluator.accepts, t.evaluator.rejects),
                note.join("; "),
            ]
        })
        .collect();
    let mut header = vec![
        "TASK", "STATE", "LANE", "AFTER", "ATTEMPTS", "ITERS", "TIME", "TOKENS", "COST", "TOOLS",
        "BLOCKED", "VERDICTS", "NOTE",
    ];
    let mut rows = rows;
    // The lane and what a task waits for are columns only for a run that had them.
    let graph = h.tasks.values().any(|d| !d.depends_on.is_empty());
    let lanes = h.tasks.values().any(|d| d.lane.is_some());
    for (column, keep) in [(3, graph), (2, lanes)] {
        if !keep {
            header.remove(column);
            for row in &mut rows {
                row.remove(column);
            }
        }
    }
    table(&header, &rows)
}

/// The last stop and what the reading found wrong with the folder.
fn render_end(o: &Overview, out: &mut String) {
    let s = &o.summary;
    let h = &s.harrow;
    match &s.stop {
        Some(stop) => {
            let _ = writeln!(
                out,
                "Last stop {} at {}",
                stop.reason.as_deref().unwrap_or("?"),
                short_ts(stop.ts.as_deref())
            );
        }
        None => {
            let _ = writeln!(out, "Last stop none recorded");
        }
    }
    if o.log_missing {
        let _ = writeln!(out, "Log       events.jsonl is missing: only the checkpoint was read");
    } else if h.events == 0 {
        let _ = writeln!(out, "Log       events.jsonl is empty");
    }
    if let CheckpointRead::Unreadable(why) = &o.checkpoint {
        let _ = writeln!(out, "Checkpoint unreadable ({why}); status comes from the log alone");
    }
    let report = crate::session::scan::ScanReport {
        unreadable: h.unreadable_lines.lines.clone(),
        unreadable_count: h.unreadable_lines.count,
        ..Default::default()
    };
    if let Some(sentence) = report.unreadable_sentence() {
        let _ = writeln!(out, "Warning   {sentence} skipped");
    }
    if h.pending_bytes > 0 {
        let _ = writeln!(
            out,
            "Note      the last line ({} bytes) has no newline yet: being written, or torn by a crash",
            h.pending_bytes
        );
    }
}
