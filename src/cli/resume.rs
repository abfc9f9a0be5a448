//! `harrow resume ID`: continue a session after a clean stop or a crash.

use super::run::{brain_config, drive};
use super::run_flags::{ModelArgs, RunFlags};
use super::{SessionArg, UsageError};
use crate::brain::client::Brain;
use crate::config::Config;
use crate::hands::Hands;
use crate::hands::validators::{ValidatorSpec, presets};
use crate::hands::workspace::Workspace;
use crate::harness::plan;
use crate::harness::resume::restore;
use crate::harness::run::{Parts, Restart, Run};
use crate::session::discover::Found;
use crate::session::event::{LogRepaired, SessionResume, SessionStart};
use crate::session::state::{StopReason, TaskState};
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
    /// Use the endpoints, models, validators and worktree the session recorded where your own
    /// flags, environment and configuration name none. A session folder is only data: without
    /// this, a resume sends keys only to endpoints you configured and runs only validators you
    /// named.
    #[arg(long)]
    pub trust_recorded: bool,
    /// Go on in this clone of the project: for a session whose clone is gone (another
    /// machine's, a finished Job's) or that you move on purpose. The session branch and its
    /// kept attempts come from the session folder; the worktree there keeps its files. An
    /// address (https://…, ssh://…, git@host:path) is cloned first, into harrow's data folder,
    /// with `$HARROW_GIT_TOKEN` or your SSH key.
    #[arg(long, value_name = "CLONE|URL")]
    pub repo: Option<String>,
}

/// The recorded settings a resume takes instead of the operator's, only with this flag.
const TRUST_FLAG: &str = crate::session::TRUST_RECORDED;

/// Each role's base URL and model as the operator gives them now — flags, then the
/// environment, then the configuration, as `run` takes them — compared with what the session
/// recorded at its start. Where they differ, the operator's win and the difference is returned
/// so the resume can log it; where the operator gives none, the recorded one is taken only with
/// `trust` (else the resume is refused, naming the flag). Keys are never recorded: each role's
/// comes from its own variable and goes only to the operator's endpoints.
fn resume_models(
    flags: &ModelArgs,
    start: &SessionStart,
    config: &Config,
    trust: bool,
) -> std::result::Result<(ModelArgs, Vec<String>), UsageError> {
    let recorded = |role: &str, key: &str| {
        start.endpoints.as_ref().and_then(|e| e[role][key].as_str()).map(str::to_owned)
    };
    let env = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let c = &config.models;
    // What the operator names, each with whether it was named for that role or follows from
    // another (the evaluator takes the worker's endpoint and model unless told otherwise).
    let base = flags.base_url.clone().or_else(|| env("HARROW_BASE_URL")).or(c.base_url.clone());
    let worker_model = (flags.worker_model.clone())
        .or_else(|| env("HARROW_WORKER_MODEL"))
        .or(c.worker_model.clone());
    let own_evaluator_base =
        flags.evaluator_base_url.clone().or_else(|| env("HARROW_EVALUATOR_BASE_URL"));
    let own_evaluator_model =
        flags.evaluator_model.clone().or_else(|| env("HARROW_EVALUATOR_MODEL"));
    let evaluator_base = (own_evaluator_base.clone().map(|b| (b, true)))
        .or_else(|| base.clone().map(|b| (b, false)));
    let evaluator_model = (own_evaluator_model.clone().map(|m| (m, true)))
        .or_else(|| worker_model.clone().map(|m| (m, false)));
    let recorded_base = recorded("worker", "base_url").or(start.base_url.clone());
    let recorded_model = recorded("worker", "model").or(start.worker_model.clone());
    // A recorded evaluator that followed the worker's endpoint (or model) follows the
    // operator's now, as it would in a new run.
    let followed = |was: &Option<String>, worker: &Option<String>| {
        was.as_ref().is_none_or(|w| Some(w) == worker.as_ref())
    };
    let evaluator_base = evaluator_base
        .map(|(b, own)| (b, own || followed(&recorded("evaluator", "base_url"), &recorded_base)));
    let evaluator_model = evaluator_model.map(|(m, own)| {
        let was = recorded("evaluator", "model").or(start.evaluator_model.clone());
        (m, own || followed(&was, &recorded_model))
    });
    let slots = [
        ("worker base URL", "--base-url", base.map(|b| (b, true)), recorded_base.clone()),
        ("worker model", "--worker-model", worker_model.map(|m| (m, true)), recorded_model.clone()),
        (
            "evaluator base URL",
            "--evaluator-base-url",
            evaluator_base,
            recorded("evaluator", "base_url"),
        ),
        (
            "evaluator model",
            "--evaluator-model",
            evaluator_model,
            recorded("evaluator", "model").or(start.evaluator_model.clone()),
        ),
    ];
    let mut models = flags.clone();
    let mut overrides = Vec::new();
    let mut unset = Vec::new();
    for (n, (what, flag, now, was)) in slots.into_iter().enumerate() {
        let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        match (now, was) {
            (Some((now, _)), Some(was)) if same(&now, &was) => {}
            // Named by the operator for this role (or following the worker's, as the recorded
            // one did): theirs, and the change is logged.
            (Some((now, true)), Some(was)) => overrides.push(format!("{what}: {was} → {now}")),
            (_, Some(was)) if trust => {
                let slot = match n {
                    0 => &mut models.base_url,
                    1 => &mut models.worker_model,
                    2 => &mut models.evaluator_base_url,
                    _ => &mut models.evaluator_model,
                };
                *slot = Some(was);
            }
            (Some((now, false)), Some(was)) => {
                unset.push(format!("{what} {was} where yours would be {now} ({flag})"));
            }
            (None, Some(was)) => unset.push(format!("{what} {was} ({flag})")),
            _ => {}
        }
    }
    if !unset.is_empty() {
        return Err(UsageError(crate::printable::line(&format!(
            "the session records {}, which your flags, environment and configuration do not name; harrow sends keys and work only to endpoints you configure: name them, or pass {TRUST_FLAG} to use the recorded ones",
            unset.join(", ")
        ))));
    }
    Ok((models, overrides))
}

