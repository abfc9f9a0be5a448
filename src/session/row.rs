//! One run as every list of runs shows it: `harrow sessions` (its table and `--json`),
//! `--live`, `--follow` and the fleet read the same row, built by one reader
//! ([`super::fleet`]): from what the run keeps up to date (summary, checkpoint, lock) and the
//! log's bytes after it, never from a whole log.

use super::status::SessionStatus;
use serde::Serialize;
use std::path::PathBuf;

/// A task at work, and the lane it is in (absent without lanes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AtWork {
    pub task: String,
    pub iter: u64,
    pub attempt: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane: Option<u64>,
}

/// One run, as every list of runs shows it and `sessions --json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    pub id: String,
    pub dir: PathBuf,
    pub origin: String,
    pub feature: Option<String>,
    /// A `harrow prep` interview: it writes a plan and works no tasks.
    pub prep: bool,
    pub status: SessionStatus,
    /// The task a held run waits on, and why; for a failed run, its failed task (a decision
    /// can still land it) and the stop's reason.
    pub held_task: Option<String>,
    pub held_reason: Option<String>,
    /// The held task's latest verdict, in words (for the preview).
    #[serde(skip)]
    pub held_verdict: Option<String>,
    pub tasks_done: u64,
    pub tasks_total: u64,
    /// Tasks at work now: one per lane.
    pub at_work: Vec<AtWork>,
    pub tokens: u64,
    pub cost: f64,
    pub started_at: Option<String>,
    pub last_event_at: Option<String>,
    /// The repository the run works on.
    pub repo: Option<String>,
    /// The machine it runs on.
    pub host: Option<String>,
    /// The pull request last opened for it.
    pub pull_request: Option<String>,
    /// The latest rows of its log, for a preview.
    #[serde(skip)]
    pub recent: Vec<String>,
    /// Why its folder is someone else's to write (owned by another user, or writable by
    /// others): what it records is data, and a resume trusts none of its settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign: Option<String>,
    /// Lines of its log that could not be read, as far as the reader saw (the summary's count
    /// and the bytes folded after it).
    pub unreadable_lines: u64,
    /// `harrow cleanse` removed its worktree; its branch and log stay.
    pub archived: bool,
}

impl SessionRow {
    /// A run of which nothing is known yet.
    pub fn new(id: String, dir: PathBuf) -> SessionRow {
        SessionRow {
            id,
            dir,
            origin: String::new(),
            feature: None,
            prep: false,
            status: SessionStatus::Empty,
            held_task: None,
            held_reason: None,
            held_verdict: None,
            tasks_done: 0,
            tasks_total: 0,
            at_work: Vec::new(),
            tokens: 0,
            cost: 0.0,
            started_at: None,
            last_event_at: None,
            repo: None,
            host: None,
            pull_request: None,
            recent: Vec::new(),
            foreign: None,
            unreadable_lines: 0,
            archived: false,
        }
    }

    /// The TASKS cell: done of total, or `prep` for an interview, which works no tasks.
    pub fn tasks_cell(&self) -> String {
        if self.prep { "prep".into() } else { format!("{}/{}", self.tasks_done, self.tasks_total) }
    }

    /// The FEATURE cell.
    pub fn feature_cell(&self) -> String {
        self.feature.clone().unwrap_or_else(|| "-".into())
    }
}
