//! The list of sessions with the figures people choose one by: what `harrow sessions` prints
//! and the session browser shows.

use super::discover::{self, Found, Root};
use super::{Overview, overview};
use serde::Serialize;
use std::path::PathBuf;

/// One row of the listing, as printed with `--json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub id: String,
    pub dir: PathBuf,
    pub origin: String,
    /// The feature the session is about, when its start says.
    pub feature: Option<String>,
    /// A `harrow prep` interview: it writes a plan and works no tasks.
    pub prep: bool,
    pub status: super::status::SessionStatus,
    pub tasks_done: u64,
    pub tasks_total: u64,
    pub tokens: i64,
    pub cost: f64,
    pub started_at: Option<String>,
    pub last_event_at: Option<String>,
    pub unreadable_lines: u64,
    pub archived: bool,
    /// A run holds the session's lock.
    #[serde(skip)]
    pub running: bool,
}

impl Row {
    /// The TASKS cell: done of total, or `prep` for an interview, which works no tasks.
    pub fn tasks_cell(&self) -> String {
        if self.prep { "prep".into() } else { format!("{}/{}", self.tasks_done, self.tasks_total) }
    }

    /// The FEATURE cell.
    pub fn feature_cell(&self) -> String {
        self.feature.clone().unwrap_or_else(|| "-".into())
    }
}

/// Tasks in the plan: the log's own count, else an old-era `prd.json` beside it, else the
/// tasks the log mentions.
pub fn tasks_total(o: &Overview) -> u64 {
    if let Some(n) = o.summary.harrow.task_count {
        return n;
    }
    let prd = std::fs::read(super::dir::SessionDir::new(&o.dir).prd()).ok();
    if let Some(serde_json::Value::Array(tasks)) = prd.and_then(|b| serde_json::from_slice(&b).ok())
    {
        return tasks.len() as u64;
    }
    o.summary.tasks.len() as u64
}

fn row(found: &Found, o: &Overview) -> Row {
    let s = &o.summary;
    let archived = o.checkpoint.checkpoint().is_some_and(|c| c.archived);
    Row {
        id: found.id.clone(),
        dir: found.dir.clone(),
        origin: s.harrow.format.clone(),
        feature: s.harrow.feature.clone(),
        prep: s.harrow.phase.as_deref() == Some("prep"),
        status: o.status,
        tasks_done: s.harrow.tasks_done,
        tasks_total: tasks_total(o),
        tokens: s.tokens.all.total.max(s.tokens.all.prompt + s.tokens.all.eval),
        cost: s.tokens.all.cost,
        started_at: s.started_at.clone(),
        last_event_at: s.last_event_at.clone(),
        unreadable_lines: s.harrow.unreadable_lines.count,
        archived,
        running: crate::session::lock::is_locked(&found.dir),
    }
}

/// Every session under `roots`, newest first; a folder that cannot be read is left out.
pub fn rows(roots: &[Root]) -> Vec<Row> {
    discover::list(roots)
        .iter()
        .filter_map(|f| overview(&f.dir, &f.id).ok().map(|o| row(f, &o)))
        .collect()
}
