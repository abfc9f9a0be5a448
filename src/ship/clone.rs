//! A clone of the project made by harrow: for a resume on a machine that has none (a second
//! Job with nothing but the share), `resume ID --repo URL` clones the project's address with
//! the credentials a push would offer, then brings the session's branch into it from the
//! session folder.

use super::ShipError;
use super::credentials::{Credentials, GIT_TOKEN_VAR};
use super::secret::display_url;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Whether `spec`, given where a clone is asked for, is an address to clone rather than a
/// folder: `scheme://…` or git's `user@host:path`.
pub fn is_address(spec: &str) -> bool {
    spec.contains("://") || super::remote::scp_like(spec).is_some()
}

/// Where harrow keeps the clones it makes, on this machine's disk (never the share): the
/// platform's data folder, `clones/<session>`.
pub fn clone_folder(session: &str) -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "harrow")
        .map(|d| d.data_dir().join("clones").join(session))
}

/// Clones `url` into `dest` (which must not hold anything yet), its default branch checked
/// out, `origin` naming `url`. A folder harrow made and could not fill is removed again.
pub fn clone_project(url: &str, dest: &Path) -> Result<(), ShipError> {
    let shown = display_url(url);
    if dest.exists() {
        return Err(ShipError::new(format!(
            "{} exists already; pass --repo {} to go on in it, or remove it",
            dest.display(),
            dest.display()
        )));
    }
    let made = fill(url, dest);
    if made.is_err() {
        let _ = std::fs::remove_dir_all(dest);
    }
    made.map_err(|(e, tried)| {
        let auth = e.code() == git2::ErrorCode::Auth || e.message().contains("authentication");
        ShipError::new(if auth {
            format!(
                "{shown} refused the credentials ({}); set {GIT_TOKEN_VAR} to a token that may read it, or pass --repo with a clone you made",
                if tried.is_empty() { "none were found".to_owned() } else { format!("tried {}", tried.join(", ")) }
            )
        } else {
            format!("cannot clone {shown}: {}; check the address, or pass --repo with a clone you made", e.message())
        })
    })?;
    Ok(())
}

/// Makes the clone in `dest`: the remote's branches fetched, its default branch made and
/// checked out. A failure comes with the credentials that were offered.
fn fill(url: &str, dest: &Path) -> Result<(), (git2::Error, Vec<String>)> {
    let none = |e| (e, Vec::new());
    let repo = git2::Repository::init(dest).map_err(none)?;
    super::remote::refuse_outside_rewrites(&repo, url)
        .map_err(|e| (git2::Error::from_str(&e.to_string()), Vec::new()))?;
    let mut remote = repo.remote("origin", url).map_err(none)?;
    let credentials = Arc::new(Mutex::new(Credentials::without_repo(url)));
    let offered = || credentials.lock().unwrap_or_else(PoisonError::into_inner);
    let tried = |e| (e, offered().tried().to_vec());
    let default = {
        let connection = super::transport::offering(&credentials, || {
            remote.connect_auth(git2::Direction::Fetch, None, None)
        })
        .map_err(tried)?;
        // A remote whose HEAD names a branch it lacks has no default; libgit2's error for it
        // is whatever it last failed on, so it is not passed on: a branch is chosen below.
        connection.default_branch().ok().and_then(|name| name.as_str().ok().map(str::to_owned))
    };
    offered().new_connection();
    super::transport::offering(&credentials, || remote.fetch::<&str>(&[], None, None))
        .map_err(tried)?;
    let fetched = |b: &str| repo.refname_to_id(&format!("refs/remotes/origin/{b}")).ok();
    let named = default.as_deref().and_then(|d| d.strip_prefix("refs/heads/"));
    let Some((branch, tip)) = named
        .map(str::to_owned)
        .into_iter()
        .chain(fallback_branch(&repo))
        .find_map(|b| fetched(&b).map(|tip| (b, tip)))
    else {
        // No branch to check out: the resume brings the session's branch in all the same.
        return Ok(());
    };
    let branch = branch.as_str();
    let commit = repo.find_commit(tip).map_err(none)?;
    let mut local = repo.branch(branch, &commit, false).map_err(none)?;
    local.set_upstream(Some(&format!("origin/{branch}"))).map_err(none)?;
    repo.set_head(&format!("refs/heads/{branch}")).map_err(none)?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_head(Some(&mut checkout)).map_err(none)
}

/// The branch to check out when the remote's HEAD names none it has: `main`, else `master`,
/// else its only branch.
fn fallback_branch(repo: &git2::Repository) -> Option<String> {
    let prefix = "refs/remotes/origin/";
    let branches: Vec<String> = repo
        .references_glob(&format!("{prefix}*"))
        .ok()?
        .flatten()
        .filter_map(|r| r.name().ok().and_then(|n| n.strip_prefix(prefix)).map(str::to_owned))
        .filter(|b| b != "HEAD")
        .collect();
    ["main", "master"]
        .into_iter()
        .find(|b| branches.iter().any(|x| x == b))
        .map(str::to_owned)
        .or_else(|| (branches.len() == 1).then(|| branches[0].clone()))
}
