//! The session's git worktree: a branch `session/<id>` cut from the source repository's HEAD
//! and checked out at `<session>/workspace/`. The source repository gains that branch and its
//! worktree entry and nothing else; its working tree is never touched, and nothing is merged.

use git2::{
    BranchType, DiffFormat, DiffOptions, IndexAddOption, ObjectType, Oid, Repository, Signature,
    StatusOptions, WorktreeAddOptions, WorktreePruneOptions,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The name and address harrow commits under.
pub const SIGNATURE_NAME: &str = "harrow";
pub const SIGNATURE_EMAIL: &str = "harrow@localhost";

/// What went wrong, said so a person can act on it.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error(
        "{0} is not inside a git repository; harrow works on a git repository (run `git init` and commit first)"
    )]
    NotARepo(PathBuf),
    #[error("{0} has no commits yet; commit something first so the session has a base")]
    NoCommits(PathBuf),
    #[error(
        "branch {0} already exists in {1}; remove it (`git branch -D {0}`) or start a new session"
    )]
    BranchExists(String, PathBuf),
    #[error("{0} already exists; a session's worktree folder must be new")]
    WorktreeExists(PathBuf),
    #[error("git: {context}: {source}")]
    Git { context: String, source: git2::Error },
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

fn git(context: impl Into<String>) -> impl FnOnce(git2::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Git { context, source }
}

/// A session's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    /// The source repository's top folder.
    pub source: PathBuf,
    pub worktree: PathBuf,
    pub branch: String,
    /// The commit the branch was cut from.
    pub base: String,
}

/// One file's share of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileStat {
    pub path: String,
    pub added: usize,
    pub deleted: usize,
    pub binary: bool,
}

/// The cumulative change of a session against its base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffInfo {
    pub patch: String,
    pub files: Vec<FileStat>,
    /// A digest of the patch, so a verdict names the exact diff it judged.
    pub digest: String,
}

