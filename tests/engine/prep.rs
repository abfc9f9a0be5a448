//! `harrow prep` from the real binary against a scripted model: the interview reads the
//! repository with read-only tools only, a bad `write_plan` goes back to the model, nothing is
//! written before acceptance, acceptance writes exactly the files shown and one commit, and
//! the worker of the following run gets the seed context and none of the interview.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
use serde_json::{Value, json};
use std::path::Path;
use support::{git, holds_controls};

fn plan_args(task: &str, criteria: &Value) -> Value {
    json!({"overview": {"tldr": "Search the todo list by word.", "why": "Lists grow long.",
            "scope": ["a search subcommand"], "out_of_scope": ["fuzzy matching"],
            "open_questions": ["should search be case-sensitive?"]},
           "tasks": [{"id": task, "title": "Add the search subcommand",
                      "description": "todo search WORD prints the items holding WORD.",
                      "acceptance_criteria": criteria, "tests": ["tests/test_search.py"]},
                     {"id": "T-001", "title": "Document search",
                      "description": "Say how search works in the README.",
                      "acceptance_criteria": ["the README has a search section"]}],
           "seed_tests": [{"path": "tests/test_search.py", "content": "def test_search():\n    assert True\n"}]})
}

fn script() -> Value {
    json!({"prep": {"search": {"1": [
        {"content": "What should search match: titles only, or notes too?"},
        {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"tool_calls": [{"name": "read_file", "arguments": "{\"path\": \"README"}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "no"}}]},
        {"tool_calls": [{"name": "write_plan", "arguments": plan_args("T-001", &json!([]))}]},
        {"tool_calls": [{"name": "write_plan", "arguments": plan_args("T-002", &json!(["prints only matching items"]))}]}
    ]}}})
}

fn prep(tmp: &Path, base_url: &str, repo: &Path, extra: &[&str]) -> std::process::Output {
    let answers = tmp.join("answers.txt");
    std::fs::write(&answers, "Titles only, ignoring case.\n").unwrap();
    harrow_cmd(tmp, base_url)
        .args(["prep", "--repo", repo.to_str().unwrap(), "--feature", "search", "--answers"])
        .arg(&answers)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn an_interview_drafts_a_plan_that_is_written_only_when_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let (_rt, server) = serve(&script(), true);

    let shown = prep(tmp.path(), &server.base_url(), &repo, &[]);
    let stdout = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&shown.stderr));
    assert!(
        stdout.contains("prep asks: What should search match: titles only, or notes too?")
            && stdout.contains("answered (from the file): Titles only, ignoring case."),
        "each question is printed as it is asked: {stdout}"
    );
    assert!(
        stdout.contains("The plan, as it will be written")
            && stdout.contains("T-002-add-the-search-subcommand.md"),
        "{stdout}"
    );
    assert!(!repo.join(".harrow/search").exists(), "nothing is written before acceptance");
    let listed = harrow_cmd(tmp.path(), &server.base_url()).arg("sessions").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.lines().any(|l| l.contains(" search ") && l.contains(" prep ")),
        "the interview is listed as one, with its feature (not 0/0): {listed}"
    );
    let requests: Vec<_> = server.received().into_iter().filter(|r| r.role == "prep").collect();
    for r in &requests {
        let names: Vec<&str> = r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["read_file", "glob", "grep", "list_dir", "write_plan"],
            "read-only tools only"
        );
    }
    let asked = serde_json::to_string(&requests[1].body["messages"]).unwrap();
    assert!(asked.contains("Titles only, ignoring case."), "the answer reaches the model");
    assert!(stdout.contains("prep reads: list_dir ."), "the model's reads are shown: {stdout}");
    let unparseable = serde_json::to_string(&requests[3].body["messages"]).unwrap();
    assert!(
        unparseable.contains("ERROR: read_file: the arguments are not valid JSON"),
        "bad arguments get the worker's answer: {unparseable}"
    );
    let refused = serde_json::to_string(&requests[4].body["messages"]).unwrap();
    assert!(refused.contains("can only read the repository"), "a write is refused: {refused}");
    assert!(!repo.join("x.txt").exists());
    let sent_back = serde_json::to_string(&requests[5].body["messages"]).unwrap();
    assert!(
        sent_back.contains("the plan was not written")
            && sent_back.contains("T-001 is used twice")
            && sent_back.contains("no acceptance criteria"),
        "a bad plan goes back to the model: {sent_back}"
    );

    let (_rt2, server2) = serve(&script(), true);
    let before = git(&repo, &["rev-parse", "HEAD"]);
    let accepted = prep(tmp.path(), &server2.base_url(), &repo, &["--accept"]);
    let stdout2 = String::from_utf8_lossy(&accepted.stdout).into_owned();
    assert!(accepted.status.success(), "{stdout2}\n{}", String::from_utf8_lossy(&accepted.stderr));
    let files = git(&repo, &["show", "--name-only", "--format=%s", "HEAD"]);
    let mut lines: Vec<&str> = files.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.remove(0), "Plan search (harrow prep)");
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            ".harrow/search/T-001-document-search.md",
            ".harrow/search/T-002-add-the-search-subcommand.md",
            ".harrow/search/overview.md",
            ".harrow/search/seed.md",
            "tests/test_search.py",
        ],
        "exactly the files shown, in one commit"
    );
    assert_eq!(git(&repo, &["rev-parse", "HEAD^"]), before);
    for name in &lines {
        let written = std::fs::read_to_string(repo.join(name)).unwrap();
        assert!(stdout2.contains(written.trim()), "{name} is written as it was shown");
    }
    let session = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            std::fs::read_to_string(p.join("events.jsonl"))
                .unwrap_or_default()
                .contains("plan_written")
        })
        .unwrap();
    let log = support::strict_events(&session);
    assert_eq!(log[0]["payload"]["phase"], "prep");
    for kind in ["model_call", "assistant_message", "tool_call", "plan_written", "seed_committed"] {
        assert!(log.iter().any(|e| e["type"] == kind), "{kind} is logged");
    }

    // The run on the written plan: the worker reads the seed, not the interview.
    let run_script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"*": {"1": [accept()]}}
    });
    let (_rt3, server3) = serve(&run_script, true);
    let out = headless_run(
        harrow_cmd(tmp.path(), &server3.base_url()),
        &repo.join(".harrow/search"),
        &repo,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let run_session = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| support::strict_events(p).first().is_some_and(|e| e["payload"]["phase"] == "run"))
        .unwrap();
    let start = &support::strict_events(&run_session)[0];
    assert_eq!(
        start["payload"]["prep_session"].as_str(),
        session.file_name().and_then(|n| n.to_str()),
        "the run links back to the interview"
    );
    let first = server3.received().into_iter().find(|r| r.role == "worker").unwrap();
    let prompt = serde_json::to_string(&first.body["messages"]).unwrap();
    assert!(
        prompt.contains("## Seed context") && prompt.contains("should search be case-sensitive?"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("Titles only, ignoring case.")
            && !prompt.contains("What should search match"),
        "no interview in the worker's prompt"
    );
}

