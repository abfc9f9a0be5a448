//! `harrow push`: the session branch to a remote, with git2 and the user's credentials. A
//! push never overwrites work on the remote unless asked with `--force-with-lease`, and then
//! only when the remote branch is where harrow last saw it.

use super::credentials::{Credentials, GIT_TOKEN_VAR};
use super::remote::RemoteTarget;
use super::{ShipError, Shipment};
use crate::session::event::Push;
use crate::session::writer::SessionWriter;
use git2::{Direction, ErrorClass, ErrorCode, Oid};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

/// What the person asked for.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// A remote's name or an address; `origin` when absent.
    pub remote: Option<String>,
    /// The branch's name on the remote; the session branch's own name when absent.
    pub branch: Option<String>,
    /// Push even though some tasks did not finish.
    pub partial: bool,
    /// Overwrite the remote branch, but only if it is where harrow last pushed it (or where
    /// the remote-tracking branch says it is).
    pub force_with_lease: bool,
}

/// Where the branch went.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub target: RemoteTarget,
    /// The remote's name, or its address without credentials.
    pub remote: String,
    /// The remote's address without credentials.
    pub url: String,
    pub branch: String,
    pub sha: String,
    pub forced: bool,
    /// The remote branch was already at the session's commit: nothing was sent.
    pub already_there: bool,
    /// The remote's default branch, when it says (the pull request's base).
    pub default_branch: Option<String>,
}

impl Pushed {
    /// One line for the terminal.
    pub fn describe(&self) -> String {
        let short: String = self.sha.chars().take(7).collect();
        if self.already_there {
            format!("{} on {} is already at {short}; nothing to push", self.branch, self.remote)
        } else if self.forced {
            format!(
                "pushed {short} to {} on {} ({}), over what was there",
                self.branch, self.remote, self.url
            )
        } else {
            format!("pushed {short} to {} on {} ({})", self.branch, self.remote, self.url)
        }
    }
}

/// Pushes the session's branch and logs the outcome (a failure too) as a `push` event.
pub fn push(ship: &Shipment, opts: &PushOptions) -> Result<Pushed, ShipError> {
    ship.check_finished(opts.partial)?;
    let (mut writer, _) = SessionWriter::open(&ship.dir)
        .map_err(|e| ShipError::new(format!("cannot write to session {}: {e}", ship.id)))?;
    let outcome = send(ship, opts);
    let event = match &outcome {
        Ok(p) => Push {
            remote: Some(p.remote.clone()),
            url: Some(p.url.clone()),
            branch: Some(p.branch.clone()),
            sha: Some(p.sha.clone()),
            forced: p.forced.then_some(true),
            partial: (!ship.unfinished.is_empty()).then_some(true),
            already_there: p.already_there.then_some(true),
            ..Push::default()
        },
        Err(e) => Push {
            remote: Some(
                opts.remote
                    .clone()
                    .map_or_else(|| "origin".to_owned(), |r| super::secret::display_url(&r)),
            ),
            branch: Some(opts.branch.clone().unwrap_or_else(|| ship.branch.clone())),
            error: Some(e.to_string()),
            ..Push::default()
        },
    };
    writer.append(&event).and_then(|_| writer.sync()).map_err(|e| {
        ShipError::new(format!("cannot write the push to session {}'s log: {e}", ship.id))
    })?;
    outcome
}

/// The last commit this session pushed to `url`'s `branch`, from its log: the lease.
fn last_pushed(session: &std::path::Path, url: &str, branch: &str) -> Option<Oid> {
    let events = crate::session::dir::SessionDir::new(session).events();
    let mut found = None;
    let _ = crate::session::scan::scan(&events, |_, fact| {
        if fact.event_kind() == Some(crate::session::event::EventKind::Push)
            && fact.payload.error.get().is_none()
            && fact.payload.url.get() == Some(url)
            && fact.payload.branch.get() == Some(branch)
        {
            found = fact.payload.sha.get().and_then(|s| Oid::from_str(s).ok());
        }
    });
    found
}

