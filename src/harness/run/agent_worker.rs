//! The worker's side of a task when the worker is an ACP agent: the brief as its first
//! prompt, its turns recorded as events, its requests served through the hands, its case
//! asked for when it ends its turn, and from there the same review, landing and rework as
//! harrow's own worker — a reject is the agent's next prompt, in the same agent session.

use super::landing::Landing;
use super::{Desk, Lane, Op, Result, Task, TaskEnd, scope};
use crate::agent::client::{Answer, Connection, Host, Interrupt, TurnEnd};
use crate::agent::process::{AgentProcess, Launch};
use crate::agent::updates::Recorder;
use crate::agent::wire::RpcError;
use crate::agent::{AgentError, AgentSpec, Permissions, setup};
use crate::harness::run::HarnessError;
use crate::session::event::{
    CaseParseError, HookRun, ModelCall, OperatorWait, ParseError, ToolCallRecord,
};
use crate::session::state::StopReason;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Times a crashed or hung agent is started again within a task before the task is held.
const RESTARTS: u32 = 2;

/// What the agent is told after the brief: how its work reaches the gate.
const HOW_IT_ENDS: &str = "When the task is done and verified, end your turn. harrow will then ask you for your case (what you did, and where each acceptance criterion is addressed); an independent reviewer judges the change, and its verdict comes back to you as your next prompt if it needs more work.";

/// The follow-up prompt that asks the agent for its case in harrow's terms.
const CASE_PROMPT: &str = r#"harrow: your turn has ended. Do not change any more files now. Give your case for review as one JSON object in a ```json fence, and nothing else:
{"summary": "one or two lines: what the task achieved",
 "ac_coverage": [{"criterion": "<each acceptance criterion, as written>", "addressed_by": "<file:symbol or file:line>", "evidence": "<the test or command that shows it>"}],
 "work_arounds": ["<anything you changed that the criteria do not mention, and why>"],
 "uncertainties": ["<ambiguities you resolved by choosing>"]}"#;

/// How the agent's turn went, for the driver.
enum Turned {
    /// The agent answered: what it said this turn.
    Said(String),
    /// The operator's steer cancelled the turn; its words are the next prompt.
    Steered,
    /// The task ends here (the operator's fail, a stop, a hold).
    Ended(TaskEnd),
}

/// Where a turn is: its task, its place, and what the agent's session has run up.
struct Turn<'t> {
    task: &'t Task,
    iter: u64,
    attempt: u64,
    cost: &'t mut Option<f64>,
    restarts: &'t mut u32,
}

/// What the driver does after a turn.
enum Step {
    Said(String),
    Again,
    Restart,
    End(TaskEnd),
}

