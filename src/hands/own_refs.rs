//! Where harrow last put a session's own refs — its branch `session/<id>` and everything under
//! `refs/harrow/<id>/` — shared by every lane of a run.
//!
//! Lanes work in one repository at once: while one lane's tool call runs, another lane lands
//! its task (moving the session branch) or keeps an attempt (adding a ref under
//! `refs/harrow/<id>/`). A lane's git guard therefore cannot hold those refs to what they were
//! before its call; it holds them to this book, which harrow writes in the same locked step as
//! the ref itself. A ref that differs from the book after a tool call was moved by a worker,
//! and is put back — whichever lane's worker did it, with or without a sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A session's own refs as harrow last wrote them: name → target.
pub type Refs = BTreeMap<String, String>;

/// Every session a lane's guard holds, by repository (its common git folder) and session.
#[derive(Debug, Default)]
pub struct Book {
    sessions: BTreeMap<(PathBuf, String), Refs>,
}

static BOOK: Mutex<Book> = Mutex::new(Book { sessions: BTreeMap::new() });

/// The book, held while a ref is written and the book told, or while a guard compares: no
/// guard sees a ref of harrow's moved before the book says so.
pub fn lock() -> MutexGuard<'static, Book> {
    // A thread that panicked while holding it left whole entries: each change is one insert.
    BOOK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A repository as the book knows it: its common git folder's real path, whichever worktree
/// named it. A guard works it out once; a write, rare, each time.
pub fn repo_key(common: &Path) -> PathBuf {
    common.canonicalize().unwrap_or_else(|_| common.to_path_buf())
}

fn key(common: &Path, session: &str) -> (PathBuf, String) {
    (repo_key(common), session.to_owned())
}

/// The session a ref belongs to when it is one of a session's own: `session/<id>` (not a
/// lane's branch) or `refs/harrow/<id>/…`.
fn session_of(name: &str) -> Option<&str> {
    if let Some(id) = name.strip_prefix("refs/heads/session/") {
        return (!id.contains("--") && !id.is_empty()).then_some(id);
    }
    name.strip_prefix("refs/harrow/")?.split_once('/').map(|(id, _)| id)
}

impl Book {
    /// Starts holding `session`'s refs in the repository at `common` as they are now, unless
    /// they are held already. Returns what the book holds.
    pub fn track(&mut self, common: &Path, session: &str, now: impl FnOnce() -> Refs) -> &Refs {
        self.sessions.entry(key(common, session)).or_insert_with(now)
    }

    /// harrow wrote `name` in the repository at `common` (`None`: deleted it). Only a session
    /// the book holds is noted.
    pub fn wrote(&mut self, common: &Path, name: &str, target: Option<String>) {
        let Some(session) = session_of(name) else { return };
        if let Some(refs) = self.sessions.get_mut(&key(common, session)) {
            match target {
                Some(t) => refs.insert(name.to_owned(), t),
                None => refs.remove(name),
            };
        }
    }

    /// Stops holding `session`'s refs: a run that starts its lanes takes them afresh, so a
    /// book left from an earlier run in this process never puts back what it recorded then.
    pub fn forget(&mut self, common: &Path, session: &str) {
        self.sessions.remove(&key(common, session));
    }

    /// What the book holds for `session` in the repository `repo` ([`repo_key`]): asked after
    /// every tool call of every lane, so the key is the caller's, worked out once.
    pub fn held(&self, repo: &Path, session: &str) -> Option<&Refs> {
        self.sessions.get(&(repo.to_path_buf(), session.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sessions_own_refs_are_booked_and_only_once_held() {
        assert_eq!(session_of("refs/heads/session/abc"), Some("abc"));
        assert_eq!(session_of("refs/heads/session/abc--worktree-1"), None, "a lane's branch");
        assert_eq!(session_of("refs/harrow/abc/T-1/2"), Some("abc"));
        assert_eq!(session_of("refs/heads/main"), None);
        let mut book = Book::default();
        let common = Path::new("/r/.git");
        book.wrote(common, "refs/harrow/abc/T-1/1", Some("1".into()));
        assert!(book.held(&repo_key(common), "abc").is_none(), "not held, not noted");
        book.track(common, "abc", || Refs::from([("refs/heads/session/abc".into(), "0".into())]));
        book.track(common, "abc", Refs::new);
        book.wrote(common, "refs/harrow/abc/T-1/1", Some("1".into()));
        book.wrote(common, "refs/heads/session/abc", None);
        let held = book.held(&repo_key(common), "abc").unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(held["refs/harrow/abc/T-1/1"], "1");
    }
}
