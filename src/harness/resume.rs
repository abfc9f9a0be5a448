//! Picking a session up again after a clean stop or a crash at any moment.
//!
//! Everything is rebuilt from the session folder: task states from the `task_state` events,
//! spend from the summary fold, below-the-bar warnings from `task_done`. An accepted task whose
//! commit never reached the log is found on the branch (or committed now) so nothing accepted
//! is lost and nothing is committed twice; the unfinished task's uncommitted work is discarded
//! and the task restarts from the last commit with a fresh conversation, its ledger intact.

use super::gate::TaskState;
use super::task_record::TaskRecord;
use crate::session::event::EventKind as K;
use crate::session::event::{Event, Payload, SessionStart};
use crate::session::outcome::LastOutcome;
use crate::session::scan::scan;
use crate::session::state::{Ruling, StopReason};
use crate::session::summary::Usage;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead};
use std::path::Path;

/// What a resumed run starts from.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// The session's first `session_start`: where everything lives.
    pub start: SessionStart,
    /// Each task's record as the log leaves it: state, base, last outcome and case, grants,
    /// why it failed, where its work was set aside.
    pub tasks: BTreeMap<String, TaskRecord>,
    /// Tasks with a `commit` event.
    pub committed: BTreeSet<String>,
    /// Tasks with a `task_done` event.
    pub done_logged: BTreeSet<String>,
    /// Tasks accepted below the bar, in order, with what last happened to their work.
    pub below_bar: Vec<(String, LastOutcome)>,
    /// Each task's judged attempts: attempt → the commit its work was kept as.
    pub judged: BTreeMap<String, BTreeMap<u64, String>>,
    /// Tasks whose last verdict is an accept with no `task_done` after it: the accept is
    /// durable, and the resume commits the judged work (digest of the diff, its base).
    pub accepted: BTreeMap<String, (String, String)>,
    pub usage: BTreeMap<String, Usage>,
    pub tokens_total: u64,
    /// The reason of the last `stop`, if the session stopped cleanly.
    pub last_stop: Option<StopReason>,
    /// How far `control.jsonl` has been read and applied.
    pub control_offset: u64,
}

impl Restored {
    /// `task`'s record, made on first mention.
    fn task(&mut self, task: &str) -> &mut TaskRecord {
        self.tasks.entry(task.to_owned()).or_default()
    }

    /// `task`'s state as the log leaves it: pending when the log never moved it.
    pub fn state(&self, task: &str) -> TaskState {
        self.tasks.get(task).map(|r| r.state.clone()).unwrap_or_default()
    }
}

/// Reads a session's first `session_start`.
pub fn first_start(dir: &Path) -> io::Result<Option<SessionStart>> {
    let file =
        match crate::safe_io::open_regular(&crate::session::dir::SessionDir::new(dir).events()) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
    let mut reader = io::BufReader::new(file);
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line)? > 0 {
        if let Ok(Event { payload: Payload::SessionStart(start), .. }) =
            Event::decode(line.trim_ascii_end())
        {
            return Ok(Some(start));
        }
        line.clear();
    }
    Ok(None)
}

/// Why a folder's run cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("the log has no session_start: this is not a harrow run that can be resumed")]
    NoStart,
    #[error("cannot read the log: {0}")]
    Io(#[from] io::Error),
}

/// What a `task_rewound` leaves in the task's record: the attempts set aside and given back,
/// and the rewind its next attempt goes on from until it is judged.
fn rewound(record: &mut TaskRecord, f: &crate::session::fact::Fact<'_>) {
    record.granted += f.payload.granted.count().unwrap_or(0);
    let set_aside = f.payload.rewound.as_ref().and_then(|v| v.as_array().cloned());
    record.rewound.extend(set_aside.into_iter().flatten().filter_map(|a| a.as_u64()));
    let (Some(tree), Some(continues_at)) = (f.payload.tree.get(), f.payload.continues_at.count())
    else {
        return;
    };
    let attempt = f.payload.to_attempt.count().unwrap_or(0);
    let target = crate::session::outcome::rewound_to(attempt, f.payload.to_turn.count());
    record.rewind = Some(super::task_record::Rewind {
        tree: tree.to_owned(),
        continues_at,
        note: super::rewind::note(&target, f.payload.reason.get().unwrap_or_default()),
        fresh: true,
    });
}