impl DiffInfo {
    /// `a.py (+3 -1); b.py (binary)`, or `(no changes)`, as Tilth's ledger writes it.
    pub fn summary(&self) -> String {
        if self.files.is_empty() {
            return "(no changes)".into();
        }
        self.files
            .iter()
            .map(|f| {
                if f.binary {
                    format!("{} (binary)", f.path)
                } else {
                    format!("{} (+{} -{})", f.path, f.added, f.deleted)
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Finds the repository containing `path`, refusing bare repositories and missing ones.
fn open_source(path: &Path) -> Result<Repository, WorkspaceError> {
    let repo =
        Repository::discover(path).map_err(|_| WorkspaceError::NotARepo(path.to_path_buf()))?;
    if repo.is_bare() || repo.workdir().is_none() {
        return Err(WorkspaceError::NotARepo(path.to_path_buf()));
    }
    Ok(repo)
}

impl Workspace {
    /// Cuts `session/<id>` from the source's HEAD and checks it out at `worktree`. Returns the
    /// workspace and what the user should be told (a dirty or detached source).
    pub fn create(
        source: &Path,
        worktree: &Path,
        session_id: &str,
    ) -> Result<(Workspace, Vec<String>), WorkspaceError> {
        let repo = open_source(source)?;
        let top = repo.workdir().map_or_else(|| source.to_path_buf(), Path::to_path_buf);
        let head = repo.head().map_err(|_| WorkspaceError::NoCommits(top.clone()))?;
        let commit = head.peel_to_commit().map_err(|_| WorkspaceError::NoCommits(top.clone()))?;
        let short = short_sha(commit.id());
        let mut notices = Vec::new();
        if repo.head_detached().unwrap_or(false) {
            notices.push(format!(
                "HEAD of {} is detached at {short}; the session starts from that commit",
                top.display()
            ));
        }
        let mut status = StatusOptions::new();
        status.include_untracked(false);
        if repo.statuses(Some(&mut status)).is_ok_and(|s| !s.is_empty()) {
            notices.push(format!(
                "{} has uncommitted changes; the session starts from the last commit ({short}) without them",
                top.display()
            ));
        }
        let branch = format!("session/{session_id}");
        if repo.find_branch(&branch, BranchType::Local).is_ok() {
            return Err(WorkspaceError::BranchExists(branch, top));
        }
        if worktree.exists() {
            return Err(WorkspaceError::WorktreeExists(worktree.to_path_buf()));
        }
        if let Some(parent) = worktree.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| WorkspaceError::Io(parent.to_path_buf(), e))?;
        }
        let created =
            repo.branch(&branch, &commit, false).map_err(git(format!("create branch {branch}")))?;
        let reference = created.into_reference();
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        if let Err(e) = repo.worktree(session_id, worktree, Some(&opts)) {
            // A failed add may leave the branch behind; take it back.
            if let Ok(mut b) = repo.find_branch(&branch, BranchType::Local) {
                let _ = b.delete();
            }
            return Err(git(format!("add worktree {}", worktree.display()))(e));
        }
        let ws = Workspace {
            source: top,
            worktree: worktree.to_path_buf(),
            branch,
            base: commit.id().to_string(),
        };
        Ok((ws, notices))
    }

    fn repo(&self) -> Result<Repository, WorkspaceError> {
        Repository::open(&self.worktree)
            .map_err(git(format!("open worktree {}", self.worktree.display())))
    }

    /// The commit the worktree's branch points at now.
    pub fn head(&self) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(git("read HEAD"))?;
        Ok(head.id().to_string())
    }

    /// Commits everything in the worktree as the accepted work of a task. Returns the new
    /// commit, or `None` when there was nothing to commit.
    pub fn commit_task(
        &self,
        task_id: &str,
        title: &str,
        session_id: &str,
    ) -> Result<Option<String>, WorkspaceError> {
        let repo = self.repo()?;
        let mut index = repo.index().map_err(git("read index"))?;
        index.add_all(["*"], IndexAddOption::DEFAULT, None).map_err(git("stage changes"))?;
        index.update_all(["*"], None).map_err(git("stage deletions"))?;
        index.write().map_err(git("write index"))?;
        let tree_id = index.write_tree().map_err(git("write tree"))?;
        let parent = repo.head().and_then(|h| h.peel_to_commit()).map_err(git("read HEAD"))?;
        if parent.tree_id() == tree_id {
            return Ok(None);
        }
        let tree = repo.find_tree(tree_id).map_err(git("find tree"))?;
        let sig = Signature::now(SIGNATURE_NAME, SIGNATURE_EMAIL).map_err(git("signature"))?;
        let message =
            format!("{task_id}: {title}\n\nAccepted by harrow in session {session_id}.\n");
        let oid = repo
            .commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&parent])
            .map_err(git("commit"))?;
        Ok(Some(oid.to_string()))
    }

