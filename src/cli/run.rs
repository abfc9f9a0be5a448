//! `harrow run PLAN`: start a session on a repository and drive the loop to the end.

// The argument docs are `--help` text, shown verbatim: backticks there would be noise.
#![allow(clippy::doc_markdown)]

use super::UsageError;
use super::format::terminal_line;
use super::printer::Printer;
use super::run_flags::{ModelArgs, RunFlags};
use crate::brain::client::{Brain, BrainConfig, BrainError, Endpoint, Role};
use crate::config::Config;
use crate::hands::programs;
use crate::hands::session_store::SessionStore;
use crate::hands::validators::{ValidatorSpec, presets};
use crate::hands::workspace::Workspace;
use crate::hands::{Hands, HandsConfig};
use crate::harness::plan;
use crate::harness::run::{Parts, Run, RunOptions};
use crate::session::event::SessionStart;
use crate::session::writer::SessionWriter;
use crate::session::{discover, timestamp};
use color_eyre::eyre::{Result, WrapErr};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A feature folder (overview.md + T-NNN-*.md) or a prd.json.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// The git repository to work on (default: the current folder).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Work each task's first attempt N times at once (2–8), each on its own worktree, and
    /// land the best judged one; a task's own `best_of:` wins.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=8))]
    pub best_of: Option<u32>,
    #[command(flatten)]
    pub flags: RunFlags,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Builds the per-role endpoints from flags, then the environment, then the configuration.
pub fn endpoints(m: &ModelArgs, config: &Config) -> Result<BTreeMap<Role, Endpoint>, UsageError> {
    let c = &config.models;
    let base = m.base_url.clone().or_else(|| env("HARROW_BASE_URL")).or_else(|| c.base_url.clone());
    let worker_model = m
        .worker_model
        .clone()
        .or_else(|| env("HARROW_WORKER_MODEL"))
        .or_else(|| c.worker_model.clone());
    let mut missing = Vec::new();
    if base.is_none() {
        missing.push("HARROW_BASE_URL (or --base-url)");
    }
    if worker_model.is_none() {
        missing.push("HARROW_WORKER_MODEL (or --worker-model)");
    }
    let (Some(base), Some(worker_model)) = (base, worker_model) else {
        return Err(UsageError(format!(
            "missing model settings: {}; `harrow demo` runs without any",
            missing.join(", ")
        )));
    };
    let key = crate::keys::var("HARROW_API_KEY");
    let evaluator_base = m
        .evaluator_base_url
        .clone()
        .or_else(|| env("HARROW_EVALUATOR_BASE_URL"))
        .unwrap_or_else(|| base.clone());
    // A key goes only to the endpoint it is for: the worker's key serves the evaluator only
    // when both roles talk to the same endpoint.
    let same_endpoint = evaluator_base.trim_end_matches('/') == base.trim_end_matches('/');
    let evaluator = Endpoint {
        base_url: evaluator_base,
        api_key: crate::keys::var("HARROW_EVALUATOR_API_KEY")
            .or_else(|| key.clone().filter(|_| same_endpoint)),
        model: m
            .evaluator_model
            .clone()
            .or_else(|| env("HARROW_EVALUATOR_MODEL"))
            .unwrap_or_else(|| worker_model.clone()),
    };
    let prep_base = env("HARROW_PREP_BASE_URL").unwrap_or_else(|| base.clone());
    let prep_same = prep_base.trim_end_matches('/') == base.trim_end_matches('/');
    let prep = Endpoint {
        base_url: prep_base,
        api_key: crate::keys::var("HARROW_PREP_API_KEY")
            .or_else(|| key.clone().filter(|_| prep_same)),
        model: env("HARROW_PREP_MODEL").unwrap_or_else(|| worker_model.clone()),
    };
    let worker = Endpoint { base_url: base, api_key: key, model: worker_model };
    Ok(BTreeMap::from([
        (Role::Worker, worker.clone()),
        (Role::Learnings, worker),
        (Role::Evaluator, evaluator),
        (Role::Prep, prep),
    ]))
}

