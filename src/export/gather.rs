//! The one pass over the log an export makes: the summary folded, and the events it shows
//! (cases, validator runs, verdicts, commits, the operator's decisions) decoded whole and kept
//! per task in a [`TaskStore`].

use super::store::TaskStore;
use super::{
    Attempt, Case, Check, Decision, ExportHead, FileChange, Progress, Row, TaskExport,
    VerdictExport, failure_words, progress_titles,
};
use crate::session::dir::SessionDir;
use crate::session::event::{Event, EventKind, Payload};
use crate::session::fact::Fact;
use crate::session::scan::scan_lines_while;
use crate::session::state::{Ruling, TaskState};
use crate::session::summary::SummaryFold;
use crate::session::{Overview, overview_of};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Reads the session in `dir` once and returns what its export shows.
pub(super) fn gather(
    dir: &Path,
    id: &str,
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
) -> io::Result<Gathered> {
    let events = SessionDir::new(dir).events();
    let total = std::fs::metadata(&events)?.len();
    let mut c = Collector::default();
    let mut fold = SummaryFold::new(Some(id.to_owned()));
    let mut told = 0u64;
    let mut stopped = false;
    let report = scan_lines_while(&events, 0, 1, u64::MAX, |at, line, fact| {
        let read = at.offset + u64::from(at.len) + 1;
        if read - told >= 1 << 20 {
            told = read;
            if progress(Progress { read: read.min(total), total }).is_break() {
                stopped = true;
                return ControlFlow::Break(());
            }
        }
        fold.apply(fact);
        if c.error.is_none()
            && Collector::wants(fact)
            && let Ok(event) = Event::decode(line)
        {
            c.error = c.take(&event).err();
        }
        ControlFlow::Continue(())
    })?;
    if stopped {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "the export was cancelled"));
    }
    if let Some(e) = c.error.take() {
        return Err(e);
    }
    Ok(Gathered { overview: overview_of(dir, fold, &report), titles: progress_titles(dir), c })
}

/// What the pass gathered, ready to render.
pub(super) struct Gathered {
    overview: Overview,
    /// Task titles from `progress.txt`, for a Tilth session.
    titles: BTreeMap<String, String>,
    c: Collector,
}