    /// Everything the session changed against its base: committed tasks, the work in progress,
    /// and new files not ignored by `.gitignore`.
    pub fn diff(&self) -> Result<DiffInfo, WorkspaceError> {
        let repo = self.repo()?;
        let base = Oid::from_str(&self.base).map_err(git("parse base commit"))?;
        let base_tree =
            repo.find_commit(base).and_then(|c| c.tree()).map_err(git("read base tree"))?;
        let mut opts = DiffOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        let diff = repo
            .diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut opts))
            .map_err(git("diff"))?;
        let mut files = Vec::new();
        for i in 0..diff.deltas().len() {
            let Ok(Some(patch)) = git2::Patch::from_diff(&diff, i) else { continue };
            let delta = patch.delta();
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let binary = delta.flags().is_binary();
            let (_, added, deleted) = patch.line_stats().unwrap_or((0, 0, 0));
            files.push(FileStat { path, added, deleted, binary });
        }
        let mut patch = Vec::new();
        diff.print(DiffFormat::Patch, |_, _, line| {
            if matches!(line.origin(), '+' | '-' | ' ') {
                patch.push(line.origin() as u8);
            }
            patch.extend_from_slice(line.content());
            true
        })
        .map_err(git("print diff"))?;
        let digest =
            Oid::hash_object(ObjectType::Blob, &patch).map_err(git("digest diff"))?.to_string();
        Ok(DiffInfo { patch: String::from_utf8_lossy(&patch).into_owned(), files, digest })
    }

    /// The commit on the session branch that accepted `task_id`, if there is one: how a resume
    /// tells a task whose commit landed before a crash from one whose commit did not.
    pub fn find_task_commit(&self, task_id: &str) -> Result<Option<String>, WorkspaceError> {
        let repo = self.repo()?;
        let mut walk = repo.revwalk().map_err(git("walk history"))?;
        walk.push_head().map_err(git("walk history"))?;
        if let Ok(base) = Oid::from_str(&self.base) {
            let _ = walk.hide(base);
        }
        let prefix = format!("{task_id}: ");
        for oid in walk.flatten() {
            let commit = repo.find_commit(oid).map_err(git("read commit"))?;
            if commit.summary().ok().flatten().is_some_and(|s| s.starts_with(&prefix)) {
                return Ok(Some(oid.to_string()));
            }
        }
        Ok(None)
    }

    /// Throws away uncommitted work (changes and new files, not ignored ones) so an unfinished
    /// task restarts from the last commit. Returns the paths that were discarded.
    pub fn discard_uncommitted(&self) -> Result<Vec<String>, WorkspaceError> {
        let repo = self.repo()?;
        let mut opts = StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true);
        let changed: Vec<String> = repo
            .statuses(Some(&mut opts))
            .map_err(git("read status"))?
            .iter()
            .filter_map(|e| e.path().ok().map(str::to_owned))
            .collect();
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force().remove_untracked(true);
        repo.checkout_head(Some(&mut checkout)).map_err(git("restore the last commit"))?;
        Ok(changed)
    }

    /// Removes the worktree folder and its registration in the source repository; the branch
    /// (the session's result) stays.
    pub fn remove_worktree(source: &Path, worktree: &Path) -> Result<bool, WorkspaceError> {
        let repo = open_source(source)?;
        let mut removed = false;
        if let Some(wt) = find_worktree(&repo, worktree)? {
            let mut prune = WorktreePruneOptions::new();
            prune.valid(true).locked(true).working_tree(true);
            wt.prune(Some(&mut prune))
                .map_err(git(format!("remove worktree {}", worktree.display())))?;
            removed = true;
        }
        if worktree.exists() {
            std::fs::remove_dir_all(worktree)
                .map_err(|e| WorkspaceError::Io(worktree.to_path_buf(), e))?;
            removed = true;
        }
        Ok(removed)
    }

    /// Deletes a session's branch from the source repository.
    pub fn delete_branch(source: &Path, branch: &str) -> Result<bool, WorkspaceError> {
        let repo = open_source(source)?;
        match repo.find_branch(branch, BranchType::Local) {
            Ok(mut b) => b.delete().map(|()| true).map_err(git(format!("delete branch {branch}"))),
            Err(_) => Ok(false),
        }
    }
}

/// The worktree registered at `path`, found by path so Tilth's worktrees (named after the
/// folder) are found as well as harrow's (named after the session).
fn find_worktree(repo: &Repository, path: &Path) -> Result<Option<git2::Worktree>, WorkspaceError> {
    let want = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let names = repo.worktrees().map_err(git("list worktrees"))?;
    for name in names.iter().flatten().flatten() {
        if let Ok(wt) = repo.find_worktree(name) {
            let at = wt.path().canonicalize().unwrap_or_else(|_| wt.path().to_path_buf());
            if at == want {
                return Ok(Some(wt));
            }
        }
    }
    Ok(None)
}

fn short_sha(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}
