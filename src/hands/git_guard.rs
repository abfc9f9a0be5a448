//! Keeps the repository's history, branches and configuration as harrow left them, whatever a
//! worker's commands do.
//!
//! The worktree shares its repository's refs, configuration and hooks with the user's own
//! checkout. A worker that moves `HEAD` or the session branch could make harrow commit off the
//! branch or drop an accepted task's commit; one that sets `core.fsmonitor` or adds a hook
//! plants code that runs outside any sandbox on the user's next `git status`. The `pre_tool`
//! hook refuses the obvious commands, but a shell has many ways to say the same thing, so after
//! every tool call the guard compares what matters with what it recorded and puts back
//! anything that changed: every ref, the worktree's `HEAD`, the repository's `config`, and its
//! hooks. It reads a few small files and the ref list, so it is cheap enough to run every time.

use git2::{Oid, Repository};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file as recorded: its content, and a stamp (inode, change time, length) that tells
/// cheaply whether it may have changed. The change time cannot be set back by a user's
/// process, so an unchanged stamp means unchanged content and the file need not be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Mark {
    bytes: Option<Vec<u8>>,
    stamp: Option<Stamp>,
}

/// A file's inode, change time (seconds, nanoseconds) and length.
type Stamp = (u64, i64, i64, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| (m.ino(), m.ctime(), m.ctime_nsec(), m.len()))
}

/// The most the guard reads of one file: a git config, a hook or a worktree's `gitdir` is far
/// smaller; a worker that swaps one for something larger (or a FIFO, or a device) cannot make
/// the guard wait or hold it.
const READ_LIMIT: u64 = 64 << 20;

impl Mark {
    fn of(path: &Path) -> Mark {
        let bytes = crate::safe_io::read_capped(path, READ_LIMIT).ok();
        Mark { bytes, stamp: stamp(path) }
    }

    /// The file as it is now: this mark again when its stamp has not moved (and is old enough
    /// to trust), else read anew. Recording happens several times per task; the hooks folder
    /// alone holds a dozen files.
    fn again(&self, path: &Path) -> Mark {
        let now = stamp(path);
        if now.is_some() && now == self.stamp && now.is_some_and(settled) {
            self.clone()
        } else {
            Mark::of(path)
        }
    }

    /// Whether the file still holds what was recorded, reading it only when its stamp moved.
    fn holds(&self, path: &Path) -> bool {
        stamp(path) == self.stamp
            || crate::safe_io::read_capped(path, READ_LIMIT).ok() == self.bytes
    }
}

/// What the guard holds the repository to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    /// Every ref except the worktree-private `HEAD`: name → target (an object id, or
    /// `ref: NAME` for a symbolic ref).
    refs: BTreeMap<String, String>,
    /// The repository's `config`.
    config: Mark,
    /// The worktree's own `config.worktree`, when there is one.
    worktree_config: Mark,
    /// The worktree's `gitdir` in its git folder: where git (and libgit2's prune) believes the
    /// worktree is.
    gitdir: Mark,
    /// The hooks folder: file name → content, and the folder's own stamp.
    hooks: BTreeMap<String, Mark>,
    hooks_dir: Option<Stamp>,
    /// The user's own checkout's `HEAD` (the repository's shared `HEAD` file).
    source_head: Mark,
}

/// The guard over one session's worktree.
pub struct GitGuard {
    repo: super::repo_pool::Pooled,
    /// `refs/heads/session/<id>`: where the worktree's `HEAD` must point.
    branch_ref: String,
    /// `refs/harrow/<id>/`: harrow's own refs for the session (kept attempts, set-aside work).
    own_prefix: String,
    common: PathBuf,
    /// The repository as the lanes' book knows it ([`super::own_refs::repo_key`]).
    book_repo: PathBuf,
    private: PathBuf,
    snapshot: Snapshot,
    /// In a lane: `refs/heads/session/<id>`, the prefix its sibling lanes' branches share.
    /// Other lanes move these (and add kept attempts) while this lane's tool runs, so this
    /// guard leaves them alone; a landing checks the session branch itself before moving it.
    siblings: Option<String>,
    /// The stamps of the files that hold refs when the refs on disk were last seen to be
    /// exactly the snapshot's (and old enough to trust their stamps): while they hold, the
    /// refs need not be listed and compared (a repository with thousands of tags would
    /// otherwise be read whole twice per tool call). The guard's own branch is not among
    /// them — harrow moves it at every commit, so it is read on its own each time — nor are
    /// the refs sibling lanes move, which this guard leaves alone.
    quiet: Option<Vec<RefStamp>>,
    /// The refs folders as last listed, to stamp rather than list again.
    listings: Listings,
}

/// A loose ref file's name under its `refs` folder, with its stamp.
type RefStamp = (String, Stamp);

