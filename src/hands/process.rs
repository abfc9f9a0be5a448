//! Running a shell command for the worker, a hook or a validator.
//!
//! Every command runs in its own process group with stdin closed, an allow-listed environment
//! ([`environment`]) and the sandbox it is given. At the timeout the whole group is killed — a test runner's
//! children included — and the outcome says so. Output is captured up to a cap, and the full
//! length is kept so the model can be told how much it did not see.

use super::environment;
use super::isolation::Isolation;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutcome {
    /// The exit status; `None` when killed by a signal (including our timeout).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Stopped by the operator before it ended.
    pub cancelled: bool,
    /// stdout and stderr interleaved as they arrived, up to the cap.
    pub output: String,
    /// Bytes of output produced in all.
    pub output_len: usize,
    pub duration: Duration,
}

impl ProcessOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// The output with a note when it was cut.
    pub fn output_with_note(&self) -> String {
        if self.output_len > self.output.len() {
            format!("{}\n[truncated, {} chars total]", self.output, self.output_len)
        } else {
            self.output.clone()
        }
    }
}

/// Set once this process adopts the orphans its commands leave behind (see [`adopt_orphans`]).
static ADOPTS_ORPHANS: AtomicBool = AtomicBool::new(false);

/// The commands at work now, by pid: in a run with lanes several run at once, and one that
/// ends must not take another's process for an orphan.
static LIVE: Mutex<std::collections::BTreeSet<i32>> = Mutex::new(std::collections::BTreeSet::new());

/// Held to start a command (shared) or to look for orphans (alone): a child just forked has
/// this process as its parent before its pid is known, so it must not be seen meanwhile.
static STARTING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A command at work, listed in [`LIVE`] until it is reaped: a long-lived one (an ACP agent)
/// holds it for its whole life, so that no other command's end takes it for an orphan.
#[derive(Debug)]
pub(crate) struct Live(i32);

impl Live {
    pub(crate) fn start(cmd: &mut Command) -> std::io::Result<(std::process::Child, Live)> {
        let _starting = STARTING.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let child = cmd.spawn()?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(pid);
        Ok((child, Live(pid)))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.0);
    }
}

/// Makes this process the reaper of its commands' orphans, so a job started with `setsid` or
/// `nohup … &` cannot outlive the tool call that started it: when the command ends, whatever
/// it left running is a child of this process and is killed. Only the binary calls this:
/// every child it has when a command has ended is such an orphan, or another command still at
/// work, which [`LIVE`] lists. (Under bubblewrap the sandbox's PID namespace already ends them
/// all.)
pub fn adopt_orphans() {
    if nix::sys::prctl::set_child_subreaper(true).is_ok() {
        ADOPTS_ORPHANS.store(true, Ordering::SeqCst);
    }
}

/// Every file some process this user can see has open, by path (`/proc/PID/fd`): whether a
/// lock file a crash may have left is still someone's.
pub fn open_files() -> std::collections::BTreeSet<std::path::PathBuf> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|p| p.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .flat_map(|p| std::fs::read_dir(p.path().join("fd")).into_iter().flatten().flatten())
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .collect()
}

/// This process's children, from each of its threads' `children` list in `/proc`: a dozen
/// small files, where asking every process on the machine for its parent reads one file per
/// process (hundreds on a desktop) after every command. `None` when the kernel keeps no such
/// list (built without `CONFIG_PROC_CHILDREN`).
fn children_listed() -> Option<Vec<i32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        // A thread that ended since the folder was listed has no children to give.
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else {
            if task.path().exists() {
                return None;
            }
            continue;
        };
        children.extend(list.split_ascii_whitespace().filter_map(|pid| pid.parse::<i32>().ok()));
    }
    Some(children)
}

/// This process's children found the long way: every process whose parent (the field after
/// the command's name in `/proc/PID/stat`) is this one.
fn children_walked() -> Vec<i32> {
    let me = std::process::id();
    let parent_of = |pid: i32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        after.split_whitespace().nth(1)?.parse().ok()
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

/// Kills every child this process has once a command has ended, except the commands still at
/// work (they can only be orphans it adopted), and reaps them.
fn end_orphans() {
    if !ADOPTS_ORPHANS.load(Ordering::SeqCst) {
        return;
    }
    let _alone = STARTING.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    for _ in 0..16 {
        let live = LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut orphans = children_listed().unwrap_or_else(children_walked);
        orphans.retain(|pid| !live.contains(pid));
        if orphans.is_empty() {
            return;
        }
        for pid in orphans {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
        }
    }
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// Program and arguments; a shell command is `["sh", "-c", cmd]`.
    pub argv: Vec<String>,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub output_cap: usize,
    /// When raised, the command is stopped at once (its process group killed).
    pub cancel: Option<&'a super::cancel::Cancel>,
    /// The sandbox the command starts in.
    pub sandbox: &'a Isolation,
    /// Variables the user added to the environment's allow-list (`[hands] pass_env`).
    pub pass_env: &'a [String],
    /// The lane the command runs for, in a run with lanes (see [`super::HandsConfig::lane`]).
    pub lane: Option<u64>,
    /// The shared build folder, for a command whose environment names none.
    pub build_dir: Option<&'a Path>,
}

/// Runs a command to completion or timeout. Failing to start is an error; anything the
/// command does after starting is an outcome.
pub fn run(spec: &Spec<'_>) -> std::io::Result<ProcessOutcome> {
    let (program, args) =
        spec.argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .env_clear()
        .envs(environment::for_command(
            std::env::vars_os().chain(shared_build_dir(spec.build_dir)),
            spec.pass_env,
            spec.sandbox.private_tmp(),
            spec.lane,
        ));
    spec.sandbox.confine(|| supervise(spec, &mut cmd))
}

/// `CARGO_TARGET_DIR` for the shared build folder, when harrow's own environment names none.
fn shared_build_dir(dir: Option<&Path>) -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    let dir = dir.filter(|_| std::env::var_os("CARGO_TARGET_DIR").is_none())?;
    Some(("CARGO_TARGET_DIR".into(), dir.as_os_str().to_owned()))
}

