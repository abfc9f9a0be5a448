//! The `lock` file: only one process writes a session.

use crate::session::dir::LOCK_FILE;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Who holds a session's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub started_at: String,
}

impl LockHolder {
    fn me() -> LockHolder {
        LockHolder {
            pid: std::process::id(),
            host: hostname(),
            started_at: super::timestamp::now(),
        }
    }

    /// Whether the holder still runs. A holder on another host cannot be checked and counts as
    /// alive, so a shared folder is never taken from a live run.
    pub fn is_alive(&self) -> bool {
        if self.host != hostname() {
            return true;
        }
        process_exists(self.pid)
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} on {}", self.pid, if self.host.is_empty() { "?" } else { &self.host })?;
        if !self.started_at.is_empty() {
            write!(f, " since {}", self.started_at)?;
        }
        Ok(())
    }
}

/// This machine's name, read once per process: the fleet asks for it for every row it
/// builds, many times a second.
pub fn hostname() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_owned())
            .unwrap_or_default()
    })
    .clone()
}

#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(not(target_os = "linux"))]
fn process_exists(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "session {dir} is already being run by {holder}; stop that run first, or watch it with `harrow watch`"
    )]
    Held { dir: PathBuf, holder: LockHolder },
    #[error("cannot take the lock {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// Another process kept creating the lock between our reads of a dead holder and our
    /// own create: two resumes racing for the same folder.
    #[error(
        "cannot take the lock {path}: it kept reappearing (another harrow is starting on this session?)"
    )]
    Reappearing { path: PathBuf },
}

/// Reads the lock of a session folder, if there is one. An unreadable lock file (being
/// written right now) reads as held by an unknown live process.
pub fn read_lock(dir: &Path) -> Option<LockHolder> {
    let text = crate::safe_io::read_text_capped(&dir.join(LOCK_FILE), 64 * 1024).ok()?;
    Some(serde_json::from_str(&text).unwrap_or(LockHolder {
        pid: 0,
        host: String::new(),
        started_at: String::new(),
    }))
}

/// The live process that holds the session's lock, if one does. A lock that cannot be read
/// yet (being written) counts as held.
pub fn live_holder(dir: &Path) -> Option<LockHolder> {
    read_lock(dir).filter(|h| h.pid == 0 || h.is_alive())
}

/// Whether a live process holds the session's lock.
pub fn is_locked(dir: &Path) -> bool {
    live_holder(dir).is_some()
}

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    path: PathBuf,
    /// The holder this lock replaced because it had died, so the caller can say so.
    pub took_over_from: Option<LockHolder>,
}

impl SessionLock {
    /// Takes the lock of `dir`, replacing a lock whose holder has died.
    pub fn acquire(dir: &Path) -> Result<SessionLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io_err = |source| LockError::Io { path: path.clone(), source };
        let mut took_over_from = None;
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let body = serde_json::to_vec(&LockHolder::me())
                        .map_err(|e| io_err(io::Error::from(e)))?;
                    file.write_all(&body).and_then(|()| file.sync_all()).map_err(io_err)?;
                    return Ok(SessionLock { path, took_over_from });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let holder = read_lock(dir).unwrap_or(LockHolder {
                        pid: 0,
                        host: String::new(),
                        started_at: String::new(),
                    });
                    if holder.pid != 0 && !holder.is_alive() {
                        fs::remove_file(&path).map_err(io_err)?;
                        took_over_from = Some(holder);
                        continue;
                    }
                    return Err(LockError::Held { dir: dir.to_path_buf(), holder });
                }
                Err(e) => return Err(io_err(e)),
            }
        }
        Err(LockError::Reappearing { path })
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = SessionLock::acquire(dir.path()).unwrap();
        assert!(is_locked(dir.path()));
        let err = SessionLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        drop(lock);
        assert!(!is_locked(dir.path()));
        assert!(SessionLock::acquire(dir.path()).is_ok());
    }

    #[test]
    fn a_dead_holder_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let dead = LockHolder { pid: u32::MAX - 1, host: hostname(), started_at: String::new() };
        fs::write(dir.path().join(LOCK_FILE), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert!(!is_locked(dir.path()));
        let lock = SessionLock::acquire(dir.path()).unwrap();
        assert_eq!(lock.took_over_from, Some(dead));
    }
}
