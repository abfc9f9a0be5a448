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

#[test]
fn init_then_check_round_trips_and_check_names_every_problem() {
    use std::process::Command;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for args in [&["init", "-q"][..], &["commit", "-q", "--allow-empty", "-m", "init"]] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let harrow = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harrow"));
        c.env("XDG_CONFIG_HOME", tmp.path()).env_remove("HARROW_CONFIG");
        c
    };
    let out = harrow().args(["init", "--feature", "search", "--repo"]).arg(&repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan = repo.join(".harrow/search");
    assert!(plan.join("overview.md").is_file() && plan.join("T-001-example.md").is_file());
    let again =
        harrow().args(["init", "--feature", "search", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "init never overwrites a plan");

    let checked = harrow().arg("check").arg(&plan).output().unwrap();
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert_eq!(checked.status.code(), Some(2), "the untouched skeleton is not ready: {stderr}");
    assert!(stderr.contains("T-001-example.md:4: not ready: still the example text"), "{stderr}");
    let example = plan.join("T-001-example.md");
    let text = std::fs::read_to_string(&example).unwrap().replace("Replace this with", "Done:");
    std::fs::write(&example, text).unwrap();
    let checked = harrow().arg("check").arg(&plan).output().unwrap();
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "filled in, it is a valid plan: {stdout}");
    assert!(stdout.contains("1 task(s), ready to run") && stdout.contains("T-001"), "{stdout}");

    std::fs::rename(plan.join("T-001-example.md"), plan.join("t-001-example.md")).unwrap();
    std::fs::write(plan.join("T-002-second.md"), "---\nid: T-002\n---\n").unwrap();
    std::fs::write(
        plan.join("T-003-third.md"),
        "---\nid: T-004\ntitle: Third\n---\n## Acceptance criteria\n- it works\n",
    )
    .unwrap();
    let checked = harrow().arg("check").arg(&plan).output().unwrap();
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert_eq!(checked.status.code(), Some(2));
    assert!(
        stderr.contains(
            "t-001-example.md:1: t-001-example.md looks like a task but is not read as one"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("T-002-second.md:2: T-002 has no title"), "{stderr}");
    assert!(
        stderr.contains("T-003-third.md:2: the file is named for T-003 but its id is T-004"),
        "{stderr}"
    );
    assert!(stderr.contains("3 problem(s)"), "every problem, not only the first: {stderr}");
}
