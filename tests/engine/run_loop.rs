//! The loop end to end: the real client over HTTP to the scripted model, real git repositories,
//! real validator processes.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use harrow::harness::run::{OnCap, RunOptions};
use loop_fixture::{KEY, Setup, accept, all_text, case, reject, run, validator, write_and_submit};
use serde_json::json;
use support::git;

#[test]
fn a_clean_accept_commits_the_task() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}},
        "evaluator": {"T-001": {"1": [accept()]}}
    });
    let o = run(
        tmp.path(),
        Setup {
            script,
            validators: vec![validator("exists", "test -f f1.txt")],
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let kinds = o.kinds();
    for k in [
        "session_start",
        "task_state",
        "prompt_assembled",
        "model_call",
        "assistant_message",
        "tool_call",
        "hook_run",
        "tool_result",
        "validator_run",
        "evaluator_verdict",
        "ledger_appended",
        "task_done",
        "commit",
        "stop",
    ] {
        assert!(kinds.contains(&k.to_owned()), "no {k} in {kinds:?}");
    }
    let log = git(
        &o.repo,
        &[
            "log",
            "--format=%an %s",
            &format!("session/{}", o.dir.file_name().unwrap().to_string_lossy()),
        ],
    );
    assert!(log.starts_with("harrow T-001: Write file 1\n"), "{log}");
    assert_eq!(git(&o.repo, &["status", "--porcelain"]), "", "the source tree is untouched");
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.dir.join("task-status.json")).unwrap()).unwrap();
    assert_eq!(status["T-001"], "done");
    assert!(
        std::fs::read_to_string(o.dir.join("progress.txt"))
            .unwrap()
            .starts_with("T-001\tdone\tWrite file 1")
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["harrow"]["tasks_done"], 1);
    assert_eq!(summary["tasks"]["T-001"]["evaluator"]["accepts"], 1);
    let checkpoint: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.dir.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["status"], "all_done");
}

#[test]
fn a_validator_failure_goes_back_to_the_worker_who_fixes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.ok", "content": "ok\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"T-001": {"1": [accept()]}}
    });
    let o = run(
        tmp.path(),
        Setup {
            script,
            validators: vec![validator(
                "checked",
                "test -f f1.ok || { echo 'f1.ok is missing'; exit 1; }",
            )],
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    let runs = o.of("validator_run");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["passed"], false);
    assert_eq!(runs[1]["passed"], true);
    let worker = o.requests("worker");
    let third = serde_json::to_string(&worker[2].body["messages"]).unwrap();
    assert!(
        third.contains("Validators failed") && third.contains("f1.ok is missing"),
        "the report is the submit_case result"
    );
    assert_eq!(o.requests("evaluator").len(), 1, "the evaluator only sees a green case");
}

#[test]
fn a_reject_is_reworked_in_the_same_conversation_with_the_feedback() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {
            "1": write_and_submit(1),
            "2": [
                {"tool_calls": [{"name": "edit_file", "arguments": {"path": "f1.txt", "old_string": "1\n", "new_string": "1\nchecked\n"}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ]
        }},
        "evaluator": {"T-001": {"1": [reject("acceptance_gap")], "2": [accept()]}}
    });
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let verdicts = o.of("evaluator_verdict");
    assert_eq!(
        verdicts.iter().map(|v| v["verdict"].as_str().unwrap()).collect::<Vec<_>>(),
        ["reject", "accept"]
    );
    let worker = o.requests("worker");
    assert_eq!((worker[2].attempt.as_str(), worker[2].turn), ("2", 0));
    let messages = worker[2].body["messages"].as_array().unwrap();
    assert_eq!(
        messages[0]["role"], "system",
        "same conversation: it still starts with the first prompt"
    );
    let last = messages.last().unwrap();
    assert_eq!(
        last["role"], "tool",
        "feedback comes back as the submit_case result, not a new user message"
    );
    let feedback = last["content"].as_str().unwrap();
    assert!(
        feedback.contains("acceptance_gap") && feedback.contains("Append the line 'checked'"),
        "{feedback}"
    );
    let second_eval = serde_json::to_string(&o.requests("evaluator")[1].body).unwrap();
    assert!(
        second_eval.contains("Your earlier verdicts on this task")
            && second_eval.contains("The file lacks a trailing note"),
        "the ledger reaches the evaluator"
    );
    let ledger = std::fs::read_to_string(o.dir.join("ledger/T-001.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 2);
    let f1 = git(
        &o.repo,
        &["show", &format!("session/{}:f1.txt", o.dir.file_name().unwrap().to_string_lossy())],
    );
    assert_eq!(f1, "1\nchecked\n");
}

#[test]
fn two_unparseable_verdicts_fail_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage = json!({"tool_calls": [{"name": "submit_verdict", "arguments": "{\"verdict\": \"looks fine\""}]});
    let prose = json!({"content": "I think it is fine."});
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}},
        "evaluator": {"T-001": {"1": [garbage, prose]}}
    });
    let o = run(
        tmp.path(),
        Setup {
            script,
            opts: RunOptions { max_attempts: 1, ..RunOptions::default() },
            ..Setup::default()
        },
    );
    assert_eq!(o.of("evaluator_parse_error").len(), 2);
    let verdict = o.of("evaluator_verdict");
    assert_eq!(verdict[0]["verdict"], "reject");
    assert_eq!(verdict[0]["parse_failed"], true);
    assert_eq!(o.ended.reason, "evaluator_cap", "never accepted on an unparseable review");
    assert!(o.of("task_done").is_empty());
}

