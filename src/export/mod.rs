//! A session as something to share: every task of the plan with its attempts — the case, the
//! validators, the verdict with category, concern, evidence and next step — the operator's
//! decisions, the final diff stat, and per-task time and cost. Read from the log in one pass
//! that decodes only the events it keeps (memory grows with attempts, not events), and written
//! as Markdown, a standalone HTML page or JSON. Keys and the machine's paths are never written.

pub(crate) mod html;
pub(crate) mod markdown;

use crate::session::dir::SessionDir;
use crate::session::event::{Event, EventKind, Payload};
use crate::session::fact::Fact;
use crate::session::scan::scan_lines_from;
use crate::session::state::Ruling;
use crate::session::summary::SummaryFold;
use crate::session::{Overview, overview_of};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

/// A whole session, as exported.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Export {
    pub session: String,
    /// `harrow` or `tilth`: who wrote the log.
    pub written_by: String,
    pub feature: Option<String>,
    pub worker_model: Option<String>,
    pub evaluator_model: Option<String>,
    pub started_at: Option<String>,
    pub last_event_at: Option<String>,
    pub status: String,
    pub stop: Option<String>,
    pub tasks_done: u64,
    pub tokens: i64,
    pub cost: f64,
    pub tasks: Vec<TaskExport>,
    /// Files the session's branch changed, from its base; `None` when the repository is gone.
    pub changes: Option<Vec<FileChange>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskExport {
    pub id: String,
    pub title: Option<String>,
    pub state: String,
    pub elapsed_ms: Option<u64>,
    pub tokens: i64,
    pub cost: f64,
    pub commit: Option<String>,
    /// Rounds the task had (one still under way, or cut short before a verdict, counts).
    pub rounds: u64,
    /// Why a task that did not finish ended: its failure reason, or that it was skipped.
    pub ended_because: Option<String>,
    pub attempts: Vec<Attempt>,
    pub decisions: Vec<Decision>,
}

/// One round of a task: what the worker submitted, what the checks said, what was judged.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Attempt {
    pub number: u64,
    pub case: Option<Case>,
    /// Each validator run of the attempt, in order (a failed run sends the work back).
    pub validator_runs: Vec<Vec<Check>>,
    pub verdict: Option<VerdictExport>,
}

impl Attempt {
    /// How the attempt ended, in a few words.
    pub fn outcome(&self) -> String {
        match &self.verdict {
            Some(v) if v.accepted() => "accepted".to_owned(),
            Some(v) => v
                .category
                .as_deref()
                .map_or_else(|| "rejected".into(), |c| format!("rejected ({c})")),
            None if self.validator_runs.last().is_some_and(|r| r.iter().any(|c| !c.passed)) => {
                "validators failed".to_owned()
            }
            None => "not judged".to_owned(),
        }
    }

