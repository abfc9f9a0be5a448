//! The plan the interview drafts (`write_plan`): an overview, tasks with acceptance criteria,
//! and seed test files. Checked before anything is shown or written — a draft with a missing
//! criterion or a duplicate id goes back to the model — and rendered as the files of a plan
//! folder, exactly as they will be written.

use crate::harness::plan;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// How the seed file names the interview that wrote the plan.
pub const PREP_MARK: &str = "harrow prep session";

/// The overview's parts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overview {
    pub tldr: String,
    pub why: String,
    pub scope: Vec<String>,
    #[serde(default)]
    pub out_of_scope: Vec<String>,
    #[serde(default)]
    pub blockers: Vec<String>,
    #[serde(default)]
    pub open_questions: Vec<String>,
}

/// One task of the draft.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftTask {
    pub id: String,
    pub title: String,
    pub description: String,
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub tests: Vec<String>,
    /// The tasks that must be done first; `None` when the model did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
}

/// A seed test file: a test the worker must make pass, written before the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedTest {
    pub path: String,
    pub content: String,
}

/// The whole draft.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    pub overview: Overview,
    pub tasks: Vec<DraftTask>,
    #[serde(default)]
    pub seed_tests: Vec<SeedTest>,
}

/// Files as the person reviews them: each after a `==> PATH` line (relative to the
/// repository), which is also how an edited draft is read back.
pub fn shown(files: &[(std::path::PathBuf, String)]) -> String {
    let mut out = String::new();
    for (path, text) in files {
        let _ = writeln!(out, "==> {}\n{text}", path.display());
    }
    out
}

/// The `write_plan` tool the interview offers.
pub fn schema() -> Value {
    let list = json!({"type": "array", "items": {"type": "string"}});
    json!({"type": "function", "function": {
        "name": "write_plan",
        "description": "Write the plan once you understand the feature: an overview, the tasks in order (each with acceptance criteria a reviewer can check), and seed test files. The person reviews it before anything is written.",
        "parameters": {"type": "object", "additionalProperties": false, "required": ["overview", "tasks"], "properties": {
            "overview": {"type": "object", "additionalProperties": false, "required": ["tldr", "why", "scope"], "properties": {
                "tldr": {"type": "string"}, "why": {"type": "string"}, "scope": list,
                "out_of_scope": list, "blockers": list, "open_questions": list}},
            "tasks": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["id", "title", "description", "acceptance_criteria"], "properties": {
                "id": {"type": "string", "description": "T-001, T-002, … in order"},
                "title": {"type": "string"}, "description": {"type": "string"},
                "acceptance_criteria": list,
                "tests": {"type": "array", "items": {"type": "string"}, "description": "test files inside the repository this task's acceptance rests on"},
                "depends_on": {"type": "array", "items": {"type": "string"}, "description": "ids of the tasks that must be done before this one; [] when it needs none, so independent tasks can be worked at the same time"}}}},
            "seed_tests": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["path", "content"], "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}
        }}
    }})
}

/// Reads `write_plan` arguments and checks them; every problem, in words for the model.
pub fn parse(arguments: &str) -> Result<Draft, Vec<String>> {
    let draft: Draft = serde_json::from_str(arguments)
        .map_err(|e| vec![format!("the arguments do not fit write_plan's schema: {e}")])?;
    let problems = draft.problems();
    if problems.is_empty() { Ok(draft) } else { Err(problems) }
}

/// A file name part made of a title: lowercase words joined by `-`.
fn slug(title: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() { "task".into() } else { words.join("-") }
}

