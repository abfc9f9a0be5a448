//! The list of sessions with the figures people choose one by: what `harrow sessions` prints,
//! each row read the way the fleet reads it ([`super::fleet::read_row`]), a few folders at a
//! time and none waited on past a deadline.

use super::Overview;
use super::discover::{self, Root};
use super::row::SessionRow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Tasks in the plan: the log's own count, else an old-era `prd.json` beside it, else the
/// tasks the log mentions.
pub fn tasks_total(o: &Overview) -> u64 {
    if let Some(n) = o.summary.harrow.task_count {
        return n;
    }
    let prd = crate::safe_io::read_capped(
        &super::dir::SessionDir::new(&o.dir).prd(),
        crate::safe_io::SMALL_FILE,
    )
    .ok();
    if let Some(serde_json::Value::Array(tasks)) = prd.and_then(|b| serde_json::from_slice(&b).ok())
    {
        return tasks.len() as u64;
    }
    o.summary.tasks.len() as u64
}

/// A session's row as the fleet reads it; when only its log's tail could be read (no summary
/// says where to start: an old Tilth session, a run that died before its first task ended),
/// its figures are taken from the whole log, as `show` reads them — the list says what the
/// session holds, not what its last 256 KiB do.
fn whole_row(found: &discover::Found) -> SessionRow {
    let (mut row, whole) = super::fleet::read_row(found.clone());
    if whole {
        return row;
    }
    if let Ok(o) = super::overview(&found.dir, &found.id) {
        let s = &o.summary;
        row.origin.clone_from(&s.harrow.format);
        row.feature.clone_from(&s.harrow.feature);
        row.prep = super::vocabulary::Phase::Prep.is(s.harrow.phase.as_deref());
        row.tasks_done = s.harrow.tasks_done;
        row.tasks_total = tasks_total(&o);
        row.tokens = u64::try_from(s.tokens.all.total.max(s.tokens.all.prompt + s.tokens.all.eval))
            .unwrap_or(0);
        row.cost = s.tokens.all.cost;
        row.unreadable_lines = s.harrow.unreadable_lines.count;
        row.started_at.clone_from(&s.started_at);
        row.last_event_at.clone_from(&s.last_event_at);
        row.status = o.status;
    }
    row
}

/// How long one folder may take to read for the list: a folder someone else wrote (an endless
/// line, a slow network file system) is left out after this, never waited on.
pub const FOLDER_DEADLINE: Duration = Duration::from_millis(1500);

/// Every session under `roots`, newest first; a folder that cannot be read is left out, and so
/// is one that takes longer than [`FOLDER_DEADLINE`] (its id is returned, to be said).
/// Folders are read side by side, a few at a time.
pub fn rows(roots: &[Root]) -> (Vec<SessionRow>, Vec<String>) {
    let found = discover::list(roots);
    let (tx, rx) = mpsc::channel::<(usize, Option<Instant>, Option<SessionRow>)>();
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
                let row = Some(whole_row(f));
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
    let mut rows: Vec<Option<SessionRow>> = vec![None; found.len()];
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
