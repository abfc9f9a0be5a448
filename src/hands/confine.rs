//! Keeping every path a tool touches inside the worktree.
//!
//! A path from the model is resolved against the worktree root (absolute paths must already lie
//! inside it, `..` may not climb out), every part of it that exists is followed through
//! symlinks and must stay inside, and `.git` is off limits. Checking is not enough on its own —
//! a file can be swapped for a symlink after the check — so files are opened without following
//! a final symlink and the opened file's real path is verified again before it is used.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused. The text goes back to the model as the tool's error.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("{0}: path escapes the workspace; use a path inside it")]
    Escapes(String),
    #[error(
        "{0}: .git cannot be read or changed with file tools; inspect history with git commands in bash"
    )]
    GitInternals(String),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

impl Refusal {
    fn io(path: &str, e: &io::Error) -> Refusal {
        let reason = match e.kind() {
            io::ErrorKind::NotFound => "no such file or directory".to_owned(),
            io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
            _ => e.to_string(),
        };
        Refusal::Io { path: path.to_owned(), reason }
    }
}

/// A path that passed the check: absolute, and relative to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub abs: PathBuf,
    pub rel: PathBuf,
    /// The path as the model wrote it, for messages.
    pub given: String,
}

/// The worktree, as the only place tools may touch.
#[derive(Debug, Clone)]
pub struct Jail {
    root: PathBuf,
}

impl Jail {
    pub fn new(root: &Path) -> io::Result<Jail> {
        Ok(Jail { root: root.canonicalize()? })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether an absolute, canonical path lies inside the root.
    pub fn contains(&self, canonical: &Path) -> bool {
        canonical.starts_with(&self.root)
    }

    /// Resolves a path the model gave and checks it stays inside.
    pub fn check(&self, given: &str) -> Result<Checked, Refusal> {
        let raw = Path::new(given.trim());
        let relative = if raw.is_absolute() {
            raw.strip_prefix(&self.root).map_err(|_| Refusal::Escapes(given.to_owned()))?
        } else {
            raw
        };
        let mut rel = PathBuf::new();
        for part in relative.components() {
            match part {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !rel.pop() {
                        return Err(Refusal::Escapes(given.to_owned()));
                    }
                }
                Component::Normal(name) => {
                    if name == ".git" {
                        return Err(Refusal::GitInternals(given.to_owned()));
                    }
                    rel.push(name);
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Refusal::Escapes(given.to_owned()));
                }
            }
        }
        let abs = self.root.join(&rel);
        self.check_existing_part(&abs, given)?;
        Ok(Checked { abs, rel, given: given.to_owned() })
    }

    /// Follows the longest existing prefix of `abs` through symlinks; it must stay inside.
    fn check_existing_part(&self, abs: &Path, given: &str) -> Result<(), Refusal> {
        let mut probe = abs;
        loop {
            match probe.canonicalize() {
                Ok(real) => {
                    return if self.contains(&real) {
                        if real.strip_prefix(&self.root).is_ok_and(|r| r.starts_with(".git")) {
                            Err(Refusal::GitInternals(given.to_owned()))
                        } else {
                            Ok(())
                        }
                    } else {
                        Err(Refusal::Escapes(given.to_owned()))
                    };
                }
                Err(_) if probe.symlink_metadata().is_ok() => {
                    // A dangling symlink: where it points decides, and it points nowhere
                    // readable; refuse rather than guess.
                    return Err(Refusal::Escapes(given.to_owned()));
                }
                Err(_) => match probe.parent() {
                    Some(parent) => probe = parent,
                    None => return Err(Refusal::Escapes(given.to_owned())),
                },
            }
        }
    }

    /// Opens a checked file for reading, verifying what was actually opened.
    pub fn open_read(&self, checked: &Checked) -> Result<File, Refusal> {
        let file = open_no_follow(&checked.abs, OpenOptions::new().read(true), &checked.given)
            .or_else(|e| self.open_via_link(checked, &e, OpenOptions::new().read(true)))?;
        self.verify_opened(&file, checked)?;
        Ok(file)
    }

    /// Opens a checked file for writing (created, truncated), creating missing parent folders
    /// inside the root, and verifies what was opened.
    pub fn open_write(&self, checked: &Checked) -> Result<File, Refusal> {
        if let Some(parent) = checked.abs.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Refusal::io(&checked.given, &e))?;
            self.check_existing_part(parent, &checked.given)?;
        }
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        let file = open_no_follow(&checked.abs, &opts, &checked.given)
            .or_else(|e| self.open_via_link(checked, &e, &opts))?;
        self.verify_opened(&file, checked)?;
        Ok(file)
    }

    /// The final component was a symlink: allowed only when it resolves inside the root.
    fn open_via_link(
        &self,
        checked: &Checked,
        error: &Refusal,
        opts: &OpenOptions,
    ) -> Result<File, Refusal> {
        let is_link = checked.abs.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Err(error.clone());
        }
        let real =
            checked.abs.canonicalize().map_err(|_| Refusal::Escapes(checked.given.clone()))?;
        if !self.contains(&real) {
            return Err(Refusal::Escapes(checked.given.clone()));
        }
        open_no_follow(&real, opts, &checked.given)
    }

    fn verify_opened(&self, file: &File, checked: &Checked) -> Result<(), Refusal> {
        match opened_path(file) {
            Some(real) if !self.contains(&real) => Err(Refusal::Escapes(checked.given.clone())),
            Some(real) if real.strip_prefix(&self.root).is_ok_and(|r| r.starts_with(".git")) => {
                Err(Refusal::GitInternals(checked.given.clone()))
            }
            _ => Ok(()),
        }
    }
}

fn open_no_follow(path: &Path, opts: &OpenOptions, given: &str) -> Result<File, Refusal> {
    let mut opts = opts.clone();
    opts.custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits());
    opts.open(path).map_err(|e| Refusal::io(given, &e))
}

/// The real path of an open file, where the platform tells.
#[cfg(target_os = "linux")]
fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(not(target_os = "linux"))]
fn opened_path(_: &File) -> Option<PathBuf> {
    None
}
