//! `harrow control ID OP`: send an operator command to a session.

use super::{SessionArg, UsageError};
use crate::session::control::{Command, Op, send};
use crate::session::status::SessionStatus;
use crate::session::{lock, overview, timestamp};
use color_eyre::eyre::Result;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// What to do.
    #[arg(value_enum)]
    pub op: Op,
    /// The task a decision or note is about (default: the task waiting for the operator, or
    /// for a note, whichever task runs next).
    #[arg(long, value_name = "T-NNN")]
    pub task: Option<String>,
    /// Why: required for approve, reject, force-accept, skip and fail.
    #[arg(long)]
    pub reason: Option<String>,
    /// The note for the next attempt, or the guidance that goes with a reject.
    #[arg(long)]
    pub text: Option<String>,
    /// With stop: stop now, cancelling the model call or tool in flight (the task is left
    /// unfinished and restarts on resume).
    #[arg(long)]
    pub now: bool,
}

pub fn control(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let o = overview(&found.dir, &found.id)?;
    // A run that holds its lock is harrow's, even before its first event is written.
    let starting = o.summary.harrow.events == 0 && crate::session::lock::is_locked(&found.dir);
    if o.summary.harrow.format != "harrow" && !starting {
        return Err(UsageError(format!(
            "{} is a Tilth session; harrow can show and replay it but not steer it",
            found.id
        ))
        .into());
    }
    if o.status == SessionStatus::Done {
        return Err(UsageError(format!(
            "session {} is finished ({}); there is nothing left to control",
            found.id, o.status
        ))
        .into());
    }
    let reason = args.reason.clone().filter(|r| !r.trim().is_empty());
    if args.op.needs_reason() && reason.is_none() {
        return Err(UsageError(format!(
            "{} needs --reason: say why, it is recorded with the decision",
            args.op.as_str()
        ))
        .into());
    }
    let text = args.text.clone().filter(|t| !t.trim().is_empty());
    if args.op == Op::Note && text.is_none() {
        return Err(UsageError(
            "note needs --text: what the worker should know on its next attempt".into(),
        )
        .into());
    }
    let op = if args.now && args.op == Op::Stop { Op::StopNow } else { args.op };
    send(
        &found.dir,
        &Command {
            op,
            task: args.task.clone(),
            reason,
            text,
            ts: timestamp::now(),
            source: "cli".into(),
        },
    )?;
    let when = if lock::is_locked(&found.dir) && op.is_urgent() {
        "the run acts on it at once, stopping what is in flight".to_owned()
    } else if lock::is_locked(&found.dir) {
        "the run applies it at the next task boundary".to_owned()
    } else {
        format!("it applies when the session resumes (`harrow resume {}`)", found.id)
    };
    println!("Sent {} to session {}; {when}.", op.as_str(), found.id);
    Ok(ExitCode::SUCCESS)
}
