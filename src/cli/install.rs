//! `harrow completions SHELL`: tab completion of verbs, flags and session ids. The script the
//! shell loads asks the binary itself what to offer (`COMPLETE=SHELL harrow -- WORDS`), so verbs
//! and flags come from the same definition clap parses and session ids from the folders every
//! verb looks in, as kubectl and git complete names (the manual page is `manual`).

use clap_complete::engine::{CompletionCandidate, PathCompleter, ValueCompleter};
use clap_complete::env::EnvCompleter;
use color_eyre::eyre::Result;
use std::ffi::OsStr;
use std::io::Write;
use std::process::ExitCode;

/// The variable that turns a run of harrow into a completion request.
const VAR: &str = "COMPLETE";

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

/// Answers a completion request, when this run is one (the shell set `COMPLETE`), and exits;
/// otherwise does nothing. Runs before anything else writes to standard output.
pub fn answer_completion_request() {
    clap_complete::CompleteEnv::with_factory(<super::Cli as clap::CommandFactory>::command)
        .var(VAR)
        .complete();
}

/// Writes the completion script for a shell to standard output: the same script
/// `COMPLETE=SHELL harrow` prints, calling this binary by the path it was started with.
pub fn completions(args: &CompletionsArgs) -> Result<ExitCode> {
    let shell: &dyn EnvCompleter = match args.shell {
        Shell::Bash => &clap_complete::env::Bash,
        Shell::Zsh => &clap_complete::env::Zsh,
        Shell::Fish => &clap_complete::env::Fish,
    };
    let started_as = std::env::args_os().next().unwrap_or_else(|| "harrow".into());
    let mut completer = std::path::PathBuf::from(started_as);
    if completer.components().count() > 1
        && let Ok(here) = std::env::current_dir()
    {
        completer = here.join(completer);
    }
    let mut out = std::io::stdout().lock();
    shell.write_registration(VAR, "harrow", "harrow", &completer.to_string_lossy(), &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What a session argument may be: the ids of the sessions `harrow sessions` lists that start
/// with what was typed, newest first, each with its plan's name; a path once the word looks
/// like one. Names with control characters are never offered: they would reach the command
/// line as they are.
pub fn session_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    if typed.contains(std::path::MAIN_SEPARATOR) || typed.starts_with('.') {
        return PathCompleter::dir()
            .complete(current)
            .into_iter()
            .filter(|c| c.get_value().to_str().is_some_and(|p| !p.chars().any(char::is_control)))
            .collect();
    }
    let Ok(roots) = super::session_roots(&[]) else { return Vec::new() };
    crate::session::discover::list(&roots)
        .into_iter()
        .filter(|found| plain_id(&found.id) && found.id.starts_with(typed.as_ref()))
        .map(|found| {
            let help = plan_name(&found.dir).map(|n| crate::printable::line(&n).into());
            CompletionCandidate::new(found.id).help(help)
        })
        .collect()
}

/// Whether a folder's name is one to put on a command line: anyone who can write a sessions
/// folder names its entries, and a name with a control character or a space is no id harrow
/// made (it can still be given as a path).
fn plain_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The name of the plan folder a session works, as its checkpoint records it.
fn plan_name(dir: &std::path::Path) -> Option<String> {
    let read = crate::session::checkpoint::read_checkpoint(dir);
    let plan = std::path::PathBuf::from(read.checkpoint()?.feature_dir.as_ref()?);
    Some(plan.file_name()?.to_string_lossy().into_owned())
}
