//! `harrow completions SHELL`: tab completion of verbs and flags, generated from the same
//! definition clap parses, so it can never disagree with the binary (the manual page is
//! `manual`).

use clap::CommandFactory;
use color_eyre::eyre::Result;
use std::io::Write;
use std::process::ExitCode;

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in: load it with `source <(harrow completions bash)`, or write
    /// it where your shell looks (see the README).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script for a shell to standard output.
pub fn completions(args: &CompletionsArgs) -> Result<ExitCode> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut super::Cli::command(), "harrow", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
