//! Best of N through the real binary: a task's first attempt worked N times at once against
//! scripted workers and evaluators on 127.0.0.1, a real validator and real git — the accepted
//! one lands, the evaluator chooses among several, a tie goes to the smaller change, and when
//! none is accepted the best rated is reworked in its own conversation.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::loop_fixture::{harrow_cmd, serve};
use crate::support::{self, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A repository, a config whose validator refuses an answer of `bad`, and a plan whose first
/// task is best of 3 and whose second is ordinary.
fn repo_and_plan(tmp: &Path) -> (PathBuf, PathBuf) {
    repo_and_plan_with(tmp, "", "")
}

/// [`repo_and_plan`] with `front` added to both tasks' front matter and `config` to the
/// configuration.
fn repo_and_plan_with(tmp: &Path, front: &str, config: &str) -> (PathBuf, PathBuf) {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "# answers\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    let plan = tmp.join("plan");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::write(plan.join("overview.md"), "# Answers\n").unwrap();
    std::fs::write(
        plan.join("T-001-answer.md"),
        format!("---\nid: T-001\ntitle: Answer\nbest_of: 3\n{front}---\n## Description\nWrite answer.txt.\n\n## Acceptance criteria\n- answer.txt holds a good answer\n"),
    )
    .unwrap();
    std::fs::write(
        plan.join("T-002-file.md"),
        format!("---\nid: T-002\ntitle: Write file 2\n{front}---\n## Description\nCreate f2.txt.\n\n## Acceptance criteria\n- f2.txt exists and says 2\n"),
    )
    .unwrap();
    std::fs::write(
        tmp.join("config.toml"),
        format!("{config}[[validators]]\nname = \"not-bad\"\ncommand = \"test \\\"$(cat answer.txt 2>/dev/null)\\\" != bad\"\n"),
    )
    .unwrap();
    (repo, plan)
}

/// Worker turns that write `text` to answer.txt and submit.
fn answer(text: &str) -> Value {
    let case = json!({"summary": format!("Wrote {text}."), "ac_coverage": [{"criterion": "answer.txt holds a good answer", "addressed_by": "answer.txt:1"}]});
    json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": format!("{text}\n")}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case}]}
    ])
}

fn accept_answer(first_line: &str) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "A good answer.", "evidence": ["answer.txt:1"], "next_step": null, "witnesses": [{"criterion": 1, "code": "answer.txt:1", "quote": first_line}]}}]})
}

fn reject(category: &str) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "reject", "rejection_category": category, "concern": "Not good enough.", "evidence": ["answer.txt:1"], "next_step": "Write a good answer."}}]})
}

/// The second, ordinary task: writes f2.txt and is accepted.
fn second_task(script: &mut Value) {
    script["worker"]["T-002"] = json!({"1": crate::loop_fixture::write_and_submit(2)});
    script["evaluator"]["T-002"] = json!({"1": [crate::loop_fixture::accept()]});
}

struct Ran {
    out: std::process::Output,
    dir: PathBuf,
    repo: PathBuf,
    log: Vec<Value>,
    received: Vec<harrow::brain::scripted::Received>,
}

