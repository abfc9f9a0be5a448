//! `harrow reset` and `harrow cleanse`: removing what a session left in the source repository.

use super::{DirArgs, SessionArg, UsageError};
use crate::hands::workspace::Workspace;
use crate::session::checkpoint::{CheckpointRead, read_checkpoint};
use crate::session::discover::{self, Found};
use crate::session::event::Archived;
use crate::session::placement::{Placement, placement};
use crate::session::status::SessionStatus;
use crate::session::writer::SessionWriter;
use crate::session::{atomic, lock, overview};
use color_eyre::eyre::{Result, WrapErr};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ResetArgs {
    #[command(flatten)]
    pub target: SessionArg,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct CleanseArgs {
    /// One session to cleanse; without it, every finished session.
    #[arg(value_name = "ID|DIR", add = clap_complete::ArgValueCompleter::new(super::install::session_ids))]
    pub session: Option<String>,
    #[command(flatten)]
    pub dirs: DirArgs,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Asks on the terminal; without one, `-y` is required.
fn confirm(question: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(UsageError(format!(
            "{question} — not asked without a terminal; pass -y to confirm"
        ))
        .into());
    }
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn refuse_if_running(found: &Found) -> Result<()> {
    if let Some(holder) = lock::live_holder(&found.dir) {
        return Err(UsageError(format!(
            "session {} is running ({holder}); stop it first",
            found.id
        ))
        .into());
    }
    Ok(())
}

pub fn reset(args: &ResetArgs) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    refuse_if_running(&found)?;
    let place = placement(&found);
    let question = format!(
        "Remove session {}: its worktree, the branch {}, its refs under refs/harrow/ and the folder {}?",
        found.id,
        place.branch,
        found.dir.display()
    );
    if !confirm(&question, args.yes)? {
        println!("Nothing removed.");
        return Ok(ExitCode::from(1));
    }
    remove_worktree(&place, &found.dir, work_root().as_deref())?;
    match &place.source {
        Some(source) if source.exists() => {
            if Workspace::delete_branch(source, &place.branch)? {
                println!("Deleted branch {} in {}.", place.branch, source.display());
            }
            let kept = Workspace::delete_kept(source, &found.id)?;
            if kept > 0 {
                println!(
                    "Deleted {kept} refs under refs/harrow/{}/ (judged attempts, set-aside work).",
                    found.id
                );
            }
        }
        _ => println!("The source repository is gone; no branch to delete."),
    }
    std::fs::remove_dir_all(&found.dir)
        .wrap_err_with(|| format!("cannot remove {}", found.dir.display()))?;
    println!("Removed {}.", found.dir.display());
    Ok(ExitCode::SUCCESS)
}

/// This machine's work folder (`HARROW_WORK_DIR`, `[run] work_dir`), read once per verb.
fn work_root() -> Option<std::path::PathBuf> {
    crate::config::Config::load(None).ok().and_then(|(c, _)| c.run.work_root())
}

/// Removes a session's worktree, which must lie in its folder `dir` or in this machine's work
/// folder for it (`[run] work_dir`): the folder's record says where the worktree is, and a
/// folder someone else wrote must not name one of the user's.
fn remove_worktree(place: &Placement, dir: &Path, work_root: Option<&Path>) -> Result<bool> {
    let source = place.source.as_deref().filter(|s| s.exists());
    let id = dir.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    let work = work_root.map(|root| root.join(id)).filter(|w| {
            matches!((place.worktree.canonicalize(), w.canonicalize()), (Ok(t), Ok(w)) if t.starts_with(&w))
        });
    let within = work.as_deref().unwrap_or(dir);
    let removed = Workspace::remove_worktree(source, &place.worktree, within)
        .map_err(|e| UsageError(e.to_string()))?;
    if let Some(work) = &work {
        // The lanes beside it went with the run; the folder goes once empty.
        let _ = std::fs::remove_dir(work.join("lanes"));
        let _ = std::fs::remove_dir(work);
    }
    if removed {
        println!("Removed worktree {}.", place.worktree.display());
    }
    Ok(removed)
}

pub fn cleanse(args: &CleanseArgs) -> Result<ExitCode> {
    let roots = super::session_roots(&args.dirs.dirs)?;
    let candidates: Vec<Found> = match &args.session {
        Some(q) => vec![discover::resolve(q, &roots).map_err(|e| UsageError(e.to_string()))?],
        None => discover::list(&roots),
    };
    let mut chosen = Vec::new();
    // Repositories a session that may still run or resume works on.
    let mut in_use = Vec::new();
    for found in candidates {
        let o = overview(&found.dir, &found.id)?;
        let place = placement(&found);
        let finished = matches!(o.status, SessionStatus::Done | SessionStatus::Failed);
        if !finished {
            in_use.extend(place.source.iter().filter_map(|s| s.canonicalize().ok()));
        }
        if !place.worktree.exists() {
            if args.session.is_some() {
                println!("{}: no worktree left to remove.", found.id);
            }
        } else if !finished {
            let why = format!(
                "session {} is {}, not finished; `harrow reset` removes it whole",
                found.id, o.status
            );
            if args.session.is_some() {
                return Err(UsageError(why).into());
            }
        } else {
            chosen.push((found, place));
        }
    }
    let leftovers = if args.session.is_none() { demo_leftovers(&in_use) } else { Vec::new() };
    if chosen.is_empty() && leftovers.is_empty() {
        println!("No finished session has a worktree to remove.");
        return Ok(ExitCode::SUCCESS);
    }
    let list: Vec<&str> = chosen.iter().map(|(f, _)| f.id.as_str()).collect();
    let mut question = if list.is_empty() {
        String::new()
    } else {
        format!("Remove the worktrees of {} (branches and logs stay)", list.join(", "))
    };
    if !leftovers.is_empty() {
        let names: Vec<String> = leftovers.iter().map(|p| p.display().to_string()).collect();
        let and = if question.is_empty() { "Remove" } else { ", and" };
        let _ = write!(
            question,
            "{and} {} demo repositories no unfinished session works on ({})",
            leftovers.len(),
            names.join(", ")
        );
    }
    question.push('?');
    if !confirm(&question, args.yes)? {
        println!("Nothing removed.");
        return Ok(ExitCode::from(1));
    }
    let root = work_root();
    for (found, place) in chosen {
        remove_worktree(&place, &found.dir, root.as_deref())?;
        mark_archived(&found, &place)?;
    }
    for repo in leftovers {
        std::fs::remove_dir_all(&repo)
            .wrap_err_with(|| format!("cannot remove {}", repo.display()))?;
        println!("Removed {}.", repo.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The demo's repositories made once per run by earlier versions (and by `demo --prep`),
/// `textstats-*` beside the cached `textstats`, that no unfinished session works on.
fn demo_leftovers(in_use: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let Some(repos) =
        discover::harrow_sessions_dir().and_then(|s| s.parent().map(|p| p.join("demo-repos")))
    else {
        return Vec::new();
    };
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(&repos)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("textstats-")))
        .filter(|p| p.canonicalize().is_ok_and(|c| !in_use.contains(&c)))
        .collect();
    found.sort();
    found
}

/// Logs `archived` and sets the checkpoint's flag, as Tilth's cleanse does.
fn mark_archived(found: &Found, place: &Placement) -> Result<()> {
    let (mut writer, _) = SessionWriter::open(&found.dir)?;
    writer.append(&Archived {
        branch: Some(place.branch.clone()),
        worktree: None,
        ..Archived::default()
    })?;
    writer.sync()?;
    if let CheckpointRead::Ok(mut c) = read_checkpoint(&found.dir) {
        c.archived = true;
        atomic::write_json_atomic(
            &crate::session::dir::SessionDir::new(&found.dir).checkpoint(),
            &c,
        )?;
    }
    Ok(())
}