/// The brain's configuration: endpoints, timeouts and prices.
pub fn brain_config(m: &ModelArgs, config: &Config) -> Result<BrainConfig, UsageError> {
    let mut brain = BrainConfig::new(endpoints(m, config)?);
    brain.connect_timeout = Duration::from_secs(config.models.connect_timeout_secs.max(1));
    brain.read_timeout = Duration::from_secs(config.models.read_timeout_secs.max(1));
    brain.prices.clone_from(&config.prices);
    brain.max_output_tokens = config.models.max_output_tokens;
    brain.stream = config.models.stream;
    brain.max_reply_bytes = config.models.max_reply_bytes.max(1024);
    brain.max_tool_calls = config.models.max_tool_calls.clamp(1, 4096);
    brain.max_reply_time = Duration::from_secs(config.models.max_reply_secs.max(1));
    brain.max_attempts = config.models.max_tries.max(1);
    brain.backoff_base = Duration::from_millis(config.models.retry_base_ms);
    if let Some(n) = config.models.context_window {
        brain.context_windows.insert(Role::Worker, n);
    }
    if let Some(n) = config.models.evaluator_context_window.or(config.models.context_window) {
        brain.context_windows.insert(Role::Evaluator, n);
    }
    for (role, section, models) in [
        (Role::Worker, "worker", &config.models.worker),
        (Role::Evaluator, "evaluator", &config.models.evaluator),
    ] {
        let list = fallbacks(&|n| format!("[models.{section}] fallback {n}"), &models.fallback)?;
        if !list.is_empty() {
            brain.fallbacks.insert(role, list);
        }
    }
    let worker = &config.models.worker;
    brain.candidates = fallbacks(&|n| format!("[models.worker] best_of {n}"), &worker.best_of)?;
    match (&worker.escalate_to, worker.escalate_after_rejects) {
        (Some(to), Some(n)) if n >= 1 => {
            let label = |_| "[models.worker] escalate_to".to_owned();
            let to = fallbacks(&label, std::slice::from_ref(to))?;
            brain.escalation = to.into_iter().next().map(|e| (e, n));
        }
        (None, None) => {}
        _ => {
            return Err(UsageError(
                "[models.worker] escalate_to and escalate_after_rejects go together (a model, and after how many rejects of a task, from 1)".into(),
            ));
        }
    }
    Ok(brain)
}

/// The model's family, for telling whether two models are one maker's line: the letters its
/// name (after any `vendor/`) starts with — `qwen` for `qwen/qwen3-coder`, `gpt` for `gpt-5`.
fn family(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    name.chars().take_while(char::is_ascii_alphabetic).collect()
}

/// What the start says when an evaluator fallback is of the worker's own model family: the
/// seeds keep the evaluator independent of the worker, so taking that away is never silent.
fn independence_notices(brain: &BrainConfig) -> Vec<String> {
    let Some(worker) = brain.endpoints.get(&Role::Worker) else { return Vec::new() };
    let worker_family = family(&worker.model);
    (brain.fallbacks.get(&Role::Evaluator).into_iter().flatten())
        .filter(|e| !worker_family.is_empty() && family(&e.model) == worker_family)
        .map(|e| {
            crate::printable::line(&format!(
                "the evaluator's fallback {} is of the worker's model family ({worker_family}): when it takes over, the verdicts come from the worker's own kind of model",
                e.model
            ))
        })
        .collect()
}

