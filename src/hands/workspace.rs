//! The session's git worktree: a branch `session/<id>` cut from the source repository's HEAD
//! and checked out at `<session>/workspace/`. The source repository gains that branch and its
//! worktree entry and nothing else; its working tree is never touched, and nothing is merged.

use super::repo_pool::{self, Pooled};
use git2::{
    BranchType, DiffOptions, ObjectType, Oid, Repository, Signature, StatusOptions,
    WorktreeAddOptions,
};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A worktree's state kept as a commit on a ref of harrow's own ([`Workspace::keep`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// `refs/harrow/<session>/<name>`, as the source repository and the session's copy name it.
    pub refname: String,
    pub oid: Oid,
}

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
    #[error(
        "{0} does not exist; give the repository's folder with --repo (default: the current folder)"
    )]
    Missing(PathBuf),
    #[error("{0} has no commits yet; commit something first so the session has a base")]
    NoCommits(PathBuf),
    #[error(
        "branch {0} already exists in {1}; remove it (`git branch -D {0}`) or start a new session"
    )]
    BranchExists(String, PathBuf),
    #[error("{0} already exists; a session's worktree folder must be new")]
    WorktreeExists(PathBuf),
    #[error(
        "{0} is a {1}, not a file: the workspace may hold only files, folders and symlinks; remove it"
    )]
    SpecialFile(String, &'static str),
    #[error("git: {context}: {source}")]
    Git { context: String, source: git2::Error },
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error(
        "the work changed after it was judged (its diff is no longer the one the verdict names); nothing was committed"
    )]
    ChangedSinceJudged,
    #[error(
        "{0} is not a folder inside {1}; harrow removes only worktrees it made in the session's folder, so remove it yourself if it is yours"
    )]
    OutsideSession(PathBuf, PathBuf),
    #[error(
        "{0} holds no copy of the session branch (a session from before harrow kept one, or the folder was cut short); resume it on the machine whose clone has the branch"
    )]
    NoCopy(PathBuf),
    #[error(
        "the branch {branch} in {repo} is at {ours}, which went another way than the session's copy ({theirs}); move or delete that branch in {repo}, then resume again"
    )]
    Diverged { branch: String, ours: String, theirs: String, repo: PathBuf },
    #[error(
        "{why} in {copy}: harrow brings and ships only the commits the session's log says were judged, so nothing was brought; find who else wrote that folder"
    )]
    NotAsLogged { why: String, copy: PathBuf },
    #[error(
        "the session's record names the branch '{0}', which is not a session branch (session/<id>); harrow brings only its own branches into a clone"
    )]
    NotASessionBranch(String),
    #[error(
        "{repo} does not have the commit the session started from ({base}); the session folder keeps only what the session made on top of it: fetch it into that clone (`git fetch origin`), or give a clone that has it"
    )]
    NoBase { base: String, repo: PathBuf },
}

pub(super) fn git(context: impl Into<String>) -> impl FnOnce(git2::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Git { context, source }
}

/// How a task's work was let through, as its commit says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// The evaluator accepted it.
    Accepted,
    /// Accepted at the rework cap, or force-accepted by the operator, without passing review.
    BelowBar,
    /// The operator approved it.
    Operator,
    /// The run had review switched off (`--no-eval`): nobody reviewed it.
    Unreviewed,
}

impl Review {
    fn sentence(self) -> &'static str {
        match self {
            Review::Accepted => "Accepted by harrow's evaluator.",
            Review::BelowBar => "Accepted below the quality bar: it did not pass review.",
            Review::Operator => "Approved by the operator.",
            Review::Unreviewed => "Not reviewed: the run had review switched off (--no-eval).",
        }
    }

    fn trailer(self) -> &'static str {
        match self {
            Review::Accepted => "harrow evaluator",
            Review::BelowBar => "none (accepted below the bar)",
            Review::Operator => "operator",
            Review::Unreviewed => "none (--no-eval)",
        }
    }
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

