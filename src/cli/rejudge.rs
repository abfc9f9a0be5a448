//! `harrow rejudge`: a session's judged cases asked again of another evaluator, and where the
//! two judges differ — to try a new judge on real history before switching to it.

// The flags' help names environment variables as a shell does.
#![allow(clippy::doc_markdown)]

use super::SessionArg;
use super::format::{dollars, thousands};
use super::run::brain_config;
use super::run_flags::ModelArgs;
use crate::brain::client::Brain;
use crate::harness::rejudge::{Agreement, Answer, Asking, Ruled, ask, compare, history};
use crate::printable;
use crate::session::dir::SessionDir;
use crate::session::state::Ruling;
use color_eyre::eyre::{Result, WrapErr};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// The evaluator model to ask.
    #[arg(long, value_name = "MODEL")]
    pub evaluator_model: String,
    /// Its base URL (default: $HARROW_EVALUATOR_BASE_URL, else the run's base URL).
    #[arg(long, value_name = "URL")]
    pub evaluator_base_url: Option<String>,
    /// The run's OpenAI-compatible base URL (default: $HARROW_BASE_URL, else the
    /// configuration's); the evaluator's key follows the same rules as in `run`.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The configuration file (default: $HARROW_CONFIG, else the platform config dir): its
    /// timeouts, retries, prices and evaluator fallbacks apply.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Ask about the cases of this task only.
    #[arg(long, value_name = "T-NNN")]
    pub task: Option<String>,
    /// Print every case and both verdicts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One case, both verdicts.
#[derive(Debug, Serialize)]
struct Case {
    #[serde(flatten)]
    asking: Asking,
    now: Answer,
    agreement: Agreement,
}

#[derive(Debug, Serialize)]
struct Report {
    session: String,
    was_model: Option<String>,
    model: String,
    cases: Vec<Case>,
    /// Askings the log keeps only part of the prompt of, not asked.
    cut: usize,
    agree: usize,
    differ: usize,
    cost: f64,
    tokens: u64,
}

fn brain(args: &Args) -> Result<Brain> {
    let config = crate::config::Config::load(args.config.as_deref())
        .map(|(c, _)| c)
        .map_err(|e| super::UsageError(e.to_string()))?;
    let models = ModelArgs {
        base_url: args.base_url.clone(),
        worker_model: Some(args.evaluator_model.clone()),
        evaluator_model: Some(args.evaluator_model.clone()),
        evaluator_base_url: args.evaluator_base_url.clone(),
    };
    let config = brain_config(&models, &config)?;
    Brain::new(config).wrap_err("cannot set up the evaluator's client")
}

fn ruling_words(ruling: Option<Ruling>, category: Option<&str>) -> String {
    match (ruling, category) {
        (Some(Ruling::Reject), Some(c)) => format!("reject ({})", printable::line(c)),
        (Some(r), _) => r.as_str().to_owned(),
        (None, _) => "no verdict".to_owned(),
    }
}

fn mark(agreement: Agreement) -> &'static str {
    match agreement {
        Agreement::Agree => "",
        Agreement::OtherCategory => "other category",
        Agreement::AcceptNowReject | Agreement::RejectNowAccept => "DIFFERS",
        Agreement::NoVerdict => "no verdict to compare",
    }
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let events = SessionDir::new(&found.dir).events();
    let mut h = history(&events).wrap_err_with(|| format!("cannot read {}", events.display()))?;
    if let Some(task) = &args.task {
        h.askings.retain(|a| &a.task == task);
    }
    if h.askings.is_empty() {
        let why = if h.cut > 0 {
            format!("its {} evaluator prompt(s) are kept only in part", h.cut)
        } else {
            "it has no case an evaluator judged".to_owned()
        };
        return Err(super::UsageError(format!(
            "nothing to rejudge in session {}: {why}",
            printable::line(&found.id)
        ))
        .into());
    }
    let brain = brain(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut out = super::out::stdout();
    let task_width = h.askings.iter().map(|a| a.task.chars().count()).max().unwrap_or(4).max(4);
    if !args.json {
        let was = h
            .was_model
            .as_deref()
            .map_or_else(String::new, |m| format!(" (judged by {})", printable::line(m)));
        writeln!(
            out,
            "Asking {} about {} case(s) of session {}{was}; its witnesses are not checked.\n",
            printable::line(&args.evaluator_model),
            h.askings.len(),
            printable::line(&found.id)
        )?;
        writeln!(out, "{:<task_width$}  ATTEMPT  {:<22}  NOW", "TASK", "WAS")?;
        out.flush()?;
    }
    let mut report = Report {
        session: found.id.clone(),
        was_model: h.was_model.clone(),
        model: args.evaluator_model.clone(),
        cases: Vec::new(),
        cut: h.cut,
        agree: 0,
        differ: 0,
        cost: 0.0,
        tokens: 0,
    };
    for asking in h.askings {
        let now = runtime.block_on(ask(&brain, &asking)).wrap_err_with(|| {
            format!(
                "asking about {} attempt {}",
                printable::line(&asking.task),
                asking.attempt.unwrap_or(0)
            )
        })?;
        let agreement = compare(&asking.was, &now);
        report.cost += now.cost;
        report.tokens += now.tokens;
        match agreement {
            Agreement::Agree => report.agree += 1,
            Agreement::AcceptNowReject | Agreement::RejectNowAccept => report.differ += 1,
            Agreement::OtherCategory | Agreement::NoVerdict => {}
        }
        if !args.json {
            write_row(&mut out, task_width, &asking, &now, agreement)?;
        }
        report.cases.push(Case { asking, now, agreement });
    }
    if args.json {
        writeln!(out, "{}", printable::json_pretty(&report)?)?;
    } else {
        writeln!(out, "\n{}", summary_line(&report))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn write_row(
    out: &mut impl Write,
    task_width: usize,
    asking: &Asking,
    now: &Answer,
    agreement: Agreement,
) -> std::io::Result<()> {
    let Ruled { ruling, category } = &asking.was;
    let attempt = asking.attempt.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let row = format!(
        "{:<task_width$}  {attempt:<7}  {:<22}  {:<22}  {}",
        printable::line(&asking.task),
        ruling_words(*ruling, category.as_deref()),
        ruling_words(now.ruling, now.category.as_deref()),
        mark(agreement)
    );
    writeln!(out, "{}", row.trim_end())?;
    let said = now.unreadable.as_deref().or(if agreement == Agreement::Agree {
        None
    } else {
        now.concern.as_deref()
    });
    if let Some(said) = said {
        writeln!(out, "{:<task_width$}  now: {}", "", printable::line(said))?;
    }
    out.flush()
}

fn summary_line(r: &Report) -> String {
    let n = r.cases.len();
    let count = |a: Agreement| r.cases.iter().filter(|c| c.agreement == a).count();
    let mut line = format!(
        "{n} case(s): {} agree, {} differ ({} accept → reject, {} reject → accept), {} rejected for another category, {} without a verdict to compare",
        r.agree,
        r.differ,
        count(Agreement::AcceptNowReject),
        count(Agreement::RejectNowAccept),
        count(Agreement::OtherCategory),
        count(Agreement::NoVerdict),
    );
    if r.cut > 0 {
        let _ = write!(line, "; {} not asked (the log keeps their prompt only in part)", r.cut);
    }
    let tokens = i64::try_from(r.tokens).unwrap_or(i64::MAX);
    let _ = write!(line, " · {} tokens, {}", thousands(tokens), dollars(r.cost));
    line
}
