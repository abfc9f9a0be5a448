//! Verdicts that rest on evidence harrow checks itself, through the real binary: a small
//! Python repository, real pytest as the validator and for the cited tests, a scripted
//! evaluator whose accepts cite witnesses — good ones, and ones that must not hold.

use super::loop_fixture::{harrow_cmd, serve};
use super::support::{self, git};
use super::tools;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository whose `add` is wrong and whose `sub` is right, and a one-task plan to fix
/// `add` with a test.
fn repo_and_plan(tmp: &Path) -> (PathBuf, PathBuf) {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("tests/test_sub.py"),
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
    )
    .unwrap();
    std::fs::write(repo.join("conftest.py"), "").unwrap();
    std::fs::write(repo.join("README.md"), "# calc\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    let plan = tmp.join("plan");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::write(plan.join("overview.md"), "# Calc\nA calculator.\n").unwrap();
    std::fs::write(
        plan.join("T-001-add.md"),
        "---\nid: T-001\ntitle: Fix add\n---\n## Description\nadd subtracts.\n\n## Acceptance criteria\n- add(2, 3) is 5\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("config.toml"),
        "[[validators]]\nname = \"pytest\"\ncommand = \"python3 -m pytest -q -p no:cacheprovider\"\n",
    )
    .unwrap();
    (repo, plan)
}

/// The worker fixes `add` and adds its test, then submits.
fn worker() -> Value {
    let fixed = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
    let test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    let case = json!({"summary": "add adds.", "ac_coverage": [{"criterion": "add(2, 3) is 5", "addressed_by": "calc.py:2", "evidence": "tests/test_add.py::test_add"}]});
    json!({"*": [
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "calc.py", "content": fixed}},
            {"name": "write_file", "arguments": {"path": "tests/test_add.py", "content": test}}
        ]},
        {"tool_calls": [{"name": "submit_case", "arguments": case}]}
    ]})
}

/// An accept citing `witnesses`.
fn accept(witnesses: &Value) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "add adds now.", "evidence": ["calc.py:2"], "next_step": null, "witnesses": witnesses}}]})
}

/// Runs the plan with the evaluator's turns for T-001's first attempt: turn 0 is its verdict,
/// turn 2 its answer when harrow sends an accept back for evidence.
fn run(tmp: &Path, first: Value, again: Option<Value>) -> (std::process::Output, Vec<Value>) {
    tools::require_pytest_and_ruff();
    let (repo, plan) = repo_and_plan(tmp);
    let mut turns = vec![first.clone(), first];
    turns.extend(again);
    let script = json!({"worker": {"T-001": worker()}, "evaluator": {"T-001": {"1": turns}}});
    run_script(tmp, &repo, &plan, &script)
}

/// Runs `plan` on `repo` headless against `script`, with the configuration in `tmp`: how the
/// run ended, and its log.
fn run_script(
    tmp: &Path,
    repo: &Path,
    plan: &Path,
    script: &Value,
) -> (std::process::Output, Vec<Value>) {
    let (_rt, server) = serve(script, true);
    let out = harrow_cmd(tmp, &server.base_url())
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .arg("--config")
        .arg(tmp.join("config.toml"))
        .output()
        .unwrap();
    let dir =
        std::fs::read_dir(tmp.join("sessions")).unwrap().flatten().find(|e| e.path().is_dir());
    (out, dir.map(|d| support::strict_events(&d.path())).unwrap_or_default())
}

