//! The evaluator's verdict (`submit_verdict`): accept, or reject with one of six categories, a
//! concern, evidence pointers and a concrete next step. A reject's next step is what the worker
//! reads; the verdict is also what the ledger remembers.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;

use crate::session::outcome::LastOutcome;
use crate::session::state::Ruling;
pub use crate::session::state::{Category, category_meaning};

/// A validated verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub verdict: Ruling,
    pub rejection_category: Option<String>,
    pub concern: String,
    pub evidence: Vec<String>,
    pub next_step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Set on the harness's own fail-closed reject when the evaluator could not be parsed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parse_failed: bool,
    /// Set when an accept scored below the run's threshold and was turned into a reject.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub below_threshold: bool,
    /// What the evaluator says shows each acceptance criterion met, for harrow to check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<Witness>,
    /// What harrow found of those witnesses (the gate's, not the evaluator's): the ledger
    /// keeps it, so the next attempt knows which criteria lacked evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<Evidence>,
}

/// The witnesses of a verdict as harrow checked them, and what the gate made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub seen: Vec<crate::session::event::WitnessSeen>,
    /// The criteria (by number) no seen witness stands for.
    pub unwitnessed: Vec<u64>,
    pub gate: crate::session::event::EvidenceGate,
    /// The attempt as it was kept to check the witnesses on, when one was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why the gate held it, when not for want of witnesses: the attempt could not be kept
    /// to check them on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unkept: Option<String>,
}

/// One thing the evaluator cites for a criterion, of a kind harrow can check itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    /// The criterion it is for: its number in the task's list, from 1.
    pub criterion: usize,
    pub kind: WitnessKind,
}

/// The three kinds of witness, each checked a different way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum WitnessKind {
    /// A validator of this attempt and the result relied on: it must have run on this
    /// attempt's tree and given that result.
    Validator { name: String, passed: bool },
    /// A test id (`tests/test_x.py::test_y`, `cargo test name`'s name) that must fail on the
    /// task's base and pass on the attempt.
    Test { id: String },
    /// `FILE:LINE[-LINE]` and the lines quoted, which must read so in the judged tree, in a
    /// file the task's diff changes.
    Code { at: String, quote: String },
}

impl Verdict {
    /// The outcome a verdict stands for.
    pub fn outcome(&self) -> Option<LastOutcome> {
        if self.accepted() {
            return None;
        }
        Some(if self.parse_failed {
            LastOutcome::ReviewUnreadable
        } else if self.below_threshold {
            LastOutcome::BelowThreshold
        } else {
            LastOutcome::Rejected(self.rejection_category.clone().unwrap_or_default())
        })
    }

    pub fn accepted(&self) -> bool {
        self.verdict == Ruling::Accept
    }

    /// The harness's own reject after two unparseable answers: fail closed. It is written for
    /// the worker, who reads it: what happened to its work and what to do, in the project's
    /// words; what went wrong with the answers is in the `evaluator_parse_error` events.
    pub fn parse_failed() -> Verdict {
        Verdict {
            verdict: Ruling::Reject,
            rejection_category: None,
            concern: "The work was not accepted: the review could not confirm that it meets the acceptance criteria.".into(),
            evidence: Vec::new(),
            next_step: Some("Re-check every acceptance criterion against your change, run the tests that show each one, fix anything that falls short, then call submit_case again with the case mapped criterion by criterion.".into()),
            score: None,
            parse_failed: true,
            below_threshold: false,
            witnesses: Vec::new(),
            checked: None,
        }
    }

    /// Holds an accept to the run's score threshold: below it, the accept becomes a reject
    /// whose feedback names the score, the bar and the evaluator's concern.
    #[must_use]
    pub fn held_to(self, threshold: Option<f64>) -> Verdict {
        match (threshold, self.score) {
            (Some(bar), Some(score)) if self.accepted() && score < bar => Verdict {
                verdict: Ruling::Reject,
                rejection_category: None,
                concern: format!("Scored {score:.0}, below the bar of {bar:.0}. {}", self.concern),
                next_step: Some(format!(
                    "Raise the quality of the work until it would score at least {bar:.0}; start with: {}",
                    self.concern
                )),
                below_threshold: true,
                ..self
            },
            _ => self,
        }
    }

