//! A session moved to another clone of its project: the resume on a machine whose clone is
//! not the one the run worked in (that one died with its Job, or was deleted).
//!
//! The session branch and the kept attempts come from the session folder's copy
//! ([`SessionStore`]); the session's worktree folder is linked to the new clone where it
//! stands, so the files an interrupted task left — its edits, untracked files, build caches —
//! are still there for the resume to restore or discard as it would on the first machine. The
//! lanes' worktrees belonged to the old clone's lane branches, which did not travel: they are
//! removed, and their tasks start again in new lanes from the session branch and their kept
//! attempts.

use super::session_store::{Brought, SessionStore};
use super::workspace::{
    Workspace, WorkspaceError, forget_registration, git, harrow_folder, open_source,
    registration_at,
};
use crate::safe_io;
use git2::{Repository, WorktreeAddOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What moving a session to another clone did, for the resume to say and log.
#[derive(Debug, Clone)]
pub struct Rehomed {
    pub workspace: Workspace,
    pub brought: Brought,
    /// The session's worktree folder was there and kept its files (else it was checked out
    /// afresh).
    pub kept_files: bool,
    /// Lane worktrees of the old clone that were removed.
    pub lanes_removed: Vec<PathBuf>,
}

impl Workspace {
    /// Whether the worktree opens as a worktree of its source repository: false when the
    /// clone is gone, or the folder's link to it is.
    pub fn opens(&self) -> bool {
        self.repo().is_ok()
    }

    /// Moves the session whose worktree is `self` to the clone at `clone`: the session branch
    /// and kept attempts brought from `store`, the worktree folder linked to `clone` as a
    /// worktree of the session branch where it stands (made when it is not there), the old
    /// clone's lanes removed from beside it. Where the worktree may be is the caller's to
    /// check: its folder is changed here.
    pub fn rehome(&self, clone: &Path, store: &SessionStore) -> Result<Rehomed, WorkspaceError> {
        let work = self.worktree.parent().unwrap_or(Path::new("/")).to_path_buf();
        crate::safe_io::ensure_dir(&work).map_err(|e| WorkspaceError::Io(work.clone(), e))?;
        let repo = open_source(clone)?;
        let session = self.session_id();
        let brought = store.bring_into(&repo, session, &self.branch)?;
        if let Some(name) = registration_at(&repo, &self.worktree) {
            forget_registration(&repo, &name)?;
        }
        if repo.find_worktree(session).is_ok_and(|w| w.validate().is_err()) {
            forget_registration(&repo, session)?;
        }
        let kept_files = harrow_folder(&self.worktree, &work)?.is_some();
        if kept_files {
            link_in_place(&repo, session, &self.worktree, &self.branch, &work)?;
        } else {
            add_worktree(&repo, session, &self.worktree, &self.branch)?;
        }
        let lanes = self.lanes_folder();
        let mut lanes_removed = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&lanes) {
            let folders = entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
            for lane in folders.map(|e| e.path()) {
                if Workspace::remove_worktree(None, &lane, &lanes)? {
                    lanes_removed.push(lane);
                }
            }
        }
        let top = repo.workdir().map_or_else(|| clone.to_path_buf(), Path::to_path_buf);
        let workspace = Workspace { source: top, ..self.clone() };
        Ok(Rehomed { workspace, brought, kept_files, lanes_removed })
    }
}

/// Registers a new worktree `name` of `repo` at `folder`, on `branch`.
fn add_worktree(
    repo: &Repository,
    name: &str,
    folder: &Path,
    branch: &str,
) -> Result<(), WorkspaceError> {
    let reference = repo
        .find_reference(&format!("refs/heads/{branch}"))
        .map_err(git(format!("read the branch {branch}")))?;
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&reference));
    repo.worktree(name, folder, Some(&opts))
        .map_err(git(format!("add the worktree {}", folder.display())))?;
    Ok(())
}

/// Links the existing folder `folder` to `repo` as its worktree `name` on `branch`: a new
/// registration is made beside it (checked out in a folder of its own, then removed) and the
/// two are pointed at each other, so `folder`'s files stay as they are and git sees them as
/// changes to the branch's tip. Whatever `.git` the folder had — a file, a folder, a link —
/// is replaced, never followed.
fn link_in_place(
    repo: &Repository,
    name: &str,
    folder: &Path,
    branch: &str,
    work: &Path,
) -> Result<(), WorkspaceError> {
    let beside = work.join(".worktree-relink");
    if let Some(stale) = harrow_folder(&beside, work)? {
        std::fs::remove_dir_all(&stale).map_err(|e| WorkspaceError::Io(stale.clone(), e))?;
    }
    add_worktree(repo, name, &beside, branch)?;
    let registration = repo.commondir().join("worktrees").join(name);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| WorkspaceError::Io(p, e)
    };
    let dot_git = folder.canonicalize().map_err(io(folder))?.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&dot_git).map_err(io(&dot_git))?,
        Ok(_) => std::fs::remove_file(&dot_git).map_err(io(&dot_git))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(WorkspaceError::Io(dot_git, e)),
    }
    let mut link = safe_io::create(&dot_git).map_err(io(&dot_git))?;
    writeln!(link, "gitdir: {}", registration.display()).map_err(io(&dot_git))?;
    let gitdir = registration.join("gitdir");
    let mut back = safe_io::create(&gitdir).map_err(io(&gitdir))?;
    writeln!(back, "{}", dot_git.display()).map_err(io(&gitdir))?;
    std::fs::remove_dir_all(&beside).map_err(io(&beside))?;
    Ok(())
}
