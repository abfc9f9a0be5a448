//! The fleet: every session under the session folders as one live row, kept true as logs
//! grow — for the console's fleet view and `harrow sessions --follow`.
//!
//! A row is never drawn from a whole log. It starts from what the run itself keeps up to date
//! (`summary.json`, folded up to a byte offset it records; `checkpoint.json`; the `lock`) and
//! folds only the log's bytes after that offset; a session without a usable summary (a Tilth
//! session, a run that crashed before its first task ended) folds at most the last
//! [`TAIL_BYTES`] of its log. Then each refresh folds what was appended since the last one.

use super::checkpoint::{CheckpointRead, read_checkpoint};
use super::discover::{self, Found, Root};
use super::fact::{Fact, KeptValues};
pub use super::row::{AtWork, SessionRow};
use super::scan::LineSplitter;
use super::state::TaskState;
use super::status::{Holder, Said, SessionStatus, StatusFacts};
use super::summary::SummaryHead;
use fold::LogFold;
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

mod fold;

/// The most of a log a row is ever built from when the run's summary cannot say where to
/// start: the rest of what a row shows comes from the run's own files.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// Why a session folder (or its log) is writable by someone other than this user, if it is.
pub fn foreign(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to this process's user; asked once, as every row is built anew.
    static ME: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let me = *ME.get_or_init(|| std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid()));
    let paths = [
        dir.to_path_buf(),
        dir.join(crate::session::dir::EVENTS_FILE),
        crate::session::dir::SessionDir::new(dir).attempts(),
    ];
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.uid() != me {
            return Some(format!("owned by uid {}", meta.uid()));
        }
        if meta.mode() & 0o002 != 0 {
            return Some("writable by others".to_owned());
        }
        // A team share's group (a Kubernetes `fsGroup`) is other people too.
        if meta.mode() & 0o020 != 0 {
            return Some(format!("writable by its group (gid {})", meta.gid()));
        }
    }
    None
}

/// A session the fleet follows: what it folded and where it got to in each file.
#[derive(Debug, Clone)]
struct Tracked {
    found: Found,
    fold: LogFold,
    /// Bytes of the log folded so far (always at a line's end).
    offset: u64,
    /// The log's identity when read last, so a rewritten log is read again.
    log_stamp: Option<(u64, SystemTime)>,
    checkpoint: Option<(Option<String>, Option<String>, bool)>,
    checkpoint_stamp: Option<SystemTime>,
    row: SessionRow,
}

/// How many looks at the fleet go by between two whole looks at a run that has ended: in
/// between, only its log's size and time are compared (one `stat`), since anything that
/// revives it — a resume, a push, a pull request — appends to its log. The bulk of a large
/// fleet is ended runs, and on a network filesystem every `stat` is a round trip.
const WHOLE_LOOK_EVERY: u64 = 8;

fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Folds the log's complete lines from `offset` to its end; the offset after the last one.
fn fold_from(path: &Path, offset: u64, fold: &mut LogFold) -> u64 {
    let Ok(mut file) = crate::safe_io::open_regular(path) else { return offset };
    if file.seek(SeekFrom::Start(offset)).is_err() {
        return offset;
    }
    let mut splitter = LineSplitter::at(offset, 1);
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept = KeptValues::default();
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for (_, line) in splitter.feed(&buf[..n]) {
            match Fact::decode(&line, &mut kept) {
                Ok(fact) => fold.apply(&fact),
                Err(_) if !line.trim_ascii().is_empty() => fold.unreadable += 1,
                Err(_) => {}
            }
        }
    }
    splitter.offset()
}