fn run(tmp: &Path, mut script: Value) -> Ran {
    let (repo, plan) = repo_and_plan(tmp);
    second_task(&mut script);
    let (_rt, server) = serve(&script, true);
    let out = harrow_cmd(tmp, &server.base_url())
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--max-iterations", "4"])
        .arg("--config")
        .arg(tmp.join("config.toml"))
        .output()
        .unwrap();
    let dir = std::fs::read_dir(tmp.join("sessions")).unwrap().flatten().next().unwrap().path();
    let log = support::strict_events(&dir);
    Ran { out, dir, repo, log, received: server.received() }
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn best_of_event(log: &[Value]) -> Value {
    log.iter().find(|e| e["type"] == "best_of").unwrap()["payload"].clone()
}

fn landed_answer(r: &Ran) -> String {
    let id = r.dir.file_name().unwrap().to_string_lossy().into_owned();
    git(&r.repo, &["show", &format!("session/{id}:answer.txt")])
}

#[test]
fn of_three_attempts_the_accepted_one_lands_and_the_others_stay_attempts() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = answer("bad");
    let script = json!({
        "worker": {"T-001": {
            "1": [bad[0], bad[1], bad[0], bad[1], bad[0], bad[1]],
            "2": answer("meh"),
            "3": answer("good")
        }},
        "evaluator": {"T-001": {"2": [reject("weak_test")], "3": [accept_answer("good")]}}
    });
    let r = run(tmp.path(), script);
    assert!(r.out.status.success(), "{}", text(&r.out));
    assert_eq!(landed_answer(&r), "good\n");
    let b = best_of_event(&r.log);
    assert_eq!(b["winner"], 3, "{b}");
    assert_eq!(b["chosen_by"], "only_accept");
    let outcomes: Vec<&str> = b["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert!(outcomes[0].starts_with("not judged"), "{outcomes:?}");
    assert_eq!(outcomes[1..], ["rejected (weak_test)", "accepted"]);
    // Each attempt worked in its own worktree, at once: every attempt's worker was asked.
    let asked: std::collections::BTreeSet<String> = r
        .received
        .iter()
        .filter(|q| q.role == "worker" && q.task == "T-001")
        .map(|q| q.attempt.clone())
        .collect();
    assert_eq!(asked.into_iter().collect::<Vec<_>>(), ["1", "2", "3"]);
    // The judged attempts are Ledger rows and kept refs; the ordinary task went on after.
    let ledger = std::fs::read_to_string(r.dir.join("ledger/T-001.jsonl")).unwrap();
    let rows: Vec<Value> = ledger.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // In the order they were judged, which the attempts working at once decide.
    let mut attempts: Vec<u64> = rows.iter().filter_map(|e| e["attempt"].as_u64()).collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [2, 3], "{ledger}");
    let id = r.dir.file_name().unwrap().to_string_lossy().into_owned();
    let refs = git(&r.repo, &["for-each-ref", "--format=%(refname)", &format!("refs/harrow/{id}")]);
    for k in ["2", "3"] {
        assert!(refs.lines().any(|l| l.ends_with(&format!("T-001/{k}"))), "{refs}");
    }
    assert!(
        !tmp.path()
            .join("sessions")
            .join(&id)
            .join("lanes/candidates")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some()),
        "the attempts' worktrees are gone"
    );
    let f2 = git(&r.repo, &["show", &format!("session/{id}:f2.txt")]);
    assert_eq!(f2, "2\n");
    let show = harrow_cmd(tmp.path(), "http://127.0.0.1:9").args(["show", &id]).output().unwrap();
    let shown = text(&show);
    assert!(shown.contains("Best of 3 for T-001: attempt 3 landed"), "{shown}");
    assert!(shown.contains("rejected (weak_test)") && shown.contains("not judged"), "{shown}");
}

#[test]
fn among_several_accepted_the_evaluator_chooses_with_the_diffs_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let choice = json!({"tool_calls": [{"name": "submit_choice", "arguments": {"winner": 2, "why_not": [{"attempt": 1, "why": "terse"}, {"attempt": 3, "why": "verbose"}]}}]});
    // Attempt 3's accept cites nothing, twice: held for want of evidence, it is not offered.
    let mut bare = accept_answer("good");
    bare["tool_calls"][0]["arguments"]["witnesses"] = json!([]);
    let script = json!({
        "worker": {"T-001": {"1": answer("good"), "2": answer("good\nand why"), "3": answer("good\nand why\nand more")}},
        "evaluator": {"T-001": {
            "1": [accept_answer("good")], "2": [accept_answer("good")], "3": [bare.clone(), bare.clone(), bare],
            "0": [choice]
        }}
    });
    let r = run(tmp.path(), script);
    assert!(r.out.status.success(), "{}", text(&r.out));
    assert_eq!(landed_answer(&r), "good\nand why\n");
    let b = best_of_event(&r.log);
    assert_eq!((b["winner"].as_u64(), b["chosen_by"].as_str()), (Some(2), Some("evaluator")));
    assert_eq!(b["candidates"][0]["why_not"], "terse");
    assert_eq!(b["candidates"][2]["outcome"], "accepted without evidence");
    assert_eq!(b["candidates"][2]["why_not"], Value::Null, "it was not among the choices");
    let asked = r.received.iter().find(|q| q.role == "evaluator" && q.attempt == "0").unwrap();
    let prompt = asked.body["messages"][1]["content"].as_str().unwrap();
    for part in ["## Attempt 1", "## Attempt 2", "+and why"] {
        assert!(prompt.contains(part), "{part} missing from the choice: {prompt}");
    }
    assert!(!prompt.contains("## Attempt 3"), "{prompt}");
}

#[test]
fn a_tie_or_an_unreadable_choice_goes_to_the_smaller_change() {
    for answer_of_choice in [
        json!({"tool_calls": [{"name": "submit_choice", "arguments": {"winner": 0, "why_not": []}}]}),
        json!({"content": "They are both fine."}),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!({
            "worker": {"T-001": {"1": answer("good\nlong"), "2": answer("good"), "3": answer("bad")}},
            "evaluator": {"T-001": {"1": [accept_answer("good")], "2": [accept_answer("good")], "0": [answer_of_choice.clone(), answer_of_choice]}}
        });
        let r = run(tmp.path(), script);
        assert!(r.out.status.success(), "{}", text(&r.out));
        assert_eq!(landed_answer(&r), "good\n");
        assert_eq!(best_of_event(&r.log)["chosen_by"], "smaller_diff");
    }
}