#[test]
fn an_unreachable_evaluator_holds_the_task_for_the_operator() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({"worker": {"T-001": {"1": write_and_submit(1)}}});
    let o = run(tmp.path(), Setup { script, dead_evaluator: true, ..Setup::default() });
    assert_eq!(o.ended.reason, "needs_operator");
    assert!(
        o.of("evaluator_verdict").is_empty()
            && o.of("task_failed").is_empty()
            && o.of("task_done").is_empty()
    );
    let states: Vec<&str> = o.of("task_state").iter().filter_map(|s| s["to"].as_str()).collect();
    assert_eq!(states.last(), Some(&"needs_operator"));
    let checkpoint: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.dir.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["status"], "paused");
    let overview = harrow::session::overview(&o.dir, "x").unwrap();
    assert_eq!(
        overview.status.as_str(),
        "held",
        "a run stopped for a decision is held, as the fleet says"
    );
}

#[test]
fn at_the_cap_a_task_fails_or_with_force_accept_is_flagged_and_later_tasks_are_warned() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-001": {"1": [reject("half_finished")]}, "T-002": {"1": [accept()]}}
    });
    let capped = RunOptions { max_attempts: 1, ..RunOptions::default() };
    let failed = run(
        tmp.path(),
        Setup { tasks: 2, script: script.clone(), opts: capped.clone(), ..Setup::default() },
    );
    assert_eq!(failed.ended.reason, "evaluator_cap");
    assert_eq!(failed.of("task_failed")[0]["reason"], "evaluator_cap");
    assert!(
        failed.requests("worker").iter().all(|r| r.task == "T-001"),
        "the run halts at the failed task"
    );

    let tmp = tempfile::tempdir().unwrap();
    let forced = run(
        tmp.path(),
        Setup {
            tasks: 2,
            script,
            opts: RunOptions { on_cap: OnCap::ForceAccept, ..capped },
            ..Setup::default()
        },
    );
    assert!(forced.ended.success(), "{:?}", forced.ended);
    let done = forced.of("task_done");
    assert_eq!(done[0]["below_bar"], true);
    assert_eq!(done[0]["last_category"], "half_finished");
    let next = forced.requests("worker").into_iter().find(|r| r.task == "T-002").unwrap();
    let prompt = next.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.starts_with("> Warning: T-001 (Write file 1) was accepted below the quality bar")
            && prompt.contains("half_finished"),
        "{prompt}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(forced.dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["harrow"]["below_bar"][0], "T-001");
    assert_eq!(summary["harrow"]["tasks"]["T-001"]["state"], "done_below_bar");
}

#[test]
fn the_evaluator_never_sees_the_worker_reasoning_and_no_key_is_ever_written() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": [
            {"reasoning": "SECRET-WORKER-REASONING-1", "content": "TOOL-HISTORY-MARKER", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"T-001": {"1": [accept()]}}
    });
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert!(o.ended.success());
    let eval = serde_json::to_string(&o.requests("evaluator")[0].body).unwrap();
    for leak in ["SECRET-WORKER-REASONING", "TOOL-HISTORY-MARKER", "read_file", "# demo"] {
        assert!(!eval.contains(leak), "the evaluator request contains {leak}");
    }
    assert!(
        eval.contains("+1") && eval.contains("Wrote f1.txt."),
        "it does see the diff and the case"
    );
    let worker_second = serde_json::to_string(&o.requests("worker")[1].body).unwrap();
    assert!(
        worker_second.contains("SECRET-WORKER-REASONING-1"),
        "the worker keeps its own reasoning across turns"
    );
    assert!(!all_text(&o.dir).contains(KEY), "no key in the session folder");
}

#[test]
fn no_harness_file_name_reaches_the_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {
            "1": [
                {"content": "thinking out loud"},
                {"tool_calls": [{"name": "submit_case", "arguments": {"summary": ""}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ],
            "2": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
                {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
            ],
            "3": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]
        }},
        "evaluator": {"T-001": {"2": [reject("weak_test")], "3": [accept()]}}
    });
    let o = run(
        tmp.path(),
        Setup {
            script,
            validators: vec![validator("exists", "test -f f1.txt")],
            ..Setup::default()
        },
    );
    assert!(o.ended.success(), "{:?}", o.ended);
    assert_eq!(o.of("nudge").len(), 1);
    assert_eq!(o.of("case_parse_error").len(), 1);
    assert_eq!(
        o.of("evaluator_verdict")[0]["rejection_category"],
        "acceptance_gap",
        "an empty diff is rejected by the harness itself"
    );
    assert_eq!(o.requests("evaluator").len(), 2, "the empty diff never reached the evaluator");
    for r in o.requests("worker") {
        let text = serde_json::to_string(&r.body["messages"]).unwrap();
        for name in [
            "events.jsonl",
            "checkpoint.json",
            "summary.json",
            "task-status.json",
            "progress.txt",
            "control.jsonl",
            "ledger",
            "/lock",
        ] {
            assert!(
                !text.contains(name),
                "worker saw '{name}' in turn {} of attempt {}",
                r.turn,
                r.attempt
            );
        }
    }
}

