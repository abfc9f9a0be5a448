//! Writing an accepted draft: the feature folder (`.harrow/<feature>/`: overview, tasks, seed
//! file) and the seed tests, committed together on the branch the repository is on. A dirty
//! tree is refused unless the person says otherwise, and nothing that exists is overwritten.

use super::draft::Draft;
use git2::{IndexAddOption, Repository, Signature, StatusOptions};
use std::path::{Path, PathBuf};

/// What was written and committed.
#[derive(Debug, Clone)]
pub struct Written {
    /// The feature folder, inside the repository.
    pub dir: PathBuf,
    /// Every file written, relative to the repository.
    pub files: Vec<String>,
    pub sha: String,
    pub branch: String,
    /// How many task files the plan has.
    pub tasks: usize,
}

/// Why the draft could not be written; one line each.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "{0} is not a git repository: run prep inside the repository the plan is for (--repo DIR)"
    )]
    NotARepository(String),
    #[error(
        "the working tree has uncommitted changes: commit or stash them first, or pass --allow-dirty"
    )]
    Dirty,
    #[error("{0} exists already: choose another --feature, or move it aside")]
    Exists(String),
    #[error("cannot write {0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}; nothing was written")]
    Unsafe(String),
    #[error("git: {0}")]
    Git(String),
}

// `map_err` hands the error over by value.
#[allow(clippy::needless_pass_by_value)]
fn git(e: git2::Error) -> WriteError {
    WriteError::Git(e.message().to_owned())
}

/// The interview a plan's seed file names, if it names one.
pub fn prep_session(seed: &str) -> Option<&str> {
    let line = seed.lines().next()?.trim();
    let inner = line.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    inner.strip_prefix(super::draft::PREP_MARK).map(str::trim).filter(|id| !id.is_empty())
}

/// The folder a feature's plan goes in.
pub fn feature_dir(repo: &Path, feature: &str) -> PathBuf {
    repo.join(".harrow").join(feature)
}

/// The files a draft becomes, relative to the repository: the plan folder (its seed file
/// naming the interview `session`, so a run on the plan can say where it came from) and the
/// seed tests.
pub fn planned(draft: &Draft, feature: &str, session: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(".harrow").join(feature);
    let mut files: Vec<(PathBuf, String)> = draft
        .files(feature, session)
        .into_iter()
        .map(|(name, text)| (dir.join(name), text))
        .collect();
    files.extend(draft.seed_tests.iter().map(|t| (PathBuf::from(&t.path), t.content.clone())));
    // A plan file holds no byte a terminal would obey when someone `cat`s it.
    for (_, text) in &mut files {
        if let std::borrow::Cow::Owned(clean) = crate::printable::text(text) {
            *text = clean;
        }
    }
    files
}

/// Why `rel` may not be written in the repository at `top`, if it may not: it must be a plain
/// relative path, name no `.git`, and no part of it that exists may be a symbolic link (a
/// committed `docs -> /elsewhere` would carry the write outside) or anything but a folder on
/// the way. Every path prep writes is checked so, when the model drafts it and again when it
/// is written.
fn refuse_path(top: &Path, rel: &Path) -> Option<String> {
    use std::path::Component;
    let shown = rel.display();
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Some(format!("'{shown}' is not a plain path inside the repository"));
    }
    if rel.components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git")) {
        return Some(format!("'{shown}' is inside .git, which prep never writes"));
    }
    let mut here = top.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, part) in parts.iter().enumerate() {
        here.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&here) else { return None };
        let at = here.strip_prefix(top).unwrap_or(&here).display().to_string();
        if meta.file_type().is_symlink() {
            return Some(format!(
                "'{shown}' goes through '{at}', a symbolic link: write the plan where no link leads"
            ));
        }
        if i + 1 < parts.len() && !meta.is_dir() {
            return Some(format!("'{shown}' goes through '{at}', which is not a folder"));
        }
    }
    None
}

/// Every planned path that may not be written, in words for the model.
pub fn refused(top: &Path, planned: &[(PathBuf, String)]) -> Vec<String> {
    planned.iter().filter_map(|(rel, _)| refuse_path(top, rel)).collect()
}

/// Creates `rel` under `top` with `text`: each missing folder made one at a time and no link
/// followed on the way (a folder swapped for a link after the check is refused by `mkdir` and
/// `O_NOFOLLOW`), and never over an existing file.
fn create_inside(top: &Path, rel: &Path, text: &str) -> Result<(), WriteError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(why) = refuse_path(top, rel) {
        return Err(WriteError::Unsafe(why));
    }
    let mut here = top.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    let io = |p: &Path, e| WriteError::Io(p.display().to_string(), e);
    for part in &parts[..parts.len().saturating_sub(1)] {
        here.push(part);
        match std::fs::create_dir(&here) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(&here).map_err(|e| io(&here, e))?;
                if !meta.is_dir() {
                    return Err(WriteError::Unsafe(format!(
                        "'{}' changed into something that is not a folder",
                        here.display()
                    )));
                }
            }
            Err(e) => return Err(io(&here, e)),
        }
    }
    let path = top.join(rel);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| io(&path, e))?;
    file.write_all(text.as_bytes()).map_err(|e| io(&path, e))
}