#[test]
fn a_dirty_tree_or_an_existing_plan_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    std::fs::write(repo.join("scratch.txt"), "uncommitted\n").unwrap();
    let (_rt, server) = serve(&script(), true);
    let out = prep(tmp.path(), &server.base_url(), &repo, &["--accept"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("uncommitted changes"));
    assert!(server.received().is_empty(), "refused before the first question, not after");
    assert!(!tmp.path().join("sessions").exists(), "no interview session is left behind");
    assert!(!repo.join(".harrow/search").exists() && !repo.join("tests/test_search.py").exists());
}

#[test]
fn the_plan_can_be_committed_on_a_branch_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let (_rt, server) = serve(&script(), true);
    let start = git(&repo, &["rev-parse", "HEAD"]);
    let out = prep(tmp.path(), &server.base_url(), &repo, &["--accept", "--branch", "plan/search"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "plan/search");
    assert_eq!(git(&repo, &["rev-parse", "HEAD^"]), start, "made from the current commit");
    assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty(), "nothing left uncommitted");
}

#[test]
fn a_draft_through_committed_links_or_into_git_is_refused_to_the_model_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("docs")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join(".harrow")).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "links"]);
    let with_seed = |path: &str| {
        let mut args = plan_args("T-002", &json!(["prints only matching items"]));
        args["seed_tests"] = json!([{"path": path, "content": "#!/bin/sh\ntouch /tmp/pwned\n"}]);
        args["tasks"][0]["tests"] = json!([path]);
        json!({"tool_calls": [{"name": "write_plan", "arguments": args}]})
    };
    let script = json!({"prep": {"search": {"1": [
        with_seed("docs/test_search.py"),
        with_seed(".git/hooks/post-commit"),
    ]}}});
    let (_rt, server) = serve(&script, true);
    let out = prep(tmp.path(), &server.base_url(), &repo, &["--accept"]);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written outside");
    assert!(!repo.join(".git/hooks/post-commit").exists(), "no hook planted");
    let told: String = server
        .received()
        .iter()
        .filter(|r| r.role == "prep")
        .map(|r| r.body["messages"].to_string())
        .collect();
    assert!(told.contains("through 'docs', a symbolic link"), "the model is told why: {told}");
    assert!(told.contains("through '.harrow', a symbolic link"), "{told}");
    assert!(told.contains("inside .git, which prep never writes"), "{told}");
}

#[test]
fn hostile_text_in_questions_and_drafts_reaches_neither_the_terminal_nor_the_plan_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{9b}31m\u{7f}";
    let mut args = plan_args("T-002", &json!([format!("prints matches {evil}")]));
    args["overview"]["tldr"] = json!(format!("Search {evil}"));
    args["seed_tests"][0]["content"] = json!(format!("def test_search():\n    assert '{evil}'\n"));
    let script = json!({"prep": {"search": {"1": [
        {"content": format!("Titles or notes? {evil}")},
        {"tool_calls": [{"name": "write_plan", "arguments": args}]}
    ]}}});
    let (_rt, server) = serve(&script, true);
    let out = prep(tmp.path(), &server.base_url(), &repo, &["--headless", "--accept"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!holds_controls(&out.stdout), "{:?}", String::from_utf8_lossy(&out.stdout));
    assert!(!holds_controls(&out.stderr), "{:?}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\\u{1b}]0;pwned"), "shown, escaped");
    let mut files = vec![repo.join("tests/test_search.py")];
    files
        .extend(std::fs::read_dir(repo.join(".harrow/search")).unwrap().map(|e| e.unwrap().path()));
    assert!(files.len() >= 3);
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !holds_controls(&bytes),
            "{}: {:?}",
            file.display(),
            String::from_utf8_lossy(&bytes)
        );
    }
}
