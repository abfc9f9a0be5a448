//! The quality gate held to its promises on every task, not just the first: the evaluator
//! judges the task's own change, an unchanged task never reaches it, a threshold refuses an
//! unscored accept, `--no-eval` is said wherever a reader looks, the worker hears the project's
//! words and never the harness's, failed calls are events, validators tell the worker what is
//! wrong, and a validator whose program is missing stops `run` before anything exists.
//! Each runs against the scripted OpenAI-compatible server on 127.0.0.1, on real git, with real
//! validator processes.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::tools;
use crate::{loop_fixture, support};

use harrow::console::app::App;
use harrow::console::theme::Look;
use harrow::console::ui::draw;
use harrow::harness::run::{OnCap, RunOptions};
use loop_fixture::{
    Outcome, Setup, accept, case, harrow_cmd, headless_run, reject, repo_and_plan, run, serve,
    validator, write_and_submit,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use support::git;

/// The user message of an evaluator request: what the evaluator was shown.
fn shown(o: &Outcome, task: &str) -> Vec<String> {
    o.requests("evaluator")
        .into_iter()
        .filter(|r| r.task == task)
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The diff section of an evaluator prompt.
fn diff_section(prompt: &str) -> &str {
    let start = prompt.find("## Diff (").unwrap();
    &prompt[start..]
}

fn verdicts_of<'a>(o: &'a Outcome, task: &str) -> Vec<&'a Value> {
    o.of("evaluator_verdict").into_iter().filter(|v| v["task_id"] == task).collect()
}

fn session_id(o: &Outcome) -> String {
    o.dir.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn later_tasks_are_judged_on_their_own_change_only() {
    let tmp = tempfile::tempdir().unwrap();
    let big =
        (0..2_500).map(|i| format!("FIRST_TASK_LINE_{i}")).collect::<Vec<_>>().join("\n") + "\n";
    let script = json!({
        "worker": {
            "T-001": {"1": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": big}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ]},
            "T-002": {"1": write_and_submit(2)},
            "T-003": {"1": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "f3.txt", "content": "3\n"}}]},
                {"tool_calls": [{"name": "bash", "arguments": {"command": "git add -A && git -c user.name=w -c user.email=w@w commit -qm 'my own commit' && echo committed"}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "g3.txt", "content": "after\n"}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(3)}]}
            ]}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    // What each task's diff holds is the point: the evaluator's word is taken.
    let opts = harrow::harness::run::RunOptions {
        evidence: harrow::harness::evidence::EvidenceMode::Off,
        ..Default::default()
    };
    let o = run(tmp.path(), Setup { tasks: 3, script, opts, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);

    let first = shown(&o, "T-001");
    assert!(diff_section(&first[0]).contains("+FIRST_TASK_LINE_0"));
    let second = shown(&o, "T-002");
    let d2 = diff_section(&second[0]);
    assert!(d2.starts_with("## Diff (this task's own change: f2.txt (+1 -0))"), "{d2}");
    assert!(d2.contains("+2"), "{d2}");
    assert!(
        !second[0].contains("FIRST_TASK_LINE"),
        "the first task's 2,500 lines are not in the second task's review"
    );
    assert!(
        second[0].contains(
            "Earlier tasks, already accepted and not under review here, changed: f1.txt."
        ),
        "{second:?}"
    );
    let third = shown(&o, "T-003");
    let d3 = diff_section(&third[0]);
    assert!(
        d3.starts_with("## Diff (this task's own change: f3.txt (+1 -0); g3.txt (+1 -0))"),
        "what the worker committed itself is part of its task's change: {d3}"
    );
    let own = &d3[..d3.find("Earlier tasks").unwrap()];
    assert!(!own.contains("f2.txt") && !third[0].contains("FIRST_TASK_LINE"), "{own}");

    let commits = o.of("commit");
    for (n, task) in ["T-002", "T-003"].iter().enumerate() {
        let v = verdicts_of(&o, task);
        let summary =
            if *task == "T-002" { "f2.txt (+1 -0)" } else { "f3.txt (+1 -0); g3.txt (+1 -0)" };
        assert_eq!(v[0]["diff_summary"], summary);
        assert_eq!(
            v[0]["base_commit"], commits[n]["sha"],
            "{task} is measured from the accept before it"
        );
        let ledger = std::fs::read_to_string(o.dir.join(format!("ledger/{task}.jsonl"))).unwrap();
        let entry: Value = serde_json::from_str(ledger.lines().next().unwrap()).unwrap();
        assert_eq!(entry["diff_summary"], summary, "the ledger describes the same task diff");
    }
    let branch = format!("session/{}", session_id(&o));
    let log = git(&o.repo, &["log", "--format=%s", &branch]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["T-003: Write file 3", "T-002: Write file 2", "T-001: Write file 1", "init"],
        "one commit per accepted task; the worker's own commit is folded into its task's"
    );
}