    /// The validator runs as one line: `✗ tests, then ✓ tests`.
    pub fn checks_line(&self) -> String {
        let runs: Vec<String> = self
            .validator_runs
            .iter()
            .map(|run| {
                run.iter()
                    .map(|c| format!("{} {}", if c.passed { "✓" } else { "✗" }, c.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect();
        runs.join(", then ")
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Case {
    pub summary: String,
    /// Each acceptance criterion with where the worker says it is met.
    pub criteria: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct VerdictExport {
    pub verdict: String,
    pub category: Option<String>,
    pub concern: String,
    pub evidence: Vec<String>,
    pub next_step: Option<String>,
    pub score: Option<f64>,
    /// The harness decided it (an empty change, or an unreadable review), not the evaluator.
    pub by_harness: bool,
}

impl VerdictExport {
    pub fn accepted(&self) -> bool {
        Ruling::read(&self.verdict) == Some(Ruling::Accept)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Decision {
    pub action: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct FileChange {
    pub path: String,
    pub added: usize,
    pub removed: usize,
}

/// The formats `harrow export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Html,
    Json,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Html => "html",
            Format::Json => "json",
        }
    }
}

/// Task titles from `progress.txt` (`ID<TAB>OUTCOME<TAB>TITLE`, the latest line for a task
/// winning): where a Tilth session, which logs no plan, keeps them.
fn progress_titles(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(SessionDir::new(dir).progress()).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            let (id, _, title) = (parts.next()?, parts.next()?, parts.next()?);
            (!title.trim().is_empty()).then(|| (id.to_owned(), title.trim().to_owned()))
        })
        .collect()
}

/// A failure reason as the export says it.
fn failure_words(reason: &str) -> String {
    match crate::session::state::StopReason::parse(reason) {
        crate::session::state::StopReason::EvaluatorCap => {
            "rejected at the cap of review rounds".into()
        }
        crate::session::state::StopReason::IterCap => "ran out of worker iterations".into(),
        crate::session::state::StopReason::NoCase => "the worker never submitted a case".into(),
        crate::session::state::StopReason::OperatorFail => "failed by the operator".into(),
        other => format!("failed ({other})"),
    }
}

/// Reads the session in `dir` and renders it, with keys and the machine's paths taken out.
pub fn render(dir: &Path, id: &str, format: Format) -> io::Result<String> {
    render_reporting(dir, id, format, &mut |_| {})
}

/// [`render`], telling `progress` how far through the log it is (bytes read, of the size the
/// log had when it was opened) about every mebibyte, so a console can show it.
pub fn render_reporting(
    dir: &Path,
    id: &str,
    format: Format,
    progress: &mut dyn FnMut(Progress),
) -> io::Result<String> {
    let (export, paths) = collect(dir, id, progress)?;
    let text = match format {
        Format::Md => markdown::render(&export),
        Format::Html => html::render(&export),
        Format::Json => crate::printable::json_pretty(&export).map_err(io::Error::other)? + "\n",
    };
    Ok(crate::printable::text(&redact(&text, &paths)).into_owned())
}

/// How far an export has read the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub read: u64,
    pub total: u64,
}

impl Progress {
    /// Whole percent read.
    pub fn percent(self) -> u64 {
        (self.read.saturating_mul(100)).checked_div(self.total).unwrap_or(100).min(100)
    }
}

/// Takes the machine's absolute paths and every known key out of `text`: the session's own
/// folders first, then the folders harrow is configured with, then the user's home — the
/// longest first, so a path inside another is named by the nearer place.
fn redact(text: &str, paths: &[(String, &'static str)]) -> String {
    let mut out = crate::keys::scrub(text).into_owned();
    let mut all: Vec<(String, &'static str)> = paths.to_vec();
    all.extend(machine_paths());
    all.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    for (path, name) in &all {
        if path.len() > 1 {
            out = out.replace(path.as_str(), name);
        }
    }
    out
}

/// The folders of this machine an export must not reveal: the sessions folders, harrow's
/// configuration folder and the user's home.
fn machine_paths() -> Vec<(String, &'static str)> {
    let mut paths: Vec<(String, &'static str)> = crate::session::discover::roots(&[])
        .into_iter()
        .map(|root| (root.path.display().to_string(), "<sessions>"))
        .collect();
    if let Some(dirs) = directories::ProjectDirs::from("", "", "harrow") {
        paths.push((dirs.config_dir().display().to_string(), "<config>"));
    }
    if let Some(home) = directories::BaseDirs::new() {
        paths.push((home.home_dir().display().to_string(), "~"));
    }
    paths
}

/// The parts of the log the export keeps, and the absolute paths to take out of it.
fn collect(
    dir: &Path,
    id: &str,
    progress: &mut dyn FnMut(Progress),
) -> io::Result<(Export, Vec<(String, &'static str)>)> {
    let events = SessionDir::new(dir).events();
    let total = std::fs::metadata(&events)?.len();
    let mut c = Collector::default();
    let mut fold = SummaryFold::new(Some(id.to_owned()));
    let mut told = 0u64;
    let report = scan_lines_from(&events, 0, 1, |at, line, fact| {
        let read = at.offset + u64::from(at.len) + 1;
        if read - told >= 1 << 20 {
            told = read;
            progress(Progress { read: read.min(total), total });
        }
        fold.apply(fact);
        if Collector::wants(fact)
            && let Ok(event) = Event::decode(line)
        {
            c.take(&event);
        }
    })?;
    let o = overview_of(dir, fold, &report);
    let mut paths = vec![(dir.display().to_string(), "<session>")];
    paths.extend(c.worktree.iter().map(|w| (w.clone(), "<worktree>")));
    paths.extend(c.source.iter().map(|s| (s.clone(), "<repository>")));
    let changes = c.changes();
    let titles = progress_titles(dir);
    let mut export = c.finish(&o, changes);
    for t in &mut export.tasks {
        if t.title.is_none() {
            t.title = titles.get(&t.id).cloned();
        }
    }
    Ok((export, paths))
}

/// What one pass over the log gathers.
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
    tasks: BTreeMap<String, TaskExport>,
}

impl Collector {
    /// Whether the export keeps anything of this event (the rest is never decoded).
    fn wants(fact: &Fact<'_>) -> bool {
        use EventKind as K;
        match fact.event_kind() {
            Some(K::ToolCall) => fact.payload.tool.get() == Some("submit_case"),
            Some(
                K::SessionStart
                | K::ContextReset
                | K::ValidatorRun
                | K::Verdict
                | K::JudgeVerdict
                | K::Commit
                | K::OperatorAction,
            ) => true,
            _ => false,
        }
    }

    fn task(&mut self, id: &str) -> &mut TaskExport {
        if !self.tasks.contains_key(id) {
            if self.ordered.insert(id.to_owned()) {
                self.order.push((id.to_owned(), None));
            }
            self.tasks
                .insert(id.to_owned(), TaskExport { id: id.to_owned(), ..TaskExport::default() });
        }
        self.tasks.get_mut(id).unwrap_or_else(|| unreachable!("inserted above"))
    }

    /// The attempt an event belongs to: its own number, else (Tilth) one after the task's
    /// last judged attempt.
    fn attempt(&mut self, task: &str, number: Option<u64>) -> &mut Attempt {
        let t = self.task(task);
        let judged = t.attempts.iter().filter(|a| a.verdict.is_some()).count() as u64;
        let number = number.unwrap_or(judged + 1);
        if !t.attempts.iter().any(|a| a.number == number) {
            t.attempts.push(Attempt { number, ..Attempt::default() });
        }
        let i = t.attempts.iter().position(|a| a.number == number).unwrap_or(0);
        &mut t.attempts[i]
    }

    fn take(&mut self, e: &Event) {
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
                    if let Some(id) = t.get("id").and_then(Value::as_str)
                        && self.ordered.insert(id.to_owned())
                    {
                        let title = t.get("title").and_then(Value::as_str).map(str::to_owned);
                        self.order.push((id.to_owned(), title));
                    }
                }
            }
            (Payload::ContextReset(_), Some(task)) => {
                self.task(&task);
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
                self.attempt(&task, number).case =
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
                self.attempt(&task, number).validator_runs.push(checks.collect());
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
                };
                self.attempt(&task, number).verdict = Some(verdict);
            }
            (Payload::JudgeVerdict(v), Some(task)) => {
                let verdict = VerdictExport {
                    verdict: e.payload.ruling().unwrap_or(Ruling::Reject).as_str().to_owned(),
                    concern: v.reasoning.clone().unwrap_or_default(),
                    ..VerdictExport::default()
                };
                self.attempt(&task, number).verdict = Some(verdict);
            }
            (Payload::Commit(c), Some(task)) => self.task(&task).commit.clone_from(&c.sha),
            (Payload::OperatorAction(a), Some(task)) => {
                let decision = Decision {
                    action: a.action.clone().unwrap_or_default(),
                    reason: a.reason.clone().or_else(|| a.note.clone()),
                };
                self.task(&task).decisions.push(decision);
            }
            _ => {}
        }
    }

    /// What the session's branch changed from its base, when the repository is still there.
    fn changes(&self) -> Option<Vec<FileChange>> {
        let repo = [&self.worktree, &self.source]
            .into_iter()
            .flatten()
            .find_map(|p| git2::Repository::open(PathBuf::from(p)).ok())?;
        let base = repo.revparse_single(self.base_commit.as_deref()?).ok()?.peel_to_tree().ok()?;
        let tip = repo
            .revparse_single(&format!("refs/heads/{}", self.branch.as_deref()?))
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

    fn finish(mut self, o: &Overview, changes: Option<Vec<FileChange>>) -> Export {
        let s = &o.summary;
        let h = &s.harrow;
        for id in h.tasks.keys() {
            self.task(id);
        }
        let order = std::mem::take(&mut self.order);
        let tasks = order
            .into_iter()
            .filter_map(|(id, title)| {
                let mut t = self.tasks.remove(&id)?;
                let detail = h.tasks.get(&id);
                t.title = title.or_else(|| detail.and_then(|d| d.title.clone()));
                t.state = detail.map_or_else(
                    || s.tasks.get(&id).map_or_else(String::new, |t| t.status.clone()),
                    |d| d.state.to_string(),
                );
                t.elapsed_ms = detail.and_then(|d| d.elapsed_ms);
                let judged = t.attempts.iter().filter(|a| a.verdict.is_some()).count() as u64;
                t.rounds = judged.max(detail.map_or(0, |d| d.attempts));
                t.ended_because = detail.and_then(|d| match d.state {
                    crate::session::state::TaskState::Failed => Some(
                        d.failure_reasons
                            .last()
                            .map_or_else(|| "failed".to_owned(), |r| failure_words(r)),
                    ),
                    crate::session::state::TaskState::Skipped => {
                        Some("skipped by the operator".to_owned())
                    }
                    _ => None,
                });
                if let Some(tilth) = s.tasks.get(&id) {
                    t.tokens = tilth.tokens.all.total;
                    t.cost = tilth.tokens.all.cost;
                }
                t.attempts.sort_by_key(|a| a.number);
                Some(t)
            })
            .collect();
        Export {
            session: o.summary.session_id.clone().unwrap_or_default(),
            written_by: h.format.clone(),
            feature: self.feature,
            worker_model: self.worker_model,
            evaluator_model: self.evaluator_model,
            started_at: s.started_at.clone(),
            last_event_at: s.last_event_at.clone(),
            status: o.status.as_str().to_owned(),
            stop: s.stop.as_ref().and_then(|st| st.reason.clone()),
            tasks_done: h.tasks_done,
            tokens: s.tokens.all.total,
            cost: s.tokens.all.cost,
            tasks,
            changes,
        }
    }
}