impl Lane {
    /// Works `task` with the run's ACP agent, from the brief to an accept, a failure or a
    /// stop. `brief` is the worker prompt harrow's own worker would get.
    pub(super) async fn run_agent_task(
        &mut self,
        task: &Task,
        spec: &AgentSpec,
        mut attempt: u64,
        brief: String,
    ) -> Result<TaskEnd> {
        let mut restarts = 0;
        let mut next = format!("{brief}\n\n{HOW_IT_ENDS}");
        let mut iter = 0;
        'agent: loop {
            let mut conn = match self.start_agent(task, spec, attempt, iter).await {
                Ok(Ok(conn)) => conn,
                Ok(Err(end)) => return Ok(end),
                // One that dies or falls quiet before its session is open is started again
                // like one that fails mid-turn, then held.
                Err(HarnessError::Agent(e)) => {
                    match self.agent_failed(task, attempt, iter, &e, &mut restarts)? {
                        Some(end) => return Ok(end),
                        None => continue 'agent,
                    }
                }
                Err(e) => return Err(e),
            };
            // The agent's cost as it last reported it: cumulative over its session.
            let mut cost = None;
            loop {
                iter += 1;
                if iter > self.shared.opts.max_iterations {
                    return Ok(TaskEnd::Failed(StopReason::IterCap));
                }
                let mut turn =
                    Turn { task, iter, attempt, cost: &mut cost, restarts: &mut restarts };
                let said = match self.turn_step(&mut conn, &mut turn, &mut next, &brief).await? {
                    Step::Said(said) => said,
                    Step::Again => continue,
                    Step::Restart => continue 'agent,
                    Step::End(end) => return Ok(end),
                };
                iter += 1;
                next = then(&next, CASE_PROMPT);
                let mut turn =
                    Turn { task, iter, attempt, cost: &mut cost, restarts: &mut restarts };
                let answer = match self.turn_step(&mut conn, &mut turn, &mut next, &brief).await? {
                    Step::Said(answer) => answer,
                    Step::Again => continue,
                    Step::Restart => continue 'agent,
                    Step::End(end) => return Ok(end),
                };
                let sc = scope(&task.id, iter, attempt);
                let call = ToolCallRecord {
                    id: format!("acp-case-{attempt}-{iter}"),
                    name: "submit_case".into(),
                    arguments: self.agent_case(task, &said, &answer, &sc)?,
                };
                let (result, end) = self.review(task, &call, &sc, &mut attempt, iter).await?;
                match end {
                    Some(TaskEnd::Accepted(a)) => match self.land(task, a, &sc, &mut attempt)? {
                        Landing::Landed => return Ok(TaskEnd::Landed),
                        Landing::Rework { text, .. } => next = then(&next, &rework_prompt(&text)),
                        Landing::Held(end) => return Ok(TaskEnd::Stop(end)),
                    },
                    Some(end) => return Ok(end),
                    None => next = then(&next, &rework_prompt(&result)),
                }
                if let Some(now) = self.act_now(&task.id)? {
                    return Ok(now);
                }
            }
        }
    }

    /// One turn and what the driver does next: go on with what the agent said, prompt again
    /// (a steer), start the agent again with the brief (it crashed or hung; `next` says so),
    /// or end the task.
    async fn turn_step(
        &mut self,
        conn: &mut Connection,
        turn: &mut Turn<'_>,
        next: &mut String,
        brief: &str,
    ) -> Result<Step> {
        let (task, iter, attempt) = (turn.task, turn.iter, turn.attempt);
        match self.agent_turn(conn, task, next, iter, attempt, turn.cost).await {
            Ok(Turned::Said(said)) => Ok(Step::Said(said)),
            Ok(Turned::Steered) => Ok(Step::Again),
            Ok(Turned::Ended(end)) => Ok(Step::End(end)),
            Err(HarnessError::Agent(e)) => {
                if let Some(end) = self.agent_failed(task, attempt, iter, &e, turn.restarts)? {
                    return Ok(Step::End(end));
                }
                *next = format!(
                    "{brief}\n\nharrow: your previous agent session ended ({e}). The worktree keeps everything you did; look at it and go on.\n\n{HOW_IT_ENDS}"
                );
                Ok(Step::Restart)
            }
            Err(e) => Err(e),
        }
    }

    /// Starts the agent in its sandbox and opens a session in the lane's worktree.
    async fn start_agent(
        &mut self,
        task: &Task,
        spec: &AgentSpec,
        attempt: u64,
        iter: u64,
    ) -> Result<Result<Connection, TaskEnd>> {
        let prepared = match setup::prepare(spec, &self.hands, &self.shared.dir, self.link.number) {
            Ok(p) => p,
            Err(why) => return self.hold(&task.id, &why, attempt).map(Err),
        };
        let worktree = self.hands.jail.root().to_path_buf();
        let process = AgentProcess::start(Launch {
            argv: &spec.command,
            cwd: &worktree,
            isolation: &prepared.isolation,
            env: prepared.env,
            home: prepared.home,
        })?;
        let start = Duration::from_secs(spec.start_secs.max(1));
        let quiet = Duration::from_secs(spec.quiet_secs.max(1));
        let mut host = AgentHost::new(self, task, spec, attempt, iter);
        let conn = Connection::open(process, &worktree, start, quiet, &mut host).await;
        let ended = host.ended.take();
        match (conn, ended) {
            (_, Some(end)) => Ok(Err(end)),
            (Ok(conn), None) => Ok(Ok(conn)),
            (Err(e), None) => Err(e),
        }
    }

    /// One prompt turn: `next` sent (with any steers waiting put first), the agent's updates
    /// logged, its requests served, the git guard around the whole turn.
    async fn agent_turn(
        &mut self,
        conn: &mut Connection,
        task: &Task,
        next: &mut String,
        iter: u64,
        attempt: u64,
        cost: &mut Option<f64>,
    ) -> Result<Turned> {
        let steers = self.take_steers(&task.id, iter, attempt)?;
        let text = if steers.is_empty() {
            std::mem::take(next)
        } else {
            let prompt = std::mem::take(next);
            if prompt.is_empty() {
                steers.join("\n\n")
            } else {
                format!("{}\n\n{prompt}", steers.join("\n\n"))
            }
        };
        let sc = scope(&task.id, iter, attempt);
        self.log_prompt(&sc, "worker", &text)?;
        self.guard_before();
        let started = Instant::now();
        let spec = self.shared.opts.agent.clone();
        let Some(spec) = spec else { return Ok(Turned::Ended(TaskEnd::Failed(StopReason::Error))) };
        let cost_before = *cost;
        let mut host = AgentHost::new(self, task, &spec, attempt, iter);
        host.recorder = Recorder::new(sc.clone(), &host.worktree, cost_before);
        let turn = conn.prompt(&text, &mut host).await;
        let mut recorder =
            std::mem::replace(&mut host.recorder, Recorder::new(sc.clone(), &host.worktree, None));
        let (ended, steered) = (host.ended.take(), host.steered);
        drop(host);
        let label = if conn.agent_info.is_empty() { spec.name() } else { conn.agent_info.clone() };
        let guarded = self.guard_git(&task.id, &sc, "agent")?;
        if let super::Guarded::Held(end) = guarded {
            return Ok(Turned::Ended(TaskEnd::Stop(end)));
        }
        match turn {
            Ok(TurnEnd::Answered { stop_reason, usage }) => {
                let ms = started.elapsed().as_millis() as u64;
                recorder.finish(&label, &stop_reason, usage.as_ref(), ms, &mut self.writer)?;
                *cost = recorder.usage.cost_usd;
                if let Some(end) = ended {
                    return Ok(Turned::Ended(end));
                }
                if let super::Guarded::PutBack(note) = guarded {
                    *next = note;
                }
                if steered || stop_reason == "cancelled" {
                    return Ok(Turned::Steered);
                }
                Ok(Turned::Said(recorder.turn_text))
            }
            Ok(TurnEnd::Abandoned) => {
                recorder.flush(&mut self.writer)?;
                Ok(Turned::Ended(ended.unwrap_or(TaskEnd::Failed(StopReason::OperatorFail))))
            }
            Err(e) => {
                recorder.flush(&mut self.writer)?;
                match ended {
                    Some(end) => Ok(Turned::Ended(end)),
                    None => Err(e),
                }
            }
        }
    }

    /// An agent that died, hung or spoke no ACP: logged as a failed call of the worker's,
    /// started again with a fresh session (up to [`RESTARTS`] times for a crash or a hang),
    /// then the task held with what the agent last printed. `None`: start it again.
    fn agent_failed(
        &mut self,
        task: &Task,
        attempt: u64,
        iter: u64,
        e: &AgentError,
        restarts: &mut u32,
    ) -> Result<Option<TaskEnd>> {
        let class = match e {
            AgentError::Exited { .. } => "agent_exited",
            AgentError::Hung { .. } => "agent_hung",
            AgentError::NotFound(_) | AgentError::Start(_) => "agent_not_started",
            AgentError::Wire(_) | AgentError::BadAnswer { .. } => "not_acp",
            AgentError::Refused { .. } => "rejected",
        };
        self.emit(&ModelCall {
            scope: scope(&task.id, iter, attempt),
            role: Some("worker".into()),
            phase: Some("agent".into()),
            provider: Some("acp".into()),
            health: Some("unhealthy".into()),
            health_detail: Some(e.to_string()),
            error_class: Some(class.into()),
            ..ModelCall::default()
        })?;
        if e.is_transient() && *restarts < RESTARTS {
            *restarts += 1;
            return Ok(None);
        }
        let why = format!("the agent failed: {e}");
        self.hold(&task.id, &why, attempt).map(Some)
    }

    /// The case, as `submit_case` arguments: the JSON object the agent gave in `answer`, or —
    /// when it gave none that holds — one harrow builds from what it said and the diff,
    /// marked as built, with the agent's answer logged as a case that could not be read.
    fn agent_case(
        &mut self,
        task: &Task,
        said: &str,
        answer: &str,
        sc: &crate::session::event::Scope,
    ) -> Result<String> {
        let given = json_object(answer);
        let error = match given.as_deref().map(crate::harness::case::parse) {
            Some(Ok(_)) => return Ok(given.unwrap_or_default()),
            Some(Err(e)) => e,
            None => "the agent's answer holds no JSON object".into(),
        };
        self.emit(&CaseParseError(ParseError {
            scope: sc.clone(),
            error: Some(format!("{error}; harrow built the case from the agent's last message and the diff")),
            raw_tool_calls: Some(json!([{"name": "submit_case", "arguments": answer.chars().take(4000).collect::<String>()}])),
            ..ParseError::default()
        }))?;
        let base = self.task_base(&task.id)?;
        let files: Vec<String> = self
            .task_diff(&base)
            .map(|d| d.files.iter().map(|f| f.stat.path.clone()).take(5).collect())
            .unwrap_or_default();
        let pointer =
            if files.is_empty() { "(no files changed)".to_owned() } else { files.join(", ") };
        let last = said.trim().lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let last: String = last.chars().take(300).collect();
        let summary =
            format!("(case built by harrow: the agent gave none in harrow's terms) {last}");
        let coverage: Vec<Value> = task
            .criteria
            .iter()
            .map(|c| json!({"criterion": c, "addressed_by": pointer}))
            .collect();
        Ok(json!({
            "summary": summary.trim(),
            "ac_coverage": coverage,
            "uncertainties": [format!("harrow built this case: {error}")],
        })
        .to_string())
    }
}

