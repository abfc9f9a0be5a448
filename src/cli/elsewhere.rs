//! A resume on a machine other than the run's: the session goes on in the clone the operator
//! names with `--repo`, its branch and kept attempts brought from the session folder.

use super::UsageError;
use crate::hands::rehome::Rehomed;
use crate::hands::session_store::SessionStore;
use crate::hands::workspace::Workspace;
use crate::session::discover::Found;
use std::path::{Path, PathBuf};

/// Where the session goes on: the recorded worktree when it still opens as a worktree of
/// its repository and `clone` names no other; else the session moved to `clone`. Without a
/// clone to move to, a worktree that no longer opens is refused in one line with the fix.
pub(super) fn place(
    recorded: Workspace,
    clone: Option<&str>,
    found: &Found,
    work: Option<&Path>,
    trust_recorded: bool,
) -> Result<(Workspace, Option<Rehomed>), UsageError> {
    let clone = clone.map(|c| local_clone(c, &found.id)).transpose()?;
    let clone = clone.as_deref();
    let same = |c: &Path| matches!((c.canonicalize(), recorded.source.canonicalize()), (Ok(a), Ok(b)) if a == b);
    let opens = recorded.worktree.exists() && recorded.opens();
    let store = SessionStore::of(&found.dir);
    match clone {
        Some(c) if !(opens && same(c)) => {
            refuse_foreign(found, trust_recorded)?;
            // A worktree on another machine's disk is made again here: in this machine's work
            // folder, else the session's.
            let here = if recorded.worktree.exists() {
                recorded.worktree.clone()
            } else {
                work.unwrap_or(&found.dir).join("workspace")
            };
            let rehomed = Workspace { worktree: here, ..recorded }
                .rehome(c, &store)
                .map_err(|e| UsageError(crate::printable::line(&e.to_string())))?;
            Ok((rehomed.workspace.clone(), Some(rehomed)))
        }
        _ if opens => Ok((recorded, None)),
        _ if !recorded.worktree.exists() && Workspace::source_top(&recorded.source).is_ok() => {
            Err(UsageError(format!(
                "the worktree {} is gone (cleansed or removed); pass --repo {} to check the session branch out there again, or start a new run",
                recorded.worktree.display(),
                recorded.source.display()
            )))
        }
        _ => Err(UsageError(crate::printable::line(&format!(
            "the session's worktree {} no longer opens as a worktree of {} (that clone is gone, or the link to it); its branch and kept attempts are in {}: pass --repo with a clone of the project on this machine and the session goes on there",
            recorded.worktree.display(),
            recorded.source.display(),
            store.path().display()
        )))),
    }
}

/// Refuses to bring a session's branch out of a folder someone else can write, unless the
/// operator says they trust it: its commits would become their clone's session branch — work
/// landed as judged — as whoever wrote the folder left them.
pub(super) fn refuse_foreign(found: &Found, trust_recorded: bool) -> Result<(), UsageError> {
    match crate::session::fleet::foreign(&found.dir) {
        Some(why) if !trust_recorded => Err(UsageError(crate::printable::line(&format!(
            "the session folder {} is {why}: its branch and kept attempts would go into your clone as they are there; pass {} if you trust who wrote it (a Job of yours, say)",
            found.dir.display(),
            crate::session::TRUST_RECORDED
        )))),
        _ => Ok(()),
    }
}

/// The clone `spec` names: a folder as it is, or an address cloned into harrow's data folder
/// (reused when an earlier resume cloned the same address there).
fn local_clone(spec: &str, session: &str) -> Result<PathBuf, UsageError> {
    if !crate::ship::clone::is_address(spec) {
        return Ok(PathBuf::from(spec));
    }
    let dest = crate::ship::clone::clone_folder(session).ok_or_else(|| {
        UsageError(
            "cannot find a data folder for the clone; clone it yourself and pass --repo CLONE"
                .into(),
        )
    })?;
    let same = git2::Repository::open(&dest)
        .ok()
        .is_some_and(|r| r.find_remote("origin").ok().is_some_and(|o| o.url().ok() == Some(spec)));
    if !same {
        println!("Cloning {} into {} …", crate::ship::secret::display_url(spec), dest.display());
        crate::ship::clone::clone_project(spec, &dest).map_err(|e| UsageError(e.to_string()))?;
    }
    Ok(dest)
}

/// What a move to another clone did, in one line for the person resuming.
pub(super) fn said(id: &str, r: &Rehomed) -> String {
    // The folder is linked where it stands, build caches and all; an interrupted task still
    // starts again as a resume on the first machine would (its last judged attempt, else the
    // last commit), so its uncommitted edits are not promised.
    let files = if r.kept_files {
        "the worktree folder linked where it stands (an interrupted task starts again from its last judged attempt, else the last commit, as on the first machine)"
    } else {
        "the worktree checked out afresh"
    };
    let lanes = match r.lanes_removed.len() {
        0 => String::new(),
        n => format!(
            "; {n} lane worktree(s) of the old clone removed (their tasks go on in new lanes from where they started)"
        ),
    };
    format!(
        "Session {id} goes on in {}: its branch and {} kept attempt(s) brought from the session folder, {files}{lanes}.",
        r.workspace.source.display(),
        r.brought.kept
    )
}