/// Endpoints named in the configuration (a role's fallbacks, the worker's escalation), each
/// with the key its variable holds — a variable named and not set is refused here, not found
/// out when the endpoint is needed; `label` names each in a refusal.
fn fallbacks(
    label: &dyn Fn(usize) -> String,
    listed: &[crate::config::FallbackEndpoint],
) -> Result<Vec<Endpoint>, UsageError> {
    let mut list = Vec::new();
    for (n, f) in listed.iter().enumerate() {
        let at = label(n + 1);
        let scheme = f.base_url.trim_start().get(..8).unwrap_or("").to_ascii_lowercase();
        if !(scheme.starts_with("http://") || scheme.starts_with("https://")) {
            return Err(UsageError(crate::printable::line(&format!(
                "{at}: base_url {} is not an http(s) address",
                f.base_url
            ))));
        }
        if let Some(var) = f.api_key_env.as_deref().filter(|v| !crate::keys::is_key_var(v)) {
            return Err(UsageError(crate::printable::line(&format!(
                "{at}: api_key_env = {var}: name it HARROW_<NAME>_API_KEY (harrow seals its keys away from the worker's tools by that form)"
            ))));
        }
        let api_key = match &f.api_key_env {
            Some(var) => Some(crate::keys::var(var).ok_or_else(|| {
                UsageError(crate::printable::line(&format!(
                    "{at}: its key variable {var} is not set (export it, or leave api_key_env out for a server without a key)"
                )))
            })?),
            None => None,
        };
        list.push(Endpoint { base_url: f.base_url.clone(), api_key, model: f.model.clone() });
    }
    Ok(list)
}

/// Everything needed to start a session, decided before anything is created.
#[derive(Debug)]
pub struct Start {
    pub plan: plan::Plan,
    pub repo: PathBuf,
    pub hands: HandsConfig,
    pub validators: Option<Vec<crate::hands::validators::ValidatorSpec>>,
    pub brain: BrainConfig,
    pub opts: RunOptions,
    pub sessions_dir: PathBuf,
    /// Where the session's worktree and lanes go (`<root>/<id>/`) instead of its folder.
    pub work_root: Option<PathBuf>,
    /// Each role's context window, where it is known (recorded in `session_start`).
    pub windows: Vec<(Role, crate::brain::preflight::Window)>,
    /// `harrow demo` records itself in `session_start` (`{"fast": bool}`).
    pub demo: Option<serde_json::Value>,
}

/// Whether the toolchains the validators run start where validators run (the sandbox, its
/// environment): a rustup `cargo` that finds no toolchain there, say, would otherwise fail every
/// submit and be read as the worker's fault. Each known toolchain is asked its version once.
fn validators_start(validators: &[ValidatorSpec], hands: &Hands) -> Result<(), String> {
    for (validator, probe) in programs::probes(validators) {
        let outcome = hands
            .run_command(probe, Duration::from_secs(30), 4_000, None)
            .map_err(|e| format!("validator '{validator}' cannot be started: {e}"))?;
        if outcome.success() {
            continue;
        }
        let how = if outcome.timed_out {
            "did not answer within 30 s".to_owned()
        } else {
            outcome
                .exit_code
                .map_or_else(|| "was killed".to_owned(), |c| format!("failed (exit {c})"))
        };
        let said: Vec<&str> =
            outcome.output.lines().map(str::trim).filter(|l| !l.is_empty()).take(2).collect();
        let config = crate::config::config_path(None)
            .map_or_else(|| "the config file".to_owned(), |p| p.display().to_string());
        return Err(crate::printable::line(&format!(
            "validator '{validator}' cannot run where validators run (sandbox: {}): `{probe}` {how}: {}; make the toolchain reachable there, or set [[validators]] in {config} (or pass --no-validators)",
            hands.isolation.kind(),
            said.join(" / ")
        )));
    }
    Ok(())
}

