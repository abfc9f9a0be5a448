//! The single writer of a session folder.
//!
//! Each event is encoded whole and handed to the OS in one `write` on a file opened for
//! append, so a reader never sees half of an event unless the process dies inside that call,
//! and then only as a torn last line, which readers leave pending and [`SessionWriter::open`]
//! cuts back. The loop asks for `fsync` at durability points (after a verdict, before a
//! commit) with [`SessionWriter::sync`]; the other files are replaced atomically.

use super::event::{Record, encode_line};
use super::fact::{Fact, KeptValues};
use super::lock::{LockError, SessionLock};
use super::scan::{ScanReport, scan};
use super::summary::{Summary, SummaryFold};
use super::timestamp;
use crate::session::dir::EVENTS_FILE;
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why a session could not be opened for writing.
#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} already exists; pick another session id")]
    Exists(PathBuf),
}

/// A repair made when reopening a log whose last line was torn by a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Repair {
    pub cut_bytes: u64,
    pub at_offset: u64,
}

/// Appends events to one session, keeping the session's summary current as it goes.
///
/// Clones share one log: each lane of a run writes through its own clone, stamped with its
/// lane number ([`SessionWriter::for_lane`]), and every append is one whole line in one
/// `write`, in one sequence, under one lock.
#[derive(Debug, Clone)]
pub struct SessionWriter {
    dir: PathBuf,
    /// Written into the envelope of every event this clone appends.
    lane: Option<u64>,
    log: Arc<Mutex<Log>>,
}

/// The open log all clones of a writer share.
#[derive(Debug)]
struct Log {
    file: File,
    next_seq: u64,
    /// The summary fold of every line in the log, so a summary never needs a re-read.
    fold: SummaryFold,
    report: ScanReport,
    line: Vec<u8>,
    /// Test aid: die as `kill -9` would right after this many appends in this process.
    crash_after: Option<u64>,
    appended: u64,
    lock: SessionLock,
}

/// The variable that makes a writer abort after that many appends: how the tests kill a run
/// at an exact event boundary (a `kill -9` from outside cannot aim that well).
pub const CRASH_AFTER_VAR: &str = "HARROW_CRASH_AFTER_EVENTS";

fn crash_after() -> Option<u64> {
    std::env::var(CRASH_AFTER_VAR).ok().and_then(|v| v.parse().ok())
}

fn session_id_of(dir: &Path) -> Option<String> {
    dir.file_name().map(|n| n.to_string_lossy().into_owned())
}

impl SessionWriter {
    fn new(dir: &Path, log: Log) -> SessionWriter {
        SessionWriter { dir: dir.to_path_buf(), lane: None, log: Arc::new(Mutex::new(log)) }
    }

    /// Creates a new session folder and takes its lock.
    pub fn create(dir: &Path) -> Result<SessionWriter, WriterError> {
        if dir.exists() {
            return Err(WriterError::Exists(dir.to_path_buf()));
        }
        fs::create_dir_all(dir)
            .map_err(|source| WriterError::Io { path: dir.to_path_buf(), source })?;
        let lock = SessionLock::acquire(dir)?;
        let path = dir.join(EVENTS_FILE);
        let file = open_append(&path)?;
        let fold = SummaryFold::new(session_id_of(dir));
        Ok(SessionWriter::new(
            dir,
            Log {
                file,
                next_seq: 1,
                fold,
                report: ScanReport::default(),
                line: Vec::new(),
                crash_after: crash_after(),
                appended: 0,
                lock,
            },
        ))
    }

    /// The run whose lock this writer took over because that run had died, if one had.
    pub fn took_over_from(&self) -> Option<super::lock::LockHolder> {
        self.with(|log| log.lock.took_over_from.clone())
    }

    /// Opens an existing session to continue it. A torn last line is cut back to the last
    /// newline, and the cut is returned so the caller can log it.
    pub fn open(dir: &Path) -> Result<(SessionWriter, Option<Repair>), WriterError> {
        let lock = SessionLock::acquire(dir)?;
        let path = dir.join(EVENTS_FILE);
        let io_err = |source| WriterError::Io { path: path.clone(), source };
        let mut last_seq = 0u64;
        let mut fold = SummaryFold::new(session_id_of(dir));
        let mut report = scan(&path, |_, f| {
            if let Some(s) = f.seq.count() {
                last_seq = last_seq.max(s);
            }
            fold.apply(f);
        })
        .map_err(io_err)?;
        let repair = if report.pending_bytes > 0 {
            let f = crate::safe_io::open_write(&path).map_err(io_err)?;
            f.set_len(report.end_offset).map_err(io_err)?;
            f.sync_all().map_err(io_err)?;
            Some(Repair { cut_bytes: report.pending_bytes, at_offset: report.end_offset })
        } else {
            None
        };
        let file = open_append(&path)?;
        report.pending_bytes = 0;
        let log = Log {
            file,
            next_seq: last_seq + 1,
            fold,
            report,
            line: Vec::new(),
            crash_after: crash_after(),
            appended: 0,
            lock,
        };
        Ok((SessionWriter::new(dir, log), repair))
    }