    /// The harness's own reject of an empty diff, without asking the evaluator.
    pub fn empty_diff() -> Verdict {
        Verdict {
            verdict: Ruling::Reject,
            rejection_category: Some("acceptance_gap".into()),
            concern: "No work was performed in this task: the diff is empty.".into(),
            evidence: Vec::new(),
            next_step: Some("Make the changes the acceptance criteria ask for, verify them, then submit your case again.".into()),
            score: None,
            parse_failed: false,
            below_threshold: false,
            witnesses: Vec::new(),
            checked: None,
        }
    }

    /// `accept`, `reject:<category>` or `reject`, as the ledger event says it.
    pub fn summary(&self) -> String {
        match (self.verdict, &self.rejection_category) {
            (Ruling::Accept, _) => "accept".into(),
            (_, Some(c)) => format!("reject:{c}"),
            _ => "reject".into(),
        }
    }

    /// What the worker reads as the result of its `submit_case` after a reject.
    pub fn feedback(&self) -> String {
        let mut out = String::from("Your case was reviewed and rejected.\n");
        if let Some(c) = &self.rejection_category {
            let _ = writeln!(out, "Category: {c} — {}", category_meaning(c).unwrap_or(""));
        }
        let _ = writeln!(out, "Concern: {}", self.concern);
        if !self.evidence.is_empty() {
            let _ = writeln!(out, "Evidence: {}", self.evidence.join(", "));
        }
        if let Some(n) = &self.next_step {
            let _ = writeln!(out, "Next step: {n}");
        }
        out.push_str("Address this, verify it, and call submit_case again.");
        out
    }
}

/// The tool schema offered to the evaluator; with a score threshold the score is required.
pub fn schema(score_required: bool) -> Value {
    let mut categories: Vec<Value> = Category::names().into_iter().map(|c| json!(c)).collect();
    categories.push(Value::Null);
    let mut required = vec!["verdict", "concern", "evidence"];
    if score_required {
        required.push("score");
    }
    json!({"type": "function", "function": {
        "name": "submit_verdict",
        "description": "Return your verdict on the case. Call it exactly once.",
        "parameters": {"type": "object", "additionalProperties": false, "required": required, "properties": {
            "verdict": {"type": "string", "enum": ["accept", "reject"]},
            "rejection_category": {"type": ["string", "null"], "enum": categories},
            "concern": {"type": "string", "description": "One to three sentences."},
            "evidence": {"type": "array", "items": {"type": "string"}, "description": "Pointers such as path/file.py:42."},
            "next_step": {"type": ["string", "null"], "description": "On reject: the concrete change the worker should make."},
            "score": {"type": "number", "minimum": 0, "maximum": 100},
            "witnesses": {"type": "array", "description": "On accept: for every acceptance criterion (by its number, from 1), at least one witness harrow checks itself. A test must fail on the task's base and pass on the work; code must be lines the diff adds or keeps, quoted exactly; a validator must have run on this attempt with that result.", "items": {"type": "object", "additionalProperties": false, "required": ["criterion"], "properties": {
                "criterion": {"type": "integer", "minimum": 1},
                "test": {"type": "string", "description": "A test id: tests/test_x.py::test_y (pytest) or a Rust test's name (cargo test)."},
                "code": {"type": "string", "description": "FILE:LINE or FILE:LINE-LINE in the judged tree."},
                "quote": {"type": "string", "description": "With code: the lines, as they read."},
                "validator": {"type": "string", "description": "A validator's name, as the validator output names it."},
                "result": {"type": "string", "enum": ["passed", "failed"], "description": "With validator."}
            }}}
        }}
    }})
}

/// Parses a verdict and holds it to the run's score threshold: with a threshold set, an accept
/// without a score cannot be weighed against the bar and is a parse failure like any other.
pub fn parse_held(arguments: &str, threshold: Option<f64>) -> Result<Verdict, String> {
    let v = parse(arguments)?;
    match threshold {
        Some(bar) if v.accepted() && v.score.is_none() => Err(format!(
            "an accept must carry a 'score' from 0 to 100: this run accepts only work scored {bar:.0} or more"
        )),
        _ => Ok(v),
    }
}

