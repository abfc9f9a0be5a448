//! A session as something to share: every task of the plan with its attempts — the case, the
//! validators, the verdict with category, concern, evidence and next step — the operator's
//! decisions, the final diff stat, and per-task time and cost. Read from the log in one pass
//! that folds the summary and decodes whole only the events it keeps, and written as Markdown,
//! a standalone HTML page or JSON, a piece at a time (the head, each task, the tail) through
//! the redaction: tasks wait in a [`store::TaskStore`] that keeps only the last few in
//! memory, so memory is bounded by the largest tasks, not by the session. Keys and the
//! machine's paths are never written.

mod doc;
mod gather;
pub(crate) mod html;
mod json;
pub(crate) mod markdown;
mod store;

use crate::session::dir::SessionDir;
use crate::session::state::Ruling;
use doc::Render as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::path::Path;

/// What an export says of the whole session, before its tasks. Serialised in this order, it
/// is the JSON export's head; `tasks` and `changes` follow it there.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExportHead {
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
    /// Answered calls that reported no usage: `tokens` is then a floor, not the total.
    #[serde(skip_serializing_if = "crate::session::summary::is_zero")]
    pub tokens_unknown_calls: u64,
    /// Calls whose server counted nothing: their tokens are estimated from characters, and
    /// their cost is unknown.
    #[serde(skip_serializing_if = "crate::session::summary::is_zero")]
    pub tokens_estimated_calls: u64,
    pub cost: f64,
    /// How many tasks the export lists.
    #[serde(skip)]
    pub task_count: usize,
}

impl ExportHead {
    /// The tokens as a reader should take them: `1234`, or `1234+?` when some calls
    /// reported none (an agent that does not say).
    pub fn tokens_said(&self) -> String {
        let said = if self.tokens_unknown_calls == 0 {
            self.tokens.to_string()
        } else {
            format!("{}+? (unknown for {} call(s))", self.tokens, self.tokens_unknown_calls)
        };
        match self.tokens_estimated_calls {
            0 => said,
            n => format!("~{said} ({n} call(s) estimated from characters)"),
        }
    }

    /// The session's cost as a reader should take it (see [`cost_said`]).
    pub fn cost_said(&self) -> String {
        cost_said(self.tokens_estimated_calls, self.cost)
    }
}

/// A cost as a reader should take it: dollars, or unknown where a server counted nothing for
/// `estimated` of the calls (and so priced nothing).
pub fn cost_said(estimated: u64, cost: f64) -> String {
    match (estimated, cost) {
        (0, c) => format!("${c:.3}"),
        (_, 0.0) => "cost unknown".to_owned(),
        (_, c) => format!("${c:.3}+?"),
    }
}

/// One task's line in the table at the head of an export.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub id: String,
    pub title: Option<String>,
    pub state: String,
    pub rounds: u64,
    pub elapsed_ms: Option<u64>,
    pub cost: f64,
    /// Its calls whose tokens were estimated (the server counted none).
    pub estimated: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TaskExport {
    pub id: String,
    pub title: Option<String>,
    pub state: String,
    pub elapsed_ms: Option<u64>,
    pub tokens: i64,
    /// Its calls whose server counted nothing: `tokens` is an estimate, `cost` unknown.
    #[serde(default, skip_serializing_if = "crate::session::summary::is_zero")]
    pub tokens_estimated_calls: u64,
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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Attempt {
    pub number: u64,
    pub case: Option<Case>,
    /// Each validator run of the attempt, in order (a failed run sends the work back).
    pub validator_runs: Vec<Vec<Check>>,
    pub verdict: Option<VerdictExport>,
    /// Accepted, then sent back because it did not combine with work that landed meanwhile
    /// (lanes): why, with the files that conflicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_back: Option<String>,
    /// The worker model that made the attempt, when not the run's own (a fallback, an
    /// escalation took the task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where that model answered and why it took over: `at URL (fallback)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_via: Option<String>,
}

impl Attempt {
    /// How the attempt ended, in a few words.
    pub fn outcome(&self) -> String {
        match &self.verdict {
            Some(v) if v.accepted() => match &self.sent_back {
                Some(why) => format!("accepted, then sent back: {why}"),
                None => "accepted".to_owned(),
            },
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Case {
    pub summary: String,
    /// Each acceptance criterion with where the worker says it is met.
    pub criteria: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VerdictExport {
    pub verdict: String,
    pub category: Option<String>,
    pub concern: String,
    pub evidence: Vec<String>,
    pub next_step: Option<String>,
    pub score: Option<f64>,
    /// The harness decided it (an empty change, or an unreadable review), not the evaluator.
    pub by_harness: bool,
    /// The witnesses the evaluator cited, as harrow checked them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<crate::session::event::WitnessSeen>,
    /// What the gate made of an accept's evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_gate: Option<crate::session::event::EvidenceGate>,
}

impl VerdictExport {
    pub fn accepted(&self) -> bool {
        Ruling::read(&self.verdict) == Some(Ruling::Accept)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Decision {
    pub action: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    let progress = SessionDir::new(dir).progress();
    let text =
        crate::safe_io::read_text_capped(&progress, crate::safe_io::SMALL_FILE).unwrap_or_default();
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
    render_reporting(dir, id, format, &mut |_| ControlFlow::Continue(()))
}

/// [`render`], telling `progress` how far through the log it is (bytes read, of the size the
/// log had when it was opened) about every mebibyte, so a console can show it; when
/// `progress` says stop, the log is read no further and nothing is rendered: the error is
/// [`io::ErrorKind::Interrupted`].
pub fn render_reporting(
    dir: &Path,
    id: &str,
    format: Format,
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
) -> io::Result<String> {
    let mut out = Vec::new();
    render_to(dir, id, format, &mut out, progress)?;
    String::from_utf8(out).map_err(io::Error::other)
}

/// Renders the session in `dir` into `out` a piece at a time, each piece redacted on its way.
pub fn render_to(
    dir: &Path,
    id: &str,
    format: Format,
    out: &mut dyn io::Write,
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut gathered = gather::gather(dir, id, progress)?;
    let mut paths = vec![(dir.display().to_string(), "<session>")];
    paths.extend(gathered.folders());
    paths.extend(machine_paths());
    paths.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    let mut put = |text: String| out.write_all(redact(&text, &paths).as_bytes());
    let changes = gathered.changes();
    let (head, rows) = gathered.head();
    put(match format {
        Format::Md => markdown::head(&head, &rows),
        Format::Html => html::head(&head, &rows),
        Format::Json => json::head(&head)?,
    })?;
    for (n, row) in rows.iter().enumerate() {
        let task = gathered.task(row)?;
        put(match format {
            Format::Md => markdown::Markdown::task(&task),
            Format::Html => html::Html::task(&task),
            Format::Json => json::task(&task, n == 0)?,
        })?;
    }
    put(match format {
        Format::Md => markdown::tail(changes.as_deref()),
        Format::Html => html::tail(changes.as_deref()),
        Format::Json => json::tail(changes.as_deref(), !rows.is_empty())?,
    })
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

/// Takes every known key and the machine's absolute paths out of `text` (`paths` longest
/// first, so a path inside another is named by the nearer place) and escapes what no terminal
/// or viewer should be handed.
fn redact(text: &str, paths: &[(String, &'static str)]) -> String {
    let mut out = crate::keys::scrub(text).into_owned();
    for (path, name) in paths {
        if path.len() > 1 && out.contains(path.as_str()) {
            out = out.replace(path.as_str(), name);
        }
    }
    crate::printable::text(&out).into_owned()
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