    /// A clone that marks every event it appends as run by `lane`.
    #[must_use]
    /// Lane 0 is no lane (a decision worked on a parked task between lanes): its events are
    /// the run's own.
    pub fn for_lane(&self, lane: u64) -> SessionWriter {
        SessionWriter { lane: (lane > 0).then_some(lane), ..self.clone() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` on the shared log. A clone that panicked while holding it leaves the log as
    /// whole as a crash would: every line it finished is in the file.
    fn with<T>(&self, f: impl FnOnce(&mut Log) -> T) -> T {
        let mut log = self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut log)
    }

    /// Appends one event and returns its sequence number.
    pub fn append<P: Record>(&mut self, payload: &P) -> io::Result<u64> {
        let lane = self.lane;
        self.with(|log| {
            let seq = log.next_seq;
            log.line =
                encode_line(&timestamp::now(), seq, lane, payload).map_err(io::Error::from)?;
            if let Ok(text) = std::str::from_utf8(&log.line)
                && let std::borrow::Cow::Owned(clean) = crate::keys::scrub(text)
            {
                log.line = clean.into_bytes();
            }
            if let Ok(fact) = Fact::decode(&log.line, &mut KeptValues::default()) {
                log.fold.apply(&fact);
            }
            log.line.push(b'\n');
            log.file.write_all(&log.line)?;
            log.appended += 1;
            if log.crash_after == Some(log.appended) {
                std::process::abort();
            }
            log.next_seq += 1;
            log.report.lines += 1;
            log.report.events += 1;
            log.report.end_offset += log.line.len() as u64;
            Ok(seq)
        })
    }

    /// The latest (iteration, attempt) the log names for `task` (see [`SummaryFold::position`]).
    pub fn position(&self, task: &str) -> (u64, u64) {
        self.with(|log| log.fold.position(task).unwrap_or_default())
    }

    /// The worker's window the log's compactions fitted to last (see
    /// [`SummaryFold::learned_window`]).
    pub fn learned_window(&self) -> Option<u64> {
        self.with(|log| log.fold.learned_window())
    }

    /// The highest turn the log numbers for `task` (see [`SummaryFold::turns_of`]).
    pub fn turns_of(&self, task: &str) -> u64 {
        self.with(|log| log.fold.turns_of(task))
    }

    /// How many commits of `task` the log holds.
    pub fn commits_of(&self, task: &str) -> u64 {
        self.with(|log| log.fold.commits(task))
    }

    /// The summary of everything in the log so far, without reading it again.
    pub fn summary(&self) -> Summary {
        self.with(|log| log.fold.clone().finish(&log.report))
    }

    /// Makes everything appended so far durable.
    pub fn sync(&self) -> io::Result<()> {
        self.with(|log| log.file.sync_data())
    }
}

/// The log opened to append, never through a link planted in its place.
fn open_append(path: &Path) -> Result<File, WriterError> {
    crate::safe_io::open_append(path)
        .map_err(|source| WriterError::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::{Event, Payload, Stop};

    #[test]
    fn appends_whole_lines_with_rising_seq_and_repairs_a_torn_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s1");
        {
            let mut w = SessionWriter::create(&dir).unwrap();
            assert!(matches!(SessionWriter::open(&dir), Err(WriterError::Lock(_))));
            w.append(&Stop { reason: Some("paused".into()), ..Stop::default() }).unwrap();
            w.append(&Stop { reason: Some("paused".into()), ..Stop::default() }).unwrap();
            w.sync().unwrap();
        }
        let path = dir.join(EVENTS_FILE);
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"ts\":\"2026").unwrap();
        let (mut w, repair) = SessionWriter::open(&dir).unwrap();
        assert_eq!(repair.map(|r| r.cut_bytes), Some(11));
        assert_eq!(w.append(&Stop::default()).unwrap(), 3);
        let text = fs::read_to_string(&path).unwrap();
        let events: Vec<Event> =
            text.lines().map(|l| Event::decode(l.as_bytes()).unwrap()).collect();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)]);
        assert!(
            matches!(&events[0].payload, Payload::Stop(s) if s.reason.as_deref() == Some("paused"))
        );
        assert!(events[0].ts.as_deref().is_some_and(|t| t.len() == 24));
    }

    #[test]
    fn the_running_summary_equals_a_fold_of_the_file() {
        use crate::session::event::{ModelCall, Scope, TaskDone};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20261122-000000-abcdef");
        let scope = Scope { task_id: Some("T-001".into()), iter: Some(1), ..Scope::default() };
        let call = ModelCall {
            scope: scope.clone(),
            prompt_tokens: Some(10),
            eval_tokens: Some(2),
            tokens_used_total: Some(12),
            ..ModelCall::default()
        };
        {
            let mut w = SessionWriter::create(&dir).unwrap();
            w.append(&call).unwrap();
            let from_file =
                crate::session::overview(&dir, "20261122-000000-abcdef").unwrap().summary;
            assert_eq!(w.summary().tokens, from_file.tokens);
            assert_eq!(w.summary().tasks, from_file.tasks);
        }
        let (mut w, _) = SessionWriter::open(&dir).unwrap();
        w.append(&TaskDone { scope, ..TaskDone::default() }).unwrap();
        let mut from_file =
            crate::session::overview(&dir, "20261122-000000-abcdef").unwrap().summary;
        let mut running = w.summary();
        from_file.harrow.status.clear();
        running.harrow.status.clear();
        assert_eq!(running, from_file);
    }

    #[test]
    fn create_refuses_an_existing_folder() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(SessionWriter::create(tmp.path()), Err(WriterError::Exists(_))));
    }
}
