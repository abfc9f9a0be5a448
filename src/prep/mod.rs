//! `harrow prep`: from an idea to a plan. A model interviews the person one question at a
//! time, reads the repository (read-only tools, confined as the worker's), and drafts the plan
//! with `write_plan`; nothing is written until the person accepts it. The interview is a
//! session of its own — every model and tool call, every answer, the plan written, the commit
//! — so `show`, `replay` and `export` read it like any other.

pub(crate) mod draft;
pub(crate) mod write;

use crate::brain::client::{Brain, CallTag, Reply, Role};
use crate::hands::Hands;
use crate::hands::tools::{self, ToolKind};
use crate::harness::record;
use crate::harness::turns::{self, Agent, Turn};
use crate::session::event::{OperatorAction, Scope};
use crate::session::writer::SessionWriter;
use draft::Draft;
use serde_json::{Value, json};

/// What the interview model is told about its job.
pub const PREP_PROMPT: &str = include_str!("../../prompts/prep.md");

/// Model turns an interview may take before it is stopped.
const MAX_TURNS: usize = 80;

/// What the person decides about a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Write and commit it.
    Accept,
    /// Send it back to the model with this note.
    Revise(String),
    /// The person edited the draft's files by hand: this text, each file after `==> PATH`.
    Edit(String),
    /// Write nothing.
    Reject,
}

/// The person in the interview: typed in a terminal, a file of answers, or the console's
/// interview screen.
pub trait Person {
    /// The answer to the model's question, or `None` when the person has no more to say.
    fn answer(&mut self, question: &str) -> Option<String>;

    /// Tells the person something (what was written, where the session is).
    fn show(&mut self, text: &str) {
        println!("{}", crate::printable::text(text));
    }

    /// Shows the draft and asks what to do with it; by default nothing is written.
    fn review(&mut self, shown: &str) -> Decision {
        println!("\nThe plan, as it will be written:\n\n{}", crate::printable::text(shown));
        Decision::Reject
    }

    /// Whether the person asked to stop the interview: nothing more is asked or written.
    fn stopped(&self) -> bool {
        false
    }

    /// How this person sends an answer, for the interview's first line.
    fn how_to_answer(&self) -> &'static str {
        "end each answer with an empty line"
    }

    /// The model is reading the repository (`read_file src/lib.rs`): shown as it happens.
    fn reading(&mut self, what: &str) {
        println!("prep reads: {}", crate::printable::text(what));
    }

    /// Notified when the person stops the interview while the model works: the call in
    /// flight is dropped. `None` when the person cannot stop it mid-call.
    fn stop_signal(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }
}

/// A tool call in a few words, for the person watching: the tool and the path or pattern it
/// was given.
fn reading_words(tool: &str, args: &Value) -> String {
    let what = ["path", "pattern", "glob"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    format!("{tool} {}", crate::printable::line(what)).trim_end().to_owned()
}

/// Answers given in advance, one per question, in order.
#[derive(Debug, Clone, Default)]
pub struct Answers(pub std::collections::VecDeque<String>);

impl Answers {
    /// Blocks of text separated by blank lines: one answer each.
    pub fn parse(text: &str) -> Answers {
        let mut out = std::collections::VecDeque::new();
        let mut block: Vec<&str> = Vec::new();
        for line in text.lines().chain(std::iter::once("")) {
            if line.trim().is_empty() {
                if !block.is_empty() {
                    out.push_back(block.join("\n"));
                    block.clear();
                }
            } else {
                block.push(line);
            }
        }
        Answers(out)
    }
}

impl Person for Answers {
    fn how_to_answer(&self) -> &'static str {
        "answered from the file, in order"
    }

    /// The next answer from the file; the question and the answer are printed as they come,
    /// so a headless interview can be followed.
    fn answer(&mut self, question: &str) -> Option<String> {
        println!("\nprep asks: {}", crate::printable::text(question.trim()));
        let answer = self.0.pop_front();
        match &answer {
            Some(a) => println!("answered (from the file): {}", crate::printable::text(a.trim())),
            None => println!("(the answers file has no more answers)"),
        }
        answer
    }
}