impl FileStat {
    /// `a.py (+3 -1)` or `b.png (binary)`.
    pub fn label(&self) -> String {
        if self.binary {
            format!("{} (binary)", self.path)
        } else {
            format!("{} (+{} -{})", self.path, self.added, self.deleted)
        }
    }
}

/// One file's change: its figures and its patch text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub stat: FileStat,
    pub patch: String,
}

/// One task's change: the worktree (untracked files included) against the commit the task
/// started from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffInfo {
    /// The commit the change is measured from.
    pub base: String,
    pub files: Vec<FileDiff>,
    /// A digest of the patch, so a verdict names the exact diff it judged.
    pub digest: String,
}

/// The least a cut file keeps of its patch; a file that would get less is left out and named.
const MIN_FILE_SHARE: usize = 800;

impl DiffInfo {
    /// `a.py (+3 -1); b.py (binary)`, or `(no changes)`, as Tilth's ledger writes it.
    pub fn summary(&self) -> String {
        if self.files.is_empty() {
            return "(no changes)".into();
        }
        self.files.iter().map(|f| f.stat.label()).collect::<Vec<_>>().join("; ")
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The change without the files at `paths`: what a compacted conversation shows beside
    /// turns that hold those files whole already.
    #[must_use]
    pub fn without(&self, paths: &[String]) -> DiffInfo {
        let files =
            (self.files.iter()).filter(|f| !paths.contains(&f.stat.path)).cloned().collect();
        DiffInfo { base: self.base.clone(), files, digest: self.digest.clone() }
    }

    /// The whole patch.
    pub fn patch(&self) -> String {
        self.files.iter().map(|f| f.patch.as_str()).collect()
    }

    /// The patch in at most about `max` characters, cut file by file so that one large file
    /// cannot push the others out: files that fit are shown whole (smallest first), the rest
    /// share what is left, each cut at a line with a note, and a file whose share would be too
    /// small to read is left out and named at the end. Nothing is dropped without saying so.
    pub fn excerpt(&self, max: usize) -> String {
        let len = |i: usize| self.files[i].patch.chars().count();
        let mut order: Vec<usize> = (0..self.files.len()).collect();
        order.sort_by_key(|&i| len(i));
        let mut shown: Vec<Option<usize>> = vec![None; self.files.len()];
        let mut left = max;
        let mut whole = 0;
        while whole < order.len() && len(order[whole]) <= left / (order.len() - whole) {
            shown[order[whole]] = Some(len(order[whole]));
            left -= len(order[whole]);
            whole += 1;
        }
        let larger = &order[whole..];
        let fit = (left / MIN_FILE_SHARE).min(larger.len());
        if fit > 0 {
            for &i in &larger[..fit] {
                shown[i] = Some(left / fit);
            }
        }
        let mut out = String::new();
        let mut omitted = Vec::new();
        for (f, budget) in self.files.iter().zip(shown) {
            match budget {
                Some(b) if b >= f.patch.chars().count() => out.push_str(&f.patch),
                Some(b) => out.push_str(&cut_at_line(&f.patch, b, &f.stat.path)),
                None => omitted.push(f.stat.label()),
            }
        }
        if !omitted.is_empty() {
            let _ = writeln!(
                out,
                "\n[Left out for length; their changes are not shown: {}]",
                omitted.join("; ")
            );
        }
        out
    }
}

/// The first lines of a file's patch that fit in `max` characters, with a note of the cut.
fn cut_at_line(patch: &str, max: usize, path: &str) -> String {
    let total = patch.lines().count();
    let mut out = String::new();
    let mut used = 0;
    let mut lines = 0;
    for line in patch.split_inclusive('\n') {
        let n = line.chars().count();
        if used + n > max {
            break;
        }
        out.push_str(line);
        used += n;
        lines += 1;
    }
    let _ = writeln!(out, "[{path}: cut for length, {lines} of {total} patch lines shown]");
    out
}

/// Finds the repository containing `path`, refusing bare repositories and missing ones.
pub(super) fn open_source(path: &Path) -> Result<Pooled, WorkspaceError> {
    let repo = repo_pool::open(path, |p| Repository::discover(p)).map_err(|_| {
        if path.exists() {
            WorkspaceError::NotARepo(path.to_path_buf())
        } else {
            WorkspaceError::Missing(path.to_path_buf())
        }
    })?;
    if repo.is_bare() || repo.workdir().is_none() {
        return Err(WorkspaceError::NotARepo(path.to_path_buf()));
    }
    Ok(repo)
}

impl Workspace {
    /// The top folder of the repository that holds `path`, as a session would use it.
    pub fn source_top(path: &Path) -> Result<PathBuf, WorkspaceError> {
        let repo = open_source(path)?;
        Ok(repo.workdir().map_or_else(|| path.to_path_buf(), Path::to_path_buf))
    }

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

