//! The worker's case (`submit_case`): its claim that the task is done, mapped criterion by
//! criterion to where in the code each is satisfied. A case that does not validate goes back
//! to the worker as the tool result, with every problem named, and does not count.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Most work-arounds a case may declare (Tilth's cap).
pub const WORK_AROUNDS_CAP: usize = 5;

/// One acceptance criterion and what satisfies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    pub criterion: String,
    /// A pointer: `path/to/file.py:symbol`, `file.rs:42`, `module::function`.
    pub addressed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// A validated case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub summary: String,
    pub ac_coverage: Vec<Coverage>,
    #[serde(default)]
    pub work_arounds: Vec<String>,
    #[serde(default)]
    pub uncertainties: Vec<String>,
}

/// The tool schema offered to the worker.
pub fn schema() -> Value {
    json!({"type": "function", "function": {
        "name": "submit_case",
        "description": "Submit your work on the task for review once it is done and verified. Map every acceptance criterion to the file:symbol that satisfies it.",
        "parameters": {"type": "object", "additionalProperties": false, "required": ["summary", "ac_coverage"], "properties": {
            "summary": {"type": "string", "description": "One or two lines: what the task achieved."},
            "ac_coverage": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["criterion", "addressed_by"], "properties": {
                "criterion": {"type": "string"},
                "addressed_by": {"type": "string", "description": "Where it is satisfied, e.g. todo_cli/main.py:add_item"},
                "evidence": {"type": "string", "description": "The test or command that shows it."}
            }}},
            "work_arounds": {"type": "array", "items": {"type": "string"}, "maxItems": WORK_AROUNDS_CAP, "description": "Things you changed that the criteria do not mention, and why."},
            "uncertainties": {"type": "array", "items": {"type": "string"}, "description": "Ambiguities you resolved by choosing."}
        }}
    }})
}

/// Whether a string reads as a code pointer rather than prose: it has a path separator, a
/// `::`, a `:line`, a dotted name, or is short (Tilth's rule).
fn looks_like_pointer(s: &str) -> bool {
    let bytes = s.as_bytes();
    let dotted = bytes
        .windows(3)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'.' && w[2].is_ascii_alphanumeric());
    let line = bytes.windows(2).any(|w| w[0] == b':' && w[1].is_ascii_digit());
    s.contains('/') || s.contains("::") || line || dotted || s.split_whitespace().count() < 8
}

/// Parses and validates `submit_case` arguments (a JSON text, as models send them).
pub fn parse(arguments: &str) -> Result<Case, String> {
    let value: Value = serde_json::from_str(arguments).map_err(|e| {
        format!("submit_case arguments are not valid JSON ({e}); send one JSON object")
    })?;
    let Value::Object(map) = &value else {
        return Err("submit_case arguments must be a JSON object".into());
    };
    let mut problems = Vec::new();
    for key in map.keys() {
        if !["summary", "ac_coverage", "work_arounds", "uncertainties"].contains(&key.as_str()) {
            problems.push(format!("unknown field '{key}'"));
        }
    }
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    let list = |key: &str, problems: &mut Vec<String>| -> Vec<String> {
        match map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().filter_map(|i| text(Some(i))).collect(),
            Some(_) => {
                problems.push(format!("'{key}' must be a list of strings"));
                Vec::new()
            }
        }
    };
    let summary = text(map.get("summary"));
    if summary.is_none() {
        problems.push("'summary' is missing or empty".into());
    }
    let mut coverage = Vec::new();
    match map.get("ac_coverage") {
        Some(Value::Array(items)) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                let criterion = text(item.get("criterion"));
                let addressed_by = text(item.get("addressed_by"));
                match (criterion, addressed_by) {
                    (Some(criterion), Some(addressed_by)) => {
                        if !looks_like_pointer(&addressed_by) {
                            problems.push(format!("ac_coverage[{i}].addressed_by should point at code (file:symbol), not describe it"));
                        }
                        coverage.push(Coverage {
                            criterion,
                            addressed_by,
                            evidence: text(item.get("evidence")),
                        });
                    }
                    _ => problems.push(format!(
                        "ac_coverage[{i}] needs a non-empty 'criterion' and 'addressed_by'"
                    )),
                }
            }
        }
        _ => problems.push(
            "'ac_coverage' must list every acceptance criterion with what satisfies it".into(),
        ),
    }
    let work_arounds = list("work_arounds", &mut problems);
    if work_arounds.len() > WORK_AROUNDS_CAP {
        problems.push(format!("at most {WORK_AROUNDS_CAP} work_arounds; merge related ones"));
    }
    let uncertainties = list("uncertainties", &mut problems);
    if !problems.is_empty() {
        return Err(format!(
            "Your case was not accepted for review: {}. Fix it and call submit_case again.",
            problems.join("; ")
        ));
    }
    Ok(Case {
        summary: summary.unwrap_or_default(),
        ac_coverage: coverage,
        work_arounds,
        uncertainties,
    })
}

impl Case {
    /// The case as the evaluator reads it.
    pub fn render(&self) -> String {
        let mut out = format!(
            "**Summary:** {}\n\n**Acceptance criteria → where satisfied:**\n",
            self.summary
        );
        for c in &self.ac_coverage {
            let _ = write!(out, "- {} → `{}`", c.criterion, c.addressed_by);
            if let Some(e) = &c.evidence {
                let _ = write!(out, " (evidence: {e})");
            }
            out.push('\n');
        }
        for (title, items) in [
            ("Work-arounds (declared)", &self.work_arounds),
            ("Uncertainties", &self.uncertainties),
        ] {
            if !items.is_empty() {
                let _ = writeln!(out, "\n**{title}:**");
                for i in items {
                    let _ = writeln!(out, "- {i}");
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_case_parses() {
        let c = parse(r#"{"summary": "Added add.", "ac_coverage": [{"criterion": "adds", "addressed_by": "todo_cli/main.py:add", "evidence": "tests/test_add.py"}], "work_arounds": ["ruff config"], "uncertainties": []}"#).unwrap();
        assert_eq!(c.ac_coverage[0].addressed_by, "todo_cli/main.py:add");
        assert!(
            c.render().contains("- adds → `todo_cli/main.py:add` (evidence: tests/test_add.py)")
        );
        assert!(c.render().contains("Work-arounds (declared)"));
    }

    #[test]
    fn every_problem_is_named() {
        let e = parse(r#"{"summary": "", "ac_coverage": [{"criterion": "x"}, {"criterion": "y", "addressed_by": "I changed the code in several places so that it now works as expected"}], "work_arounds": [1,2], "extra": 1}"#).unwrap_err();
        for needle in [
            "unknown field 'extra'",
            "'summary' is missing",
            "ac_coverage[0] needs",
            "ac_coverage[1].addressed_by should point",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        assert!(parse("{not json").unwrap_err().contains("not valid JSON"));
        assert!(
            parse(r#"{"summary": "s", "ac_coverage": []}"#)
                .unwrap_err()
                .contains("must list every acceptance criterion")
        );
        let many = serde_json::json!({"summary": "s", "ac_coverage": [{"criterion": "c", "addressed_by": "a.py:f"}], "work_arounds": ["1","2","3","4","5","6"]});
        assert!(parse(&many.to_string()).unwrap_err().contains("at most 5 work_arounds"));
    }
}