fn send(ship: &Shipment, opts: &PushOptions) -> Result<Pushed, ShipError> {
    let repo = ship.repo()?;
    let local = repo
        .find_branch(&ship.branch, git2::BranchType::Local)
        .ok()
        .and_then(|b| b.get().target())
        .ok_or_else(|| {
            ShipError::new(format!(
                "the branch {} is gone from {}; nothing to push",
                ship.branch,
                ship.source.display()
            ))
        })?;
    let target = RemoteTarget::resolve(&repo, opts.remote.as_deref())?;
    let branch = opts.branch.clone().unwrap_or_else(|| ship.branch.clone());
    let remote_ref = format!("refs/heads/{branch}");
    if !git2::Reference::is_valid_name(&remote_ref) {
        return Err(ShipError::new(format!(
            "'{branch}' is not a branch name git accepts; pass another with --branch NAME"
        )));
    }
    let url = super::secret::display_url(&target.url);
    super::remote::refuse_outside_rewrites(&repo, &target.url)?;
    let label = target.label();
    let credentials = Arc::new(Mutex::new(Credentials::for_repo(&repo, &target.url)));
    let offered = || credentials.lock().unwrap_or_else(PoisonError::into_inner);
    let mut remote = target.git_remote(&repo).map_err(|e| {
        ShipError::new(format!("cannot use the remote {label}: {}; check its address", e.message()))
    })?;

    let (there, default_branch) = {
        // The fetch side's advertisement: the same refs, and unlike the push side's it names
        // the remote's default branch (the pull request's base).
        let connection = super::transport::offering(&credentials, || {
            remote.connect_auth(Direction::Fetch, Some(callbacks(None)), None)
        })
        .map_err(|e| failure(&e, &url, &branch, &offered()))?;
        let heads = connection.list().map_err(|e| failure(&e, &url, &branch, &offered()))?;
        let there = heads.iter().find(|h| h.name() == remote_ref).map(git2::RemoteHead::oid);
        let default_branch = connection
            .default_branch()
            .ok()
            .and_then(|b| b.as_str().ok().map(|s| s.trim_start_matches("refs/heads/").to_owned()));
        (there, default_branch)
    };
    let pushed = |forced: bool, already_there: bool| Pushed {
        target: target.clone(),
        remote: label.clone(),
        url: url.clone(),
        branch: branch.clone(),
        sha: local.to_string(),
        forced,
        already_there,
        default_branch: default_branch.clone(),
    };
    if there == Some(local) {
        return Ok(pushed(false, true));
    }
    let force = match there {
        Some(theirs)
            if opts.force_with_lease
                && !repo.graph_descendant_of(local, theirs).unwrap_or(false) =>
        {
            let tracking = target
                .name
                .as_ref()
                .and_then(|n| repo.refname_to_id(&format!("refs/remotes/{n}/{branch}")).ok());
            let lease = last_pushed(&ship.dir, &url, &branch).or(tracking);
            if lease != Some(theirs) {
                return Err(ShipError::new(format!(
                    "{branch} on {label} is at {}, not where harrow last saw it{}; someone else pushed there — fetch it and look, or push to another name with --branch NAME",
                    short(theirs),
                    lease.map(|l| format!(" ({})", short(l))).unwrap_or_default()
                )));
            }
            true
        }
        _ => false,
    };
    let refspec =
        format!("{}refs/heads/{}:{remote_ref}", if force { "+" } else { "" }, ship.branch);
    offered().new_connection();
    let refused = RefCell::new(None::<String>);
    let mut options = git2::PushOptions::new();
    options.remote_callbacks(callbacks(Some(&refused)));
    super::transport::offering(&credentials, || {
        remote.push(&[refspec.as_str()], Some(&mut options))
    })
    .map_err(|e| failure(&e, &url, &branch, &offered()))?;
    drop(options);
    if let Some(why) = refused.into_inner() {
        return Err(refusal(&why, &url, &branch));
    }
    if let Some(name) = &target.name {
        // What a later `--force-with-lease` compares with, as git keeps it.
        let _ =
            repo.reference(&format!("refs/remotes/{name}/{branch}"), local, true, "harrow push");
    }
    Ok(pushed(force, false))
}