/// The entries of a refs folder as last listed (name, and whether it is a folder), with the
/// folder's stamp then: while the stamp holds, the folder holds the same entries — adding,
/// removing or renaming one moves the folder's change time, which no process can set back —
/// so it is not listed again. A listing is kept only when its stamp is [`settled`], as two
/// changes within one tick of the file system's clock can leave the same stamp.
type Listings = BTreeMap<PathBuf, (Stamp, Vec<(String, bool)>)>;

/// The stamp of every file a ref the guard compares by listing can be kept in: `packed-refs`
/// and each loose ref under the shared and the worktree's own `refs/` whose name `listed`
/// takes (told whether the name is a folder's: `false` leaves out all it holds), in the order
/// the folders list them, each with its name. A ref is only ever changed
/// by writing one of these files (which moves its change time, which no process can set back)
/// or by adding, removing or renaming one (which changes the list), so an equal list means
/// equal refs. `None` when a folder could not be read.
fn ref_stamps(
    common: &Path,
    private: &Path,
    listed: &dyn Fn(&str, bool) -> bool,
    listings: &mut Listings,
) -> Option<Vec<RefStamp>> {
    fn walk(
        dir: &Path,
        name: &mut String,
        listed: &dyn Fn(&str, bool) -> bool,
        listings: &mut Listings,
        out: &mut Vec<RefStamp>,
    ) -> Option<()> {
        for (entry, folder) in entries(dir, listings)? {
            let len = name.len();
            name.push('/');
            name.push_str(&entry);
            let path = dir.join(&entry);
            if folder && listed(name, true) {
                walk(&path, name, listed, listings, out)?;
            } else if !folder && listed(name, false) {
                out.push((name.clone(), stamp(&path)?));
            }
            name.truncate(len);
        }
        Some(())
    }
    let mut out = Vec::new();
    let packed = stamp(&common.join("packed-refs")).unwrap_or_default();
    out.push((String::from("packed-refs"), packed));
    walk(&common.join("refs"), &mut String::from("refs"), listed, listings, &mut out)?;
    let own = private.join("refs");
    if private != common && own.exists() {
        walk(&own, &mut String::from("refs"), listed, listings, &mut out)?;
    }
    Some(out)
}

/// The entries of the folder `dir` (name, and whether each is a folder — a link is not), from
/// `listings` while the folder's stamp holds, else as it lists them now.
fn entries(dir: &Path, listings: &mut Listings) -> Option<Vec<(String, bool)>> {
    let now = stamp(dir)?;
    if let Some((then, kept)) = listings.get(dir)
        && *then == now
    {
        return Some(kept.clone());
    }
    let mut listed = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let folder = entry.file_type().ok()?.is_dir();
        listed.push((entry.file_name().to_string_lossy().into_owned(), folder));
    }
    if settled(now) {
        listings.insert(dir.to_path_buf(), (now, listed.clone()));
    } else {
        listings.remove(dir);
    }
    Some(listed)
}

fn hooks_of(common: &Path) -> BTreeMap<String, Mark> {
    hooks_again(common, &BTreeMap::new())
}

/// The hooks as they are now, taking each from `before` when it has not changed.
fn hooks_again(common: &Path, before: &BTreeMap<String, Mark>) -> BTreeMap<String, Mark> {
    std::fs::read_dir(common.join("hooks"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let mark =
                before.get(&name).map_or_else(|| Mark::of(&e.path()), |m| m.again(&e.path()));
            (name, mark)
        })
        .collect()
}

/// Whether a file's stamp is old enough to stand for its content: a file changed within the
/// last second or two may change again without its change time moving (file times tick
/// coarsely), as git treats an index entry as racy.
fn settled(stamp: Stamp) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    stamp.1 < now.saturating_sub(1)
}

/// Where a ref points, as the snapshot writes it: an object id, or `ref: NAME`.
fn target_of(r: &git2::Reference<'_>) -> Option<String> {
    match (r.symbolic_target().ok().flatten(), r.target()) {
        (Some(sym), _) => Some(format!("ref: {sym}")),
        (None, Some(oid)) => Some(oid.to_string()),
        (None, None) => None,
    }
}

fn refs_of(repo: &Repository) -> Result<BTreeMap<String, String>, git2::Error> {
    let mut out = BTreeMap::new();
    for r in repo.references()? {
        let r = r?;
        let Ok(name) = r.name() else { continue };
        let Some(target) = target_of(&r) else { continue };
        out.insert(name.to_owned(), target);
    }
    Ok(out)
}

impl std::fmt::Debug for GitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitGuard").field("branch_ref", &self.branch_ref).finish_non_exhaustive()
    }
}

