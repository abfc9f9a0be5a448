//! What a fleet row is folded from: a session's log after where its summary stopped, in the
//! typed vocabulary of events, task states and stop reasons.

use super::AtWork;
use crate::session::event::EventKind as K;
use crate::session::fact::Fact;
use crate::session::state::{Ruling, StopReason, TaskState};
use crate::session::summary::SummaryHead;
use crate::session::vocabulary::WrittenBy;
use crate::session::waiting::Waiting;
use std::collections::{BTreeMap, VecDeque};

/// Rows kept per session for the preview.
const RECENT: usize = 8;

/// What a session's log said, folded from where its summary stopped.
#[derive(Debug, Clone, Default)]
pub(super) struct LogFold {
    pub started_at: Option<String>,
    /// Whether `started_at` is a `session_start`'s time (else the first event's).
    started_by_start: bool,
    pub last_ts: Option<String>,
    pub feature: Option<String>,
    pub prep: bool,
    pub format: String,
    pub host: Option<String>,
    pub pull_request: Option<String>,
    pub task_count: Option<u64>,
    pub tasks_done: u64,
    pub tokens: u64,
    pub cost: f64,
    /// The reason of the last `stop` with no start or resume after it.
    pub final_stop: Option<StopReason>,
    /// Each task's latest state, as `task_state` said.
    pub states: BTreeMap<String, TaskState>,
    /// The latest scope seen per lane (0: a run without lanes).
    pub at_work: BTreeMap<u64, AtWork>,
    /// The wait for a decision the run is in.
    pub waiting: Waiting,
    /// Each task's latest verdict, in words: what a person deciding on it reads first.
    pub verdicts: BTreeMap<String, String>,
    pub recent: VecDeque<String>,
    /// Lines that could not be read: the summary's count, and those met since.
    pub unreadable: u64,
    /// Only the log's last [`super::TAIL_BYTES`] were folded: the counts are the summary's
    /// (however old) and the tail's, not the whole log's.
    pub tail_only: bool,
}

impl LogFold {
    /// A fold that starts where the summary was written.
    pub fn from_summary(s: SummaryHead) -> LogFold {
        LogFold {
            started_by_start: s.started_at.is_some(),
            prep: s.is_prep(),
            started_at: s.started_at,
            last_ts: s.last_event_at,
            feature: s.harrow.feature,
            host: s.harrow.host,
            pull_request: s.harrow.pull_request,
            format: s.harrow.format,
            task_count: s.harrow.task_count,
            tasks_done: s.harrow.tasks_done,
            tokens: u64::try_from(s.tokens.total).unwrap_or(0),
            cost: s.tokens.cost,
            final_stop: s.harrow.final_stop,
            unreadable: s.harrow.unreadable_lines.count,
            states: s.harrow.tasks.into_iter().map(|(id, t)| (id, t.state)).collect(),
            ..LogFold::default()
        }
    }

    /// A fold of a log's tail, with the counts the summary had however old it is.
    pub fn counts_from(s: Option<SummaryHead>) -> LogFold {
        s.map_or_else(LogFold::default, |s| LogFold {
            task_count: s.harrow.task_count,
            tasks_done: s.harrow.tasks_done,
            feature: s.harrow.feature,
            started_at: s.started_at,
            unreadable: s.harrow.unreadable_lines.count,
            ..LogFold::default()
        })
    }

    pub fn apply(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        if let Some(ts) = fact.ts.get() {
            self.started_at.get_or_insert_with(|| ts.to_owned());
            self.last_ts = Some(ts.to_owned());
        }
        if fact.seq.value.is_some() {
            WrittenBy::Harrow.as_str().clone_into(&mut self.format);
        } else if self.format.is_empty() {
            WrittenBy::Tilth.as_str().clone_into(&mut self.format);
        }
        let kind = fact.event_kind();
        let task = p.task_id.get();
        let to = p.to.get().map(TaskState::read);
        self.waiting.apply(kind, task, to.as_ref(), p.reason.get());
        match kind {
            Some(K::SessionStart | K::SessionResume) => self.start(fact),
            Some(K::Stop) => {
                let reason = p.reason.get().map(StopReason::parse);
                if reason == Some(StopReason::NeedsOperator) {
                    self.waiting.stopped_for_decision(task, p.error.get());
                }
                self.final_stop = reason;
                self.at_work.clear();
            }
            Some(K::ModelCall) => {
                if let Some(total) = p.tokens_used_total.count() {
                    self.tokens = self.tokens.max(total);
                }
                self.cost += p.cost.0.unwrap_or(0.0);
            }
            Some(K::TaskDone) => self.tasks_done += 1,
            Some(K::TaskState) => {
                if let (Some(t), Some(to)) = (task, to) {
                    if !to.is_at_work() {
                        self.at_work.retain(|_, w| w.task != t);
                    }
                    self.states.insert(t.to_owned(), to);
                }
            }
            // A note, a pause or a refused decision changes nothing of what a run waits for;
            // a decision that does moves the task's state, which ends the wait.
            Some(K::PullRequest) if p.error.get().is_none() => {
                if let Some(url) = p.url.get() {
                    self.pull_request = Some(crate::printable::line(url));
                }
            }
            Some(K::Verdict) => {
                if let Some(t) = task {
                    self.verdicts.insert(t.to_owned(), verdict_words(fact));
                }
            }
            _ => {}
        }
        self.note_at_work(fact);
        let line = recent_line(fact);
        if !line.is_empty() {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(line);
        }
    }