    pub(super) fn repo(&self) -> Result<Pooled, WorkspaceError> {
        open_worktree(&self.worktree, Some(&self.source))
            .map_err(git(format!("open worktree {}", self.worktree.display())))
    }

    /// The commit the worktree's branch points at now.
    pub fn head(&self) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(git("read HEAD"))?;
        Ok(head.id().to_string())
    }

    /// Commits everything in the worktree as the accepted work of a task, on top of `parent`
    /// (the commit the task started from; the branch tip when not known) and moves the
    /// session branch there, so the branch holds one commit per accepted task whatever the
    /// worker committed on its own. Returns the new commit, or `None` when there was nothing
    /// to commit.
    pub fn commit_task(
        &self,
        task_id: &str,
        title: &str,
        session_id: &str,
        review: Review,
        parent: Option<&str>,
        judged: Option<&str>,
    ) -> Result<Option<String>, WorkspaceError> {
        let repo = self.repo()?;
        let branch = format!("refs/heads/{}", self.branch);
        let parent = match parent {
            Some(sha) => find_commit(&repo, sha),
            None => repo.find_reference(&branch).and_then(|r| r.peel_to_commit()),
        }
        .map_err(git("read the task's starting commit"))?;
        let tree_id = self.staged_as_judged(&repo, &parent, judged)?;
        if parent.tree_id() == tree_id {
            repo.reference(&branch, parent.id(), true, "harrow: accepted with no change")
                .and_then(|_| head_on(&repo, &branch))
                .map_err(git("point the session branch at the task's start"))?;
            return Ok(None);
        }
        let tree = repo.find_tree(tree_id).map_err(git("find tree"))?;
        let sig = Signature::now(SIGNATURE_NAME, SIGNATURE_EMAIL).map_err(git("signature"))?;
        let message = task_message(task_id, title, session_id, review);
        let oid =
            repo.commit(None, &sig, &sig, &message, &tree, &[&parent]).map_err(git("commit"))?;
        repo.reference(&branch, oid, true, "harrow: task accepted")
            .and_then(|_| head_on(&repo, &branch))
            .map_err(git("move the session branch to the accepted commit"))?;
        Ok(Some(oid.to_string()))
    }

    /// The worktree's work as a tree, as [`Workspace::commit_task`] would commit it on top of
    /// `parent` (`None`: it changes nothing), without a commit: what a lane's task merges onto
    /// a session branch that moved.
    pub fn judged_tree(
        &self,
        parent: &str,
        judged: Option<&str>,
    ) -> Result<Option<String>, WorkspaceError> {
        let repo = self.repo()?;
        let parent = find_commit(&repo, parent).map_err(git("read the task's starting commit"))?;
        let tree_id = self.staged_as_judged(&repo, &parent, judged)?;
        Ok((parent.tree_id() != tree_id).then(|| tree_id.to_string()))
    }