#[test]
fn when_none_is_accepted_the_best_rated_is_reworked_in_its_own_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {
            "1": answer("meh\nlonger"), "2": answer("meh"), "3": answer("meh\nlonger\nstill"),
            "4": [{"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "good\n"}}]},
                  {"tool_calls": [{"name": "submit_case", "arguments": {"summary": "Better.", "ac_coverage": [{"criterion": "answer.txt holds a good answer", "addressed_by": "answer.txt:1"}]}}]}]
        }},
        "evaluator": {"T-001": {
            "1": [reject("weak_test")], "2": [reject("weak_test")], "3": [reject("weak_test")],
            "4": [accept_answer("good")]
        }}
    });
    let r = run(tmp.path(), script);
    assert!(r.out.status.success(), "{}", text(&r.out));
    let b = best_of_event(&r.log);
    assert_eq!((b["reworked"].as_u64(), b["chosen_by"].as_str()), (Some(2), Some("best_rated")));
    assert_eq!(landed_answer(&r), "good\n");
    // The rework went on in attempt 2's conversation: its own write and the verdict on it.
    let rework = r.received.iter().find(|q| q.role == "worker" && q.attempt == "4").unwrap();
    let said = rework.body["messages"].to_string();
    assert!(said.contains("meh") && !said.contains("longer"), "{said}");
    assert!(said.contains("Write a good answer."), "the verdict's next step: {said}");
}

#[test]
fn each_attempt_is_worked_by_its_own_model_and_a_graph_plan_works_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = json!({
        "worker": {"T-001": {"*": answer("good")}},
        "evaluator": {"T-001": {"1": [accept_answer("good")], "2": [reject("weak_test")], "3": [reject("weak_test")]}}
    });
    second_task(&mut script);
    let (_rt, server) = serve(&script, true);
    let url = server.base_url();
    let models = format!(
        "[models.worker]\nbest_of = [{{ base_url = \"{url}\", model = \"scripted/a\" }}, {{ base_url = \"{url}\", model = \"scripted/b\" }}]\n\n"
    );
    let (repo, plan) = repo_and_plan_with(tmp.path(), "depends_on: []\n", &models);
    let out = harrow_cmd(tmp.path(), &url)
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--lanes", "2", "--config"])
        .arg(tmp.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let asked = server.received();
    let model_of = |attempt: &str| {
        let q =
            asked.iter().find(|q| q.role == "worker" && q.task == "T-001" && q.attempt == attempt);
        (q.unwrap().body["model"].clone(), q.unwrap().authorization.clone())
    };
    let (model, key) = model_of("1");
    assert_eq!(model, "scripted/a");
    assert!(
        !key.contains("sk-binary-test"),
        "the worker's key goes only to its own endpoint: {key}"
    );
    assert_eq!(model_of("2").0, "scripted/b");
    assert_eq!(model_of("3").0, "scripted/a", "the models in turn");
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().flatten().next().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(git(&repo, &["show", &format!("session/{id}:answer.txt")]), "good\n");
    assert_eq!(git(&repo, &["show", &format!("session/{id}:f2.txt")]), "2\n");
    let log = support::strict_events(&dir);
    assert_eq!(best_of_event(&log)["candidates"][1]["model"], "scripted/b");
    let lanes: std::collections::BTreeSet<u64> = log
        .iter()
        .filter(|e| e["payload"]["task_id"] == "T-002")
        .filter_map(|e| e["lane"].as_u64())
        .collect();
    assert!(!lanes.is_empty(), "the ordinary task worked in a lane of its own: {lanes:?}");
}

#[test]
fn a_run_stopped_while_its_attempts_work_resumes_to_a_best_of_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path());
    // Every attempt's first reply never comes in the first run (the stop cancels it), and
    // comes at once when asked again after the resume: no attempt is judged before the stop.
    let mut slow = answer("good");
    let first = slow[0].clone();
    slow[0] = json!({"delay_ms": 600_000, "again": first});
    let mut script = json!({
        "worker": {"T-001": {"*": slow}},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept_answer("good")], "3": [reject("weak_test")]}}
    });
    second_task(&mut script);
    let (_rt, server) = serve(&script, false);
    let run = |args: &[&str]| {
        let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
        cmd.args(args).arg("--config").arg(tmp.path().join("config.toml"));
        cmd
    };
    let mut child =
        run(&["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    let dir =
        crate::loop_fixture::session_when_log_has(&tmp.path().join("sessions"), "\"attempt\":3");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let stop = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "stop", "--now"])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", text(&stop));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "stopped, resumable");
    assert!(!support::strict_events(&dir).iter().any(|e| e["type"] == "best_of"));
    assert!(
        !dir.join("lanes/candidates").read_dir().is_ok_and(|mut d| d.next().is_some()),
        "the stopped attempts' worktrees are gone"
    );
    let resumed = run(&["resume", &id, "--headless"]).output().unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let log = support::strict_events(&dir);
    let b = best_of_event(&log);
    assert_eq!((b["winner"].as_u64(), b["chosen_by"].as_str()), (Some(2), Some("only_accept")));
    assert_eq!(git(&repo, &["show", &format!("session/{id}:answer.txt")]), "good\n");
}