/// The validators a resume runs: the operator's configuration, else the demo's own or the
/// presets for the repository — what `run` would choose now. The session's recorded ones run
/// only when they are those, or with `trust`: a recorded command runs on this machine.
fn resume_validators(
    recorded: Option<Vec<ValidatorSpec>>,
    ours: Option<Vec<ValidatorSpec>>,
    fallback: Vec<ValidatorSpec>,
    trust: bool,
) -> std::result::Result<Vec<ValidatorSpec>, UsageError> {
    if let Some(ours) = ours {
        return Ok(ours);
    }
    // Fewer checks than the operator's own (a run started with --no-validators) run nothing
    // new; a command of the recorded ones that the operator never named does.
    let foreign: Vec<&ValidatorSpec> =
        recorded.iter().flatten().filter(|v| !fallback.contains(v)).collect();
    match recorded {
        Some(_) if !foreign.is_empty() && !trust => {
            let names: Vec<String> =
                foreign.iter().map(|v| format!("{} ({})", v.name, v.command)).collect();
            Err(UsageError(crate::printable::line(&format!(
                "the session records validators your configuration does not name: {}; they would run as commands on this machine. Name them under [[validators]] in your configuration (or --config FILE), pass --no-validators, or pass {TRUST_FLAG} to run the recorded ones",
                names.join(", ")
            ))))
        }
        Some(recorded) => Ok(recorded),
        None => Ok(fallback),
    }
}

/// Takes the session's lock (saying so when it takes over from a dead run), cuts a torn tail
/// back and logs the repair. Returns the writer and where the log ended before this resume.
fn open_log(found: &Found) -> Result<(SessionWriter, u64)> {
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
    Ok((writer, resumed_at))
}

/// A field the session's start must record for a resume.
fn need(v: Option<String>, what: &str) -> Result<String, UsageError> {
    v.ok_or_else(|| {
        UsageError(format!("the session's start does not record its {what}; it cannot be resumed"))
    })
}

