//! `harrow agents`: which known ACP agents are on this machine, and how to get the others.

use crate::agent::known::{KNOWN, on_path};
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn agents(_args: &Args) -> color_eyre::eyre::Result<ExitCode> {
    let mut out = super::out::stdout();
    writeln!(
        out,
        "ACP agents harrow can run as its worker (`harrow run PLAN --agent COMMAND`, or [agent] command in the config):"
    )?;
    for known in KNOWN {
        let command = known.command.join(" ");
        let program = known.command.first().copied().unwrap_or_default();
        match on_path(program) {
            Some(path) => {
                writeln!(out, "  {:<12} {command:<28} found: {}", known.name, path.display())?;
            }
            None => {
                writeln!(out, "  {:<12} {command:<28} not found: {}", known.name, known.install)?;
            }
        }
        writeln!(out, "  {:<12} {:<28} reaches its model with {}", "", "", known.login)?;
    }
    writeln!(
        out,
        "Any other agent that speaks ACP on its stdio runs the same way; see \"Bring your agent\" in the README."
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
