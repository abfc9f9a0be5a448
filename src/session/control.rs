//! Operator commands: `control.jsonl` in the session folder, appended by the console or
//! `harrow control`, read by the loop at safe points (between tasks, and when a task is held).
//!
//! The loop is the only writer of the event log, so it records every command it applies as an
//! `operator_action`, with the byte offset it has read up to; a resumed run starts reading
//! there, so no command is applied twice and none is lost.

use crate::session::dir::CONTROL_FILE;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// What the operator asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "kebab-case")]
pub enum Op {
    /// Pause at the next task boundary.
    Pause,
    /// Continue after a pause.
    Resume,
    /// Run exactly one more task, then pause.
    Step,
    /// Stop at the next task boundary (resumable).
    Stop,
    /// Stop now: the model call or tool in flight is cancelled, the task is left unfinished
    /// and restarts on resume (`stop --now`).
    StopNow,
    /// Accept the held or rejected task, as an operator decision.
    Approve,
    /// Send the task back with guidance for its next attempt.
    Reject,
    /// Accept the task below the bar.
    ForceAccept,
    /// Leave the task undone and go on.
    Skip,
    /// Fail the task.
    Fail,
    /// Ask the evaluator again about the held task's last case, on the work as it stands.
    RetryEval,
    /// A note for the worker's next attempt.
    Note,
    /// Words for the task at work, put into its worker's conversation before its next model
    /// request.
    Steer,
    /// Words kept for a task's next attempt, or its first turn when it has not begun.
    Queue,
    /// Set a task back to one of its attempts (or turns): its worktree as that state left
    /// it, its worker's conversation as it stood there, and the operator's reason after it.
    Rewind,
    /// The operator's review of a task's diff: comments on its lines and a verdict.
    Review,
    /// Grant what the task's agent asked permission for (its oldest open request).
    Allow,
    /// Refuse what the task's agent asked permission for (its oldest open request).
    Deny,
}

impl Op {
    /// The op a written name (an `operator_action`'s `action`) names, if it names one.
    pub fn parse(name: &str) -> Option<Op> {
        <Op as clap::ValueEnum>::value_variants().iter().copied().find(|op| op.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Pause => "pause",
            Op::Resume => "resume",
            Op::Step => "step",
            Op::Stop => "stop",
            Op::StopNow => "stop_now",
            Op::Approve => "approve",
            Op::Reject => "reject",
            Op::ForceAccept => "force_accept",
            Op::Skip => "skip",
            Op::Fail => "fail",
            Op::RetryEval => "retry_eval",
            Op::Note => "note",
            Op::Steer => "steer",
            Op::Queue => "queue",
            Op::Rewind => "rewind",
            Op::Review => "review",
            Op::Allow => "allow",
            Op::Deny => "deny",
        }
    }

    /// Whether the loop acts on it at once, cancelling what is in flight, rather than at the
    /// next task boundary.
    pub fn is_urgent(self) -> bool {
        matches!(self, Op::StopNow | Op::Fail)
    }

    /// Whether the operator must say why.
    pub fn needs_reason(self) -> bool {
        matches!(
            self,
            Op::Approve | Op::Reject | Op::ForceAccept | Op::Skip | Op::Fail | Op::Rewind
        )
    }
}

/// A comment of the operator's on one line of a task's diff, as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineComment {
    pub path: String,
    pub line: u64,
    pub comment: String,
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub op: Op,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The note or the guidance text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For a rewind: the attempt to go back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_attempt: Option<u64>,
    /// For a rewind: the worker turn to go back to (of the attempt given, else of the task's
    /// latest conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_turn: Option<u64>,
    /// For a review: the comments on lines of the task's diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<LineComment>,
    /// For a review: the category it rejects with; none accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// For a review or a rewind of a task at work: stop its attempt now (the call or tool in
    /// flight is cancelled) rather than wait for it to end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub now: bool,
    #[serde(default)]
    pub ts: String,
    /// Who sent it: `console`, `cli`.
    #[serde(default)]
    pub source: String,
}

