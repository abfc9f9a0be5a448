//! A lane's own worktree and branch, and how a task's accepted change reaches the session
//! branch from there.
//!
//! In a run with lanes each running task has a worktree `lanes/<task>` in the session folder
//! on a branch `session/<id>--<task>`, cut from the session branch as it stands when the task
//! starts. Its accepted change lands on the session branch as one commit: a fast-forward when
//! the session branch has not moved, else a three-way merge (git2, in memory) whose result is
//! checked out in the lane before anything moves, so the validators judge the combination.

use super::workspace::{
    Review, SIGNATURE_EMAIL, SIGNATURE_NAME, Workspace, WorkspaceError, find_commit, git,
    open_source, task_message,
};
use git2::build::CheckoutBuilder;
use git2::{Oid, Repository, Signature, WorktreeAddOptions};
use std::path::{Path, PathBuf};

/// What separates the session id from the task in a lane's branch name.
const LANE_MARK: &str = "--";

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
}

impl std::fmt::Debug for Merged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merged").field("conflicts", &self.conflicts).finish_non_exhaustive()
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

    /// The lane branch of `task`: `session/<id>--<task>`.
    fn lane_branch(&self, task: &str) -> String {
        format!("{}{LANE_MARK}{}", self.session_branch(), lane_name(task))
    }

    /// The lane worktree under `lanes` where `task` is at work or waits for a decision: the
    /// one whose `HEAD` is on the task's branch.
    pub fn lane_of(&self, task: &str, lanes: &Path) -> Option<Workspace> {
        let repo = open_source(&self.source).ok()?;
        self.lane_among(task, &lane_worktrees(&repo, lanes))
    }

    fn lane_among(&self, task: &str, worktrees: &[LaneWorktree]) -> Option<Workspace> {
        let branch = self.lane_branch(task);
        let want = format!("refs/heads/{branch}");
        worktrees.iter().find_map(|(path, head)| {
            (head.as_deref() == Some(want.as_str())).then(|| self.in_lane(path, &branch))
        })
    }

    /// The lane where `task` is worked: the worktree it already has (a resume, a decision on a
    /// parked task), else a free one of the lanes' worktrees — one whose task has landed — or
    /// a new one, put on a branch `session/<id>--<task>` cut from the session branch as it
    /// stands now. A worktree is reused from task to task, so starting a task rewrites only
    /// the files that differ and keeps the build caches git ignores, as the session's own
    /// worktree does without lanes.
    pub fn lane_for(&self, task: &str, lanes: &Path) -> Result<Workspace, WorkspaceError> {
        let repo = open_source(&self.source)?;
        let worktrees = lane_worktrees(&repo, lanes);
        if let Some(lane) = self.lane_among(task, &worktrees) {
            return Ok(lane);
        }
        let branch = self.lane_branch(task);
        let session = format!("refs/heads/{}", self.session_branch());
        let tip = repo
            .find_reference(&session)
            .and_then(|r| r.peel_to_commit())
            .map_err(git(format!("read branch {}", self.session_branch())))?;
        let free = worktrees.iter().find(|(_, head)| head.is_none()).map(|(p, _)| p.clone());
        let created =
            repo.branch(&branch, &tip, true).map_err(git(format!("create branch {branch}")))?;
        let reference = created.into_reference();
        if let Some(path) = free {
            let lane = self.in_lane(&path, &branch);
            let wt = lane.repo()?;
            // The branch was just made for this task, so no other worktree has it out: HEAD is
            // written as a plain symbolic ref, without `set_head`'s look through every worktree.
            wt.reference_symbolic("HEAD", &format!("refs/heads/{branch}"), true, "harrow: lane")
                .map_err(git(format!("put {} on {branch}", path.display())))?;
            let mut checkout = CheckoutBuilder::new();
            checkout.force().remove_untracked(true);
            wt.checkout_head(Some(&mut checkout)).map_err(git(format!("check out {branch}")))?;
            return Ok(lane);
        }
        // Among one more names than the folder holds entries, one is free.
        let taken = std::fs::read_dir(lanes).map_or(0, Iterator::count) + 1;
        let number =
            (1..=taken).find(|k| !lanes.join(format!("worktree-{k}")).exists()).unwrap_or(taken);
        let path = lanes.join(format!("worktree-{number}"));
        let name = format!("{}{LANE_MARK}worktree-{number}", self.session_id());
        if let Ok(stale) = repo.find_worktree(&name) {
            let mut prune = git2::WorktreePruneOptions::new();
            prune.valid(true).working_tree(true);
            stale.prune(Some(&mut prune)).map_err(git(format!("prune worktree {name}")))?;
        }
        std::fs::create_dir_all(lanes).map_err(|e| WorkspaceError::Io(lanes.to_path_buf(), e))?;
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        repo.worktree(&name, &path, Some(&opts))
            .map_err(git(format!("add worktree {}", path.display())))?;
        Ok(self.in_lane(&path, &branch))
    }

    fn in_lane(&self, worktree: &Path, branch: &str) -> Workspace {
        Workspace {
            source: self.source.clone(),
            worktree: worktree.to_path_buf(),
            branch: branch.to_owned(),
            base: self.base.clone(),
        }
    }

    /// Frees a lane's worktree once its task has landed (or was set aside): the task's branch
    /// goes — the session branch holds the work, and its judged attempts stay on their refs —
    /// and the worktree waits for the next task.
    pub fn release_lane(&self) -> Result<(), WorkspaceError> {
        // Only the branch goes: a worktree whose HEAD names a branch that is gone is free, and
        // the next task's start moves HEAD anyway — one ref write per task fewer.
        Workspace::delete_ref(&self.source, &format!("refs/heads/{}", self.branch))
    }

    /// Removes the lanes' worktrees no task holds: what is left of them when a run ends.
    pub fn remove_free_lanes(&self, lanes: &Path) -> Result<(), WorkspaceError> {
        let repo = open_source(&self.source)?;
        for (path, head) in lane_worktrees(&repo, lanes) {
            if head.is_none() {
                Workspace::remove_worktree(&self.source, &path)?;
            }
        }
        Ok(())
    }

    /// Merges the change from `base` to `change` onto `onto`, in memory. Nothing on disk moves.
    pub fn merge_onto(
        &self,
        base: &str,
        change: &str,
        onto: &str,
    ) -> Result<Merged, WorkspaceError> {
        let repo = self.repo()?;
        let tree = |sha: &str| find_commit(&repo, sha).and_then(|c| c.tree());
        let ancestor = tree(base).map_err(git("read the task's starting tree"))?;
        let ours = tree(onto).map_err(git("read the session branch's tree"))?;
        let theirs = tree(change).map_err(git("read the task's accepted tree"))?;
        let index =
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
        Ok(Merged { index, conflicts })
    }

    /// Commits a clean merge's result on top of `onto` as the task's commit, straight from
    /// the merge: nothing in the lane's worktree moves, since nothing will run on it. Refs
    /// stay where they are; the landing moves the session branch.
    pub fn commit_merged(
        &self,
        merged: &mut Merged,
        onto: &str,
        message: (&str, &str, &str, Review),
    ) -> Result<String, WorkspaceError> {
        let repo = self.repo()?;
        let parent = find_commit(&repo, onto).map_err(git("read the session tip"))?;
        let tree = merged
            .index
            .write_tree_to(&repo)
            .and_then(|id| repo.find_tree(id))
            .map_err(git("write the merged tree"))?;
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
        let mut clean = CheckoutBuilder::new();
        clean.force().remove_untracked(true);
        repo.checkout_head(Some(&mut clean)).map_err(git("check out the session branch"))?;
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
        let mut clean = CheckoutBuilder::new();
        clean.force().remove_untracked(true);
        repo.checkout_head(Some(&mut clean)).map_err(git("check out the task's start"))
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
        repo.reference_matching(&name, to, true, from, "harrow: task landed")
            .map_err(git(format!("move {} (it was expected at {from})", self.session_branch())))?;
        Ok(())
    }

    /// Checks out the branch's tip in the worktree again, as it is now: the session's own
    /// worktree follows the session branch while lanes move it.
    pub fn refresh(&self) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force().remove_untracked(true);
        repo.checkout_head(Some(&mut checkout)).map_err(git("check out the session branch"))
    }
}

/// A lane's worktree folder, with the branch its `HEAD` is on.
type LaneWorktree = (PathBuf, Option<String>);

/// The worktrees under `lanes`, each with the branch its `HEAD` is on (`None`: detached, or on
/// a branch that is gone — the worktree is free). A folder that is not a worktree is no lane's.
/// Read from the files git keeps (`.git` names the worktree's git folder, whose `HEAD` names
/// the branch) rather than by opening each worktree as a repository, which re-reads every git
/// configuration file each time: this runs at every task's start.
fn lane_worktrees(source: &Repository, lanes: &Path) -> Vec<LaneWorktree> {
    let mut out: Vec<_> = std::fs::read_dir(lanes)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let link = std::fs::read_to_string(path.join(".git")).ok()?;
            let gitdir = PathBuf::from(link.strip_prefix("gitdir:")?.trim());
            let gitdir = if gitdir.is_absolute() { gitdir } else { path.join(gitdir) };
            let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
            let branch = head
                .strip_prefix("ref:")
                .map(str::trim)
                .filter(|b| source.find_reference(b).is_ok())
                .map(str::to_owned);
            Some((path, branch))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