/// Starts the command and sees it to its end: output captured, the timeout and the operator's
/// cancel obeyed, and whatever it left running killed.
fn supervise(spec: &Spec<'_>, cmd: &mut Command) -> std::io::Result<ProcessOutcome> {
    let started = Instant::now();
    let (mut child, live) = Live::start(cmd)?;
    let captured = Arc::new(Mutex::new(Captured::new(spec.output_cap)));
    let readers: Vec<_> = [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut pipe| {
        let captured = Arc::clone(&captured);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut c) = captured.lock() {
                    c.push(&buf[..n]);
                }
            }
        })
    })
    .collect();

    let pgid = Pid::from_raw(child.id() as i32);
    // The command is waited for on a thread of its own, which says when it has ended: its end
    // is seen at once, where looking every few milliseconds cost a wake-up and two system
    // calls each time (hundreds per run) and answered up to a look late.
    let (ended, end_seen) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = ended.send(());
        status
    });
    let mut timed_out = false;
    let mut cancelled = false;
    loop {
        let left = spec.timeout.saturating_sub(started.elapsed());
        match end_seen.recv_timeout(left.min(CANCEL_LOOK)) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if started.elapsed() >= spec.timeout {
            timed_out = true;
        } else if spec.cancel.is_some_and(super::cancel::Cancel::is_raised) {
            cancelled = true;
        } else {
            continue;
        }
        // The group, and its leader should it have left the group.
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = nix::sys::signal::kill(pgid, Signal::SIGKILL);
        break;
    }
    let status = waiter
        .join()
        .map_err(|_| std::io::Error::other("the thread waiting for the command panicked"))??;
    drop(live);
    // The leader is gone; its children may still hold the pipes open. They belong to the
    // worker's command, so they go with it.
    let _ = killpg(pgid, Signal::SIGKILL);
    end_orphans();
    for r in readers {
        let _ = r.join();
    }
    let duration = started.elapsed();
    let captured = captured.lock().map(|c| c.finish()).unwrap_or_default();
    Ok(ProcessOutcome {
        exit_code: status.code(),
        timed_out,
        cancelled,
        output: captured.0,
        output_len: captured.1,
        duration,
    })
}

/// How often a command at work looks whether the operator stopped it.
const CANCEL_LOOK: Duration = Duration::from_millis(20);

struct Captured {
    bytes: Vec<u8>,
    cap: usize,
    total: usize,
}

impl Captured {
    fn new(cap: usize) -> Captured {
        Captured { bytes: Vec::with_capacity(cap.min(64 * 1024)), cap, total: 0 }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let room = self.cap.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    fn finish(&self) -> (String, usize) {
        (String::from_utf8_lossy(&self.bytes).into_owned(), self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(cmd: &str, timeout_ms: u64, cap: usize) -> ProcessOutcome {
        let dir = std::env::temp_dir();
        run(&Spec {
            argv: vec!["sh".into(), "-c".into(), cmd.into()],
            cwd: &dir,
            timeout: Duration::from_millis(timeout_ms),
            output_cap: cap,
            cancel: None,
            sandbox: &Isolation::None { why: "a test".into() },
            pass_env: &[],
            lane: None,
            build_dir: None,
        })
        .unwrap()
    }

    #[test]
    fn the_threads_lists_of_children_name_what_the_long_walk_finds() {
        // Started from a thread that has ended since: the child now belongs to another of
        // this process's threads, whose list must name it.
        let mut child = std::thread::spawn(|| {
            Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().unwrap()
        })
        .join()
        .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let listed = children_listed().expect("this kernel lists each thread's children");
        let walked = children_walked();
        let _ = child.kill();
        let _ = child.wait();
        assert!(listed.contains(&pid), "{pid} not in {listed:?}");
        assert!(walked.contains(&pid), "{pid} not in {walked:?}");
        assert!(!children_listed().unwrap().contains(&pid), "a reaped child is still listed");
    }

    #[test]
    fn captures_output_and_exit_code() {
        let o = sh("echo out; echo err >&2; exit 3", 5_000, 1000);
        assert_eq!(o.exit_code, Some(3));
        assert!(o.output.contains("out") && o.output.contains("err"), "{o:?}");
        assert!(!o.success());
    }

    #[test]
    fn caps_output_and_says_how_much_there_was() {
        let o = sh("yes x | head -c 10000", 5_000, 100);
        assert_eq!(o.output.len(), 100);
        assert_eq!(o.output_len, 10_000);
        assert!(o.output_with_note().ends_with("[truncated, 10000 chars total]"));
    }

    #[test]
    fn timeout_kills_the_whole_group_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child-pid");
        let cmd = format!("(sleep 30; touch never) & echo $! > {}; sleep 30", pid_file.display());
        let o = sh(&cmd, 300, 1000);
        assert!(o.timed_out);
        assert_eq!(o.exit_code, None);
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        // Gone, or dead and not yet reaped by whoever adopted it.
        let alive =
            stat.is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'));
        assert!(!alive, "a child of the timed-out command outlived it");
    }

    #[test]
    fn stdin_is_closed() {
        let o = sh("cat; echo done", 5_000, 1000);
        assert_eq!(o.output.trim(), "done");
    }
}