#[test]
fn an_unchanged_later_task_is_rejected_by_harrow_without_asking_the_evaluator() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {
            "T-001": {"1": write_and_submit(1)},
            "T-002": {
                "1": [{"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}],
                "2": [
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "f2.txt", "content": "2\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}
                ]
            }
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let o = run(tmp.path(), Setup { tasks: 2, script, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let asked: Vec<(String, String)> =
        o.requests("evaluator").iter().map(|r| (r.task.clone(), r.attempt.clone())).collect();
    assert_eq!(
        asked,
        [("T-001".to_owned(), "1".to_owned()), ("T-002".to_owned(), "2".to_owned())],
        "the unchanged attempt never reached the evaluator"
    );
    let v = verdicts_of(&o, "T-002");
    assert_eq!(v[0]["verdict"], "reject");
    assert_eq!(v[0]["rejection_category"], "acceptance_gap");
    assert_eq!(v[0]["by_harness"], true, "the verdict says harrow made it");
    assert_eq!(v[0]["diff_summary"], "(no changes)");
    assert_eq!(v[1]["verdict"], "accept");

    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {
            "T-001": {"1": write_and_submit(1)},
            "T-002": {"1": [{"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}]}
        }
    });
    let o = run(
        tmp.path(),
        Setup {
            tasks: 2,
            script,
            opts: RunOptions { no_eval: true, max_attempts: 1, ..RunOptions::default() },
            ..Setup::default()
        },
    );
    assert_eq!(o.ended.reason, "evaluator_cap", "not 'done, nothing to commit'");
    assert_eq!(verdicts_of(&o, "T-002")[0]["by_harness"], true);
    assert_eq!(o.of("task_done").len(), 1, "only T-001 was accepted");
}

#[test]
fn an_unscored_accept_under_a_threshold_fails_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}},
        "evaluator": {"T-001": {"1": [accept(), accept()]}}
    });
    let opts = RunOptions { score_threshold: Some(70.0), max_attempts: 1, ..RunOptions::default() };
    let o = run(tmp.path(), Setup { script, opts, ..Setup::default() });
    assert_eq!(o.ended.reason, "evaluator_cap", "an unscored accept is never taken for a pass");
    assert!(o.of("task_done").is_empty() && o.of("commit").is_empty());
    let errors = o.of("evaluator_parse_error");
    assert_eq!(errors.len(), 2, "retried once, then failed closed");
    assert!(errors[0]["error"].as_str().unwrap().contains("must carry a 'score'"), "{errors:?}");
    assert_eq!(errors[1]["parse_attempt"], 2);
    let v = &o.of("evaluator_verdict")[0];
    assert_eq!((v["verdict"].as_str(), v["parse_failed"].as_bool()), (Some("reject"), Some(true)));
    let request = &o.requests("evaluator")[0].body;
    assert_eq!(request["tools"][0]["function"]["parameters"]["required"][3], "score");
    assert!(
        request["messages"][1]["content"].as_str().unwrap().contains("accepts only work scored 70")
    );
}

