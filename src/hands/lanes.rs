//! A lane's own worktree and branch, and how a task's accepted change reaches the session
//! branch from there.
//!
//! In a run with lanes each running task has a worktree `lanes/worktree-<n>` in the session
//! folder, on that worktree's own branch `session/<id>--worktree-<n>`, which is put at the
//! session branch as it stands when a task starts there. Which task a worktree serves is noted
//! beside it in the session folder (`lanes/worktree-<n>.task`), empty once the task has landed,
//! and never in the worktree's git folder, which the worker's `git` writes: a worktree and its
//! branch serve one task after another, so starting a task moves one ref and makes no branch,
//! no reflog and no `HEAD` change. Everything harrow reads from a lane's git folder (its `HEAD`,
//! its `gitdir`) is the worker's to forge, so a worktree is found and removed by the names and
//! paths harrow chose, never by what those files say. A task's accepted change lands on the
//! session branch as one commit: a fast-forward when the session branch has not moved, else a
//! three-way merge (git2, in memory) whose tree is what lands; it is checked out in the lane
//! before anything moves, so the validators judge the combination.

use super::workspace::{
    Review, SIGNATURE_EMAIL, SIGNATURE_NAME, Workspace, WorkspaceError, find_commit, git,
    open_source, task_message,
};
use git2::build::CheckoutBuilder;
use git2::{Oid, Repository, Signature, WorktreeAddOptions};
use std::path::{Path, PathBuf};

/// What separates the session id from the worktree in a lane's branch name.
const LANE_MARK: &str = "--";

/// The most a lane's note or a git folder's `HEAD` is read to.
const NOTE_LIMIT: u64 = 4096;

/// The session a branch belongs to: `session/<id>`, or a lane's `session/<id>--<task>`.
pub fn session_of_branch(branch: &str) -> &str {
    let rest = branch.strip_prefix("session/").unwrap_or(branch);
    rest.split_once(LANE_MARK).map_or(rest, |(id, _)| id)
}

/// A task id as it may appear in a branch and folder name: letters, digits, `_` and `-`;
/// anything else becomes `_` (ids come from plan files a person or a model wrote, and a `.`
/// could make `..` or `.lock`, which git refuses in a ref).
pub fn lane_name(task: &str) -> String {
    let name: String = task
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c } else { '_' })
        .collect();
    if name.is_empty() { "task".to_owned() } else { name }
}

/// A three-way merge of a task's change onto the session branch, done in memory.
pub struct Merged {
    index: git2::Index,
    /// The files both sides changed in ways git cannot combine.
    pub conflicts: Vec<String>,
    /// The combination's tree, written when the merge is clean, before anything runs on it:
    /// what lands is this tree, whatever a validator leaves in the worktree afterwards.
    tree: Option<Oid>,
}