impl Draft {
    /// What is wrong with the draft, if anything.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.overview.tldr.trim().is_empty() {
            out.push(
                "overview.tldr is empty: say in one or two sentences what the feature is".into(),
            );
        }
        if self.overview.scope.is_empty() {
            out.push("overview.scope is empty: list what the feature includes".into());
        }
        if self.tasks.is_empty() {
            out.push("there are no tasks: add at least one".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let valid =
                t.id.strip_prefix("T-")
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if !valid {
                out.push(format!("task #{} has id '{}': use T-001, T-002, …", i + 1, t.id));
            }
            if !seen.insert(t.id.clone()) {
                out.push(format!("{} is used twice: give every task its own id", t.id));
            }
            if t.title.trim().is_empty() {
                out.push(format!("{} has no title", t.id));
            }
            if t.acceptance_criteria.iter().all(|c| c.trim().is_empty()) {
                out.push(format!(
                    "{} has no acceptance criteria: add at least one a reviewer can check",
                    t.id
                ));
            }
            for test in &t.tests {
                if let Err(why) = plan::check_test_path(test) {
                    out.push(format!("{}: tests entry '{test}': {why}", t.id));
                }
            }
        }
        let graph = plan::Plan {
            source: std::path::PathBuf::new(),
            feature: String::new(),
            overview: None,
            seed: None,
            tasks: self
                .tasks
                .iter()
                .map(|t| plan::Task {
                    id: t.id.clone(),
                    title: t.title.clone(),
                    description: String::new(),
                    criteria: Vec::new(),
                    tests: Vec::new(),
                    depends_on: t.depends_on.clone(),
                    best_of: None,
                })
                .collect(),
        };
        out.extend(graph.graph_problems().into_iter().map(|g| format!("{}: {}", g.problem, g.fix)));
        for seed in &self.seed_tests {
            if let Err(why) = plan::check_test_path(&seed.path) {
                out.push(format!("seed test '{}': {why}", seed.path));
            }
        }
        out
    }

    /// The files of the plan folder of `feature`, written by the interview `session`, as
    /// `(name, text)`, in the order they are shown.
    pub fn files(&self, feature: &str, session: &str) -> Vec<(String, String)> {
        let o = &self.overview;
        let mut overview = format!(
            "# {feature}\n\n{}\n\n## Why\n\n{}\n\n## Scope\n\n",
            o.tldr.trim(),
            o.why.trim()
        );
        let bullets = |list: &[String]| {
            list.iter().fold(String::new(), |mut out, i| {
                let _ = writeln!(out, "- {}", i.trim());
                out
            })
        };
        overview.push_str(&bullets(&o.scope));
        if !o.out_of_scope.is_empty() {
            let _ = write!(overview, "\n## Out of scope\n\n{}", bullets(&o.out_of_scope));
        }
        let mut files = vec![("overview.md".to_owned(), overview)];
        for t in &self.tasks {
            let mut text = format!("---\nid: {}\ntitle: {}\n", t.id, t.title.trim());
            if !t.tests.is_empty() {
                let _ = writeln!(text, "tests: {}", t.tests.join(", "));
            }
            if let Some(deps) = &t.depends_on {
                let _ = writeln!(text, "depends_on: [{}]", deps.join(", "));
            }
            let _ = write!(
                text,
                "---\n\n## Description\n\n{}\n\n## Acceptance criteria\n\n{}",
                t.description.trim(),
                bullets(&t.acceptance_criteria)
            );
            files.push((format!("{}-{}.md", t.id, slug(&t.title)), text));
        }
        let mark = format!("<!-- {PREP_MARK} {session} -->\n");
        files.push(("seed.md".to_owned(), mark + &self.seed()));
        files
    }

    /// The seed file: the part of the interview the worker later reads as context (TL;DR,
    /// scope and what is out of it, blockers, open questions) — never the interview itself.
    /// What is out of scope is said so, under its own heading: read as scope, it would invite
    /// the very work it rules out.
    pub fn seed(&self) -> String {
        let o = &self.overview;
        let mut out = format!("# Seed\n\n## TL;DR\n\n{}\n", o.tldr.trim());
        for (heading, list) in [
            ("Scope", &o.scope),
            ("Out of scope (do not build these)", &o.out_of_scope),
            ("Blockers", &o.blockers),
            ("Open questions", &o.open_questions),
        ] {
            if !list.is_empty() {
                let _ = write!(out, "\n## {heading}\n\n");
                for item in list {
                    let _ = writeln!(out, "- {}", item.trim());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> Draft {
        Draft {
            overview: Overview {
                tldr: "Search the todo list.".into(),
                why: "Lists grow.".into(),
                scope: vec!["a search subcommand".into()],
                out_of_scope: vec!["fuzzy matching".into()],
                blockers: vec![],
                open_questions: vec!["case-sensitive?".into()],
            },
            tasks: vec![DraftTask {
                id: "T-001".into(),
                title: "Add the search subcommand".into(),
                description: "todo search WORD prints matching items.".into(),
                acceptance_criteria: vec!["prints only matching items".into()],
                tests: vec!["tests/test_search.py".into()],
                depends_on: Some(Vec::new()),
            }],
            seed_tests: vec![SeedTest {
                path: "tests/test_search.py".into(),
                content: "def test(): pass\n".into(),
            }],
        }
    }

    #[test]
    fn a_drafted_graph_is_written_and_a_cycle_goes_back_to_the_model() {
        let mut d = draft();
        let mut second = d.tasks[0].clone();
        second.id = "T-002".into();
        second.depends_on = Some(vec!["T-001".into()]);
        d.tasks.push(second);
        let files = d.files("search", "s");
        let t2 = files.iter().find(|(n, _)| n.starts_with("T-002")).map(|(_, t)| t.as_str());
        assert!(t2.unwrap_or("").contains("depends_on: [T-001]\n"), "{files:?}");
        d.tasks[0].depends_on = Some(vec!["T-002".into()]);
        assert!(
            d.problems().iter().any(|p| p.contains("wait for each other in a circle")),
            "{:?}",
            d.problems()
        );
        d.tasks[0].depends_on = Some(vec!["T-002]\nid: T-009\n---".into()]);
        assert!(
            d.problems().iter().any(|p| p.contains("which is not in the plan")),
            "a depends_on entry that would write frontmatter goes back to the model: {:?}",
            d.problems()
        );
    }

    #[test]
    fn a_draft_renders_as_a_plan_that_loads() {
        let d = draft();
        assert!(d.problems().is_empty(), "{:?}", d.problems());
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in d.files("search", "s1") {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let plan = plan::check(dir.path()).unwrap();
        assert_eq!(plan.tasks[0].title, "Add the search subcommand");
        assert_eq!(plan.tasks[0].tests, ["tests/test_search.py"]);
        assert!(d.seed().contains("## Open questions\n\n- case-sensitive?"));
        let seed = d.seed();
        let out = seed.find("## Out of scope (do not build these)\n\n- fuzzy matching").unwrap();
        assert!(seed.find("## Scope\n\n- a search subcommand").unwrap() < out, "{seed}");
        assert!(!seed.contains("Scope notes"), "{seed}");
    }

    #[test]
    fn a_missing_criterion_or_a_duplicate_id_is_named() {
        let mut d = draft();
        d.tasks.push(DraftTask {
            id: "T-001".into(),
            title: "Again".into(),
            ..DraftTask::default()
        });
        let problems = d.problems().join("\n");
        assert!(problems.contains("T-001 is used twice"), "{problems}");
        assert!(problems.contains("T-001 has no acceptance criteria"), "{problems}");
        assert!(parse("{\"overview\": 3}").is_err());
    }
}