impl Command {
    /// A command sent now by `source` (`console`, `fleet`, `cli`).
    pub fn new(
        op: Op,
        task: Option<String>,
        reason: Option<String>,
        text: Option<String>,
        source: &super::vocabulary::CommandSource,
    ) -> Command {
        Command {
            op,
            task,
            reason,
            text,
            to_attempt: None,
            to_turn: None,
            comments: Vec::new(),
            category: None,
            now: false,
            ts: super::timestamp::now(),
            source: source.as_str().to_owned(),
        }
    }
}

/// Appends a command for the loop to pick up, scrubbed of keys like every file harrow writes:
/// an operator who pastes a key into a steer, a note or a review leaves it in no file.
pub fn send(dir: &Path, command: &Command) -> io::Result<()> {
    let mut line = serde_json::to_string(command).map_err(io::Error::from)?;
    line.push('\n');
    super::atomic::append_scrubbed(&dir.join(CONTROL_FILE), &line)
}

/// Reads the commands appended after `offset`. Returns them with the offset just past the last
/// complete line; a half-written last line waits, and a line that is not a command is skipped
/// with its reason.
pub fn read_new(dir: &Path, offset: u64) -> io::Result<(Vec<Result<Command, String>>, u64)> {
    let path = dir.join(CONTROL_FILE);
    // A run asks after every step; the file is appended to, so one look at its length says
    // whether there is anything to open it for. Anything but a plain file is opened, and
    // refused, as before.
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= offset => return Ok((Vec::new(), offset)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
        _ => {}
    }
    let mut f = match crate::safe_io::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
        Err(e) => return Err(e),
    };
    f.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let Some(end) = memchr::memrchr(b'\n', &bytes) else { return Ok((Vec::new(), offset)) };
    let commands = bytes[..end]
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| {
            serde_json::from_slice::<Command>(l).map_err(|e| format!("not a control command ({e})"))
        })
        .collect();
    Ok((commands, offset + end as u64 + 1))
}

/// A command as a test sends it: no task, reason or text.
#[cfg(test)]
pub(crate) fn plain(op: Op) -> Command {
    Command {
        ts: "t".into(),
        ..Command::new(
            op,
            None,
            None,
            None,
            &super::vocabulary::CommandSource::Other("test".into()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_fifo_is_refused_and_a_file_no_longer_than_what_was_read_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONTROL_FILE);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_new(dir.path(), 0).is_err(), "a FIFO is refused, not waited on");
        std::fs::remove_file(&path).unwrap();
        // A link is looked at where it leads, whatever its own length.
        let target = dir.path().join("target");
        std::fs::write(&target, b"{}\n{}\n").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let (read, end) = read_new(dir.path(), 1).unwrap();
        assert_eq!((read.len(), end), (2, 6));
        std::fs::remove_file(&path).unwrap();
        send(dir.path(), &plain(Op::Pause)).unwrap();
        let (_, end) = read_new(dir.path(), 0).unwrap();
        assert_eq!(read_new(dir.path(), end).unwrap(), (Vec::new(), end));
        assert_eq!(read_new(dir.path(), end + 100).unwrap(), (Vec::new(), end + 100));
    }

    #[test]
    fn reads_only_complete_new_commands() {
        let dir = tempfile::tempdir().unwrap();
        let c = plain(Op::Pause);
        send(dir.path(), &c).unwrap();
        let (got, off) = read_new(dir.path(), 0).unwrap();
        assert_eq!(got, vec![Ok(c.clone())]);
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(CONTROL_FILE))
            .unwrap()
            .write_all(b"garbage\n{\"op\":\"st")
            .unwrap();
        let (got, off2) = read_new(dir.path(), off).unwrap();
        assert!(matches!(&got[..], [Err(e)] if e.contains("not a control command")));
        assert!(read_new(dir.path(), off2).unwrap().0.is_empty(), "the half line waits");
        assert_eq!(Op::ForceAccept.as_str(), "force_accept");
    }
}