/// Rebuilds a run's state from its folder.
pub fn restore(dir: &Path, id: &str) -> Result<Restored, RestoreError> {
    let start = first_start(dir)?.ok_or(RestoreError::NoStart)?;
    let mut r = Restored { start, ..Restored::default() };
    scan(&crate::session::dir::SessionDir::new(dir).events(), |at, f| {
        let task = f.payload.task_id.get();
        match (f.event_kind(), task) {
            (Some(K::ToolCall), Some(t))
                if crate::session::vocabulary::ToolName::SubmitCase.is(f.payload.tool.get()) =>
            {
                r.task(t).last_case = Some(at);
            }
            (Some(K::ContextReset | K::FeedbackSent), Some(t)) => {
                if let Some(base) = f.payload.base_commit.get() {
                    r.task(t).base = Some(base.to_owned());
                }
                // An attempt took the rewind up: only a restart of that attempt goes back to it.
                if let (Some(K::ContextReset), Some(rewind)) =
                    (f.event_kind(), &mut r.task(t).rewind)
                {
                    rewind.fresh = false;
                }
            }
            (Some(K::TaskRewound), Some(t)) => rewound(r.task(t), f),
            (Some(K::ValidatorRun), Some(t)) if f.payload.passed.0 == Some(false) => {
                r.task(t).last_outcome = Some(LastOutcome::ValidatorsFailed);
            }
            (Some(K::Verdict), Some(t)) => {
                r.task(t).rewind = None;
                if let (Some(attempt), Some(sha)) =
                    (f.payload.attempt.value, f.payload.attempt_commit.get())
                {
                    let attempt = u64::try_from(attempt).unwrap_or(0);
                    r.judged.entry(t.to_owned()).or_default().insert(attempt, sha.to_owned());
                }
                if f.ruling() == Some(Ruling::Accept) {
                    let digest = f.payload.diff_digest.get().unwrap_or_default().to_owned();
                    let base = f.payload.base_commit.get().unwrap_or_default().to_owned();
                    r.accepted.insert(t.to_owned(), (digest, base));
                } else {
                    r.accepted.remove(t);
                }
                let outcome = if f.payload.parse_failed.0 == Some(true) {
                    Some(LastOutcome::ReviewUnreadable)
                } else if f.payload.below_threshold.0 == Some(true) {
                    Some(LastOutcome::BelowThreshold)
                } else if f.ruling() == Some(Ruling::Reject) {
                    Some(LastOutcome::Rejected(
                        f.payload.rejection_category.get().unwrap_or_default().to_owned(),
                    ))
                } else {
                    None
                };
                r.task(t).last_outcome = outcome;
            }
            (Some(K::TaskState), Some(t)) => {
                if let Some(to) = f.payload.to.get().and_then(TaskState::parse) {
                    // Accepted work that went back to its worker (it did not combine with
                    // work that landed meanwhile) is no longer an accept to honour.
                    if to == TaskState::Rework {
                        r.accepted.remove(t);
                    }
                    r.task(t).state = to;
                }
            }
            (Some(K::Commit), Some(t)) => {
                r.committed.insert(t.to_owned());
            }
            (Some(K::TaskDone), Some(t)) => {
                r.done_logged.insert(t.to_owned());
                r.accepted.remove(t);
                if f.payload.below_bar.0 == Some(true) {
                    let last = LastOutcome::parse(
                        f.payload.last_outcome.get(),
                        f.payload.last_category.get(),
                    );
                    r.below_bar.push((t.to_owned(), last));
                }
            }
            (Some(K::TaskFailed), Some(t)) => {
                let why = StopReason::parse(f.payload.reason.get().unwrap_or_default());
                r.task(t).failed_because = Some(why);
            }
            (Some(K::Stop), _) => r.last_stop = f.payload.reason.get().map(StopReason::parse),
            (Some(K::OperatorAction), _) => {
                if let Some(o) = f.payload.control_offset.count() {
                    r.control_offset = r.control_offset.max(o);
                }
                if let (Some(t), Some(true)) = (task, f.payload.granted_attempt.0) {
                    r.task(t).granted += 1;
                }
                if let (Some(t), Some(sha)) = (task, f.payload.set_aside.get()) {
                    r.task(t).set_aside = Some(sha.to_owned());
                }
            }
            (Some(K::SessionResume), _) => r.last_stop = None,
            _ => {}
        }
    })?;
    let summary = crate::session::overview(dir, id)?.summary;
    r.usage = summary.harrow.tokens_by_role;
    r.tokens_total = u64::try_from(summary.tokens.all.total).unwrap_or(0);
    Ok(r)
}