/// Why an interview ended without a plan.
#[derive(Debug, thiserror::Error)]
pub enum PrepError {
    #[error("{0}")]
    Brain(#[from] crate::brain::client::BrainError),
    #[error("the session log cannot be written: {0}")]
    Log(#[from] std::io::Error),
    #[error("the model asked more than the person answered, and then wrote no plan: {0}")]
    NoMoreAnswers(String),
    #[error("the interview reached {MAX_TURNS} model turns without a plan")]
    TooLong,
    #[error("the interview was stopped; nothing was written")]
    Stopped,
}

/// The tools the interview offers: the worker's read-only ones, and `write_plan`.
pub fn tool_schemas() -> Vec<Value> {
    let mut out: Vec<Value> = tools::TOOLS
        .iter()
        .filter(|t| t.kind == ToolKind::Read)
        .map(tools::ToolSpec::openai_schema)
        .collect();
    out.push(draft::schema());
    out
}

/// One interview in progress.
#[derive(Debug)]
pub struct Interview<'a> {
    pub brain: &'a Brain,
    pub hands: &'a Hands,
    pub writer: &'a mut SessionWriter,
    pub feature: String,
    pub messages: Vec<Value>,
    turn: usize,
    tokens_total: u64,
}

impl<'a> Interview<'a> {
    /// Starts an interview about `brief` (what the person said they want, if anything).
    pub fn new(
        brain: &'a Brain,
        hands: &'a Hands,
        writer: &'a mut SessionWriter,
        feature: &str,
        brief: Option<&str>,
    ) -> Interview<'a> {
        let opening = match brief.map(str::trim).filter(|b| !b.is_empty()) {
            Some(b) => format!("The person wants this feature (call it '{feature}'):\n\n{b}"),
            None => format!(
                "The person wants to plan a feature they call '{feature}' but has not described it yet: ask them what it is."
            ),
        };
        let messages = vec![
            json!({"role": "system", "content": PREP_PROMPT}),
            json!({"role": "user", "content": opening}),
        ];
        Interview {
            brain,
            hands,
            writer,
            feature: feature.to_owned(),
            messages,
            turn: 0,
            tokens_total: 0,
        }
    }

    /// The interview's events belong to no task: it is about the plan, not one of its tasks.
    fn scope(&self) -> Scope {
        Scope { iter: Some(self.turn as u64), ..Scope::default() }
    }

    /// Carries the conversation on until the model writes a plan that holds together.
    pub async fn draft(&mut self, person: &mut dyn Person) -> Result<Draft, PrepError> {
        let tools = tool_schemas();
        let mut messages = std::mem::take(&mut self.messages);
        let left = (MAX_TURNS - self.turn.min(MAX_TURNS)) as u64;
        let mut prep = PrepTurns { interview: self, person, out_of_answers: None };
        let drafted = turns::drive(&mut prep, &mut messages, &tools, (1, left)).await;
        self.messages = messages;
        drafted?
    }

    /// Asks the model to revise its draft with the person's note, and returns the new one.
    pub async fn revise(
        &mut self,
        note: &str,
        person: &mut dyn Person,
    ) -> Result<Draft, PrepError> {
        self.messages
            .push(json!({"role": "user", "content": format!("Please revise the plan: {note}")}));
        self.draft(person).await
    }
}

/// The interviewer in the shared turn loop: a reply without tools is a question for the
/// person; `write_plan` ends the loop with a draft that holds together.
struct PrepTurns<'i, 'a> {
    interview: &'i mut Interview<'a>,
    person: &'i mut dyn Person,
    /// The question the person had no answer for (asked once more to write the plan).
    out_of_answers: Option<String>,
}

impl Agent for PrepTurns<'_, '_> {
    type Done = Result<Draft, PrepError>;
    type Error = std::io::Error;

    async fn ask(
        &mut self,
        _iter: u64,
        messages: &mut Vec<Value>,
        tools: &[Value],
    ) -> std::io::Result<Result<Reply, Self::Done>> {
        let me = &mut *self.interview;
        let tag = CallTag { role: Role::Prep, task: &me.feature, attempt: 1, turn: me.turn };
        let mut tries = Vec::new();
        let call = me.brain.chat(&tag, messages, tools, |a, r| {
            tries.push((a.clone(), r.cloned()));
        });
        let result = match self.person.stop_signal() {
            Some(stop) => tokio::select! {
                result = call => result,
                () = stop.notified() => return Ok(Err(Err(PrepError::Stopped))),
            },
            None => call.await,
        };
        let scope = me.scope();
        for (a, r) in &tries {
            me.tokens_total += a.usage.prompt + a.usage.completion;
            me.writer.append(&record::model_call(Role::Prep, &scope, a, me.tokens_total))?;
            if let Some(r) = r {
                me.writer.append(&record::assistant_message(Role::Prep, &scope, r))?;
            }
        }
        match result {
            Ok(reply) => {
                me.turn += 1;
                Ok(Ok(reply))
            }
            Err(e) => Ok(Err(Err(PrepError::Brain(e)))),
        }
    }

