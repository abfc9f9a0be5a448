//! `harrow pr`: push the session branch if the remote lacks it, then open a pull request on
//! the remote's forge with the run's record as its description. Without the forge's token it
//! writes the description to a file and prints the page where a person opens it by hand.

use super::body::{self, Fitted};
use super::forge::{Draft, Forge, ForgeKind, Opened};
use super::http::ForgeClient;
use super::push::{PushOptions, Pushed, push};
use super::remote::RemoteTarget;
use super::secret::Token;
use super::{ShipError, Shipment};
use crate::config::ForgeSection;
use crate::session::event::PullRequest;
use crate::session::writer::SessionWriter;
use std::path::PathBuf;

/// The file, in the session folder, a description is written to for pasting by hand.
pub const BODY_FILE: &str = "pull-request.md";

/// What the person asked for.
#[derive(Debug, Clone, Default)]
pub struct PrOptions {
    pub push: PushOptions,
    pub draft: bool,
    /// The branch to merge into; the remote's default branch when absent.
    pub base: Option<String>,
    pub forge: ForgeSection,
}

/// How it went.
#[derive(Debug, Clone)]
pub enum PrOutcome {
    Opened {
        forge: ForgeKind,
        url: String,
        number: u64,
        pushed: Pushed,
        cut: bool,
        /// What went wrong after it was opened (labels, the whole record), in words.
        notices: Vec<String>,
    },
    /// No token: the page to open it on and the description's file.
    ByHand {
        forge: ForgeKind,
        compare_url: String,
        body_file: PathBuf,
        pushed: Pushed,
        token_var: &'static str,
    },
}

impl PrOutcome {
    /// The address a script wants: the pull request's, or the page to open it on.
    pub fn url(&self) -> &str {
        match self {
            PrOutcome::Opened { url, .. } => url,
            PrOutcome::ByHand { compare_url, .. } => compare_url,
        }
    }
}

/// Pushes if needed, then opens the pull request; every outcome is logged as a
/// `pull_request` event (the push as its own `push` event).
pub fn open(ship: &Shipment, opts: &PrOptions) -> Result<PrOutcome, ShipError> {
    ship.check_finished(opts.push.partial)?;
    let forge = forge_of(ship, opts);
    let outcome = forge.and_then(|forge| {
        let pushed = push(ship, &opts.push)?;
        send(ship, opts, &forge, pushed)
    });
    let head = opts.push.branch.clone().unwrap_or_else(|| ship.branch.clone());
    let event = match &outcome {
        Ok(PrOutcome::Opened { forge, url, number, cut, pushed, .. }) => PullRequest {
            forge: Some(forge.name().to_owned()),
            url: Some(url.clone()),
            number: Some(*number),
            branch: Some(head),
            base: Some(base_of(opts, Some(pushed))),
            draft: opts.draft.then_some(true),
            cut: cut.then_some(true),
            ..PullRequest::default()
        },
        Ok(PrOutcome::ByHand { forge, compare_url, body_file, pushed, .. }) => PullRequest {
            forge: Some(forge.name().to_owned()),
            branch: Some(head),
            base: Some(base_of(opts, Some(pushed))),
            compare_url: Some(compare_url.clone()),
            body_file: Some(BODY_FILE.to_owned()).filter(|_| body_file.exists()),
            draft: opts.draft.then_some(true),
            ..PullRequest::default()
        },
        Err(e) => {
            PullRequest { branch: Some(head), error: Some(e.to_string()), ..PullRequest::default() }
        }
    };
    let (mut writer, _) = SessionWriter::open(&ship.dir)
        .map_err(|e| ShipError::new(format!("cannot write to session {}: {e}", ship.id)))?;
    writer.append(&event).and_then(|_| writer.sync()).map_err(|e| {
        ShipError::new(format!("cannot write the pull request to session {}'s log: {e}", ship.id))
    })?;
    outcome
}

fn base_of(opts: &PrOptions, pushed: Option<&Pushed>) -> String {
    opts.base
        .clone()
        .or_else(|| pushed.and_then(|p| p.default_branch.clone()))
        .unwrap_or_else(|| "main".to_owned())
}

