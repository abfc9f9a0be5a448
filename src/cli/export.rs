//! `harrow export`: a session as Markdown (for a pull request or an issue), a standalone HTML
//! page, or JSON for tools.

use super::SessionArg;
use crate::export::{Format, render};
use color_eyre::eyre::{Result, WrapErr};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// What to write.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Renders the session and writes it to the file or standard output.
pub fn run(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let text = render(&found.dir, &found.id, args.format)
        .wrap_err_with(|| format!("cannot read session {}", found.dir.display()))?;
    if let Some(path) = &args.output {
        std::fs::write(path, text).wrap_err_with(|| format!("cannot write {}", path.display()))?;
        eprintln!("harrow: wrote {}", path.display());
    } else {
        let mut out = super::out::stdout();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