    fn owns(&self, tool: &str) -> bool {
        crate::session::vocabulary::ToolName::WritePlan.is(Some(tool))
    }

    fn refuses(&self, tool: &str) -> Option<String> {
        (!tools::find(tool).is_some_and(|t| t.kind == ToolKind::Read)).then(|| {
            "the interview can only read the repository (list_dir, glob, grep, read_file) and call write_plan".into()
        })
    }

    fn scope(&self, _iter: u64) -> Scope {
        self.interview.scope()
    }

    fn writer(&mut self) -> &mut SessionWriter {
        self.interview.writer
    }

    async fn run_tool(
        &mut self,
        _iter: u64,
        call: &crate::session::event::ToolCallRecord,
        args: &Value,
    ) -> std::io::Result<Result<String, Self::Done>> {
        self.person.reading(&reading_words(&call.name, args));
        let me = &mut *self.interview;
        let scope = me.scope();
        Ok(Ok(me.hands.call(&scope, Some(&call.id), &call.name, args, &mut *me.writer)?.output))
    }

    async fn quiet(
        &mut self,
        _iter: u64,
        reply: &Reply,
        messages: &mut Vec<Value>,
    ) -> std::io::Result<Turn<Self::Done>> {
        let question = reply.content.clone().unwrap_or_default();
        let answered = self.person.answer(&question);
        if self.person.stopped() {
            return Ok(Turn::Done(Err(PrepError::Stopped)));
        }
        match answered {
            Some(answer) => {
                let scope = self.interview.scope();
                self.interview.writer.append(&OperatorAction {
                    scope,
                    action: Some("answer".into()),
                    note: Some(answer.clone()),
                    source: Some("prep".into()),
                    ..OperatorAction::default()
                })?;
                messages.push(json!({"role": "user", "content": answer}));
            }
            None if self.out_of_answers.is_none() => {
                self.out_of_answers = Some(question);
                let text = "The person has nothing more to add. Write the plan now with what you know; put what is still unclear under open questions.";
                messages.push(json!({"role": "user", "content": text}));
            }
            None => {
                let asked = self.out_of_answers.take().unwrap_or_default();
                return Ok(Turn::Done(Err(PrepError::NoMoreAnswers(asked))));
            }
        }
        Ok(Turn::Continue)
    }

    async fn own(
        &mut self,
        _iter: u64,
        calls: &[&crate::session::event::ToolCallRecord],
        messages: &mut Vec<Value>,
    ) -> std::io::Result<Turn<Self::Done>> {
        let mut drafted = None;
        for call in calls {
            let checked = draft::parse(&call.arguments).and_then(|d| {
                let planned = write::planned(&d, &self.interview.feature, "");
                let refused = write::refused(self.interview.hands.jail.root(), &planned);
                if refused.is_empty() { Ok(d) } else { Err(refused) }
            });
            let output = match checked {
                Ok(d) => {
                    drafted = Some(d);
                    "The plan is with the person for review.".to_owned()
                }
                Err(problems) => format!(
                    "ERROR: the plan was not written: {}. Fix these and call write_plan again.",
                    problems.join("; ")
                ),
            };
            messages.push(turns::tool_message(&call.id, &output));
        }
        Ok(drafted.map_or(Turn::Continue, |d| Turn::Done(Ok(d))))
    }

    fn out_of_turns(&mut self) -> Self::Done {
        Err(PrepError::TooLong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_blocks_separated_by_blank_lines() {
        let a = Answers::parse("first line\nstill first\n\n\nsecond\n");
        assert_eq!(Vec::from(a.0), ["first line\nstill first", "second"]);
    }

    #[test]
    fn the_interview_offers_only_reading_tools_and_write_plan() {
        let names: Vec<String> = tool_schemas()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(names, ["read_file", "glob", "grep", "list_dir", "write_plan"]);
    }
}
