//! Staging a worktree whole without writing again what the repository already holds.
//!
//! A worktree is staged after every turn that changed files (the turn's tree), when an attempt
//! is kept and when a task lands, each time from the index on disk (the worker's, which harrow
//! leaves alone until a landing), so every file changed since the last commit is staged again
//! each time. libgit2 stages a file that no filter changes by streaming it into a temporary
//! object file before it knows the hash, and deletes that file when the object was there
//! already: a file created, written, hashed and removed per changed file per stage, which on a
//! long task is most of the files harrow creates.
//!
//! So the blob staged for each path is remembered (per worktree, in memory), and a file whose
//! bytes still hash to it is put in the index from that blob instead. Equal bytes are the whole
//! test, never a file's times: the blob *is* those bytes, and the filters libgit2 applies on
//! the way in (line endings, `ident`) leave content they produced unchanged, so staging the
//! file anew would give the same blob (as git's own index keeps an unchanged file's entry).

use git2::{IndexAddOption, IndexEntry, IndexTime, ObjectType, Oid, Repository};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// How many worktrees' blobs are remembered; the one staged longest ago is forgotten first.
const WORKTREES_MAX: usize = 32;
/// How many paths of one worktree are remembered; past that the worktree starts again empty.
const PATHS_MAX: usize = 50_000;

/// The blob staged for a path, and the entry's mode (a regular file's, executable or not): a
/// file whose type or execute bit moved since is staged by libgit2 again, which works its mode
/// out.
#[derive(Debug, Clone, Copy)]
struct Staged {
    oid: Oid,
    mode: u32,
}

/// Per worktree folder, a path's staged blob; the worktree staged last at the end.
static STAGED: Mutex<Vec<(PathBuf, HashMap<PathBuf, Staged>)>> = Mutex::new(Vec::new());

fn remembered(workdir: &Path) -> HashMap<PathBuf, Staged> {
    let mut all = STAGED.lock().unwrap_or_else(PoisonError::into_inner);
    all.iter().position(|(w, _)| w == workdir).map(|at| all.remove(at).1).unwrap_or_default()
}

fn remember(workdir: PathBuf, mut paths: HashMap<PathBuf, Staged>) {
    if paths.len() > PATHS_MAX {
        paths.clear();
    }
    let mut all = STAGED.lock().unwrap_or_else(PoisonError::into_inner);
    if all.len() >= WORKTREES_MAX {
        all.remove(0);
    }
    all.push((workdir, paths));
}

/// The type and owner-execute bits of a file's mode: what libgit2 makes an entry's mode from.
fn bits(meta: &std::fs::Metadata) -> u32 {
    meta.mode() & 0o170_100
}

/// The [`bits`] of the files libgit2 gives an entry's `mode`: only a regular file's blob is
/// remembered (a link's is its target's name, not bytes read).
fn bits_of_mode(mode: u32) -> Option<u32> {
    match mode {
        0o100_644 => Some(0o100_000),
        0o100_755 => Some(0o100_100),
        _ => None,
    }
}

/// The most read of a file to hash it here; a larger one is staged by libgit2, which streams it.
const READ_MAX: u64 = 8 << 20;

/// The file's metadata when it is a regular file (no link followed, nothing waited on) whose
/// bits and bytes are still `staged`'s, and the blob is in this repository.
fn same_blob(full: &Path, staged: &Staged, odb: &git2::Odb<'_>) -> Option<std::fs::Metadata> {
    use std::io::Read;
    let file = crate::safe_io::open_regular_no_follow(full).ok()?;
    let meta = file.metadata().ok()?;
    if bits_of_mode(staged.mode) != Some(bits(&meta)) || meta.len() > READ_MAX {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(READ_MAX + 1).read_to_end(&mut bytes).ok()?;
    let oid = Oid::hash_object(ObjectType::Blob, &bytes).ok()?;
    (oid == staged.oid && odb.exists(oid)).then_some(meta)
}

/// Stages everything in the worktree (changes, new files not ignored, deletions) on top of the
/// index on disk and writes the tree. `write_index`: also write the index to disk (a landing
/// does; keeping an attempt or a turn's tree leaves the worker's index as it was).
pub(super) fn stage_all(repo: &Repository, write_index: bool) -> Result<Oid, git2::Error> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("the repository has no working folder"))?
        .to_path_buf();
    let mut known = remembered(&workdir);
    let staged = stage_with(repo, &workdir, &mut known, write_index);
    if write_index {
        // Landed: the index on disk holds these entries now, times and all.
        known.clear();
    }
    remember(workdir, known);
    staged
}

