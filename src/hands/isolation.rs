//! The sandbox for every command the worker can influence (`bash`, hooks, validators).
//!
//! On by default: bubblewrap where it works (no network, read-only outside the worktree,
//! private `/tmp`, `/run` and `/dev/shm`, private IPC and PID namespaces), else Landlock (writes
//! only in the worktree and a private temp folder, signals and abstract sockets scoped). Both
//! add a seccomp filter that refuses Unix sockets, so no daemon of the operator's — a tmux
//! server, an SSH agent — can be asked to run something outside. Where neither is possible
//! harrow refuses to run commands until the user says `sandbox = "off"`: running without one
//! is a choice, never a silent fallback.

use super::kernel_sandbox::{self, Policy, Prepared};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// bubblewrap when it works here, else Landlock; refuse when neither does.
    #[default]
    Auto,
    /// bubblewrap, or refuse to run commands.
    Bwrap,
    /// Landlock, or refuse to run commands.
    Landlock,
    /// No sandbox.
    Off,
}

/// What is in force.
#[derive(Debug, Clone)]
pub enum Isolation {
    Bwrap {
        program: PathBuf,
        hide: Option<PathBuf>,
        readable: Vec<PathBuf>,
        writable: Vec<PathBuf>,
        /// The socket filter every command gets.
        seccomp: Arc<Prepared>,
    },
    Landlock {
        /// The ruleset and the filter, made once for every command.
        prepared: Arc<Prepared>,
        /// The command's own temp folder (its `TMPDIR`), removed with the hands.
        tmp: Arc<tempfile::TempDir>,
    },
    None {
        why: String,
    },
}

impl Isolation {
    /// Decides the isolation for a worktree. `hide` is the session folder whose harness files
    /// the command must not see; `readable` are folders mounted read-only even where `/tmp`
    /// is replaced (the repository's shared git folder); `writable` are the folders besides
    /// the worktree a command may write (the worktree's own git folder, build caches).
    pub fn choose(
        mode: SandboxMode,
        worktree: &Path,
        hide: Option<&Path>,
        readable: &[PathBuf],
        writable: Vec<PathBuf>,
    ) -> Result<Isolation, String> {
        let mut writable = writable;
        writable.insert(0, worktree.to_path_buf());
        let hide = hide.map(Path::to_path_buf);
        let bwrap = || {
            let program = usable_bwrap()?;
            let seccomp = kernel_sandbox::prepare(&seccomp_only())
                .map_err(|e| format!("cannot make the socket filter: {e}"))?;
            Ok::<_, String>(Isolation::Bwrap {
                program,
                hide: hide.clone(),
                readable: readable.to_vec(),
                writable: writable.clone(),
                seccomp: Arc::new(seccomp),
            })
        };
        let landlock = || {
            kernel_sandbox::landlock_support()?;
            let tmp = tempfile::Builder::new()
                .prefix("harrow-sandbox-")
                .tempdir()
                .map_err(|e| format!("cannot make the sandbox's temp folder: {e}"))?;
            let mut writable = writable.clone();
            writable.push(tmp.path().to_path_buf());
            let policy = Policy { landlock: true, hide: hide.clone(), writable };
            let prepared = kernel_sandbox::prepare(&policy)
                .map_err(|e| format!("cannot make the Landlock ruleset: {e}"))?;
            Ok::<_, String>(Isolation::Landlock {
                prepared: Arc::new(prepared),
                tmp: Arc::new(tmp),
            })
        };
        match mode {
            SandboxMode::Off => {
                Ok(Isolation::None { why: "switched off in the configuration".into() })
            }
            SandboxMode::Bwrap => {
                bwrap().map_err(|why| format!("sandbox = \"bwrap\" was asked for, but {why}"))
            }
            SandboxMode::Landlock => landlock()
                .map_err(|why| format!("sandbox = \"landlock\" was asked for, but {why}")),
            SandboxMode::Auto => bwrap().or_else(|no_bwrap| {
                landlock().map_err(|no_landlock| {
                    format!(
                        "no sandbox can be made here ({no_bwrap}; {no_landlock}); install bubblewrap, or set sandbox = \"off\" under [hands] in the configuration to run the worker's commands unconfined"
                    )
                })
            }),
        }
    }

