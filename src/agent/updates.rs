//! An agent's `session/update` notifications as harrow's own events: its prose as
//! `assistant_message`, its tool calls as `tool_call` and `tool_result` (kind, title, command,
//! paths, output, diffs), its plan as a message, and at the turn's end one `model_call` with
//! the usage it reported — absent where it reported none, never a made-up 0.
//!
//! Everything here comes from the agent and is kept as data: cut to size, never interpreted.

use crate::session::event::{AssistantMessage, ModelCall, Scope, ToolCall, ToolResult};
use crate::session::sink::EventSink;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Characters of one message kept (a flood of chunks is cut, with a note).
const MESSAGE_CHARS: usize = 64 * 1024;
/// Characters of a tool's output or input kept in its event.
const TOOL_CHARS: usize = 32 * 1024;
/// Tool calls remembered by id within a turn (their kind, for their updates).
const CALLS_KEPT: usize = 4096;

/// What the agent reported of its usage during a turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Tokens in its context, and its window (`usage_update`).
    pub used: Option<u64>,
    pub size: Option<u64>,
    /// Its cumulative cost in USD, as last reported.
    pub cost_usd: Option<f64>,
}

/// One turn's updates on their way to the log.
#[derive(Debug)]
pub struct Recorder {
    scope: Scope,
    worktree: PathBuf,
    said: String,
    thought: String,
    /// Everything the agent said this turn (cut at [`MESSAGE_CHARS`]): a case is read from it.
    pub turn_text: String,
    /// Each call's kind, and whether its result was logged.
    calls: BTreeMap<String, (String, bool)>,
    /// Tool calls the agent reported this turn.
    pub tool_calls: u64,
    pub usage: Usage,
    /// The cost reported when the turn began, so the turn's own share can be told.
    cost_before: Option<f64>,
}

fn push_capped(into: &mut String, text: &str, cap: usize) {
    if into.len() >= cap {
        return;
    }
    let room = cap - into.len();
    if text.len() <= room {
        into.push_str(text);
    } else {
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        into.push_str(&text[..cut]);
        into.push_str("\n[harrow: cut here, the agent said more]");
    }
}

fn capped(text: &str, cap: usize) -> String {
    let mut out = String::new();
    push_capped(&mut out, text, cap);
    out
}

/// A JSON value as text for an event, cut to size.
fn json_capped(value: &Value, cap: usize) -> Value {
    let text = value.to_string();
    if text.len() <= cap { value.clone() } else { Value::String(capped(&text, cap)) }
}

impl Recorder {
    /// A recorder for one prompt turn, logged under `scope`; `cost_before` is the agent's
    /// cumulative cost as last reported.
    pub fn new(scope: Scope, worktree: &Path, cost_before: Option<f64>) -> Recorder {
        Recorder {
            scope,
            worktree: worktree.to_path_buf(),
            said: String::new(),
            thought: String::new(),
            turn_text: String::new(),
            calls: BTreeMap::new(),
            tool_calls: 0,
            usage: Usage { cost_usd: cost_before, ..Usage::default() },
            cost_before,
        }
    }