impl GitGuard {
    /// Records the repository as it is now. Call it when harrow has just written what it
    /// expects (after creating the worktree, after each accepted commit).
    pub fn new(worktree: &Path, branch: &str) -> Result<GitGuard, git2::Error> {
        let repo = super::workspace::open_worktree(worktree, None)?;
        let common = repo.commondir().to_path_buf();
        let book_repo = super::own_refs::repo_key(&common);
        let private = repo.path().to_path_buf();
        let mut guard = GitGuard {
            book_repo,
            quiet: None,
            listings: Listings::new(),
            siblings: None,
            repo,
            branch_ref: String::new(),
            own_prefix: String::new(),
            common,
            private,
            snapshot: Snapshot {
                refs: BTreeMap::new(),
                config: Mark::default(),
                worktree_config: Mark::default(),
                gitdir: Mark::default(),
                hooks: BTreeMap::new(),
                hooks_dir: None,
                source_head: Mark::default(),
            },
        };
        guard.hold_to(branch);
        guard.record()?;
        guard.track_own()?;
        Ok(guard)
    }

    /// Holds the worktree to `branch` from now on, as it is now: a lane's worktree takes the
    /// branch of its next task. Its recorded config and hooks are taken again only where
    /// their stamps moved.
    pub fn retarget(&mut self, branch: &str) -> Result<(), git2::Error> {
        self.hold_to(branch);
        self.quiet = None;
        self.record()?;
        self.track_own()
    }

    /// In a lane: starts holding the session's own refs (its branch and `refs/harrow/<id>/`)
    /// to the book all lanes share, as they are now unless the book holds them already.
    fn track_own(&self) -> Result<(), git2::Error> {
        let Some(session) = self.siblings.as_deref() else { return Ok(()) };
        let id = session.trim_start_matches("refs/heads/session/");
        let mut book = super::own_refs::lock();
        let now = self.own_refs_now()?;
        book.track(&self.common, id, || now);
        Ok(())
    }

    /// The session's own refs as they are on disk.
    fn own_refs_now(&self) -> Result<super::own_refs::Refs, git2::Error> {
        let session = self.siblings.as_deref().unwrap_or_default();
        let mut refs = super::own_refs::Refs::new();
        let glob = format!("{}*", self.own_prefix);
        let own = self.repo.references_glob(&glob)?;
        for r in self.repo.find_reference(session).into_iter().map(Ok).chain(own) {
            let r = r?;
            if let (Ok(name), Some(target)) = (r.name(), target_of(&r)) {
                refs.insert(name.to_owned(), target);
            }
        }
        Ok(refs)
    }

    /// In a lane: puts back every one of the session's own refs that differs from the book
    /// (a worker moved the session branch or another task's kept attempt), and says which.
    fn hold_own(&self) -> Result<Vec<String>, git2::Error> {
        let Some(session) = self.siblings.as_deref() else { return Ok(Vec::new()) };
        let id = session.trim_start_matches("refs/heads/session/");
        let book = super::own_refs::lock();
        let Some(held) = book.held(&self.book_repo, id) else { return Ok(Vec::new()) };
        let now = self.own_refs_now()?;
        let mut restored = Vec::new();
        for (name, target) in held {
            if now.get(name) != Some(target) {
                set_ref(&self.repo, name, target)?;
                restored.push(format!("the ref {name}"));
            }
        }
        for name in now.keys().filter(|n| !held.contains_key(*n)) {
            if let Ok(mut r) = self.repo.find_reference(name) {
                r.delete()?;
                restored.push(format!("the new ref {name} (removed)"));
            }
        }
        Ok(restored)
    }

    /// The refs that follow from the branch the worktree is on: the branch itself, the
    /// session's own refs, and in a lane the prefix its siblings' branches share.
    fn hold_to(&mut self, branch: &str) {
        let session = super::lanes::session_of_branch(branch);
        self.siblings = (branch != format!("session/{session}"))
            .then(|| format!("refs/heads/session/{session}"));
        self.branch_ref = format!("refs/heads/{branch}");
        self.own_prefix = format!("refs/harrow/{session}/");
    }

    /// Whether harrow owns a ref: the session branch and its `refs/harrow/<id>/` refs. Only
    /// harrow moves these, so they are held to what harrow last recorded; everything else
    /// belongs to the user, who may change it while a run goes on.
    fn owns(&self, name: &str) -> bool {
        name == self.branch_ref || name.starts_with(&self.own_prefix)
    }

    /// Whether a ref is another lane's business (see [`GitGuard::siblings`]).
    fn shared(&self, name: &str) -> bool {
        self.siblings.as_deref().is_some_and(|session| {
            name != self.branch_ref
                && (name == session
                    || name.strip_prefix(session).is_some_and(|rest| rest.starts_with("--"))
                    || name.starts_with(&self.own_prefix))
        })
    }

    /// The refs this guard holds, as they are now.
    fn refs(&self) -> Result<BTreeMap<String, String>, git2::Error> {
        let mut refs = refs_of(&self.repo)?;
        refs.retain(|name, _| !self.shared(name));
        Ok(refs)
    }