    /// The sandbox's name, as `show` and the console print it.
    pub fn kind(&self) -> &'static str {
        match self {
            Isolation::Bwrap { .. } => "bubblewrap",
            Isolation::Landlock { .. } => "landlock",
            Isolation::None { .. } => "off",
        }
    }

    /// One line for the operator: what confines `bash`.
    pub fn describe(&self) -> String {
        match self {
            Isolation::Bwrap { .. } => {
                "bash runs under bubblewrap: no network, read-only outside the workspace (the repository's git folder included), private /tmp, /run and IPC, no Unix sockets".into()
            }
            Isolation::Landlock { .. } => {
                "bash runs under Landlock: writes only in the workspace and a private temp folder, no Unix sockets, signals kept inside; the network is open".into()
            }
            Isolation::None { why } => format!("bash runs without a sandbox ({why})"),
        }
    }

    /// The temp folder a confined command gets as `TMPDIR`, when it has one of its own (under
    /// bubblewrap, `/tmp` is a private tmpfs).
    pub fn private_tmp(&self) -> Option<&Path> {
        match self {
            Isolation::Landlock { tmp, .. } => Some(tmp.path()),
            Isolation::Bwrap { .. } => Some(Path::new("/tmp")),
            Isolation::None { .. } => None,
        }
    }

    /// The argv that runs `command` in `cwd` under this isolation.
    pub fn wrap(&self, command: &str, cwd: &Path) -> Vec<String> {
        match self {
            Isolation::None { .. } | Isolation::Landlock { .. } => {
                vec!["sh".into(), "-c".into(), command.into()]
            }
            Isolation::Bwrap { .. } => {
                let mut argv = self.bwrap_prefix(cwd, false);
                argv.extend(["sh".into(), "-c".into(), command.into()]);
                argv
            }
        }
    }

    /// The argv that runs a program (`argv`, not a shell line) in `cwd` under this isolation,
    /// with the network open: an ACP agent runs its own loop and must reach its model. The
    /// filesystem, IPC, PID and socket rules are those of every other command.
    pub fn wrap_networked(&self, argv: &[String], cwd: &Path) -> Vec<String> {
        match self {
            Isolation::None { .. } | Isolation::Landlock { .. } => argv.to_vec(),
            Isolation::Bwrap { .. } => {
                let mut wrapped = self.bwrap_prefix(cwd, true);
                wrapped.extend(argv.iter().cloned());
                wrapped
            }
        }
    }

    /// bubblewrap's own arguments, up to the program it starts.
    fn bwrap_prefix(&self, cwd: &Path, network: bool) -> Vec<String> {
        let Isolation::Bwrap { program, hide, readable, writable, .. } = self else {
            return Vec::new();
        };
        let mut argv: Vec<String> = vec![program.display().to_string()];
        let s = |p: &Path| p.display().to_string();
        argv.extend(
            ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
                .map(String::from),
        );
        // The runtime folders where user daemons keep their sockets are empty inside.
        for runtime in ["/run", "/var/run"] {
            let real = std::fs::symlink_metadata(runtime).is_ok_and(|m| m.is_dir());
            if real {
                argv.extend(["--tmpfs".into(), runtime.into()]);
            }
        }
        // With the network open, names must still resolve: a resolver file that lives under
        // the emptied runtime folder (systemd-resolved's stub) is put back, read-only.
        if network
            && let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf")
            && (resolv.starts_with("/run") || resolv.starts_with("/var/run"))
        {
            argv.extend(["--ro-bind".into(), s(&resolv), s(&resolv)]);
        }
        if let Some(h) = hide {
            argv.extend(["--tmpfs".into(), s(h)]);
        }
        for r in readable {
            argv.extend(["--ro-bind".into(), s(r), s(r)]);
        }
        for w in writable {
            argv.extend(["--bind".into(), s(w), s(w)]);
        }
        if !network {
            argv.push("--unshare-net".into());
        }
        // A PID namespace: when the timeout kills the sandbox, the kernel kills every process
        // in it — a process group would miss the sandbox's own new session.
        argv.extend(
            [
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--die-with-parent",
                "--new-session",
                "--chdir",
            ]
            .map(String::from),
        );
        argv.push(s(cwd));
        argv
    }

    /// Runs `work` (which starts a command and waits for it) where the commands it starts are
    /// confined: the seccomp filter whenever there is a sandbox, Landlock when that is it.
    pub fn confine<T: Send>(
        &self,
        work: impl FnOnce() -> std::io::Result<T> + Send,
    ) -> std::io::Result<T> {
        match self {
            Isolation::None { .. } => work(),
            Isolation::Bwrap { seccomp, .. } => kernel_sandbox::within(seccomp, work),
            Isolation::Landlock { prepared, .. } => kernel_sandbox::within(prepared, work),
        }
    }
}

/// Under bubblewrap, whose mounts confine the filesystem, only the socket filter is added.
fn seccomp_only() -> Policy {
    Policy { landlock: false, hide: None, writable: Vec::new() }
}

/// bubblewrap, if it is installed and can make a sandbox here (with the seccomp filter on, as
/// it will run). Probed once per process: a run with lanes makes hands for every task.
fn usable_bwrap() -> Result<PathBuf, String> {
    static PROBED: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PROBED
        .get_or_init(|| {
            let here = crate::remembered::Remembered::here();
            probe_bwrap(&find_bwrap()?, &here, probe_question, starts)
        })
        .clone()
}