    /// Takes one update.
    pub fn update<S: EventSink>(&mut self, update: &Value, sink: &mut S) -> io::Result<()> {
        let text = |v: &Value| v["content"]["text"].as_str().unwrap_or("").to_owned();
        match update["sessionUpdate"].as_str().unwrap_or("") {
            "agent_message_chunk" => {
                let t = text(update);
                push_capped(&mut self.said, &t, MESSAGE_CHARS);
                push_capped(&mut self.turn_text, &t, MESSAGE_CHARS);
            }
            "agent_thought_chunk" => push_capped(&mut self.thought, &text(update), MESSAGE_CHARS),
            "tool_call" => {
                self.flush(sink)?;
                self.tool_call(update, sink)?;
                self.finish_call(update, sink)?;
            }
            "tool_call_update" => {
                let id = update["toolCallId"].as_str().unwrap_or("");
                if !self.calls.contains_key(id) {
                    self.flush(sink)?;
                    self.tool_call(update, sink)?;
                }
                self.finish_call(update, sink)?;
            }
            "plan" => {
                self.flush(sink)?;
                let entries: Vec<String> = (update["entries"].as_array().into_iter().flatten())
                    .map(|e| {
                        format!(
                            "[{}] {}",
                            e["status"].as_str().unwrap_or("pending"),
                            e["content"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                sink.emit(&AssistantMessage {
                    scope: self.scope.clone(),
                    role: Some("assistant".into()),
                    content: Some(capped(&format!("Plan:\n{}", entries.join("\n")), MESSAGE_CHARS)),
                    ..AssistantMessage::default()
                })?;
            }
            "usage_update" => {
                self.usage.used = update["used"].as_u64().or(self.usage.used);
                self.usage.size = update["size"].as_u64().or(self.usage.size);
                let cost = &update["cost"];
                if cost["currency"].as_str().is_some_and(|c| c.eq_ignore_ascii_case("USD")) {
                    self.usage.cost_usd =
                        cost["amount"].as_f64().filter(|a| a.is_finite() && *a >= 0.0);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The tool a call is, by its kind (`execute`, `edit`, `read` …), and its arguments for
    /// the log: title, command, the paths it names (marked when outside the worktree), input.
    fn tool_call<S: EventSink>(&mut self, update: &Value, sink: &mut S) -> io::Result<()> {
        let id = capped(update["toolCallId"].as_str().unwrap_or(""), 200);
        let kind = capped(update["kind"].as_str().unwrap_or("other"), 40);
        let title = capped(update["title"].as_str().unwrap_or(""), 400);
        let mut args = json!({"title": title, "kind": kind});
        let raw = &update["rawInput"];
        if let Some(command) = raw.get("command") {
            let command = match command {
                Value::Array(parts) => {
                    parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")
                }
                other => other.as_str().unwrap_or("").to_owned(),
            };
            args["command"] = json!(capped(&command, TOOL_CHARS));
        }
        let paths: Vec<Value> = (update["locations"].as_array().into_iter().flatten())
            .filter_map(|l| l["path"].as_str())
            .take(32)
            .map(|p| {
                let inside =
                    Path::new(p).starts_with(&self.worktree) || !Path::new(p).is_absolute();
                if inside {
                    json!(capped(p, 400))
                } else {
                    json!({"path": capped(p, 400), "outside_worktree": true})
                }
            })
            .collect();
        if !paths.is_empty() {
            args["paths"] = Value::Array(paths);
        }
        if !raw.is_null() {
            args["input"] = json_capped(raw, TOOL_CHARS);
        }
        if self.calls.len() < CALLS_KEPT {
            self.calls.insert(id.clone(), (kind.clone(), false));
        }
        self.tool_calls += 1;
        sink.emit(&ToolCall {
            scope: self.scope.clone(),
            tool: Some(kind),
            args: Some(args),
            phase: Some("agent".into()),
            call_id: Some(id),
            ..ToolCall::default()
        })
    }

    /// A call the update says is over (`completed`, `failed`): its result, once.
    fn finish_call<S: EventSink>(&mut self, update: &Value, sink: &mut S) -> io::Result<()> {
        let status = update["status"].as_str().unwrap_or("");
        if !matches!(status, "completed" | "failed") {
            return Ok(());
        }
        let id = update["toolCallId"].as_str().unwrap_or("");
        let Some((kind, done)) = self.calls.get_mut(id) else { return Ok(()) };
        if *done {
            return Ok(());
        }
        *done = true;
        let kind = kind.clone();
        let mut output = String::new();
        for item in update["content"].as_array().into_iter().flatten() {
            match item["type"].as_str() {
                Some("content") => {
                    push_capped(
                        &mut output,
                        item["content"]["text"].as_str().unwrap_or(""),
                        TOOL_CHARS,
                    );
                }
                Some("diff") => {
                    let path = self.shown(item["path"].as_str().unwrap_or("?"));
                    let new = item["newText"].as_str().unwrap_or("");
                    let lines = new.lines().count();
                    let verb = if item["oldText"].is_null() { "wrote" } else { "edited" };
                    push_capped(
                        &mut output,
                        &format!("[{verb} {path}: {lines} lines]\n"),
                        TOOL_CHARS,
                    );
                }
                Some("terminal") => push_capped(&mut output, "[terminal output]\n", TOOL_CHARS),
                _ => {}
            }
        }
        if output.is_empty()
            && let Some(raw) = update.get("rawOutput").filter(|v| !v.is_null())
        {
            let text = raw.as_str().map_or_else(|| raw.to_string(), str::to_owned);
            push_capped(&mut output, &text, TOOL_CHARS);
        }
        sink.emit(&ToolResult {
            scope: self.scope.clone(),
            tool: Some(kind),
            result_preview: Some(output.chars().take(crate::hands::RESULT_PREVIEW_CHARS).collect()),
            result_chars: Some(output.chars().count() as u64),
            output: Some(output),
            phase: Some("agent".into()),
            call_id: Some(capped(id, 200)),
            is_error: Some(status == "failed"),
            ..ToolResult::default()
        })
    }

    /// A path as people read it: relative to the worktree when it is inside.
    fn shown(&self, path: &str) -> String {
        Path::new(path)
            .strip_prefix(&self.worktree)
            .map_or_else(|_| path.to_owned(), |rel| rel.display().to_string())
    }

    /// Writes what the agent said since the last tool call as one message.
    pub fn flush<S: EventSink>(&mut self, sink: &mut S) -> io::Result<()> {
        if self.said.trim().is_empty() && self.thought.trim().is_empty() {
            self.said.clear();
            self.thought.clear();
            return Ok(());
        }
        let content = std::mem::take(&mut self.said);
        let reasoning = std::mem::take(&mut self.thought);
        sink.emit(&AssistantMessage {
            scope: self.scope.clone(),
            role: Some("assistant".into()),
            content: Some(content),
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
            ..AssistantMessage::default()
        })
    }

    /// Ends the turn: what is left said, and the turn as one `model_call` — the agent's
    /// name as the model, its stop reason, the tokens of the prompt's answer (`usage`) and
    /// the cost it reported, each only where it reported it.
    pub fn finish<S: EventSink>(
        &mut self,
        agent: &str,
        stop_reason: &str,
        usage: Option<&Value>,
        duration_ms: u64,
        sink: &mut S,
    ) -> io::Result<()> {
        self.flush(sink)?;
        let count = |key: &str| usage.and_then(|u| u[key].as_u64());
        let cost = match (self.usage.cost_usd, self.cost_before) {
            (Some(now), Some(before)) if now >= before => Some(now - before),
            (Some(now), None) => Some(now),
            _ => None,
        };
        sink.emit(&ModelCall {
            scope: self.scope.clone(),
            role: Some("worker".into()),
            phase: Some("agent".into()),
            model: Some(agent.to_owned()),
            provider: Some("acp".into()),
            health: Some("ok".into()),
            finish_reason: Some(stop_reason.to_owned()),
            prompt_tokens: count("inputTokens"),
            eval_tokens: count("outputTokens"),
            cached_tokens: count("cachedReadTokens"),
            reasoning_tokens: count("thoughtTokens"),
            tokens_used_total: count("totalTokens"),
            cost,
            duration_ms: Some(duration_ms),
            ..ModelCall::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(updates: &[Value]) -> Vec<(String, Value)> {
        let mut sink: Vec<(String, Value)> = Vec::new();
        let mut r = Recorder::new(Scope::default(), Path::new("/work/tree"), None);
        for u in updates {
            r.update(u, &mut sink).unwrap();
        }
        r.finish("agent", "end_turn", None, 5, &mut sink).unwrap();
        sink
    }

    #[test]
    fn prose_tools_and_results_become_harrows_events_in_order() {
        let events = recorded(&[
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Let me "}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "look."}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run tests", "kind": "execute",
                   "status": "pending", "rawInput": {"command": ["pytest", "-q"]},
                   "locations": [{"path": "/work/tree/a.py"}, {"path": "/etc/passwd"}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "1 passed"}}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
        ]);
        let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["assistant_message", "tool_call", "tool_result", "model_call"]);
        assert_eq!(events[0].1["content"], "Let me look.");
        assert_eq!(events[1].1["args"]["command"], "pytest -q");
        assert_eq!(events[1].1["args"]["paths"][1]["outside_worktree"], true);
        assert_eq!(events[2].1["output"], "1 passed");
        let call = &events[3].1;
        assert!(call.get("prompt_tokens").is_none() && call.get("cost").is_none(), "{call}");
    }

    #[test]
    fn a_flood_of_chunks_is_cut_and_usage_is_taken_where_given() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x".repeat(10_000)}});
        let mut updates = vec![chunk; 20];
        updates.push(json!({"sessionUpdate": "usage_update", "used": 900, "size": 2000,
                            "cost": {"amount": 0.25, "currency": "USD"}}));
        let mut sink: Vec<(String, Value)> = Vec::new();
        let mut r = Recorder::new(Scope::default(), Path::new("/w"), Some(0.05));
        for u in &updates {
            r.update(u, &mut sink).unwrap();
        }
        let usage = json!({"inputTokens": 700, "outputTokens": 50, "totalTokens": 750});
        r.finish("codex", "end_turn", Some(&usage), 1, &mut sink).unwrap();
        let said = sink[0].1["content"].as_str().unwrap();
        assert!(said.len() < MESSAGE_CHARS + 100 && said.ends_with("said more]"), "{}", said.len());
        let call = &sink[1].1;
        assert_eq!(
            (call["prompt_tokens"].as_u64(), call["eval_tokens"].as_u64()),
            (Some(700), Some(50))
        );
        assert!((call["cost"].as_f64().unwrap() - 0.20).abs() < 1e-9, "{call}");
    }
}
