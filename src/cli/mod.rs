//! Command-line verbs. Each verb lives in its own file; this one parses and dispatches.

pub(crate) mod agents;
mod control;
pub(crate) mod demo;
mod elsewhere;
mod export;
mod follow;
mod format;
mod install;
mod manual;
mod out;
mod plan_verbs;
pub(crate) mod prep;
mod printer;
mod rejudge;
mod replay;
mod resume;
mod review;
pub mod run;
pub mod run_flags;
mod sessions;
pub(crate) mod ship;
mod show;
mod start_record;
mod stats;
mod workspace_verbs;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a coding-agent loop over a feature plan, and watch it from the terminal.
#[derive(Debug, Parser)]
#[command(name = "harrow", version, about, propagate_version = true)]
pub struct Cli {
    /// Without a verb: the session browser (on a terminal) or the session list (otherwise).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented skeleton plan (an overview and one example task) into a repository.
    Init(plan_verbs::InitArgs),
    /// Check a plan: list its tasks, or every problem with its file, line and fix.
    Check(plan_verbs::CheckArgs),
    /// Plan a feature in an interview: the model asks, reads the repository, and drafts the
    /// plan; it is written and committed when you accept it.
    Prep(prep::Args),
    /// Start a session: work through a plan's tasks on a repository.
    Run(run::Args),
    /// List the ACP agents harrow can run as its worker: which are installed here, and how
    /// to install the others.
    Agents(agents::Args),
    /// Run the whole product on a bundled repository and plan, with a built-in scripted model:
    /// no key, no network.
    Demo(demo::Args),
    /// Replay a session in the console, on a virtual clock.
    Replay(replay::Args),
    /// Watch a session in the console as its events are appended.
    Watch(replay::WatchArgs),
    /// Continue a session after a stop or a crash, from where its log says it was.
    Resume(resume::Args),
    /// Operator commands to a session: pause, stop, steer, queue, review, rewind, allow, deny…
    ///
    /// The run acts on it at its next safe point: pause, resume, step or stop it; steer or
    /// queue words for a task; review a task's diff; rewind it; approve, reject,
    /// force-accept, skip or fail it; allow or deny what its agent asked; a note.
    Control(control::Args),
    /// List harrow and Tilth sessions, newest first.
    Sessions(sessions::Args),
    /// Summarise one session: tasks, tokens, cost, verdicts, tools, hooks, stop.
    Show(show::Args),
    /// How good the judge has been over many sessions: verdicts by category, the operator's
    /// overrides, evidence that failed harrow's check, cost per landed task and on rework.
    Stats(stats::Args),
    /// Ask another evaluator model about a session's judged cases (the exact prompts its
    /// evaluator was sent; no worker calls) and print where the two judges differ.
    Rejudge(rejudge::Args),
    /// Write a session out to share it: Markdown for a pull request, a standalone HTML page,
    /// or JSON.
    Export(export::Args),
    /// Push a session's branch to a remote (default: the repository's origin).
    Push(ship::PushArgs),
    /// Open a pull request (a merge request on GitLab) for a session's branch, with the run's
    /// record as its description; pushes first when the remote lacks the branch.
    Pr(ship::PrArgs),
    /// Remove a session entirely: its worktree, its branch and its folder.
    Reset(workspace_verbs::ResetArgs),
    /// Remove the worktrees of finished sessions; their branches and logs stay.
    Cleanse(workspace_verbs::CleanseArgs),
    /// Print tab completion for bash, zsh or fish.
    Completions(install::CompletionsArgs),
    /// Print harrow's manual page (roff): `harrow man > harrow.1`; `--dir DIR` writes it and a
    /// page per verb
    Man(manual::ManArgs),
}

/// A failure the user can fix, reported as one line with exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Session folders to look in instead of the defaults.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DirArgs {
    /// Look for sessions in DIR instead of harrow's and Tilth's sessions folders (repeatable).
    #[arg(long = "dir", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
}

/// Refuses a `--dir` that is not a folder: a mistyped one would list nothing and say that no
/// session was found.
fn existing_folders(given: &[PathBuf]) -> Result<(), UsageError> {
    if let Some(path) = given.iter().find(|p| !p.is_dir()) {
        let what = if path.exists() { "is not a folder" } else { "does not exist" };
        return Err(UsageError(format!(
            "{} {what}; give the folder that holds the sessions with --dir",
            path.display()
        )));
    }
    Ok(())
}

/// The session a verb acts on, and where to look for it.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArg {
    /// A session id, a unique prefix of one, or a session folder's path.
    #[arg(value_name = "ID|DIR", add = clap_complete::ArgValueCompleter::new(install::session_ids))]
    pub session: String,
    #[command(flatten)]
    pub dirs: DirArgs,
}

