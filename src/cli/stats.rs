//! `harrow stats`: how good the judge has been, over every session found — its rulings,
//! where the operator overruled it, how often its evidence failed harrow's check, and what a
//! landed task and its rework cost.

use super::DirArgs;
use super::format::{dollars, table};
use crate::printable;
use crate::session::discover::{self, Found};
use crate::session::judge::{JudgeFigures, JudgeFold};
use crate::session::scan::scan;
use crate::session::summary::SummaryFold;
use crate::session::vocabulary::WrittenBy;
use color_eyre::eyre::Result;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dirs: DirArgs,
    /// Print the figures as JSON: the totals, the rates, and each session's.
    #[arg(long)]
    pub json: bool,
}

/// One session's figures.
#[derive(Debug, Serialize)]
struct SessionFigures {
    id: String,
    /// `harrow` or `tilth`.
    format: String,
    #[serde(flatten)]
    figures: JudgeFigures,
}

/// The rates a person reads first, as fractions (0–1); absent when there is nothing to
/// divide by.
#[derive(Debug, Serialize)]
struct Rates {
    accept_rate: Option<f64>,
    override_rate: Option<f64>,
    evidence_failure_rate: Option<f64>,
    cost_per_landed_task: Option<f64>,
    rework_share: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Stats {
    sessions: usize,
    harrow_sessions: usize,
    tilth_sessions: usize,
    total: JudgeFigures,
    rates: Rates,
    per_session: Vec<SessionFigures>,
}

fn ratio(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole)
}

#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn rates(t: &JudgeFigures) -> Rates {
    let judged = t.judged() as f64;
    Rates {
        accept_rate: ratio(t.verdicts.accepts as f64, judged),
        override_rate: ratio(t.overrides.total() as f64, judged),
        evidence_failure_rate: ratio(t.evidence_failed as f64, t.evidence_checked as f64),
        cost_per_landed_task: ratio(t.cost, t.landed as f64),
        rework_share: ratio(t.rework_cost, t.cost),
    }
}