impl std::fmt::Debug for Merged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merged")
            .field("conflicts", &self.conflicts)
            .field("tree", &self.tree)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// The session this workspace belongs to.
    pub fn session_id(&self) -> &str {
        session_of_branch(&self.branch)
    }

    /// The session branch's name, from the session's worktree or any of its lanes.
    pub fn session_branch(&self) -> String {
        format!("session/{}", self.session_id())
    }

    /// The commit the session branch points at now.
    pub fn session_tip(&self) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let name = format!("refs/heads/{}", self.session_branch());
        let tip = repo
            .find_reference(&name)
            .and_then(|r| r.peel_to_commit())
            .map_err(git(format!("read branch {}", self.session_branch())))?;
        Ok(tip.id().to_string())
    }

    /// Where the lanes' worktrees of the session whose own worktree this is live: `lanes/`
    /// beside it, in the session's folder or this machine's work folder (`[run] work_dir`).
    pub fn lanes_folder(&self) -> PathBuf {
        self.worktree.parent().map_or_else(|| PathBuf::from("lanes"), |p| p.join("lanes"))
    }

    /// The branch of the lane worktree in folder `folder`: `session/<id>--<folder>`.
    fn lane_branch(&self, folder: &str) -> String {
        format!("{}{LANE_MARK}{}", self.session_branch(), lane_name(folder))
    }

    /// The lane worktree under `lanes` where `task` is at work or waits for a decision.
    pub fn lane_of(&self, task: &str, lanes: &Path) -> Option<Workspace> {
        let repo = open_source(&self.source).ok()?;
        self.lane_among(task, &lane_worktrees(&repo, lanes, self.session_id(), &[]))
    }

    fn lane_among(&self, task: &str, worktrees: &[LaneWorktree]) -> Option<Workspace> {
        let w = worktrees.iter().find(|w| w.serves(task))?;
        Some(self.in_lane(&w.path, w.branch.as_deref()?))
    }

    /// The lane where `task` is worked: the worktree it already has (a resume, a decision on a
    /// parked task), else a free one of the lanes' worktrees — one whose task has landed — or
    /// a new one; its branch is put at the session branch as it stands now. A worktree is
    /// reused from task to task, so starting a task rewrites only the files that differ and
    /// keeps the build caches git ignores, as the session's own worktree does without lanes.
    /// The worktrees in `busy` are other tasks', whatever their files say.
    pub fn lane_for(
        &self,
        task: &str,
        lanes: &Path,
        busy: &[&Path],
    ) -> Result<Workspace, WorkspaceError> {
        let repo = open_source(&self.source)?;
        let worktrees = lane_worktrees(&repo, lanes, self.session_id(), busy);
        if let Some(lane) = self.lane_among(task, &worktrees) {
            return Ok(lane);
        }
        let session = format!("refs/heads/{}", self.session_branch());
        let tip = repo
            .find_reference(&session)
            .and_then(|r| r.peel_to_commit())
            .map_err(git(format!("read branch {}", self.session_branch())))?;
        if let Some(free) = worktrees.iter().find(|w| w.task.is_none()) {
            let folder = free.path.file_name().map(|n| n.to_string_lossy().into_owned());
            let branch = self.lane_branch(&folder.unwrap_or_default());
            let name = format!("refs/heads/{branch}");
            let message = format!("harrow: lane takes {task}");
            repo.reference(&name, tip.id(), true, &message)
                .map_err(git(format!("put {branch} at the session branch")))?;
            let lane = self.in_lane(&free.path, &branch);
            let wt = lane.repo()?;
            // Whatever its `HEAD` says (a worker may have left it anywhere), it is on its own
            // branch from now on; that branch is no other worktree's.
            super::workspace::head_on(&wt, &name)
                .map_err(git(format!("put {} on {branch}", free.path.display())))?;
            if free.by_branch {
                // A worktree an earlier harrow made, on a branch of its task's.
                if let Some(old) = free.branch.as_deref() {
                    Workspace::delete_ref(&self.source, &format!("refs/heads/{old}"))?;
                }
            }
            check_out_whole(&wt, &tip).map_err(git(format!("check out {branch}")))?;
            mark_task(&free.path, task)?;
            return Ok(lane);
        }
        // Among one more names than the folder holds entries, one is free.
        let taken = std::fs::read_dir(lanes).map_or(0, Iterator::count) + 1;
        let number =
            (1..=taken).find(|k| !lanes.join(format!("worktree-{k}")).exists()).unwrap_or(taken);
        let folder = format!("worktree-{number}");
        let path = lanes.join(&folder);
        let name = format!("{}{LANE_MARK}{folder}", self.session_id());
        // A registration left by a crash: only its folder in the repository's git folder goes,
        // never the path its `gitdir` names (the worker's to forge).
        super::workspace::forget_registration(&repo, &name)?;
        let branch = self.lane_branch(&folder);
        let created =
            repo.branch(&branch, &tip, true).map_err(git(format!("create branch {branch}")))?;
        let reference = created.into_reference();
        crate::safe_io::ensure_dir(lanes)
            .map_err(|e| WorkspaceError::Io(lanes.to_path_buf(), e))?;
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        repo.worktree(&name, &path, Some(&opts))
            .map_err(git(format!("add worktree {}", path.display())))?;
        mark_task(&path, task)?;
        Ok(self.in_lane(&path, &branch))
    }

    /// Attempt `k` of a best-of task: a worktree of its own, `lanes/candidates/<task>-<k>`,
    /// on its own branch `session/<id>--c-<task>-<k>`, checked out at `at` (the task's base).
    /// Its names are the task's, so no other lane ever takes it; one a crash left is made
    /// afresh. Called on the session's own workspace.
    pub fn candidate(&self, task: &str, k: u64, at: &str) -> Result<Workspace, WorkspaceError> {
        let repo = open_source(&self.source)?;
        let commit = find_commit(&repo, at).map_err(git(format!("find {at}")))?;
        let (lanes, path, name, branch) = self.candidate_names(task, k);
        Self::drop_candidate(&repo, &self.source, &lanes, &path, &name, &branch)?;
        let created =
            repo.branch(&branch, &commit, true).map_err(git(format!("create branch {branch}")))?;
        let reference = created.into_reference();
        crate::safe_io::ensure_dir(&lanes).map_err(|e| WorkspaceError::Io(lanes.clone(), e))?;
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        repo.worktree(&name, &path, Some(&opts))
            .map_err(git(format!("add worktree {}", path.display())))?;
        Ok(self.in_lane(&path, &branch))
    }

    /// Removes attempt `k`'s worktree of a best-of task, its registration and its branch: its
    /// judged work stays on its kept ref. Called on the session's own workspace.
    pub fn remove_candidate(&self, task: &str, k: u64) -> Result<(), WorkspaceError> {
        let repo = open_source(&self.source)?;
        let (lanes, path, name, branch) = self.candidate_names(task, k);
        Self::drop_candidate(&repo, &self.source, &lanes, &path, &name, &branch)
    }

    /// A candidate's folder (under `lanes/candidates`), registration name and branch.
    fn candidate_names(&self, task: &str, k: u64) -> (PathBuf, PathBuf, String, String) {
        let folder = format!("c-{}-{k}", lane_name(task));
        let lanes = self.lanes_folder().join("candidates");
        let path = lanes.join(&folder);
        let name = format!("{}{LANE_MARK}{folder}", self.session_id());
        let branch = format!("{}{LANE_MARK}{folder}", self.session_branch());
        (lanes, path, name, branch)
    }

    fn drop_candidate(
        repo: &Repository,
        source: &Path,
        lanes: &Path,
        path: &Path,
        name: &str,
        branch: &str,
    ) -> Result<(), WorkspaceError> {
        super::workspace::forget_registration(repo, name)?;
        // Only inside folders harrow made: a link put in place of the candidates' folder (or
        // the lanes' folder above it) is never followed to delete what it points at.
        let real = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        if real(lanes) && lanes.parent().is_some_and(real) {
            Workspace::remove_worktree(None, path, lanes)?;
        }
        Workspace::delete_ref(source, &format!("refs/heads/{branch}"))
    }

    fn in_lane(&self, worktree: &Path, branch: &str) -> Workspace {
        Workspace {
            source: self.source.clone(),
            worktree: worktree.to_path_buf(),
            branch: branch.to_owned(),
            base: self.base.clone(),
        }
    }

    /// Frees a lane's worktree once its task has landed (or was set aside): the session branch
    /// holds the work, and its judged attempts stay on their refs. The worktree and its branch
    /// wait for the next task.
    pub fn release_lane(&self) -> Result<(), WorkspaceError> {
        mark_task(&self.worktree, "")
    }

    /// Removes the lanes' worktrees no task holds, with their branches: what is left of them
    /// when a run ends.
    pub fn remove_free_lanes(&self, lanes: &Path) -> Result<(), WorkspaceError> {
        let repo = open_source(&self.source)?;
        for w in lane_worktrees(&repo, lanes, self.session_id(), &[]) {
            if w.task.is_none() {
                // Its registration by the name found; the folder only inside `lanes`.
                super::workspace::forget_registration(&repo, &w.registration)?;
                Workspace::remove_worktree(None, &w.path, lanes)?;
                let _ = std::fs::remove_file(note_of(&w.path));
                if let Some(branch) = &w.branch {
                    Workspace::delete_ref(&self.source, &format!("refs/heads/{branch}"))?;
                }
            }
        }
        Ok(())
    }

    /// Lets the lanes' guards take the session's own refs afresh from now on (see
    /// [`super::own_refs`]).
    pub fn forget_own_refs(&self) -> Result<(), WorkspaceError> {
        let repo = open_source(&self.source)?;
        super::own_refs::lock().forget(repo.commondir(), self.session_id());
        Ok(())
    }

    /// Removes the git lock files a killed run left in this session's worktree, its lanes and
    /// its own refs (`index.lock`, `HEAD.lock`, a ref's `.lock`), which would otherwise refuse
    /// every later git operation there ("the index is locked"). Only files no live process has
    /// open go: the caller holds the session's lock, so no harrow works there now, and a
    /// process of the user's that still writes one keeps it. Returns what it removed.
    pub fn clear_stale_locks(&self, lanes: &Path) -> Result<Vec<PathBuf>, WorkspaceError> {
        let repo = open_source(&self.source)?;
        let common = repo.commondir().to_path_buf();
        let mut folders = vec![common.join("worktrees").join(self.session_id())];
        if let Some(name) = super::workspace::registration_at(&repo, &self.worktree) {
            folders.push(common.join("worktrees").join(name));
        }
        for lane in lane_worktrees(&repo, lanes, self.session_id(), &[]) {
            folders.push(common.join("worktrees").join(lane.registration));
        }
        let mut locks: Vec<PathBuf> =
            folders.iter().flat_map(|f| ["index.lock", "HEAD.lock"].map(|n| f.join(n))).collect();
        let heads = common.join("refs/heads/session");
        let own = format!("{}.lock", self.session_id());
        let own_lanes = format!("{}{LANE_MARK}", self.session_id());
        for entry in std::fs::read_dir(&heads).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let lock = std::path::Path::new(&name).extension().is_some_and(|e| e == "lock");
            if name == own || (name.starts_with(&own_lanes) && lock) {
                locks.push(entry.path());
            }
        }
        lock_files_under(&common.join("refs/harrow").join(self.session_id()), &mut locks);
        locks.sort();
        locks.dedup();
        locks.retain(|lock| std::fs::symlink_metadata(lock).is_ok_and(|m| m.is_file()));
        if locks.is_empty() {
            return Ok(Vec::new());
        }
        // Every process's open files are read only when a lock is there to ask about: the
        // walk of `/proc/*/fd` costs a resume milliseconds on a busy machine.
        let open = super::process::open_files();
        let mut removed = Vec::new();
        for lock in locks {
            if !open.contains(&lock) {
                std::fs::remove_file(&lock).map_err(|e| WorkspaceError::Io(lock.clone(), e))?;
                removed.push(lock);
            }
        }
        Ok(removed)
    }

    /// Merges the change from `base` to `change` (a commit, or a tree) onto `onto`, in memory.
    /// Nothing on disk moves.
    pub fn merge_onto(
        &self,
        base: &str,
        change: &str,
        onto: &str,
    ) -> Result<Merged, WorkspaceError> {
        let repo = self.repo()?;
        let tree = |sha: &str| {
            Oid::from_str(sha)
                .and_then(|id| repo.find_object(id, None))
                .and_then(|o| o.peel_to_tree())
        };
        let ancestor = tree(base).map_err(git("read the task's starting tree"))?;
        let ours = tree(onto).map_err(git("read the session branch's tree"))?;
        let theirs = tree(change).map_err(git("read the task's accepted tree"))?;
        let mut index =
            repo.merge_trees(&ancestor, &ours, &theirs, None).map_err(git("merge the change"))?;
        let mut conflicts = Vec::new();
        if index.has_conflicts() {
            for c in index.conflicts().map_err(git("read the merge's conflicts"))?.flatten() {
                let entry = c.our.as_ref().or(c.their.as_ref()).or(c.ancestor.as_ref());
                if let Some(e) = entry {
                    let path = String::from_utf8_lossy(&e.path).into_owned();
                    if !conflicts.contains(&path) {
                        conflicts.push(path);
                    }
                }
            }
        }
        let tree = if conflicts.is_empty() {
            Some(index.write_tree_to(&repo).map_err(git("write the merged tree"))?)
        } else {
            None
        };
        Ok(Merged { index, conflicts, tree })
    }

    /// Commits a clean merge's result on top of `onto` as the task's commit, straight from
    /// the tree the merge built of judged work: nothing in the lane's worktree counts, so a
    /// validator (the task's own accepted test code) cannot change what lands. Refs stay where
    /// they are; the landing moves the session branch.
    pub fn commit_merged(
        &self,
        merged: &Merged,
        onto: &str,
        message: (&str, &str, &str, Review),
    ) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let parent = find_commit(&repo, onto).map_err(git("read the session tip"))?;
        let tree = match merged.tree {
            Some(id) => repo.find_tree(id),
            None => Err(git2::Error::from_str("the merge has conflicts")),
        }
        .map_err(git("read the merged tree"))?;
        let sig = Signature::now(SIGNATURE_NAME, SIGNATURE_EMAIL).map_err(git("signature"))?;
        let (task, title, session, review) = message;
        let text = task_message(task, title, session, review);
        let oid = repo.commit(None, &sig, &sig, &text, &tree, &[&parent]).map_err(git("commit"))?;
        Ok(oid.to_string())
    }

    /// Brings the lane up to `onto`: its branch moves there, and its files become the merge's
    /// result — conflicting files with git's conflict markers in them — so the task's change is
    /// measured from `onto` from now on.
    pub fn bring_up(&self, onto: &str, merged: &mut Merged) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let target = find_commit(&repo, onto).map_err(git("read the session tip"))?;
        repo.reference(
            &format!("refs/heads/{}", self.branch),
            target.id(),
            true,
            "harrow: lane brought up to the session branch",
        )
        .and_then(|_| repo.set_head(&format!("refs/heads/{}", self.branch)))
        .map_err(git("move the lane to the session branch"))?;
        check_out_whole(&repo, &target).map_err(git("check out the session branch"))?;
        let mut apply = CheckoutBuilder::new();
        apply.force().allow_conflicts(true).conflict_style_merge(true);
        repo.checkout_index(Some(&mut merged.index), Some(&mut apply))
            .map_err(git("write the merged files"))?;
        let mut index = super::repo_pool::fresh_index(&repo).map_err(git("read index"))?;
        index
            .read_tree(&target.tree().map_err(git("read the session tree"))?)
            .and_then(|()| index.write())
            .map_err(git("reset the lane's index"))?;
        Ok(())
    }

    /// Puts the lane's branch back at `base` (where its task's change is measured from) with
    /// the worktree's files as they are there: what a resumed task starts from before its
    /// judged work is put back on top.
    pub fn reset_lane(&self, base: &str) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let target = find_commit(&repo, base).map_err(git("read the task's starting commit"))?;
        let name = format!("refs/heads/{}", self.branch);
        repo.reference(&name, target.id(), true, "harrow: lane back at its task's start")
            .and_then(|_| repo.set_head(&name))
            .map_err(git("move the lane to its task's start"))?;
        check_out_whole(&repo, &target).map_err(git("check out the task's start"))
    }

    /// Moves the session branch from `from` to `to`. It refuses when the branch is not at
    /// `from`: only a landing moves it, so anything else moved it behind harrow's back.
    pub fn advance_session(&self, from: &str, to: &str) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let name = format!("refs/heads/{}", self.session_branch());
        let (from, to) = (
            Oid::from_str(from).map_err(git("read the session tip"))?,
            Oid::from_str(to).map_err(git("read the landed commit"))?,
        );
        let mut book = super::own_refs::lock();
        repo.reference_matching(&name, to, true, from, "harrow: task landed")
            .map_err(git(format!("move {} (it was expected at {from})", self.session_branch())))?;
        book.wrote(repo.commondir(), &name, Some(to.to_string()));
        Ok(())
    }

    /// Checks out the branch's tip in the worktree again, as it is now: the session's own
    /// worktree follows the session branch while lanes move it.
    pub fn refresh(&self) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(git("read HEAD"))?;
        check_out_whole(&repo, &head).map_err(git("check out the session branch"))
    }
}