fn stage_with(
    repo: &Repository,
    workdir: &Path,
    known: &mut HashMap<PathBuf, Staged>,
    write_index: bool,
) -> Result<Oid, git2::Error> {
    let mut index = super::repo_pool::fresh_index(repo)?;
    // With `core.filemode` off, libgit2 takes a file's mode from the entry it replaces, which
    // the worker can change; then every file is staged by libgit2.
    let trust_mode = repo.config()?.get_bool("core.filemode").unwrap_or(true);
    let odb = repo.odb()?;
    let mut reuse: HashMap<PathBuf, IndexEntry> = HashMap::new();
    let mut fresh: Vec<PathBuf> = Vec::new();
    let mut pick = |path: &Path, _: &[u8]| -> i32 {
        let full = workdir.join(path);
        let same = known.get(path).filter(|_| trust_mode).and_then(|k| {
            let meta = same_blob(&full, k, &odb)?;
            Some(entry(path, &meta, k))
        });
        if let Some(entry) = same {
            reuse.insert(path.to_path_buf(), entry);
            1
        } else {
            fresh.push(path.to_path_buf());
            0
        }
    };
    // One walk of the worktree: libgit2's `add_all` also drops the entries of files that are
    // gone (an `update_all` after it walked the whole worktree again to find none).
    index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut pick))?;
    for entry in reuse.values() {
        index.add(entry)?;
    }
    for path in fresh {
        let staged = index
            .get_path(&path, 0)
            .filter(|e| bits_of_mode(e.mode).is_some())
            .map(|e| Staged { oid: e.id, mode: e.mode });
        match staged {
            Some(staged) => known.insert(path, staged),
            None => known.remove(&path),
        };
    }
    // Writing the tree first fills the index's tree cache, which the index on disk then keeps:
    // the next stage rebuilds only the folders it touched. Without it every stage rebuilt every
    // tree and looked up every file's blob to check it exists (libgit2's strict creation).
    let tree = index.write_tree()?;
    if write_index {
        index.write()?;
    } else {
        // The repository stays open for the next caller, whose diffs read this index: it goes
        // back to what the disk holds.
        index.read(true)?;
    }
    Ok(tree)
}