/// Where folding a log starts: the summary's offset when it is usable, else its last
/// [`TAIL_BYTES`] (from the first line that begins there).
fn start_of(path: &Path, len: u64, summary: Option<SummaryHead>) -> (LogFold, u64) {
    let usable = summary
        .as_ref()
        .and_then(|s| s.harrow.log_bytes)
        .filter(|at| *at <= len && len - at <= TAIL_BYTES * 16);
    match (usable, summary) {
        (Some(at), Some(s)) => (LogFold::from_summary(s), at),
        (_, _) if len <= TAIL_BYTES => (LogFold::default(), 0),
        (_, summary) => {
            // Mid-log: skip to the first whole line of the tail; the counts come from the
            // summary, however old.
            let from = len - TAIL_BYTES;
            let skip = crate::safe_io::open_regular(path)
                .ok()
                .and_then(|mut f| {
                    f.seek(SeekFrom::Start(from)).ok()?;
                    let mut buf = vec![0u8; 64 * 1024];
                    let n = f.read(&mut buf).ok()?;
                    memchr::memchr(b'\n', &buf[..n]).map(|i| i as u64 + 1)
                })
                .unwrap_or(0);
            let mut fold = LogFold::counts_from(summary);
            fold.tail_only = true;
            (fold, from + skip)
        }
    }
}

/// One session's row as the fleet first reads it (what `harrow sessions` lists), and whether
/// its figures stand for the whole log (false when only the log's tail could be read: no
/// summary said where to start).
pub fn read_row(found: Found) -> (SessionRow, bool) {
    let t = Tracked::open(found);
    (t.row, !t.fold.tail_only)
}

impl Tracked {
    fn open(found: Found) -> Tracked {
        let log = found.dir.join(crate::session::dir::EVENTS_FILE);
        let log_stamp = stamp(&log);
        let len = log_stamp.map_or(0, |s| s.0);
        let summary = SummaryHead::read(&found.dir);
        let (mut fold, from) = start_of(&log, len, summary);
        let offset = if len > from { fold_from(&log, from, &mut fold) } else { from };
        let mut t = Tracked {
            row: SessionRow::empty(&found),
            found,
            fold,
            offset,
            log_stamp,
            checkpoint: None,
            checkpoint_stamp: None,
        };
        t.read_checkpoint();
        t.row = t.build_row();
        if t.row.recent.is_empty() && t.row.status.needs_person() && len > 0 {
            // Started from a summary at the log's end: a run that waits for a person (held,
            // failed, crashed) shows its last rows in the preview all the same. A finished run,
            // the bulk of a large fleet, costs no read of its log.
            let (_, tail_from) = start_of(&log, len, None);
            let mut tail = LogFold::default();
            fold_from(&log, tail_from, &mut tail);
            t.fold.recent = tail.recent;
            t.row = t.build_row();
        }
        t
    }

    fn read_checkpoint(&mut self) {
        let path = self.found.dir.join(crate::session::dir::CHECKPOINT_FILE);
        let at = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if at == self.checkpoint_stamp && self.checkpoint.is_some() {
            return;
        }
        self.checkpoint_stamp = at;
        self.checkpoint = Some(match read_checkpoint(&self.found.dir) {
            CheckpointRead::Ok(c) => (c.status, c.source, c.archived),
            _ => (None, None, false),
        });
    }

    /// Folds what the log gained; reads it again when it was rewritten (shorter, or the same
    /// length with a new time: a repair). With `whole` false, a run that has ended is only
    /// checked for a log that moved.
    fn refresh(&mut self, whole: bool) -> bool {
        let log = self.found.dir.join(crate::session::dir::EVENTS_FILE);
        let now = stamp(&log);
        let ended = matches!(
            self.row.status,
            SessionStatus::Done | SessionStatus::Stopped | SessionStatus::Failed
        );
        if !whole && ended && now == self.log_stamp {
            return false;
        }
        let checkpoint_before = self.checkpoint.clone();
        self.read_checkpoint();
        if now != self.log_stamp {
            match (now, self.log_stamp) {
                (Some((len, _)), Some((was, _))) if len > was && len >= self.offset => {
                    self.offset = fold_from(&log, self.offset, &mut self.fold);
                }
                _ => {
                    *self = Tracked::open(self.found.clone());
                    return true;
                }
            }
            self.log_stamp = now;
        }
        let row = self.build_row();
        let changed = row != self.row || checkpoint_before != self.checkpoint;
        self.row = row;
        changed
    }

