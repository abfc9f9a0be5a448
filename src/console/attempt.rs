//! Which attempt a verdict judged, and its diff: the attempt's kept commit against the task's
//! starting commit (what the evaluator saw), or against the attempt before it (what the rework
//! changed). For Tilth's sessions, the diff Tilth put in its evaluator prompt.

use super::diff::{self, DiffView};
use super::player::Player;
use crate::session::event::{EventKind, Payload};
use std::path::PathBuf;

/// The kept commit and starting commit a verdict (or validator run) names.
fn commits(player: &mut Player, pos: usize) -> Option<(Option<String>, Option<String>)> {
    let event = player.fetch(pos).ok()?;
    match event.payload {
        Payload::Verdict(v) => Some((v.attempt_commit, v.base_commit)),
        Payload::ValidatorRun(v) => Some((v.attempt_commit, None)),
        _ => None,
    }
}

/// Where the session's commits can be read: its worktree, else the repository it came from.
fn repositories(player: &mut Player) -> Vec<PathBuf> {
    player.session_start().map_or_else(Vec::new, |s| {
        [s.worktree, s.source].into_iter().flatten().map(PathBuf::from).collect()
    })
}

/// A diff to show: read from the log already, or two commits git must compare (which can
/// take a while on a big repository, so the console does it as a job).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffSource {
    Ready(DiffView),
    Commits { repositories: Vec<PathBuf>, from: String, to: String, title: String, task: String },
}

impl DiffSource {
    /// The diff itself; git's work happens here.
    pub fn load(self) -> Result<DiffView, String> {
        match self {
            DiffSource::Ready(view) => Ok(view),
            DiffSource::Commits { repositories, from, to, title, task } => {
                let mut view = diff::between(&repositories, &from, &to, &title)?;
                view.task = Some(task);
                Ok(view)
            }
        }
    }
}

/// The diff of the attempt the verdict at `pos` judged: against the task's start, or with
/// `since_previous` against the task's attempt judged before it.
pub fn judged_diff(
    player: &mut Player,
    pos: usize,
    since_previous: bool,
) -> Result<DiffSource, String> {
    let task = player.task_of(pos).unwrap_or_default().to_owned();
    let (kept, base) = commits(player, pos).ok_or("that row is not a verdict")?;
    let Some(kept) = kept else {
        return tilth_diff(player, pos, &task).map(DiffSource::Ready);
    };
    let attempt = player.fetch(pos).ok().and_then(|e| e.payload.scope()?.attempt).unwrap_or(1);
    if since_previous {
        let trail = player.view.trail(&task).unwrap_or_default();
        let previous = trail.verdicts.iter().rev().find(|p| **p < pos).copied();
        let Some(previous) = previous else {
            return Err(format!(
                "{task} attempt {attempt} is its first judged attempt: d shows it"
            ));
        };
        let before = commits(player, previous).and_then(|(k, _)| k);
        let before = before.ok_or(
            "the attempt before it was not kept (a session from before harrow kept attempts)",
        )?;
        let title = format!("{task} attempt {attempt} since the attempt before it");
        return Ok(DiffSource::Commits {
            repositories: repositories(player),
            from: before,
            to: kept,
            title,
            task,
        });
    }
    let base = base.ok_or("the verdict does not name the task's starting commit")?;
    let title = format!("{task} attempt {attempt} as judged");
    Ok(DiffSource::Commits {
        repositories: repositories(player),
        from: base,
        to: kept,
        title,
        task,
    })
}

/// The diff Tilth showed its evaluator before the verdict at `pos`: the `diff` block of the
/// task's last evaluator prompt.
fn tilth_diff(player: &mut Player, pos: usize, task: &str) -> Result<DiffView, String> {
    let mut at = pos;
    while let Some(found) = player.find_kind(at, false, EventKind::PromptAssembled) {
        if let Ok(event) = player.fetch(found)
            && let Payload::PromptAssembled(p) = &event.payload
            && crate::session::vocabulary::CallRole::Evaluator.is(p.role.as_deref())
            && event.task_id() == Some(task)
        {
            let content = p.content.as_deref().unwrap_or("");
            let block = content.split("```diff").nth(1).and_then(|rest| rest.split("```").next());
            let Some(block) = block else { break };
            return Ok(diff::from_patch(
                block,
                &format!("{task}: the diff Tilth showed its evaluator"),
            ));
        }
        let Some(next) = found.checked_sub(1) else { break };
        at = next;
    }
    Err("this session did not keep its attempts, and no evaluator prompt with a diff is logged"
        .into())
}