/// Checks out `target` (the commit `HEAD` now names) as a fresh start: the worktree's files
/// are its tree's, untracked ones removed, and so is the index. A forced checkout alone leaves
/// out of the index a file the worktree already held with the target's bytes (one a merge
/// wrote there for the lane's last task), so the next task's worker would read its
/// predecessor's work as staged deletions beside untracked files.
fn check_out_whole(repo: &Repository, target: &git2::Commit<'_>) -> Result<(), git2::Error> {
    let mut clean = CheckoutBuilder::new();
    clean.force().remove_untracked(true);
    repo.checkout_head(Some(&mut clean))?;
    let mut index = super::repo_pool::fresh_index(repo)?;
    index.read_tree(&target.tree()?)?;
    index.write()
}

/// Every `*.lock` file under `dir`, its sub-folders included (links not followed).
fn lock_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            lock_files_under(&entry.path(), out);
        } else if entry.file_name().to_string_lossy().ends_with(".lock") {
            out.push(entry.path());
        }
    }
}

/// The note beside a lane worktree (in the session folder, out of every sandbox's reach) that
/// names the task it serves.
fn note_of(worktree: &Path) -> PathBuf {
    let folder = worktree.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    worktree.with_file_name(format!("{folder}.task"))
}

/// Names `task` as the one the lane worktree at `worktree` serves (`""`: none). The note is
/// replaced whole, never written through a link: a crash that leaves the old note leaves the
/// worktree with the task it had, which resume checks against the log.
fn mark_task(worktree: &Path, task: &str) -> Result<(), WorkspaceError> {
    let note = note_of(worktree);
    crate::safe_io::replace(&note, task.as_bytes()).map_err(|e| WorkspaceError::Io(note, e))
}

