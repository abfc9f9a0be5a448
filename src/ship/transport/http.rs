//! git's smart HTTP protocol (`gitprotocol-http(5)`) on harrow's own HTTP client: a `GET` of
//! `info/refs` for the refs, a `POST` to the service for the pack, each on its own (stateless)
//! request, asked again with the next credential when the server answers 401.
//!
//! A redirect is followed for the refs only, and only on the same scheme, host and port (a
//! renamed repository): a credential is never sent to a host other than the address's. The
//! service requests then go where the refs came from.

use super::body::RequestBody;
use crate::ship::credentials::Credentials;
use bytes::Bytes;
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use git2::{ErrorClass, ErrorCode};
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The most redirects followed for one request.
const REDIRECTS_MAX: usize = 5;

/// The transport for `remote`, offering `offers` when asked.
pub(super) fn transport(
    remote: &git2::Remote<'_>,
    offers: Arc<Mutex<Credentials>>,
) -> Result<Transport, git2::Error> {
    let shared = Shared::new(offers).map_err(|e| failed(ErrorClass::Http, &e))?;
    Transport::smart(remote, true, Http { shared: Arc::new(shared) })
}

fn failed(class: ErrorClass, message: &str) -> git2::Error {
    git2::Error::new(ErrorCode::GenericError, class, message)
}

/// What every request of one connection shares.
struct Shared {
    runtime: tokio::runtime::Runtime,
    /// Made for the connection's first address: with no TLS roots read for `http://`.
    client: std::sync::OnceLock<reqwest::Client>,
    offers: Arc<Mutex<Credentials>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The user and password the server took, sent with every later request.
    accepted: Option<(String, String)>,
    /// The repository's address, without a user or password; where a redirect of the refs
    /// led, once one did.
    base: Option<String>,
}

impl Shared {
    fn new(offers: Arc<Mutex<Credentials>>) -> Result<Shared, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Shared {
            runtime,
            client: std::sync::OnceLock::new(),
            offers,
            state: Mutex::new(State::default()),
        })
    }

    /// The client, made for `url`'s scheme the first time. (A redirect never changes the
    /// scheme: it stays on the address's origin.)
    fn client(&self, url: &str) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        crate::brain::tls::ready();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(120))
            // Some servers speak the smart protocol only to a client that says it is git.
            .user_agent(concat!("git/2.0 (harrow/", env!("CARGO_PKG_VERSION"), ")"))
            .redirect(reqwest::redirect::Policy::none());
        if url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")) {
            builder = builder.tls_certs_only(Vec::new());
        }
        // The client's timers belong to the runtime it is built in.
        let client = {
            let _in = self.runtime.enter();
            builder.build().map_err(|e| crate::ship::http::describe(&e))?
        };
        Ok(self.client.get_or_init(|| client))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Http {
    shared: Arc<Shared>,
}