    /// The stamps of the files that hold refs, taken before they are listed.
    fn ref_stamps(&mut self) -> Option<Vec<RefStamp>> {
        let mut listings = std::mem::take(&mut self.listings);
        let listed = |name: &str, folder: bool| {
            if folder {
                // In a lane, everything under harrow's own refs is the sibling lanes' too.
                !(self.siblings.is_some() && format!("{name}/").starts_with(&self.own_prefix))
            } else {
                name != self.branch_ref && !self.shared(name)
            }
        };
        let stamps = ref_stamps(&self.common, &self.private, &listed, &mut listings);
        self.listings = listings;
        stamps
    }

    /// Whether the refs are as they were when the snapshot was last seen to match the disk:
    /// the stamped ones by their stamps, the guard's own branch by its value.
    fn refs_quiet(&self, stamps: Option<&Vec<RefStamp>>) -> bool {
        self.refs_quiet_but_branch(stamps) && self.branch_holds()
    }

    /// Whether every ref but the guard's own branch is as the snapshot has it, by the stamps
    /// of the files that hold them.
    fn refs_quiet_but_branch(&self, stamps: Option<&Vec<RefStamp>>) -> bool {
        stamps.is_some() && stamps == self.quiet.as_ref()
    }

    /// Whether the guard's own branch points where the snapshot says.
    fn branch_holds(&self) -> bool {
        let now = self.repo.find_reference(&self.branch_ref).ok().and_then(|r| target_of(&r));
        now.as_ref() == self.snapshot.refs.get(&self.branch_ref)
    }

    /// Notes `stamps` as those of the refs on disk when those refs are the snapshot's
    /// (`matching`), unless one of the stamps is not [`settled`].
    fn note_quiet(&mut self, stamps: Option<Vec<RefStamp>>, matching: bool) {
        self.quiet =
            stamps.filter(|stamps| matching && stamps.iter().all(|(_, stamp)| settled(*stamp)));
    }

    /// Takes the user's part of the repository as it is now, just before a tool call: only
    /// what changes *during* the call is the call's doing and put back, so a person working in
    /// their own checkout meanwhile (a commit, a branch switch, a config edit) is left alone.
    /// harrow's own refs keep what harrow last recorded.
    pub fn before_call(&mut self) -> Result<(), git2::Error> {
        let stamps = self.ref_stamps();
        if !self.refs_quiet(stamps.as_ref()) {
            let now = self.refs()?;
            let mut refs: BTreeMap<String, String> = now
                .iter()
                .filter(|(name, _)| !self.owns(name))
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect();
            for (name, target) in &self.snapshot.refs {
                if self.owns(name) {
                    refs.insert(name.clone(), target.clone());
                }
            }
            self.snapshot.refs = refs;
            let matching = now == self.snapshot.refs;
            self.note_quiet(stamps, matching);
        }
        let refresh = |mark: &mut Mark, path: &Path| {
            if stamp(path) != mark.stamp {
                *mark = Mark::of(path);
            }
        };
        refresh(&mut self.snapshot.config, &self.common.join("config"));
        refresh(&mut self.snapshot.worktree_config, &self.private.join("config.worktree"));
        refresh(&mut self.snapshot.source_head, &self.common.join("HEAD"));
        let dir = self.common.join("hooks");
        if stamp(&dir) != self.snapshot.hooks_dir
            || self.snapshot.hooks.iter().any(|(n, m)| stamp(&dir.join(n)) != m.stamp)
        {
            self.snapshot.hooks = hooks_of(&self.common);
            self.snapshot.hooks_dir = stamp(&dir);
        }
        Ok(())
    }

    /// Keeps a user ref's value that a tool call displaced under harrow's refs, so putting the
    /// ref back loses nothing (a commit made in the user's checkout meanwhile included).
    fn keep_displaced(&self, name: &str, target: &str) -> Option<(String, String)> {
        if self.owns(name) || target.starts_with("ref: ") {
            return None;
        }
        let oid = Oid::from_str(target).ok()?;
        let short: String = target.chars().take(12).collect();
        let kept = format!("{}displaced/{}-{short}", self.own_prefix, name.replace('/', "-"));
        let mut book = super::own_refs::lock();
        self.repo.reference(&kept, oid, true, "harrow: a tool call moved this ref").ok()?;
        book.wrote(&self.common, &kept, Some(target.to_owned()));
        Some((kept, target.to_owned()))
    }

    /// Takes what is there now as what is expected: harrow moved something itself.
    pub fn record(&mut self) -> Result<(), git2::Error> {
        let stamps = self.ref_stamps();
        let refs = if self.refs_quiet_but_branch(stamps.as_ref()) {
            // harrow moved only what the stamps leave out (its own branch, a lane's kept
            // attempt): the rest is the snapshot's, and the branch is read on its own.
            let mut refs = std::mem::take(&mut self.snapshot.refs);
            let branch = self.repo.find_reference(&self.branch_ref).ok();
            match branch.as_ref().and_then(target_of) {
                Some(target) => refs.insert(self.branch_ref.clone(), target),
                None => refs.remove(&self.branch_ref),
            };
            refs
        } else {
            self.refs()?
        };
        let before = &self.snapshot;
        self.snapshot = Snapshot {
            refs,
            config: before.config.again(&self.common.join("config")),
            worktree_config: before.worktree_config.again(&self.private.join("config.worktree")),
            gitdir: before.gitdir.again(&self.private.join("gitdir")),
            hooks: hooks_again(&self.common, &before.hooks),
            hooks_dir: stamp(&self.common.join("hooks")),
            source_head: before.source_head.again(&self.common.join("HEAD")),
        };
        // The refs just read are the snapshot's.
        self.note_quiet(stamps, true);
        Ok(())
    }

