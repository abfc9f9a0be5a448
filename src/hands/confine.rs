//! Keeping every path a tool touches inside the worktree.
//!
//! A path from the model is resolved against the worktree root (absolute paths must already lie
//! inside it, `..` may not climb out), every part of it that exists is followed through
//! symlinks and must stay inside, and `.git` is off limits. Checking is not enough on its own —
//! a file can be swapped for a symlink after the check — so files are opened without following
//! a final symlink and the opened file's real path is verified again before it is used.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::{Mode, mkdirat};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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
    #[error(
        "{0}: has more than one hard link, so it may be a file outside the workspace; copy its content to a new file instead"
    )]
    HardLinked(String),
    #[error("{0}: is not a regular file")]
    NotRegular(String),
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
        if !self.plain_below_root(&rel) {
            self.check_existing_part(&abs, given)?;
        }
        Ok(Checked { abs, rel, given: given.to_owned() })
    }

    /// Whether the part of `root/rel` that exists holds no link: each folder and file below the
    /// root looked at with `lstat` until one is missing. `rel` is already free of `..` and
    /// `.git`, and the root is canonical, so such a path is inside as it is written — without
    /// resolving every folder of the root's own path (a `readlink` each) at every tool call.
    /// Anything else (a link, a path through a file, a folder that cannot be read) is left to
    /// [`Jail::check_existing_part`].
    fn plain_below_root(&self, rel: &Path) -> bool {
        let mut at = self.root.clone();
        for part in rel.components() {
            at.push(part);
            match at.symlink_metadata() {
                Ok(meta) if meta.file_type().is_symlink() => return false,
                Ok(_) => {}
                Err(e) => return e.kind() == io::ErrorKind::NotFound,
            }
        }
        true
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

    /// Opens a checked file for reading. The kernel resolves the path beneath the root
    /// (`openat2` with `RESOLVE_BENEATH`), so a component swapped for a symlink after the check
    /// cannot lead outside; what was opened is verified again.
    pub fn open_read(&self, checked: &Checked) -> Result<File, Refusal> {
        let file = self.open_beneath(checked, OFlag::O_RDONLY, ResolveFlag::empty())?;
        self.verify_opened(&file, checked)?;
        Ok(file)
    }

    /// Opens a checked file for writing, creating it and any missing parent folders inside
    /// the root. Nothing is truncated until the opened file is verified (inside, a regular
    /// file, one link), so a swap between the check and the open cannot empty a file outside.
    pub fn open_write(&self, checked: &Checked) -> Result<File, Refusal> {
        if let Some(parent) = checked.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.make_dirs_beneath(parent, &checked.given)?;
        }
        let file =
            self.open_beneath(checked, OFlag::O_WRONLY | OFlag::O_CREAT, ResolveFlag::empty())?;
        self.verify_opened(&file, checked)?;
        file.set_len(0).map_err(|e| Refusal::io(&checked.given, &e))?;
        Ok(file)
    }

    /// Reads a file the harness reads on the worker's behalf (project rules, seed tests): no
    /// symlink anywhere on the path, beneath the root, a regular file with one link, and at
    /// most `cap` bytes (the rest is cut). Anything else is refused, so a worker cannot turn
    /// such a file into a window on the machine.
    pub fn read_for_harness(&self, given: &str, cap: usize) -> Result<String, Refusal> {
        let checked = self.check(given)?;
        let file =
            self.open_beneath(&checked, OFlag::O_RDONLY, ResolveFlag::RESOLVE_NO_SYMLINKS)?;
        self.verify_opened(&file, &checked)?;
        let meta = file.metadata().map_err(|e| Refusal::io(given, &e))?;
        if !meta.is_file() {
            return Err(Refusal::NotRegular(given.to_owned()));
        }
        let mut bytes = Vec::new();
        file.take(cap as u64).read_to_end(&mut bytes).map_err(|e| Refusal::io(given, &e))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Opens `checked` relative to the root with the kernel keeping resolution beneath it.
    /// Kernels without `openat2` (before 5.6) fall back to refusing a final symlink and
    /// verifying the opened path.
    fn open_beneath(
        &self,
        checked: &Checked,
        flags: OFlag,
        resolve: ResolveFlag,
    ) -> Result<File, Refusal> {
        let root = File::open(&self.root).map_err(|e| Refusal::io(&checked.given, &e))?;
        let rel: &Path =
            if checked.rel.as_os_str().is_empty() { Path::new(".") } else { &checked.rel };
        let mut how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .resolve(resolve | ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        if flags.contains(OFlag::O_CREAT) {
            how = how.mode(Mode::from_bits_truncate(0o644));
        }
        match openat2(&root, rel, how) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::ENOSYS) => {
                let mut opts = OpenOptions::new();
                opts.read(!flags.contains(OFlag::O_WRONLY))
                    .write(flags.contains(OFlag::O_WRONLY))
                    .create(flags.contains(OFlag::O_CREAT));
                open_no_follow(&checked.abs, &opts, &checked.given)
            }
            Err(Errno::EXDEV | Errno::ELOOP) => Err(Refusal::Escapes(checked.given.clone())),
            Err(e) => Err(Refusal::io(&checked.given, &io::Error::from(e))),
        }
    }

    /// Creates `rel` (a folder path relative to the root) one component at a time, each
    /// opened beneath the root before the next is made inside it.
    fn make_dirs_beneath(&self, rel: &Path, given: &str) -> Result<(), Refusal> {
        let mut at = PathBuf::new();
        for part in rel.components() {
            at.push(part);
            let probe =
                Checked { abs: self.root.join(&at), rel: at.clone(), given: given.to_owned() };
            let opened = self.open_beneath(
                &probe,
                OFlag::O_RDONLY | OFlag::O_DIRECTORY,
                ResolveFlag::empty(),
            );
            match opened {
                Ok(_) => {}
                Err(Refusal::Io { .. }) if !probe.abs.exists() => {
                    let parent = at.parent().filter(|p| !p.as_os_str().is_empty());
                    let parent = Checked {
                        abs: parent.map_or_else(|| self.root.clone(), |p| self.root.join(p)),
                        rel: parent.map(Path::to_path_buf).unwrap_or_default(),
                        given: given.to_owned(),
                    };
                    let dir = self.open_beneath(
                        &parent,
                        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
                        ResolveFlag::empty(),
                    )?;
                    match mkdirat(&dir, part.as_os_str(), Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(Refusal::io(given, &io::Error::from(e))),
                    }
                    self.open_beneath(
                        &probe,
                        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
                        ResolveFlag::empty(),
                    )?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// What was opened must be inside the root, outside `.git`, and — for a regular file —
    /// have one link: a second link may be a file outside the workspace in disguise.
    fn verify_opened(&self, file: &File, checked: &Checked) -> Result<(), Refusal> {
        match opened_path(file) {
            Some(real) if !self.contains(&real) => {
                return Err(Refusal::Escapes(checked.given.clone()));
            }
            Some(real) if real.strip_prefix(&self.root).is_ok_and(|r| r.starts_with(".git")) => {
                return Err(Refusal::GitInternals(checked.given.clone()));
            }
            _ => {}
        }
        let meta = file.metadata().map_err(|e| Refusal::io(&checked.given, &e))?;
        if meta.is_file() && meta.nlink() > 1 {
            return Err(Refusal::HardLinked(checked.given.clone()));
        }
        Ok(())
    }
}

fn open_no_follow(path: &Path, opts: &OpenOptions, given: &str) -> Result<File, Refusal> {
    let mut opts = opts.clone();
    opts.custom_flags(OFlag::O_NOFOLLOW.bits());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn the_check_alone_refuses_every_link_that_leads_out_and_takes_plain_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
        for dir in [root.join("src/deep"), outside.clone(), root.join(".git")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(root.join("src/file.txt"), "x").unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, root.join("out")).unwrap();
        symlink(&outside, root.join("src/deep/out")).unwrap();
        symlink(outside.join("secret"), root.join("src/secret")).unwrap();
        symlink(root.join("src"), root.join("inside")).unwrap();
        symlink(tmp.path().join("nowhere"), root.join("dangling")).unwrap();
        symlink(root.join(".git"), root.join("dotgit")).unwrap();
        let jail = Jail::new(&root).unwrap();
        for taken in [
            "src/file.txt",
            "src/new/folder/file",
            "./src/../src/file.txt",
            "inside/file.txt",
            "inside/new",
            "src/file.txt/below",
            "missing",
        ] {
            assert!(jail.check(taken).is_ok(), "{taken} refused");
        }
        for refused in [
            "out",
            "out/secret",
            "out/new/file",
            "src/deep/out/secret",
            "src/secret",
            "dangling",
            "dangling/below",
            "dotgit/config",
            ".git/config",
            "../outside/secret",
        ] {
            assert!(jail.check(refused).is_err(), "{refused} taken");
        }
    }
}