/// The workspace the start records, refused (unless the operator says they put it there) when
/// its worktree lies outside the session's folder and this machine's work folder (`work`, the
/// session's own under `[run] work_dir`): the worker's tools would work there.
fn recorded_workspace(
    start: &SessionStart,
    found: &Found,
    work: Option<&std::path::Path>,
    trust_recorded: bool,
) -> Result<Workspace> {
    let worktree = PathBuf::from(need(start.worktree.clone(), "worktree")?);
    let within = |p: &std::path::Path, d: &std::path::Path| matches!((p.canonicalize(), d.canonicalize()), (Ok(p), Ok(d)) if p.starts_with(&d));
    let ours = within(&worktree, &found.dir) || work.is_some_and(|w| within(&worktree, w));
    if worktree.exists() && !ours && !trust_recorded {
        return Err(UsageError(crate::printable::line(&format!(
            "the session records its worktree at {}, outside its folder {}; the worker's tools would work there. Pass {TRUST_FLAG} if that is where you put it",
            worktree.display(),
            found.dir.display()
        )))
        .into());
    }
    Ok(Workspace {
        source: PathBuf::from(need(start.source.clone(), "source repository")?),
        worktree,
        branch: need(start.branch.clone(), "branch")?,
        base: need(start.base_commit.clone(), "base commit")?,
    })
}

/// The run's options on resume: the flags over the limits the start recorded, this machine's
/// loop checks, and each role's window — this machine's settings, else what the start recorded.
fn resumed_options(
    args: &Args,
    config: &crate::config::Config,
    start: &SessionStart,
    learned: Option<u64>,
) -> crate::harness::run::RunOptions {
    let recorded =
        |role: &str| start.endpoints.as_ref().and_then(|e| e[role]["context_window"].as_u64());
    let mut opts = args.flags.options(start.limits.as_ref());
    opts.no_eval |= start.no_eval == Some(true);
    opts.loop_repeats = config.repeats.repeats.unwrap_or(opts.loop_repeats);
    opts.loop_returns = config.repeats.returns.unwrap_or(opts.loop_returns);
    // A window a server named during the run (a compaction fitted to it) outranks the one the
    // start recorded: the resumed tasks fit to it from their first turn.
    opts.worker_window = learned.or(config.models.context_window).or_else(|| recorded("worker"));
    opts.compact_at = config.models.compact_at.unwrap_or(opts.compact_at);
    opts.evaluator_window = (config.models.evaluator_context_window)
        .or(config.models.context_window)
        .or_else(|| recorded("evaluator"));
    opts
}

/// How the first unfinished task goes on, in words, and what was thrown away for it.
fn restart_words(restart: Restart, lanes: bool) -> (String, Vec<String>) {
    match restart {
        Restart::Kept if lanes => ("in lanes, each task in its own worktree".into(), Vec::new()),
        Restart::Kept => ("with its work as it stands, waiting for a decision".into(), Vec::new()),
        Restart::FromJudged { attempt } => {
            (format!("from the work its attempt {attempt} had when judged"), Vec::new())
        }
        Restart::FromLastCommit { discarded } => ("from the last commit".into(), discarded),
        Restart::FromRewind => {
            ("from where the operator rewound it, not judged since".into(), Vec::new())
        }
    }
}

