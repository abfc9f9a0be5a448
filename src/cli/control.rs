//! `harrow control ID OP`: send an operator command to a session.

use super::{SessionArg, UsageError};
use crate::session::control::{Command, Op, send};
use crate::session::status::SessionStatus;
use crate::session::vocabulary::WrittenBy;
use crate::session::{lock, overview};
use color_eyre::eyre::Result;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  harrow control 9d8329 pause
  harrow control 9d8329 steer --task T-002 \"use the parser in src/parse.rs, not a new one\"
  harrow control 9d8329 queue --task T-003 \"keep the public API as it is\"
  harrow control 9d8329 reject --task T-002 --reason \"the edge case is untested\" --text \"add a test for an empty file\"
  harrow control 9d8329 rewind --task T-002 --to-attempt 1 --reason \"attempt 2 rewrote the parser; keep 1's\"
  harrow control 9d8329 rewind --task T-002 --to-turn 4 --reason \"before it deleted the fixtures\"
  harrow control 9d8329 review --task T-002 --comments review.txt --category weak_test
  harrow control 9d8329 stop --now
  harrow control 9d8329 allow --task T-002

allow and deny answer what a task's ACP agent asked permission for (with `[agent]
permissions = 'ask'`), oldest question first.
steer goes into the worker's conversation before its next model request, while the task
works; queue waits for the task's next attempt (or its first turn, when it has not begun).
rewind sets a task's files back to an attempt as it was judged (or a turn's worktree), keeps
what came after on refs, and its worker goes on from that point of its conversation with your
reason; a task at work is rewound when its attempt ends.
review sends your comments on a task's diff, one `path:line: comment` a line of the file
(src/lib.rs:42: this panics on an empty file), as your verdict: --category C rejects it and
its worker's next attempt gets each comment under the line it is about; --accept lands it.")]
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
    /// The note for the next attempt, the guidance that goes with a reject, or the words of a
    /// steer or queue.
    #[arg(long)]
    pub text: Option<String>,
    /// The words, as the last argument instead of --text.
    #[arg(value_name = "TEXT", conflicts_with = "text")]
    pub words: Option<String>,
    /// With rewind: the attempt to go back to, as it was judged.
    #[arg(long, value_name = "K")]
    pub to_attempt: Option<u64>,
    /// With rewind: the worker turn to go back to (`#N` in the Worker pane; of --to-attempt
    /// when given, else the latest turn N).
    #[arg(long, value_name = "N")]
    pub to_turn: Option<u64>,
    /// With review: the file of comments, one `path:line: comment` a line.
    #[arg(long, value_name = "FILE")]
    pub comments: Option<std::path::PathBuf>,
    /// With review: reject, with this rejection category (as a verdict's; a wrong one is
    /// answered with the six there are).
    #[arg(long, value_name = "C", conflicts_with = "accept")]
    pub category: Option<String>,
    /// With review: accept the work, with the comments.
    #[arg(long)]
    pub accept: bool,
    /// With stop: stop now, cancelling the model call or tool in flight (the task is left
    /// unfinished and restarts on resume). With review or rewind of a task at work: stop its
    /// attempt now and decide, rather than when the attempt ends.
    #[arg(long)]
    pub now: bool,
}