/// Words that name harrow's machinery rather than the project: none may reach the worker.
const HARNESS_WORDS: &[&str] = &[
    "evaluator",
    "verdict",
    "harness",
    "events.jsonl",
    "ledger",
    "checkpoint.json",
    "progress.txt",
    "task-status",
    "summary.json",
    "control.jsonl",
    "token",
];

#[test]
fn the_worker_hears_the_projects_words_and_never_the_harness() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage =
        json!({"tool_calls": [{"name": "submit_verdict", "arguments": "{\"verdict\": "}]});
    let low = json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Thin.", "evidence": [], "next_step": null, "score": 20}}]});
    let resubmit = json!([{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]);
    let script = json!({
        "worker": {
            "T-001": {
                "1": [
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]},
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.ok", "content": "ok\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
                ],
                "2": resubmit.clone(),
                "3": resubmit
            },
            "T-002": {"1": write_and_submit(2)}
        },
        "evaluator": {
            "T-001": {"1": [garbage.clone(), garbage], "2": [low], "3": [reject("weak_test")]},
            "T-002": {"1": [{"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Fine.", "evidence": [], "next_step": null, "score": 90, "witnesses": [{"criterion": 1, "code": "f2.txt:1", "quote": "2"}]}}]}]}
        }
    });
    let o = run(
        tmp.path(),
        Setup {
            tasks: 2,
            script,
            validators: vec![validator(
                "checked",
                "test -f f1.ok || { echo 'f1.ok is missing'; exit 1; }",
            )],
            opts: RunOptions {
                max_attempts: 3,
                on_cap: OnCap::ForceAccept,
                score_threshold: Some(50.0),
                ..RunOptions::default()
            },
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let feedback: Vec<&str> =
        o.of("feedback_sent").iter().map(|f| f["content"].as_str().unwrap()).collect();
    assert!(feedback[0].starts_with("Validators failed"), "{feedback:?}");
    assert!(
        feedback[1].contains("the review could not confirm that it meets the acceptance criteria")
            && feedback[1].contains("Re-check every acceptance criterion"),
        "the fail-closed reject says what to do: {}",
        feedback[1]
    );
    assert!(feedback[2].contains("Scored 20, below the bar of 50."), "{}", feedback[2]);
    let t2 = o.requests("worker").into_iter().find(|r| r.task == "T-002").unwrap();
    let warning = t2.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        warning.starts_with(
            "> Warning: T-001 (Write file 1) was accepted below the quality bar: its last review rejected it as weak_test"
        ),
        "{warning}"
    );
    for r in o.requests("worker") {
        let text = serde_json::to_string(&r.body).unwrap().to_lowercase();
        for word in HARNESS_WORDS {
            assert!(
                !text.contains(word),
                "worker request {} turn {} of attempt {} contains '{word}'",
                r.task,
                r.turn,
                r.attempt
            );
        }
    }
}

#[test]
fn failed_model_calls_are_events_and_a_refused_key_names_its_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": [
            {"empty": true, "times": 1, "tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"T-001": {"1": [{"http_status": 401}]}}
    });
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert_eq!(o.ended.reason, "needs_operator");
    let detail = o.ended.detail.clone().unwrap();
    assert!(
        detail.contains("refused the API key (401): set HARROW_EVALUATOR_API_KEY")
            && !detail.contains("cannot be reached"),
        "{detail}"
    );
    let calls = o.of("model_call");
    let empty = calls.iter().find(|c| c["health"] == "empty").unwrap();
    assert_eq!(empty["error_class"], "empty");
    assert_eq!(empty["model"], "scripted/worker");
    assert_eq!(empty["response_id"], "scripted-worker-0");
    assert_eq!(empty["provider"], "harrow-scripted");
    assert_eq!(empty["finish_reason"], "stop");
    let refused = calls.iter().find(|c| c["role"] == "evaluator").unwrap();
    assert_eq!(refused["http_status"], 401);
    assert_eq!(refused["error_class"], "unauthorized");
    assert_eq!(refused["health"], "provider_error");
    assert!(refused["health_detail"].as_str().unwrap().contains("HARROW_EVALUATOR_API_KEY"));
    let held = o.of("task_state");
    assert!(held.last().unwrap()["reason"].as_str().unwrap().contains("refused the API key"));
}

