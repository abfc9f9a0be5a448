//! The operator's review of a task's diff, through the real binary against a scripted model
//! that records every request and real git: comments are checked against the diff (a line
//! that is not in it is refused, the nearest named; a bad line of the file is named by
//! `FILE:LINE`), the review is logged like a verdict, and its reject reaches the worker's next
//! attempt with each comment at its `FILE:LINE` under the quoted line.

use crate::loop_fixture;
use crate::support;

use loop_fixture::{accept_quoting, case, events_of, harrow_cmd, reject, repo_and_plan, serve};
use serde_json::{Value, json};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_review_with_line_comments_sends_the_task_back_with_each_comment_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let write = json!({"name": "write_file", "arguments": {"path": "f1.txt", "content": "alpha\nbeta\ngamma\n"}});
    let script = json!({
        "worker": {"T-001": {
            "1": [{"tool_calls": [write]}, {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}],
            "2": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]
        }},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept_quoting("f1.txt", "alpha")]}}
    });
    let (_rt, server) = serve(&script, true);
    let held = ["--max-attempts", "1", "--wait-for-operator"];
    let (mut child, dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &held,
        Stdio::piped(),
    );
    let review = |comments: &str, extra: &[&str]| -> Output {
        let file = tmp.path().join("review.txt");
        std::fs::write(&file, comments).unwrap();
        harrow_cmd(tmp.path(), &server.base_url())
            .args(["control", &id, "review", "--task", "T-001", "--comments"])
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let off = review("f1.txt:9: where is the ninth line?\n", &["--category", "acceptance_gap"]);
    assert_eq!(off.status.code(), Some(2), "{}", stderr(&off));
    assert!(
        stderr(&off)
            .contains("f1.txt:9 is not a line of the task's diff; the nearest that are: 1–3"),
        "{}",
        stderr(&off)
    );
    let torn = review("# review\nf1.txt:2: fine\nf1.txt two: no\n", &["--category", "weak_test"]);
    assert!(stderr(&torn).contains("review.txt:3:"), "{}", stderr(&torn));
    let other = review("README.md:1: hm\n", &["--accept"]);
    assert!(stderr(&other).contains("README.md is not in the task's diff"), "{}", stderr(&other));
    let undecided = review("f1.txt:2: fine\n", &[]);
    assert!(stderr(&undecided).contains("--category C to reject"), "{}", stderr(&undecided));
    // A FIFO named as the comments (nothing will ever write to it) is refused at once.
    let fifo = tmp.path().join("comments.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let child_fifo = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "review", "--task", "T-001", "--category", "weak_test"])
        .arg("--comments")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let refused = support::ends_within(child_fifo, 60, "review --comments FIFO");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("is a FIFO, not a regular file"), "{}", stderr(&refused));
    let unknown = review("f1.txt:2: fine\n", &["--category", "ugly"]);
    assert!(
        stderr(&unknown).contains("`ugly` is not a rejection category"),
        "{}",
        stderr(&unknown)
    );

    // What the console (or anything else) writes goes through the run's own check too.
    let raw = json!({"op": "review", "task": "T-001", "category": "weak_test", "ts": "t", "source": "test",
        "comments": [{"path": "f1.txt", "line": 40, "comment": "off the diff"}]});
    std::fs::write(dir.join("control.jsonl"), format!("{raw}\n")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !events_of(&dir, "operator_action").iter().any(|a| a["action"] == "refused") {
        assert!(Instant::now() < deadline, "the run never refused the review");
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused =
        events_of(&dir, "operator_action").into_iter().find(|a| a["action"] == "refused").unwrap();
    assert!(refused["reason"].as_str().unwrap().contains("f1.txt:40 is not a line"), "{refused}");
    assert!(events_of(&dir, "operator_review").is_empty(), "a refused review is not logged as one");

    let sent = review(
        "f1.txt:2: BETA-COMMENT: say why beta \u{1b}[31mcomes second\nf1.txt:3: GAMMA-COMMENT: needs a test\n",
        &["--category", "weak_test", "--reason", "REVIEW-REASON two things"],
    );
    assert!(sent.status.success(), "{}", stderr(&sent));
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");

    let reviews = events_of(&dir, "operator_review");
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(reviews[0]["verdict"], "reject");
    assert_eq!(reviews[0]["rejection_category"], "weak_test");
    assert_eq!(reviews[0]["comments"][0]["path"], "f1.txt");
    assert_eq!(reviews[0]["comments"][0]["line"], 2);
    assert_eq!(reviews[0]["comments"][0]["text"], "beta", "the line as it reads");
    let received = server.received();
    let brief: String = received
        .iter()
        .filter(|r| r.role == "worker" && r.attempt == "2")
        .map(|r| r.body.to_string())
        .collect();
    let brief: Value = Value::String(brief);
    let brief = brief.as_str().unwrap();
    assert!(brief.contains("f1.txt:2\\n> beta\\nBETA-COMMENT"), "{brief}");
    assert!(brief.contains("f1.txt:3\\n> gamma\\nGAMMA-COMMENT"), "{brief}");
    assert!(brief.contains("Category: weak_test") && brief.contains("REVIEW-REASON"), "{brief}");
    assert!(!brief.contains("\\u001b"), "no escape reaches the model: {brief}");
    let done = events_of(&dir, "task_done");
    assert_eq!(done.len(), 1, "judged again and landed");
}

/// A review that accepts lands the work as the operator's, its comments logged with it.
#[test]
fn a_review_that_accepts_lands_the_work_with_its_comments_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let write =
        json!({"name": "write_file", "arguments": {"path": "f1.txt", "content": "alpha\n"}});
    let script = json!({
        "worker": {"T-001": {"1": [{"tool_calls": [write]}, {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]}},
        "evaluator": {"T-001": {"1": [reject("weak_test")]}}
    });
    let (_rt, server) = serve(&script, true);
    let held = ["--max-attempts", "1", "--wait-for-operator"];
    let (mut child, dir, id) = loop_fixture::held_run(
        tmp.path(),
        &server.base_url(),
        (&plan, &repo),
        &held,
        Stdio::piped(),
    );
    let file = tmp.path().join("review.txt");
    std::fs::write(&file, "f1.txt:1: fine as it is\n").unwrap();
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "review", "--task", "T-001", "--accept", "--comments"])
        .arg(&file)
        .args(["--reason", "good enough"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");
    let review = &events_of(&dir, "operator_review")[0];
    assert_eq!(review["verdict"], "accept");
    assert_eq!(review["comments"][0]["comment"], "fine as it is");
    let done = &events_of(&dir, "task_done")[0];
    assert_eq!(done["by_operator"], true);
    assert!(
        done["summary"].as_str().unwrap().contains("accepted by the operator's review"),
        "{done}"
    );
}

/// Every file the operator names is read without waiting: a FIFO given as the configuration,
/// or standing as a plan's task file, is refused at once, naming it, and nothing runs.
#[test]
fn a_fifo_named_as_a_plan_file_or_the_configuration_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let fifo = tmp.path().join("config.fifo");
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
    nix::unistd::mkfifo(&fifo, mode).unwrap();
    let script = json!({"worker": {}, "evaluator": {}});
    let (_rt, server) = serve(&script, true);
    let ends = |cmd: &mut std::process::Command, what: &str| {
        let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        support::ends_within(child, 60, what)
    };
    let mut run = harrow_cmd(tmp.path(), &server.base_url());
    run.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    let out = ends(run.arg("--config").arg(&fifo), "run --config FIFO");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("config.fifo") && err.contains("is a FIFO, not a regular file"), "{err}");

    let task = plan.join("T-002-file.md");
    std::fs::remove_file(&task).unwrap();
    nix::unistd::mkfifo(&task, mode).unwrap();
    let mut check = harrow_cmd(tmp.path(), &server.base_url());
    let out = ends(check.args(["check", plan.to_str().unwrap()]), "check of a plan with a FIFO");
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("T-002-file.md") && said.contains("not a regular file"), "{said}");
    assert!(!tmp.path().join("sessions").exists(), "nothing ran");
}

