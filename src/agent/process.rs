//! The agent's process: started in harrow's sandbox with an environment built by allow-list,
//! read and written by threads of its own, and stopped — its whole process group — when its
//! handle is dropped, on every path out of a task.

use super::AgentError;
use super::stderr_tail::StderrTail;
use super::wire::{self, Incoming, WireError};
use crate::hands::isolation::Isolation;
use crate::hands::process::Live;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Messages read ahead of the lane: a flood waits for harrow instead of filling memory.
const AHEAD: usize = 64;

/// What to start.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The agent's command: program and arguments.
    pub argv: &'a [String],
    /// Where it works: the task's worktree.
    pub cwd: &'a Path,
    /// The sandbox, with the agent's private home among its writable folders.
    pub isolation: &'a Isolation,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// Its private home, removed once it has stopped: what it keeps there (its login, its
    /// shell's snapshots of its environment, its key among them) does not outlive it in the
    /// session folder.
    pub home: PathBuf,
}

/// A running agent.
#[derive(Debug)]
pub struct AgentProcess {
    /// The process group harrow made for it (the sandbox's, under bubblewrap).
    group: i32,
    /// Lines to write to its stdin, in order.
    to_agent: Option<mpsc::Sender<Vec<u8>>>,
    /// What it printed on stdout, as messages; a read error ends the stream.
    pub(super) from_agent: tokio::sync::mpsc::Receiver<Result<Incoming, WireError>>,
    /// The last lines of its stderr.
    stderr: StderrTail,
    /// Its exit, once it has exited.
    exited: mpsc::Receiver<std::io::Result<ExitStatus>>,
    exit: Option<String>,
    home: PathBuf,
}

/// Finds `program` the way a shell would (on `PATH` unless it names a path).
fn find(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    super::known::on_path(program)
}

impl AgentProcess {
    /// Starts the agent. A program that is not there is named with where it was looked for.
    pub fn start(launch: Launch<'_>) -> Result<AgentProcess, AgentError> {
        let Some((program, args)) = launch.argv.split_first() else {
            return Err(AgentError::NotFound(String::new()));
        };
        let found = find(program).ok_or_else(|| AgentError::NotFound(program.clone()))?;
        let mut argv = vec![found.display().to_string()];
        argv.extend(args.iter().cloned());
        let argv = launch.isolation.wrap_networked(&argv, launch.cwd);
        let (exe, rest) =
            argv.split_first().ok_or_else(|| AgentError::NotFound(program.clone()))?;
        let mut cmd = Command::new(exe);
        cmd.args(rest)
            .current_dir(launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .env_clear()
            .envs(launch.env);
        let isolation = launch.isolation.clone();
        let (ready_tx, ready_rx) = mpsc::channel();
        let (exit_tx, exited) = mpsc::channel();
        std::thread::Builder::new()
            .name("harrow-agent".into())
            .spawn(move || {
                // The confining thread lives as long as the agent: its sandbox (Landlock,
                // seccomp, bubblewrap's parent-death signal) is tied to this thread.
                let ended = isolation.confine(|| {
                    let (mut child, live) = Live::start(&mut cmd)?;
                    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
                    let _ = ready_tx.send(Ok((child.id(), pipes)));
                    let status = child.wait();
                    drop(live);
                    status
                });
                if let Err(e) = &ended {
                    let _ = ready_tx.send(Err(std::io::Error::new(e.kind(), e.to_string())));
                }
                let _ = exit_tx.send(ended);
            })
            .map_err(AgentError::Start)?;
        let (pid, (stdin, stdout, stderr)) = ready_rx
            .recv()
            .map_err(|_| AgentError::Start(std::io::Error::other("the agent's thread ended")))?
            .map_err(AgentError::Start)?;
        let group = i32::try_from(pid).unwrap_or(i32::MAX);
        let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            return Err(AgentError::Start(std::io::Error::other("no pipes to the agent")));
        };
        Ok(AgentProcess {
            group,
            to_agent: Some(write_lines(stdin)),
            from_agent: read_messages(stdout),
            stderr: StderrTail::keep(stderr),
            exited,
            exit: None,
            home: launch.home,
        })
    }

    /// Writes one line to the agent. A closed pipe is noticed when its output ends.
    pub(super) fn send(&self, line: Vec<u8>) {
        if let Some(to) = &self.to_agent {
            let _ = to.send(line);
        }
    }

    /// The last lines the agent printed on stderr, printable, for a failure's message.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// How the agent ended, if it has (waiting up to `wait` for it).
    pub fn exit_status(&mut self, wait: Duration) -> Option<String> {
        if self.exit.is_none()
            && let Ok(ended) = self.exited.recv_timeout(wait)
        {
            self.exit = Some(match ended {
                Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
                    (Some(code), _) => format!("exit {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    _ => "ended".into(),
                },
                Err(e) => format!("could not be waited for: {e}"),
            });
        }
        self.exit.clone()
    }

    /// Stops the agent: its stdin closed, its process group asked to end, then killed. The
    /// npm launchers of some agents neither exit when stdin closes nor pass signals on, so
    /// the whole group is signalled and the kill always follows.
    pub fn stop(&mut self) {
        self.to_agent = None;
        if self.exit.is_some() {
            return;
        }
        let group = Pid::from_raw(self.group);
        let _ = killpg(group, Signal::SIGTERM);
        if self.exit_status(Duration::from_millis(500)).is_none() {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = self.exit_status(Duration::from_secs(5));
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.stop();
        // A folder harrow made; the removal follows no link the agent planted in it.
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// A thread writing queued lines to the agent's stdin; the queue's sender dropped closes it.
fn write_lines(mut stdin: std::process::ChildStdin) -> mpsc::Sender<Vec<u8>> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let _ = std::thread::Builder::new().name("harrow-agent-in".into()).spawn(move || {
        for line in rx {
            if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                return;
            }
        }
    });
    tx
}

/// A thread reading the agent's stdout as messages. The first line that is no message ends
/// the stream (with the reason).
fn read_messages(
    stdout: std::process::ChildStdout,
) -> tokio::sync::mpsc::Receiver<Result<Incoming, WireError>> {
    let (tx, rx) = tokio::sync::mpsc::channel(AHEAD);
    let _ = std::thread::Builder::new().name("harrow-agent-out".into()).spawn(move || {
        let mut input = BufReader::with_capacity(64 * 1024, stdout);
        loop {
            let message = match wire::read_line(&mut input) {
                Ok(None) => return,
                Ok(Some(line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Some(line)) => wire::parse(&line),
                Err(e) => Err(e),
            };
            let last = message.is_err();
            if tx.blocking_send(message).is_err() || last {
                return;
            }
        }
    });
    rx
}
