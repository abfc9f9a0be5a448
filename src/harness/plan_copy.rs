//! The session's copy of its plan: a run on a Kubernetes Job reads its plan from the clone it
//! worked in, which dies with the Job, so the plan's files are copied into the session folder
//! at the start and a resume elsewhere reads them from there.

use crate::safe_io;
use crate::session::dir::SessionDir;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most a plan file may weigh to be copied: plans are prose, a few kilobytes a task.
const FILE_MAX: u64 = 4 << 20;
/// The most files of a plan folder that are copied.
const FILES_MAX: usize = 2000;

/// Why the plan could not be copied, in one line naming the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot copy the plan into the session folder: {0}: {1}; check the file is readable")]
pub struct CopyError(PathBuf, std::io::Error);

/// Where the copy of the plan read from `plan` lives in the session folder `dir`.
pub fn copy_path(plan: &Path, dir: &Path) -> Option<PathBuf> {
    let name = plan.file_name()?;
    Some(SessionDir::new(dir).plan_copy().join(name))
}

/// Copies the plan read from `plan` (a `prd.json` file, or a feature folder's files, not its
/// subfolders) into the session folder `dir`. Only regular files are copied, each written
/// afresh, never through a link.
pub fn keep_copy(plan: &Path, dir: &Path) -> Result<(), CopyError> {
    let Some(to) = copy_path(plan, dir) else { return Ok(()) };
    let fail = |p: &Path| {
        let p = p.to_path_buf();
        move |e| CopyError(p, e)
    };
    let root = SessionDir::new(dir).plan_copy();
    safe_io::ensure_dir(&root).map_err(fail(&root))?;
    if plan.is_file() {
        return copy_file(plan, &to).map_err(fail(plan));
    }
    safe_io::ensure_dir(&to).map_err(fail(&to))?;
    let entries = std::fs::read_dir(plan).map_err(fail(plan))?;
    for entry in entries.flatten().take(FILES_MAX) {
        let from = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            copy_file(&from, &to.join(entry.file_name())).map_err(fail(&from))?;
        }
    }
    Ok(())
}

fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let bytes = safe_io::read_capped(from, FILE_MAX)?;
    let mut file = safe_io::create(to)?;
    file.write_all(&bytes)?;
    file.sync_all()
}