/// A lane's worktree as found on disk.
struct LaneWorktree {
    path: PathBuf,
    /// Its registration's name in the repository (`.git/worktrees/<name>`).
    registration: String,
    /// The branch it is on, when that branch exists.
    branch: Option<String>,
    /// The task it serves; `None` when it is free.
    task: Option<String>,
    /// Made by an earlier harrow: `task` is the task's name as its branch spelled it.
    by_branch: bool,
}

impl LaneWorktree {
    fn serves(&self, task: &str) -> bool {
        let name = if self.by_branch { lane_name(task) } else { task.to_owned() };
        self.task.as_deref() == Some(name.as_str())
    }
}

/// The worktrees under `lanes` but those in `busy`, each with its branch and the task it
/// serves. A folder is a lane when the repository registers a worktree by the name harrow gives
/// it (`<session>--<folder>`); its branch is its own (`session/<id>--<folder>`) and its task is
/// the note beside it. A worktree an earlier harrow made is registered under another name (found
/// by its path) and is on a branch named after its task, `<session>--<task>` (free once that
/// branch is gone). Nothing in the worktree or its git folder decides which task it serves.
fn lane_worktrees(
    source: &Repository,
    lanes: &Path,
    session_id: &str,
    busy: &[&Path],
) -> Vec<LaneWorktree> {
    let session_branch = format!("session/{session_id}");
    let registrations = source.commondir().join("worktrees");
    let mut out: Vec<_> = std::fs::read_dir(lanes)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            if busy.contains(&path.as_path()) || !e.file_type().is_ok_and(|t| t.is_dir()) {
                return None;
            }
            let folder = e.file_name().to_string_lossy().into_owned();
            let own = format!("{session_id}{LANE_MARK}{folder}");
            let registration = if registrations.join(&own).is_dir() {
                own
            } else {
                super::workspace::registration_at(source, &path)?
            };
            let own_branch = format!("{session_branch}{LANE_MARK}{}", lane_name(&folder));
            let exists = |b: &str| source.find_reference(&format!("refs/heads/{b}")).is_ok();
            let branch = if exists(&own_branch) {
                Some(own_branch.clone())
            } else {
                let head = registrations.join(&registration).join("HEAD");
                crate::safe_io::read_text_capped(&head, NOTE_LIMIT)
                    .ok()
                    .and_then(|h| Some(h.strip_prefix("ref:")?.trim().to_owned()))
                    .and_then(|b| b.strip_prefix("refs/heads/").map(str::to_owned))
                    .filter(|b| exists(b))
            };
            let (task, by_branch) = if branch.as_deref() == Some(own_branch.as_str()) {
                let note = crate::safe_io::read_text_capped(&note_of(&path), NOTE_LIMIT);
                (note.ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()), false)
            } else {
                let task = branch
                    .as_deref()
                    .and_then(|b| b.strip_prefix(&session_branch)?.strip_prefix(LANE_MARK))
                    .map(str::to_owned);
                (task, true)
            };
            Some(LaneWorktree { path, registration, branch, task, by_branch })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hands::test_git::git;

    /// A repository `src` with one commit, and session `s` cut from it.
    fn session_in(tmp: &Path) -> Workspace {
        let src = tmp.join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a"), "a\n").unwrap();
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "one"]);
        Workspace::create(&src, &tmp.join("ws"), "s").unwrap().0
    }

    #[test]
    fn a_worktree_another_task_holds_is_never_taken_whatever_its_note_says() {
        let tmp = tempfile::tempdir().unwrap();
        let session = session_in(tmp.path());
        let lanes = tmp.path().join("lanes");
        let first = session.lane_for("T-1", &lanes, &[]).unwrap();
        // Someone writes that the worktree is free.
        let note = note_of(&first.worktree);
        std::fs::write(&note, "").unwrap();
        let second = session.lane_for("T-2", &lanes, &[&first.worktree]).unwrap();
        assert_ne!(second.worktree, first.worktree);
        // Then that it serves the next task.
        std::fs::write(&note, "T-3").unwrap();
        let third = session.lane_for("T-3", &lanes, &[&first.worktree, &second.worktree]).unwrap();
        assert_ne!(third.worktree, first.worktree);
    }

    #[test]
    fn a_lane_worktree_serves_one_task_after_another_on_its_own_branch() {
        let tmp = tempfile::tempdir().unwrap();
        let session = session_in(tmp.path());
        let src = tmp.path().join("src");
        let lanes = tmp.path().join("lanes");
        let first = session.lane_for("T-1", &lanes, &[]).unwrap();
        let second = session.lane_for("T-2", &lanes, &[]).unwrap();
        assert_ne!(first.worktree, second.worktree, "two tasks at work, two worktrees");
        assert_eq!(first.branch, "session/s--worktree-1");
        assert_eq!(session.lane_for("T-1", &lanes, &[]).unwrap().worktree, first.worktree);
        assert_eq!(session.lane_of("T-2", &lanes).unwrap().worktree, second.worktree);
        // T-1 lands; the session branch moves; T-3 takes T-1's worktree, at the new tip.
        std::fs::write(src.join("b"), "b\n").unwrap();
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "two"]);
        git(&src, &["update-ref", "refs/heads/session/s", "main"]);
        first.release_lane().unwrap();
        assert!(session.lane_of("T-1", &lanes).is_none(), "a released task has no lane");
        let third = session.lane_for("T-3", &lanes, &[]).unwrap();
        assert_eq!((&third.worktree, &third.branch), (&first.worktree, &first.branch));
        assert!(third.worktree.join("b").exists(), "it starts from the session branch as it is");
        let head = git(&third.worktree, &["symbolic-ref", "HEAD"]);
        assert_eq!(head.trim(), "refs/heads/session/s--worktree-1");
        // A worktree an earlier harrow left: on a branch named after its task, no task file.
        let old = lanes.join("old");
        git(&src, &["worktree", "add", "-q", "-b", "session/s--T-9", old.to_str().unwrap()]);
        assert_eq!(session.lane_of("T-9", &lanes).unwrap().worktree, old);
        // Freed as that harrow freed a lane, by deleting the branch: the next task takes it
        // onto a branch of its own.
        git(&src, &["update-ref", "-d", "refs/heads/session/s--T-9"]);
        let fourth = session.lane_for("T-4", &lanes, &[]).unwrap();
        assert_eq!(fourth.worktree, old);
        assert_eq!(fourth.branch, "session/s--old");
        session.remove_free_lanes(&lanes).unwrap();
        let branches = git(&src, &["branch", "--list", "session/s--*"]);
        assert_eq!(branches.lines().count(), 3, "the busy lanes keep theirs: {branches}");
        for lane in [second, third, fourth] {
            lane.release_lane().unwrap();
        }
        session.remove_free_lanes(&lanes).unwrap();
        let branches = git(&src, &["branch", "--list", "session/s--*"]);
        assert_eq!(branches, "", "free lanes go with their branches");
    }

    /// A lane's registration whose `gitdir` the worker pointed at the source repository's
    /// README, or at a folder outside: removing the free lanes, and a new lane made where a
    /// crash left that registration, delete only harrow's own folders.
    /// The candidates' folder turned into a link by someone who can write the session folder:
    /// removing a best-of attempt never deletes through it.
    #[test]
    fn a_candidate_is_never_removed_through_a_link_harrow_did_not_make() {
        let tmp = tempfile::tempdir().unwrap();
        let session = session_in(tmp.path());
        let tip = session.tip().unwrap();
        let made = session.candidate("T-1", 1, &tip).unwrap();
        assert!(made.worktree.join("a").exists());
        session.remove_candidate("T-1", 1).unwrap();
        assert!(!made.worktree.exists(), "its own worktree goes");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("c-T-1-1")).unwrap();
        std::fs::write(outside.join("c-T-1-1/keep"), "keep").unwrap();
        let candidates = session.lanes_folder().join("candidates");
        std::fs::remove_dir_all(&candidates).unwrap();
        std::os::unix::fs::symlink(&outside, &candidates).unwrap();
        let _ = session.remove_candidate("T-1", 1);
        assert!(session.candidate("T-1", 1, &tip).is_err(), "no attempt is made through it");
        assert_eq!(std::fs::read_to_string(outside.join("c-T-1-1/keep")).unwrap(), "keep");
    }

    #[test]
    fn a_forged_gitdir_never_makes_harrow_delete_what_it_names() {
        let tmp = tempfile::tempdir().unwrap();
        let session = session_in(tmp.path());
        let src = tmp.path().join("src");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        let lanes = tmp.path().join("lanes");
        let registration = src.join(".git/worktrees/s--worktree-1");
        for target in [src.join("a"), outside.join("keep")] {
            let lane = session.lane_for("T-1", &lanes, &[]).unwrap();
            std::fs::write(registration.join("gitdir"), format!("{}\n", target.display())).unwrap();
            lane.release_lane().unwrap();
            session.remove_free_lanes(&lanes).unwrap();
            assert!(!lane.worktree.exists() && !registration.exists(), "the lane went whole");
            // A crash between removing the folder and its registration, then a new lane.
            let lane = session.lane_for("T-2", &lanes, &[]).unwrap();
            std::fs::write(registration.join("gitdir"), format!("{}\n", target.display())).unwrap();
            std::fs::remove_dir_all(&lane.worktree).unwrap();
            let again = session.lane_for("T-3", &lanes, &[]).unwrap();
            assert!(again.worktree.join("a").exists());
            again.release_lane().unwrap();
            session.remove_free_lanes(&lanes).unwrap();
            assert_eq!(std::fs::read_to_string(src.join("a")).unwrap(), "a\n");
            assert!(src.join(".git/HEAD").exists(), "the source repository stays");
            assert_eq!(std::fs::read_to_string(outside.join("keep")).unwrap(), "keep");
        }
    }

    #[test]
    fn a_lane_branch_names_its_session_and_a_hostile_task_id_stays_a_plain_name() {
        assert_eq!(session_of_branch("session/20261124-1-abc"), "20261124-1-abc");
        assert_eq!(session_of_branch("session/20261124-1-abc--T-002"), "20261124-1-abc");
        assert_eq!(lane_name("T-002"), "T-002");
        assert_eq!(lane_name("../../etc"), "______etc");
        assert_eq!(lane_name("a b/c\u{1b}[2J"), "a_b_c__2J");
        assert_eq!(lane_name("T.lock"), "T_lock");
        assert_eq!(lane_name(""), "task");
    }
}