/// The forge of the remote the branch goes to, known before anything is pushed.
fn forge_of(ship: &Shipment, opts: &PrOptions) -> Result<Forge, ShipError> {
    let repo = ship.repo()?;
    let target = RemoteTarget::resolve(&repo, opts.push.remote.as_deref())?;
    Forge::for_remote(&target.url, &opts.forge)
}

fn send(
    ship: &Shipment,
    opts: &PrOptions,
    forge: &Forge,
    pushed: Pushed,
) -> Result<PrOutcome, ShipError> {
    let base = base_of(opts, Some(&pushed));
    if base == pushed.branch {
        return Err(ShipError::new(format!(
            "the branch and the base are both {base}; pass the branch to merge into with --base BRANCH"
        )));
    }
    let record = body::record(ship)?;
    let limit = forge.kind.body_limit();
    let var = forge.kind.token_var();
    let Some(token) = Token::from_var(var) else {
        let note = body::cut_note(ship, limit, forge.kind.name(), None);
        let fitted = body::fit(&record, limit, &note);
        let file = ship.dir.join(BODY_FILE);
        crate::session::atomic::write_atomic(&file, fitted.text.as_bytes())
            .map_err(|e| ShipError::new(format!("cannot write {}: {e}", file.display())))?;
        return Ok(PrOutcome::ByHand {
            forge: forge.kind,
            compare_url: forge.compare_url(&base, &pushed.branch),
            body_file: file,
            pushed,
            token_var: var,
        });
    };
    let unreachable = |e: super::http::Unreachable| {
        ShipError::new(format!(
            "cannot reach {}: {}; check [forge] api_url and the network",
            forge.api, e.0
        ))
    };
    let client = ForgeClient::for_forge(forge, &token).map_err(unreachable)?;
    let mut notices = Vec::new();
    let name = format!("harrow-session-{}", ship.id);
    let fitted = if record.chars().count() <= limit {
        Fitted { text: record.clone(), cut: false }
    } else {
        let whole =
            forge.keep_whole_request(&name, &record).and_then(|req| match client.send(&req) {
                Ok((status, answer)) => Forge::kept_whole(status, &answer).or_else(|| {
                    notices.push(format!(
                        "the whole record could not be kept on {} ({status})",
                        forge.kind.name()
                    ));
                    None
                }),
                Err(e) => {
                    notices.push(format!("the whole record could not be kept: {}", e.0));
                    None
                }
            });
        let note = match (&whole, forge.kind) {
            (None, ForgeKind::Gitea) => format!(
                "_This record was cut to fit gitea's limit of {limit} characters; the rest follows in the comments, and `harrow export {}` writes it whole._",
                ship.id
            ),
            _ => body::cut_note(ship, limit, forge.kind.name(), whole.as_deref()),
        };
        body::fit(&record, limit, &note)
    };
    let draft = Draft {
        title: body::title(ship),
        body: fitted.text.clone(),
        head: pushed.branch.clone(),
        base: base.clone(),
        draft: opts.draft,
    };
    // A session that opened a pull request before (a second `harrow pr`) looks for it open
    // from this branch into this base first: it gets the record as it stands now, never a
    // twin, from any forge (one that would open a second is never asked to).
    let open_already = ship
        .pull_request
        .as_ref()
        .and_then(|_| client.send(&forge.open_one_request(&draft.head, &draft.base)).ok())
        .and_then(|(s, a)| forge.open_one(s, &a, &draft.head));
    let opened = if let Some(opened) = open_already {
        notices.push(redescribe(&client, forge, &opened, &draft.body));
        opened
    } else {
        open_or_find(&client, forge, &draft, &opts.forge.labels, &mut notices)?
    };
    if let Some(req) = forge.labels_request(&opened, &opts.forge.labels) {
        match client.send(&req) {
            Ok((s, _)) if (200..300).contains(&s) => {}
            Ok((s, a)) => {
                notices.push(format!("the labels were not set ({s}: {})", short_answer(&a)));
            }
            Err(e) => notices.push(format!("the labels were not set: {}", e.0)),
        }
    }
    if fitted.cut && forge.kind == ForgeKind::Gitea {
        notices.extend(rest_as_comments(&client, forge, &opened, &record, &fitted, limit));
    }
    Ok(PrOutcome::Opened {
        forge: forge.kind,
        url: opened.url,
        number: opened.number,
        pushed,
        cut: fitted.cut,
        notices,
    })
}