pub fn resume(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let restored = restore(&found.dir, &found.id)
        .map_err(|e| UsageError(format!("{}: {e}", found.dir.display())))?;
    if restored.last_stop == Some(StopReason::AllDone) {
        println!("Session {} finished every task; nothing to resume.", found.id);
        return Ok(ExitCode::SUCCESS);
    }
    let (writer, resumed_at) = open_log(&found)?;
    let start = restored.start.clone();
    let (config, _) =
        Config::load(args.flags.config.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    let work = config.run.work_root().map(|root| root.join(&found.id));
    let recorded = recorded_workspace(&start, &found, work.as_deref(), args.trust_recorded)?;
    let (workspace, moved) = super::elsewhere::place(
        recorded,
        args.repo.as_deref(),
        &found,
        work.as_deref(),
        args.trust_recorded,
    )?;
    if let Some(m) = &moved {
        println!("{}", super::format::terminal_line(&super::elsewhere::said(&found.id, m)));
    }
    let plan_path = PathBuf::from(need(start.plan.clone().or(start.feature_dir.clone()), "plan")?);
    let plan_path = match crate::harness::plan_copy::copy_path(&plan_path, &found.dir) {
        Some(copy) if !plan_path.exists() && copy.exists() => {
            println!(
                "The plan {} is not on this machine; the session's copy {} is used.",
                plan_path.display(),
                copy.display()
            );
            copy
        }
        _ => plan_path,
    };
    let mut plan = plan::load(&plan_path).map_err(|e| UsageError(e.to_string()))?;
    keep_recorded_best_of(&mut plan, start.plan_tasks.as_ref());
    let demo = start.demo.clone();
    let agent = args.flags.agent(&config, start.limits.as_ref(), args.trust_recorded)?;
    // A demo session answers from the bundled script on loopback again: no key goes anywhere.
    let (models, overrides) = if demo.is_some() {
        (args.flags.models.clone(), Vec::new())
    } else {
        // With an agent as the worker, the evaluator's model stands in for the worker's, as
        // it did when the run started.
        let flags = super::agents::models_for(&args.flags.models, agent.is_some());
        resume_models(&flags, &start, &config, args.trust_recorded)?
    };
    // A demo session answers from the bundled script again, on a fresh loopback port; the
    // script is keyed by task and attempt, so it picks up where the log says the run was.
    let model = demo
        .as_ref()
        .map(|d| super::demo::start_model(d["fast"].as_bool().unwrap_or(false)))
        .transpose()?;
    let learned = writer.summary().harrow.worker_window_learned;
    let mut opts = resumed_options(args, &config, &start, learned);
    let mut config_for_brain = match &model {
        Some((_, server)) => {
            crate::brain::client::BrainConfig::new(super::demo::endpoints(&server.base_url()))
        }
        None => brain_config(&super::agents::models_for(&models, agent.is_some()), &config)?,
    };
    config_for_brain.know_windows(opts.worker_window, opts.evaluator_window);
    let brain = Brain::new(config_for_brain).map_err(|e| UsageError(e.to_string()))?;
    let hands = Hands::new(&workspace.worktree, Some(&found.dir), config.hands.to_hands_config())
        .map_err(|e| UsageError(e.to_string()))?;
    let recorded: Option<Vec<ValidatorSpec>> =
        start.validators.as_ref().and_then(|v| serde_json::from_value(v.clone()).ok());
    let fallback =
        if demo.is_some() { vec![super::demo::validator()] } else { presets(&workspace.worktree) };
    opts.agent = agent;
    opts.validators = if args.flags.no_validators {
        Vec::new()
    } else {
        resume_validators(recorded, config.validators.clone(), fallback, args.trust_recorded)?
    };
    let removed_locks = workspace
        .clear_stale_locks(&workspace.lanes_folder())
        .map_err(|e| UsageError(format!("cannot clear the interrupted run's git locks: {e}")))?;
    for lock in &removed_locks {
        println!("Removed {}, a git lock the interrupted run left.", lock.display());
    }
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
    let lanes = run.facts().opts.lanes > 1 && run.facts().plan.is_graph();
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
    let (how, discarded) = restart_words(restart, lanes);
    // A failed task is worked again only when it does not wait for a decision.
    let retried: Vec<String> = pending
        .first()
        .filter(|t| !kept && restored.state(t) == TaskState::Failed)
        .cloned()
        .into_iter()
        .collect();
    let mut event = SessionResume {
        session_id: Some(found.id.clone()),
        host: Some(crate::session::lock::hostname()),
        last_stop: restored.last_stop.as_ref().map(|r| r.as_str().to_owned()),
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
    if let Some(m) = &moved {
        event.source = Some(m.workspace.source.display().to_string());
        event.moved_from.clone_from(&start.source);
    }
    run.writer.append(&event)?;
    let (id, dir) = (run.facts().id.clone(), run.facts().dir.clone());
    let code =
        if args.flags.headless { drive(run, resumed_at) } else { super::run::drive_console(run) }?;
    Ok(super::ship::after_run(&id, &dir, &args.flags, code, &config.forge))
}

/// A run's `--best-of` goes on for the tasks whose file does not say, as `session_start`
/// recorded each task's.
fn keep_recorded_best_of(plan: &mut plan::Plan, recorded: Option<&serde_json::Value>) {
    for entry in recorded.and_then(serde_json::Value::as_array).into_iter().flatten() {
        let best_of = entry["best_of"].as_u64().and_then(|n| u32::try_from(n).ok());
        let task = plan.tasks.iter_mut().find(|t| entry["id"].as_str() == Some(t.id.as_str()));
        if let (Some(task), Some(n)) = (task, best_of.filter(|n| plan::BEST_OF.contains(n))) {
            task.best_of.get_or_insert(n);
        }
    }
}