fn verdicts(log: &[Value]) -> Vec<Value> {
    log.iter().filter(|e| e["type"] == "evaluator_verdict").map(|e| e["payload"].clone()).collect()
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn an_accept_with_a_fail_to_pass_test_lands_with_its_witness_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = run(
        tmp.path(),
        accept(&json!([{"criterion": 1, "test": "tests/test_add.py::test_add"}])),
        None,
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = verdicts(&log);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["evidence_gate"], "seen");
    let w = &v[0]["witnesses"][0];
    assert_eq!((w["kind"].as_str(), w["seen"].as_bool()), (Some("test"), Some(true)), "{w}");
    let why = w["why"].as_str().unwrap();
    assert!(
        why.contains("fails on the task's base (exit 1: ") && why.contains("passes on the work"),
        "{why}"
    );
    // Nothing the check ran was left in the worktree or beside it.
    let sessions = tmp.path().join("sessions");
    let left: Vec<String> = super::loop_fixture::walk(&sessions)
        .iter()
        .map(|p| p.display().to_string())
        .filter(|p| p.contains(".harrow-witness-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let shown = harrow_cmd(tmp.path(), "http://127.0.0.1:9")
        .args(["show", "--json"])
        .arg(sessions.read_dir().unwrap().next().unwrap().unwrap().path())
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(summary["harrow"]["evidence"]["seen"], 1, "{summary}");
    let session = sessions.read_dir().unwrap().next().unwrap().unwrap().path();
    let export = harrow_cmd(tmp.path(), "http://127.0.0.1:9")
        .args(["export", "--format", "md"])
        .arg(&session)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&export.stdout);
    assert!(
        md.contains(
            "| 1 | test | tests/test_add.py::test_add | ✓ fails on the task's base (exit 1"
        ),
        "{md}"
    );
}

#[test]
fn an_accept_citing_a_test_that_passes_on_the_base_is_sent_back_once_then_held() {
    let tmp = tempfile::tempdir().unwrap();
    let stale = accept(&json!([{"criterion": 1, "test": "tests/test_sub.py::test_sub"}]));
    let (out, log) = run(tmp.path(), stale.clone(), Some(stale));
    assert!(!out.status.success(), "held, not done: {}", text(&out));
    assert!(
        text(&out).contains("accepted without evidence for: criterion 1 (add(2, 3) is 5)"),
        "{}",
        text(&out)
    );
    // Every decision a hold can take is offered, review and rewind among them.
    for decision in ["approve --task T-001", "review --task T-001", "rewind --task T-001"] {
        assert!(text(&out).contains(decision), "{decision}: {}", text(&out));
    }
    let v = verdicts(&log);
    let gates: Vec<&str> = v.iter().filter_map(|p| p["evidence_gate"].as_str()).collect();
    assert_eq!(gates, ["sent_back", "held"], "{v:?}");
    assert!(
        v[0]["witnesses"][0]["why"].as_str().unwrap().contains("passes on the task's base too")
    );
    let told: Vec<String> = log
        .iter()
        .filter(|e| e["type"] == "prompt_assembled" && e["payload"]["role"] == "evaluator")
        .filter_map(|e| e["payload"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(told.len(), 2, "asked once more, not again and again");
    assert!(
        told[1].contains("harrow's check of your accept")
            && told[1].contains("criterion 1: add(2, 3) is 5"),
        "{}",
        told[1]
    );
    let held =
        log.iter().any(|e| e["type"] == "task_state" && e["payload"]["to"] == "needs_operator");
    assert!(held);
    // `stats` counts one accept checked at its first asking, which failed, then held.
    let stats = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["stats", "--json", "--dir"])
        .arg(tmp.path().join("sessions"))
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let t = &stats["total"];
    assert_eq!((&t["evidence_checked"], &t["evidence_failed"]), (&json!(1), &json!(1)), "{t}");
    assert_eq!(t["evidence"]["held"], 1, "{t}");
    assert_eq!(t["verdicts"]["accepts"], 1, "the sent-back accept is no verdict: {t}");
}

#[test]
fn lines_not_in_the_diff_and_no_witness_at_all_are_sent_back_and_a_good_second_answer_lands() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = accept(&json!([{"criterion": 1, "code": "README.md:1", "quote": "# calc"}]));
    let (out, log) = run(tmp.path(), outside.clone(), Some(outside));
    assert!(!out.status.success(), "{}", text(&out));
    let v = verdicts(&log);
    assert!(
        v[0]["witnesses"][0]["why"]
            .as_str()
            .unwrap()
            .contains("not a file the task's diff changes"),
        "{v:?}"
    );
    assert_eq!(v.last().unwrap()["evidence_gate"], "held");

    let tmp = tempfile::tempdir().unwrap();
    let good = accept(
        &json!([{"criterion": 1, "code": "calc.py:1-2", "quote": "def add(a, b):\n    return a + b"}]),
    );
    let (out, log) = run(tmp.path(), accept(&json!([])), Some(good));
    assert!(out.status.success(), "{}", text(&out));
    let gates: Vec<String> = verdicts(&log)
        .iter()
        .filter_map(|p| p["evidence_gate"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(gates, ["sent_back", "seen"]);
}

#[test]
fn a_cited_test_that_hangs_is_cut_at_the_cap_judged_not_seen_and_leaves_no_process() {
    tools::require_pytest_and_ruff();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path());
    // The validators run the add test only; the cited test sleeps far past the cap.
    std::fs::write(
        tmp.path().join("config.toml"),
        "[gate]\ntest_secs = 2\n\n[[validators]]\nname = \"pytest\"\ncommand = \"python3 -m pytest -q -p no:cacheprovider tests/test_add.py\"\n",
    )
    .unwrap();
    let mut work = worker();
    let hang = "import time\n\n\ndef test_hang_for_harrow():\n    time.sleep(617)\n";
    work["*"][0]["tool_calls"].as_array_mut().unwrap().push(
        json!({"name": "write_file", "arguments": {"path": "tests/test_hang.py", "content": hang}}),
    );
    let cites =
        accept(&json!([{"criterion": 1, "test": "tests/test_hang.py::test_hang_for_harrow"}]));
    let script = json!({"worker": {"T-001": work}, "evaluator": {"T-001": {"1": [cites.clone(), cites.clone(), cites]}}});
    let (out, log) = run_script(tmp.path(), &repo, &plan, &script);
    assert!(!out.status.success(), "held, not landed: {}", text(&out));
    let v = verdicts(&log);
    let why = v[0]["witnesses"][0]["why"].as_str().unwrap();
    assert!(why.contains("does not pass on the work: timed out after 2 s"), "{why}");
    let gates: Vec<&str> = v.iter().filter_map(|p| p["evidence_gate"].as_str()).collect();
    assert_eq!(gates, ["sent_back", "held"]);
    let start = log.iter().find(|e| e["type"] == "session_start").unwrap();
    assert_eq!(start["payload"]["limits"]["witness_test_secs"], 2, "kept for a resume");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("test_hang_for_harrow"))
        .collect();
    assert!(left.is_empty(), "the hanging test outlived its cap: {left:?}");
}

#[test]
fn a_hostile_test_id_is_judged_and_never_reaches_a_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("pwned");
    let hostile = format!("tests/test_add.py::test_add; touch {}", marker.display());
    let bad = accept(&json!([
        {"criterion": 1, "test": hostile},
        {"criterion": 1, "test": "$(touch /tmp/harrow-witness-pwned)"},
        {"criterion": 1, "code": "../calc.py:1", "quote": "x"},
        {"criterion": 7, "code": "calc.py:1", "quote": "def add(a, b):"},
        {"criterion": 1, "validator": "lint", "result": "passed"}
    ]));
    let (out, log) = run(tmp.path(), bad.clone(), Some(bad));
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!marker.exists() && !Path::new("/tmp/harrow-witness-pwned").exists());
    let why: Vec<String> = verdicts(&log)[0]["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["why"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(why[0].contains("not a test id harrow can run"), "{why:?}");
    assert!(why[1].contains("not a test id harrow can run"), "{why:?}");
    assert!(why[2].contains("not a file inside the tree"), "{why:?}");
    assert!(why[3].contains("has 1 acceptance criteria"), "{why:?}");
    assert!(
        why[4].contains("no validator of that name ran") && why[4].contains("pytest"),
        "{why:?}"
    );
}