    /// Puts back every ref that differs from the snapshot (what a tool call displaced kept
    /// under harrow's refs) and says which.
    fn restore_refs(&mut self) -> Result<Vec<String>, git2::Error> {
        let now = self.refs()?;
        let repo = &self.repo;
        let mut restored = Vec::new();
        let mut kept = Vec::new();
        for (name, target) in &self.snapshot.refs {
            if now.get(name) != Some(target) {
                if let Some(moved_to) = now.get(name) {
                    kept.extend(self.keep_displaced(name, moved_to));
                }
                set_ref(repo, name, target)?;
                restored.push(format!("the ref {name}"));
            }
        }
        for (name, target) in now.iter().filter(|(n, _)| !self.snapshot.refs.contains_key(*n)) {
            if let Ok(mut r) = repo.find_reference(name) {
                kept.extend(self.keep_displaced(name, target));
                r.delete()?;
                restored.push(format!("the new ref {name} (removed)"));
            }
        }
        // In a lane, a displaced ref kept under harrow's refs is the lanes' book's to hold.
        let kept: Vec<_> = kept.into_iter().filter(|(name, _)| !self.shared(name)).collect();
        self.snapshot.refs.extend(kept);
        Ok(restored)
    }

    /// Puts back whatever changed since the last record and says what, in words for the
    /// worker. Empty when nothing had changed.
    pub fn restore(&mut self) -> Result<Vec<String>, git2::Error> {
        let mut restored = Vec::new();
        let stamps = self.ref_stamps();
        if !self.refs_quiet(stamps.as_ref()) {
            restored = self.restore_refs()?;
            self.quiet = None;
        }
        restored.extend(self.hold_own()?);
        let repo = &self.repo;
        let head_ok = repo
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
            .is_some_and(|t| t == self.branch_ref);
        if !head_ok {
            repo.set_head(&self.branch_ref)?;
            let branch = self.branch_ref.trim_start_matches("refs/heads/");
            restored.push(format!("HEAD (back on {branch})"));
        }
        let files = [
            (self.common.join("config"), &mut self.snapshot.config, "the repository's git config"),
            (self.common.join("HEAD"), &mut self.snapshot.source_head, "the repository's own HEAD"),
            (
                self.private.join("config.worktree"),
                &mut self.snapshot.worktree_config,
                "the worktree's git config",
            ),
            (self.private.join("gitdir"), &mut self.snapshot.gitdir, "the worktree's gitdir"),
        ];
        for (path, mark, what) in files {
            if !mark.holds(&path) {
                put_back(&path, mark.bytes.as_deref())?;
                mark.stamp = stamp(&path);
                restored.push(what.to_owned());
            }
        }
        let dir = self.common.join("hooks");
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            // A link (or a file) in the hooks folder's place: put a folder back, so nothing
            // below is written through it.
            put_back(&dir, None)?;
            std::fs::create_dir(&dir)
                .map_err(|e| git2::Error::from_str(&format!("restore {}: {e}", dir.display())))?;
        }
        let dir_same = stamp(&dir) == self.snapshot.hooks_dir;
        let mut hooks_changed = false;
        if !dir_same {
            let now: Vec<String> = hooks_of(&self.common).into_keys().collect();
            for name in now.iter().filter(|n| !self.snapshot.hooks.contains_key(*n)) {
                put_back(&dir.join(name), None)?;
                hooks_changed = true;
            }
        }
        for (name, mark) in &mut self.snapshot.hooks {
            let path = dir.join(name);
            if !mark.holds(&path) {
                put_back(&path, mark.bytes.as_deref())?;
                mark.stamp = stamp(&path);
                hooks_changed = true;
            }
        }
        self.snapshot.hooks_dir = stamp(&dir);
        if hooks_changed {
            restored.push("the repository's git hooks".to_owned());
        }
        Ok(restored)
    }
}

/// Writes `bytes` back to `path`, or removes it when there was nothing there. The file is
/// replaced whole, never written through: a worker may have left a link in its place.
fn put_back(path: &Path, bytes: Option<&[u8]>) -> Result<(), git2::Error> {
    match bytes {
        Some(bytes) => crate::safe_io::replace(path, bytes),
        None => std::fs::remove_file(path).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        }),
    }
    .map_err(|e| git2::Error::from_str(&format!("restore {}: {e}", path.display())))
}

