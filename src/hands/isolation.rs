//! Optional stronger isolation for `bash`: bubblewrap, when it is installed and works here.
//!
//! Under bubblewrap the command has no network, sees the filesystem read-only except the
//! worktree (and the git folder the worktree needs), and cannot see the session folder's
//! harness files. Without it, `bash` is still confined by its working directory, timeout,
//! output cap, scrubbed environment and the `pre_tool` hook — and harrow says which applies.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// bubblewrap when it works here, else none (and say so).
    #[default]
    Auto,
    /// bubblewrap, or refuse to run commands.
    Bwrap,
    /// No sandbox.
    Off,
}

/// What is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    Bwrap {
        program: PathBuf,
        hide: Option<PathBuf>,
        readable: Vec<PathBuf>,
        writable: Vec<PathBuf>,
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
        readable: Vec<PathBuf>,
        writable: Vec<PathBuf>,
    ) -> Result<Isolation, String> {
        if mode == SandboxMode::Off {
            return Ok(Isolation::None { why: "switched off in the configuration".into() });
        }
        let probe = find_bwrap().and_then(|program| {
            let works = Command::new(&program)
                .args(["--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if works { Ok(program) } else { Err("bubblewrap is installed but cannot create a sandbox here (user namespaces may be disabled)".into()) }
        });
        match (probe, mode) {
            (Ok(program), _) => {
                let mut writable = writable;
                writable.insert(0, worktree.to_path_buf());
                Ok(Isolation::Bwrap {
                    program,
                    hide: hide.map(Path::to_path_buf),
                    readable,
                    writable,
                })
            }
            (Err(why), SandboxMode::Bwrap) => {
                Err(format!("sandbox = \"bwrap\" was asked for, but {why}"))
            }
            (Err(why), _) => Ok(Isolation::None { why }),
        }
    }

    /// One line for the operator: what confines `bash`.
    pub fn describe(&self) -> String {
        match self {
            Isolation::Bwrap { .. } => {
                "bash runs under bubblewrap: no network, read-only outside the workspace (the repository's git folder included)".into()
            }
            Isolation::None { why } => format!("bash runs without a sandbox ({why})"),
        }
    }

    /// The argv that runs `command` in `cwd` under this isolation.
    pub fn wrap(&self, command: &str, cwd: &Path) -> Vec<String> {
        match self {
            Isolation::None { .. } => crate::hands::process::shell(command),
            Isolation::Bwrap { program, hide, readable, writable } => {
                let mut argv: Vec<String> = vec![program.display().to_string()];
                let s = |p: &Path| p.display().to_string();
                argv.extend(
                    ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
                        .map(String::from),
                );
                if let Some(h) = hide {
                    argv.extend(["--tmpfs".into(), s(h)]);
                }
                for r in readable {
                    argv.extend(["--ro-bind".into(), s(r), s(r)]);
                }
                for w in writable {
                    argv.extend(["--bind".into(), s(w), s(w)]);
                }
                // A PID namespace: when the timeout kills the sandbox, the kernel kills every
                // process in it — a process group would miss the sandbox's own new session.
                argv.extend(
                    [
                        "--unshare-net",
                        "--unshare-pid",
                        "--die-with-parent",
                        "--new-session",
                        "--chdir",
                    ]
                    .map(String::from),
                );
                argv.push(s(cwd));
                argv.extend(["sh".into(), "-c".into(), command.into()]);
                argv
            }
        }
    }
}

fn find_bwrap() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| "bubblewrap is not installed (apt-get install bubblewrap)".into())
}
