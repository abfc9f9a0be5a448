//! What shipping a session would send, read before anything is sent: the console shows it and
//! asks before `y` sends it.

use super::forge::Forge;
use super::remote::RemoteTarget;
use super::secret::Token;
use super::{ShipError, Shipment, body};
use crate::config::ForgeSection;
use crate::session::discover::Found;

/// Lines of the description the preview shows.
const BODY_LINES: usize = 8;

/// What would be sent, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub id: String,
    /// The session branch, and its name on the remote.
    pub branch: String,
    /// The remote's name and its address without credentials.
    pub remote: String,
    pub url: String,
    /// The forge and the variable its token comes from; why not, when the remote is on none.
    pub forge: Result<(String, &'static str, bool), String>,
    pub title: String,
    /// The first lines of the description.
    pub body: Vec<String>,
    /// Tasks that did not finish: shipping them is a partial one.
    pub unfinished: Vec<String>,
    /// `HARROW_GIT_TOKEN` is set.
    pub git_token: bool,
    /// The pull request the session opened before, as its log says: shipping again pushes
    /// to it and puts the record as it stands in its description.
    pub open_pr: Option<String>,
}

/// Reads the session and its repository; sends nothing.
pub fn preview(found: &Found, forge: &ForgeSection) -> Result<Preview, ShipError> {
    let ship = Shipment::read(found)?;
    if ship.live {
        ship.check_finished(true)?;
    }
    let repo = ship.repo()?;
    let target = RemoteTarget::resolve(&repo, None)?;
    let forge = Forge::for_remote(&target.url, forge)
        .map(|f| {
            let var = f.kind.token_var();
            (f.kind.name().to_owned(), var, Token::from_var(var).is_some())
        })
        .map_err(|e| e.to_string());
    let record = body::record(&ship)?;
    Ok(Preview {
        id: ship.id.clone(),
        branch: ship.branch.clone(),
        remote: target.label(),
        url: super::secret::display_url(&target.url),
        forge,
        title: body::title(&ship),
        body: record.lines().take(BODY_LINES).map(crate::printable::line).collect(),
        unfinished: ship.unfinished.iter().map(|(id, state)| format!("{id} {state}")).collect(),
        git_token: Token::from_var(super::credentials::GIT_TOKEN_VAR).is_some(),
        open_pr: ship.pull_request.as_deref().map(crate::printable::line),
    })
}