/// Creates the session folder and worktree, logs `session_start`, and returns the run.
pub fn create_session(start: Start) -> Result<Run> {
    let top = Workspace::source_top(&start.repo).map_err(|e| UsageError(e.to_string()))?;
    let validators = start.validators.unwrap_or_else(|| presets(&top));
    if let Some(m) = programs::first_missing(&validators, &top) {
        let config = crate::config::config_path(None)
            .map_or_else(|| "the config file".to_owned(), |p| p.display().to_string());
        return Err(UsageError(format!(
            "validator '{}' needs {}, which is not installed: install it, or set [[validators]] in {config} (or pass --no-validators)",
            m.validator, m.program
        ))
        .into());
    }
    let independence = independence_notices(&start.brain);
    let mut brain = start.brain;
    brain.know_windows(start.opts.worker_window, start.opts.evaluator_window);
    let brain = Brain::new(brain).map_err(|e| UsageError(e.to_string()))?;
    let id = timestamp::new_session_id();
    let dir = start.sessions_dir.join(&id);
    let writer = SessionWriter::create(&dir).wrap_err("cannot create the session folder")?;
    // The worktree and the lanes' worktrees (builds and all) live in one folder: the
    // session's own, or this machine's work folder.
    let work = start.work_root.as_ref().map_or_else(|| dir.clone(), |root| root.join(&id));
    let (workspace, mut notices) =
        match Workspace::create(&start.repo, &work.join("workspace"), &id) {
            Ok(w) => w,
            Err(e) => {
                drop(writer);
                let _ = std::fs::remove_dir_all(&dir);
                return Err(UsageError(e.to_string()).into());
            }
        };
    notices.extend(independence);
    for n in &notices {
        eprintln!("harrow: {n}");
    }
    // A start that fails leaves nothing behind: no folder, worktree or branch.
    let undo = |writer: SessionWriter, workspace: &Workspace| {
        drop(writer);
        let _ = Workspace::remove_worktree(Some(&workspace.source), &workspace.worktree, &work);
        let _ = Workspace::delete_branch(&workspace.source, &workspace.branch);
        let _ = std::fs::remove_dir_all(&dir);
        if work != dir {
            let _ = std::fs::remove_dir(&work);
        }
    };
    let store = SessionStore::of(&dir);
    if let Err(e) = store.copy_branch_from(&workspace, &workspace.branch) {
        undo(writer, &workspace);
        return Err(UsageError(format!(
            "cannot copy the session branch into {}: {e}",
            store.path().display()
        ))
        .into());
    }
    if let Err(e) = crate::harness::plan_copy::keep_copy(&start.plan.source, &dir) {
        undo(writer, &workspace);
        return Err(UsageError(e.to_string()).into());
    }
    let hands = match Hands::new(&workspace.worktree, Some(&dir), start.hands) {
        Ok(h) => h,
        Err(e) => {
            undo(writer, &workspace);
            return Err(UsageError(e.to_string()).into());
        }
    };
    if let Err(why) = validators_start(&validators, &hands) {
        undo(writer, &workspace);
        return Err(UsageError(why).into());
    }
    let mut opts = start.opts;
    opts.validators = validators;
    let worker = brain.endpoint(Role::Worker).cloned();
    let evaluator = brain.endpoint(Role::Evaluator).cloned();
    let mut run = Run::new(Parts {
        id: id.clone(),
        dir: dir.clone(),
        writer,
        plan: start.plan,
        workspace,
        hands,
        brain,
        opts,
    });
    let mut payload = SessionStart {
        source: Some(run.workspace.source.display().to_string()),
        feature_dir: Some(run.facts().plan.source.display().to_string()),
        feature: Some(run.facts().plan.feature.clone()),
        title: run.facts().plan.title(),
        phase: Some("run".into()),
        worktree: Some(run.workspace.worktree.display().to_string()),
        branch: Some(run.workspace.branch.clone()),
        worker_model: worker.as_ref().map(|e| e.model.clone()),
        evaluator_model: evaluator.as_ref().map(|e| e.model.clone()),
        base_url: worker.as_ref().map(|e| e.base_url.clone()),
        limits: Some(super::start_record::limits(&run.facts().opts)),
        task_count: Some(run.facts().plan.tasks.len() as u64),
        plan: Some(run.facts().plan.source.display().to_string()),
        session_id: Some(id),
        host: Some(crate::session::lock::hostname()),
        base_commit: Some(run.workspace.base.clone()),
        no_eval: Some(run.facts().opts.no_eval),
        plan_tasks: Some(super::start_record::plan_tasks(&run.facts().plan)),
        ..SessionStart::default()
    };
    let roles: serde_json::Map<String, serde_json::Value> = [Role::Worker, Role::Evaluator]
        .iter()
        .filter_map(|r| {
            run.brain.endpoint(*r).map(|e| {
                let mut recorded = serde_json::json!({"base_url": e.base_url, "model": e.model, "key_var": r.key_var()});
                if let Some((_, w)) = start.windows.iter().find(|(role, _)| role == r) {
                    recorded["context_window"] = serde_json::json!(w.tokens);
                    recorded["window_source"] = serde_json::json!(w.source);
                }
                (r.as_str().to_owned(), recorded)
            })
        })
        .collect();
    payload.endpoints = Some(serde_json::Value::Object(roles));
    // A plan written by `harrow prep` names its interview: the run links back to it.
    if let Some(prep) = run.facts().plan.seed.as_deref().and_then(crate::prep::write::prep_session)
    {
        payload.prep_session = Some(prep.to_owned());
    }
    payload.sandbox = Some(run.hands.isolation.kind().to_owned());
    payload.sandbox_detail = Some(run.hands.isolation.describe());
    if let Some(agent) = &run.facts().opts.agent {
        payload.worker_model = Some(format!("{} (ACP agent)", agent.name()));
        payload.sandbox_detail = Some(format!(
            "the ACP agent {} runs under {} with the network open; {}",
            agent.name(),
            run.hands.isolation.kind(),
            run.hands.isolation.describe()
        ));
    }
    payload.validators = Some(serde_json::json!(run.facts().opts.validators));
    payload.notices = Some(notices);
    payload.demo = start.demo;
    run.writer.append(&payload)?;
    Ok(run)
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let flags = &args.flags;
    let (config, _) =
        Config::load(flags.config.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    let mut plan = plan::load(&args.plan).map_err(|e| UsageError(e.to_string()))?;
    if let Some(n) = args.best_of {
        for task in &mut plan.tasks {
            task.best_of.get_or_insert(n);
        }
    }
    let agent = flags.agent(&config, None, false)?;
    if let (Some(_), Some(task)) = (&agent, plan.tasks.iter().find(|t| t.best_of.is_some())) {
        return Err(UsageError(format!(
            "{} asks for best_of, which needs harrow's own worker: leave out --agent, or best_of",
            task.id
        ))
        .into());
    }
    let brain = brain_config(&super::agents::models_for(&flags.models, agent.is_some()), &config)
        .map_err(|e| match &agent {
            Some(_) => UsageError(format!(
                "{}; with an agent as the worker they name the evaluator's endpoint (the agent brings its own model)",
                e.0
            )),
            None => e,
        })?;
    let sessions_dir = discover::harrow_sessions_dir().ok_or_else(|| {
        UsageError("cannot find a data folder for sessions; set HARROW_SESSIONS_DIR".into())
    })?;
    let validators = if flags.no_validators { Some(Vec::new()) } else { config.validators.clone() };
    let windows = if flags.no_preflight {
        Vec::new()
    } else {
        // What can be checked here first: a run on no repository needs no model.
        Workspace::source_top(&args.repo).map_err(|e| UsageError(e.to_string()))?;
        let ask = StartQuestions::new(&brain, flags.no_eval, agent.is_some())?;
        ask.check()?;
        ask.windows()
    };
    let start = Start {
        plan,
        repo: args.repo.clone(),
        hands: config.hands.to_hands_config(),
        validators,
        brain,
        opts: RunOptions {
            lanes: flags.lanes.or(config.run.lanes).unwrap_or(1).clamp(1, 32),
            loop_repeats: config.repeats.repeats.unwrap_or(3),
            loop_returns: config.repeats.returns.unwrap_or(2),
            worker_window: windows.iter().find(|(r, _)| *r == Role::Worker).map(|(_, w)| w.tokens),
            evaluator_window: (windows.iter())
                .find(|(r, _)| *r == Role::Evaluator)
                .map(|(_, w)| w.tokens),
            compact_at: config.models.compact_at.unwrap_or(0.8),
            agent,
            evidence: flags.evidence.or(config.gate.evidence).unwrap_or_default(),
            witness_test_secs: config
                .gate
                .test_secs
                .unwrap_or(crate::harness::evidence::TEST_SECS)
                .clamp(1, 3600),
            ..flags.options(None)
        },
        sessions_dir,
        work_root: config.run.work_root(),
        windows,
        demo: None,
    };
    let run = create_session(start)?;
    let (id, dir) = (run.facts().id.clone(), run.facts().dir.clone());
    let code = if flags.headless { drive(run, 0) } else { drive_console(run) }?;
    Ok(super::ship::after_run(&id, &dir, flags, code, &config.forge))
}

/// One client and one runtime for what a start asks the models: the check of each role and
/// each role's context window share them, and a role whose endpoint is an earlier role's
/// (the same server, model and key) is not asked again.
pub(super) struct StartQuestions {
    brain: Brain,
    runtime: tokio::runtime::Runtime,
    roles: Vec<Role>,
    /// The roles whose window the configuration gives.
    configured: Vec<Role>,
}

impl StartQuestions {
    /// `agent`: an ACP agent works the tasks, so the worker's endpoint is not asked.
    pub(super) fn new(config: &BrainConfig, no_eval: bool, agent: bool) -> Result<StartQuestions> {
        let brain = Brain::new(config.clone()).map_err(|e| UsageError(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let roles = [Role::Worker, Role::Evaluator]
            .into_iter()
            .filter(|r| if *r == Role::Worker { !agent } else { !no_eval })
            .collect();
        let configured = config.context_windows.keys().copied().collect();
        Ok(StartQuestions { brain, runtime, roles, configured })
    }

    /// The earlier role with the same endpoint as `role`, if any.
    fn asked_as(&self, role: Role) -> Option<Role> {
        let endpoint = self.brain.endpoint(role)?;
        self.roles
            .iter()
            .take_while(|r| **r != role)
            .find(|r| self.brain.endpoint(**r) == Some(endpoint))
            .copied()
    }

    /// Checks each role's endpoint, key and model before anything is created, so a wrong
    /// setting is one line and exit 2, never a half-made session.
    pub(super) fn check(&self) -> Result<()> {
        let roles: Vec<Role> = (self.roles.iter().copied())
            .filter(|r| self.brain.endpoint(*r).is_some() && self.asked_as(*r).is_none())
            .collect();
        let checked = roles.iter().try_for_each(|role| {
            let own = self.runtime.block_on(self.brain.preflight(&[*role]));
            match own {
                Err(e) if e.is_transient() => self.fallback_answers(*role, e),
                other => other,
            }
        });
        checked.map_err(|e| {
            let evaluator = e.to_string().starts_with("the evaluator");
            let (url_var, model_var) = if evaluator {
                ("HARROW_EVALUATOR_BASE_URL", "HARROW_EVALUATOR_MODEL")
            } else {
                ("HARROW_BASE_URL", "HARROW_WORKER_MODEL")
            };
            let fix = match &e {
                BrainError::ModelNotFound { .. } => {
                    format!(": set {model_var} to a model it serves")
                }
                BrainError::Unreachable { .. } => {
                    format!(": check {url_var} and that the server is running")
                }
                _ => String::new(),
            };
            UsageError(format!(
                "{e}{fix} (checked before starting; --no-preflight skips the check)"
            ))
        })?;
        Ok(())
    }

    /// A role whose endpoint is down at the start goes on when one of its fallbacks answers:
    /// said on stderr (the first call tries the endpoint again, then goes to the fallback);
    /// else the endpoint's own error stands.
    fn fallback_answers(&self, role: Role, down: BrainError) -> Result<(), BrainError> {
        let answering = (self.brain.fallbacks(role).iter()).find(|fallback| {
            let asked = self.brain.switched(role, fallback);
            asked.is_ok_and(|b| self.runtime.block_on(b.preflight(&[role])).is_ok())
        });
        let Some(fallback) = answering else { return Err(down) };
        eprintln!(
            "harrow: {down}; its fallback {} at {} answers, so the run starts (each call tries the endpoint first, then the fallback)",
            crate::printable::line(&fallback.model),
            crate::printable::line(&crate::keys::scrub(&fallback.base_url)),
        );
        Ok(())
    }

    /// Each role's context window — configured, or asked of its server — before the session
    /// is made, so `session_start` records it and the console can show how full the window
    /// is. What a server answered that is no window is said on stderr and passed over.
    pub(super) fn windows(&self) -> Vec<(Role, crate::brain::preflight::Window)> {
        let mut notices = Vec::new();
        let mut found: Vec<(Role, crate::brain::preflight::Window)> = Vec::new();
        for &role in &self.roles {
            // Only the server's answer is shared: a configured window is its role's own, even
            // on an endpoint another role shares.
            let asked = (self.asked_as(role))
                .filter(|earlier| ![role, *earlier].iter().any(|r| self.configured.contains(r)))
                .map(|earlier| found.iter().find(|(r, _)| *r == earlier).map(|(_, w)| *w));
            let window = match asked {
                Some(answer) => answer,
                None => self.runtime.block_on(self.brain.window(role, &mut notices)),
            };
            found.extend(window.map(|w| (role, w)));
        }
        notices.dedup();
        for n in notices {
            eprintln!("harrow: {}", terminal_line(&n));
        }
        found
    }
}

/// Runs a session with the live console: the loop on a background runtime, the console on
/// the same session folder (the path `watch` takes). Quitting while the run goes on asks
/// whether to stop it at the next task boundary; either way the rest of its events are
/// printed here until it ends.
pub fn drive_console(mut run: Run) -> Result<ExitCode> {
    let dir = run.facts().dir.clone();
    let id = run.facts().id.clone();
    let active = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let running = Arc::clone(&active);
    let loop_thread = std::thread::Builder::new().name("harrow-loop".into()).spawn(move || {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        if let Ok(rt) = &runtime {
            // The console is closed by its own watcher; the message would land on its screen.
            stop_on_termination(rt, &run, false);
        }
        let ended = runtime
            .map_err(color_eyre::Report::from)
            .and_then(|rt| rt.block_on(run.run()).map_err(color_eyre::Report::from));
        let held = run.facts().held_task();
        drop(run);
        running.store(false, Ordering::SeqCst);
        (ended, held)
    })?;
    let mut app =
        crate::console::app::App::open_live(&dir, &id, crate::console::theme::Look::from_user())?;
    app.run_active = Some(Arc::clone(&active));
    let stop_asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    app.stop_asked = Some(Arc::clone(&stop_asked));
    crate::console::run(app, Some(&dir))?;
    if active.load(Ordering::SeqCst) {
        if stop_asked.load(Ordering::SeqCst) {
            println!("harrow: the run stops at the next task boundary; its last events follow");
        } else {
            println!("harrow: the run goes on; watch it again with `harrow watch {id}`");
        }
    }
    let from = std::fs::metadata(crate::session::dir::SessionDir::new(&dir).events())
        .map_or(0, |m| m.len());
    let printer = Printer::start(&dir, from);
    let (ended, held) =
        loop_thread.join().map_err(|_| color_eyre::eyre::eyre!("the run's thread panicked"))?;
    printer.finish();
    let ended = ended.wrap_err("the run stopped on an error writing its session")?;
    println!("session {id}: {} — {}", terminal_line(ended.reason.as_str()), dir.display());
    if let Some(next) = next_steps(&id, &ended, held.as_deref()) {
        println!("{next}");
    }
    Ok(if ended.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a person can decide about a held task, as commands: what a headless run that stopped
/// on a hold ends by saying.
fn decisions(id: &str, task: &str) -> String {
    let task = crate::printable::line(task);
    format!(
        "{task} waits for a decision. Decide with one of:\n  harrow control {id} approve --task {task} --reason \"…\"       land its work as it stands\n  harrow control {id} force-accept --task {task} --reason \"…\"  land it below the bar\n  harrow control {id} reject --task {task} --reason \"…\"        send it back to the worker\n  harrow control {id} review --task {task} --comments FILE --category C   send it back with comments on its lines\n  harrow control {id} rewind --task {task} --to-attempt K --reason \"…\"  set it back to an earlier attempt\n  harrow control {id} retry-eval --task {task}                ask its evaluator again\n  harrow control {id} skip --task {task} --reason \"…\"          leave it undone\nthen `harrow resume {id}` (or `harrow resume {id} --wait-for-operator` to decide while it waits)"
    )
}

/// Stops `run` as the first Ctrl-C does when SIGTERM or SIGHUP arrives (see [`crate::signals`]):
/// the work in flight is cancelled and the run logs its stop. The process's status says which
/// signal it was (`main` maps it).
fn stop_on_termination(runtime: &tokio::runtime::Runtime, run: &Run, say: bool) {
    let (interrupted, cancel) =
        (Arc::clone(&run.facts().interrupted), Arc::clone(&run.hands.cancel));
    runtime.spawn(async move {
        if let Some(number) = crate::signals::termination().await {
            interrupted.store(true, Ordering::SeqCst);
            cancel.raise();
            if say {
                eprintln!(
                    "harrow: {} received: stopping (the work in flight is cancelled)",
                    crate::signals::name(number)
                );
            }
        }
    });
}

/// Runs a session to its end, printing its log from byte `from`, and maps the end to an exit
/// status.
pub fn drive(mut run: Run, from: u64) -> Result<ExitCode> {
    let dir = run.facts().dir.clone();
    let id = run.facts().id.clone();
    let printer = Printer::start(&dir, from);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    // Ctrl-C: the call or command in flight is cancelled and the run stops resumable; a
    // second Ctrl-C leaves at once.
    let (interrupted, cancel) =
        (Arc::clone(&run.facts().interrupted), Arc::clone(&run.hands.cancel));
    runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        interrupted.store(true, Ordering::SeqCst);
        cancel.raise();
        eprintln!("harrow: stopping (the work in flight is cancelled); Ctrl-C again quits at once");
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(130);
        }
    });
    stop_on_termination(&runtime, &run, true);
    let started = Instant::now();
    let ended = runtime.block_on(run.run());
    let held = run.facts().held_task();
    drop(run);
    printer.finish();
    let ended = ended.wrap_err("the run stopped on an error writing its session")?;
    println!("session {id} ({:.1} s): {}", started.elapsed().as_secs_f64(), dir.display());
    if let Some(next) = next_steps(&id, &ended, held.as_deref()) {
        println!("{next}");
    }
    let failed = crate::signals::received().is_some() || !ended.success();
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// What to do after a run ended, when there is something: how to go on with it (a signal, an
/// interrupt, an endpoint that stopped answering) or the decisions a held task waits for.
/// Headless and the console end with the same words.
fn next_steps(id: &str, ended: &crate::harness::run::Ended, held: Option<&str>) -> Option<String> {
    use crate::session::state::StopReason;
    if let Some(number) = crate::signals::received() {
        return Some(format!(
            "stopped by {} (resumable): go on with `harrow resume {id}`",
            crate::signals::name(number)
        ));
    }
    match ended.reason {
        StopReason::ProviderFailure => Some(format!(
            "nothing is lost: go on with `harrow resume {id}` once the endpoint answers, or once the setting the line above names is changed"
        )),
        StopReason::Interrupted => {
            Some(format!("stopped (resumable): go on with `harrow resume {id}`"))
        }
        StopReason::NeedsOperator => held.map(|task| decisions(id, task)),
        _ => None,
    }
}
