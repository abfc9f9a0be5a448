//! harrow's side of an ACP connection: the handshake, a session in the task's worktree, and
//! prompt turns during which the agent's updates and requests go to a [`Host`].

use super::AgentError;
use super::process::AgentProcess;
use super::wire::{self, Incoming, RpcError, WireError};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The ACP version harrow speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// How often a wait looks up from the agent to the [`Host`] (the operator's stop, a steer).
const LOOK_UP: Duration = Duration::from_millis(100);

/// How long an agent asked to cancel its turn has to answer before it is taken for hung.
const CANCEL_GRACE: Duration = Duration::from_secs(30);

/// What the lane does with what the agent sends during a turn.
pub trait Host {
    type Error: From<AgentError>;

    /// One `session/update` of the session.
    fn update(&mut self, update: &Value) -> Result<(), Self::Error>;

    /// One request of the agent's, numbered `id`: its answer, which goes back as it is, or
    /// `None` when a person must answer it — the answer then comes from [`Host::answers`], and
    /// the agent, waiting on harrow, is not taken for hung meanwhile.
    fn serve(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
    ) -> Result<Option<Result<Value, RpcError>>, Self::Error>;

    /// Answers decided since the last look to requests [`Host::serve`] left open, by their ids.
    fn answers(&mut self) -> Result<Vec<Answer>, Self::Error>;

    /// Looked at while waiting: whether the turn is to be cancelled (the agent is asked to end
    /// it) or abandoned at once.
    fn interrupt(&mut self) -> Result<Option<Interrupt>, Self::Error>;
}

/// An answer to a request of the agent's, with the request's id.
pub type Answer = (Value, Result<Value, RpcError>);

/// Why a turn stops early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// `session/cancel`: the agent ends its turn and says `cancelled` (a steer).
    Cancel,
    /// The turn is abandoned and the agent stopped (the operator's fail, a stop).
    Abandon,
}

/// How a prompt turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The agent answered the prompt: its stop reason and the usage it reported, if any.
    Answered { stop_reason: String, usage: Option<Value> },
    /// The host abandoned the turn.
    Abandoned,
}

/// A started agent with one session.
#[derive(Debug)]
pub struct Connection {
    process: AgentProcess,
    next_id: u64,
    session: String,
    /// The agent's own name and version, from `initialize`.
    pub agent_info: String,
    quiet: Duration,
}

impl Connection {
    /// Shakes hands and opens a session in `cwd`, each answer awaited up to `start`. A host
    /// serves whatever the agent asks meanwhile.
    pub async fn open<H: Host>(
        process: AgentProcess,
        cwd: &Path,
        start: Duration,
        quiet: Duration,
        host: &mut H,
    ) -> Result<Connection, H::Error> {
        let mut conn = Connection {
            process,
            next_id: 0,
            session: String::new(),
            agent_info: String::new(),
            quiet,
        };
        let init = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true},
            "clientInfo": {"name": "harrow", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = conn.call("initialize", &init, start, host).await?;
        let Some(answer) = answer else {
            return Err(AgentError::Exited { status: "stopped".into(), stderr: Vec::new() }.into());
        };
        let info = &answer["agentInfo"];
        let named = crate::printable::line(&format!(
            "{} {}",
            info["name"].as_str().unwrap_or(""),
            info["version"].as_str().unwrap_or("")
        ));
        named.trim().clone_into(&mut conn.agent_info);
        if answer["protocolVersion"].as_u64().is_none() {
            return Err(AgentError::BadAnswer {
                method: "initialize",
                why: "no protocolVersion".into(),
            }
            .into());
        }
        let new = json!({"cwd": cwd, "mcpServers": []});
        let answer = conn.call("session/new", &new, start, host).await?.unwrap_or_default();
        let Some(session) = answer["sessionId"].as_str().filter(|s| !s.is_empty()) else {
            return Err(AgentError::BadAnswer {
                method: "session/new",
                why: "no sessionId".into(),
            }
            .into());
        };
        session.clone_into(&mut conn.session);
        Ok(conn)
    }