/// The probe's answer, remembered: a start in the same boot, user and namespaces, with the
/// same bubblewrap binary and the same kernel settings for user namespaces, takes the last
/// start's word that bubblewrap works (about 3.5 ms of CPU for the probe's two processes and
/// its namespaces). Only "it works" is kept, so a failure is probed again at every start; a
/// remembered answer that has gone stale (or one a user planted) is no way round the sandbox:
/// each command still runs under bubblewrap, and one that cannot start fails.
fn probe_bwrap(
    program: &Path,
    remembered: &crate::remembered::Remembered,
    question: impl FnOnce(&Path) -> Option<String>,
    starts: impl FnOnce(&Path) -> bool,
) -> Result<PathBuf, String> {
    const NAME: &str = "bwrap-probe";
    let question = question(program);
    if question.as_deref().and_then(|q| remembered.recall(NAME, q)).as_deref() == Some("works") {
        return Ok(program.to_path_buf());
    }
    if !starts(program) {
        return Err("bubblewrap is installed but cannot create a sandbox here (user namespaces may be disabled)".into());
    }
    if let Some(question) = question {
        remembered.keep(NAME, &question, "works");
    }
    Ok(program.to_path_buf())
}

/// What decides whether `program` can make a sandbox: this boot, the user, the namespaces
/// harrow runs in (a container has its own), the binary's stamps, and the kernel's settings
/// for unprivileged user namespaces. `None` when any of it cannot be read.
fn probe_question(program: &Path) -> Option<String> {
    let read = |path: &str| crate::safe_io::read_text_capped(Path::new(path), 256).ok();
    let boot = read("/proc/sys/kernel/random/boot_id")?;
    let mut question = format!(
        "harrow bwrap probe v1 boot={} uid={} {}",
        boot.trim(),
        nix::unistd::getuid(),
        crate::remembered::stamps(program)?
    );
    for ns in ["user", "mnt", "pid", "net", "ipc"] {
        let link = std::fs::read_link(format!("/proc/self/ns/{ns}")).ok()?;
        question.push(' ');
        question.push_str(&link.to_string_lossy());
    }
    for setting in [
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/user/max_net_namespaces",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ] {
        let value = read(setting);
        question.push(' ');
        question.push_str(value.as_deref().map_or("-", str::trim));
    }
    Some(question)
}

/// Starts bubblewrap once, sandboxed as a command would be, to see whether it works here.
fn starts(program: &Path) -> bool {
    let mut probe = Command::new(program);
    probe
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-net",
            "--unshare-ipc",
            "--die-with-parent",
            "true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    kernel_sandbox::prepare(&seccomp_only())
        .and_then(|filter| kernel_sandbox::within(&filter, || probe.spawn()?.wait()))
        .is_ok_and(|s| s.success())
}

fn find_bwrap() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| "bubblewrap is not installed (apt-get install bubblewrap)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remembered::Remembered;
    use std::cell::Cell;

    #[test]
    fn only_a_probe_that_worked_is_remembered_and_only_for_its_question() {
        let tmp = tempfile::tempdir().unwrap();
        let kept = Remembered::in_folder(tmp.path());
        let program = Path::new("/usr/bin/bwrap");
        let probes = Cell::new(0);
        let ask = |question: Option<&str>, works: bool| {
            let question = question.map(str::to_owned);
            probe_bwrap(
                program,
                &kept,
                |_| question,
                |_| {
                    probes.set(probes.get() + 1);
                    works
                },
            )
        };
        assert!(ask(Some("q1"), false).is_err());
        assert!(ask(Some("q1"), true).is_ok(), "a failure is not remembered");
        assert_eq!(probes.get(), 2);
        assert!(ask(Some("q1"), false).is_ok(), "it worked for this very question");
        assert_eq!(probes.get(), 2, "and was not probed again");
        assert!(ask(Some("q2"), false).is_err(), "another boot, binary or namespace: probed");
        assert!(ask(None, true).is_ok());
        assert!(ask(None, false).is_err(), "nothing is remembered without a question");
        assert_eq!(probes.get(), 5);
    }

    #[test]
    fn the_question_moves_with_the_binary_and_names_the_boot_and_namespaces() {
        let tmp = tempfile::tempdir().unwrap();
        let program = tmp.path().join("bwrap");
        std::fs::write(&program, "x").unwrap();
        let Some(asked) = probe_question(&program) else { return };
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
        assert!(asked.contains(boot.trim()) && asked.contains("user:["), "{asked}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&program, "yy").unwrap();
        assert_ne!(probe_question(&program).unwrap(), asked);
        assert_eq!(probe_question(&tmp.path().join("gone")), None);
    }
}