fn set_ref(repo: &Repository, name: &str, target: &str) -> Result<(), git2::Error> {
    let message = "harrow: restored after a tool call moved it";
    match target.strip_prefix("ref: ") {
        Some(symbolic) => repo.reference_symbolic(name, symbolic, true, message).map(|_| ()),
        None => repo.reference(name, Oid::from_str(target)?, true, message).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hands::test_git::git;
    use std::process::Command;

    /// A repository `src` in `tmp` with two empty commits on `main`.
    fn two_commits(tmp: &Path) -> PathBuf {
        let src = tmp.join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "two"]);
        src
    }

    /// [`two_commits`] with branch `session/s`, and a lane worktree `lane` beside it on a new
    /// branch `branch`: the repository and the worktree.
    fn in_lane(tmp: &Path, branch: &str) -> (PathBuf, PathBuf) {
        let src = two_commits(tmp);
        git(&src, &["branch", "session/s"]);
        let wt = tmp.join("lane");
        git(&src, &["worktree", "add", "-q", "-b", branch, wt.to_str().unwrap()]);
        (src, wt)
    }

    /// What harrow does when it lands a task or keeps an attempt: the ref written and the
    /// lanes' book told, in one locked step.
    fn by_harrow(src: &Path, name: &str, rev: &str) {
        let mut book = super::super::own_refs::lock();
        git(src, &["update-ref", name, rev]);
        let target = git(src, &["rev-parse", name]).trim().to_owned();
        book.wrote(&src.join(".git"), name, Some(target));
    }

    /// Waits out the racy window: files older than this are held by their stamps.
    fn settle() {
        std::thread::sleep(std::time::Duration::from_millis(2100));
    }

    #[test]
    fn a_ref_rewritten_in_place_after_a_quiet_spell_is_still_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let src = two_commits(tmp.path());
        for n in 0..50 {
            git(&src, &["tag", &format!("v{n}")]);
        }
        git(&src, &["pack-refs", "--all"]);
        git(&src, &["branch", "loose"]);
        let wt = tmp.path().join("wt");
        git(&src, &["worktree", "add", "-q", "-b", "session/s", wt.to_str().unwrap()]);
        let mut guard = GitGuard::new(&wt, "session/s").unwrap();
        // Older than the racy window: the listing is kept and only the stamps are looked at.
        settle();
        guard.before_call().unwrap();
        assert!(guard.quiet.is_some(), "a quiet repository's refs are held by their stamps");
        assert!(guard.restore().unwrap().is_empty());
        let loose = src.join(".git/refs/heads/loose");
        let before = std::fs::read_to_string(&loose).unwrap();
        let first = git(&src, &["rev-parse", "main~1"]);
        assert_eq!(first.len(), before.len(), "same length, same inode: only the time moves");
        std::fs::write(&loose, &first).unwrap();
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the ref refs/heads/loose"], "{restored:?}");
        assert_eq!(std::fs::read_to_string(&loose).unwrap(), before);
        // A packed tag moved: packed-refs is rewritten.
        settle();
        guard.before_call().unwrap();
        git(&wt, &["tag", "-f", "v7", "HEAD~1"]);
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the ref refs/tags/v7"], "{restored:?}");
    }

    #[test]
    fn a_ref_file_written_by_hand_into_a_folder_listed_long_ago_is_still_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let src = two_commits(tmp.path());
        git(&src, &["branch", "team/one"]);
        let wt = tmp.path().join("wt");
        git(&src, &["worktree", "add", "-q", "-b", "session/s", wt.to_str().unwrap()]);
        let mut guard = GitGuard::new(&wt, "session/s").unwrap();
        settle();
        guard.before_call().unwrap();
        assert!(guard.restore().unwrap().is_empty());
        let team = src.join(".git/refs/heads/team");
        assert!(guard.listings.contains_key(&team), "a settled folder's listing is kept");
        // No git: a file written straight into the folder, and one in a new folder under it.
        let tip = git(&src, &["rev-parse", "main"]);
        std::fs::write(team.join("two"), format!("{tip}\n")).unwrap();
        std::fs::create_dir(team.join("deep")).unwrap();
        std::fs::write(team.join("deep/three"), format!("{tip}\n")).unwrap();
        let mut restored = guard.restore().unwrap();
        restored.sort();
        assert_eq!(
            restored,
            [
                "the new ref refs/heads/team/deep/three (removed)",
                "the new ref refs/heads/team/two (removed)"
            ],
            "{restored:?}"
        );
        assert!(!team.join("two").exists() && !team.join("deep/three").exists());
    }

    #[test]
    fn a_lane_guard_stays_quiet_while_sibling_lanes_move_their_refs_and_still_holds_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, wt) = in_lane(tmp.path(), "session/s--T-1");
        git(&src, &["branch", "loose"]);
        let mut guard = GitGuard::new(&wt, "session/s--T-1").unwrap();
        settle();
        guard.before_call().unwrap();
        assert!(guard.quiet.is_some(), "a quiet repository's refs are held by their stamps");
        // The sibling lanes at work: a branch made, an attempt kept, the session branch moved.
        git(&src, &["branch", "session/s--T-2"]);
        by_harrow(&src, "refs/harrow/s/T-2/1", "HEAD");
        by_harrow(&src, "refs/heads/session/s", "main~1");
        assert!(guard.restore().unwrap().is_empty(), "the siblings' refs are theirs");
        guard.before_call().unwrap();
        assert!(guard.quiet.is_some(), "the siblings' refs do not make the guard list every ref");
        // The lane's own branch rewritten in place: same length, same inode.
        let own = src.join(".git/refs/heads/session/s--T-1");
        let before = std::fs::read_to_string(&own).unwrap();
        std::fs::write(&own, git(&src, &["rev-parse", "main~1"])).unwrap();
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the ref refs/heads/session/s--T-1"], "{restored:?}");
        assert_eq!(std::fs::read_to_string(&own).unwrap(), before);
        // A user's ref renamed: same inode, same length, another name.
        settle();
        guard.before_call().unwrap();
        assert!(guard.quiet.is_some());
        let heads = src.join(".git/refs/heads");
        std::fs::rename(heads.join("loose"), heads.join("moved")).unwrap();
        let mut restored = guard.restore().unwrap();
        restored.sort();
        assert_eq!(
            restored,
            ["the new ref refs/heads/moved (removed)", "the ref refs/heads/loose"],
            "{restored:?}"
        );
        // Without a sandbox a worker's git can move the session branch and another task's
        // kept attempt, or plant a ref among harrow's: put back to where harrow put them.
        let (tip, kept) = (
            git(&src, &["rev-parse", "session/s"]),
            git(&src, &["rev-parse", "refs/harrow/s/T-2/1"]),
        );
        git(&wt, &["update-ref", "refs/heads/session/s", "main"]);
        git(&wt, &["update-ref", "refs/harrow/s/T-2/1", "main~1"]);
        git(&wt, &["update-ref", "refs/harrow/s/T-9/1", "main"]);
        let mut restored = guard.restore().unwrap();
        restored.sort();
        assert_eq!(
            restored,
            [
                "the new ref refs/harrow/s/T-9/1 (removed)",
                "the ref refs/harrow/s/T-2/1",
                "the ref refs/heads/session/s"
            ],
            "{restored:?}"
        );
        assert_eq!(git(&src, &["rev-parse", "session/s"]), tip);
        assert_eq!(git(&src, &["rev-parse", "refs/harrow/s/T-2/1"]), kept);
    }

    #[test]
    fn a_quiet_guard_records_harrows_commit_on_its_branch_without_listing_every_ref() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, wt) = in_lane(tmp.path(), "session/s--worktree-1");
        let mut guard = GitGuard::new(&wt, "session/s--worktree-1").unwrap();
        settle();
        guard.before_call().unwrap();
        assert!(guard.quiet.is_some(), "a quiet repository's refs are held by their stamps");
        // harrow commits the lane's work and keeps it as an attempt, then records.
        git(&wt, &["commit", "-q", "--allow-empty", "-m", "work"]);
        by_harrow(&src, "refs/harrow/s/T-1/1", "session/s--worktree-1");
        let committed = git(&src, &["rev-parse", "session/s--worktree-1"]);
        guard.record().unwrap();
        assert!(guard.quiet.is_some(), "nothing the stamps cover moved");
        assert!(guard.restore().unwrap().is_empty(), "the commit is what the guard holds now");
        assert_eq!(git(&src, &["rev-parse", "session/s--worktree-1"]), committed);
        // A worker's command moves the branch afterwards: put back to harrow's commit.
        git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the ref refs/heads/session/s--worktree-1"], "{restored:?}");
        assert_eq!(git(&src, &["rev-parse", "session/s--worktree-1"]), committed);
    }

    #[test]
    fn a_guard_retargeted_to_a_lanes_next_branch_holds_that_branch_and_head_to_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, wt) = in_lane(tmp.path(), "session/s--T-1");
        let mut guard = GitGuard::new(&wt, "session/s--T-1").unwrap();
        // The lane's task landed; the worktree takes the next task's branch.
        git(&wt, &["checkout", "-q", "-b", "session/s--T-2"]);
        git(&src, &["branch", "-D", "-q", "session/s--T-1"]);
        guard.retarget("session/s--T-2").unwrap();
        assert!(guard.restore().unwrap().is_empty(), "the lane as harrow left it");
        git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the ref refs/heads/session/s--T-2"], "{restored:?}");
        git(&wt, &["checkout", "-q", "--detach"]);
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["HEAD (back on session/s--T-2)"], "{restored:?}");
    }

    /// The worker's `git` can write the worktree's git folder: its `gitdir` (where libgit2's
    /// prune would delete) is put back, and a file swapped for a link is replaced, never
    /// written through — the link's target keeps its bytes.
    #[test]
    fn a_forged_gitdir_is_put_back_and_a_planted_link_is_never_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, wt) = in_lane(tmp.path(), "session/s--worktree-1");
        let mut guard = GitGuard::new(&wt, "session/s--worktree-1").unwrap();
        let gitdir = src.join(".git/worktrees/lane/gitdir");
        let was = std::fs::read(&gitdir).unwrap();
        std::fs::write(&gitdir, format!("{}\n", src.join("README.md").display())).unwrap();
        let restored = guard.restore().unwrap();
        assert_eq!(restored, ["the worktree's gitdir"], "{restored:?}");
        assert_eq!(std::fs::read(&gitdir).unwrap(), was);
        let victim = tmp.path().join("events.jsonl");
        std::fs::write(&victim, "the session's log\n").unwrap();
        for file in [gitdir.clone(), src.join(".git/config")] {
            std::fs::remove_file(&file).unwrap();
            std::os::unix::fs::symlink(&victim, &file).unwrap();
            let restored = guard.restore().unwrap();
            assert_eq!(restored.len(), 1, "{restored:?}");
            assert!(!std::fs::symlink_metadata(&file).unwrap().file_type().is_symlink());
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the session's log\n");
        }
        // A FIFO in the config's place does not make the guard wait.
        let config = src.join(".git/config");
        std::fs::remove_file(&config).unwrap();
        nix::unistd::mkfifo(&config, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(guard.restore().unwrap(), ["the repository's git config"]);
        // The hooks folder swapped for a link to another folder: a folder again, the other's
        // files untouched.
        let hooks = src.join(".git/hooks");
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("pre-commit.sample"), "mine").unwrap();
        std::fs::rename(&hooks, tmp.path().join("hooks-moved")).unwrap();
        std::os::unix::fs::symlink(&other, &hooks).unwrap();
        guard.restore().unwrap();
        assert!(std::fs::symlink_metadata(&hooks).unwrap().is_dir());
        assert_eq!(std::fs::read_to_string(other.join("pre-commit.sample")).unwrap(), "mine");
    }

    #[test]
    fn puts_back_refs_head_config_and_hooks() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a"), "a\n").unwrap();
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "one"]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "two"]);
        git(&src, &["branch", "other"]);
        let wt = tmp.path().join("wt");
        git(&src, &["worktree", "add", "-q", "-b", "session/s", wt.to_str().unwrap()]);
        let mut guard = GitGuard::new(&wt, "session/s").unwrap();
        assert!(guard.restore().unwrap().is_empty(), "nothing changed yet");

        git(&wt, &["reset", "-q", "--soft", "HEAD~1"]);
        git(&wt, &["branch", "-f", "other", "HEAD"]);
        git(&wt, &["tag", "evil"]);
        git(&wt, &["config", "core.fsmonitor", "touch /tmp/pwned"]);
        let hooks = src.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("post-checkout"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
        let sample = hooks.join("pre-commit.sample");
        let original = std::fs::read(&sample).unwrap();
        let mut forged = original.clone();
        forged[0] = b'X';
        std::fs::write(&sample, &forged).unwrap();
        let same_time = Command::new("touch")
            .arg("-r")
            .arg(hooks.join("pre-push.sample"))
            .arg(&sample)
            .status()
            .unwrap();
        assert!(same_time.success(), "a same-size rewrite with its time set back");
        git(&wt, &["checkout", "-q", "--detach"]);
        git(&src, &["symbolic-ref", "HEAD", "refs/heads/other"]);
        let restored = guard.restore().unwrap();
        assert!(restored.len() >= 5, "{restored:?}");
        assert!(guard.restore().unwrap().is_empty(), "all put back: {:?}", guard.restore());
        let config = std::fs::read_to_string(src.join(".git/config")).unwrap();
        assert!(!config.contains("fsmonitor"));
        let displaced =
            git(&src, &["for-each-ref", "--format=%(refname)", "refs/harrow/s/displaced/"]);
        assert!(displaced.contains("refs-heads-other-"), "what was displaced is kept: {displaced}");
        assert!(displaced.contains("refs-tags-evil-"), "{displaced}");

        // The user's own work between tool calls is theirs, not the worker's.
        git(&src, &["commit", "-q", "--allow-empty", "-m", "the user's own commit"]);
        git(&src, &["config", "user.signingkey", "mine"]);
        guard.before_call().unwrap();
        assert!(guard.restore().unwrap().is_empty(), "nothing of the user's is put back");
        let log = git(&src, &["log", "-1", "--format=%s", "main"]);
        assert_eq!(log.trim(), "the user's own commit");
        assert!(!hooks.join("post-checkout").exists());
        assert_eq!(std::fs::read(&sample).unwrap(), original, "a forged mtime does not hide it");
        let head = std::fs::read_to_string(wt.join(".git")).unwrap();
        let private = PathBuf::from(head.trim().trim_start_matches("gitdir: "));
        assert_eq!(
            std::fs::read_to_string(private.join("HEAD")).unwrap().trim(),
            "ref: refs/heads/session/s"
        );
    }
}
