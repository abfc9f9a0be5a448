//! `harrow push` and `harrow pr`: a session's branch to a remote, and a pull request for it.

use super::{SessionArg, UsageError};
use crate::config::Config;
use crate::ship::pr::{PrOptions, PrOutcome};
use crate::ship::push::{PushOptions, Pushed};
use crate::ship::{Shipment, pr, push};
use color_eyre::eyre::Result;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;

/// Where the branch goes, shared by both verbs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ToArgs {
    /// The remote: a name in the session's repository, or an address (default: origin).
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
    /// The branch's name on the remote (default: the session branch's own name).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Ship although some tasks did not finish: what was accepted goes.
    #[arg(long)]
    pub partial: bool,
    /// Overwrite the remote branch when it moved on, but only if it is still where harrow
    /// last pushed it (or where the remote-tracking branch says).
    #[arg(long)]
    pub force_with_lease: bool,
    /// Ship from this clone of the project: for a session whose clone is gone (another
    /// machine's, a finished Job's). The session branch is brought into it from the session
    /// folder, and the clone's remotes and credentials are used.
    #[arg(long, value_name = "CLONE")]
    pub repo: Option<std::path::PathBuf>,
    /// With --repo: take the branch from a session folder another user owns or others may
    /// write (a Job's, on a shared folder), as it is there.
    #[arg(long, requires = "repo")]
    pub trust_recorded: bool,
}

