//! Where a session's work lives in git: its source repository, worktree and branch, as the
//! checkpoint or the log's first start recorded them.

use super::checkpoint::read_checkpoint;
use super::discover::Found;
use super::event::{Event, Payload};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Where a session's work lives in git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub source: Option<PathBuf>,
    pub worktree: PathBuf,
    pub branch: String,
}

/// Reads the source repository, worktree and branch from the checkpoint, else from the first
/// `session_start`, else the defaults harrow and Tilth both use.
pub fn placement(found: &Found) -> Placement {
    let checkpoint = read_checkpoint(&found.dir);
    let c = checkpoint.checkpoint();
    let mut source = c.and_then(|c| c.source.clone()).map(PathBuf::from);
    let mut worktree = c.and_then(|c| c.workspace.clone()).map(PathBuf::from);
    let mut branch = c.and_then(|c| c.branch.clone());
    let incomplete = source.is_none() || worktree.is_none() || branch.is_none();
    if let Some(start) =
        first_session_start(&crate::session::dir::SessionDir::new(&found.dir).events())
            .filter(|_| incomplete)
    {
        source = source.or(start.source.map(PathBuf::from));
        worktree = worktree.or(start.worktree.map(PathBuf::from));
        branch = branch.or(start.branch);
    }
    Placement {
        source,
        worktree: worktree.unwrap_or_else(|| found.dir.join("workspace")),
        branch: branch.unwrap_or_else(|| format!("session/{}", found.id)),
    }
}

pub fn first_session_start(path: &Path) -> Option<crate::session::event::SessionStart> {
    let file = crate::safe_io::open_regular(path).ok()?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..64 {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        if let Ok(Event { payload: Payload::SessionStart(start), .. }) =
            Event::decode(line.trim_ascii_end())
        {
            return Some(start);
        }
    }
    None
}
