//! The session folder and the name of every file in it: one place to look up where a thing is
//! kept, for the loop that writes them and every reader.

use std::path::{Path, PathBuf};

/// The event log: the single source of truth.
pub(super) const EVENTS_FILE: &str = "events.jsonl";
/// Operator commands for the loop, appended by the console and `harrow control`.
pub(super) const CONTROL_FILE: &str = "control.jsonl";
/// Where the loop stood at its last safe point.
pub(super) const CHECKPOINT_FILE: &str = "checkpoint.json";
/// Held by the run that writes the log.
pub(super) const LOCK_FILE: &str = "lock";
/// The fold of the log, in Tilth's format with harrow's figures beside it.
pub(super) const SUMMARY_FILE: &str = "summary.json";
/// Each task's state, for tools that read Tilth's folders.
pub(super) const TASK_STATUS_FILE: &str = "task-status.json";
/// One line per settled task, as Tilth kept it.
pub(super) const PROGRESS_FILE: &str = "progress.txt";
/// The per-task ledgers both sides read across attempts.
pub(super) const LEDGER_DIR: &str = "ledger";
/// The model reply in flight, while it streams in (see `session::live`).
pub(super) const LIVE_FILE: &str = "live.json";
/// What the learnings step proposed, for a person to review.
pub(super) const LEARNINGS_FILE: &str = "proposed-learnings.md";
/// A bare repository holding a copy of every kept attempt (judged or checked), so the work a
/// verdict names survives a worker that prunes or rewrites the source repository's objects.
pub(super) const ATTEMPTS_REPO: &str = "attempts.git";
/// A copy of the plan the run was started from, so a resume on a machine without the clone
/// the plan lived in still has it.
pub(super) const PLAN_COPY_DIR: &str = "plan";
/// The console's Markdown export.
pub(super) const EXPORT_FILE: &str = "export.md";
/// The output of a `harrow resume` started from the console.
pub(super) const RESUME_LOG: &str = "resume.log";
/// An old-era Tilth session's copy of its `prd.json`.
pub(super) const PRD_FILE: &str = "prd.json";

/// A session folder. The paths it hands out are the only spelling of its files' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDir {
    root: PathBuf,
}

impl SessionDir {
    pub fn new(root: impl Into<PathBuf>) -> SessionDir {
        SessionDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn events(&self) -> PathBuf {
        self.root.join(EVENTS_FILE)
    }

    pub fn control(&self) -> PathBuf {
        self.root.join(CONTROL_FILE)
    }

    pub fn checkpoint(&self) -> PathBuf {
        self.root.join(CHECKPOINT_FILE)
    }

    pub fn lock(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }

    pub fn summary(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    pub fn task_status(&self) -> PathBuf {
        self.root.join(TASK_STATUS_FILE)
    }

    pub fn progress(&self) -> PathBuf {
        self.root.join(PROGRESS_FILE)
    }

    /// A task's ledger. The id comes from a plan someone wrote: anything but letters, digits,
    /// `-`, `_` and `.` becomes `_`, so no id names a file outside the ledger folder.
    pub fn ledger(&self, task: &str) -> PathBuf {
        let name: String = task
            .chars()
            .map(
                |c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' },
            )
            .collect();
        let name = if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name };
        self.root.join(LEDGER_DIR).join(format!("{name}.jsonl"))
    }

    pub fn attempts(&self) -> PathBuf {
        self.root.join(ATTEMPTS_REPO)
    }

    /// Where the copy of the plan is kept: `plan/<the plan's file or folder name>`.
    pub fn plan_copy(&self) -> PathBuf {
        self.root.join(PLAN_COPY_DIR)
    }

    pub fn live(&self) -> PathBuf {
        self.root.join(LIVE_FILE)
    }

    /// Where the task ledgers are kept.
    pub fn ledger_dir(&self) -> PathBuf {
        self.root.join(LEDGER_DIR)
    }

    /// The Markdown the console's export writes.
    pub fn export_md(&self) -> PathBuf {
        self.root.join(EXPORT_FILE)
    }

    /// The output of a `harrow resume` the console started.
    pub fn resume_log(&self) -> PathBuf {
        self.root.join(RESUME_LOG)
    }

    /// An old-era Tilth session's copy of its plan.
    pub fn prd(&self) -> PathBuf {
        self.root.join(PRD_FILE)
    }

    pub fn learnings(&self) -> PathBuf {
        self.root.join(LEARNINGS_FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_from_a_plan_never_names_a_ledger_outside_its_folder() {
        let dir = SessionDir::new(Path::new("/s"));
        assert_eq!(dir.ledger("T-001"), Path::new("/s/ledger/T-001.jsonl"));
        for hostile in ["../../etc/passwd", "..", "/abs", "a/b", ""] {
            let path = dir.ledger(hostile);
            assert_eq!(path.parent(), Some(Path::new("/s/ledger")), "{hostile}: {path:?}");
            assert!(!path.file_name().unwrap().to_string_lossy().starts_with('.'), "{path:?}");
        }
    }
}
