//! `harrow sessions`: every harrow and Tilth session, newest first.

use super::DirArgs;
use super::format::{dollars, short_ts, table, thousands};
use crate::session::discover::{self, Found};
use crate::session::{Overview, overview};
use color_eyre::eyre::Result;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dirs: DirArgs,
    /// Print a JSON array instead of a table (keys documented in the README).
    #[arg(long)]
    pub json: bool,
}

/// One row of the listing, as printed with `--json`.
#[derive(Debug, Serialize)]
pub struct Row {
    pub id: String,
    pub dir: PathBuf,
    pub origin: String,
    pub status: String,
    pub tasks_done: u64,
    pub tasks_total: u64,
    pub tokens: i64,
    pub cost: f64,
    pub started_at: Option<String>,
    pub last_event_at: Option<String>,
    pub unreadable_lines: u64,
    pub archived: bool,
}

/// Tasks in the plan: the log's own count, else an old-era `prd.json` beside it, else the
/// tasks the log mentions.
pub fn tasks_total(o: &Overview) -> u64 {
    if let Some(n) = o.summary.harrow.task_count {
        return n;
    }
    let prd = std::fs::read(o.dir.join("prd.json")).ok();
    if let Some(serde_json::Value::Array(tasks)) = prd.and_then(|b| serde_json::from_slice(&b).ok())
    {
        return tasks.len() as u64;
    }
    o.summary.tasks.len() as u64
}

fn row(found: &Found, o: &Overview) -> Row {
    let s = &o.summary;
    let archived = o.checkpoint.checkpoint().is_some_and(|c| c.archived);
    Row {
        id: found.id.clone(),
        dir: found.dir.clone(),
        origin: s.harrow.format.clone(),
        status: o.status.to_string(),
        tasks_done: s.harrow.tasks_done,
        tasks_total: tasks_total(o),
        tokens: s.tokens.all.total.max(s.tokens.all.prompt + s.tokens.all.eval),
        cost: s.tokens.all.cost,
        started_at: s.started_at.clone(),
        last_event_at: s.last_event_at.clone(),
        unreadable_lines: s.harrow.unreadable_lines.count,
        archived,
    }
}

fn rows(roots: &[discover::Root]) -> Vec<Row> {
    discover::list(roots)
        .iter()
        .filter_map(|f| overview(&f.dir, &f.id).ok().map(|o| row(f, &o)))
        .collect()
}

/// `harrow` alone: the session browser on a terminal; the list when output is not a terminal.
pub fn browse() -> Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return run(&Args { dirs: DirArgs::default(), json: false });
    }
    let roots = discover::roots(&[]);
    let searched: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
    let load = || {
        rows(&roots)
            .into_iter()
            .map(|r| crate::console::browser::Entry {
                running: crate::session::lock::is_locked(&r.dir),
                id: r.id,
                dir: r.dir,
                origin: r.origin,
                status: r.status,
                tasks_done: r.tasks_done,
                tasks_total: r.tasks_total,
                cost: r.cost,
                last_event_at: r.last_event_at,
            })
            .collect()
    };
    crate::console::browse(load, searched.join(" or "))?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let roots = discover::roots(&args.dirs.dirs);
    let rows = rows(&roots);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        let searched: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
        writeln!(out, "No sessions in {}.", searched.join(" or "))?;
        return Ok(ExitCode::SUCCESS);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut status = r.status.clone();
            if r.archived {
                status.push_str(" (archived)");
            }
            vec![
                r.id.clone(),
                r.origin.clone(),
                status,
                format!("{}/{}", r.tasks_done, r.tasks_total),
                thousands(r.tokens),
                dollars(r.cost),
                short_ts(r.started_at.as_deref()),
            ]
        })
        .collect();
    write!(
        out,
        "{}",
        table(&["ID", "FORMAT", "STATUS", "TASKS", "TOKENS", "COST", "STARTED"], &cells)
    )?;
    Ok(ExitCode::SUCCESS)
}