/// Asks the forge to open the pull request; one it says exists already (opened meanwhile, or
/// by a person) is found by its branch and described instead.
fn open_or_find(
    client: &ForgeClient,
    forge: &Forge,
    draft: &Draft,
    labels: &[String],
    notices: &mut Vec<String>,
) -> Result<Opened, ShipError> {
    let (status, answer) = client.send(&forge.open_request(draft, labels)).map_err(|e| {
        ShipError::new(format!(
            "cannot reach {}: {}; check [forge] api_url and the network",
            forge.api, e.0
        ))
    })?;
    match forge.opened(status, &answer) {
        Ok(opened) => Ok(opened),
        Err(why) if matches!(status, 409 | 422) => {
            let found = client
                .send(&forge.open_one_request(&draft.head, &draft.base))
                .ok()
                .and_then(|(s, a)| forge.open_one(s, &a, &draft.head));
            let Some(opened) = found else { return Err(refused(forge, status, &why, draft)) };
            notices.push(redescribe(client, forge, &opened, &draft.body));
            Ok(opened)
        }
        Err(why) => Err(refused(forge, status, &why, draft)),
    }
}

/// Puts the record as it stands now into a pull request that was open already, and says so.
fn redescribe(client: &ForgeClient, forge: &Forge, opened: &Opened, body: &str) -> String {
    match client.send(&forge.describe_request(opened, body)) {
        Ok((s, _)) if (200..300).contains(&s) => {
            "it was open already: the branch is pushed to it, and its description is the record as it stands now".to_owned()
        }
        Ok((s, a)) => format!(
            "it was open already: the branch is pushed to it, but its description was not updated ({s}: {})",
            short_answer(&a)
        ),
        Err(e) => format!(
            "it was open already: the branch is pushed to it, but its description was not updated: {}",
            e.0
        ),
    }
}

/// Gitea keeps no gists: the part of the record the description left out follows in
/// comments of at most the limit each.
fn rest_as_comments(
    client: &ForgeClient,
    forge: &Forge,
    opened: &Opened,
    record: &str,
    fitted: &Fitted,
    limit: usize,
) -> Option<String> {
    let kept = fitted.text.split("\n\n---\n").next().unwrap_or("");
    let mut rest = record.get(kept.len()..).unwrap_or("").trim_start_matches('\n');
    while !rest.is_empty() {
        let part = body::fit(rest, limit, "_continued below._");
        let taken = if part.cut {
            part.text.split("\n\n---\n").next().unwrap_or("").len()
        } else {
            rest.len()
        };
        match client.send(&forge.comment_request(opened, &part.text)) {
            Ok((s, _)) if (200..300).contains(&s) => {}
            Ok((s, a)) => {
                return Some(format!(
                    "the rest of the record was not posted ({s}: {})",
                    short_answer(&a)
                ));
            }
            Err(e) => return Some(format!("the rest of the record was not posted: {}", e.0)),
        }
        if taken == 0 {
            break;
        }
        rest = rest[taken..].trim_start_matches('\n');
    }
    None
}

fn short_answer(answer: &[u8]) -> String {
    String::from_utf8_lossy(answer).chars().take(200).collect()
}

/// The forge would not open it: the cause and the fix.
fn refused(forge: &Forge, status: u16, why: &str, d: &Draft) -> ShipError {
    let var = forge.kind.token_var();
    let noun = forge.kind.noun();
    let text = match status {
        401 => format!(
            "{} refused ${var} (401: {why}); set {var} to a token that may open {noun}s on {}",
            forge.api, forge.project
        ),
        403 => format!(
            "${var} may not open {noun}s on {} (403: {why}); give the token that right",
            forge.project
        ),
        404 => format!(
            "{} has no repository {} that ${var} can see (404: {why}); check the remote and [forge] api_url",
            forge.api, forge.project
        ),
        409 | 422 => format!(
            "{} would not open it ({status}: {why}); a {noun} from {} into {} may be open already: {}",
            forge.kind.name(),
            d.head,
            d.base,
            forge.compare_url(&d.base, &d.head)
        ),
        _ => format!("{} answered {status}: {why}", forge.kind.name()),
    };
    ShipError::new(text)
}
