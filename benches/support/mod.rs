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
    let mut cmd = harrow(root, base_url);
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap()]);
    cmd
}

/// `harrow` with the scripted model at `base_url`, its sessions and configuration under
/// `root`; the caller adds the verb.
pub fn harrow(root: &Path, base_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harrow"));
    // `cargo bench` puts the toolchain's library folder on the loader's path; a user's shell
    // does not, and every process image would search it first for each library it loads.
    cmd.env_remove("LD_LIBRARY_PATH")
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

/// What a process measured apart printed, and how it ended.
pub struct Finished {
    pub status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Finished {
    /// Its output and errors, for a failed assertion's message.
    pub fn text(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// A process's CPU, the whole of it and the part its own children (the commands it ran) took,
/// in milliseconds.
pub struct OwnCpu {
    /// The process and every child it waited for, as the kernel counts them (to the
    /// microsecond).
    pub whole: f64,
    /// Its children's share, in the kernel's clock ticks (10 ms) as `/proc` gives them.
    pub children_ticks: f64,
    /// Its own share, in ticks likewise.
    pub own_ticks: f64,
    /// The kernel's part of each (system time): of the whole, exact; of the children and of
    /// the process itself, in ticks.
    pub whole_system: f64,
    pub children_system_ticks: f64,
    pub own_system_ticks: f64,
}

/// `/proc` gives user and system time apart, each cut down to a whole tick: a figure read there
/// is up to two ticks short (one for either part alone).
const TWO_TICKS_MS: f64 = 20.0;
const TICK_MS: f64 = 10.0;

/// Where a process's own share lies, read from both sides: its own ticks put it at or above
/// them and below them plus `short`; the exact whole less its children's ticks, at or below
/// that and above it less `short`.
fn bounds(whole: f64, children: f64, own: f64, short: f64) -> (f64, f64) {
    let less_children = whole - children;
    let low = own.max(less_children - short);
    let high = (own + short).min(less_children);
    if low <= high { (low, high) } else { (less_children, less_children) }
}

impl OwnCpu {
    /// Where the process's own CPU lies. Its own ticks put it in `[own ticks, own ticks + 2 ticks)`; the
    /// exact whole less its children's ticks puts it in `(total − children − 2 ticks, total −
    /// children]`: where the two meet.
    pub fn own_bounds(&self) -> (f64, f64) {
        bounds(self.whole, self.children_ticks, self.own_ticks, TWO_TICKS_MS)
    }

    /// Where the kernel's part of the process's own CPU lies (its system time), the same way.
    /// The kernel splits a process's time between user and system by the ticks that found it
    /// in each, so for a process of a few ticks the split is rough.
    pub fn own_system_bounds(&self) -> (f64, f64) {
        bounds(self.whole_system, self.children_system_ticks, self.own_system_ticks, TICK_MS)
    }

    /// What the process itself spent: the middle of [`OwnCpu::own_bounds`]. (The top alone,
    /// the whole less the children's ticks, overstates a process with children by a tick on
    /// average.)
    pub fn own_ms(&self) -> f64 {
        let (low, high) = self.own_bounds();
        f64::midpoint(low, high)
    }

    /// The children's share, their ticks' shortfall shared out as [`OwnCpu::own_ms`] does.
    pub fn children_share_ms(&self) -> f64 {
        self.whole - self.own_ms()
    }
}

/// Runs `cmd` to its end and measures it and its children apart: the exited process is read
/// in `/proc` before it is reaped (its children's ticks are there), then reaped.
pub fn measured_apart(cmd: &mut Command) -> (Finished, OwnCpu) {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e3 + t.tv_usec() as f64 / 1e3;
    let out = tempfile::tempfile().unwrap();
    let err = tempfile::tempfile().unwrap();
    let before = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's name (which may hold spaces, but ends at the last ')'):
    // state is field 3, utime and stime 14 and 15, cutime and cstime 16 and 17; /proc counts in
    // USER_HZ, 100 a second.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks = |n: usize| fields[n - 3].parse::<f64>().unwrap() * 10.0;
    let children_ticks = ticks(16) + ticks(17);
    let own_ticks = ticks(14) + ticks(15);
    let (children_system_ticks, own_system_ticks) = (ticks(17), ticks(15));
    let status = child.wait().unwrap();
    let after = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let whole_system = ms(after.system_time()) - ms(before.system_time());
    let whole = ms(after.user_time()) - ms(before.user_time()) + whole_system;
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut bytes).unwrap();
        bytes
    };
    (
        Finished { status, stdout: read(out), stderr: read(err) },
        OwnCpu {
            whole,
            children_ticks,
            own_ticks,
            whole_system,
            children_system_ticks,
            own_system_ticks,
        },
    )
}
