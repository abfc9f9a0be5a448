//! An external coding agent as the worker, driven over ACP (the Agent Client Protocol:
//! JSON-RPC 2.0 on the agent's stdio).
//!
//! The agent — Codex, Claude Code, Gemini CLI, opencode, anything with an ACP adapter — runs
//! its own loop with its own tools and model, inside harrow's sandbox. harrow gives it the
//! task's brief as a prompt, records what it reports (`session/update`) as the same events
//! its own worker writes, serves the requests it makes (permissions, and files and terminals
//! through harrow's hands for agents that use them), and when it ends its turn asks it for a
//! case. From the case on, everything is the gate's: validators, the evaluator, the verdict,
//! rework as the agent's next prompt, landing.

pub mod client;
pub mod known;
pub mod process;
pub mod setup;
pub mod stderr_tail;
pub mod updates;
pub mod wire;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How harrow answers an agent's `session/request_permission`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Permissions {
    /// Allow once: the sandbox, the git guard and the gate are what bound the agent.
    #[default]
    Allow,
    /// Refuse every request (the agent does what it may do without asking).
    Deny,
    /// Hold each request for the operator (`a` / `r` in the console, `harrow control ID
    /// allow` / `deny`); the agent waits, and is not taken for hung meanwhile.
    Ask,
}

/// The agent a run uses as its worker: `[agent]` in the configuration, or `--agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The program and its arguments, e.g. `["codex-acp"]` or `["gemini", "--experimental-acp"]`.
    pub command: Vec<String>,
    /// Variables passed through by name from harrow's environment, besides the built-in
    /// allow-list; a credential never passes this way (see `keys`).
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Variables set to a value given here (no credentials: see `keys`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The agent's keys: each of its variables set from one of harrow's sealed key variables
    /// (`OPENAI_API_KEY = "HARROW_AGENT_API_KEY"`), never from harrow's own endpoints' keys.
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
    /// A folder whose files are copied into the agent's private home when it starts (its
    /// login, its configuration). The copy is the agent's; the folder is never written.
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// How permission requests are answered.
    #[serde(default)]
    pub permissions: Permissions,
    /// Seconds the agent may take to answer `initialize` and `session/new`.
    #[serde(default = "default_start_secs")]
    pub start_secs: u64,
    /// Seconds the agent may go without a word during a turn before it is taken for hung.
    #[serde(default = "default_quiet_secs")]
    pub quiet_secs: u64,
}

fn default_start_secs() -> u64 {
    60
}

fn default_quiet_secs() -> u64 {
    600
}

impl AgentSpec {
    /// A spec for a command line (`--agent "codex-acp -c model=…"`), with the configuration's
    /// other settings when it has an `[agent]` section.
    pub fn from_command_line(line: &str, config: Option<&AgentSpec>) -> Result<AgentSpec, String> {
        let command = shlex::split(line).filter(|c| !c.is_empty()).ok_or_else(|| {
            format!(
                "--agent {}: not a command line (quotes unbalanced, or empty)",
                crate::printable::line(line)
            )
        })?;
        let mut spec = config.cloned().unwrap_or_else(|| AgentSpec {
            command: Vec::new(),
            pass_env: Vec::new(),
            env: BTreeMap::new(),
            keys: BTreeMap::new(),
            home: None,
            permissions: Permissions::default(),
            start_secs: default_start_secs(),
            quiet_secs: default_quiet_secs(),
        });
        spec.command = command;
        Ok(spec)
    }

    /// The agent's name for people: its program's file name.
    pub fn name(&self) -> String {
        let program = self.command.first().map_or("agent", String::as_str);
        crate::printable::line(program.rsplit('/').next().unwrap_or(program))
    }

    /// What a session records of the agent so a resume starts the same one: the command and
    /// the names it is given, never a value.
    pub fn recorded(&self) -> serde_json::Value {
        serde_json::json!({
            "command": self.command,
            "pass_env": self.pass_env,
            "env": self.env.keys().collect::<Vec<_>>(),
            "keys": self.keys,
            "permissions": self.permissions,
        })
    }
}

/// Why the agent could not do its part.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(
        "the agent's command {0:?} was not found (is it installed and on PATH? `harrow agents` lists the known ones and how to install them)"
    )]
    NotFound(String),
    #[error("the agent could not be started: {0}")]
    Start(std::io::Error),
    #[error("{0}")]
    Wire(#[from] wire::WireError),
    #[error("the agent ended ({status}){}", said(.stderr))]
    Exited { status: String, stderr: Vec<String> },
    #[error("the agent sent nothing for {secs} s {doing}{}", said(.stderr))]
    Hung { secs: u64, doing: &'static str, stderr: Vec<String> },
    #[error("the agent refused {method}: {message}")]
    Refused { method: &'static str, message: String },
    #[error("the agent's answer to {method} is not what ACP says: {why}")]
    BadAnswer { method: &'static str, why: String },
}

impl AgentError {
    /// Whether trying again may help (a crash, a hang) rather than a setup to fix.
    pub fn is_transient(&self) -> bool {
        matches!(self, AgentError::Exited { .. } | AgentError::Hung { .. })
    }
}

/// The agent's last stderr lines, for an error's message.
fn said(lines: &[String]) -> String {
    if lines.is_empty() {
        "; it printed nothing on stderr".into()
    } else {
        format!("; its stderr ended: {}", lines.join(" / "))
    }
}