    fn build_row(&self) -> SessionRow {
        let f = &self.fold;
        let (said, source, archived) = self.checkpoint.clone().unwrap_or_default();
        let lock = crate::session::lock::live_holder(&self.found.dir);
        let holder = lock.as_ref().map(|h| Holder {
            elsewhere: h.host != crate::session::lock::hostname(),
            quiet_for: self
                .log_stamp
                .and_then(|(_, at)| SystemTime::now().duration_since(at).ok())
                .unwrap_or_default(),
        });
        let state = SessionStatus::decide(&StatusFacts {
            final_stop: f.final_stop.as_ref(),
            waiting: f.waiting.on.is_some(),
            holder,
            checkpoint: said.as_deref().map(Said::read),
            events: self.offset,
        });
        let (held_task, held_reason) = match state {
            SessionStatus::Held => {
                let task = f.waiting.on.as_ref().map(|(t, _)| t.clone()).filter(|t| !t.is_empty());
                let task = task.or_else(|| {
                    let waits =
                        |s: &TaskState| matches!(s, TaskState::NeedsOperator | TaskState::Failed);
                    f.states.iter().find(|(_, s)| waits(s)).map(|(t, _)| t.clone())
                });
                (task, f.waiting.on.as_ref().map(|(_, why)| crate::printable::line(why)))
            }
            // A task failed at the cap still takes a decision (approve, force-accept, skip):
            // the failed run's row names it, so the fleet can send one.
            SessionStatus::Failed => {
                let failed = f.states.iter().find(|(_, s)| **s == TaskState::Failed);
                let why = f.final_stop.as_ref().map(|r| format!("failed: {r}"));
                (failed.map(|(t, _)| t.clone()), why)
            }
            _ => (None, None),
        };
        let held_verdict = held_task.as_ref().and_then(|t| f.verdicts.get(t)).cloned();
        let at_work =
            if state.is_working() { f.at_work.values().cloned().collect() } else { Vec::new() };
        let tasks_total = f.task_count.unwrap_or(f.states.len() as u64).max(f.tasks_done);
        SessionRow {
            id: self.found.id.clone(),
            dir: self.found.dir.clone(),
            origin: if f.format.is_empty() { "harrow".into() } else { f.format.clone() },
            feature: f.feature.clone(),
            prep: f.prep,
            status: state,
            held_task,
            held_reason,
            held_verdict,
            tasks_done: f.tasks_done,
            tasks_total,
            at_work,
            tokens: f.tokens,
            cost: f.cost,
            started_at: f.started_at.clone(),
            last_event_at: f.last_ts.clone(),
            repo: source,
            host: f.host.clone().or_else(|| lock.map(|h| h.host)),
            pull_request: f.pull_request.clone(),
            recent: f.recent.iter().cloned().collect(),
            foreign: foreign(&self.found.dir),
            unreadable_lines: f.unreadable,
            archived,
        }
    }
}

impl SessionRow {
    fn empty(found: &Found) -> SessionRow {
        SessionRow::new(found.id.clone(), found.dir.clone())
    }

    /// What a script following the fleet hears about besides the state: the tasks done, the
    /// tasks at work (with their attempts), the task a held run waits on.
    fn progress(&self) -> (u64, Vec<(String, u64)>, Option<String>) {
        let at_work = self.at_work.iter().map(|w| (w.task.clone(), w.attempt)).collect();
        (self.tasks_done, at_work, self.held_task.clone())
    }
}

/// A run whose state or progress changed (tasks done, tasks at work, the held task), as
/// `sessions --follow` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub id: String,
    /// `None` for a session seen for the first time.
    pub from: Option<SessionStatus>,
    pub row: SessionRow,
    /// Seen for the first time after the fleet's first look: a run that started meanwhile.
    #[serde(skip)]
    pub appeared: bool,
}