pub fn control(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let o = overview(&found.dir, &found.id)?;
    // A run that holds its lock is harrow's, even before its first event is written.
    let starting = o.summary.harrow.events == 0 && crate::session::lock::is_locked(&found.dir);
    if !WrittenBy::Harrow.is(Some(&o.summary.harrow.format)) && !starting {
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
    let text = args.text.clone().or(args.words.clone()).filter(|t| !t.trim().is_empty());
    if matches!(args.op, Op::Note | Op::Steer | Op::Queue) && text.is_none() {
        return Err(UsageError(format!(
            "{} needs words: the text, as the last argument or with --text",
            args.op.as_str()
        ))
        .into());
    }
    if args.op != Op::Rewind && (args.to_attempt.is_some() || args.to_turn.is_some()) {
        return Err(UsageError(
            "--to-attempt and --to-turn go with rewind (harrow control ID rewind --task T --to-attempt K --reason WHY)".into(),
        )
        .into());
    }
    if args.now && !matches!(args.op, Op::Stop | Op::Review | Op::Rewind) {
        return Err(UsageError("--now goes with stop, review and rewind".into()).into());
    }
    let reviewing = args.comments.is_some() || args.category.is_some() || args.accept;
    if args.op != Op::Review && reviewing {
        return Err(UsageError(
            "--comments, --category and --accept go with review (harrow control ID review --task T --comments FILE --category C)".into(),
        )
        .into());
    }
    let task = match args.op {
        Op::Steer | Op::Queue => Some(word_target(args.op, args.task.as_deref(), &o, &found.id)?),
        Op::Rewind => Some(rewind_target(args, &o, &found)?),
        Op::Review => Some(review_target(args, &o, &found.id)?),
        _ => args.task.clone(),
    };
    let op = if args.now && args.op == Op::Stop { Op::StopNow } else { args.op };
    let mut command = Command::new(
        op,
        task.clone(),
        reason,
        text,
        &crate::session::vocabulary::CommandSource::Cli,
    );
    command.to_attempt = args.to_attempt;
    command.to_turn = args.to_turn;
    command.now = args.now && matches!(op, Op::Review | Op::Rewind);
    if let (Op::Review, Some(task), Some(file)) = (op, &task, &args.comments) {
        command.comments = super::review::comments_for(&found, task, file)?;
        command.category.clone_from(&args.category);
    }
    if matches!(op, Op::Allow | Op::Deny) && !lock::is_locked(&found.dir) {
        return Err(UsageError(format!(
            "session {} is not running: {} answers a running agent's permission request",
            found.id,
            op.as_str()
        ))
        .into());
    }
    send(&found.dir, &command)?;
    let live = lock::is_locked(&found.dir);
    // The task the command is about waits for a person now: a live run applies it at once.
    let waits = (task.clone())
        .or_else(|| o.summary.harrow.waiting_on.clone())
        .and_then(|t| o.summary.harrow.tasks.get(&t).map(|d| d.state.clone()))
        .is_some_and(|s| s == crate::session::state::TaskState::NeedsOperator);
    let decision =
        matches!(op, Op::Approve | Op::Reject | Op::ForceAccept | Op::Skip | Op::RetryEval);
    let when = if op == Op::Steer {
        format!(
            "{} reads it before its worker's next model request (the Worker pane and the log say when)",
            task.as_deref().unwrap_or("the task")
        )
    } else if op == Op::Queue {
        format!(
            "it waits for {}'s next attempt, or its first turn",
            task.as_deref().unwrap_or("the task")
        )
    } else if op == Op::Review && live && args.now {
        format!(
            "the run stops {}'s attempt now and decides it on your review",
            task.as_deref().unwrap_or("the task")
        )
    } else if op == Op::Review && live {
        format!(
            "the run checks it against {}'s diff and decides at once while it waits for a decision, else when its attempt ends — an accept that comes first waits for your review (--now stops the attempt for it)",
            task.as_deref().unwrap_or("the task")
        )
    } else if op == Op::Rewind && live && args.now {
        format!(
            "the run stops {}'s attempt now and rewinds it",
            task.as_deref().unwrap_or("the task")
        )
    } else if op == Op::Rewind && live {
        format!(
            "the run rewinds {} once it is not at work (at once when it waits for a decision; an accept that comes first waits for it)",
            task.as_deref().unwrap_or("the task")
        )
    } else if decision && live && waits {
        "the run waits for this decision and applies it at once".to_owned()
    } else if matches!(op, Op::Allow | Op::Deny) && lock::is_locked(&found.dir) {
        format!(
            "it answers what {}'s agent asked, at once (the log says it, or why not)",
            task.as_deref().unwrap_or("the task at work")
        )
    } else if lock::is_locked(&found.dir) && op.is_urgent() {
        "the run acts on it at once, stopping what is in flight".to_owned()
    } else if lock::is_locked(&found.dir) {
        "the run applies it at the next task boundary".to_owned()
    } else {
        format!("it applies when the session resumes (`harrow resume {}`)", found.id)
    };
    println!("Sent {} to session {}; {when}.", op.as_str(), found.id);
    Ok(ExitCode::SUCCESS)
}

/// The task a decision names, else the one task held for a person: its id, its state and its
/// id as it may be printed; refused in one line (with `usage`) when neither says which.
fn named_or_held(
    named: Option<&str>,
    o: &crate::session::Overview,
    id: &str,
    usage: &str,
) -> Result<(String, crate::session::state::TaskState, String), UsageError> {
    let tasks = &o.summary.harrow.tasks;
    let held: Vec<&String> = (tasks.iter())
        .filter(|(_, t)| t.state == crate::session::state::TaskState::NeedsOperator)
        .map(|(id, _)| id)
        .collect();
    let task = match (named, held.as_slice()) {
        (Some(t), _) => t.to_owned(),
        (None, [one]) => (*one).clone(),
        _ => {
            return Err(UsageError(format!(
                "which task? name it with --task T-NNN (harrow control {id} {usage})"
            )));
        }
    };
    let said = crate::printable::line(&task);
    let Some(state) = tasks.get(&task).map(|t| t.state.clone()) else {
        return Err(UsageError(format!("session {id} has no task {said}")));
    };
    Ok((task, state, said))
}

/// The task a rewind is for (the one named, else the one held), refused in one line when
/// it has settled or its log holds no such state to go back to.
fn rewind_target(
    args: &Args,
    o: &crate::session::Overview,
    found: &crate::session::discover::Found,
) -> Result<String, UsageError> {
    let id = &found.id;
    let usage = "rewind --task T-NNN --to-attempt K --reason WHY";
    let (task, state, said) = named_or_held(args.task.as_deref(), o, id, usage)?;
    if state.is_accepted() {
        return Err(UsageError(format!(
            "{said} is {}: its work is on the session branch, and a rewind does not take landed work back",
            state.as_str()
        )));
    }
    let found_target =
        crate::harness::rewind::find(&found.dir, &task, id, args.to_attempt, args.to_turn)
            .map_err(|e| UsageError(format!("cannot read session {id}'s log: {e}")))?;
    found_target.map(|_| task).map_err(UsageError)
}

/// The task a review is about (the one named, else the one held), with how it decides: a
/// known category or `--accept`, and a comments file.
fn review_target(
    args: &Args,
    o: &crate::session::Overview,
    id: &str,
) -> Result<String, UsageError> {
    if args.comments.is_none() {
        return Err(UsageError(
            "review needs --comments FILE: one `path:line: comment` a line".into(),
        ));
    }
    match args.category.as_deref() {
        None if !args.accept => {
            return Err(UsageError(
                "say what the review decides: --category C to reject (acceptance_gap, weak_test, …) or --accept".into(),
            ));
        }
        Some(c) if crate::session::state::category_meaning(c).is_none() => {
            let known = crate::session::state::Category::names();
            return Err(UsageError(format!(
                "`{}` is not a rejection category; use one of {}",
                crate::printable::line(c),
                known.join(", ")
            )));
        }
        _ => {}
    }
    let usage = "review --task T-NNN --comments FILE --category C";
    let (task, state, said) = named_or_held(args.task.as_deref(), o, id, usage)?;
    if state.is_settled() || state == crate::session::state::TaskState::Pending {
        return Err(UsageError(format!(
            "{said} is {}: there is no work of it waiting to be reviewed",
            state.as_str()
        )));
    }
    Ok(task)
}

/// The task a steer or queue is for: the one named, or the one at work when only one is. A
/// steer needs a live run and a task at work; a queue, a task that is not settled. Anything
/// else is refused in one line with the task's state and what to do instead.
fn word_target(
    op: Op,
    named: Option<&str>,
    o: &crate::session::Overview,
    id: &str,
) -> Result<String, UsageError> {
    let tasks = &o.summary.harrow.tasks;
    let at_work: Vec<&String> =
        tasks.iter().filter(|(_, t)| t.state.is_at_work()).map(|(id, _)| id).collect();
    let task = match (named, at_work.as_slice()) {
        (Some(t), _) => t.to_owned(),
        (None, [one]) => (*one).clone(),
        (None, []) => {
            return Err(UsageError(format!(
                "no task of session {id} is at work; name one with --task T-NNN"
            )));
        }
        (None, many) => {
            let many: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
            return Err(UsageError(format!(
                "{} tasks are at work ({}); name one with --task T-NNN",
                many.len(),
                many.join(", ")
            )));
        }
    };
    let said = crate::printable::line(&task);
    let Some(state) = tasks.get(&task).map(|t| t.state.clone()) else {
        return Err(UsageError(format!("session {id} has no task {said}")));
    };
    match op {
        Op::Steer if !o.live => Err(UsageError(format!(
            "session {id} is not running: a steer goes to a task at work; queue it for {said}'s next attempt instead (harrow control {id} queue --task {said} TEXT)"
        ))),
        Op::Steer if !state.is_at_work() => Err(UsageError(format!(
            "{said} is {}, not at work: a steer goes to a task at work; queue it instead (harrow control {id} queue --task {said} TEXT)",
            state.as_str()
        ))),
        Op::Queue if state.is_settled() => Err(UsageError(format!(
            "{said} is {}: there is no attempt to queue for",
            state.as_str()
        ))),
        _ => Ok(task),
    }
}
