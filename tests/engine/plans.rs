//! Tilth's own demo plans load: the feature folder and the older prd.json.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::loop_fixture;

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
    assert!(stderr.contains("4 problem(s)"), "every problem, not only the first: {stderr}");
}

/// One task file with five things wrong and another with two: `check` names all seven, each
/// with its `FILE:LINE`, not only the first it met.
#[test]
fn check_reports_every_problem_of_every_file_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plan");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("overview.md"), "# Plan\n\nTwo broken tasks.\n").unwrap();
    std::fs::write(
        dir.join("T-001-broken.md"),
        "---\nid: X-1\ndepends_on: [T-002\ntests: ../outside.py\n---\n\n## Description\nNo criteria.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("T-002-also.md"),
        "---\nid: T-002\ntitle: Also\n- a list item\n---\n## Acceptance criteria\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harrow"))
        .arg("check")
        .arg(&dir)
        .env("XDG_CONFIG_HOME", tmp.path())
        .env_remove("HARROW_CONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for said in [
        "T-001-broken.md:2: id 'X-1' is not of the form T-<digits>",
        "T-001-broken.md:3: depends_on entry '[T-002' is not a task id",
        "T-001-broken.md:4: ",
        "T-001-broken.md:2: X-1 has no title",
        "T-001-broken.md:6: X-1 has no acceptance criteria",
        "T-002-also.md:4: bad frontmatter line '- a list item'",
        "T-002-also.md:6: T-002 has no acceptance criteria",
    ] {
        assert!(stderr.contains(said), "missing {said:?} in:\n{stderr}");
    }
    assert!(stderr.contains("7 problem(s)"), "{stderr}");
}

/// A graph plan from the real binary: `check` lists what each task waits for, and refuses an
/// unknown id, a self-dependency and a cycle with `FILE:LINE` and a fix; prd.json's `dependsOn`
/// is read too.
#[test]
fn check_lists_the_graph_and_refuses_unknown_ids_self_dependencies_and_cycles() {
    use std::process::Command;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("graph");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("overview.md"), "# Graph\n\nThree tasks, two independent.\n").unwrap();
    let task = |id: &str, deps: &str| {
        let deps = if deps.is_empty() { String::new() } else { format!("depends_on: {deps}\n") };
        format!(
            "---\nid: {id}\ntitle: Task {id}\n{deps}---\n\n## Acceptance criteria\n\n- {id} is done\n"
        )
    };
    std::fs::write(dir.join("T-001-base.md"), task("T-001", "[]")).unwrap();
    std::fs::write(dir.join("T-002-left.md"), task("T-002", "[T-001]")).unwrap();
    std::fs::write(dir.join("T-003-right.md"), task("T-003", "T-001")).unwrap();
    let check = |plan: &Path| {
        Command::new(env!("CARGO_BIN_EXE_harrow")).arg("check").arg(plan).output().unwrap()
    };
    let ok = check(&dir);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{out}{}", String::from_utf8_lossy(&ok.stderr));
    assert!(out.contains("AFTER"), "{out}");
    let row = |id: &str| out.lines().find(|l| l.starts_with(id)).unwrap_or("").to_owned();
    assert!(row("T-002").contains("T-001") && row("T-003").contains("T-001"), "{out}");
    assert!(out.contains("a graph"), "{out}");

    std::fs::write(dir.join("T-002-left.md"), task("T-002", "[T-003, T-009]")).unwrap();
    std::fs::write(dir.join("T-003-right.md"), task("T-003", "[T-002]")).unwrap();
    std::fs::write(dir.join("T-001-base.md"), task("T-001", "[T-001]")).unwrap();
    let bad = check(&dir);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("T-002-left.md:4: T-002 depends on T-009, which is not in the plan"),
        "{err}"
    );
    assert!(err.contains("T-001-base.md:4: T-001 depends on itself"), "{err}");
    assert!(
        err.contains("wait for each other in a circle")
            && (err.contains("T-002 → T-003") || err.contains("T-003 → T-002")),
        "{err}"
    );

    // A circle of three: the fix names an edge the plan has (T-002's depends_on is T-003).
    std::fs::write(dir.join("T-001-base.md"), task("T-001", "[T-002]")).unwrap();
    std::fs::write(dir.join("T-002-left.md"), task("T-002", "[T-003]")).unwrap();
    std::fs::write(dir.join("T-003-right.md"), task("T-003", "[T-001]")).unwrap();
    let err = String::from_utf8_lossy(&check(&dir).stderr).into_owned();
    let fix = err.lines().find(|l| l.contains("circle")).unwrap_or_default().to_owned();
    let named = ["T-003 from T-002", "T-001 from T-003", "T-002 from T-001"];
    assert!(named.iter().any(|n| fix.contains(n)), "an edge of the plan: {err}");
    let wrong = ["T-002 from T-003", "T-003 from T-001", "T-001 from T-002"];
    assert!(!wrong.iter().any(|n| fix.contains(n)), "never an edge it does not have: {err}");

    let prd = tmp.path().join("prd.json");
    std::fs::write(
        &prd,
        r#"[{"id": "T-001", "title": "a", "acceptance_criteria": ["x"], "dependsOn": []},
            {"id": "T-002", "title": "b", "acceptance_criteria": ["y"], "dependsOn": ["T-007"]}]"#,
    )
    .unwrap();
    let bad = check(&prd);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("prd.json:2: T-002 depends on T-007, which is not in the plan"), "{err}");
}