impl Gathered {
    /// The session's worktree and source repository as its log names them: paths an export
    /// takes out.
    pub(super) fn folders(&self) -> impl Iterator<Item = (String, &'static str)> + '_ {
        let worktree = self.c.worktree.iter().map(|w| (w.clone(), "<worktree>"));
        worktree.chain(self.c.source.iter().map(|s| (s.clone(), "<repository>")))
    }

    /// What the session's branch changed from its base, when the repository is still there.
    pub(super) fn changes(&self) -> Option<Vec<FileChange>> {
        let c = &self.c;
        let repo = [&c.worktree, &c.source]
            .into_iter()
            .flatten()
            .find_map(|p| git2::Repository::open(PathBuf::from(p)).ok())?;
        let base = repo.revparse_single(c.base_commit.as_deref()?).ok()?.peel_to_tree().ok()?;
        let tip = repo
            .revparse_single(&format!("refs/heads/{}", c.branch.as_deref()?))
            .ok()?
            .peel_to_tree()
            .ok()?;
        let diff = repo.diff_tree_to_tree(Some(&base), Some(&tip), None).ok()?;
        let mut files = Vec::new();
        for i in 0..diff.deltas().len() {
            let patch = git2::Patch::from_diff(&diff, i).ok()??;
            let (_, added, removed) = patch.line_stats().ok()?;
            let delta = patch.delta();
            let path = delta.new_file().path().or_else(|| delta.old_file().path())?;
            files.push(FileChange { path: path.display().to_string(), added, removed });
        }
        Some(files)
    }

    /// The head and the table's rows: every task in plan order (or order of first
    /// appearance) that the log says anything of.
    pub(super) fn head(&mut self) -> (ExportHead, Vec<Row>) {
        let o = &self.overview;
        let (s, h) = (&o.summary, &o.summary.harrow);
        for id in h.tasks.keys() {
            self.c.note_order(id, None);
        }
        let rows: Vec<Row> = self
            .c
            .order
            .iter()
            .filter(|(id, _)| self.c.store.has(id) || h.tasks.contains_key(id))
            .map(|(id, title)| {
                let detail = h.tasks.get(id);
                Row {
                    id: id.clone(),
                    title: title
                        .clone()
                        .or_else(|| detail.and_then(|d| d.title.clone()))
                        .or_else(|| self.titles.get(id).cloned()),
                    state: detail.map_or_else(
                        || s.tasks.get(id).map_or_else(String::new, |t| t.status.clone()),
                        |d| d.state.to_string(),
                    ),
                    rounds: self.c.store.judged(id).max(detail.map_or(0, |d| d.attempts)),
                    elapsed_ms: detail.and_then(|d| d.elapsed_ms),
                    cost: s.tasks.get(id).map_or(0.0, |t| t.tokens.all.cost),
                    estimated: s.tasks.get(id).map_or(0, |t| t.tokens.all.estimated),
                }
            })
            .collect();
        let head = ExportHead {
            session: s.session_id.clone().unwrap_or_default(),
            written_by: h.format.clone(),
            feature: self.c.feature.clone(),
            worker_model: self.c.worker_model.clone(),
            evaluator_model: self.c.evaluator_model.clone(),
            started_at: s.started_at.clone(),
            last_event_at: s.last_event_at.clone(),
            status: o.status.as_str().to_owned(),
            stop: s.stop.as_ref().and_then(|st| st.reason.clone()),
            tasks_done: h.tasks_done,
            tokens: s.tokens.all.total,
            tokens_unknown_calls: s.tokens.all.uncounted,
            tokens_estimated_calls: s.tokens.all.estimated,
            cost: s.tokens.all.cost,
            task_count: rows.len(),
        };
        (head, rows)
    }

    /// The task of `row`, whole, with what the fold knows of it at the end.
    pub(super) fn task(&mut self, row: &Row) -> io::Result<TaskExport> {
        let mut t = self.c.store.take(&row.id)?.unwrap_or_default();
        let s = &self.overview.summary;
        let detail = s.harrow.tasks.get(&row.id);
        t.id.clone_from(&row.id);
        t.title.clone_from(&row.title);
        t.state.clone_from(&row.state);
        t.elapsed_ms = row.elapsed_ms;
        t.rounds = row.rounds;
        t.ended_because = detail.and_then(|d| match d.state {
            TaskState::Failed => Some(
                d.failure_reasons.last().map_or_else(|| "failed".to_owned(), |r| failure_words(r)),
            ),
            TaskState::Skipped => Some("skipped by the operator".to_owned()),
            _ => None,
        });
        if let Some(tilth) = s.tasks.get(&row.id) {
            t.tokens = tilth.tokens.all.total;
            t.tokens_estimated_calls = tilth.tokens.all.estimated;
            t.cost = tilth.tokens.all.cost;
        }
        t.attempts.sort_by_key(|a| a.number);
        Ok(t)
    }
}

/// What the pass keeps of the log besides the fold.
#[derive(Debug, Default)]
struct Collector {
    feature: Option<String>,
    worker_model: Option<String>,
    evaluator_model: Option<String>,
    worktree: Option<String>,
    source: Option<String>,
    base_commit: Option<String>,
    branch: Option<String>,
    /// Tasks in plan order (or order of first appearance), with their titles.
    order: Vec<(String, Option<String>)>,
    /// The ids in `order`, to look one up without walking the list.
    ordered: HashSet<String>,
    store: TaskStore,
    /// The first failure of the store, which ends the export.
    error: Option<io::Error>,
    /// The model each task's worker moved to (a fallback, an escalation), from then on.
    /// Each task's worker model when not the run's own, with where it answered and why.
    switched: BTreeMap<String, (String, Option<String>)>,
}

impl Collector {
    /// Whether the export keeps anything of this event (the rest is never decoded).
    fn wants(fact: &Fact<'_>) -> bool {
        use EventKind as K;
        match fact.event_kind() {
            Some(K::ToolCall) => {
                crate::session::vocabulary::ToolName::SubmitCase.is(fact.payload.tool.get())
            }
            Some(
                K::SessionStart
                | K::ContextReset
                | K::ValidatorRun
                | K::Verdict
                | K::JudgeVerdict
                | K::Commit
                | K::OperatorAction,
            ) => true,
            Some(K::ModelSwitch) => {
                crate::session::vocabulary::CallRole::Worker.is(fact.payload.role.get())
            }
            Some(K::FeedbackSent) => {
                crate::session::vocabulary::FeedbackKind::Merge.is(fact.payload.kind.get())
            }
            _ => false,
        }
    }

    /// Puts `id` in the export's order, with its title, if it is not there yet.
    fn note_order(&mut self, id: &str, title: Option<&str>) {
        if self.ordered.insert(id.to_owned()) {
            self.order.push((id.to_owned(), title.map(str::to_owned)));
        }
    }

    fn task(&mut self, id: &str) -> io::Result<&mut TaskExport> {
        self.note_order(id, None);
        self.store.get(id)
    }