    fn start(&mut self, fact: &Fact<'_>) {
        let p = &fact.payload;
        let run_start = fact.event_kind() == Some(K::SessionStart)
            && !crate::session::vocabulary::Phase::PrepFeature.is(p.phase.get());
        if run_start && !self.started_by_start {
            // A session's start is its run's first start (Tilth's feature interview before it
            // is not), as the whole log's fold says.
            self.started_by_start = true;
            self.started_at = fact.ts.get().map(str::to_owned);
        }
        self.final_stop = None;
        self.at_work.clear();
        if let Some(h) = p.host.get() {
            self.host = Some(h.to_owned());
        }
        if let Some(f) = p.feature.get() {
            self.feature.get_or_insert_with(|| f.to_owned());
        }
        if crate::session::vocabulary::Phase::Prep.is(p.phase.get()) {
            self.prep = true;
        }
        if let Some(n) = p.task_count.count() {
            self.task_count = Some(n);
        }
    }

    /// The task an event of work names is at work in its lane, until its state settles.
    fn note_at_work(&mut self, fact: &Fact<'_>) {
        let Some(t) = fact.payload.task_id.get() else { return };
        let settles = matches!(
            fact.event_kind(),
            Some(
                K::TaskDone | K::TaskFailed | K::Commit | K::OperatorWait | K::TaskState | K::Stop
            )
        );
        if settles || self.states.get(t).is_some_and(|s| !s.is_at_work()) {
            return;
        }
        let lane = fact.lane.count();
        let p = &fact.payload;
        let at = AtWork {
            task: t.to_owned(),
            iter: p.iter.count().unwrap_or(0),
            attempt: p.attempt.count().unwrap_or(0),
            lane,
        };
        self.at_work.retain(|_, w| w.task != t);
        self.at_work.insert(lane.unwrap_or(0), at);
    }
}

/// A verdict in words: the ruling, its category, the concern and the next step.
fn verdict_words(fact: &Fact<'_>) -> String {
    let p = &fact.payload;
    let mut said = fact.ruling().map_or("?", Ruling::as_str).to_owned();
    if let Some(c) = p.rejection_category.get() {
        said = format!("{said} ({c})");
    }
    if let Some(c) = p.concern.get() {
        said = format!("{said}: {c}");
    }
    if let Some(n) = p.next_step.get() {
        said = format!("{said} Next: {n}");
    }
    crate::printable::line(&said)
}

/// A log row in a few words, for the preview.
fn recent_line(fact: &Fact<'_>) -> String {
    let p = &fact.payload;
    let time = fact.ts.get().and_then(|t| t.get(11..19)).unwrap_or("");
    let task = p.task_id.get().unwrap_or("");
    let what = match fact.event_kind() {
        Some(K::ToolCall) => format!("calls {}", p.tool.get().unwrap_or("a tool")),
        Some(K::Verdict) => format!(
            "verdict: {}{}",
            fact.ruling().map_or("?", Ruling::as_str),
            p.rejection_category.get().map(|c| format!(" ({c})")).unwrap_or_default()
        ),
        Some(K::ValidatorRun) => {
            format!("validators {}", if p.passed.0 == Some(true) { "passed" } else { "failed" })
        }
        Some(K::TaskState) => format!("→ {}", p.to.get().unwrap_or("?")),
        Some(K::TaskDone) => "done".to_owned(),
        Some(K::TaskFailed) => format!("failed: {}", p.reason.get().unwrap_or("?")),
        Some(K::Commit) => {
            format!("committed {}", p.sha.get().map_or("", |s| &s[..s.len().min(7)]))
        }
        Some(K::OperatorWait) => format!("waits: {}", p.reason.get().unwrap_or("")),
        Some(K::OperatorAction) => format!("operator: {}", p.action.get().unwrap_or("?")),
        Some(K::Stop) => format!("stopped: {}", p.reason.get().unwrap_or("?")),
        Some(K::SessionStart) => "session started".to_owned(),
        Some(K::SessionResume) => "session resumed".to_owned(),
        Some(K::Push) => match p.error.get() {
            Some(e) => format!("push failed: {e}"),
            None => format!("pushed to {}", p.remote.get().unwrap_or("?")),
        },
        Some(K::PullRequest) => match (p.error.get(), p.url.get()) {
            (Some(e), _) => format!("pull request not opened: {e}"),
            (None, Some(url)) => format!("pull request {url}"),
            (None, None) => "pull request to open by hand".to_owned(),
        },
        _ => return String::new(),
    };
    let line: Vec<&str> = [time, task, &what].into_iter().filter(|s| !s.is_empty()).collect();
    crate::printable::line(&line.join(" "))
}