/// A graph plan run by the real binary: each task starts only after what it depends on, in
/// the plan's order otherwise, and the session branch has one commit per task in that order.
#[test]
fn a_graph_plan_runs_each_task_after_what_it_depends_on() {
    use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    let with_deps = |n: usize, deps: &str| {
        let file = plan.join(format!("T-00{n}-file.md"));
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            text.replacen(
                "---\n## Description",
                &format!("depends_on: {deps}\n---\n## Description"),
                1,
            ),
        )
        .unwrap();
    };
    with_deps(1, "[T-002]");
    with_deps(2, "[]");
    with_deps(3, "[T-001]");
    let script = serde_json::json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}, "T-003": {"*": write_and_submit(3)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let started: Vec<&str> = stdout.lines().filter(|l| l.starts_with("▶")).collect();
    assert!(
        started.len() == 3
            && started[0].contains("T-002")
            && started[1].contains("T-001")
            && started[2].contains("T-003"),
        "{stdout}"
    );
    let id = stdout.lines().rev().find_map(|l| l.strip_prefix("session ")).unwrap_or("");
    let id = id.split_whitespace().next().unwrap_or("");
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s", &format!("session/{id}")])
        .current_dir(&repo)
        .output()
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout);
    let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(ours, ["T-003: Write file 3", "T-001: Write file 1", "T-002: Write file 2"]);
}

/// In a graph plan a skipped task blocks only the tasks that depend on it: they are marked
/// blocked with the reason, the independent task still runs, and the run ends `blocked`
/// (not done) with a failing exit status.
#[test]
fn a_skipped_task_blocks_its_dependents_and_nothing_else() {
    use loop_fixture::{harrow_cmd, headless_run, repo_and_plan, serve, slow_first_task};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    for (n, deps) in [(1, "[]"), (2, "[]"), (3, "[T-002]")] {
        let file = plan.join(format!("T-00{n}-file.md"));
        let text = std::fs::read_to_string(&file).unwrap();
        let text = text.replacen(
            "---\n## Description",
            &format!("depends_on: {deps}\n---\n## Description"),
            1,
        );
        std::fs::write(&file, text).unwrap();
    }
    let (_rt, server) = serve(&slow_first_task(3, 3_000), false);
    let child = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let dir = loop {
        let found = tmp.path().join("sessions").read_dir().ok().and_then(|mut d| d.next());
        if let Some(Ok(entry)) = found
            && std::fs::read_to_string(entry.path().join("events.jsonl"))
                .unwrap_or_default()
                .contains("\"to\":\"running\"")
        {
            break entry.path();
        }
        assert!(std::time::Instant::now() < deadline, "the run never started T-001");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let skipped = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "skip", "--task", "T-002", "--reason", "not needed"])
        .output()
        .unwrap();
    assert!(skipped.status.success(), "{}", String::from_utf8_lossy(&skipped.stderr));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a blocked run is not a finished one: {stdout}");
    assert!(stdout.contains("■ stopped: blocked"), "{stdout}");
    assert!(stdout.contains("T-003 waits on T-002 (skipped)"), "{stdout}");
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(log.contains("\"to\":\"blocked\""), "T-003 is marked blocked in the log");
    assert!(server.received().iter().all(|r| r.task != "T-003"), "the blocked task never started");
    let shown = harrow_cmd(tmp.path(), &server.base_url()).args(["show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("blocked"), "show says which task is blocked: {shown}");
}