/// `words` after what is already waiting to be said (the git guard's note).
fn then(waiting: &str, words: &str) -> String {
    if waiting.is_empty() { words.to_owned() } else { format!("{waiting}\n\n{words}") }
}

/// The next prompt after a reject, a failed check or a landing that did not combine.
fn rework_prompt(feedback: &str) -> String {
    format!(
        "harrow: your work was checked and needs more before it can land. Rework it in place (same worktree), then end your turn.\n\n{feedback}"
    )
}

/// The JSON object in an answer: a `json` code fence's, else the text from the first `{` to the
/// last `}`.
fn json_object(answer: &str) -> Option<String> {
    if let Some(start) = answer.find("```json") {
        let rest = &answer[start + 7..];
        if let Some(end) = rest.find("```") {
            return Some(rest[..end].trim().to_owned());
        }
    }
    let (start, end) = (answer.find('{')?, answer.rfind('}')?);
    (start < end).then(|| answer[start..=end].to_owned())
}

/// The lane seen by the agent's connection during one turn.
struct AgentHost<'l> {
    lane: &'l mut Lane,
    task: String,
    attempt: u64,
    iter: u64,
    permissions: Permissions,
    worktree: std::path::PathBuf,
    recorder: Recorder,
    /// How the task ends, when the operator or the run ended it during the turn.
    ended: Option<TaskEnd>,
    /// The turn was cancelled for a steer.
    steered: bool,
    /// Terminals the agent had harrow run: their output and exit code.
    terminals: BTreeMap<String, (String, Option<i32>)>,
    /// Permission requests held for the operator, oldest first.
    asks: Vec<Ask>,
    /// Answers to held requests, for the connection to send.
    answered: Vec<Answer>,
}