impl ToArgs {
    pub fn options(&self) -> PushOptions {
        PushOptions {
            remote: self.remote.clone(),
            branch: self.branch.clone(),
            partial: self.partial,
            force_with_lease: self.force_with_lease,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub target: SessionArg,
    #[command(flatten)]
    pub to: ToArgs,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PrArgs {
    #[command(flatten)]
    pub target: SessionArg,
    #[command(flatten)]
    pub to: ToArgs,
    /// Open it as a draft.
    #[arg(long)]
    pub draft: bool,
    /// The branch to merge into (default: the remote's default branch).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The session, refused in one line (exit 2) when it is running or, without `--partial`,
/// unfinished.
fn shipment(target: &SessionArg, to: &ToArgs) -> Result<Shipment> {
    let found = target.resolve()?;
    let mut ship = Shipment::read(&found).map_err(|e| UsageError(e.to_string()))?;
    ship.check_finished(to.partial).map_err(|e| UsageError(e.to_string()))?;
    if let Some(clone) = &to.repo {
        super::elsewhere::refuse_foreign(&found, to.trust_recorded)?;
        ship.move_to(clone).map_err(|e| UsageError(e.to_string()))?;
    }
    Ok(ship)
}

pub fn push_verb(args: &PushArgs) -> Result<ExitCode> {
    let ship = shipment(&args.target, &args.to)?;
    let pushed = push::push(&ship, &args.to.options())?;
    let mut out = super::out::stdout();
    if args.json {
        writeln!(out, "{}", json!({ "session": ship.id, "push": pushed_json(&pushed) }))?;
    } else {
        writeln!(out, "{}", pushed.describe())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn pr_verb(args: &PrArgs) -> Result<ExitCode> {
    let ship = shipment(&args.target, &args.to)?;
    let (config, _) = Config::load(None).map_err(|e| UsageError(e.to_string()))?;
    let opts = PrOptions {
        push: args.to.options(),
        draft: args.draft,
        base: args.base.clone(),
        forge: config.forge,
    };
    let outcome = pr::open(&ship, &opts)?;
    let mut out = super::out::stdout();
    if args.json {
        writeln!(out, "{}", json!({ "session": ship.id, "pull_request": outcome_json(&outcome) }))?;
    } else {
        for line in outcome_lines(&outcome) {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `run --push` / `--pr` (and `resume`'s): ships a run that ended with every task finished,
/// and with `--json` ends with one JSON line. The exit status is the run's, or failure when
/// shipping failed.
pub fn after_run(
    id: &str,
    dir: &std::path::Path,
    flags: &super::run_flags::RunFlags,
    code: ExitCode,
    forge: &crate::config::ForgeSection,
) -> ExitCode {
    let found = crate::session::discover::Found::at(dir, id);
    let mut report = json!({ "session": id, "dir": dir, "success": code == ExitCode::SUCCESS });
    let mut code = code;
    if flags.push || flags.pr {
        match ship_finished(&found, flags, forge) {
            Ok((lines, shipped)) => {
                for line in lines {
                    println!("{}", super::format::terminal_line(&line));
                }
                if let Some(r) = report.as_object_mut() {
                    r.extend(shipped);
                }
            }
            Err(e) => {
                eprintln!("harrow: {}", super::format::terminal_line(&e));
                report["ship_error"] = json!(e);
                code = ExitCode::FAILURE;
            }
        }
    }
    if flags.json {
        println!("{report}");
    }
    code
}

/// Pushes (and opens the pull request) when every task finished; otherwise says why not.
fn ship_finished(
    found: &crate::session::discover::Found,
    flags: &super::run_flags::RunFlags,
    forge: &crate::config::ForgeSection,
) -> Result<(Vec<String>, serde_json::Map<String, Value>), String> {
    let ship = Shipment::read(found).map_err(|e| e.to_string())?;
    if let Err(e) = ship.check_finished(false) {
        return Err(format!("not shipped: {e}"));
    }
    let push_options = PushOptions::default();
    let mut shipped = serde_json::Map::new();
    if flags.pr {
        let opts = PrOptions { push: push_options, forge: forge.clone(), ..PrOptions::default() };
        let outcome = pr::open(&ship, &opts).map_err(|e| e.to_string())?;
        shipped.insert("pull_request".into(), outcome_json(&outcome));
        Ok((outcome_lines(&outcome), shipped))
    } else {
        let pushed = push::push(&ship, &push_options).map_err(|e| e.to_string())?;
        shipped.insert("push".into(), pushed_json(&pushed));
        Ok((vec![pushed.describe()], shipped))
    }
}

/// What a person reads after a pull request was asked for; the last line is the address.
pub fn outcome_lines(outcome: &PrOutcome) -> Vec<String> {
    match outcome {
        PrOutcome::Opened { forge, url, number, pushed, cut, notices } => {
            let mut lines = vec![pushed.describe()];
            lines.push(format!("opened {} #{number} on {}", forge.noun(), forge.name()));
            if *cut {
                lines.push(format!(
                    "the record was cut to {}'s limit; the note under it says where the rest is",
                    forge.name()
                ));
            }
            lines.extend(notices.iter().map(|n| format!("note: {n}")));
            lines.push(url.clone());
            lines
        }
        PrOutcome::ByHand { forge, compare_url, body_file, pushed, token_var } => vec![
            pushed.describe(),
            format!(
                "${token_var} is not set, so no {} was opened; its description is in {} — paste it on this page:",
                forge.noun(),
                body_file.display()
            ),
            compare_url.clone(),
        ],
    }
}

pub fn pushed_json(p: &Pushed) -> Value {
    json!({
        "remote": p.remote, "url": p.url, "branch": p.branch, "sha": p.sha,
        "forced": p.forced, "already_there": p.already_there,
    })
}

pub fn outcome_json(outcome: &PrOutcome) -> Value {
    match outcome {
        PrOutcome::Opened { forge, url, number, pushed, cut, notices } => json!({
            "forge": forge.name(), "url": url, "number": number, "cut": cut, "notices": notices,
            "push": pushed_json(pushed),
        }),
        PrOutcome::ByHand { forge, compare_url, body_file, pushed, token_var } => json!({
            "forge": forge.name(), "url": Value::Null, "compare_url": compare_url,
            "body_file": body_file, "missing_token": token_var, "push": pushed_json(pushed),
        }),
    }
}