    /// Stages the worktree's work whole and gives its tree. What lands must be what was
    /// judged: with `judged`, the tree's change from `parent` (the task's start) is digested
    /// as the verdict's was, and anything else is refused, never committed.
    fn staged_as_judged(
        &self,
        repo: &Repository,
        parent: &git2::Commit<'_>,
        judged: Option<&str>,
    ) -> Result<Oid, WorkspaceError> {
        let (tree_id, change) = self.staged_change(repo, parent, true)?;
        if judged.is_some_and(|judged| change.1 != judged) {
            return Err(WorkspaceError::ChangedSinceJudged);
        }
        Ok(tree_id)
    }

    /// The one measure of a task's change: the worktree staged whole (new files not ignored
    /// included, on top of the index on disk) as a tree, and that tree's patches from
    /// `parent` with their digest. The diff shown, the diff judged and the diff landed are all
    /// this, so nothing in the worktree's index — left stale by a lane's move to a new task,
    /// or changed by the worker's own `git` — makes them differ. `write_index`: the index on
    /// disk takes the staged entries (a landing); otherwise it is left as it was.
    fn staged_change(
        &self,
        repo: &Repository,
        parent: &git2::Commit<'_>,
        write_index: bool,
    ) -> Result<(Oid, (Vec<FileDiff>, String)), WorkspaceError> {
        self.refuse_special_files()?;
        let tree_id = stage_all(repo, write_index)?;
        let staged = repo.find_tree(tree_id).map_err(git("find tree"))?;
        let parent_tree = parent.tree().map_err(git("read the task's starting tree"))?;
        let diff = repo
            .diff_tree_to_tree(Some(&parent_tree), Some(&staged), Some(&mut DiffOptions::new()))
            .map_err(git("diff the staged work"))?;
        Ok((tree_id, patches(&diff)?))
    }