/// A permission request of the agent's that waits for the operator.
struct Ask {
    id: Value,
    options: Vec<Value>,
    title: String,
}

impl<'l> AgentHost<'l> {
    fn new(
        lane: &'l mut Lane,
        task: &Task,
        spec: &AgentSpec,
        attempt: u64,
        iter: u64,
    ) -> AgentHost<'l> {
        let worktree = lane.hands.jail.root().to_path_buf();
        let sc = scope(&task.id, iter, attempt);
        AgentHost {
            lane,
            task: task.id.clone(),
            attempt,
            iter,
            permissions: spec.permissions,
            recorder: Recorder::new(sc, &worktree, None),
            worktree,
            ended: None,
            steered: false,
            terminals: BTreeMap::new(),
            asks: Vec::new(),
            answered: Vec::new(),
        }
    }

    fn scope(&self) -> crate::session::event::Scope {
        scope(&self.task, self.iter, self.attempt)
    }

    /// `session/request_permission`, answered by the policy and logged — or, under `ask`,
    /// held open for the operator (`None`), the wait logged for the console to show.
    fn permission(
        &mut self,
        id: &Value,
        params: &Value,
    ) -> Result<Option<Result<Value, RpcError>>> {
        let options = params["options"].as_array().cloned().unwrap_or_default();
        let title: String = crate::printable::line(
            &params["toolCall"]["title"]
                .as_str()
                .unwrap_or("")
                .chars()
                .take(300)
                .collect::<String>(),
        );
        let allow = match self.permissions {
            Permissions::Allow => true,
            Permissions::Deny => false,
            Permissions::Ask if options.is_empty() => false,
            Permissions::Ask => {
                let task = self.task.clone();
                let what = if title.is_empty() { "permission".to_owned() } else { title.clone() };
                let reason = format!(
                    "{task}'s agent asks: {what} — allow or deny it: a / r in the console, or harrow control {} allow|deny --task {task}",
                    self.lane.shared.id
                );
                self.lane.emit(&OperatorWait {
                    scope: self.scope(),
                    reason: Some(reason),
                    tool: Some("agent".into()),
                    ..OperatorWait::default()
                })?;
                self.asks.push(Ask { id: id.clone(), options, title });
                return Ok(None);
            }
        };
        let by = if allow { "harrow's policy (allow)" } else { "harrow's policy (deny)" };
        self.answer_permission(&options, &title, allow, by).map(|a| Some(Ok(a)))
    }

    /// The answer to a permission request: the first option of the kinds `allow` picks,
    /// else `cancelled`; logged with who decided.
    fn answer_permission(
        &mut self,
        options: &[Value],
        title: &str,
        allow: bool,
        by: &str,
    ) -> Result<Value> {
        let wanted: &[&str] =
            if allow { &["allow_once", "allow_always"] } else { &["reject_once", "reject_always"] };
        let chosen = wanted.iter().find_map(|kind| {
            options
                .iter()
                .find(|o| o["kind"].as_str() == Some(kind))
                .and_then(|o| o["optionId"].as_str())
        });
        let (outcome, answer, reason) = match chosen {
            Some(id) => (
                if allow { "allow" } else { "block" },
                json!({"outcome": {"outcome": "selected", "optionId": id}}),
                format!("{title} ({id}), by {by}"),
            ),
            None => (
                "block",
                json!({"outcome": {"outcome": "cancelled"}}),
                format!(
                    "{title}: the request offered no option {by} could pick; answered cancelled"
                ),
            ),
        };
        self.lane.emit(&HookRun {
            scope: self.scope(),
            tool: Some("agent".into()),
            hook: Some(crate::session::vocabulary::HookName::Permission.as_str().to_owned()),
            outcome: Some(outcome.into()),
            reason: Some(crate::printable::line(&reason)),
            ..HookRun::default()
        })?;
        Ok(answer)
    }

    /// The operator's allows and denies, each answering the oldest open request; one with
    /// no request open is refused in the log.
    fn operator_answers(&mut self) -> Result<()> {
        for word in self.lane.link.inbox.take_any(&[Op::Allow, Op::Deny]) {
            if self.asks.is_empty() {
                let why = format!(
                    "{} came while {}'s agent had no permission request open: nothing was answered",
                    word.op.as_str(),
                    self.task
                );
                self.lane.refuse(Some(&self.task.clone()), &why)?;
                continue;
            }
            let ask = self.asks.remove(0);
            let by = format!("the operator ({})", word.source);
            let answer =
                self.answer_permission(&ask.options, &ask.title, word.op == Op::Allow, &by)?;
            self.answered.push((ask.id, Ok(answer)));
        }
        Ok(())
    }

    /// Every open request answered `cancelled`, as ACP asks of a client that cancels the turn.
    fn cancel_asks(&mut self) -> Result<()> {
        for ask in std::mem::take(&mut self.asks) {
            self.lane.emit(&HookRun {
                scope: self.scope(),
                tool: Some("agent".into()),
                hook: Some(crate::session::vocabulary::HookName::Permission.as_str().to_owned()),
                outcome: Some("block".into()),
                reason: Some(format!(
                    "{}: cancelled with the turn, for the operator's steer",
                    ask.title
                )),
                ..HookRun::default()
            })?;
            self.answered.push((ask.id, Ok(json!({"outcome": {"outcome": "cancelled"}}))));
        }
        Ok(())
    }

    /// A tool of the hands, called for the agent and logged as harrow's own calls are: its
    /// output, or the tool's refusal as an error.
    fn hands_call(&mut self, name: &str, args: &Value) -> Result<Result<String, RpcError>> {
        let sc = self.scope();
        let lane = &mut *self.lane;
        let outcome = lane.hands.call(&sc, None, name, args, &mut lane.writer)?;
        Ok(if outcome.is_error {
            Err(RpcError { code: -32000, message: outcome.output })
        } else {
            Ok(outcome.output)
        })
    }

    fn fs_read(&mut self, params: &Value) -> Result<Result<Value, RpcError>> {
        let Some(path) = params["path"].as_str() else {
            return Ok(Err(RpcError::invalid_params("no path")));
        };
        let mut args = json!({"path": path});
        if let Some(line) = params["line"].as_u64() {
            args["start_line"] = json!(line.max(1));
            if let Some(limit) = params["limit"].as_u64() {
                args["end_line"] = json!(line.max(1) + limit.max(1) - 1);
            }
        }
        Ok(self.hands_call("read_file", &args)?.map(|content| {
            // harrow's reader notes a range it cut; ACP wants the text alone.
            let content = match content.rfind("\n[lines ") {
                Some(at) if content.ends_with(']') => content[..at].to_owned(),
                _ => content,
            };
            json!({"content": content})
        }))
    }

    fn fs_write(&mut self, params: &Value) -> Result<Result<Value, RpcError>> {
        let (Some(path), Some(content)) = (params["path"].as_str(), params["content"].as_str())
        else {
            return Ok(Err(RpcError::invalid_params("path and content are needed")));
        };
        Ok(self
            .hands_call("write_file", &json!({"path": path, "content": content}))?
            .map(|_| Value::Null))
    }

    /// `terminal/create`: the command runs to its end through the hands' `bash` (sandbox,
    /// hooks, timeout), so its output and exit are there for the agent's next asks.
    fn terminal_create(&mut self, params: &Value) -> Result<Result<Value, RpcError>> {
        let Some(command) = params["command"].as_str() else {
            return Ok(Err(RpcError::invalid_params("no command")));
        };
        let mut line = vec![command.to_owned()];
        line.extend(
            params["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        let line = shlex::try_join(line.iter().map(String::as_str)).unwrap_or_default();
        if line.is_empty() {
            return Ok(Err(RpcError::invalid_params("the command cannot be quoted for a shell")));
        }
        let (output, code) = match self.hands_call("bash", &json!({"command": line}))? {
            Ok(out) | Err(RpcError { message: out, .. }) => {
                let code = out
                    .rsplit_once("[exit ")
                    .and_then(|(_, c)| c.trim_end_matches(']').trim().parse().ok());
                (out, code)
            }
        };
        let id = format!("term-{}", self.terminals.len() + 1);
        self.terminals.insert(id.clone(), (output, code));
        Ok(Ok(json!({"terminalId": id})))
    }

    fn terminal(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let id = params["terminalId"].as_str().unwrap_or("");
        let Some((output, code)) = self.terminals.get(id).cloned() else {
            return Err(RpcError::invalid_params("no such terminal"));
        };
        let exit = json!({"exitCode": code, "signal": Value::Null});
        Ok(match method {
            "terminal/output" => json!({"output": output, "truncated": false, "exitStatus": exit}),
            "terminal/wait_for_exit" => exit,
            "terminal/release" => {
                self.terminals.remove(id);
                Value::Null
            }
            _ => Value::Null,
        })
    }
}

impl Host for AgentHost<'_> {
    type Error = HarnessError;

    fn update(&mut self, update: &Value) -> Result<()> {
        Ok(self.recorder.update(update, &mut self.lane.writer)?)
    }

    fn serve(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
    ) -> Result<Option<Result<Value, RpcError>>> {
        let answer = match method {
            "session/request_permission" => return self.permission(id, params),
            "fs/read_text_file" => self.fs_read(params)?,
            "fs/write_text_file" => self.fs_write(params)?,
            "terminal/create" => self.terminal_create(params)?,
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                self.terminal(method, params)
            }
            other => Err(RpcError::method_not_found(other)),
        };
        Ok(Some(answer))
    }

    fn answers(&mut self) -> Result<Vec<Answer>> {
        Ok(std::mem::take(&mut self.answered))
    }

    fn interrupt(&mut self) -> Result<Option<Interrupt>> {
        if let Some(end) = self.lane.act_now(&self.task)? {
            self.ended = Some(end);
            return Ok(Some(Interrupt::Abandon));
        }
        self.operator_answers()?;
        if self.lane.link.inbox.has(Op::Steer) {
            self.steered = true;
            self.cancel_asks()?;
            return Ok(Some(Interrupt::Cancel));
        }
        Ok(None)
    }
}
