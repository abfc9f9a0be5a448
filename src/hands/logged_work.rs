//! What a session's log says landed and was kept: the only commits harrow brings from a session
//! folder into a clone, or ships from one. The folder's git copy (`attempts.git`) is a cache
//! of those commits, never their authority: a commit added to its session branch, or a kept
//! ref moved, by anyone who can write the folder is refused here, naming the first commit that
//! differs from the record.

use crate::session::event::EventKind;
use git2::{Oid, Repository};
use std::collections::HashSet;
use std::path::Path;

/// The commits the log names: those landed on the session branch, in order, and every kept
/// attempt (as checked, as judged, combined, set aside, rewound).
#[derive(Debug, Default)]
pub struct LoggedWork {
    landed: Vec<Oid>,
    kept: HashSet<Oid>,
}

impl LoggedWork {
    /// Reads the log of the session folder `dir` (every reader's bounds hold: a line past its
    /// cap is skipped as unreadable, as everywhere).
    pub fn read(dir: &Path) -> std::io::Result<LoggedWork> {
        let log = crate::session::dir::SessionDir::new(dir).events();
        let mut work = LoggedWork::default();
        let read = crate::session::scan::scan_lines_from(&log, 0, 1, |_, line, fact| {
            let kind = fact.event_kind();
            let naming_commits = matches!(
                kind,
                Some(
                    EventKind::Commit
                        | EventKind::Verdict
                        | EventKind::ValidatorRun
                        | EventKind::OperatorAction
                )
            );
            if !naming_commits {
                return;
            }
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else { return };
            let payload = &event["payload"];
            let oid = |field: &str| payload[field].as_str().and_then(|s| Oid::from_str(s).ok());
            if kind == Some(EventKind::Commit) {
                work.landed.extend(oid("sha"));
            } else {
                work.kept.extend(oid("attempt_commit"));
                work.kept.extend(oid("set_aside"));
                work.kept.extend(oid("witnessed_commit"));
            }
        });
        match read {
            // No log: nothing was landed or kept.
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(work),
        }
    }

    /// Whether the session branch at `tip` is the chain of landings the log names, on top of
    /// `base`: each commit, from the base up, the one the log landed there. A branch that
    /// stops short is taken (a crash between logging a landing and copying the branch leaves
    /// the copy one landing behind; nothing unjudged is in it).
    pub fn check_branch(
        &self,
        repo: &Repository,
        base: Oid,
        tip: Oid,
    ) -> std::result::Result<(), String> {
        let mut chain = Vec::new();
        let mut at = tip;
        while at != base {
            if chain.len() > self.landed.len() {
                // Longer than everything the log landed: its newest commit is one too many.
                return Err(format!(
                    "the session branch holds commit {} and more beyond what the session's log landed",
                    short(tip)
                ));
            }
            let commit = repo.find_commit(at).map_err(|e| format!("commit {at}: {e}"))?;
            chain.push(at);
            at = match commit.parent_id(0) {
                Ok(parent) => parent,
                Err(_) => break,
            };
        }
        chain.reverse();
        for (i, found) in chain.iter().enumerate() {
            if self.landed.get(i) != Some(found) {
                let said = self.landed.get(i).map_or_else(
                    || "nothing more landed".to_owned(),
                    |sha| format!("{} landed there", short(*sha)),
                );
                return Err(format!(
                    "the session branch holds commit {}, which the session's log never landed ({said})",
                    short(*found)
                ));
            }
        }
        Ok(())
    }

    /// Whether every kept ref points at a commit the log kept.
    pub fn check_kept(&self, kept: &[(String, Oid)]) -> std::result::Result<(), String> {
        match kept.iter().find(|(_, oid)| !self.kept.contains(oid)) {
            None => Ok(()),
            // The ref's name comes from a folder someone else may write: printable only.
            Some((name, oid)) => Err(format!(
                "{} points at commit {}, which the session's log never kept",
                crate::printable::line(name),
                short(*oid)
            )),
        }
    }
}

fn short(oid: Oid) -> String {
    oid.to_string()[..12].to_owned()
}
