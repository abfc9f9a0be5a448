//! The optional learnings step: after an accepted task, ask whether it taught something durable
//! about the project. A proposal goes to `proposed-learnings.md` for a person to review; no
//! model ever reads that file back, and nothing is written into the project.

use serde_json::Value;
use std::path::Path;

/// The learnings role's system prompt, embedded.
pub const LEARNINGS_PROMPT: &str = include_str!("../../prompts/learnings.md");

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    Learning(String),
    Nothing,
    /// The answer was not the JSON asked for; kept (capped) for the log.
    Unparseable(String),
}

/// Reads the answer leniently: code fences and prose around the object are tolerated.
pub fn parse(answer: &str) -> Proposal {
    let start = answer.find('{');
    let end = answer.rfind('}');
    let object = match (start, end) {
        (Some(s), Some(e)) if e > s => &answer[s..=e],
        _ => return Proposal::Unparseable(answer.chars().take(500).collect()),
    };
    let Ok(value) = serde_json::from_str::<Value>(object) else {
        return Proposal::Unparseable(answer.chars().take(500).collect());
    };
    match (value["propose"].as_str(), value["learning"].as_str().map(str::trim)) {
        (Some("yes"), Some(l)) if !l.is_empty() => Proposal::Learning(l.to_owned()),
        (Some("no" | "yes"), _) => Proposal::Nothing,
        _ => Proposal::Unparseable(answer.chars().take(500).collect()),
    }
}

/// Appends a proposal under a heading naming the task.
pub fn append(
    dir: &Path,
    session_id: &str,
    task_id: &str,
    title: &str,
    learning: &str,
) -> std::io::Result<()> {
    let path = crate::session::dir::SessionDir::new(dir).learnings();
    let header = if path.exists() {
        String::new()
    } else {
        format!(
            "# Proposed learnings — session {session_id}\n\nWhat the run suggests adding to the project's own notes (AGENTS.md or similar). Review each; nothing here was applied.\n"
        )
    };
    let text = format!("{header}\n## From {task_id} — {title}\n- {learning}\n");
    crate::session::atomic::append_scrubbed(&path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_leniently() {
        assert_eq!(
            parse("```json\n{\"propose\": \"yes\", \"learning\": \"Run tests with -q.\"}\n```"),
            Proposal::Learning("Run tests with -q.".into())
        );
        assert_eq!(parse("{\"propose\": \"no\"}"), Proposal::Nothing);
        assert!(matches!(parse("I think so"), Proposal::Unparseable(_)));
    }

    #[test]
    fn appends_under_a_header() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), "s1", "T-001", "Add", "One.").unwrap();
        append(dir.path(), "s1", "T-002", "List", "Two.").unwrap();
        let text =
            std::fs::read_to_string(crate::session::dir::SessionDir::new(dir.path()).learnings())
                .unwrap();
        assert_eq!(text.matches("# Proposed learnings — session s1").count(), 1);
        assert!(text.contains("## From T-002 — List\n- Two.\n"));
    }
}
