//! The session's own copy of its git state: `attempts.git`, a bare repository in the session
//! folder holding the session branch as it lands and every attempt harrow kept.
//!
//! The session folder is what a shared mount carries from one machine to the next; the clone
//! a run worked in (a Kubernetes Job's `emptyDir`, a CI runner's checkout) dies with its
//! machine. So the branch is copied here when the session is cut and again at every landing,
//! and a resume, a push or a pull request elsewhere brings it — with the kept attempts a
//! resume restores from — into whichever clone of the project the operator has there.
//! Objects are sent as one pack of only what the copy lacks; nothing is fetched from the
//! source, so the copy never lists or negotiates the source's refs.
//!
//! The copy stands on the session's base commit, as a git bundle stands on its prerequisites:
//! it holds what the session made on top of the base, never the base's history or files,
//! which every clone of the project has (`harrow-base` names it). A copy of the whole history
//! cost a session on a repository of 500 commits 1.7 s of packing and 2 MB before its first
//! model call, and a fleet on a large repository its size again per session.

use super::repo_pool::{self, Pooled};
use super::workspace::{Kept, Workspace, WorkspaceError, git};
use git2::{Oid, Repository};
use std::path::{Path, PathBuf};

/// The session's copy of its git state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    path: PathBuf,
}

/// Held while objects are copied in: lanes of one run copy into the same repository, and the
/// first two would both make it.
fn copying() -> std::sync::MutexGuard<'static, ()> {
    static COPYING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    COPYING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionStore {
    /// The copy in the session folder `dir`.
    pub fn of(dir: &Path) -> SessionStore {
        SessionStore { path: crate::session::dir::SessionDir::new(dir).attempts() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The copy, made when missing. A link at its place is refused: the copy is harrow's
    /// own folder, never one a link makes it write into.
    fn open_or_make(&self) -> Result<Pooled, WorkspaceError> {
        self.refuse_link()?;
        repo_pool::open(&self.path, |p| Repository::open_bare(p).or_else(|_| make_bare(p)))
            .map_err(git(format!("open {}", self.path.display())))
    }

    /// The copy as it is; `None` when the session never made one (or a link stands there).
    fn open(&self) -> Option<Pooled> {
        self.refuse_link().ok()?;
        repo_pool::open(&self.path, |p| Repository::open_bare(p)).ok()
    }

    fn refuse_link(&self) -> Result<(), WorkspaceError> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(WorkspaceError::Io(
                self.path.clone(),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a symbolic link; harrow does not write through links",
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Copies a kept attempt of `from` into the session's copy of its git state, under the
    /// same ref, outside the worktree's reach under a sandbox, so the work a verdict names can
    /// still be shown and landed if the source repository's copy is pruned or forged — and
    /// brought to another machine's clone.
    pub fn copy_kept_from(&self, from: &Workspace, kept: &Kept) -> Result<(), WorkspaceError> {
        self.copy(&*from.repo()?, &kept.refname, kept.oid, from.base_oid()?)
    }

    /// Copies `from`'s session branch as it is now into the session's copy of its git state:
    /// at the session's start and after every landing, so the branch outlives the clone.
    pub fn copy_branch_from(&self, from: &Workspace, branch: &str) -> Result<(), WorkspaceError> {
        self.copy_branch(&*from.repo()?, branch, from.base_oid()?)
    }

    /// Copies the commit `oid` of `source`, with every object it needs that the copy lacks
    /// and the session's `base` does not hold, and names it `refname` in the copy (moved if
    /// it named another commit). The commits walked are those between `oid` and the nearest
    /// ones the copy holds, or the base. The base itself is only named (`harrow-base`).
    pub fn copy(
        &self,
        source: &Repository,
        refname: &str,
        oid: Oid,
        base: Oid,
    ) -> Result<(), WorkspaceError> {
        let _one_at_a_time = copying();
        let copy = self.open_or_make()?;
        if self.base() != Some(base) {
            crate::safe_io::replace(&self.path.join(BASE_FILE), format!("{base}\n").as_bytes())
                .map_err(|e| WorkspaceError::Io(self.path.join(BASE_FILE), e))?;
        }
        if oid == base {
            return Ok(());
        }
        let held = copy.odb().map_err(git(format!("open {}", self.path.display())))?.exists(oid);
        if !held {
            send(source, &copy, oid, Some(base))?;
        }
        copy.reference(refname, oid, true, "harrow: the session's copy")
            .map_err(git(format!("name {refname} in the session folder's copy")))?;
        Ok(())
    }

    /// Copies the branch `branch` of `source` as it is now, on the session's `base`.
    pub fn copy_branch(
        &self,
        source: &Repository,
        branch: &str,
        base: Oid,
    ) -> Result<(), WorkspaceError> {
        let refname = format!("refs/heads/{branch}");
        let oid = source.refname_to_id(&refname).map_err(git(format!("read {refname}")))?;
        self.copy(source, &refname, oid, base)
    }

    /// The commit the copy stands on, as `harrow-base` names it; `None` for a copy that holds
    /// its whole history (made before harrow kept copies thin) or names none that parses.
    fn base(&self) -> Option<Oid> {
        let text = crate::safe_io::read_text_capped(&self.path.join(BASE_FILE), 128).ok()?;
        Oid::from_str(text.trim()).ok()
    }

    /// Brings the session branch `branch` and the session's kept refs
    /// (`refs/harrow/<session>/…`) from the copy into `repo`, another clone of the project.
    /// A kept ref is set as the copy has it. The branch is made when `repo` lacks it and moved
    /// forward when the copy's is ahead; a branch of `repo` that is ahead of the copy's stays,
    /// and one that went another way is refused, both commits named.
    pub fn bring_into(
        &self,
        repo: &Repository,
        session: &str,
        branch: &str,
    ) -> Result<Brought, WorkspaceError> {
        // The name comes from the session's record: only a session branch is ever set, never
        // a branch of the clone's own (a record naming `main` would move it).
        if !branch.starts_with("session/") || session.is_empty() || session.contains('/') {
            return Err(WorkspaceError::NotASessionBranch(branch.to_owned()));
        }
        let Some(copy) = self.open() else {
            return Err(WorkspaceError::NoCopy(self.path.clone()));
        };
        let branch_ref = format!("refs/heads/{branch}");
        // A branch the copy does not name has not left the base yet.
        let base = self.base();
        let theirs = copy
            .refname_to_id(&branch_ref)
            .ok()
            .or(base)
            .ok_or_else(|| WorkspaceError::NoCopy(self.path.clone()))?;
        let kept_glob = format!("refs/harrow/{session}/*");
        let kept: Vec<(String, Oid)> = copy
            .references_glob(&kept_glob)
            .map_err(git("list the copy's kept attempts"))?
            .flatten()
            .filter_map(|r| Some((r.name().ok()?.to_owned(), r.target()?)))
            .collect();
        // The copy is a cache of what the log landed and kept, never its authority.
        let dir = self.path.parent().unwrap_or(&self.path);
        let logged = super::logged_work::LoggedWork::read(dir)
            .map_err(|e| WorkspaceError::Io(dir.to_path_buf(), e))?;
        let checked = match base {
            Some(base) => logged.check_branch(&copy, base, theirs),
            None => Ok(()),
        };
        if let Err(why) = checked.and_then(|()| logged.check_kept(&kept)) {
            return Err(WorkspaceError::NotAsLogged { why, copy: self.path.clone() });
        }
        let into = repo.odb().map_err(git("open the repository's objects"))?;
        // A copy made before copies were thin holds the base itself, and serves a clone
        // without it.
        let held = copy.odb().map_err(git(format!("open {}", self.path.display())))?;
        if let Some(base) = base.filter(|b| !into.exists(*b) && !held.exists(*b)) {
            return Err(WorkspaceError::NoBase {
                base: base.to_string(),
                repo: repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf(),
            });
        }
        let mut tips: Vec<Oid> = kept.iter().map(|(_, oid)| *oid).collect();
        tips.push(theirs);
        let missing: Vec<Oid> = tips.into_iter().filter(|oid| !into.exists(*oid)).collect();
        if !missing.is_empty() {
            let reader = self.reader_over(repo)?;
            for tip in missing {
                send(&reader, repo, tip, None)?;
            }
        }
        // The branch is decided before any ref is written: a refusal leaves the clone's refs
        // as they were (the objects sent are only objects).
        let ours = repo.refname_to_id(&branch_ref).ok();
        let branch_moved = match ours {
            Some(ours) if ours == theirs => false,
            Some(ours) if repo.graph_descendant_of(ours, theirs).unwrap_or(false) => false,
            Some(ours) if !repo.graph_descendant_of(theirs, ours).unwrap_or(false) => {
                return Err(WorkspaceError::Diverged {
                    branch: branch.to_owned(),
                    ours: ours.to_string(),
                    theirs: theirs.to_string(),
                    repo: repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf(),
                });
            }
            _ => true,
        };
        for (name, oid) in &kept {
            repo.reference(name, *oid, true, "harrow: from the session folder's copy")
                .map_err(git(format!("set {name}")))?;
        }
        if branch_moved {
            repo.reference(&branch_ref, theirs, true, "harrow: from the session folder's copy")
                .map_err(git(format!("set {branch_ref}")))?;
        }
        Ok(Brought { kept: kept.len(), branch_moved })
    }

    /// The copy opened apart from the pool, reading the base's objects from `clone`'s own
    /// (objects are named by their content, so any clone's serve): what packing the session's
    /// commits for `clone` walks back to.
    fn reader_over(&self, clone: &Repository) -> Result<Repository, WorkspaceError> {
        let opened = git(format!("open {}", self.path.display()));
        let reader = Repository::open_bare(&self.path).map_err(opened)?;
        let objects = clone.commondir().join("objects");
        reader
            .odb()
            .and_then(|odb| odb.add_disk_alternate(&objects.to_string_lossy()))
            .map_err(git(format!("read the objects of {}", objects.display())))?;
        Ok(reader)
    }
}

/// The copy's configuration: what `git init --bare` writes.
const BARE_CONFIG: &[u8] =
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n";

/// Makes the copy at `path` as a bare repository with what git needs to open it and nothing
/// more: its `objects` and `refs` folders, its configuration and its `HEAD`, written last (a
/// folder a crash left without it is made again). libgit2's own init also writes git's sample
/// hooks, a description and an exclude file, probes the file system with a file of its own
/// and rewrites the configuration once per setting: 18 files and folders where 6 do, each one
/// the kernel must find room for. A folder or file planted in the way as a link is refused.
fn make_bare(path: &Path) -> Result<Repository, git2::Error> {
    let io = |e: std::io::Error| git2::Error::from_str(&format!("{}: {e}", path.display()));
    for folder in ["", "objects", "objects/pack", "refs"] {
        crate::safe_io::ensure_dir(&path.join(folder)).map_err(io)?;
    }
    // A folder a crash cut short is made again, so what is written here need not be synced.
    crate::safe_io::replace_volatile(&path.join("config"), BARE_CONFIG).map_err(io)?;
    crate::safe_io::replace_volatile(&path.join("HEAD"), b"ref: refs/heads/main\n").map_err(io)?;
    Repository::open_bare(path)
}

/// The file in the copy naming the commit it stands on.
const BASE_FILE: &str = "harrow-base";

/// What [`SessionStore::bring_into`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brought {
    /// How many kept refs the copy had.
    pub kept: usize,
    /// The branch was made or moved to the copy's.
    pub branch_moved: bool,
}

/// Sends `tip` from `from` into `to` with what `to` lacks of its history, as one pack; with
/// `stands_on`, nothing that commit holds either.
fn send(
    from: &Repository,
    to: &Repository,
    tip: Oid,
    stands_on: Option<Oid>,
) -> Result<(), WorkspaceError> {
    let odb = to.odb().map_err(git("open the repository's objects"))?;
    let mut walk = from.revwalk().map_err(git("walk the session's commits"))?;
    walk.push(tip).map_err(git("walk the session's commits"))?;
    let mut todo = vec![tip];
    let mut seen = std::collections::HashSet::new();
    while let Some(commit) = todo.pop() {
        let commit = from.find_commit(commit).map_err(git("walk the session's commits"))?;
        for parent in commit.parent_ids().filter(|p| seen.insert(*p)) {
            if Some(parent) == stands_on || odb.exists(parent) {
                walk.hide(parent).map_err(git("walk the session's commits"))?;
            } else {
                todo.push(parent);
            }
        }
    }
    let mut pack = from.packbuilder().map_err(git("pack the session's commits"))?;
    pack.insert_walk(&mut walk).map_err(git("pack the session's commits"))?;
    let mut writer = odb.packwriter().map_err(git("write the session's commits"))?;
    let mut written = Ok(());
    pack.foreach(|chunk| {
        written = std::io::Write::write_all(&mut writer, chunk);
        written.is_ok()
    })
    .map_err(git("pack the session's commits"))?;
    written.map_err(|e| WorkspaceError::Io(to.path().to_path_buf(), e))?;
    writer.commit().map_err(git("write the session's commits"))?;
    Ok(())
}