#[test]
fn at_the_cap_a_rejected_attempt_can_be_rewound_to_and_goes_on_in_its_own_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path());
    let good = json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "good\n"}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": {"summary": "Better.", "ac_coverage": [{"criterion": "answer.txt holds a good answer", "addressed_by": "answer.txt:1"}]}}]}
    ]);
    let mut script = json!({
        "worker": {"T-001": {
            "1": answer("meh\nlonger"), "2": answer("meh"), "3": answer("third way"),
            "4": answer("meh again"), "5": good
        }},
        "evaluator": {"T-001": {
            "1": [reject("weak_test")], "2": [reject("weak_test")], "3": [reject("weak_test")],
            "4": [reject("weak_test")], "5": [accept_answer("good")]
        }}
    });
    second_task(&mut script);
    let (_rt, server) = serve(&script, true);
    let run = |args: &[&str]| {
        harrow_cmd(tmp.path(), &server.base_url())
            .args(args)
            .arg("--config")
            .arg(tmp.path().join("config.toml"))
            .output()
            .unwrap()
    };
    // Three attempts and one rework: the cap of 2 rounds (the attempts side by side are one).
    let first = run(&[
        "run",
        plan.to_str().unwrap(),
        "--repo",
        repo.to_str().unwrap(),
        "--headless",
        "--max-attempts",
        "2",
    ]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert!(text(&first).contains("T-001 failed: evaluator_cap"), "{}", text(&first));
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().flatten().next().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let rewind = harrow_cmd(tmp.path(), &server.base_url())
        .args(["control", &id, "rewind", "--task", "T-001", "--to-attempt", "3"])
        .args(["--reason", "the third way was closer"])
        .output()
        .unwrap();
    assert!(rewind.status.success(), "{}", text(&rewind));
    let resumed = run(&["resume", &id, "--headless"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(git(&repo, &["show", &format!("session/{id}:answer.txt")]), "good\n");
    // Attempt 5 went on from attempt 3's conversation: its own answer, not the others'.
    let asked = server.received();
    let fifth = asked.iter().find(|q| q.role == "worker" && q.attempt == "5").unwrap();
    let said = fifth.body["messages"].to_string();
    assert!(said.contains("third way"), "{said}");
    assert!(!said.contains("meh"), "no other attempt's words: {said}");
    assert!(said.contains("the third way was closer"), "{said}");
}

/// A candidate's commands cannot reach another candidate's worktree or the task's own: each
/// works in its own sandbox, like any worker.
#[test]
fn one_attempts_commands_never_write_into_another_attempts_worktree_or_the_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let hostile = "echo PWNED > ../c-T-001-2/pwned.txt; echo PWNED > ../../../workspace/pwned.txt; \
                   echo PWNED > ../../../../../repo/pwned.txt; echo tried";
    let mut first = answer("meh");
    first[0]["tool_calls"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "bash", "arguments": {"command": hostile}}));
    let script = json!({
        "worker": {"T-001": {"1": first, "2": answer("good"), "3": answer("meh too")}},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept_answer("good")], "3": [reject("weak_test")]}}
    });
    let r = run(tmp.path(), script);
    assert!(r.out.status.success(), "{}", text(&r.out));
    let id = r.dir.file_name().unwrap().to_string_lossy().into_owned();
    let landed = git(&r.repo, &["ls-tree", "-r", "--name-only", &format!("session/{id}")]);
    assert!(!landed.contains("pwned"), "{landed}");
    assert!(!r.dir.join("workspace/pwned.txt").exists(), "the task's own worktree");
    assert!(!r.repo.join("pwned.txt").exists(), "the repository");
    let tried = r.log.iter().find(|e| {
        e["type"] == "tool_result" && e["payload"]["attempt"] == 1 && e["payload"]["tool"] == "bash"
    });
    assert!(tried.is_some(), "the hostile command ran, in its sandbox");
}
