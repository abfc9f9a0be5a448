//! `harrow sessions`: every harrow and Tilth session, newest first.

use super::DirArgs;
use super::format::{dollars, short_ts, table, thousands};
use crate::session::discover;
use crate::session::listing::rows;
use color_eyre::eyre::Result;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dirs: DirArgs,
    /// Print a JSON array instead of a table (keys documented in the README).
    #[arg(long)]
    pub json: bool,
}

/// `harrow` alone: the session browser on a terminal; the list when output is not a terminal.
pub fn browse() -> Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return run(&Args { dirs: DirArgs::default(), json: false });
    }
    let roots = discover::roots(&[]);
    let searched: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
    crate::console::browse(move || rows(&roots), searched.join(" or "))?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let roots = discover::roots(&args.dirs.dirs);
    let rows = rows(&roots);
    let mut out = super::out::stdout();
    if args.json {
        writeln!(out, "{}", crate::printable::json_pretty(&rows)?)?;
        out.flush()?;
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
            let mut status = r.status.to_string();
            if r.archived {
                status.push_str(" (archived)");
            }
            vec![
                r.id.clone(),
                r.origin.clone(),
                r.feature_cell(),
                status,
                r.tasks_cell(),
                thousands(r.tokens),
                dollars(r.cost),
                short_ts(r.started_at.as_deref()),
            ]
        })
        .collect();
    write!(
        out,
        "{}",
        table(&["ID", "FORMAT", "FEATURE", "STATUS", "TASKS", "TOKENS", "COST", "STARTED"], &cells)
    )?;
    Ok(ExitCode::SUCCESS)
}