/// Reads one session's log once, folding its summary and its judge's record side by side.
fn session_figures(found: &Found) -> std::io::Result<SessionFigures> {
    let events = crate::session::dir::SessionDir::new(&found.dir).events();
    let mut summary = SummaryFold::new(Some(found.id.clone()));
    let mut judge = JudgeFold::default();
    let report = scan(&events, |_, fact| {
        summary.apply(fact);
        judge.apply(fact);
    })?;
    let summary = summary.finish(&report);
    Ok(SessionFigures {
        id: found.id.clone(),
        format: summary.harrow.format.clone(),
        figures: judge.finish(&summary),
    })
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let roots = super::session_roots(&args.dirs.dirs)?;
    let mut per_session = Vec::new();
    for found in discover::list(&roots) {
        match session_figures(&found) {
            Ok(figures) => per_session.push(figures),
            Err(e) => eprintln!(
                "harrow: {} cannot be read and is left out: {e}",
                printable::line(&found.dir.display().to_string())
            ),
        }
    }
    let mut total = JudgeFigures::default();
    for s in &per_session {
        total.add(&s.figures);
    }
    let tilth_sessions =
        per_session.iter().filter(|s| WrittenBy::Tilth.is(Some(&s.format))).count();
    let stats = Stats {
        sessions: per_session.len(),
        harrow_sessions: per_session.len() - tilth_sessions,
        tilth_sessions,
        rates: rates(&total),
        total,
        per_session,
    };
    let mut out = super::out::stdout();
    if args.json {
        writeln!(out, "{}", printable::json_pretty(&stats)?)?;
    } else if stats.sessions == 0 {
        let searched: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
        writeln!(out, "No sessions in {}.", printable::line(&searched.join(" or ")))?;
    } else {
        out.write_all(render(&stats).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(String::new, |r| format!(" ({:.0} %)", r * 100.0))
}

/// Dollars, marked a floor when some calls reported no cost.
fn spent(cost: f64, uncounted: u64) -> String {
    if uncounted > 0 { format!("{}+?", dollars(cost)) } else { dollars(cost) }
}

fn render(stats: &Stats) -> String {
    let total = &stats.total;
    let rates = &stats.rates;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Sessions   {} ({} harrow, {} Tilth)",
        stats.sessions, stats.harrow_sessions, stats.tilth_sessions
    );
    let verdicts = &total.verdicts;
    let _ = writeln!(
        out,
        "Verdicts   {} by the evaluator: {} accepted{}, {} rejected",
        total.judged(),
        verdicts.accepts,
        percent(rates.accept_rate),
        verdicts.rejects
    );
    if !verdicts.rejection_categories.is_empty() {
        let mut by: Vec<(&String, &u64)> = verdicts.rejection_categories.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let words: Vec<String> =
            by.iter().map(|(c, n)| format!("{} {n}", printable::line(c))).collect();
        let _ = writeln!(out, "           rejected for: {}", words.join(", "));
    }
    let mut aside = Vec::new();
    if total.by_harness > 0 {
        aside.push(format!("{} judged by harrow itself (an empty diff)", total.by_harness));
    }
    if total.unreadable > 0 {
        aside.push(format!("{} answer(s) that were no verdict", total.unreadable));
    }
    if !aside.is_empty() {
        let _ = writeln!(out, "           besides: {}", aside.join(", "));
    }
    let overrides = &total.overrides;
    let _ = writeln!(
        out,
        "Overrides  {} of {} verdicts{}: {} approved after a reject · {} rejected after an accept · {} force-accepted",
        overrides.total(),
        total.judged(),
        percent(rates.override_rate),
        overrides.approved_after_reject,
        overrides.rejected_after_accept,
        overrides.force_accepted
    );
    let evidence = &total.evidence;
    if total.evidence_checked == 0 {
        let _ = writeln!(
            out,
            "Evidence   no accept's witnesses were checked (evidence off, or older runs)"
        );
    } else {
        let _ = writeln!(
            out,
            "Evidence   {} of {} accepts failed harrow's check at first{}: seen {} · sent back {} · then held {} · landed marked (warn) {}",
            total.evidence_failed,
            total.evidence_checked,
            percent(rates.evidence_failure_rate),
            evidence.seen,
            evidence.sent_back,
            evidence.held,
            evidence.warned
        );
    }
    let per_task = rates.cost_per_landed_task.map_or_else(
        || "no task landed".to_owned(),
        |c| format!("{} a task", spent(c, total.uncounted_calls)),
    );
    let _ = writeln!(
        out,
        "Cost       {} for {} landed task(s): {per_task} · {} on rework{}",
        spent(total.cost, total.uncounted_calls),
        total.landed,
        spent(total.rework_cost, total.uncounted_calls),
        percent(rates.rework_share)
    );
    if total.uncounted_calls > 0 {
        let _ = writeln!(
            out,
            "           {} call(s) reported no usage (an agent's): the dollars are a floor",
            total.uncounted_calls
        );
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = stats
        .per_session
        .iter()
        .map(|row| {
            let f = &row.figures;
            vec![
                printable::line(&row.id),
                row.format.clone(),
                f.verdicts.accepts.to_string(),
                f.verdicts.rejects.to_string(),
                f.overrides.total().to_string(),
                format!("{}/{}", f.evidence_failed, f.evidence_checked),
                f.landed.to_string(),
                spent(f.cost, f.uncounted_calls),
                spent(f.rework_cost, f.uncounted_calls),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "SESSION",
            "FORMAT",
            "ACCEPTS",
            "REJECTS",
            "OVERRIDES",
            "EVIDENCE FAILED",
            "LANDED",
            "COST",
            "REWORK",
        ],
        &rows,
    ));
    out
}
