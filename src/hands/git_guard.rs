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

/// What the guard holds the repository to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    /// Every ref except the worktree-private `HEAD`: name → target (an object id, or
    /// `ref: NAME` for a symbolic ref).
    refs: BTreeMap<String, String>,
    /// The repository's `config`, byte for byte (`None`: there was none).
    config: Option<Vec<u8>>,
    /// The worktree's own `config.worktree`, when there is one.
    worktree_config: Option<Vec<u8>>,
    /// The hooks folder: file name → content.
    hooks: BTreeMap<String, Vec<u8>>,
    /// The user's own checkout's `HEAD` (the repository's shared `HEAD` file).
    source_head: Option<Vec<u8>>,
}

/// The guard over one session's worktree.
#[derive(Debug)]
pub struct GitGuard {
    worktree: PathBuf,
    /// `refs/heads/session/<id>`: where the worktree's `HEAD` must point.
    branch_ref: String,
    common: PathBuf,
    private: PathBuf,
    snapshot: Snapshot,
}

fn read_opt(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

fn hooks_of(common: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(common.join("hooks")).into_iter().flatten().flatten() {
        if let Ok(bytes) = std::fs::read(entry.path()) {
            out.insert(entry.file_name().to_string_lossy().into_owned(), bytes);
        }
    }
    out
}

fn refs_of(repo: &Repository) -> Result<BTreeMap<String, String>, git2::Error> {
    let mut out = BTreeMap::new();
    for r in repo.references()? {
        let r = r?;
        let Ok(name) = r.name() else { continue };
        let target = match (r.symbolic_target().ok().flatten(), r.target()) {
            (Some(sym), _) => format!("ref: {sym}"),
            (None, Some(oid)) => oid.to_string(),
            (None, None) => continue,
        };
        out.insert(name.to_owned(), target);
    }
    Ok(out)
}

impl GitGuard {
    /// Records the repository as it is now. Call it when harrow has just written what it
    /// expects (after creating the worktree, after each accepted commit).
    pub fn new(worktree: &Path, branch: &str) -> Result<GitGuard, git2::Error> {
        let repo = Repository::open(worktree)?;
        let mut guard = GitGuard {
            worktree: worktree.to_path_buf(),
            branch_ref: format!("refs/heads/{branch}"),
            common: repo.commondir().to_path_buf(),
            private: repo.path().to_path_buf(),
            snapshot: Snapshot {
                refs: BTreeMap::new(),
                config: None,
                worktree_config: None,
                hooks: BTreeMap::new(),
                source_head: None,
            },
        };
        guard.record()?;
        Ok(guard)
    }

    /// Takes what is there now as what is expected: harrow moved something itself.
    pub fn record(&mut self) -> Result<(), git2::Error> {
        let repo = Repository::open(&self.worktree)?;
        self.snapshot = Snapshot {
            refs: refs_of(&repo)?,
            config: read_opt(&self.common.join("config")),
            worktree_config: read_opt(&self.private.join("config.worktree")),
            hooks: hooks_of(&self.common),
            source_head: read_opt(&self.common.join("HEAD")),
        };
        Ok(())
    }

    /// Puts back whatever changed since the last record and says what, in words for the
    /// worker. Empty when nothing had changed.
    pub fn restore(&self) -> Result<Vec<String>, git2::Error> {
        let repo = Repository::open(&self.worktree)?;
        let mut restored = Vec::new();
        let now = refs_of(&repo)?;
        for (name, target) in &self.snapshot.refs {
            if now.get(name) != Some(target) {
                set_ref(&repo, name, target)?;
                restored.push(format!("the ref {name}"));
            }
        }
        for name in now.keys().filter(|n| !self.snapshot.refs.contains_key(*n)) {
            if let Ok(mut r) = repo.find_reference(name) {
                r.delete()?;
                restored.push(format!("the new ref {name} (removed)"));
            }
        }
        let head_ok = repo
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
            .is_some_and(|t| t == self.branch_ref);
        if !head_ok {
            repo.set_head(&self.branch_ref)?;
            restored.push(format!(
                "HEAD (back on {})",
                self.branch_ref.trim_start_matches("refs/heads/")
            ));
        }
        let files = [
            (self.common.join("config"), &self.snapshot.config, "the repository's git config"),
            (self.common.join("HEAD"), &self.snapshot.source_head, "the repository's own HEAD"),
            (
                self.private.join("config.worktree"),
                &self.snapshot.worktree_config,
                "the worktree's git config",
            ),
        ];
        for (path, want, what) in files {
            if read_opt(&path).as_ref() != want.as_ref() {
                match want {
                    Some(bytes) => std::fs::write(&path, bytes),
                    None => std::fs::remove_file(&path),
                }
                .map_err(|e| git2::Error::from_str(&format!("restore {}: {e}", path.display())))?;
                restored.push(what.to_owned());
            }
        }
        let hooks = hooks_of(&self.common);
        if hooks != self.snapshot.hooks {
            let dir = self.common.join("hooks");
            for name in hooks.keys().filter(|n| !self.snapshot.hooks.contains_key(*n)) {
                let _ = std::fs::remove_file(dir.join(name));
            }
            for (name, bytes) in &self.snapshot.hooks {
                if hooks.get(name) != Some(bytes) {
                    let _ = std::fs::write(dir.join(name), bytes);
                }
            }
            restored.push("the repository's git hooks".to_owned());
        }
        Ok(restored)
    }
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
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&ok.stderr));
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
        let guard = GitGuard::new(&wt, "session/s").unwrap();
        assert!(guard.restore().unwrap().is_empty(), "nothing changed yet");

        git(&wt, &["reset", "-q", "--soft", "HEAD~1"]);
        git(&wt, &["branch", "-f", "other", "HEAD"]);
        git(&wt, &["tag", "evil"]);
        git(&wt, &["config", "core.fsmonitor", "touch /tmp/pwned"]);
        let hooks = src.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("post-checkout"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
        git(&wt, &["checkout", "-q", "--detach"]);
        git(&src, &["symbolic-ref", "HEAD", "refs/heads/other"]);
        let restored = guard.restore().unwrap();
        assert!(restored.len() >= 5, "{restored:?}");
        assert!(guard.restore().unwrap().is_empty(), "all put back: {:?}", guard.restore());
        let config = std::fs::read_to_string(src.join(".git/config")).unwrap();
        assert!(!config.contains("fsmonitor"));
        assert!(!hooks.join("post-checkout").exists());
        let head = std::fs::read_to_string(wt.join(".git")).unwrap();
        let private = PathBuf::from(head.trim().trim_start_matches("gitdir: "));
        assert_eq!(
            std::fs::read_to_string(private.join("HEAD")).unwrap().trim(),
            "ref: refs/heads/session/s"
        );
    }
}