#[test]
fn under_warn_an_unwitnessed_accept_lands_marked() {
    let tmp = tempfile::tempdir().unwrap();
    tools::require_pytest_and_ruff();
    let (repo, plan) = repo_and_plan(tmp.path());
    let script =
        json!({"worker": {"T-001": worker()}, "evaluator": {"T-001": {"1": [accept(&json!([]))]}}});
    let (_rt, server) = serve(&script, true);
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--evidence", "warn", "--config"])
        .arg(tmp.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let v = verdicts(&support::strict_events(&dir));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["evidence_gate"], "warned");
    assert_eq!(v[0]["unwitnessed"], json!([1]));
}

#[test]
fn a_cited_test_that_is_a_link_out_of_the_tree_is_never_read_by_harrow() {
    tools::require_pytest_and_ruff();
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret_test.py");
    std::fs::write(&secret, "# SECRET-CANARY-WITNESS\ndef test_x():\n    assert True\n").unwrap();
    let (repo, plan) = repo_and_plan(tmp.path());
    let mut turns = worker()["*"].as_array().unwrap().clone();
    let link = format!("ln -s {} tests/test_link.py && echo linked", secret.display());
    turns.insert(1, json!({"tool_calls": [{"name": "bash", "arguments": {"command": link}}]}));
    let cited = accept(&json!([{"criterion": 1, "test": "tests/test_link.py::test_x"}]));
    let script = json!({"worker": {"T-001": {"*": turns}}, "evaluator": {"T-001": {"1": [cited.clone(), cited.clone(), cited]}}});
    let (out, log) = run_script(tmp.path(), &repo, &plan, &script);
    assert!(!out.status.success(), "held, not landed: {}", text(&out));
    let v = verdicts(&log);
    let why = v[0]["witnesses"][0]["why"].as_str().unwrap();
    assert!(why.contains("a link is not a test"), "{why}");
    // The record (the worktree holds the worker's link itself, which reads through).
    let logged = serde_json::to_string(&log).unwrap();
    assert!(!logged.contains("SECRET-CANARY-WITNESS"), "the link's target was read");
}

