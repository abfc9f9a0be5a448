//! Shipping a session: its branch pushed to a remote, and a pull request (a merge request on
//! GitLab) opened on the remote's forge with the run's record as its description.
//!
//! Git work goes through git2 with the credentials the user's git would use; forge work is one
//! or two REST calls. Every outcome, success or failure, is an event in the session's log, and
//! no token ever reaches the log, a file or the terminal ([`secret`]).

pub mod body;
pub mod clone;
pub mod credentials;
pub mod forge;
pub mod http;
pub mod pr;
pub mod preview;
pub mod push;
pub mod remote;
pub mod secret;
pub mod transport;

use crate::session::discover::Found;
use crate::session::placement::placement;
use crate::session::status::SessionStatus;
use std::path::PathBuf;

/// A failure to ship, as one line that names the cause and the fix. Tokens are taken out of
/// it as it is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShipError(String);

impl ShipError {
    pub fn new(message: impl AsRef<str>) -> ShipError {
        let one_line = message.as_ref().split_whitespace().collect::<Vec<_>>().join(" ");
        ShipError(crate::printable::line(&secret::redact(&secret::strip_queries(&one_line))))
    }
}

/// The session being shipped: where its branch is and how far its plan got.
#[derive(Debug, Clone)]
pub struct Shipment {
    pub id: String,
    pub dir: PathBuf,
    /// The repository the session branch lives in.
    pub source: PathBuf,
    /// The session branch, as a local branch name (`session/<id>`).
    pub branch: String,
    /// The feature the plan is about (its folder's name), for the pull request's title when
    /// its overview has no heading.
    pub feature: Option<String>,
    /// The overview's heading: the pull request's title.
    pub title: Option<String>,
    pub status: SessionStatus,
    /// A live process holds the session.
    pub live: bool,
    /// Tasks of the plan that did not end accepted, with their state.
    pub unfinished: Vec<(String, String)>,
    /// The pull request the session opened before, as its log records it.
    pub pull_request: Option<String>,
}

impl Shipment {
    /// Reads the session folder: its placement, its status and its tasks.
    pub fn read(found: &Found) -> Result<Shipment, ShipError> {
        let place = placement(found);
        let overview = crate::session::overview(&found.dir, &found.id)
            .map_err(|e| ShipError::new(format!("cannot read {}: {e}", found.dir.display())))?;
        let Some(source) = place.source else {
            return Err(ShipError::new(format!(
                "session {} does not say which repository it ran on (no checkpoint, no start event); nothing to push",
                found.id
            )));
        };
        let harrow = &overview.summary.harrow;
        let mut unfinished: Vec<(String, String)> = harrow
            .tasks
            .iter()
            .filter(|(_, t)| !t.state.is_accepted())
            .map(|(id, t)| (id.clone(), t.state.as_str().to_owned()))
            .collect();
        let known = harrow.tasks.len() as u64;
        if let Some(missing) =
            harrow.task_count.and_then(|n| n.checked_sub(known)).filter(|n| *n > 0)
        {
            unfinished.push((format!("{missing} more"), "not begun".to_owned()));
        }
        Ok(Shipment {
            id: found.id.clone(),
            dir: found.dir.clone(),
            source,
            branch: place.branch,
            feature: harrow.feature.clone(),
            title: crate::session::placement::first_session_start(
                &crate::session::dir::SessionDir::new(&found.dir).events(),
            )
            .and_then(|s| s.title),
            status: overview.status,
            live: overview.live,
            unfinished,
            pull_request: harrow.pull_request.clone(),
        })
    }

    /// The repository the session branch lives in.
    pub fn repo(&self) -> Result<git2::Repository, ShipError> {
        git2::Repository::open(&self.source).map_err(|e| {
            ShipError::new(format!(
                "cannot open the repository {}: {}; the session's branch lives there — or pass --repo with another clone of the project, and the branch is brought into it from the session folder",
                self.source.display(),
                e.message()
            ))
        })
    }

    /// Ships from `clone`, another clone of the project, instead: the session branch (and
    /// its kept attempts) brought into it from the session folder's copy.
    pub fn move_to(&mut self, clone: &std::path::Path) -> Result<(), ShipError> {
        let repo = git2::Repository::open(clone).map_err(|e| {
            ShipError::new(format!(
                "cannot open the repository {}: {}; give a clone of the project with --repo",
                clone.display(),
                e.message()
            ))
        })?;
        let store = crate::hands::session_store::SessionStore::of(&self.dir);
        store
            .bring_into(&repo, &self.id, &self.branch)
            .map_err(|e| ShipError::new(e.to_string()))?;
        self.source = repo.workdir().unwrap_or(clone).to_path_buf();
        Ok(())
    }

    /// Refuses a session that is running, or (unless `partial`) one with unfinished tasks.
    pub fn check_finished(&self, partial: bool) -> Result<(), ShipError> {
        if self.live {
            return Err(ShipError::new(format!(
                "session {} is still running; ship it when it has ended (or stop it: harrow control {} stop)",
                self.id, self.id
            )));
        }
        if partial || self.unfinished.is_empty() {
            return Ok(());
        }
        let list: Vec<String> =
            self.unfinished.iter().take(6).map(|(id, state)| format!("{id} {state}")).collect();
        Err(ShipError::new(format!(
            "session {} has tasks that did not finish ({}); finish them (harrow resume {}) or pass --partial to ship what was accepted",
            self.id,
            list.join(", "),
            self.id
        )))
    }
}

/// Pushes (and opens the pull request when `pr`) and says in one line where it went: the
/// console's `y` on its ship offer.
pub fn ship_and_say(
    found: &Found,
    pr: bool,
    partial: bool,
    forge: crate::config::ForgeSection,
) -> Result<String, String> {
    let ship = Shipment::read(found).map_err(|e| e.to_string())?;
    let push_options = push::PushOptions { partial, ..push::PushOptions::default() };
    if !pr {
        return push::push(&ship, &push_options).map(|p| p.describe()).map_err(|e| e.to_string());
    }
    let opts = pr::PrOptions { push: push_options, forge, ..pr::PrOptions::default() };
    Ok(match pr::open(&ship, &opts).map_err(|e| e.to_string())? {
        pr::PrOutcome::Opened { forge, url, number, notices, .. } => {
            let mut said = format!("opened {} #{number}: {url}", forge.noun());
            for n in notices {
                said.push_str("; ");
                said.push_str(&n);
            }
            said
        }
        pr::PrOutcome::ByHand { compare_url, body_file, token_var, .. } => format!(
            "pushed; ${token_var} is not set: the description is in {}, open it at {compare_url}",
            body_file.display()
        ),
    })
}
