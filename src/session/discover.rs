//! Where sessions live, and finding one by id, prefix or path.

use super::dir::CHECKPOINT_FILE;
use super::dir::EVENTS_FILE;
use std::fmt;
use std::path::{Path, PathBuf};

/// Which program wrote the sessions under a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Harrow,
    Tilth,
    /// A folder named on the command line.
    Given,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Harrow => "harrow",
            Origin::Tilth => "tilth",
            Origin::Given => "given",
        })
    }
}

/// A folder that holds session folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub path: PathBuf,
    pub origin: Origin,
}

/// harrow's sessions folder: `$HARROW_SESSIONS_DIR`, else the platform data dir.
pub fn harrow_sessions_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("HARROW_SESSIONS_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("", "", "harrow").map(|d| d.data_dir().join("sessions"))
}

/// Tilth's sessions folder: `$TILTH_SESSIONS_DIR`, else `$TILTH_HOME/sessions`, else
/// `~/.tilth/sessions`.
pub fn tilth_sessions_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TILTH_SESSIONS_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(home) = std::env::var_os("TILTH_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(home).join("sessions"));
    }
    directories::BaseDirs::new().map(|d| d.home_dir().join(".tilth").join("sessions"))
}

/// The roots to look in: the folders given, or harrow's and Tilth's defaults.
pub fn roots(given: &[PathBuf]) -> Vec<Root> {
    if !given.is_empty() {
        return given.iter().map(|p| Root { path: p.clone(), origin: Origin::Given }).collect();
    }
    let mut roots = Vec::new();
    if let Some(p) = harrow_sessions_dir() {
        roots.push(Root { path: p, origin: Origin::Harrow });
    }
    if let Some(p) = tilth_sessions_dir() {
        roots.push(Root { path: p, origin: Origin::Tilth });
    }
    roots
}

/// Whether a folder looks like a session: it has an event log or a checkpoint.
pub fn is_session_dir(dir: &Path) -> bool {
    dir.join(EVENTS_FILE).is_file() || dir.join(CHECKPOINT_FILE).is_file()
}

/// A session folder found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    pub dir: PathBuf,
    pub origin: Origin,
}

impl Found {
    /// A session whose folder is already known (a run that just ended, an open console).
    pub fn at(dir: &Path, id: &str) -> Found {
        Found { id: id.to_owned(), dir: dir.to_path_buf(), origin: Origin::Given }
    }
}

/// Every session under the roots, newest first (ids start with their local start time, so
/// name order is time order, as Tilth sorts them).
pub fn list(roots: &[Root]) -> Vec<Found> {
    let mut found = list_where(roots, is_session_dir);
    found.sort_by(|a, b| b.id.cmp(&a.id).then_with(|| a.dir.cmp(&b.dir)));
    found
}

/// [`list`] with the test of a folder given: a fleet that follows thousands of sessions
/// already knows which folders are sessions, and spares a `stat` for each on every look.
/// Links are not followed: a session is a folder in the root, as harrow makes it. In no
/// particular order.
pub fn list_where(roots: &[Root], is_session: impl Fn(&Path) -> bool) -> Vec<Found> {
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root.path) else { continue };
        for entry in entries.flatten() {
            let dir = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) && is_session(&dir) {
                let id = entry.file_name().to_string_lossy().into_owned();
                found.push(Found { id, dir, origin: root.origin });
            }
        }
    }
    found
}

/// Why an id did not name exactly one session.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResolveError {
    #[error("{0} is not a session folder (it has no events.jsonl or checkpoint.json)")]
    NotASession(PathBuf),
    #[error(
        "no session matches '{id}' in {searched}; `harrow sessions` lists them, or give the folder's path"
    )]
    NoMatch { id: String, searched: String },
    #[error("'{id}' matches {count} sessions ({examples}); give more of the id")]
    Ambiguous { id: String, count: usize, examples: String },
}

/// Finds one session by path, whole id, unique id prefix, or the unique end of an id (the short
/// name the fleet shows, four characters or more).
pub fn resolve(query: &str, roots: &[Root]) -> Result<Found, ResolveError> {
    let as_path = Path::new(query);
    let looks_like_path = query.contains(std::path::MAIN_SEPARATOR) || query.starts_with('.');
    if as_path.is_dir() && (looks_like_path || is_session_dir(as_path)) {
        if !is_session_dir(as_path) {
            return Err(ResolveError::NotASession(as_path.to_path_buf()));
        }
        let id = as_path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| query.to_owned());
        return Ok(Found { id, dir: as_path.to_path_buf(), origin: Origin::Given });
    }
    if looks_like_path {
        return Err(ResolveError::NotASession(as_path.to_path_buf()));
    }
    let all = list(roots);
    if let Some(exact) = all.iter().find(|f| f.id == query) {
        return Ok(exact.clone());
    }
    let mut matches: Vec<&Found> = all.iter().filter(|f| f.id.starts_with(query)).collect();
    if matches.is_empty() && query.len() >= 4 {
        // The short name the fleet shows: the id's end (`ec3b62` of `20261126-…-ec3b62`).
        matches = all.iter().filter(|f| f.id.ends_with(query)).collect();
    }
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ResolveError::NoMatch {
            id: query.to_owned(),
            searched: roots
                .iter()
                .map(|r| r.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
        many => Err(ResolveError::Ambiguous {
            id: query.to_owned(),
            count: many.len(),
            examples: many
                .iter()
                .take(10)
                .map(|f| format!("{} in {}", f.id, f.dir.parent().unwrap_or(&f.dir).display()))
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(root: &Path, id: &str) {
        std::fs::create_dir_all(root.join(id)).unwrap();
        std::fs::write(root.join(id).join(EVENTS_FILE), "").unwrap();
    }

    #[test]
    fn lists_newest_first_and_resolves_prefixes() {
        let tmp = tempfile::tempdir().unwrap();
        make(tmp.path(), "20261122-042843-e02b19");
        make(tmp.path(), "20261122-042956-344294");
        make(tmp.path(), "20261121-100000-aaaaaa");
        std::fs::create_dir_all(tmp.path().join("not-a-session")).unwrap();
        let roots = vec![Root { path: tmp.path().to_path_buf(), origin: Origin::Tilth }];
        let ids: Vec<String> = list(&roots).into_iter().map(|f| f.id).collect();
        assert_eq!(
            ids,
            ["20261122-042956-344294", "20261122-042843-e02b19", "20261121-100000-aaaaaa"]
        );
        assert_eq!(resolve("20261122-0428", &roots).unwrap().id, "20261122-042843-e02b19");
        assert!(matches!(
            resolve("20261122", &roots),
            Err(ResolveError::Ambiguous { count: 2, .. })
        ));
        assert!(matches!(resolve("2030", &roots), Err(ResolveError::NoMatch { .. })));
        let by_path = tmp.path().join("20261121-100000-aaaaaa");
        assert_eq!(
            resolve(by_path.to_str().unwrap(), &roots).unwrap().id,
            "20261121-100000-aaaaaa"
        );
        let not = tmp.path().join("not-a-session");
        assert!(matches!(
            resolve(not.to_str().unwrap(), &roots),
            Err(ResolveError::NotASession(_))
        ));
    }
}
