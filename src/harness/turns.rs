//! The one agent turn loop, shared by the worker and the prep interviewer: ask the model, keep
//! its reply in the conversation, run the tools it called through the hands (arguments that
//! are not JSON get the same answer and the same event for every role), hand the role's own
//! tools (`submit_case`, `write_plan`) and quiet turns to the role, and stop at the turn cap.
//! Each role brings its tools, how it asks (logging, budgets, cancelling) and when it is done.

use crate::brain::client::Reply;
use crate::session::event::{Scope, ToolCall, ToolCallRecord};
use crate::session::writer::SessionWriter;
use serde_json::{Value, json};
use std::io;

/// Whether the loop goes on after a turn, or the role is done with this result.
#[derive(Debug)]
pub enum Turn<T> {
    Continue,
    Done(T),
}

/// A role that works with tools in the shared loop. `iter` counts the loop's turns from 1.
pub(crate) trait Agent {
    /// What the role ends with.
    type Done;
    /// What the role's own failures are (the loop's log writes convert into it).
    type Error: From<io::Error>;

    /// What goes into the conversation before the next request, from outside it: the
    /// operator's words for the task at work, a note on where the work is going. `Some` ends
    /// the loop there instead (a task held as stuck).
    fn interject(
        &mut self,
        _iter: u64,
        _messages: &mut Vec<Value>,
    ) -> Result<Option<Self::Done>, Self::Error> {
        Ok(None)
    }

    /// Asks the model for its next reply; `Err` ends the loop (a failed call, a stop).
    async fn ask(
        &mut self,
        iter: u64,
        messages: &mut Vec<Value>,
        tools: &[Value],
    ) -> Result<Result<Reply, Self::Done>, Self::Error>;

    /// Whether the role answers this tool itself rather than the hands.
    fn owns(&self, tool: &str) -> bool;

    /// Why the role may not use a tool of the hands, if it may not (the prep interview only
    /// reads): the model is told so and nothing runs.
    fn refuses(&self, _tool: &str) -> Option<String> {
        None
    }

    /// Where a tool call of this turn is logged.
    fn scope(&self, iter: u64) -> Scope;

    /// The session log, for the events the loop writes itself.
    fn writer(&mut self) -> &mut SessionWriter;

    /// Runs one of the hands' tools; its output goes back to the model. `Err` ends the loop.
    async fn run_tool(
        &mut self,
        iter: u64,
        call: &ToolCallRecord,
        args: &Value,
    ) -> Result<Result<String, Self::Done>, Self::Error>;

    /// A reply that called no tool at all: a question for a person, or a quiet turn to nudge.
    async fn quiet(
        &mut self,
        iter: u64,
        reply: &Reply,
        messages: &mut Vec<Value>,
    ) -> Result<Turn<Self::Done>, Self::Error>;

    /// A reply that used the hands' tools and none of the role's own.
    fn worked(&mut self) {}

    /// The role's own tool calls of one reply (at least one), in order.
    async fn own(
        &mut self,
        iter: u64,
        calls: &[&ToolCallRecord],
        messages: &mut Vec<Value>,
    ) -> Result<Turn<Self::Done>, Self::Error>;

    /// What the role ends with when the turns run out.
    fn out_of_turns(&mut self) -> Self::Done;
}

/// The answer to a tool call whose arguments are not JSON: nothing ran. A reply cut off by
/// the length limit is told so, since smaller steps are the fix.
pub fn bad_arguments(reply: &Reply, call: &ToolCallRecord, error: &serde_json::Error) -> String {
    if reply.finish_reason.as_deref() == Some("length") {
        format!(
            "ERROR: {}: your reply was cut off by the output length limit before these arguments were complete; nothing was run. Send a smaller change, one tool call at a time.",
            call.name
        )
    } else {
        format!(
            "ERROR: {}: the arguments are not valid JSON ({error}); send one JSON object",
            call.name
        )
    }
}

/// A tool result for the conversation.
pub fn tool_message(id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

/// Runs `agent` for at most `max_turns` model turns, continuing `messages`, numbering the
/// turns from `first`.
pub(crate) async fn drive<A: Agent>(
    agent: &mut A,
    messages: &mut Vec<Value>,
    tools: &[Value],
    (first, max_turns): (u64, u64),
) -> Result<A::Done, A::Error> {
    for iter in first..first.saturating_add(max_turns) {
        if let Some(done) = agent.interject(iter, messages)? {
            return Ok(done);
        }
        let reply = match agent.ask(iter, &mut *messages, tools).await? {
            Ok(reply) => reply,
            Err(done) => return Ok(done),
        };
        messages.push(reply.history_message());
        let (own, work): (Vec<&ToolCallRecord>, Vec<&ToolCallRecord>) =
            reply.tool_calls.iter().partition(|c| agent.owns(&c.name));
        for call in &work {
            let output = if let Some(why) = agent.refuses(&call.name) {
                format!("ERROR: {}: {why}", call.name)
            } else {
                match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(args) => match agent.run_tool(iter, call, &args).await? {
                        Ok(output) => output,
                        Err(done) => return Ok(done),
                    },
                    Err(e) => {
                        let scope = agent.scope(iter);
                        agent.writer().append(&ToolCall {
                            scope,
                            tool: Some(call.name.clone()),
                            args: Some(json!("(unparseable JSON)")),
                            call_id: Some(call.id.clone()),
                            ..ToolCall::default()
                        })?;
                        bad_arguments(&reply, call, &e)
                    }
                }
            };
            messages.push(tool_message(&call.id, &output));
        }
        let next = if !own.is_empty() {
            agent.own(iter, &own, messages).await?
        } else if work.is_empty() {
            agent.quiet(iter, &reply, messages).await?
        } else {
            agent.worked();
            Turn::Continue
        };
        if let Turn::Done(done) = next {
            return Ok(done);
        }
    }
    Ok(agent.out_of_turns())
}