/// The index entry libgit2 would make for the file at `path` whose blob is `staged`'s.
fn entry(path: &Path, meta: &std::fs::Metadata, staged: &Staged) -> IndexEntry {
    use std::os::unix::ffi::OsStrExt;
    // The index keeps times and sizes in 32 bits, as git does: truncated, they still tell a
    // change.
    let time = |secs: i64, nanos: i64| IndexTime::new(secs as i32, nanos as u32);
    IndexEntry {
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        dev: meta.dev() as u32,
        ino: meta.ino() as u32,
        mode: staged.mode,
        uid: meta.uid(),
        gid: meta.gid(),
        file_size: meta.len() as u32,
        id: staged.oid,
        flags: 0,
        flags_extended: 0,
        path: path.as_os_str().as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hands::test_git::git;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    fn repo() -> (tempfile::TempDir, Repository) {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(tmp.path().join("README.md"), "hello\n").unwrap();
        git(tmp.path(), &["add", "."]);
        git(tmp.path(), &["commit", "-qm", "base"]);
        let repo = Repository::open(tmp.path()).unwrap();
        (tmp, repo)
    }

    /// The blob and mode the staged tree holds at `path`.
    fn staged(repo: &Repository, tree: Oid, path: &str) -> (Vec<u8>, i32) {
        let tree = repo.find_tree(tree).unwrap();
        let entry = tree.get_path(Path::new(path)).unwrap();
        (repo.find_blob(entry.id()).unwrap().content().to_vec(), entry.filemode())
    }

    fn objects_changed_at(repo: &Repository) -> std::time::SystemTime {
        std::fs::metadata(repo.path().join("objects")).unwrap().modified().unwrap()
    }

    #[test]
    fn a_file_staged_again_unchanged_writes_nothing_into_the_repository() {
        let (tmp, repo) = repo();
        std::fs::write(tmp.path().join("f.txt"), "x\n").unwrap();
        std::fs::write(tmp.path().join("README.md"), "changed\n").unwrap();
        let first = stage_all(&repo, false).unwrap();
        let before = objects_changed_at(&repo);
        // File times tick coarsely: a temporary object made and removed now would still move
        // the folder's time past `before`.
        std::thread::sleep(Duration::from_millis(50));
        let second = stage_all(&repo, false).unwrap();
        assert_eq!(first, second);
        assert_eq!(objects_changed_at(&repo), before, "no object file was made or removed");
        assert_eq!(staged(&repo, second, "f.txt").0, b"x\n");
    }

    #[test]
    fn a_file_rewritten_to_the_same_size_in_the_same_instant_is_staged_with_its_new_bytes() {
        let (tmp, repo) = repo();
        let file = tmp.path().join("f.txt");
        std::fs::write(&file, "aaaa\n").unwrap();
        stage_all(&repo, false).unwrap();
        std::fs::write(&file, "bbbb\n").unwrap();
        // Its times put back as they were: only its bytes tell the change.
        let was = std::fs::File::open(tmp.path().join("README.md")).unwrap();
        let times = was.metadata().unwrap().modified().unwrap();
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(times).unwrap();
        let tree = stage_all(&repo, false).unwrap();
        assert_eq!(staged(&repo, tree, "f.txt").0, b"bbbb\n");
    }

    #[test]
    fn a_file_made_executable_or_swapped_for_a_link_is_staged_as_what_it_is_now() {
        let (tmp, repo) = repo();
        let file = tmp.path().join("run.sh");
        std::fs::write(&file, "echo hi\n").unwrap();
        stage_all(&repo, false).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tree = stage_all(&repo, false).unwrap();
        assert_eq!(staged(&repo, tree, "run.sh"), (b"echo hi\n".to_vec(), 0o100_755));
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &file).unwrap();
        let tree = stage_all(&repo, false).unwrap();
        assert_eq!(staged(&repo, tree, "run.sh"), (b"/etc/passwd".to_vec(), 0o120_000));
    }

    #[test]
    fn line_endings_a_filter_changes_are_staged_as_git_stages_them_every_time() {
        let (tmp, repo) = repo();
        std::fs::write(tmp.path().join(".gitattributes"), "*.txt text\n").unwrap();
        std::fs::write(tmp.path().join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
        let first = stage_all(&repo, false).unwrap();
        let second = stage_all(&repo, false).unwrap();
        assert_eq!(first, second);
        assert_eq!(staged(&repo, second, "crlf.txt").0, b"one\ntwo\n");
        // The normalized bytes written into the file are that blob: still the same tree.
        std::fs::write(tmp.path().join("crlf.txt"), "one\ntwo\n").unwrap();
        assert_eq!(stage_all(&repo, false).unwrap(), first);
    }

    #[test]
    fn a_file_swapped_for_a_fifo_or_a_link_out_is_never_read_through() {
        let (tmp, repo) = repo();
        let (file, other) = (tmp.path().join("f.txt"), tmp.path().join("other.txt"));
        std::fs::write(&file, "x\n").unwrap();
        std::fs::write(&other, "y\n").unwrap();
        stage_all(&repo, false).unwrap();
        std::fs::remove_file(&file).unwrap();
        nix::unistd::mkfifo(&file, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        std::fs::remove_file(&other).unwrap();
        // The bytes remembered for `other.txt`, behind a link: staged as the link it is.
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(outside.path(), "y\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), &other).unwrap();
        let (done, wait) = std::sync::mpsc::channel();
        let dir = tmp.path().to_path_buf();
        std::thread::spawn(move || {
            let repo = Repository::open(&dir).unwrap();
            let _ = done.send(stage_all(&repo, false).map(|t| staged(&repo, t, "other.txt")));
        });
        let (bytes, mode) = wait.recv_timeout(Duration::from_secs(20)).unwrap().unwrap();
        assert_eq!(mode, 0o120_000);
        assert_eq!(bytes, outside.path().as_os_str().as_encoded_bytes());
    }

    #[test]
    fn a_repository_made_anew_at_the_same_place_gets_its_own_blobs() {
        let (tmp, repo) = repo();
        std::fs::write(tmp.path().join("f.txt"), "x\n").unwrap();
        stage_all(&repo, false).unwrap();
        drop(repo);
        std::fs::remove_dir_all(tmp.path().join(".git")).unwrap();
        git(tmp.path(), &["init", "-q", "-b", "main"]);
        git(tmp.path(), &["add", "README.md"]);
        git(tmp.path(), &["commit", "-qm", "another base"]);
        let repo = Repository::open(tmp.path()).unwrap();
        let tree = stage_all(&repo, false).unwrap();
        assert_eq!(staged(&repo, tree, "f.txt").0, b"x\n", "the blob is in this repository");
    }

    #[test]
    fn a_landing_writes_the_index_and_deleted_files_leave_the_tree() {
        let (tmp, repo) = repo();
        std::fs::write(tmp.path().join("f.txt"), "x\n").unwrap();
        stage_all(&repo, false).unwrap();
        std::fs::remove_file(tmp.path().join("README.md")).unwrap();
        let tree = stage_all(&repo, true).unwrap();
        let names: Vec<String> = repo
            .find_tree(tree)
            .unwrap()
            .iter()
            .filter_map(|e| e.name().ok().map(str::to_owned))
            .collect();
        assert_eq!(names, ["f.txt"]);
        let status = git(tmp.path(), &["status", "--porcelain"]);
        // Staged, and nothing left unstaged: the entry made from a remembered blob is one git
        // takes as the file.
        assert_eq!(status, "D  README.md\nA  f.txt\n");
    }
}