impl Change {
    /// Whether a person is called for: a run became held, crashed, failed or done, or started
    /// after the first look and is already so (what the first look finds is not news).
    pub fn calls_a_person(&self) -> bool {
        let new_state = self.from != Some(self.row.status);
        (self.from.is_some() || self.appeared)
            && new_state
            && (self.row.status.needs_person() || self.row.status == SessionStatus::Done)
    }
}

/// Every session under the roots, kept up to date by [`Fleet::refresh`].
#[derive(Debug)]
pub struct Fleet {
    roots: Vec<Root>,
    /// Looks taken so far.
    looks: u64,
    /// By folder, spelled as bytes: compared with `memcmp`, where a path is compared component
    /// by component, which a look at thousands of runs felt.
    sessions: HashMap<OsString, Tracked>,
    /// Whether the first look is done.
    looked: bool,
}

impl Fleet {
    pub fn new(roots: Vec<Root>) -> Fleet {
        Fleet { roots, looks: 0, sessions: HashMap::new(), looked: false }
    }

    /// Looks at every session again: new ones are read, grown logs folded from where they
    /// were left, gone ones dropped. Returns the runs whose state changed (or appeared) and
    /// whether any row changed at all.
    pub fn refresh(&mut self) -> (Vec<Change>, bool) {
        let known = &self.sessions;
        let found = discover::list_where(&self.roots, |d| {
            known.contains_key(d.as_os_str()) || discover::is_session_dir(d)
        });
        let whole = self.looks.is_multiple_of(WHOLE_LOOK_EVERY);
        self.looks += 1;
        let mut changes = Vec::new();
        let mut any = false;
        let mut seen = std::collections::HashSet::new();
        for f in found {
            seen.insert(f.dir.as_os_str().to_owned());
            if let Some(t) = self.sessions.get_mut(f.dir.as_os_str()) {
                let was = t.row.status;
                let progress = t.row.progress();
                if t.refresh(whole) {
                    any = true;
                    if t.row.status != was || t.row.progress() != progress {
                        let row = t.row.clone();
                        changes.push(Change {
                            id: row.id.clone(),
                            from: Some(was),
                            row,
                            appeared: false,
                        });
                    }
                }
            } else {
                let t = Tracked::open(f);
                let row = t.row.clone();
                changes.push(Change { id: row.id.clone(), from: None, row, appeared: self.looked });
                self.sessions.insert(t.found.dir.as_os_str().to_owned(), t);
                any = true;
            }
        }
        self.looked = true;
        changes.sort_by(|a, b| b.id.cmp(&a.id).then_with(|| a.row.dir.cmp(&b.row.dir)));
        let before = self.sessions.len();
        self.sessions.retain(|dir, _| seen.contains(dir));
        any |= self.sessions.len() != before;
        (changes, any)
    }

