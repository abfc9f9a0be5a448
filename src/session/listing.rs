//! The list of sessions with the figures people choose one by: what `harrow sessions` prints
//! and the session browser shows.

use super::discover::{self, Found, Root};
use super::{Overview, overview};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

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
    let prd = super::safe_io::read_capped(
        &super::dir::SessionDir::new(&o.dir).prd(),
        super::safe_io::SMALL_FILE,
    )
    .ok();
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

/// How long one folder may take to read for the list: a folder someone else wrote (an endless
/// line, a slow network file system) is left out after this, never waited on.
pub const FOLDER_DEADLINE: Duration = Duration::from_millis(1500);

/// Every session under `roots`, newest first; a folder that cannot be read is left out, and so
/// is one that takes longer than [`FOLDER_DEADLINE`] (its id is returned, to be said).
/// Folders are read side by side, a few at a time.
pub fn rows(roots: &[Root]) -> (Vec<Row>, Vec<String>) {
    let found = discover::list(roots);
    let (tx, rx) = mpsc::channel::<(usize, Option<Instant>, Option<Row>)>();
    let next = Arc::new(AtomicUsize::new(0));
    let found = Arc::new(found);
    let worker = || {
        let (tx, next, found) = (tx.clone(), Arc::clone(&next), Arc::clone(&found));
        // A reader stuck on a hostile folder is left behind; the process ends without it.
        let _ = std::thread::Builder::new().name("harrow-list".into()).spawn(move || {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(f) = found.get(i) else { return };
                if tx.send((i, Some(Instant::now()), None)).is_err() {
                    return;
                }
                let row = overview(&f.dir, &f.id).ok().map(|o| row(f, &o));
                if tx.send((i, None, row)).is_err() {
                    return;
                }
            }
        });
    };
    let workers = std::thread::available_parallelism().map_or(2, usize::from).clamp(2, 8);
    for _ in 0..workers.min(found.len()) {
        worker();
    }
    let mut rows: Vec<Option<Row>> = vec![None; found.len()];
    let mut started: std::collections::BTreeMap<usize, Instant> = std::collections::BTreeMap::new();
    let mut finished = 0usize;
    let mut late = Vec::new();
    while finished < found.len() {
        let wait = started
            .values()
            .map(|at| FOLDER_DEADLINE.saturating_sub(at.elapsed()))
            .min()
            .unwrap_or(FOLDER_DEADLINE);
        match rx.recv_timeout(wait) {
            Ok((i, Some(at), _)) => {
                started.insert(i, at);
            }
            Ok((i, None, row)) => {
                if started.remove(&i).is_some() {
                    rows[i] = row;
                    finished += 1;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let over: Vec<usize> = (started.iter())
                    .filter(|(_, at)| at.elapsed() >= FOLDER_DEADLINE)
                    .map(|(i, _)| *i)
                    .collect();
                for i in over {
                    started.remove(&i);
                    finished += 1;
                    late.push(found[i].id.clone());
                    // Its reader is stuck; another takes the folders still to read.
                    worker();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    (rows.into_iter().flatten().collect(), late)
}
