//! The evaluator's choice among a best-of task's accepted attempts (`submit_choice`): the
//! attempt to land, and for each other one why not — typed, and held to the attempts that
//! were offered.

use super::memory::{self, task_block};
use super::plan::Task;
use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// The instructions of the choosing evaluator.
pub const CHOOSE_PROMPT: &str = include_str!("../../prompts/choose.md");

/// One accepted attempt offered to the choice.
#[derive(Debug, Clone)]
pub struct Offered<'a> {
    pub attempt: u64,
    pub summary: &'a str,
    pub concern: &'a str,
    pub diff_summary: &'a str,
    pub patch: &'a str,
}

/// The evaluator's choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The attempt to land; `None`: the evaluator could not tell them apart.
    pub winner: Option<u64>,
    /// Why each other attempt was not chosen, by attempt.
    pub why_not: Vec<(u64, String)>,
}

/// The `submit_choice` tool.
pub fn schema(offered: &[Offered<'_>]) -> Value {
    let attempts: Vec<u64> = offered.iter().map(|o| o.attempt).collect();
    json!({
        "type": "function",
        "function": {
            "name": "submit_choice",
            "description": "Choose the attempt to merge, and say why each other one was not chosen.",
            "parameters": {
                "type": "object",
                "properties": {
                    "winner": {"type": "integer", "description": format!("the attempt to merge, one of {attempts:?}; 0 when they cannot be told apart")},
                    "why_not": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"attempt": {"type": "integer"}, "why": {"type": "string"}},
                            "required": ["attempt", "why"]
                        }
                    }
                },
                "required": ["winner", "why_not"]
            }
        }
    })
}

/// The user message: the task, then each attempt's case and change side by side, each cut to
/// its share of the room a diff has.
pub fn prompt(task: &Task, offered: &[Offered<'_>]) -> String {
    let mut out = format!("# Choose among attempts at {} — {}\n\n", task.id, task.title);
    out.push_str(&task_block(task, true));
    let share = memory::DIFF_MAX_CHARS / offered.len().max(1);
    for o in offered {
        let _ = write!(
            out,
            "\n## Attempt {}\n\nIts case: {}\nIts evaluator said: {}\nIts change: {}\n\n```diff\n{}\n```\n",
            o.attempt,
            o.summary,
            o.concern,
            o.diff_summary,
            memory::cap(o.patch, share)
        );
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    winner: u64,
    #[serde(default)]
    why_not: Vec<RawWhy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWhy {
    attempt: u64,
    why: String,
}

/// The most a reason may say.
const WHY_MAX: usize = 2_000;

/// Reads a `submit_choice` call's arguments, held to the attempts offered.
pub fn parse(arguments: &str, offered: &[u64]) -> Result<Choice, String> {
    let raw: Raw = serde_json::from_str(arguments)
        .map_err(|e| format!("submit_choice arguments are not the schema's: {e}"))?;
    let winner = match raw.winner {
        0 => None,
        n if offered.contains(&n) => Some(n),
        n => return Err(format!("winner {n} is not one of the attempts offered ({offered:?})")),
    };
    let mut why_not = Vec::new();
    for w in raw.why_not {
        if !offered.contains(&w.attempt) || Some(w.attempt) == winner {
            continue;
        }
        let why: String = w.why.chars().take(WHY_MAX).collect();
        why_not.push((w.attempt, crate::printable::line(&why)));
    }
    Ok(Choice { winner, why_not })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_held_to_the_attempts_offered() {
        let offered = [1, 3];
        let c = parse(r#"{"winner": 3, "why_not": [{"attempt": 1, "why": "no test"}, {"attempt": 2, "why": "x"}, {"attempt": 3, "why": "self"}]}"#, &offered).unwrap();
        assert_eq!(c, Choice { winner: Some(3), why_not: vec![(1, "no test".into())] });
        assert_eq!(parse(r#"{"winner": 0, "why_not": []}"#, &offered).unwrap().winner, None);
        assert!(
            parse(r#"{"winner": 2, "why_not": []}"#, &offered).unwrap_err().contains("not one of")
        );
        assert!(parse(r#"{"winner": "1"}"#, &offered).is_err());
        assert!(parse(r#"{"winner": 1, "extra": true}"#, &offered).is_err());
        let hostile = format!(
            r#"{{"winner": 1, "why_not": [{{"attempt": 3, "why": "\u001b[2J{}"}}]}}"#,
            "x".repeat(5000)
        );
        let c = parse(&hostile, &offered).unwrap();
        assert!(
            !c.why_not[0].1.contains('\u{1b}') && c.why_not[0].1.chars().count() <= WHY_MAX + 8
        );
    }
}