/// Where sessions are looked for: the folders given, else `HARROW_SESSIONS_DIR`, the default
/// harrow and Tilth folders and every `[sessions] dirs` entry of the configuration — the same
/// folders the fleet lists, so every verb finds what the fleet shows.
pub fn session_roots(
    given: &[std::path::PathBuf],
) -> Result<Vec<crate::session::discover::Root>, UsageError> {
    existing_folders(given)?;
    let mut roots = crate::session::discover::roots(given);
    if given.is_empty()
        && let Ok((config, _)) = crate::config::Config::load(None)
    {
        for dir in &config.sessions.dirs {
            if !roots.iter().any(|r| &r.path == dir) {
                roots.push(crate::session::discover::Root {
                    path: dir.clone(),
                    origin: crate::session::discover::Origin::Given,
                });
            }
        }
    }
    Ok(roots)
}

impl SessionArg {
    /// Finds the session, or says in one line what was looked for and where.
    pub fn resolve(&self) -> Result<crate::session::discover::Found, UsageError> {
        let roots = session_roots(&self.dirs.dirs)?;
        let found = crate::session::discover::resolve(&self.session, &roots)
            .map_err(|e| UsageError(e.to_string()))?;
        let files = crate::session::dir::SessionDir::new(&found.dir);
        for file in [files.events(), files.checkpoint()] {
            let kind = std::fs::metadata(&file).map(|m| m.file_type());
            if kind.is_ok_and(|k| !k.is_file()) {
                return Err(UsageError(format!(
                    "{} is not a file: the session is damaged; move the folder aside, or put its log back",
                    file.display()
                )));
            }
        }
        Ok(found)
    }
}

/// Parses the command line, runs the verb, and turns errors into an exit status.
pub fn main() -> ExitCode {
    install::answer_completion_request();
    let cli = Cli::parse();
    let result = match cli.command {
        None => sessions::browse(),
        Some(command) => dispatch(command),
    };
    match result {
        Ok(code) => code,
        Err(report) => {
            if let Some(usage) = report.downcast_ref::<UsageError>() {
                eprintln!("harrow: {}", format::terminal_line(&usage.to_string()));
                return ExitCode::from(2);
            }
            // Output to a closed pipe (`| head`) ends quietly, as Unix tools do.
            let broken_pipe = report.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| cause.downcast_ref::<serde_json::Error>()?.io_error_kind())
                    == Some(std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            // An error is a line a person can act on: what failed and why, each cause after a
            // colon. (A panic, which is a bug, still gets its full report.)
            eprintln!("harrow: {}", format::terminal_line(&format!("{report:#}")));
            ExitCode::FAILURE
        }
    }
}

/// The console needs a terminal on both ends; without one (a pipe, a file, `</dev/null`, a CI
/// job) a verb that would open it prints one line per event instead, and says so.
fn headless_off_a_terminal(headless: &mut bool) {
    use std::io::IsTerminal;
    let on_terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !*headless && !on_terminal {
        eprintln!("harrow: not on a terminal; printing one line per event instead (--headless)");
        *headless = true;
    }
}

fn dispatch(command: Command) -> color_eyre::Result<ExitCode> {
    match command {
        Command::Run(mut args) => {
            headless_off_a_terminal(&mut args.flags.headless);
            run::run(&args)
        }
        Command::Demo(mut args) => {
            headless_off_a_terminal(&mut args.headless);
            demo::demo(&args)
        }
        Command::Replay(mut args) => {
            headless_off_a_terminal(&mut args.headless);
            replay::replay(&args)
        }
        Command::Watch(args) => {
            let mut headless = false;
            headless_off_a_terminal(&mut headless);
            replay::watch(&args, headless)
        }
        Command::Resume(args) => resume::resume(&args),
        Command::Control(args) => control::control(&args),
        Command::Sessions(args) => sessions::run(&args),
        Command::Show(args) => show::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Rejudge(args) => rejudge::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Push(args) => ship::push_verb(&args),
        Command::Pr(args) => ship::pr_verb(&args),
        Command::Init(args) => plan_verbs::init(&args),
        Command::Check(args) => Ok(plan_verbs::check(&args)),
        Command::Completions(args) => install::completions(&args),
        Command::Man(args) => manual::man(&args),
        Command::Agents(args) => agents::agents(&args),
        Command::Prep(args) => prep::run(&args),
        Command::Reset(args) => workspace_verbs::reset(&args),
        Command::Cleanse(args) => workspace_verbs::cleanse(&args),
    }
}