    /// The commit the session branch points at: the last accepted task's, or the base. This is
    /// where the task at work started, whatever the worker did to HEAD.
    pub fn tip(&self) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let tip = repo
            .find_reference(&format!("refs/heads/{}", self.branch))
            .and_then(|r| r.peel_to_commit())
            .map_err(git(format!("read branch {}", self.branch)))?;
        Ok(tip.id().to_string())
    }

    /// The task's own change: the worktree as it is now, new files not ignored by
    /// `.gitignore` included, against `from` (the commit the task started from). Earlier
    /// tasks' work is in `from` and so is never part of it.
    pub fn diff_from(&self, from: &str) -> Result<DiffInfo, WorkspaceError> {
        let repo = self.repo()?;
        let from_commit = find_commit(&repo, from)
            .map_err(git(format!("read the task's starting commit {from}")))?;
        let (_, (files, digest)) = self.staged_change(&repo, &from_commit, false)?;
        Ok(DiffInfo { base: from.to_owned(), files, digest })
    }

    /// A FIFO, socket or device in the worktree that git would see (one not ignored, or at a
    /// path git tracks) is refused before git reads the change: nothing in it is a file, and
    /// reading a FIFO waits for a writer. Git's own ignore rules decide, from the repository,
    /// so an ignore file git does not read (`.ignore`) hides nothing; an ignored folder is
    /// passed over unless git tracks something in it. Only folders are asked about, so a
    /// worktree of plain files costs one listing per folder.
    fn refuse_special_files(&self) -> Result<(), WorkspaceError> {
        use std::os::unix::fs::FileTypeExt;
        let repo = self.repo()?;
        let index = repo.index().map_err(git("read the index"))?;
        let ignored = |rel: &Path| repo.is_path_ignored(rel).unwrap_or(false);
        let mut folders = vec![PathBuf::new()];
        while let Some(folder) = folders.pop() {
            let Ok(entries) = std::fs::read_dir(self.worktree.join(&folder)) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Ok(kind) = entry.file_type() else { continue };
                if name == ".git" {
                    continue;
                }
                let rel = folder.join(&name);
                if kind.is_dir() {
                    let mut inside = rel.clone().into_os_string();
                    inside.push("/");
                    let inside = PathBuf::from(inside);
                    if !ignored(&inside) || index.find_prefix(&inside).is_ok() {
                        folders.push(rel);
                    }
                    continue;
                }
                let what = if kind.is_fifo() {
                    "FIFO"
                } else if kind.is_socket() {
                    "socket"
                } else if kind.is_char_device() || kind.is_block_device() {
                    "device"
                } else {
                    continue;
                };
                if !ignored(&rel) || index.get_path(&rel, 0).is_some() {
                    return Err(WorkspaceError::SpecialFile(rel.display().to_string(), what));
                }
            }
        }
        Ok(())
    }

    /// The files earlier tasks of the session changed (base to branch tip), for a one-line
    /// mention beside a task's own diff.
    pub fn earlier_files(&self) -> Result<Vec<String>, WorkspaceError> {
        let repo = self.repo()?;
        let tree = |sha: &str| find_commit(&repo, sha).and_then(|c| c.tree());
        let base = tree(&self.base).map_err(git("read base tree"))?;
        let tip = tree(&self.tip()?).map_err(git("read branch tree"))?;
        let diff =
            repo.diff_tree_to_tree(Some(&base), Some(&tip), None).map_err(git("diff branch"))?;
        Ok(diff
            .deltas()
            .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
            .map(|p| p.display().to_string())
            .collect())
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

    /// The worktree's files as a tree id — new files not ignored included — without writing
    /// anything but the objects: what a turn left, to tell when work comes back to where an
    /// earlier turn had it.
    pub fn tree_now(&self) -> Result<String, WorkspaceError> {
        Ok(stage_all(&*self.repo()?, false)?.to_string())
    }

    /// Keeps the worktree as it is now as a commit object on a ref outside the branches,
    /// `refs/harrow/<session>/<name>` (its parent `base`), so a judged attempt or a task's
    /// set-aside work can be shown and restored later. Neither HEAD, the branch nor the
    /// worktree's index on disk changes.
    pub fn keep(&self, name: &str, base: &str, message: &str) -> Result<Kept, WorkspaceError> {
        let repo = self.repo()?;
        let tree_id = stage_all(&repo, false)?;
        let tree = repo.find_tree(tree_id).map_err(git("find tree"))?;
        let parent = find_commit(&repo, base).map_err(git("read the task's starting commit"))?;
        let sig = Signature::now(SIGNATURE_NAME, SIGNATURE_EMAIL).map_err(git("signature"))?;
        let oid =
            repo.commit(None, &sig, &sig, message, &tree, &[&parent]).map_err(git("commit"))?;
        let session = self.session_id();
        let mut refname = format!("refs/harrow/{session}/{name}");
        // A name met again (a check repeated at the same iteration after a resume) never
        // moves a ref that keeps other work: the new one gets its commit's id added.
        if repo.find_reference(&refname).is_ok_and(|r| r.target() != Some(oid)) {
            refname = format!("{refname}-{}", &oid.to_string()[..7]);
        }
        let mut book = super::own_refs::lock();
        repo.reference(&refname, oid, true, message).map_err(git(format!("keep {name}")))?;
        book.wrote(repo.commondir(), &refname, Some(oid.to_string()));
        Ok(Kept { refname, oid })
    }

    /// The session's base commit as an object id.
    pub(super) fn base_oid(&self) -> Result<Oid, WorkspaceError> {
        Oid::from_str(&self.base).map_err(git(format!("read the session's base {}", self.base)))
    }

    /// Puts the worktree's files back as they were in `commit` (kept by [`Workspace::keep`]),
    /// on top of the last commit: what an interrupted rework restarts from.
    pub fn restore_files(&self, commit: &str) -> Result<(), WorkspaceError> {
        self.restore_tree(commit)
    }

    /// Removes the worktree folder and its registration in the source repository (none with
    /// no source); the branch (the session's result) stays. The folder goes only when its real
    /// path lies under `within` (the session folder, or its `lanes/`), whatever the
    /// registration's `gitdir` says: that file is in the worktree's git folder, which the
    /// worker's `git` writes, and libgit2's prune deletes the folder it names.
    pub fn remove_worktree(
        source: Option<&Path>,
        worktree: &Path,
        within: &Path,
    ) -> Result<bool, WorkspaceError> {
        let folder = harrow_folder(worktree, within)?;
        let mut removed = false;
        if let Some(Ok(repo)) = source.map(open_source)
            && let Some(name) = registration_at(&repo, worktree)
        {
            removed |= forget_registration(&repo, &name)?;
        }
        if let Some(folder) = folder {
            std::fs::remove_dir_all(&folder).map_err(|e| WorkspaceError::Io(folder.clone(), e))?;
            removed = true;
        }
        Ok(removed)
    }

    /// Deletes a session's refs under `refs/harrow/<session>/` (its judged attempts and
    /// set-aside work) from the source repository. Returns how many there were.
    pub fn delete_kept(source: &Path, session_id: &str) -> Result<usize, WorkspaceError> {
        let repo = open_source(source)?;
        let glob = format!("refs/harrow/{session_id}/*");
        let names: Vec<String> = repo
            .references_glob(&glob)
            .map_err(git("list the session's refs"))?
            .flatten()
            .filter_map(|r| r.name().ok().map(str::to_owned))
            .collect();
        for name in &names {
            if let Ok(mut r) = repo.find_reference(name) {
                r.delete().map_err(git(format!("delete {name}")))?;
            }
        }
        Ok(names.len())
    }

    /// Deletes a ref whoever has it checked out (a lane's worktree keeps naming its task's
    /// branch until the next task moves it).
    pub fn delete_ref(source: &Path, name: &str) -> Result<(), WorkspaceError> {
        let repo = open_source(source)?;
        match repo.find_reference(name) {
            Ok(mut r) => r.delete().map_err(git(format!("delete {name}"))),
            Err(_) => Ok(()),
        }
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

/// A task's commit message: its title, how it was reviewed, and the trailers that find it.
pub(super) fn task_message(task_id: &str, title: &str, session_id: &str, review: Review) -> String {
    format!(
        "{task_id}: {title}\n\n{}\n\nSession: {session_id}\nReviewed-by: {}\n",
        review.sentence(),
        review.trailer()
    )
}

/// Puts `HEAD` on `branch` unless it is there already: each move writes `HEAD` and its log
/// again, once per accepted task.
pub(super) fn head_on(repo: &Repository, branch: &str) -> Result<(), git2::Error> {
    let there = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
        .is_some_and(|t| t == branch);
    if there { Ok(()) } else { repo.set_head(branch) }
}

/// Opens the worktree at `worktree` as harrow placed it, whatever the files the worker's `git`
/// can write say: its working folder is `worktree` itself (libgit2 would take it from the
/// registration's `gitdir`, so a forged one would make a checkout clean the user's own
/// checkout), and with `source`, its repository must be the source's (the worktree's `.git`
/// file could name any other).
pub(super) fn open_worktree(worktree: &Path, source: Option<&Path>) -> Result<Pooled, git2::Error> {
    repo_pool::open(worktree, |p| {
        let repo = Repository::open(p)?;
        if let Some(source) = source {
            let want = Repository::discover(source)?.commondir().canonicalize();
            let have = repo.commondir().canonicalize();
            if !matches!((&want, &have), (Ok(w), Ok(h)) if w == h) {
                return Err(git2::Error::from_str(&format!(
                    "its .git no longer points into the repository at {}; harrow will not work on another repository",
                    source.display()
                )));
            }
        }
        repo.set_workdir(p, false)?;
        Ok(repo)
    })
}

/// The name of the worktree registered at `path`, found by path so Tilth's worktrees (named
/// after the folder) are found as well as harrow's (named after the session). The path each
/// registration names is only compared, never acted on.
pub(super) fn registration_at(repo: &Repository, path: &Path) -> Option<String> {
    let want = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let names = repo.worktrees().ok()?;
    names.iter().flatten().flatten().find_map(|name| {
        let wt = repo.find_worktree(name).ok()?;
        let at = wt.path().canonicalize().unwrap_or_else(|_| wt.path().to_path_buf());
        (at == want).then(|| name.to_owned())
    })
}

/// Removes the registration `name` from the repository's git folder
/// (`.git/worktrees/<name>`), and nothing outside it. Returns whether there was one.
pub(super) fn forget_registration(repo: &Repository, name: &str) -> Result<bool, WorkspaceError> {
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
    let folder = repo.commondir().join("worktrees").join(name);
    match std::fs::symlink_metadata(&folder) {
        Ok(meta) if plain && meta.is_dir() => {
            std::fs::remove_dir_all(&folder).map_err(|e| WorkspaceError::Io(folder, e))?;
            Ok(true)
        }
        Ok(_) if plain => {
            std::fs::remove_file(&folder).map_err(|e| WorkspaceError::Io(folder, e))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// `worktree` when it is a folder of harrow's to remove: a real folder (not a link) whose real
/// path lies under `within`'s; `None` when it is gone. Anything else is refused.
pub(super) fn harrow_folder(
    worktree: &Path,
    within: &Path,
) -> Result<Option<PathBuf>, WorkspaceError> {
    let meta = match std::fs::symlink_metadata(worktree) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(WorkspaceError::Io(worktree.to_path_buf(), e)),
    };
    let real =
        worktree.canonicalize().map_err(|e| WorkspaceError::Io(worktree.to_path_buf(), e))?;
    let root = within.canonicalize().map_err(|e| WorkspaceError::Io(within.to_path_buf(), e))?;
    if meta.is_dir() && real.starts_with(&root) && real != root {
        Ok(Some(real))
    } else {
        Err(WorkspaceError::OutsideSession(worktree.to_path_buf(), within.to_path_buf()))
    }
}

/// A commit named by its id as text.
/// Each file's patch, and a digest of them all (a verdict names the exact diff it judged by
/// it): one function, so the diff shown, the diff judged and the diff landed are digested alike.
fn patches(diff: &git2::Diff<'_>) -> Result<(Vec<FileDiff>, String), WorkspaceError> {
    let mut files = Vec::new();
    let mut whole = Vec::new();
    for i in 0..diff.deltas().len() {
        let Ok(Some(mut patch)) = git2::Patch::from_diff(diff, i) else { continue };
        let delta = patch.delta();
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let binary = delta.flags().is_binary();
        let (_, added, deleted) = patch.line_stats().unwrap_or((0, 0, 0));
        let text = patch.to_buf().map_err(git(format!("diff {path}")))?;
        whole.extend_from_slice(&text);
        files.push(FileDiff {
            stat: FileStat { path, added, deleted, binary },
            patch: String::from_utf8_lossy(&text).into_owned(),
        });
    }
    let digest =
        Oid::hash_object(ObjectType::Blob, &whole).map_err(git("digest diff"))?.to_string();
    Ok((files, digest))
}

pub(super) fn find_commit<'r>(
    repo: &'r Repository,
    sha: &str,
) -> Result<git2::Commit<'r>, git2::Error> {
    Oid::from_str(sha).and_then(|oid| repo.find_commit(oid))
}

/// Stages everything in the worktree on top of the index on disk and writes the tree (see
/// [`super::staging`]).
fn stage_all(repo: &Repository, write_index: bool) -> Result<Oid, WorkspaceError> {
    super::staging::stage_all(repo, write_index).map_err(git("stage the worktree"))
}

fn short_sha(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}
