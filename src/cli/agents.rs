//! `harrow agents`: which known ACP agents are on this machine, and how to get the others;
//! and what a run or a resume makes of `--agent` and `[agent]`.

use super::UsageError;
use super::run_flags::{ModelArgs, RunFlags};
use crate::agent::known::{KNOWN, on_path};
use crate::config::Config;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn agents(_args: &Args) -> color_eyre::eyre::Result<ExitCode> {
    let mut out = super::out::stdout();
    writeln!(
        out,
        "ACP agents harrow can run as its worker (`harrow run PLAN --agent COMMAND`, or [agent] command in the config):"
    )?;
    for known in KNOWN {
        let command = known.command.join(" ");
        let program = known.command.first().copied().unwrap_or_default();
        match on_path(program) {
            Some(path) => {
                writeln!(out, "  {:<12} {command:<28} found: {}", known.name, path.display())?;
            }
            None => {
                writeln!(out, "  {:<12} {command:<28} not found: {}", known.name, known.install)?;
            }
        }
        writeln!(out, "  {:<12} {:<28} reaches its model with {}", "", "", known.login)?;
    }
    writeln!(
        out,
        "Any other agent that speaks ACP on its stdio runs the same way; see \"Bring your agent\" in the README."
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

impl RunFlags {
    /// The ACP agent of the run: `--agent`, else `[agent]` in the configuration, else (a
    /// resume) the one the session's start `recorded` — a command read from a session folder,
    /// so taken only when the operator `trust`s the folder. Its settings are checked before
    /// anything is made.
    pub fn agent(
        &self,
        config: &Config,
        recorded: Option<&serde_json::Value>,
        trust: bool,
    ) -> Result<Option<crate::agent::AgentSpec>, UsageError> {
        let recorded_line =
            (recorded.and_then(|r| r["agent"]["command"].as_array())).map(|parts| {
                let parts: Vec<&str> = parts.iter().filter_map(serde_json::Value::as_str).collect();
                shlex::try_join(parts).unwrap_or_default()
            });
        let spec = match (self.agent.as_deref(), &config.agent, recorded_line) {
            (Some(line), _, _) => Some(
                crate::agent::AgentSpec::from_command_line(line, config.agent.as_ref())
                    .map_err(UsageError)?,
            ),
            (None, Some(ours), _) => Some(ours.clone()),
            (None, None, Some(line)) if trust => {
                Some(crate::agent::AgentSpec::from_command_line(&line, None).map_err(UsageError)?)
            }
            (None, None, Some(line)) => {
                return Err(UsageError(crate::printable::line(&format!(
                    "the session records the ACP agent `{line}`, which your configuration does not name; it would run as a command on this machine. Name it under [agent] in your configuration, pass --agent COMMAND, or pass --trust-recorded to start the recorded one"
                ))));
            }
            (None, None, None) => None,
        };
        if let Some(spec) = &spec {
            crate::agent::setup::check(spec).map_err(UsageError)?;
            let program = spec.command.first().map_or("", String::as_str);
            let found = if program.contains('/') {
                Path::new(program).is_file()
            } else {
                crate::agent::known::on_path(program).is_some()
            };
            if !found {
                return Err(UsageError(
                    crate::agent::AgentError::NotFound(program.to_owned()).to_string(),
                ));
            }
        }
        Ok(spec)
    }
}

/// The model settings of a run whose worker is an ACP agent when `agent` says so: no worker
/// model is needed, so the evaluator's stands in where none is given (the worker's endpoint
/// is never called; the learnings role, when asked for, uses it).
pub fn models_for(m: &ModelArgs, agent: bool) -> ModelArgs {
    let mut m = m.clone();
    if agent && m.worker_model.is_none() && set("HARROW_WORKER_MODEL").is_none() {
        m.worker_model = m.evaluator_model.clone().or_else(|| set("HARROW_EVALUATOR_MODEL"));
    }
    m
}

fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