/// The address without its user and password (they are offered as credentials instead), and
/// without a slash at its end.
fn without_credentials(url: &str) -> Result<String, String> {
    let mut parsed =
        url::Url::parse(url).map_err(|e| format!("{} is not an address: {e}", shown(url)))?;
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

fn shown(url: &str) -> String {
    crate::ship::secret::display_url(url)
}

impl SmartSubtransport for Http {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let (service, refs) = match action {
            Service::UploadPackLs => ("upload-pack", true),
            Service::UploadPack => ("upload-pack", false),
            Service::ReceivePackLs => ("receive-pack", true),
            Service::ReceivePack => ("receive-pack", false),
        };
        let base = {
            let mut state = self.shared.state();
            if state.base.is_none() {
                state.base =
                    Some(without_credentials(url).map_err(|e| failed(ErrorClass::Net, &e))?);
            }
            state.base.clone().unwrap_or_default()
        };
        let mut stream = HttpStream {
            shared: self.shared.clone(),
            url: if refs {
                format!("{base}/info/refs?service=git-{service}")
            } else {
                format!("{base}/git-{service}")
            },
            service,
            refs,
            body: RequestBody::default(),
            answer: None,
        };
        if refs {
            // Asked now, so that a refusal keeps its class and code (an authentication error
            // is told apart from an unreachable host).
            stream.send().map_err(Failure::into_git)?;
        }
        Ok(Box::new(stream))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// One request: the body written by libgit2 (for a service), then the answer read back.
struct HttpStream {
    shared: Arc<Shared>,
    url: String,
    service: &'static str,
    /// The refs' `GET` rather than the service's `POST`.
    refs: bool,
    body: RequestBody,
    answer: Option<Answer>,
}

struct Answer {
    response: reqwest::Response,
    left: Bytes,
}

/// Why a request failed.
struct Failure {
    auth: bool,
    message: String,
}

impl Failure {
    fn net(message: String) -> Failure {
        Failure { auth: false, message }
    }

    fn into_git(self) -> git2::Error {
        let code = if self.auth { ErrorCode::Auth } else { ErrorCode::GenericError };
        git2::Error::new(code, ErrorClass::Http, self.message)
    }
}

impl From<Failure> for io::Error {
    fn from(f: Failure) -> io::Error {
        io::Error::other(f.message)
    }
}

impl HttpStream {
    /// Sends the request, asking again with the next credential after a 401 and following a
    /// same-origin redirect of the refs, until the server answers 200 with git's content type.
    fn send(&mut self) -> Result<(), Failure> {
        let shared = self.shared.clone();
        let kind = if self.refs { "advertisement" } else { "result" };
        let expected = format!("application/x-git-{}-{kind}", self.service);
        let mut url = self.url.clone();
        let mut redirects = 0;
        loop {
            let accepted = shared.state().accepted.clone();
            let client = shared.client(&url).map_err(Failure::net)?;
            let mut request = if self.refs {
                // As git asks: a cache between must not answer with refs it kept.
                client.get(&url).header("pragma", "no-cache").header("cache-control", "no-cache")
            } else {
                let (body, len) = self.body.for_sending().map_err(|e| {
                    Failure::net(format!("cannot keep the request for {}: {e}", shown(&url)))
                })?;
                client
                    .post(&url)
                    .header("content-type", format!("application/x-git-{}-request", self.service))
                    .header("accept", &expected)
                    .header("content-length", len)
                    .body(body)
            };
            if let Some((user, password)) = &accepted {
                request = request.basic_auth(user, Some(password));
            }
            // Sent inside the runtime: the request's timers are made as it starts.
            let response = shared
                .runtime
                .block_on(async { request.send().await })
                .map_err(|e| Failure::net(crate::ship::http::describe(&e)))?;
            let status = response.status();
            if status.is_success() {
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                if !content_type.starts_with(&expected) {
                    return Err(Failure::net(format!(
                        "{} answered with {content_type:?}, not git's smart HTTP protocol",
                        shown(&url)
                    )));
                }
                self.answer = Some(Answer { response, left: Bytes::new() });
                return Ok(());
            }
            if status == reqwest::StatusCode::UNAUTHORIZED {
                let next =
                    shared.offers.lock().unwrap_or_else(PoisonError::into_inner).next_basic();
                let Some(next) = next else {
                    return Err(Failure {
                        auth: true,
                        message: format!("authentication required: {} answered 401", shown(&url)),
                    });
                };
                shared.state().accepted = Some(next);
                continue;
            }
            if status.is_redirection() && self.refs && redirects < REDIRECTS_MAX {
                redirects += 1;
                url = self.redirected(&url, &response)?;
                continue;
            }
            return Err(Failure {
                auth: status == reqwest::StatusCode::FORBIDDEN,
                message: format!("{} answered {status}", shown(&url)),
            });
        }
    }

    /// Where a redirect of the refs leads, when it stays on the address's origin; the
    /// repository's address becomes the one the refs are now asked of.
    fn redirected(&self, from: &str, response: &reqwest::Response) -> Result<String, Failure> {
        let from = url::Url::parse(from).map_err(|e| Failure::net(e.to_string()))?;
        let to = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .and_then(|l| from.join(l).ok())
            .ok_or_else(|| {
                Failure::net(format!("{} redirects to no address", shown(from.as_str())))
            })?;
        if to.origin() != from.origin() {
            return Err(Failure::net(format!(
                "{} redirects to {}; push to that address (--remote URL) if it is the right one",
                shown(from.as_str()),
                shown(to.as_str())
            )));
        }
        let suffix = format!("/info/refs?service=git-{}", self.service);
        let Some(base) = to.as_str().strip_suffix(&suffix) else {
            return Err(Failure::net(format!(
                "{} redirects to {}, which is not a git repository's address",
                shown(from.as_str()),
                shown(to.as_str())
            )));
        };
        self.shared.state().base = Some(base.trim_end_matches('/').to_owned());
        Ok(to.to_string())
    }
}

impl Read for HttpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.answer.is_none() {
            self.send()?;
        }
        let Some(answer) = self.answer.as_mut() else { return Ok(0) };
        while answer.left.is_empty() {
            match self.shared.runtime.block_on(answer.response.chunk()) {
                Ok(Some(chunk)) => answer.left = chunk,
                Ok(None) => return Ok(0),
                Err(e) => return Err(io::Error::other(crate::ship::http::describe(&e))),
            }
        }
        let n = buf.len().min(answer.left.len());
        buf[..n].copy_from_slice(&answer.left.split_to(n));
        Ok(n)
    }
}

impl Write for HttpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.refs || self.answer.is_some() {
            return Err(io::Error::other("git wrote to a request already sent"));
        }
        self.body.write(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
