//! The kernel's own confinement for the commands the worker can influence: Landlock for the
//! filesystem and signals, a seccomp filter for sockets.
//!
//! Both are applied to a thread of its own that then starts the command and waits for it:
//! Landlock domains and seccomp filters belong to the thread that installs them and are
//! inherited by every process it creates, so the command (and everything it starts) is
//! confined while harrow's other threads are not. No `unsafe` is needed, and nothing runs
//! between `fork` and `exec`. The thread lives until the command has ended, since a parent-death
//! signal (bubblewrap's `--die-with-parent`) fires when the creating *thread* exits.
//!
//! - **Landlock** (`Policy::landlock`): read and execute everywhere but the hidden session
//!   folder; write only in the worktree, its git folder, the build caches and a private temp
//!   folder; no connection to named Unix sockets where the kernel can tell (ABI 9); abstract
//!   Unix sockets and signals scoped to the sandbox (ABI 6), so the worker cannot reach a
//!   daemon's abstract socket or signal harrow. ptrace (and `/proc/PID/mem`) of processes
//!   outside the sandbox is refused by Landlock on every ABI.
//! - **seccomp**: `socket()` only for the families on an allow-list (IPv4, IPv6, netlink), so
//!   no Unix socket can be made and no named socket — a tmux server, an SSH agent, a desktop
//!   bus — connected to, wherever it lives; `io_uring_setup` refused, since `io_uring` can make
//!   sockets without `socket()`. `socketpair()` stays, so pipelines of processes still work.
//!   Applied under bubblewrap too, where a read-only bind mount would still let a socket
//!   connect.

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The newest Landlock ABI harrow knows; older kernels get what they support (best effort),
/// and [`landlock_support`] refuses kernels with none.
const ABI_WANTED: ABI = ABI::V10;

/// Device files every program may write (and only these under `/dev`).
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Socket families a confined command may create. Everything else — above all `AF_UNIX` — is
/// refused with `EACCES`.
const SOCKET_FAMILIES: &[libc::c_int] = &[libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// What a confined command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Apply Landlock (filesystem, signals, abstract sockets). Off under bubblewrap, whose
    /// mounts already do that job.
    pub landlock: bool,
    /// A folder the command must not read (the session folder, when the worktree is in it).
    pub hide: Option<PathBuf>,
    /// Folders the command may write, besides the devices above.
    pub writable: Vec<PathBuf>,
}

/// A policy made ready once: the Landlock ruleset (its path rules opened and added) and the
/// compiled seccomp filter, so each command costs only the restriction itself.
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<landlock::RulesetCreated>,
    filter: BpfProgram,
}

/// Builds the ruleset and the filter for `policy`.
pub fn prepare(policy: &Policy) -> std::io::Result<Prepared> {
    let filter = socket_filter().map_err(std::io::Error::other)?;
    let ruleset = if policy.landlock { Some(landlock_rules(policy)?) } else { None };
    Ok(Prepared { ruleset, filter })
}

/// Runs `work` — which starts the command and waits for it — on a thread confined by
/// `prepared`. A failure to confine is an error, never an unconfined command.
pub fn within<T: Send>(
    prepared: &Prepared,
    work: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    let ruleset = prepared.ruleset.as_ref().map(landlock::RulesetCreated::try_clone).transpose()?;
    let filter = &prepared.filter;
    std::thread::scope(|s| {
        s.spawn(move || {
            if let Some(ruleset) = ruleset {
                let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
                if status.ruleset == RulesetStatus::NotEnforced {
                    return Err(std::io::Error::other("Landlock is not enforced by this kernel"));
                }
            }
            seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
            work()
        })
        .join()
        .map_err(|_| std::io::Error::other("the confining thread panicked"))?
    })
}

/// Whether this kernel enforces Landlock; the reason when it does not. Probed on a throwaway
/// thread, which ends confined.
pub fn landlock_support() -> Result<(), String> {
    std::thread::spawn(|| {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(Ruleset::create)
            .map_err(|e| e.to_string())?;
        match created.restrict_self().map_err(|e| e.to_string())?.ruleset {
            RulesetStatus::NotEnforced => Err(
                "this kernel does not offer Landlock (Linux 5.13 or later, with Landlock enabled)"
                    .into(),
            ),
            _ => Ok(()),
        }
    })
    .join()
    .unwrap_or_else(|_| Err("the Landlock probe panicked".into()))
}

fn landlock_rules(policy: &Policy) -> std::io::Result<landlock::RulesetCreated> {
    let read = AccessFs::from_read(ABI_WANTED);
    let all = AccessFs::from_all(ABI_WANTED);
    let file_write = AccessFs::WriteFile | AccessFs::ReadFile | AccessFs::Truncate;
    let err = |e: landlock::RulesetError| std::io::Error::other(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .map_err(err)?;
    for path in readable_roots(policy.hide.as_deref()) {
        if let Ok(fd) = PathFd::new(&path) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, read)).map_err(err)?;
        }
    }
    for device in WRITABLE_DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, file_write)).map_err(err)?;
        }
    }
    for dir in &policy.writable {
        let fd = PathFd::new(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
        let rights = all & !AccessFs::ResolveUnix;
        ruleset = ruleset.add_rule(PathBeneath::new(fd, rights)).map_err(err)?;
    }
    Ok(ruleset)
}

/// The folders to grant reading: `/` itself when nothing is hidden; otherwise every entry along
/// the way down to `hide` except the one that leads to it, so everything but `hide` stays
/// readable. (Landlock rules only add rights, so a hidden subtree is carved out this way.)
fn readable_roots(hide: Option<&Path>) -> Vec<PathBuf> {
    let Some(hide) = hide else { return vec![PathBuf::from("/")] };
    let mut roots = Vec::new();
    let mut here = PathBuf::from("/");
    for part in hide.components().skip(1) {
        let next = here.join(part);
        for entry in std::fs::read_dir(&here).into_iter().flatten().flatten() {
            if entry.path() != next {
                roots.push(entry.path());
            }
        }
        here = next;
    }
    roots
}

/// The seccomp filter: `socket()` only for the allowed families, no `io_uring`.
fn socket_filter() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let not_allowed: Vec<SeccompCondition> = SOCKET_FAMILIES
        .iter()
        .map(|family| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(not_allowed).map_err(|e| e.to_string())?]);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiding_a_folder_keeps_its_siblings_and_everything_above() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let session = root.join("session");
        std::fs::create_dir_all(session.join("workspace")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        let roots = readable_roots(Some(&session));
        assert!(roots.contains(&root.join("other")), "{roots:?}");
        assert!(!roots.iter().any(|r| session.starts_with(r)), "{roots:?}");
        assert!(roots.contains(&PathBuf::from("/usr")), "{roots:?}");
        assert_eq!(readable_roots(None), [PathBuf::from("/")]);
    }
}