/// Reads back the draft as the person edited it (`==> PATH` before each file), checking that
/// every path stays inside the repository and that the plan folder is still a valid plan.
pub fn parse_edited(text: &str, feature: &str) -> Result<Vec<(PathBuf, String)>, Vec<String>> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("==> ") {
            files.push((PathBuf::from(path.trim()), String::new()));
        } else if let Some((_, body)) = files.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let mut problems: Vec<String> = files
        .iter()
        .filter_map(|(p, _)| crate::harness::plan::check_test_path(&p.display().to_string()).err())
        .collect();
    let dir = Path::new(".harrow").join(feature);
    let check = tempfile_dir().map_err(|e| vec![e.to_string()])?;
    for (path, text) in &files {
        if let Ok(name) = path.strip_prefix(&dir) {
            let _ = std::fs::write(check.join(name), text.trim_end().to_owned() + "\n");
        }
    }
    if let Err(plan) = crate::harness::plan::check(&check) {
        problems.extend(plan.iter().map(|p| {
            p.to_string().replace(&check.display().to_string(), &dir.display().to_string())
        }));
    }
    let _ = std::fs::remove_dir_all(&check);
    for (_, text) in &mut files {
        *text = text.trim_end().to_owned() + "\n";
    }
    if problems.is_empty() { Ok(files) } else { Err(problems) }
}

/// A fresh private folder to check an edited plan in.
fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "harrow-plan-check-{}-{}",
        std::process::id(),
        crate::session::timestamp::new_session_id()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Whether the repository's working tree has uncommitted changes (untracked files count,
/// ignored ones do not).
fn dirty(repo: &Repository) -> Result<bool, WriteError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true).include_ignored(false);
    Ok(!repo.statuses(Some(&mut opts)).map_err(git)?.is_empty())
}

/// Refuses a dirty working tree before anything is asked: finding out after the last answer
/// would waste the interview.
pub fn refuse_dirty(repo_dir: &Path) -> Result<(), WriteError> {
    let repo = Repository::discover(repo_dir)
        .map_err(|_| WriteError::NotARepository(repo_dir.display().to_string()))?;
    if dirty(&repo)? { Err(WriteError::Dirty) } else { Ok(()) }
}

/// Writes `files` (relative to the repository) as the feature's plan and commits them — on
/// `branch`, made from the current commit and checked out, when one is named.
pub fn write(
    repo_dir: &Path,
    feature: &str,
    planned: &[(PathBuf, String)],
    allow_dirty: bool,
    branch: Option<&str>,
) -> Result<Written, WriteError> {
    let repo = Repository::discover(repo_dir)
        .map_err(|_| WriteError::NotARepository(repo_dir.display().to_string()))?;
    let top = repo
        .workdir()
        .ok_or_else(|| WriteError::NotARepository(repo_dir.display().to_string()))?
        .to_path_buf();
    if !allow_dirty && dirty(&repo)? {
        return Err(WriteError::Dirty);
    }
    if let Some(why) = refused(&top, planned).into_iter().next() {
        return Err(WriteError::Unsafe(why));
    }
    let dir = feature_dir(&top, feature);
    if dir.symlink_metadata().is_ok() {
        return Err(WriteError::Exists(dir.display().to_string()));
    }
    if let Some(name) = branch {
        let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(git)?;
        repo.branch(name, &head, false).map_err(git)?;
        repo.set_head(&format!("refs/heads/{name}")).map_err(git)?;
        repo.checkout_head(None).map_err(git)?;
    }
    if let Some((rel, _)) = planned.iter().find(|(p, _)| top.join(p).symlink_metadata().is_ok()) {
        return Err(WriteError::Exists(top.join(rel).display().to_string()));
    }
    let tasks = planned
        .iter()
        .filter(|(p, _)| {
            top.join(p).starts_with(&dir)
                && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("T-"))
        })
        .count();
    let mut files = Vec::new();
    for (rel, text) in planned {
        create_inside(&top, rel, text)?;
        files.push(rel.display().to_string());
    }
    let mut index = repo.index().map_err(git)?;
    index.add_all(files.iter(), IndexAddOption::DEFAULT, None).map_err(git)?;
    index.write().map_err(git)?;
    let tree = repo.find_tree(index.write_tree().map_err(git)?).map_err(git)?;
    let sig =
        repo.signature().or_else(|_| Signature::now("harrow", "harrow@localhost")).map_err(git)?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let message =
        format!("Plan {feature} (harrow prep)\n\n{tasks} task(s), written from an interview.");
    let oid = repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &parents).map_err(git)?;
    let branch =
        repo.head().ok().and_then(|h| h.shorthand().ok().map(str::to_owned)).unwrap_or_default();
    Ok(Written { dir, files, sha: oid.to_string(), branch, tasks })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_edited_draft_is_read_back_and_checked() {
        let text = "==> .harrow/f/overview.md\n# F\n\n==> .harrow/f/T-001-a.md\n---\nid: T-001\ntitle: A\n---\n## Acceptance criteria\n- x\n==> tests/t.py\ndef test(): pass\n";
        let files = super::parse_edited(text, "f").unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[2].0, std::path::PathBuf::from("tests/t.py"));
        let broken = text.replace("- x\n", "");
        let problems = super::parse_edited(&broken, "f").unwrap_err().join("\n");
        assert!(problems.contains("T-001 has no acceptance criteria"), "{problems}");
        assert!(
            problems.contains(".harrow/f/T-001-a.md"),
            "named by its place in the repository: {problems}"
        );
        let outside = text.replace("tests/t.py", "../t.py");
        assert!(super::parse_edited(&outside, "f").is_err(), "a path outside the repository");
    }

    #[test]
    fn the_seed_file_names_its_interview() {
        assert_eq!(
            super::prep_session("<!-- harrow prep session 2026-abc -->\n# Seed"),
            Some("2026-abc")
        );
        assert_eq!(super::prep_session("# Seed\n"), None);
    }
}