/// llama.cpp's own answer to a request longer than its window — `code` a number, `n_ctx`
/// beside it — is read as what it is: the context window exceeded, with the server's words and
/// the status it sent, not "the reply is not JSON (200)". vLLM's fields at the top level and a
/// bare `{"error": "text"}` are read too.
#[test]
fn a_servers_own_too_long_answer_is_a_context_window_exceeded() {
    let llama = json!({"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}});
    let vllm = json!({"object": "error", "message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.", "type": "BadRequestError", "param": null, "code": 400});
    let bare = json!({"error": "the input length exceeds the context length"});
    for (server, body, words) in [
        ("llama.cpp", llama, "exceeds the available context size (4096 tokens)"),
        ("vLLM", vllm, "maximum context length is 8192 tokens"),
        ("a bare error", bare, "the input length exceeds the context length"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!({
            "worker": {"T-001": {"1": [{"http_status": 400, "error_body": body}]}},
            "evaluator": {"T-001": {"1": [accept()]}}
        });
        let o = run(tmp.path(), Setup { script, ..Setup::default() });
        let detail = o.ended.detail.clone().unwrap_or_default();
        assert!(
            detail.contains("context window is exceeded") && detail.contains(words),
            "{server}: {detail}"
        );
        assert!(!detail.contains("not JSON"), "{server}: {detail}");
        let call = o.of("model_call").into_iter().find(|c| c["role"] == "worker").unwrap();
        assert_eq!(call["http_status"], 400, "{server}");
        assert_eq!(call["error_class"], "context_exceeded", "{server}");
    }
}

/// A worker that makes the same call with the same arguments three times in a row is told so
/// once, in its own words (the note added to the third call's result, a `loop_detected`
/// event, `nudged`); the fourth holds the task for a person with the call as the evidence
/// (`loop_detected`, `held`). Three calls that differ
/// in an argument are no loop.
/// Edits that undo each other: the files come back to where an earlier turn left them, with
/// nothing new done on the way (the first round's calls are new; from the second on each
/// return repeats calls already made). At the second such return the worker is told so in a
/// message of its own; the third holds the task as stuck, the turns named. No call repeats
/// twice in a row, so only the worktree shows the loop.
#[test]
fn a_worker_whose_edits_keep_coming_back_is_nudged_then_held_as_stuck() {
    let write = |text: &str| json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "f.txt", "content": text}}]});
    let tmp = tempfile::tempdir().unwrap();
    let turns =
        json!([write("a\n"), write("b\n"), write("a\n"), write("b\n"), write("a\n"), write("b\n")]);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert_eq!(o.ended.reason, "needs_operator", "{:?}", o.ended);
    let loops = o.of("loop_detected");
    assert_eq!(loops.len(), 2, "nudged once, then held: {loops:?}");
    assert_eq!((&loops[0]["action"], &loops[0]["times"]), (&json!("nudged"), &json!(2)));
    assert_eq!((&loops[1]["action"], &loops[1]["times"]), (&json!("held"), &json!(3)));
    assert_eq!(loops[0]["tool"], "the worktree");
    let held = o.of("task_state");
    let why = held.last().unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(why.starts_with("stuck:") && why.contains("after turn 4 as after turn 2"), "{why}");
    let requests = o.requests("worker");
    assert_eq!(requests.len(), 6, "the seventh request is never sent");
    let sent = |n: usize| requests[n].body["messages"].to_string();
    assert!(sent(5).contains("put the files back exactly as they were"), "{}", sent(5));
    assert!(!sent(4).contains("put the files back"), "{}", sent(4));
    assert!(!sent(5).contains("harrow") && !sent(5).contains("loop_returns"), "no harness words");

    // Work that moves on is no loop, however many turns it takes.
    let tmp = tempfile::tempdir().unwrap();
    let turns = json!([write("a\n"), write("ab\n"), write("abc\n"), write("abcd\n"), {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert!(o.of("loop_detected").is_empty(), "{:?}", o.of("loop_detected"));
}

#[test]
fn a_worker_repeating_the_same_call_is_nudged_once_then_held_as_stuck() {
    let read =
        |path: &str| json!({"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]});
    let tmp = tempfile::tempdir().unwrap();
    let turns = json!([
        read("README.md"),
        read("README.md"),
        read("README.md"),
        read("README.md"),
        read("README.md")
    ]);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert_eq!(o.ended.reason, "needs_operator", "{:?}", o.ended);
    let loops = o.of("loop_detected");
    assert_eq!(loops.len(), 2, "nudged once, then held: {loops:?}");
    assert_eq!((&loops[0]["action"], &loops[0]["times"]), (&json!("nudged"), &json!(3)));
    assert_eq!((&loops[1]["action"], &loops[1]["times"]), (&json!("held"), &json!(4)));
    assert_eq!(loops[0]["tool"], "read_file");
    assert!(loops[0]["arguments"].as_str().unwrap().contains("README.md"));
    let held = o.of("task_state");
    let why = held.last().unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(
        why.starts_with("stuck:") && why.contains("4 times") && why.contains("read_file"),
        "{why}"
    );
    assert!(why.contains("README.md"), "the evidence names the call: {why}");
    assert_eq!(o.of("tool_result").len(), 3, "the fourth call never ran");
    // The worker reads the note with the third call's result, in the request after it.
    let requests = o.requests("worker");
    let sent = |n: usize| requests[n].body["messages"].to_string();
    assert!(sent(3).contains("same call 3 times in a row"), "{}", sent(3));
    assert!(!sent(2).contains("same call"), "{}", sent(2));
    assert!(!sent(3).contains("harrow") && !sent(3).contains("loop_repeats"), "no harness words");

    let tmp = tempfile::tempdir().unwrap();
    let turns = json!([read("a.md"), read("b.md"), read("a.md"), {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert!(o.of("loop_detected").is_empty(), "calls that differ are no loop");

    // The call is the model's text: on its way to the log and the operator's screen, an escape
    // sequence in its arguments is shown, never sent.
    let tmp = tempfile::tempdir().unwrap();
    let evil = read("x\u{1b}]0;owned\u{7}\u{1b}[2J");
    let turns = json!([evil, evil, evil, evil]);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert_eq!(o.ended.reason, "needs_operator");
    let arguments = o.of("loop_detected")[0]["arguments"].as_str().unwrap().to_owned();
    let why = o.of("task_state").last().unwrap()["reason"].as_str().unwrap().to_owned();
    for text in [&arguments, &why, o.ended.detail.as_ref().unwrap()] {
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    }
}

#[test]
fn a_force_accepted_task_that_was_never_reviewed_is_not_called_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let script = loop_fixture::first_of_two_held();
    let (_rt, server) = serve(&script, true);
    let dead = "http://127.0.0.1:9/v1";
    let mut first = harrow_cmd(tmp.path(), &server.base_url());
    first.env("HARROW_EVALUATOR_BASE_URL", dead);
    let out = headless_run(first, &plan, &repo).arg("--no-preflight").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let sent = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["control", &id, "force-accept", "--reason", "ship it, I looked"])
        .env("HARROW_SESSIONS_DIR", tmp.path().join("sessions"))
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let mut again = harrow_cmd(tmp.path(), &server.base_url());
    again.env("HARROW_EVALUATOR_BASE_URL", server.base_url());
    let resumed = again.args(["resume", &id, "--headless"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(stdout.contains("T-001 accepted BELOW THE BAR: it was never reviewed"), "{stdout}");
    let t2 =
        server.received().into_iter().find(|r| r.role == "worker" && r.task == "T-002").unwrap();
    let prompt = t2.body["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(
        prompt.starts_with("> Warning: T-001 (Write file 1) was accepted below the quality bar: it was never reviewed;"),
        "{prompt}"
    );
    assert!(!prompt.contains("rejected"), "{prompt}");
    let events = support::strict_events(&dir);
    let done = events.iter().find(|e| e["type"] == "task_done").unwrap();
    assert_eq!(done["payload"]["last_outcome"], "not_reviewed");
    let body = git(&repo, &["log", "-1", "--format=%B", &format!("session/{id}~1")]);
    assert!(body.contains("Reviewed-by: none (accepted below the bar)"), "{body}");
}

#[test]
fn no_eval_is_recorded_wherever_a_reader_looks() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let (_rt, server) = serve(&json!({"worker": {"T-001": {"1": write_and_submit(1)}}}), true);
    let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
    cmd.arg("--no-eval");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("⚠ T-001 accepted UNREVIEWED (--no-eval)"), "{stdout}");
    assert!(server.received().iter().all(|r| r.role != "evaluator"));
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();

    let events = support::strict_events(&dir);
    let done = events.iter().find(|e| e["type"] == "task_done").unwrap();
    assert_eq!(done["payload"]["reviewed"], false);
    let status: Value =
        serde_json::from_slice(&std::fs::read(dir.join("task-status.json")).unwrap()).unwrap();
    assert_eq!(status["T-001"], "done_unreviewed");
    let progress = std::fs::read_to_string(dir.join("progress.txt")).unwrap();
    assert!(progress.starts_with("T-001\tdone (unreviewed: --no-eval)\t"), "{progress}");
    let body = git(&repo, &["log", "-1", "--format=%B", &format!("session/{id}")]);
    assert!(body.contains("Reviewed-by: none (--no-eval)"), "{body}");
    let show = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["show", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("Unreviewed T-001 (accepted with the evaluator switched off"), "{show}");
    assert!(show.contains("done_unreviewed"), "{show}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["harrow"]["unreviewed"][0], "T-001");
    assert_eq!(summary["harrow"]["tasks"]["T-001"]["state"], "done_unreviewed");
    assert_eq!(summary["harrow"]["tasks_done"], 1);

    let mut app = App::open(&dir, &id, f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    app.prepare(ratatui::layout::Rect::new(0, 0, 200, 50));
    terminal.draw(|f| draw(f, &app)).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(screen.contains("T-001 done_unreviewed"), "the console's plan says it: {screen}");
    assert!(screen.contains("accepted UNREVIEWED (--no-eval)"), "and its stream: {screen}");
    assert!(screen.contains("not reviewed: the run had review switched off"), "{screen}");
    assert!(!screen.contains("no verdict on this case yet"), "no verdict is coming: {screen}");
}

/// T-001's worker writes `f1.txt` and `path` as `wrong`, submits, writes `path` as `right` and
/// submits again: one validator failure, then a pass the evaluator accepts.
fn fail_then_fix(path: &str, wrong: &str, right: &str) -> Value {
    json!({
        "worker": {"T-001": {"1": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}},
                {"name": "write_file", "arguments": {"path": path, "content": wrong}}
            ]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": right}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"*": {"*": [accept()]}}
    })
}

/// A repository with a `tests/` folder, for the validator runs below.
fn python_project(repo: &Path, plan: &Path) {
    std::fs::write(
        repo.join("pyproject.toml"),
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    for (n, test) in [(1, "tests/test_t1.py"), (2, "tests/test_t2.py")] {
        let file = plan.join(format!("T-00{n}-file.md"));
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        std::fs::write(
            &file,
            text.replacen("---\n## Description", &format!("tests: {test}\n---\n## Description"), 1),
        )
        .unwrap();
    }
}

#[test]
fn pytest_and_ruff_failures_reach_the_worker_with_names_and_locations() {
    tools::require_pytest_and_ruff();
    let tmp = tempfile::tempdir().unwrap();
    let failing = "from pathlib import Path\n\n\ndef test_one():\n    assert Path('f1.txt').read_text() == 'one\\n'\n";
    let passing = "from pathlib import Path\n\n\ndef test_one():\n    assert Path('f1.txt').read_text() == '1\\n'\n";
    let test2 = "from pathlib import Path\n\n\ndef test_two():\n    assert Path('f2.txt').read_text() == '2\\n'\n";
    let script = json!({
        "worker": {
            "T-001": {"1": [
                {"tool_calls": [
                    {"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}},
                    {"name": "write_file", "arguments": {"path": "tests/test_t1.py", "content": failing}},
                    {"name": "write_file", "arguments": {"path": "helper.py", "content": "import os\n"}}
                ]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]},
                {"tool_calls": [
                    {"name": "write_file", "arguments": {"path": "tests/test_t1.py", "content": passing}},
                    {"name": "write_file", "arguments": {"path": "helper.py", "content": "HELPER = 1\n"}}
                ]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ]},
            "T-002": {"1": [
                {"tool_calls": [
                    {"name": "write_file", "arguments": {"path": "f2.txt", "content": "2\n"}},
                    {"name": "write_file", "arguments": {"path": "tests/test_t2.py", "content": test2}}
                ]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(2)}]}
            ]}
        },
        "evaluator": {"*": {"*": [accept()]}}
    });
    let o = run(
        tmp.path(),
        Setup {
            tasks: 2,
            script,
            validators: vec![
                validator("ruff", "ruff check --no-cache ."),
                validator("pytest", "python3 -m pytest -x -q -p no:cacheprovider {tests}"),
            ],
            prepare: Some(python_project),
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let report = o.of("feedback_sent")[0]["content"].as_str().unwrap().to_owned();
    assert!(report.contains("- helper.py:1:8 F401: `os` imported but unused"), "{report}");
    let worker = o.requests("worker");
    let third = serde_json::to_string(&worker[2].body["messages"]).unwrap();
    assert!(third.contains("F401"), "the report is what the worker reads");

    let runs = o.of("validator_run");
    let pytest_of = |n: usize| runs[n]["results"][1]["command"].as_str().unwrap().to_owned();
    assert_eq!(
        pytest_of(2),
        "python3 -m pytest -x -q -p no:cacheprovider 'tests/test_t1.py' 'tests/test_t2.py'",
        "{{tests}} is every accepted task's tests plus this one's"
    );

    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        Setup {
            script: fail_then_fix("tests/test_t1.py", failing, passing),
            validators: vec![validator(
                "pytest",
                "python3 -m pytest -x -q -p no:cacheprovider {tests}",
            )],
            prepare: Some(python_project),
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let report = o.of("feedback_sent")[0]["content"].as_str().unwrap().to_owned();
    assert!(report.contains("Failing: tests/test_t1.py::test_one"), "{report}");
    assert!(report.contains("- tests/test_t1.py:5 AssertionError"), "{report}");
}

/// A Rust crate whose test fails until the worker fixes it.
fn rust_project(repo: &Path, _plan: &Path) {
    std::fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"gated\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn answer() -> i32 { 42 }\n").unwrap();
    std::fs::write(repo.join(".gitignore"), "target\n").unwrap();
}

#[test]
fn a_cargo_test_failure_reaches_the_worker_with_its_name_and_location() {
    let tmp = tempfile::tempdir().unwrap();
    let wrong = "pub fn answer() -> i32 { 41 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn answers() {\n        assert_eq!(super::answer(), 42);\n    }\n}\n";
    let right = wrong.replace("{ 41 }", "{ 42 }");
    let o = run(
        tmp.path(),
        Setup {
            script: fail_then_fix("src/lib.rs", wrong, &right),
            validators: vec![{
                let mut v = validator("tests", "cargo test --quiet --offline");
                v.timeout_secs = 300;
                v
            }],
            prepare: Some(rust_project),
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let report = o.of("feedback_sent")[0]["content"].as_str().unwrap().to_owned();
    assert!(report.contains("Failing: tests::answers"), "{report}");
    assert!(report.contains("- src/lib.rs:7:9 test tests::answers panicked"), "{report}");
}

#[test]
fn a_missing_validator_program_stops_run_before_anything_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let config = tmp.path().join("harrow.toml");
    std::fs::write(
        &config,
        "[[validators]]\nname = \"lint\"\ncommand = \"harrow-no-such-linter check .\"\n",
    )
    .unwrap();
    let (_rt, server) = serve(&json!({}), true);
    let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    cmd.arg("--config").arg(&config);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("validator 'lint' needs harrow-no-such-linter, which is not installed: install it, or set [[validators]] in")
            && stderr.contains("--no-validators"),
        "{stderr}"
    );
    assert!(!tmp.path().join("sessions").exists(), "no session folder");
    assert!(!git(&repo, &["branch", "--list"]).contains("session/"), "no branch");
    assert!(server.received().is_empty(), "no model was called");

    std::fs::write(repo.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "python"]);
    let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    cmd.env("PATH", tmp.path().join("empty-path"));
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("validator 'ruff' needs ruff"), "the detected presets too: {stderr}");
    assert!(!tmp.path().join("sessions").exists());
}

/// A validator whose toolchain is installed but cannot start where validators run (a rustup
/// `cargo` that finds no toolchain, a `python3` that cannot load its library) stops the run
/// before anything is made, in one line saying what it said and what to do — not on the first
/// submit, where it would read as the worker's failure.
#[test]
fn a_validator_toolchain_that_cannot_start_is_said_before_anything_is_created() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("python3");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf 'python3: error while loading shared libraries: libpython3.so\\033]52;c;eA==\\007\\n' >&2\nexit 127\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = tmp.path().join("harrow.toml");
    std::fs::write(
        &config,
        "[hands]\nsandbox = \"off\"\n\n[[validators]]\nname = \"check\"\ncommand = \"python3 check.py\"\n",
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let (_rt, server) = serve(&json!({}), true);
    let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    cmd.arg("--config").arg(&config).env("PATH", &path);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "what it printed, escaped: {stderr}"
    );
    assert!(
        stderr.contains("validator 'check' cannot run where validators run (sandbox: off): `python3 --version` failed (exit 127): python3: error while loading shared libraries")
            && stderr.contains("--no-validators"),
        "{stderr}"
    );
    assert!(
        !tmp.path().join("sessions").read_dir().is_ok_and(|mut d| d.next().is_some()),
        "no session left"
    );
    assert!(!git(&repo, &["branch", "--list"]).contains("session/"), "no branch");
    assert!(server.received().is_empty(), "no model was called");

    // The same validator with a python3 that starts is no obstacle.
    std::fs::write(&fake, "#!/bin/sh\necho 'Python 3.99.0'\n").unwrap();
    let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
    cmd.args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"]);
    cmd.arg("--config").arg(&config).env("PATH", &path);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("cannot run where validators run"), "{stderr}");
    assert!(tmp.path().join("sessions").read_dir().is_ok_and(|mut d| d.next().is_some()));
}

#[test]
fn the_session_harrow_keeps_as_a_fixture_reads_strictly() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harrow/20261122-080615-535d09");
    assert!(support::strict_events(&dir).len() > 100);
}