    /// Sends `text` as a prompt and sees the turn through: updates and requests to the host
    /// until the agent answers, the host abandons it, or the agent dies or falls quiet.
    pub async fn prompt<H: Host>(&mut self, text: &str, host: &mut H) -> Result<TurnEnd, H::Error> {
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": text}]});
        let quiet = self.quiet;
        match self.call("session/prompt", &params, quiet, host).await? {
            None => Ok(TurnEnd::Abandoned),
            Some(answer) => Ok(TurnEnd::Answered {
                stop_reason: crate::printable::line(answer["stopReason"].as_str().unwrap_or("")),
                usage: answer.get("usage").filter(|u| u.is_object()).cloned(),
            }),
        }
    }

    /// The agent's last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.process.stderr_tail()
    }

    /// Sends a request and waits for its answer (`None`: abandoned by the host), serving the
    /// agent meanwhile. `quiet` bounds the silence between two messages.
    async fn call<H: Host>(
        &mut self,
        method: &'static str,
        params: &Value,
        quiet: Duration,
        host: &mut H,
    ) -> Result<Option<Value>, H::Error> {
        self.next_id += 1;
        let id = self.next_id;
        self.process.send(wire::request(id, method, params));
        let mut heard = Instant::now();
        let mut cancelled: Option<Instant> = None;
        // Requests of the agent's a person has yet to answer: it waits on harrow, not hung.
        let mut open: Vec<Value> = Vec::new();
        loop {
            let next = tokio::time::timeout(LOOK_UP, self.process.from_agent.recv()).await;
            let message = match next {
                Err(_) => {
                    let interrupt = host.interrupt()?;
                    for (id, answer) in host.answers()? {
                        open.retain(|o| *o != id);
                        self.process.send(wire::answer(&id, &answer));
                    }
                    if !open.is_empty() {
                        heard = Instant::now();
                    }
                    match interrupt {
                        Some(Interrupt::Abandon) => return Ok(None),
                        Some(Interrupt::Cancel)
                            if cancelled.is_none() && !self.session.is_empty() =>
                        {
                            cancelled = Some(Instant::now());
                            let cancel = json!({"sessionId": self.session});
                            self.process.send(wire::notification("session/cancel", &cancel));
                        }
                        _ => {}
                    }
                    let limit = cancelled.map_or(quiet, |_| CANCEL_GRACE);
                    let since = cancelled.map_or(heard, |at| at.max(heard));
                    if since.elapsed() >= limit {
                        return Err(self.hung(limit, method).into());
                    }
                    continue;
                }
                Ok(None) => return Err(self.ended(None).into()),
                Ok(Some(Err(e))) => return Err(self.ended(Some(e)).into()),
                Ok(Some(Ok(m))) => m,
            };
            heard = Instant::now();
            match message {
                Incoming::Response { id: got, outcome } if got == id => {
                    return match outcome {
                        Ok(v) => Ok(Some(v)),
                        Err(e) => Err(AgentError::Refused { method, message: e.message }.into()),
                    };
                }
                Incoming::Response { .. } => {}
                Incoming::Notification { method, params } => {
                    if method == "session/update"
                        && params["sessionId"].as_str() == Some(&self.session)
                    {
                        host.update(&params["update"])?;
                    }
                }
                Incoming::Request { id, method, params } => {
                    match host.serve(&id, &method, &params)? {
                        Some(answer) => self.process.send(wire::answer(&id, &answer)),
                        None => open.push(id),
                    }
                }
            }
        }
    }

    /// The error for an agent whose output ended (`why`: a read that failed, or text that is
    /// no message — the agent is stopped then, since nothing it says can be trusted as ACP).
    fn ended(&mut self, why: Option<WireError>) -> AgentError {
        if let Some(e) = why {
            self.process.stop();
            return AgentError::Wire(e);
        }
        let status = self
            .process
            .exit_status(Duration::from_secs(2))
            .unwrap_or_else(|| "closed its output".into());
        AgentError::Exited { status, stderr: self.process.stderr_tail() }
    }

    fn hung(&mut self, limit: Duration, method: &'static str) -> AgentError {
        let doing = match method {
            "initialize" => "after initialize",
            "session/new" => "after session/new",
            _ => "during its turn",
        };
        self.process.stop();
        AgentError::Hung { secs: limit.as_secs(), doing, stderr: self.process.stderr_tail() }
    }
}
