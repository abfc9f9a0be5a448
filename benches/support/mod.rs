//! What the benches that run the `harrow` binary as a process share: a repository to run on,
//! the command with its scripted-model settings, and the CPU its process used as the kernel
//! counts it.

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used, dead_code)]

use nix::sys::resource::{UsageWho, getrusage};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs git in `dir` and returns what it printed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `root/repo`: a repository whose one commit holds a README.
pub fn repo_with_readme(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "# bench\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    repo
}

/// `harrow run PLAN --repo REPO` against the scripted model at `base_url`, its sessions and
/// configuration under `root`; the caller adds the flags it measures.
pub fn harrow_run(root: &Path, base_url: &str, plan: &Path, repo: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harrow"));
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap()])
        .env("HARROW_BASE_URL", base_url)
        .env("HARROW_WORKER_MODEL", "scripted/worker")
        .env("HARROW_API_KEY", "sk-bench")
        .env("HARROW_SESSIONS_DIR", root.join("sessions"))
        .env("XDG_CONFIG_HOME", root);
    cmd
}

/// The CPU a child process used, and its peak memory.
pub struct ChildCpu {
    pub user_s: f64,
    pub kernel_s: f64,
    /// The largest of this process's children so far (run each measured child from a process
    /// of its own for its own peak).
    pub max_rss_mb: f64,
}

/// Runs `cmd` to its end and measures it.
pub fn measured(cmd: &mut Command) -> (Output, ChildCpu) {
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    let before = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let out = cmd.output().unwrap();
    let after = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let cpu = ChildCpu {
        user_s: secs(after.user_time()) - secs(before.user_time()),
        kernel_s: secs(after.system_time()) - secs(before.system_time()),
        max_rss_mb: after.max_rss() as f64 / 1024.0,
    };
    (out, cpu)
}