#[test]
fn the_learnings_step_proposes_for_a_person_and_never_for_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}},
        "learnings": {"T-001": {"1": [{"content": "```json\n{\"propose\": \"yes\", \"learning\": \"Files end with a newline.\"}\n```"}]}, "T-002": {"1": [{"content": "{\"propose\": \"no\"}"}]}}
    });
    let opts = RunOptions { learnings: true, ..RunOptions::default() };
    let o = run(tmp.path(), Setup { tasks: 2, script, opts, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let proposals = o.of("proposed_learnings");
    assert_eq!(proposals[0]["emitted"], true);
    assert_eq!(proposals[1]["reason"], "no_proposal");
    let text = std::fs::read_to_string(o.dir.join("proposed-learnings.md")).unwrap();
    assert!(text.contains("## From T-001 — Write file 1\n- Files end with a newline."), "{text}");
    for r in o.requests("worker").iter().chain(o.requests("evaluator").iter()) {
        assert!(
            !r.body.to_string().contains("Files end with a newline"),
            "no model reads the proposals back"
        );
    }
}

#[test]
fn model_misbehaviour_has_a_defined_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": [
            {"tool_calls": [{"name": "launch_rockets", "arguments": {}}, {"name": "read_file", "arguments": "{\"path\": "}]},
            {"content": "and then I would", "finish_reason": "length"},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let o = run(tmp.path(), Setup { script, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let second = serde_json::to_string(&o.requests("worker")[1].body["messages"]).unwrap();
    assert!(second.contains("ERROR: unknown tool 'launch_rockets'. Available: bash"), "{second}");
    assert!(second.contains("ERROR: read_file: the arguments are not valid JSON"), "{second}");
    assert_eq!(o.of("tool_call")[1]["args"], "(unparseable JSON)");
    assert_eq!(o.of("nudge")[0]["kind"], "length");

    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        Setup {
            script: json!({"worker": {"T-001": {"1": [{"http_status": 401}]}}}),
            ..Setup::default()
        },
    );
    assert_eq!(o.ended.reason, "error");
    assert!(o.ended.detail.as_deref().unwrap().contains("refused the API key (401)"));
    assert!(o.of("task_failed").is_empty(), "a wrong key is not the task's fault");
}

#[test]
fn an_accept_below_the_score_threshold_is_reworked() {
    let tmp = tempfile::tempdir().unwrap();
    let scored = |score: u32| json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Works, but the file has no trailing note.", "evidence": [], "next_step": null, "score": score, "witnesses": [{"criterion": 1, "code": "f1.txt:1", "quote": "1"}]}}]});
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1), "2": [{"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}]}},
        "evaluator": {"T-001": {"1": [scored(45)], "2": [scored(85)]}}
    });
    let opts = RunOptions { score_threshold: Some(60.0), ..RunOptions::default() };
    let o = run(tmp.path(), Setup { script, opts, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let verdicts = o.of("evaluator_verdict");
    assert_eq!(
        (verdicts[0]["verdict"].as_str(), verdicts[0]["below_threshold"].as_bool()),
        (Some("reject"), Some(true))
    );
    assert_eq!(verdicts[1]["verdict"], "accept");
    let feedback = o.of("feedback_sent")[0]["content"].as_str().unwrap();
    assert!(feedback.contains("Scored 45, below the bar of 60."), "{feedback}");
}

#[test]
fn a_reply_cut_by_the_length_limit_reaches_the_worker_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"1": [
            {"finish_reason": "length",
             "tool_calls": [{"name": "write_file", "arguments": "{\"path\": \"f1.txt\", \"content\": \"1"}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}
        ]}},
        "evaluator": {"T-001": {"1": [accept()]}}
    });
    let opts = RunOptions { max_iterations: 6, ..RunOptions::default() };
    let o = run(tmp.path(), Setup { script, opts, ..Setup::default() });
    assert!(o.ended.success(), "{:?}", o.ended);
    let worker = o.requests("worker");
    let second = serde_json::to_string(&worker[1].body["messages"]).unwrap();
    assert!(
        second.contains("cut off by the output length limit") && second.contains("nothing was run"),
        "the worker is told its reply was cut, not that it wrote bad JSON: {second}"
    );
    let calls = o.of("model_call");
    assert_eq!(calls[0]["finish_reason"], "length");
}
