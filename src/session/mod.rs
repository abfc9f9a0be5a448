//! The session folder: the durable record and single source of truth of a run.
//!
//! Only the loop writes `events.jsonl` (through [`writer::SessionWriter`]); everything else —
//! the console, `show`, `sessions`, replay — reads the folder through [`scan`], [`index`] and
//! [`tail`], and derives what it shows by folding events.

pub(crate) mod atomic;
pub(crate) mod checkpoint;
pub(crate) mod control;
pub(crate) mod dir;
pub(crate) mod discover;
pub mod event;
pub mod fact;
pub(crate) mod fleet;
pub mod index;
pub(crate) mod judge;
pub(crate) mod lenient;
pub(crate) mod listing;
pub(crate) mod live;
pub(crate) mod lock;
pub(crate) mod outcome;
pub(crate) mod placement;
pub(crate) mod row;
pub mod scan;
pub(crate) mod sink;
pub mod sparse;
pub mod state;
pub(crate) mod status;
pub mod strict;
pub mod summary;
pub mod synth;
pub mod tail;
pub mod timestamp;
pub mod vocabulary;
pub(crate) mod waiting;
pub(crate) mod wake;
pub mod weighed;
pub mod writer;

use checkpoint::{CheckpointRead, read_checkpoint};

/// The flag by which a person lets `resume` take the endpoints, models, validators and worktree
/// a session folder recorded: a folder is data someone else may have written, never authority
/// on its own. The console offers it when a resume refused for want of it.
pub const TRUST_RECORDED: &str = "--trust-recorded";
use status::{SessionStatus, session_status};
use std::path::{Path, PathBuf};
use summary::{Summary, SummaryFold};

/// A session folder read once: its summary, status and checkpoint.
#[derive(Debug, Clone)]
pub struct Overview {
    pub dir: PathBuf,
    pub summary: Summary,
    pub status: SessionStatus,
    pub checkpoint: CheckpointRead,
    /// True when `events.jsonl` does not exist.
    pub log_missing: bool,
    /// A live process holds the session's lock.
    pub live: bool,
}

/// Reads a session folder and folds its log into an [`Overview`].
pub fn overview(dir: &Path, id: &str) -> std::io::Result<Overview> {
    let events = dir.join(dir::EVENTS_FILE);
    let mut fold = SummaryFold::new(Some(id.to_owned()));
    let report = scan::scan(&events, |_, fact| fold.apply(fact))?;
    Ok(overview_of(dir, fold, &report))
}

/// The [`Overview`] of the session in `dir` from its log's fold, for a reader that folds the
/// log in a pass of its own (an export gathers what it shows in the same pass).
pub fn overview_of(dir: &Path, fold: SummaryFold, report: &scan::ScanReport) -> Overview {
    let log_missing = !dir.join(dir::EVENTS_FILE).exists();
    let mut summary = fold.finish(report);
    let checkpoint = read_checkpoint(dir);
    let holder = status::Holder::of(dir);
    let status = session_status(&summary, &checkpoint, holder);
    status.as_str().clone_into(&mut summary.harrow.status);
    Overview {
        dir: dir.to_path_buf(),
        summary,
        status,
        checkpoint,
        log_missing,
        live: holder.is_some(),
    }
}