#[test]
fn asked_again_with_retry_eval_an_accept_still_rests_on_witnesses() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = accept(&json!([]));
    let good = accept(&json!([{"criterion": 1, "code": "calc.py:2", "quote": "    return a + b"}]));
    // Held for want of evidence; asked again, its first accept has none either (sent back),
    // its second cites the fixed line.
    let (out, _) = run(tmp.path(), bare.clone(), Some(bare.clone()));
    assert!(!out.status.success(), "held: {}", text(&out));
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let script = json!({"worker": {}, "evaluator": {"T-001": {"2": [bare.clone(), bare, good]}}});
    let (_rt, server) = serve(&script, true);
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "retry-eval"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent));
    let resumed = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless", "--config"])
        .arg(tmp.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let gates: Vec<String> = verdicts(&support::strict_events(&dir))
        .iter()
        .filter_map(|v| v["evidence_gate"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(gates, ["sent_back", "held", "sent_back", "seen"], "{}", text(&resumed));
    let worker_calls = server.received().iter().filter(|r| r.role == "worker").count();
    assert_eq!(worker_calls, 0, "the evaluator was asked again about the same work");
}

/// The same in a run that waits for the operator (the console's `v`): it was refused there,
/// "the log holds no case", until a resume had read the log.
#[test]
fn retry_eval_in_a_waiting_run_asks_the_evaluator_again_about_the_same_case() {
    tools::require_pytest_and_ruff();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path());
    let bare = accept(&json!([]));
    let good = accept(&json!([{"criterion": 1, "code": "calc.py:2", "quote": "    return a + b"}]));
    let script = json!({"worker": {"T-001": worker()}, "evaluator": {"T-001": {
        "1": [bare.clone(), bare.clone(), bare.clone()],
        "2": [bare.clone(), bare, good]
    }}});
    let (_rt, server) = serve(&script, true);
    let config = tmp.path().join("config.toml");
    let args = ["--config", config.to_str().unwrap(), "--wait-for-operator"];
    let (mut child, dir, id) = super::loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &args,
        std::process::Stdio::piped(),
    );
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "retry-eval"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent));
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");
    assert!(!stdout.contains("refused"), "{stdout}");
    let gates: Vec<String> = verdicts(&support::strict_events(&dir))
        .iter()
        .filter_map(|v| v["evidence_gate"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(gates, ["sent_back", "held", "sent_back", "seen"], "{stdout}");
    let again = server.received().iter().filter(|r| r.role == "worker" && r.attempt == "2").count();
    assert_eq!(again, 0, "no second attempt of the worker's: {stdout}");
}