fn callbacks(refused: Option<&RefCell<Option<String>>>) -> git2::RemoteCallbacks<'_> {
    let mut cb = git2::RemoteCallbacks::new();
    if let Some(refused) = refused {
        cb.push_update_reference(move |_, status| {
            if let Some(why) = status {
                *refused.borrow_mut() = Some(why.to_owned());
            }
            Ok(())
        });
    }
    cb
}

fn short(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}

const NON_FAST_FORWARD_FIX: &str =
    "push under another name with --branch NAME, or overwrite it with --force-with-lease";

/// The remote took the connection but refused the branch.
fn refusal(why: &str, url: &str, branch: &str) -> ShipError {
    let fix = if why.contains("fast-forward") || why.contains("fetch first") {
        NON_FAST_FORWARD_FIX
    } else {
        "push under another name with --branch NAME, or ask the remote's owner why"
    };
    ShipError::new(format!("{url} refused {branch}: {why}; {fix}"))
}

/// A push that failed, as the cause and the fix.
fn failure(e: &git2::Error, url: &str, branch: &str, credentials: &Credentials) -> ShipError {
    let message = e.message();
    let lower = message.to_ascii_lowercase();
    if e.code() == ErrorCode::NotFastForward || lower.contains("not present locally") {
        return ShipError::new(format!(
            "{branch} on {url} has commits the session branch does not (not a fast-forward); {NON_FAST_FORWARD_FIX}"
        ));
    }
    if lower.contains("hostkey") || lower.contains("host key") {
        return ShipError::new(format!(
            "the SSH host key of {url} is not in ~/.ssh/known_hosts, or does not match it: nothing was sent; connect once with ssh to check the key and add it (or fix the entry), then push again"
        ));
    }
    if e.class() == ErrorClass::Ssh || lower.starts_with("ssh: ") {
        if lower.contains("permission denied") {
            return ShipError::new(format!(
                "{url} refused the credentials ssh offered ({message}); load your SSH key into ssh-agent or name it in ~/.ssh/config, then push again"
            ));
        }
        return ShipError::new(format!(
            "cannot reach {url} over SSH: {message}; check the address, and that ssh reaches the host"
        ));
    }
    // By the code, or by the words of a refusal (a status inside an address or a port is not
    // one).
    let auth = e.code() == ErrorCode::Auth
        || lower.contains("authentication")
        || lower.contains("credentials")
        || lower.contains("answered 401")
        || lower.contains("answered 403");
    if auth {
        let tried = if credentials.tried().is_empty() {
            "no credentials were found".to_owned()
        } else {
            format!("tried {}", credentials.tried().join(", "))
        };
        return ShipError::new(format!(
            "{url} refused the credentials ({tried}); set {GIT_TOKEN_VAR} to a token that may push there, or configure the repository's credential helper (git config credential.helper …)"
        ));
    }
    match e.class() {
        ErrorClass::Net | ErrorClass::Os | ErrorClass::Ssl | ErrorClass::Ssh | ErrorClass::Http => {
            ShipError::new(format!(
                "cannot reach {url}: {message}; check the address and the network"
            ))
        }
        _ => ShipError::new(format!("push to {url} failed: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(code: ErrorCode, message: &str) -> String {
        let e = git2::Error::new(code, ErrorClass::Http, message);
        let none = Credentials::without_repo("http://127.0.0.1:40171/a.git");
        failure(&e, "http://127.0.0.1:40171/a.git", "b", &none).to_string()
    }

    /// A refusal is told by its code or its words, never by digits that happen to be in the
    /// address (a port of 40171 is not a 401).
    #[test]
    fn a_refusal_is_told_by_its_code_or_words_not_by_digits_in_the_address() {
        let page = "http://127.0.0.1:40171/a.git/info/refs answered with \"text/html\", not git's smart HTTP protocol";
        assert!(
            said(ErrorCode::GenericError, page).starts_with("cannot reach"),
            "{}",
            said(ErrorCode::GenericError, page)
        );
        for refused in [
            (ErrorCode::Auth, "authentication required: http://127.0.0.1:40171/a.git answered 401"),
            (
                ErrorCode::GenericError,
                "http://127.0.0.1:40171/a.git/git-receive-pack answered 403 Forbidden",
            ),
        ] {
            assert!(said(refused.0, refused.1).contains("refused the credentials"), "{refused:?}");
        }
    }
}
