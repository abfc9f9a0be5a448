//! `harrow control ID review --task T --comments FILE`: the operator's review of a task's diff
//! from a file of `path:line: comment` lines, checked here against the task's diff as it
//! stands (when its worktree can be read) so a comment on a line that is not in the diff is
//! refused at once, with the nearest lines that are.

use super::UsageError;
use crate::hands::workspace::Workspace;
use crate::harness::operator_review::{check, lines_in, parse_comments};
use crate::session::control::LineComment;
use crate::session::discover::Found;
use std::path::Path;

/// The most a comments file may be.
const COMMENTS_FILE_MAX: u64 = 1 << 20;

/// The comments of `file`, each on a line of `task`'s diff; refused in one line naming
/// `FILE:LINE` (a line that is not a comment) or the comment's line and the nearest ones.
pub fn comments_for(
    found: &Found,
    task: &str,
    file: &Path,
) -> Result<Vec<LineComment>, UsageError> {
    let shown = crate::printable::line(&file.display().to_string());
    let text = crate::safe_io::read_named(file, COMMENTS_FILE_MAX)
        .map_err(|e| UsageError(format!("cannot read the comments file {shown}: {e}")))?;
    let comments = parse_comments(&text, &shown).map_err(UsageError)?;
    if let Some(lines) = task_diff_lines(found, task) {
        check(&comments, &lines).map_err(|why| UsageError(format!("{task}: {why}")))?;
    }
    Ok(comments)
}

/// The lines of `task`'s diff as its worktree has it now, when the session's start and the
/// task's starting commit are in the log and the worktree opens; else the run checks them.
fn task_diff_lines(
    found: &Found,
    task: &str,
) -> Option<std::collections::BTreeMap<String, std::collections::BTreeMap<u64, String>>> {
    let restored = crate::harness::resume::restore(&found.dir, &found.id).ok()?;
    let start = &restored.start;
    let session = Workspace {
        source: start.source.clone()?.into(),
        worktree: start.worktree.clone()?.into(),
        branch: start.branch.clone()?,
        base: start.base_commit.clone()?,
    };
    let base = restored.tasks.get(task)?.base.clone()?;
    let worktree = session.lane_of(task, &session.lanes_folder()).unwrap_or(session);
    let diff = worktree.diff_from(&base).ok()?;
    Some(lines_in(&diff.patch()))
}