/// Parses and validates `submit_verdict` arguments.
pub fn parse(arguments: &str) -> Result<Verdict, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("submit_verdict arguments are not valid JSON ({e})"))?;
    let Value::Object(map) = &value else {
        return Err("submit_verdict arguments must be a JSON object".into());
    };
    let text = |k: &str| {
        map.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let mut problems = Vec::new();
    for key in map.keys() {
        if ![
            "verdict",
            "rejection_category",
            "concern",
            "evidence",
            "next_step",
            "score",
            "witnesses",
        ]
        .contains(&key.as_str())
        {
            problems.push(format!("unknown field '{key}'"));
        }
    }
    let verdict = text("verdict").as_deref().and_then(Ruling::read);
    if verdict.is_none() {
        problems.push("'verdict' must be \"accept\" or \"reject\"".into());
    }
    let category = text("rejection_category");
    match (verdict, &category) {
        (Some(Ruling::Reject), None) => {
            problems.push("a reject needs a 'rejection_category'".into());
        }
        (Some(Ruling::Accept), Some(_)) => {
            problems.push("an accept must have rejection_category null".into());
        }
        (_, Some(c)) if category_meaning(c).is_none() => {
            problems.push(format!(
                "'rejection_category' must be one of {}",
                Category::names().join(", ")
            ));
        }
        _ => {}
    }
    let concern = text("concern");
    if concern.is_none() {
        problems.push("'concern' is missing or empty".into());
    }
    let evidence = match map.get("evidence") {
        Some(Value::Array(items)) => {
            items.iter().filter_map(Value::as_str).map(str::to_owned).collect()
        }
        None | Some(Value::Null) => {
            problems.push("'evidence' is missing (use [] when there is none)".into());
            Vec::new()
        }
        Some(_) => {
            problems.push("'evidence' must be a list of strings".into());
            Vec::new()
        }
    };
    let next_step = text("next_step");
    if verdict == Some(Ruling::Reject) && next_step.is_none() {
        problems.push("a reject needs a concrete 'next_step'".into());
    }
    let score = match map.get("score") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let score = v.as_f64().filter(|s| (0.0..=100.0).contains(s));
            if score.is_none() {
                problems.push("'score' must be a number from 0 to 100".into());
            }
            score
        }
    };
    let witnesses = match map.get("witnesses") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() > WITNESS_MAX => {
            problems.push(format!("at most {WITNESS_MAX} witnesses"));
            Vec::new()
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(n, w)| {
                witness(w).map_err(|e| problems.push(format!("witness {}: {e}", n + 1))).ok()
            })
            .collect(),
        Some(_) => {
            problems.push("'witnesses' must be a list of objects".into());
            Vec::new()
        }
    };
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let Some(verdict) = verdict else {
        return Err("'verdict' must be \"accept\" or \"reject\"".into());
    };
    Ok(Verdict {
        verdict,
        rejection_category: category,
        concern: concern.unwrap_or_default(),
        evidence,
        next_step,
        score,
        parse_failed: false,
        below_threshold: false,
        witnesses,
        checked: None,
    })
}

/// The most witnesses one verdict may carry, and the longest text in one.
const WITNESS_MAX: usize = 64;
const WITNESS_TEXT_MAX: usize = 4_000;

