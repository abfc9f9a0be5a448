//! Repositories kept open between operations, shared by the process's threads.
//!
//! Opening a repository resolves its paths (a `realpath` per component), reads and parses
//! every git configuration file that applies (system, global, the repository's, the
//! worktree's) and lists its packs. harrow works on the same few repositories — the source, a
//! session's worktree, each lane's — several times per model call, from whichever blocking
//! thread the runtime gives the work, so opening each anew (or once per thread) cost more than
//! the work done in it. A repository taken from the pool is the caller's alone until it is
//! dropped, when it goes back for any thread; one in use elsewhere is simply opened again.
//!
//! What an open repository keeps in memory is only what libgit2 checks against the disk
//! before use (refs, packs and configuration files are re-read when they change), except its
//! index: [`fresh_index`] is how code here takes it.

use git2::{Index, Repository};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// How many repositories wait in the pool at most: a run touches the source, the session's
/// worktree, up to eight lanes' worktrees and the session's copy of kept attempts; the console
/// and the fleet open a few more. The one unused longest goes first.
const KEPT_MAX: usize = 32;

/// The repositories waiting to be taken again, the one given back last at the end.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

fn kept() -> std::sync::MutexGuard<'static, Vec<Kept>> {
    // A thread that panicked while holding the lock left the list whole: it only removes or
    // pushes.
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open repository waiting in the pool.
struct Kept {
    key: PathBuf,
    repo: Repository,
    /// Its git folder's device and inode when it was opened.
    folder: Option<(u64, u64)>,
}

/// The device and inode of a repository's git folder: a folder removed and made again at the
/// same place (a lane's worktree pruned and added anew) is another one.
fn identity(repo: &Repository) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(repo.path()).ok().map(|m| (m.dev(), m.ino()))
}

/// A repository opened for `key`, kept for the next caller on any thread when dropped.
pub struct Pooled {
    key: PathBuf,
    repo: Option<Repository>,
    folder: Option<(u64, u64)>,
}

impl Deref for Pooled {
    type Target = Repository;

    fn deref(&self) -> &Repository {
        // Present from `open` until `drop` takes it.
        self.repo.as_ref().unwrap_or_else(|| unreachable!("a pooled repository is taken once"))
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(repo) = self.repo.take() else { return };
        let key = std::mem::take(&mut self.key);
        let mut kept = kept();
        if kept.len() >= KEPT_MAX {
            kept.remove(0);
        }
        kept.push(Kept { key, repo, folder: self.folder });
    }
}

/// The repository `open(key)` gives, taken from the pool when one was opened for
/// `key` before and its git folder is still the same folder (a worktree removed and made
/// again at the same place is opened anew).
pub fn open(
    key: &Path,
    open: impl FnOnce(&Path) -> Result<Repository, git2::Error>,
) -> Result<Pooled, git2::Error> {
    let taken = {
        let mut kept = kept();
        kept.iter().rposition(|k| k.key == key).map(|at| kept.remove(at))
    };
    let kept = taken.filter(|k| k.folder.is_some() && identity(&k.repo) == k.folder);
    let (repo, folder) = if let Some(k) = kept {
        (k.repo, k.folder)
    } else {
        let repo = open(key)?;
        let folder = identity(&repo);
        (repo, folder)
    };
    Ok(Pooled { key: key.to_path_buf(), repo: Some(repo), folder })
}

/// The repository's index as it is on disk now: one read again if the file changed since it
/// was last read (a `git add` in the worktree), and without what an earlier caller staged in
/// memory and did not write.
pub fn fresh_index(repo: &Repository) -> Result<Index, git2::Error> {
    let mut index = repo.index()?;
    index.read(true)?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(dir: &Path) {
        Repository::init(dir).unwrap();
    }

    #[test]
    fn a_repository_is_reused_and_opened_again_when_its_folder_went() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("r");
        init(&dir);
        let opened = std::cell::Cell::new(0);
        let counting = |p: &Path| {
            opened.set(opened.get() + 1);
            Repository::open(p)
        };
        drop(open(&dir, counting).unwrap());
        drop(open(&dir, counting).unwrap());
        assert_eq!(opened.get(), 1, "the second open took the first one back");
        let first = open(&dir, counting).unwrap();
        let second = open(&dir, counting).unwrap();
        assert_eq!(opened.get(), 2, "one in use is not handed out twice");
        drop((first, second));
        let moved = tmp.path().join("kept-aside");
        std::fs::rename(&dir, &moved).unwrap();
        init(&dir);
        drop(open(&dir, counting).unwrap());
        assert_eq!(opened.get(), 3, "a repository made again is opened again");
    }

    #[test]
    fn a_repository_given_back_on_one_thread_is_taken_on_another() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("r");
        init(&dir);
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let counting = |p: &Path| {
            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Repository::open(p)
        };
        // The runtime runs a lane's git work on whichever blocking thread is free.
        std::thread::scope(|s| {
            s.spawn(|| drop(open(&dir, counting).unwrap()));
        });
        std::thread::scope(|s| {
            s.spawn(|| drop(open(&dir, counting).unwrap()));
        });
        assert_eq!(opened.into_inner(), 1, "the second thread took the first one's repository");
    }

    #[test]
    fn the_index_is_taken_as_on_disk_not_as_a_caller_left_it_in_memory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("r");
        init(&dir);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        {
            let repo = open(&dir, |p| Repository::open(p)).unwrap();
            let mut index = fresh_index(&repo).unwrap();
            index.add_path(Path::new("a.txt")).unwrap();
            assert_eq!(index.len(), 1);
        }
        let repo = open(&dir, |p| Repository::open(p)).unwrap();
        assert_eq!(fresh_index(&repo).unwrap().len(), 0, "staged in memory only, not written");
        drop(repo);
        // What a worker's `git add` writes while the repository waits in the pool is seen.
        crate::hands::test_git::git(&dir, &["add", "a.txt"]);
        let repo = open(&dir, |p| Repository::open(p)).unwrap();
        assert_eq!(fresh_index(&repo).unwrap().len(), 1, "the index as the disk holds it now");
    }
}
