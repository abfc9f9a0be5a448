//! `harrow resume ID`: continue a session after a clean stop or a crash.

use super::run::{ModelArgs, RunFlags, brain_config, drive};
use super::{SessionArg, UsageError};
use crate::brain::client::Brain;
use crate::config::Config;
use crate::hands::Hands;
use crate::hands::validators::{ValidatorSpec, presets};
use crate::hands::workspace::Workspace;
use crate::harness::plan;
use crate::harness::resume::restore;
use crate::harness::run::{Parts, Restart, Run};
use crate::session::event::{LogRepaired, SessionResume, SessionStart};
use crate::session::writer::{SessionWriter, WriterError};
use color_eyre::eyre::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    #[command(flatten)]
    pub flags: RunFlags,
}

/// Each role's base URL and model as the session recorded them at its start, unless a flag or
/// the environment says otherwise now; the overrides are returned so the resume can log them.
/// Keys are never recorded: each role's comes from its own variable, as at the start.
fn recorded_models(flags: &ModelArgs, start: &SessionStart) -> (ModelArgs, Vec<String>) {
    let recorded = |role: &str, key: &str| {
        start.endpoints.as_ref().and_then(|e| e[role][key].as_str()).map(str::to_owned)
    };
    let mut models = flags.clone();
    let mut overrides = Vec::new();
    let mut take = |slot: &mut Option<String>, var: &str, was: Option<String>, what: &str| {
        let now = slot.clone().or_else(|| std::env::var(var).ok().filter(|v| !v.trim().is_empty()));
        match now {
            Some(now) if was.as_ref().is_some_and(|w| *w != now) => {
                overrides.push(format!("{what}: {} → {now}", was.unwrap_or_default()));
            }
            Some(_) => {}
            None => slot.clone_from(&was),
        }
    };
    take(
        &mut models.base_url,
        "HARROW_BASE_URL",
        recorded("worker", "base_url").or(start.base_url.clone()),
        "worker base URL",
    );
    take(
        &mut models.worker_model,
        "HARROW_WORKER_MODEL",
        recorded("worker", "model").or(start.worker_model.clone()),
        "worker model",
    );
    take(
        &mut models.evaluator_base_url,
        "HARROW_EVALUATOR_BASE_URL",
        recorded("evaluator", "base_url"),
        "evaluator base URL",
    );
    take(
        &mut models.evaluator_model,
        "HARROW_EVALUATOR_MODEL",
        recorded("evaluator", "model").or(start.evaluator_model.clone()),
        "evaluator model",
    );
    (models, overrides)
}

