//! Going back to a kept state of a task's work — an attempt kept as a commit when it was
//! judged, or the tree a worker turn left — for the operator's rewind.

use super::workspace::{Workspace, WorkspaceError, git};
use git2::{ObjectType, Oid};

impl Workspace {
    /// The tree `kept` (a commit or a tree id) holds; `None` when the repository does not have
    /// it (pruned by `git gc`, or a clone that never had it).
    pub fn tree_of(&self, kept: &str) -> Result<Option<String>, WorkspaceError> {
        let repo = self.repo()?;
        let Ok(oid) = Oid::from_str(kept) else { return Ok(None) };
        let Ok(object) = repo.find_object(oid, None) else { return Ok(None) };
        Ok(object.peel(ObjectType::Tree).ok().map(|t| t.id().to_string()))
    }

    /// The refs that keep `task`'s work in this session (`refs/harrow/<session>/<task>/…`), for
    /// a refusal that names what there is to go back to.
    pub fn kept_refs(&self, task: &str) -> Result<Vec<String>, WorkspaceError> {
        let repo = self.repo()?;
        let glob = format!("refs/harrow/{}/{task}/*", self.session_id());
        let mut names = repo.references_glob(&glob).map_err(git("list the kept attempts"))?;
        Ok(names.names().filter_map(Result::ok).map(str::to_owned).collect())
    }

    /// Sets the worktree's files to exactly `kept`'s (a commit's tree, or a tree): changed and
    /// new files not in it go, files in it come back, ignored files stay. HEAD and the branch
    /// do not move; the index matches the files.
    pub fn restore_tree(&self, kept: &str) -> Result<(), WorkspaceError> {
        self.discard_uncommitted()?;
        let repo = self.repo()?;
        let tree = Oid::from_str(kept)
            .and_then(|oid| repo.find_object(oid, None))
            .and_then(|o| o.peel(ObjectType::Tree))
            .map_err(git(format!("read the kept work {kept}")))?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force();
        repo.checkout_tree(&tree, Some(&mut checkout)).map_err(git("put the kept files back"))?;
        Ok(())
    }
}