    /// The rows, what needs a person first, then running, then the rest, newest first within
    /// each.
    pub fn rows(&self) -> Vec<SessionRow> {
        let mut rows: Vec<SessionRow> = self.sessions.values().map(|t| t.row.clone()).collect();
        rows.sort_by(|a, b| a.status.cmp(&b.status).then_with(|| b.id.cmp(&a.id)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::discover::Origin;
    use crate::session::status::SILENT_AFTER;
    use std::path::PathBuf;
    use std::time::Duration;

    fn fleet_of(root: &Path) -> Fleet {
        Fleet::new(vec![Root { path: root.to_path_buf(), origin: Origin::Given }])
    }

    fn copy_fixture(kind: &str, to: &Path) -> PathBuf {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(kind);
        let session = std::fs::read_dir(&from)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map_or_else(|| panic!("no fixture in {}", from.display()), |e| e.path());
        let dir = to.join(session.file_name().unwrap_or_default());
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        for f in std::fs::read_dir(&session).into_iter().flatten().flatten() {
            if f.path().is_file() {
                std::fs::copy(f.path(), dir.join(f.file_name())).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        dir
    }

    /// One line of a log, at second `seq`.
    fn line(seq: u64, kind: &str, payload: &str) -> String {
        format!(
            "{{\"ts\":\"2026-11-26T00:00:{seq:02}Z\",\"seq\":{seq},\"type\":\"{kind}\",\"payload\":{payload}}}\n"
        )
    }

    /// A folder others may write is said so: its record is data, never authority.
    #[test]
    fn a_folder_others_can_write_is_marked() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20261126-000000-abcdef");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("events.jsonl"), "").unwrap();
        assert_eq!(foreign(&dir), None, "this user's own folder");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(foreign(&dir).as_deref(), Some("writable by others"));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.join("events.jsonl"), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        assert_eq!(foreign(&dir).as_deref(), Some("writable by others"), "its log too");
        std::fs::set_permissions(dir.join("events.jsonl"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        let group = foreign(&dir).unwrap_or_default();
        assert!(group.starts_with("writable by its group"), "a group may write it: {group}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dir.join("attempts.git")).unwrap();
        std::fs::set_permissions(dir.join("attempts.git"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        assert_eq!(foreign(&dir).as_deref(), Some("writable by others"), "its git copy too");
    }

    /// An ended run costs one `stat` a look: what changes beside its log (here its checkpoint)
    /// is seen at the next whole look, within [`WHOLE_LOOK_EVERY`] looks; what reaches its log
    /// (a resume, a push) at the next look.
    #[test]
    fn an_ended_run_is_looked_at_whole_now_and_then_and_at_once_when_its_log_moves() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = copy_fixture("harrow", tmp.path());
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        assert_eq!(fleet.rows()[0].status, SessionStatus::Done);
        let checkpoint = r#"{"status":"done","source":"/elsewhere/clone"}"#;
        std::fs::write(dir.join(crate::session::dir::CHECKPOINT_FILE), checkpoint).unwrap();
        let looks = (1..=WHOLE_LOOK_EVERY).find(|_| fleet.refresh().1);
        assert_eq!(looks, Some(WHOLE_LOOK_EVERY), "seen at the whole look, not before");
        assert_eq!(fleet.rows()[0].repo.as_deref(), Some("/elsewhere/clone"));
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(crate::session::dir::EVENTS_FILE))
            .unwrap();
        std::io::Write::write_all(
            &mut log,
            line(59, "stop", r#"{"reason":"interrupted"}"#).as_bytes(),
        )
        .unwrap();
        let (changes, _) = fleet.refresh();
        assert_eq!(changes.len(), 1, "at the very next look");
        assert_eq!(changes[0].row.status, SessionStatus::Stopped);
    }

    /// A run that waits for a person, read from its summary (at the log's end), still shows its
    /// last rows in the preview.
    #[test]
    fn an_ended_run_read_from_its_summary_keeps_its_last_rows() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = copy_fixture("harrow", tmp.path());
        let log = dir.join(crate::session::dir::EVENTS_FILE);
        let len = std::fs::metadata(&log).map(|m| m.len()).unwrap_or_default();
        let summary = format!("{{\"harrow\":{{\"log_bytes\":{len},\"tasks_done\":3}}}}");
        std::fs::write(dir.join("summary.json"), summary).unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let row = &fleet.rows()[0];
        assert!(row.status.needs_person(), "{row:?}");
        assert!(!row.recent.is_empty(), "the preview has rows: {row:?}");
    }

    #[test]
    fn a_row_agrees_with_the_whole_logs_fold_for_harrow_and_tilth_sessions() {
        for kind in ["harrow", "tilth"] {
            let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let dir = copy_fixture(kind, tmp.path());
            let mut fleet = fleet_of(tmp.path());
            let (changes, _) = fleet.refresh();
            assert_eq!(changes.len(), 1, "{kind}");
            let row = &fleet.rows()[0];
            let id = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let whole = crate::session::overview(&dir, &id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(row.tasks_done, whole.summary.harrow.tasks_done, "{kind}");
            assert_eq!(row.started_at, whole.summary.started_at, "{kind}");
            assert_eq!(row.last_event_at, whole.summary.last_event_at, "{kind}");
            assert_eq!(row.origin, whole.summary.harrow.format, "{kind}");
            let expect = match whole.status.as_str() {
                "done" => SessionStatus::Done,
                "failed" => SessionStatus::Failed,
                "crashed" => SessionStatus::Crashed,
                _ => SessionStatus::Stopped,
            };
            assert_eq!(row.status, expect, "{kind}: {row:?}");
        }
    }

    /// A note sent to a held run (the fleet's `e`) leaves it held, waiting on the same task;
    /// a failed run names its failed task, so a decision can be sent to it.
    #[test]
    fn a_note_never_hides_a_hold_and_a_failed_run_names_its_failed_task() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-bbbbbb");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join(crate::session::dir::EVENTS_FILE);
        let held = [
            line(1, "session_start", r#"{"task_count":2}"#),
            line(
                2,
                "task_state",
                r#"{"task_id":"T-001","from":"evaluating","to":"needs_operator"}"#,
            ),
            line(
                3,
                "operator_wait",
                r#"{"task_id":"T-001","reason":"the evaluator cannot be reached"}"#,
            ),
            line(4, "operator_action", r#"{"action":"note","text":"good enough"}"#),
        ]
        .concat();
        std::fs::write(&log, &held).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("lock"), r#"{"pid":1,"host":"elsewhere","started_at":""}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let row = &fleet.rows()[0];
        assert_eq!(row.status, SessionStatus::Held, "{row:?}");
        assert_eq!(row.held_task.as_deref(), Some("T-001"));
        std::fs::remove_file(dir.join("lock")).unwrap_or_else(|e| panic!("{e}"));
        let failed = [
            line(1, "session_start", r#"{"task_count":2}"#),
            line(2, "task_state", r#"{"task_id":"T-001","from":"rework","to":"failed"}"#),
            line(3, "stop", r#"{"reason":"evaluator_cap","error":"task T-001 failed"}"#),
        ]
        .concat();
        std::fs::write(&log, failed).unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let row = &fleet.rows()[0];
        assert_eq!(row.status, SessionStatus::Failed, "{row:?}");
        assert_eq!(row.held_task.as_deref(), Some("T-001"), "{row:?}");
    }

    /// A script following the fleet hears of progress, not only of a new state: a task done or
    /// a task starting in a running run is one change (never repeated, never calling a person).
    #[test]
    fn progress_in_a_running_run_is_a_change_once() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-cccccc");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join(crate::session::dir::EVENTS_FILE);
        std::fs::write(&log, line(1, "session_start", r#"{"task_count":2}"#))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("lock"), r#"{"pid":1,"host":"elsewhere","started_at":""}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let append = |text: String| {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .unwrap_or_else(|e| panic!("{e}"));
        };
        append(line(
            2,
            "task_state",
            r#"{"task_id":"T-001","attempt":1,"from":"pending","to":"running"}"#,
        ));
        append(line(3, "context_reset", r#"{"task_id":"T-001","iter":0,"attempt":1}"#));
        let (changes, _) = fleet.refresh();
        assert_eq!(changes.len(), 1, "a task at work is news: {changes:?}");
        assert_eq!(changes[0].from, Some(SessionStatus::Running));
        assert!(!changes[0].calls_a_person());
        append(line(
            4,
            "model_call",
            r#"{"task_id":"T-001","iter":1,"attempt":1,"tokens_used_total":10}"#,
        ));
        let (changes, _) = fleet.refresh();
        assert!(changes.is_empty(), "tokens and turns alone are not: {changes:?}");
        append(line(5, "task_done", r#"{"task_id":"T-001"}"#));
        let (changes, _) = fleet.refresh();
        assert_eq!(changes.len(), 1, "a task done is news: {changes:?}");
        assert_eq!(changes[0].row.tasks_done, 1);
        let (changes, _) = fleet.refresh();
        assert!(changes.is_empty(), "never repeated: {changes:?}");
    }

    #[test]
    fn a_grown_log_is_folded_from_where_it_was_left_and_a_rewritten_one_read_again() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-aaaaaa");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join(crate::session::dir::EVENTS_FILE);
        std::fs::write(&log, line(1, "session_start", r#"{"task_count":2,"host":"here"}"#))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        assert_eq!(fleet.rows()[0].status, SessionStatus::Crashed, "no lock, no stop");
        let mut more =
            std::fs::OpenOptions::new().append(true).open(&log).unwrap_or_else(|e| panic!("{e}"));
        std::io::Write::write_all(
            &mut more,
            format!(
                "{}{}{}{}{}",
                line(2, "task_done", r#"{"task_id":"T-001"}"#),
                line(3, "evaluator_verdict", r#"{"task_id":"T-002","verdict":"reject","rejection_category":"weak_test","concern":"no test\u001b]0;x\u0007","next_step":"Add one."}"#),
                line(
                    3,
                    "operator_wait",
                    r#"{"task_id":"T-002","reason":"the evaluator is down\u001b[2J"}"#
                ),
                line(4, "stop", r#"{"reason":"needs_operator","error":"task T-002 waits"}"#),
                line(5, "pull_request", r#"{"forge":"github","url":"https://x/pull/1\u001b]0;t\u0007"}"#)
            )
            .as_bytes(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        drop(more);
        let (changes, _) = fleet.refresh();
        let row = &fleet.rows()[0];
        assert_eq!(row.status, SessionStatus::Held);
        assert_eq!(row.held_task.as_deref(), Some("T-002"));
        assert_eq!(row.tasks_done, 1);
        assert_eq!(row.host.as_deref(), Some("here"));
        assert!(row.held_reason.as_deref().is_some_and(|r| !r.contains('\u{1b}')), "{row:?}");
        let verdict = row.held_verdict.as_deref().unwrap_or_default();
        assert!(
            verdict.starts_with("reject (weak_test): no test")
                && verdict.ends_with("Next: Add one."),
            "{verdict}"
        );
        assert!(!verdict.contains('\u{1b}') && !verdict.contains('\u{7}'), "{verdict}");
        assert!(
            changes.iter().any(|c| c.from == Some(SessionStatus::Crashed) && c.calls_a_person())
        );
        let pr = row.pull_request.as_deref().unwrap_or_default();
        assert!(pr.starts_with("https://x/pull/1") && !pr.contains('\u{1b}'), "{pr}");
        std::fs::write(&log, line(1, "session_start", r#"{"task_count":2}"#))
            .unwrap_or_else(|e| panic!("{e}"));
        fleet.refresh();
        assert_eq!(fleet.rows()[0].tasks_done, 0, "a rewritten log is read again");
    }

    #[test]
    fn a_prep_interview_is_marked_as_one_not_as_a_plan_of_no_tasks() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-cccccc");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join(crate::session::dir::EVENTS_FILE),
            "{\"ts\":\"2026-11-26T00:00:01Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{\"phase\":\"prep\",\"feature\":\"search\"}}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let row = &fleet.rows()[0];
        assert!(row.prep, "{row:?}");
        assert_eq!(row.feature.as_deref(), Some("search"));
    }

    #[test]
    fn a_run_locked_on_another_machine_that_went_quiet_is_silent_not_crashed() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("20261126-000000-bbbbbb");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join(crate::session::dir::EVENTS_FILE);
        std::fs::write(&log, "{\"ts\":\"2026-11-26T00:00:01Z\",\"seq\":1,\"type\":\"session_start\",\"payload\":{\"host\":\"build-7\"}}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join(crate::session::dir::LOCK_FILE),
            r#"{"pid":1,"host":"build-7","started_at":"2026-11-26T00:00:00Z"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        assert_eq!(
            fleet.rows()[0].status,
            SessionStatus::Running,
            "just written: running elsewhere"
        );
        let old = SystemTime::now() - SILENT_AFTER - Duration::from_secs(5);
        std::fs::File::options()
            .append(true)
            .open(&log)
            .and_then(|f| f.set_modified(old))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut fleet = fleet_of(tmp.path());
        fleet.refresh();
        let row = &fleet.rows()[0];
        assert_eq!(row.status, SessionStatus::Silent);
        assert_eq!(row.host.as_deref(), Some("build-7"));
    }
}
