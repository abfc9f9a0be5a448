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
    /// Print a JSON array instead of a table (keys documented in the README); with
    /// `--follow`, one JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Keep going: one line per change of any run's state (held, crashed, done …) or progress
    /// (a task done, a task at work, the held task), and the
    /// `[notify] command` run for each run that comes to need a person or ends.
    #[arg(long)]
    pub follow: bool,
    /// The live fleet view, as `harrow` alone opens it on a terminal.
    #[arg(long, conflicts_with_all = ["json", "follow"])]
    pub live: bool,
}

fn config() -> Result<crate::config::Config> {
    let (config, _) =
        crate::config::Config::load(None).map_err(|e| super::UsageError(e.to_string()))?;
    Ok(config)
}

/// `harrow` alone: the session browser on a terminal; the list when output is not a terminal.
pub fn browse() -> Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return run(&Args { dirs: DirArgs::default(), json: false, follow: false, live: false });
    }
    live(super::session_roots(&[])?)
}

/// The fleet on this terminal.
fn live(roots: Vec<discover::Root>) -> Result<ExitCode> {
    let searched: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
    crate::console::browse(roots, searched.join(" or "))?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let config = config()?;
    let roots = super::session_roots(&args.dirs.dirs)?;
    if args.follow {
        return super::follow::follow(roots, args.json, &config.notify);
    }
    // The live view needs a terminal both ways; piped, `--live` prints the list, as `harrow`
    // alone does.
    let terminal = {
        use std::io::IsTerminal;
        std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
    };
    if args.live && terminal {
        return live(roots);
    }
    let (rows, late) = rows(&roots);
    for id in &late {
        eprintln!(
            "harrow: {} took longer than {:.1} s to read and is left out; `harrow show {}` reads it whole",
            crate::printable::line(id),
            crate::session::listing::FOLDER_DEADLINE.as_secs_f64(),
            crate::printable::line(id)
        );
    }
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
                thousands(i64::try_from(r.tokens).unwrap_or(i64::MAX)),
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
