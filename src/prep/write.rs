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
    #[error("git: {0}")]
    Git(String),
}

// `map_err` hands the error over by value.
#[allow(clippy::needless_pass_by_value)]
fn git(e: git2::Error) -> WriteError {
    WriteError::Git(e.message().to_owned())
}

/// How the seed file names the interview that wrote the plan.
pub const PREP_MARK: &str = "harrow prep session";

/// The interview a plan's seed file names, if it names one.
pub fn prep_session(seed: &str) -> Option<&str> {
    let line = seed.lines().next()?.trim();
    let inner = line.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    inner.strip_prefix(PREP_MARK).map(str::trim).filter(|id| !id.is_empty())
}

/// The folder a feature's plan goes in.
pub fn feature_dir(repo: &Path, feature: &str) -> PathBuf {
    repo.join(".harrow").join(feature)
}

/// Writes `draft` as the feature's plan and commits it — on `branch`, made from the current
/// commit and checked out, when one is named. `session` is the interview's, named in the seed
/// file so a run on the plan can say where it came from.
pub fn write(
    repo_dir: &Path,
    feature: &str,
    draft: &Draft,
    session: &str,
    allow_dirty: bool,
    branch: Option<&str>,
) -> Result<Written, WriteError> {
    let repo = Repository::discover(repo_dir)
        .map_err(|_| WriteError::NotARepository(repo_dir.display().to_string()))?;
    let top = repo
        .workdir()
        .ok_or_else(|| WriteError::NotARepository(repo_dir.display().to_string()))?
        .to_path_buf();
    if !allow_dirty {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true).include_ignored(false);
        if !repo.statuses(Some(&mut opts)).map_err(git)?.is_empty() {
            return Err(WriteError::Dirty);
        }
    }
    let dir = feature_dir(&top, feature);
    if dir.exists() {
        return Err(WriteError::Exists(dir.display().to_string()));
    }
    if let Some(name) = branch {
        let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(git)?;
        repo.branch(name, &head, false).map_err(git)?;
        repo.set_head(&format!("refs/heads/{name}")).map_err(git)?;
        repo.checkout_head(None).map_err(git)?;
    }
    let mut planned: Vec<(PathBuf, String)> = draft
        .files(feature, session)
        .into_iter()
        .map(|(name, text)| (dir.join(name), text))
        .collect();
    for seed in &draft.seed_tests {
        let path = top.join(&seed.path);
        if path.exists() {
            return Err(WriteError::Exists(path.display().to_string()));
        }
        planned.push((path, seed.content.clone()));
    }
    let mut files = Vec::new();
    for (path, text) in &planned {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| WriteError::Io(parent.display().to_string(), e))?;
        }
        std::fs::write(path, text).map_err(|e| WriteError::Io(path.display().to_string(), e))?;
        files.push(path.strip_prefix(&top).unwrap_or(path).display().to_string());
    }
    let mut index = repo.index().map_err(git)?;
    index.add_all(files.iter(), IndexAddOption::DEFAULT, None).map_err(git)?;
    index.write().map_err(git)?;
    let tree = repo.find_tree(index.write_tree().map_err(git)?).map_err(git)?;
    let sig =
        repo.signature().or_else(|_| Signature::now("harrow", "harrow@localhost")).map_err(git)?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let message = format!(
        "Plan {feature} (harrow prep)\n\n{} task(s), written from an interview.",
        draft.tasks.len()
    );
    let oid = repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &parents).map_err(git)?;
    let branch =
        repo.head().ok().and_then(|h| h.shorthand().ok().map(str::to_owned)).unwrap_or_default();
    Ok(Written { dir, files, sha: oid.to_string(), branch })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seed_file_names_its_interview() {
        assert_eq!(
            super::prep_session("<!-- harrow prep session 2026-abc -->\n# Seed"),
            Some("2026-abc")
        );
        assert_eq!(super::prep_session("# Seed\n"), None);
    }
}