    /// The attempt an event belongs to: its own number, else (Tilth) one after the task's
    /// last judged attempt.
    fn attempt(&mut self, task: &str, number: Option<u64>) -> io::Result<&mut Attempt> {
        let t = self.task(task)?;
        let judged = t.attempts.iter().filter(|a| a.verdict.is_some()).count() as u64;
        let number = number.unwrap_or(judged + 1);
        let i = if let Some(i) = t.attempts.iter().position(|a| a.number == number) {
            i
        } else {
            t.attempts.push(Attempt { number, ..Attempt::default() });
            t.attempts.len() - 1
        };
        Ok(&mut t.attempts[i])
    }

    fn take(&mut self, e: &Event) -> io::Result<()> {
        let task = e.task_id().map(str::to_owned);
        let number = e.payload.scope().and_then(|s| s.attempt);
        match (&e.payload, task) {
            (Payload::SessionStart(s), _) => {
                self.feature = self.feature.take().or_else(|| s.feature.clone());
                self.worker_model = self.worker_model.take().or_else(|| s.worker_model.clone());
                self.evaluator_model =
                    self.evaluator_model.take().or_else(|| s.evaluator_model.clone());
                self.worktree = self.worktree.take().or_else(|| s.worktree.clone());
                self.source = self.source.take().or_else(|| s.source.clone());
                self.base_commit = self.base_commit.take().or_else(|| s.base_commit.clone());
                self.branch = self.branch.take().or_else(|| s.branch.clone());
                for t in s.plan_tasks.as_ref().and_then(Value::as_array).into_iter().flatten() {
                    if let Some(id) = t.get("id").and_then(Value::as_str) {
                        self.note_order(id, t.get("title").and_then(Value::as_str));
                    }
                }
            }
            (Payload::ContextReset(_), Some(task)) => {
                self.task(&task)?;
            }
            (Payload::ModelSwitch(m), Some(task)) => {
                if let Some(to) = &m.to_model {
                    let via = m.to_base_url.as_ref().map(|url| match &m.kind {
                        Some(kind) => format!("at {url} ({kind})"),
                        None => format!("at {url}"),
                    });
                    self.switched.insert(task, (to.clone(), via));
                }
            }
            (Payload::ToolCall(call), Some(task)) => {
                let args = call.args.clone().unwrap_or(Value::Null);
                let text =
                    |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let criteria = args
                    .get("ac_coverage")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| (text(c, "criterion"), text(c, "addressed_by")))
                    .collect();
                self.attempt(&task, number)?.case =
                    Some(Case { summary: text(&args, "summary"), criteria });
            }
            (Payload::ValidatorRun(run), Some(task)) => {
                let merged = if run.combined == Some(true) {
                    " (merged with the session branch)"
                } else {
                    ""
                };
                let checks = run
                    .results
                    .iter()
                    .flatten()
                    .map(|r| Check { name: format!("{}{merged}", r.name), passed: r.passed });
                self.attempt(&task, number)?.validator_runs.push(checks.collect());
            }
            (Payload::Verdict(v), Some(task)) => {
                let verdict = VerdictExport {
                    verdict: v.verdict.clone().unwrap_or_default(),
                    category: v.rejection_category.clone(),
                    concern: v.concern.clone().unwrap_or_default(),
                    evidence: v.evidence.clone().unwrap_or_default(),
                    next_step: v.next_step.clone(),
                    score: v.score,
                    by_harness: v.parse_failed == Some(true) || v.by_harness == Some(true),
                    witnesses: v.witnesses.clone().unwrap_or_default(),
                    evidence_gate: v.evidence_gate,
                };
                let (model, via) = self.switched.get(&task).cloned().unzip();
                let attempt = self.attempt(&task, number)?;
                attempt.verdict = Some(verdict);
                attempt.model = model;
                attempt.model_via = via.flatten();
            }
            (Payload::JudgeVerdict(v), Some(task)) => {
                let verdict = VerdictExport {
                    verdict: e.payload.ruling().unwrap_or(Ruling::Reject).as_str().to_owned(),
                    concern: v.reasoning.clone().unwrap_or_default(),
                    ..VerdictExport::default()
                };
                self.attempt(&task, number)?.verdict = Some(verdict);
            }
            (Payload::Commit(c), Some(task)) => self.task(&task)?.commit.clone_from(&c.sha),
            (Payload::FeedbackSent(f), Some(task))
                if crate::session::vocabulary::FeedbackKind::Merge.is(f.kind.as_deref()) =>
            {
                let files = f.conflicts.as_deref().unwrap_or_default();
                self.attempt(&task, number)?.sent_back =
                    Some(crate::session::outcome::not_landed_because(files));
            }
            (Payload::OperatorAction(a), Some(task)) => {
                let decision = Decision {
                    action: a.action.clone().unwrap_or_default(),
                    reason: a.reason.clone().or_else(|| a.note.clone()),
                };
                self.task(&task)?.decisions.push(decision);
            }
            _ => {}
        }
        Ok(())
    }
}
