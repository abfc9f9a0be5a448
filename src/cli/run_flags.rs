//! The switches `run` and `resume` share: the models to talk to, and the run's limits and
//! ways, as flags over what a resumed session recorded, over the defaults.

// The argument docs are `--help` text, shown verbatim: backticks there would be noise.
#![allow(clippy::doc_markdown)]

use crate::harness::run::{Caps, OnCap, RunOptions};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// OpenAI-compatible base URL for every role (default: $HARROW_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The worker's model (default: $HARROW_WORKER_MODEL).
    #[arg(long, value_name = "MODEL")]
    pub worker_model: Option<String>,
    /// The evaluator's model (default: $HARROW_EVALUATOR_MODEL, else the worker's).
    #[arg(long, value_name = "MODEL")]
    pub evaluator_model: Option<String>,
    /// A separate base URL for the evaluator (default: $HARROW_EVALUATOR_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub evaluator_base_url: Option<String>,
}

/// What `run` and `resume` share.
// Command-line switches are booleans by nature.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, clap::Args)]
pub struct RunFlags {
    /// Print one line per significant event instead of opening the console.
    #[arg(long)]
    pub headless: bool,
    /// The configuration file (default: $HARROW_CONFIG, else the platform config dir).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Worker iterations per task [default: 32; on resume, the session's].
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u64>,
    /// Evaluator rounds per task before --on-cap applies [default: 3; on resume, the
    /// session's].
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u64>,
    /// At the rework cap: fail the task, or accept it flagged below the bar [default: fail;
    /// on resume, the session's].
    #[arg(long, value_enum)]
    pub on_cap: Option<OnCap>,
    /// Run without the evaluator: work is accepted unreviewed, and every record says so.
    #[arg(long)]
    pub no_eval: bool,
    /// What an accept gets when a criterion has no witness harrow checked: `required` sends it
    /// back to the evaluator once, then holds the task; `warn` lands it, marked; `off` takes
    /// the evaluator's word [default: `[gate] evidence`, else required; on resume, the
    /// session's].
    #[arg(long, value_enum)]
    pub evidence: Option<crate::harness::evidence::EvidenceMode>,
    /// Run without validators: the evaluator is the only gate.
    #[arg(long)]
    pub no_validators: bool,
    /// After each accepted task, ask the model whether it taught something worth writing
    /// down; proposals go to proposed-learnings.md in the session folder, for you to review.
    #[arg(long)]
    pub learnings: bool,
    /// Hold accepts to a score: an accept the evaluator scores below N (0–100) is a reject.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub score_threshold: Option<u8>,
    /// Stop between tasks after this many minutes (fractions too: 0.5 is 30 s).
    #[arg(long, value_name = "MIN", value_parser = minutes)]
    pub max_minutes: Option<f64>,
    /// Stop between tasks after this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop between tasks after this many dollars.
    #[arg(long, value_name = "USD")]
    pub max_dollars: Option<f64>,
    /// With --headless: when a task is held for a person, wait for a decision from `harrow
    /// control` instead of stopping (the console always waits).
    #[arg(long)]
    pub wait_for_operator: bool,
    /// Start without first checking each role's endpoint, key and model.
    #[arg(long)]
    pub no_preflight: bool,
    /// Work up to N ready tasks of a graph plan at once, each in its own worktree [default:
    /// `[run] lanes` in the config, else 1; on resume, the session's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=32))]
    pub lanes: Option<u64>,
    /// When every task finished: push the session branch to origin (as `harrow push`).
    #[arg(long)]
    pub push: bool,
    /// When every task finished: push, and open a pull request (as `harrow pr`); its address
    /// is the last line printed.
    #[arg(long)]
    pub pr: bool,
    /// With --headless: end with one JSON line saying how the run ended and where it was
    /// shipped.
    #[arg(long)]
    pub json: bool,
    /// Work the tasks with an ACP agent instead of harrow's own worker: its command line
    /// ("codex-acp", "gemini --experimental-acp"); its other settings come from [agent] in
    /// the config [on resume: the session's agent].
    #[arg(long, value_name = "COMMAND")]
    pub agent: Option<String>,
}

/// A number of minutes: finite, not negative, at most a year.
fn minutes(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(m) if m.is_finite() && (0.0..=525_600.0).contains(&m) => Ok(m),
        _ => Err(format!("'{text}' is not a number of minutes (say 30, or 0.5 for 30 s)")),
    }
}

impl RunFlags {
    /// The run's options: these flags over `recorded` (a resumed session's own limits, as
    /// its start logged them), over the defaults.
    pub fn options(&self, recorded: Option<&serde_json::Value>) -> RunOptions {
        let defaults = RunOptions::default();
        let at = |key: &str| recorded.and_then(|r| r[key].as_u64());
        let on_cap =
            recorded.and_then(|r| serde_json::from_value::<OnCap>(r["on_cap"].clone()).ok());
        RunOptions {
            max_iterations: self
                .max_iterations
                .or_else(|| at("max_iterations_per_task"))
                .unwrap_or(defaults.max_iterations),
            max_attempts: self
                .max_attempts
                .or_else(|| at("max_evaluator_calls_per_task"))
                .unwrap_or(defaults.max_attempts)
                .max(1),
            on_cap: self.on_cap.or(on_cap).unwrap_or(defaults.on_cap),
            no_eval: self.no_eval,
            learnings: self.learnings,
            wait_for_operator: self.wait_for_operator || !self.headless,
            score_threshold: self
                .score_threshold
                .map(f64::from)
                .or_else(|| recorded.and_then(|r| r["score_threshold"].as_f64())),
            caps: Caps {
                wall_clock: self.max_minutes.map(|m| Duration::from_secs_f64(m * 60.0)),
                tokens: self.max_tokens,
                dollars: self.max_dollars,
            },
            lanes: self.lanes.or_else(|| at("lanes")).unwrap_or(defaults.lanes).clamp(1, 32),
            evidence: self
                .evidence
                .or_else(|| {
                    recorded.and_then(|r| serde_json::from_value(r["evidence"].clone()).ok())
                })
                .unwrap_or(defaults.evidence),
            witness_test_secs: recorded
                .and_then(|r| r["witness_test_secs"].as_u64())
                .unwrap_or(defaults.witness_test_secs)
                .clamp(1, 3600),
            ..RunOptions::default()
        }
    }
}
