//! The session's side files, written between and after tasks: `checkpoint.json`,
//! `task-status.json`, `summary.json` (all replaced whole; the last two, views of the log, are
//! not synced), `progress.txt` and the per-task ledgers (appended). The event log stays the source of truth; these are what resume and people read.

use super::memory::LedgerEntry;
use crate::session::checkpoint::Checkpoint;
use crate::session::dir::SessionDir;
use crate::session::summary::{Summary, Usage};
use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::path::Path;

/// Appends one line to `progress.txt`: `<id>\t<outcome>\t<title>`, as Tilth writes it.
pub fn append_progress(
    dir: &Path,
    task_id: &str,
    outcome: &crate::session::vocabulary::Outcome,
    title: &str,
) -> io::Result<()> {
    let line = format!("{task_id}\t{}\t{title}\n", outcome.written());
    crate::session::atomic::append_scrubbed(&SessionDir::new(dir).progress(), &line)
}

/// The last lines of `progress.txt`, for the worker's context.
pub fn progress_tail(dir: &Path, lines: usize, max_chars: usize) -> Option<String> {
    let progress = SessionDir::new(dir).progress();
    let text = crate::safe_io::read_text_capped(&progress, crate::safe_io::SMALL_FILE).ok()?;
    let all: Vec<&str> = text.lines().collect();
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    let chars = tail.chars().count();
    Some(if chars > max_chars { tail.chars().skip(chars - max_chars).collect() } else { tail })
}

fn ledger_path(dir: &Path, task_id: &str) -> std::path::PathBuf {
    crate::session::dir::SessionDir::new(dir).ledger(task_id)
}

/// Appends a verdict to a task's ledger.
pub fn append_ledger(dir: &Path, task_id: &str, entry: &LedgerEntry) -> io::Result<()> {
    crate::safe_io::ensure_dir(&crate::session::dir::SessionDir::new(dir).ledger_dir())?;
    let line = serde_json::to_string(entry).map_err(io::Error::from)? + "\n";
    crate::session::atomic::append_scrubbed(&ledger_path(dir, task_id), &line)
}

/// Reads a task's ledger, skipping lines that do not parse (a crash mid-append).
pub fn read_ledger(dir: &Path, task_id: &str) -> Vec<LedgerEntry> {
    let Ok(file) = crate::safe_io::open_regular(&ledger_path(dir, task_id)) else {
        return Vec::new();
    };
    io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

/// Writes `task-status.json`: every task that has finished, with its state.
pub fn write_task_status(dir: &Path, states: &BTreeMap<String, String>) -> io::Result<()> {
    crate::session::atomic::write_json_view(&SessionDir::new(dir).task_status(), states)
}

/// Writes `summary.json` from the writer's running fold, with the session's status.
pub fn write_summary(dir: &Path, mut summary: Summary) -> io::Result<()> {
    let checkpoint = crate::session::checkpoint::read_checkpoint(dir);
    // The writer is the live holder.
    let me =
        crate::session::status::Holder { elsewhere: false, quiet_for: std::time::Duration::ZERO };
    let status = crate::session::status::session_status(&summary, &checkpoint, Some(me));
    status.as_str().clone_into(&mut summary.harrow.status);
    crate::session::atomic::write_json_view(&SessionDir::new(dir).summary(), &summary)
}

/// What `checkpoint.json` records for a harrow session.
#[derive(Debug, Clone)]
pub struct CheckpointFacts<'a> {
    pub id: &'a str,
    pub source: &'a Path,
    pub plan: &'a Path,
    pub workspace: &'a Path,
    pub branch: &'a str,
    pub base: &'a str,
    pub usage: &'a BTreeMap<String, Usage>,
    pub status: &'a crate::session::vocabulary::CheckpointStatus,
}

/// Writes `checkpoint.json` in Tilth's keys plus harrow's.
pub fn write_checkpoint(dir: &Path, f: &CheckpointFacts<'_>) -> io::Result<()> {
    let tokens_used = f.usage.values().map(|u| u.total).sum();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut extra = serde_json::Map::new();
    extra.insert("plan".into(), serde_json::json!(f.plan));
    extra.insert("base_commit".into(), serde_json::json!(f.base));
    let c = Checkpoint {
        session_id: Some(f.id.to_owned()),
        started_at: Some(started),
        source: Some(f.source.display().to_string()),
        feature_dir: Some(f.plan.display().to_string()),
        workspace: Some(f.workspace.display().to_string()),
        branch: Some(f.branch.to_owned()),
        tokens_used,
        usage: f.usage.clone(),
        status: Some(f.status.as_str().to_owned()),
        archived: false,
        extra,
    };
    crate::session::atomic::write_json_atomic(&SessionDir::new(dir).checkpoint(), &c)
}

/// The `model_call` event of one try: its usage, health and what the reply said of itself;
/// `tokens_total` is the session's running total after it.
pub fn model_call(
    role: crate::brain::client::Role,
    scope: &crate::session::event::Scope,
    a: &crate::brain::client::Attempt,
    tokens_total: u64,
) -> crate::session::event::ModelCall {
    use crate::brain::client::Role;
    let u = a.usage;
    crate::session::event::ModelCall {
        scope: scope.clone(),
        phase: (role == Role::Evaluator).then(|| "evaluator".to_owned()),
        role: Some(role.as_str().into()),
        call_attempt: Some(u64::from(a.number)),
        prompt_tokens: Some(u.prompt),
        eval_tokens: Some(u.completion),
        cached_tokens: Some(u.cached),
        reasoning_tokens: Some(u.reasoning),
        cost: Some(u.cost),
        tokens_estimated: u.estimated.then_some(true),
        tokens_used_total: Some(tokens_total),
        health: Some(a.health.as_str().to_owned()),
        health_detail: a.detail.clone(),
        retry_backoff_seconds: a.backoff.map(|b| b.as_secs_f64()),
        finish_reason: a.finish_reason.clone(),
        model: a.model.clone(),
        provider: a.provider.clone(),
        response_id: a.response_id.clone(),
        duration_ms: Some(a.duration.as_millis() as u64),
        http_status: a.http_status.map(u64::from),
        error_class: a.error_class.map(str::to_owned),
        ..crate::session::event::ModelCall::default()
    }
}

/// The `assistant_message` event of a usable reply: the whole of what the model said.
pub fn assistant_message(
    role: crate::brain::client::Role,
    scope: &crate::session::event::Scope,
    r: &crate::brain::client::Reply,
) -> crate::session::event::AssistantMessage {
    crate::session::event::AssistantMessage {
        scope: scope.clone(),
        role: Some(role.as_str().into()),
        content: r.content.clone(),
        reasoning: r.reasoning.clone(),
        tool_calls: Some(r.tool_calls.clone()),
        ..crate::session::event::AssistantMessage::default()
    }
}
