//! No reader compares a word of the log as text: every kind, state, stop reason, category,
//! role, phase, health, tool, feedback kind, loop action, hook, switch, command source,
//! checkpoint status, writer and compaction trigger is a type, and readers match on it. A
//! string literal holding such a word, compared with `==`, `!=` or `starts_with`, outside the
//! files that declare the vocabulary (and outside tests) is a reader that went back to text.

use harrow::session::event::EventKind;
use harrow::session::state::{Category, StopReason, TaskState};
use harrow::session::vocabulary::{
    CallRole, CheckpointStatus, CommandSource, CompactTrigger, FeedbackKind, Health, HookName,
    LoopAction, Phase, SwitchKind, ToolName, WrittenBy,
};
use std::collections::BTreeSet;
use std::path::Path;

/// Every word the log's vocabulary writes.
fn words() -> BTreeSet<String> {
    let mut words: BTreeSet<String> = EventKind::ALL.iter().map(|k| k.name().to_owned()).collect();
    macro_rules! add {
        ($($ty:ty),*) => { $( words.extend(<$ty>::ALL.iter().map(|v| v.as_str().to_owned())); )* };
    }
    add!(TaskState, StopReason, Category, CallRole, Health, Phase, ToolName, FeedbackKind);
    add!(LoopAction, HookName, SwitchKind, CommandSource, CheckpointStatus, WrittenBy);
    add!(CompactTrigger);
    words
}

/// Files that declare the vocabulary, or read another format whose words happen to be the
/// same (an ACP agent's tool-call `status`, a plan's keys), and are read as that format.
const DECLARE: &[&str] = &[
    "session/vocabulary.rs",
    "session/state.rs",
    "session/event.rs",
    "agent/updates.rs",
    // The plan's own keys (`best_of`), read as the plan's format.
    "harness/plan.rs",
];

/// The comparisons of `text` (a file's code before its tests) with a quoted word of `words`.
fn compared(text: &str, words: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        // A model server's `finish_reason` is its protocol's word ("error", "length"), not
        // the log's.
        if code.contains("finish_reason") {
            continue;
        }
        for word in words {
            let quoted = format!("\"{word}\"");
            let Some(at) = code.find(&quoted) else { continue };
            let before = code[..at].trim_end();
            let after = code[at + quoted.len()..].trim_start();
            let compares = before.ends_with("==")
                || before.ends_with("!=")
                || before.ends_with("Some(") && (before.contains("==") || before.contains("!="))
                || before.ends_with("starts_with(")
                || after.starts_with("==")
                || after.starts_with("!=")
                || after.starts_with("=>")
                || after.starts_with("| \"")
                || before.ends_with("| ") && after.starts_with("=>");
            if compares {
                found.push(format!("{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_reader_compares_a_word_of_the_log_as_text() {
    let words = words();
    assert!(words.len() > 100, "{} words", words.len());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let name = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if DECLARE.contains(&name.as_str()) || name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        found.extend(compared(code, &words).into_iter().map(|at| format!("{name}:{at}")));
    }
    assert!(found.is_empty(), "a word of the log compared as text:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_each_form_of_a_comparison() {
    let words: BTreeSet<String> = ["commit".to_owned(), "tilth".to_owned()].into();
    for planted in [
        "if kind == \"commit\" {",
        "if \"commit\" != kind {",
        "if e.format.as_deref() == Some(\"tilth\") {",
        "if outcome.starts_with(\"commit\") {",
        "match kind { \"commit\" => 1, _ => 0 }",
        "\"tilth\" | \"harrow\" => 1,",
    ] {
        assert_eq!(compared(planted, &words).len(), 1, "{planted}");
    }
    for fine in ["let kind = \"commit\";", "format!(\"commit {x}\")", "// kind == \"commit\""] {
        assert!(compared(fine, &words).is_empty(), "{fine}");
    }
}
