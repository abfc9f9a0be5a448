//! The trees a witness is checked on: a kept commit's files written out to a folder of their
//! own (the task's base, the judged attempt), and one file's text as a commit holds it — so a
//! test harrow runs to check a verdict never touches the lane's worktree.

use super::workspace::{Workspace, WorkspaceError, git};
use git2::{ObjectType, Oid};
use std::path::Path;

impl Workspace {
    /// Writes `commit`'s files into `dir` (an empty folder): the tree as it was kept.
    pub fn write_tree_to(&self, commit: &str, dir: &Path) -> Result<(), WorkspaceError> {
        let repo = self.repo()?;
        let tree = Oid::from_str(commit)
            .and_then(|oid| repo.find_object(oid, None))
            .and_then(|o| o.peel(ObjectType::Tree))
            .map_err(git(format!("read the kept tree {commit}")))?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force().target_dir(dir).recreate_missing(true);
        repo.checkout_tree(&tree, Some(&mut checkout))
            .map_err(git(format!("write the files of {commit} out")))?;
        Ok(())
    }

    /// The bytes of `path` in `commit`; `None` when the commit has no such file.
    pub fn file_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, WorkspaceError> {
        let repo = self.repo()?;
        let tree = Oid::from_str(commit)
            .and_then(|oid| repo.find_object(oid, None))
            .and_then(|o| o.peel_to_tree())
            .map_err(git(format!("read the kept tree {commit}")))?;
        let Ok(entry) = tree.get_path(Path::new(path)) else { return Ok(None) };
        let Ok(blob) = entry.to_object(&repo).and_then(|o| o.peel_to_blob()) else {
            return Ok(None);
        };
        Ok(Some(blob.content().to_vec()))
    }
}