/// One witness of `submit_verdict`'s `witnesses`: exactly one of `test`, `code` (with
/// `quote`) or `validator` (with `result`), for a criterion by number.
fn witness(value: &Value) -> Result<Witness, String> {
    let Value::Object(map) = value else { return Err("must be an object".into()) };
    for key in map.keys() {
        if !["criterion", "test", "code", "quote", "validator", "result"].contains(&key.as_str()) {
            return Err(format!("unknown field '{key}'"));
        }
    }
    let criterion = map
        .get("criterion")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 1)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or("'criterion' must be the criterion's number, from 1")?;
    let text = |k: &str| -> Result<Option<String>, String> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.len() <= WITNESS_TEXT_MAX => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(format!("'{k}' is longer than {WITNESS_TEXT_MAX} bytes")),
            Some(_) => Err(format!("'{k}' must be a string")),
        }
    };
    let kind = match (text("test")?, text("code")?, text("validator")?) {
        (Some(id), None, None) => WitnessKind::Test { id: id.trim().to_owned() },
        (None, Some(at), None) => WitnessKind::Code {
            at: at.trim().to_owned(),
            quote: text("quote")?.ok_or("a code witness needs the 'quote' of its lines")?,
        },
        (None, None, Some(name)) => WitnessKind::Validator {
            name: name.trim().to_owned(),
            passed: match text("result")?.as_deref() {
                Some("passed") | None => true,
                Some("failed") => false,
                Some(_) => return Err("'result' must be \"passed\" or \"failed\"".into()),
            },
        },
        _ => return Err("give exactly one of 'test', 'code' or 'validator'".into()),
    };
    Ok(Witness { criterion, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_accept_and_reject() {
        let a = parse(r#"{"verdict": "accept", "rejection_category": "", "concern": "Fine.", "evidence": [], "next_step": null}"#).unwrap();
        assert!(a.accepted() && a.rejection_category.is_none());
        let r = parse(r#"{"verdict": "reject", "rejection_category": "weak_test", "concern": "Test never calls add.", "evidence": ["tests/t.py:3"], "next_step": "Call add() in the test.", "score": 40}"#).unwrap();
        assert_eq!(r.summary(), "reject:weak_test");
        let f = r.feedback();
        assert!(
            f.contains("Category: weak_test — the test passes but")
                && f.contains("Next step: Call add() in the test."),
            "{f}"
        );
    }

    #[test]
    fn an_accept_below_the_threshold_is_a_reject() {
        let a = parse(
            r#"{"verdict": "accept", "concern": "Thin tests.", "evidence": [], "score": 41}"#,
        )
        .unwrap();
        let held = a.clone().held_to(Some(60.0));
        assert!(!held.accepted() && held.below_threshold);
        assert!(
            held.feedback().contains("Scored 41, below the bar of 60. Thin tests."),
            "{}",
            held.feedback()
        );
        assert!(a.clone().held_to(Some(40.0)).accepted());
        assert!(a.held_to(None).accepted());
    }

    #[test]
    fn under_a_threshold_an_unscored_accept_does_not_parse() {
        let unscored = r#"{"verdict": "accept", "concern": "Fine.", "evidence": []}"#;
        assert!(parse_held(unscored, None).is_ok());
        let e = parse_held(unscored, Some(60.0)).unwrap_err();
        assert!(e.contains("must carry a 'score'"), "{e}");
        let words = r#"{"verdict": "accept", "concern": "Fine.", "evidence": [], "score": "high"}"#;
        assert!(parse_held(words, Some(60.0)).unwrap_err().contains("'score' must be a number"));
        let reject = r#"{"verdict": "reject", "rejection_category": "weak_test", "concern": "x", "evidence": [], "next_step": "y"}"#;
        assert!(parse_held(reject, Some(60.0)).is_ok(), "a reject needs no score to fail");
        assert_eq!(schema(true)["function"]["parameters"]["required"][3], "score");
    }

    #[test]
    fn names_what_is_wrong() {
        let e = parse(r#"{"verdict": "maybe", "concern": ""}"#).unwrap_err();
        assert!(
            e.contains("'verdict' must be")
                && e.contains("'concern' is missing")
                && e.contains("'evidence' is missing"),
            "{e}"
        );
        let e = parse(r#"{"verdict": "reject", "rejection_category": "vibes", "concern": "x", "evidence": []}"#).unwrap_err();
        assert!(
            e.contains("must be one of scope_creep") && e.contains("needs a concrete 'next_step'"),
            "{e}"
        );
        assert!(parse(r#"{"verdict": "accept", "rejection_category": "weak_test", "concern": "x", "evidence": []}"#).unwrap_err().contains("accept must have rejection_category null"));
        assert!(parse("nope").is_err());
    }
}
