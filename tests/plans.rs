//! Tilth's own demo plans load: the feature folder and the older prd.json.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use harrow::harness::plan::load;
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plans").join(name)
}

#[test]
fn tilths_feature_folder_loads() {
    let plan = load(&fixture("todo-cli")).unwrap();
    assert_eq!(plan.feature, "todo-cli");
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["T-001", "T-002", "T-003", "T-004"]);
    assert_eq!(plan.tasks[1].title, "Implement the `add` subcommand");
    assert_eq!(plan.tasks[1].criteria.len(), 3);
    assert!(
        plan.tasks[1].description.starts_with("Extend `todo_cli`"),
        "{}",
        plan.tasks[1].description
    );
    assert!(plan.overview.unwrap().contains("Markdown-backed todo CLI"));
}

#[test]
fn tilths_prd_json_loads() {
    let plan = load(&fixture("prd.json")).unwrap();
    assert_eq!(plan.tasks.len(), 5);
    assert_eq!(plan.tasks[0].title, "Create hello.py that prints a fixed greeting");
    assert_eq!(plan.overview, None);
}