pub fn resume(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let restored = restore(&found.dir, &found.id)
        .map_err(|e| UsageError(format!("{}: {e}", found.dir.display())))?;
    if restored.last_stop.as_deref() == Some("all_done") {
        println!("Session {} finished every task; nothing to resume.", found.id);
        return Ok(ExitCode::SUCCESS);
    }
    let (mut writer, repair) = SessionWriter::open(&found.dir).map_err(|e| match e {
        WriterError::Lock(l) => UsageError(l.to_string()),
        other => UsageError(other.to_string()),
    })?;
    if let Some(dead) = writer.took_over_from() {
        println!(
            "The run that held session {} (pid {} on {}, started {}) is gone; this resume takes over.",
            found.id,
            dead.pid,
            if dead.host.is_empty() { "this machine" } else { dead.host.as_str() },
            if dead.started_at.is_empty() {
                "at an unknown time"
            } else {
                dead.started_at.as_str()
            }
        );
    }
    let resumed_at = std::fs::metadata(crate::session::dir::SessionDir::new(&found.dir).events())
        .map_or(0, |m| m.len());
    if let Some(r) = repair {
        writer.append(&LogRepaired {
            cut_bytes: Some(r.cut_bytes),
            at_offset: Some(r.at_offset),
            ..LogRepaired::default()
        })?;
    }
    let start = restored.start.clone();
    let need = |v: Option<String>, what: &str| {
        v.ok_or_else(|| {
            UsageError(format!(
                "the session's start does not record its {what}; it cannot be resumed"
            ))
        })
    };
    let worktree = PathBuf::from(need(start.worktree.clone(), "worktree")?);
    if !worktree.exists() {
        return Err(UsageError(format!(
            "the worktree {} is gone (cleansed or removed); there is nothing to resume on",
            worktree.display()
        ))
        .into());
    }
    let workspace = Workspace {
        source: PathBuf::from(need(start.source.clone(), "source repository")?),
        worktree,
        branch: need(start.branch.clone(), "branch")?,
        base: need(start.base_commit.clone(), "base commit")?,
    };
    let removed_locks = workspace
        .clear_stale_locks(&found.dir.join("lanes"))
        .map_err(|e| UsageError(format!("cannot clear the interrupted run's git locks: {e}")))?;
    for lock in &removed_locks {
        println!("Removed {}, a git lock the interrupted run left.", lock.display());
    }
    let plan_path = PathBuf::from(need(start.plan.clone().or(start.feature_dir.clone()), "plan")?);
    let plan = plan::load(&plan_path).map_err(|e| UsageError(e.to_string()))?;
    let (config, _) =
        Config::load(args.flags.config.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    let (models, overrides) = recorded_models(&args.flags.models, &start);
    // A demo session answers from the bundled script again, on a fresh loopback port; the
    // script is keyed by task and attempt, so it picks up where the log says the run was.
    let demo = start.demo.clone();
    let model = demo
        .as_ref()
        .map(|d| super::demo::start_model(d["fast"].as_bool().unwrap_or(false)))
        .transpose()?;
    let config_for_brain = match &model {
        Some((_, server)) => {
            crate::brain::client::BrainConfig::new(super::demo::endpoints(&server.base_url()))
        }
        None => brain_config(&models, &config)?,
    };
    let brain = Brain::new(config_for_brain).map_err(|e| UsageError(e.to_string()))?;
    let hands = Hands::new(&workspace.worktree, Some(&found.dir), config.hands.to_hands_config())
        .map_err(|e| UsageError(e.to_string()))?;
    let recorded: Option<Vec<ValidatorSpec>> =
        start.validators.as_ref().and_then(|v| serde_json::from_value(v.clone()).ok());
    let mut opts = args.flags.options(start.limits.as_ref());
    opts.no_eval |= start.no_eval == Some(true);
    opts.validators = if args.flags.no_validators {
        Vec::new()
    } else {
        config.validators.clone().or(recorded).unwrap_or_else(|| presets(&workspace.worktree))
    };
    let parts = Parts {
        id: found.id.clone(),
        dir: found.dir.clone(),
        writer,
        plan,
        workspace,
        hands,
        brain,
        opts,
    };
    let mut run = Run::resumed(parts, &restored);
    let lanes = run.opts.lanes > 1 && run.plan.is_graph();
    let (honoured, repaired, restart) = if lanes {
        // Each lane's task goes on in its own worktree; accepted work lands from its kept
        // attempt, never from a worktree.
        (Vec::new(), run.recover_lanes(&restored)?, Restart::Kept)
    } else {
        let honoured = run.honour_accepts(&restored)?;
        let repaired = run.repair_accepted(&restored)?;
        (honoured, repaired, run.prepare_restart(&restored)?)
    };
    let pending = run.unfinished();
    let kept = restart == Restart::Kept;
    let (how, discarded) = match restart {
        Restart::Kept if lanes => ("in lanes, each task in its own worktree".into(), Vec::new()),
        Restart::Kept => ("with its work as it stands, waiting for a decision".into(), Vec::new()),
        Restart::FromJudged { attempt } => {
            (format!("from the work its attempt {attempt} had when judged"), Vec::new())
        }
        Restart::FromLastCommit { discarded } => ("from the last commit".into(), discarded),
    };
    // A failed task is worked again only when it does not wait for a decision.
    let retried: Vec<String> = pending
        .first()
        .filter(|t| !kept && restored.states.get(*t).is_some_and(|s| s.as_str() == "failed"))
        .cloned()
        .into_iter()
        .collect();
    let mut event = SessionResume {
        session_id: Some(found.id.clone()),
        host: Some(crate::session::lock::hostname()),
        last_stop: restored.last_stop.clone(),
        retried: Some(retried),
        pending: Some(pending.clone()),
        unwound_commit: Some(false),
        plan: Some(match pending.first() {
            Some(first) => format!("continue with {first} {how}"),
            None => "nothing left to do".into(),
        }),
        ..SessionResume::default()
    };
    event.repaired_commits = Some(serde_json::json!(repaired));
    event.honoured_accepts = Some(serde_json::json!(honoured));
    if !overrides.is_empty() {
        event.endpoint_overrides = Some(serde_json::json!(overrides));
    }
    event.discarded = Some(serde_json::json!(discarded));
    if !removed_locks.is_empty() {
        event.removed_locks = Some(serde_json::json!(removed_locks));
    }
    run.writer.append(&event)?;
    let (id, dir) = (run.id.clone(), run.dir.clone());
    let code =
        if args.flags.headless { drive(run, resumed_at) } else { super::run::drive_console(run) }?;
    Ok(super::ship::after_run(&id, &dir, &args.flags, code, &config.forge))
}