/// A review sent while the task works waits for its attempt to end, and an accept that the
/// evaluator gives after it was sent does not land: the operator's word outranks it, the task
/// waits for it, and the review sends it back with its comments. The evaluator's answer is
/// released only once the run has read the review, so no timing decides the order.
#[test]
fn a_review_sent_while_the_task_works_outranks_an_accept_that_comes_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let release = tmp.path().join("release-the-accept");
    let write =
        |c: &str| json!({"name": "write_file", "arguments": {"path": "f1.txt", "content": c}});
    let submit = json!({"tool_calls": [{"name": "submit_case", "arguments": case(1)}]});
    let mut late_accept = accept_quoting("f1.txt", "alpha");
    late_accept["until_file"] = json!(release);
    let script = json!({
        "worker": {"T-001": {
            "1": [{"tool_calls": [write("alpha\n")]}, submit],
            "2": [{"tool_calls": [write("alpha\nREVIEWED\n")]}, submit]
        }},
        "evaluator": {"T-001": {"1": [late_accept], "2": [accept_quoting("f1.txt", "alpha")]}}
    });
    let (_rt, server) = serve(&script, true);
    let mut child = support::Reaped(
        loop_fixture::headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    support::until("the evaluator being asked", || {
        server.received().iter().any(|r| r.role == "evaluator")
    });
    let dir = loop_fixture::session_when_log_has(&tmp.path().join("sessions"), "\"evaluator\"");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let file = tmp.path().join("review.txt");
    std::fs::write(&file, "f1.txt:1: REVIEW-COMMENT say it was reviewed\n").unwrap();
    let sent = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "review", "--task", "T-001", "--category", "acceptance_gap"])
        .arg("--comments")
        .arg(&file)
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    support::until("the run reading the review", || {
        events_of(&dir, "operator_action").iter().any(|a| a["action"] == "review")
    });
    std::fs::write(&release, "").unwrap();
    let (status, stdout) = child.finish();
    assert!(status.success(), "{stdout}");
    let held = events_of(&dir, "task_state")
        .into_iter()
        .find(|s| s["to"] == "needs_operator")
        .expect("the accept waited for the review");
    assert!(held["reason"].as_str().unwrap().contains("outranks the evaluator's accept"), "{held}");
    assert_eq!(events_of(&dir, "operator_review")[0]["verdict"], "reject");
    let done = events_of(&dir, "task_done");
    assert_eq!(done.len(), 1, "landed once, after the review's rework");
    let brief = server.received().iter().rfind(|r| r.role == "worker").unwrap().body.to_string();
    assert!(brief.contains("REVIEW-COMMENT"), "the review reached the rework: {brief}");
    let landed = support::git(&repo, &["show", &format!("session/{id}:f1.txt")]);
    assert_eq!(landed, "alpha\nREVIEWED\n");
}
