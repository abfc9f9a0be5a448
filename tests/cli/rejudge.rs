//! `harrow rejudge`: a real session's judged cases asked again of another scripted evaluator
//! on 127.0.0.1 — the exact prompts the log holds, no worker call, nothing written to the
//! session — and where the two judges differ.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::loop_fixture::{self, accept, harrow_cmd, headless_run, repo_and_plan, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A finished two-task session: T-001 rejected (`weak_test`) then accepted, T-002 accepted.
fn judged_session(tmp: &Path) -> (PathBuf, String) {
    let (repo, plan) = repo_and_plan(tmp, 2);
    let script = json!({
        "worker": {
            "T-001": {
                "1": loop_fixture::write_and_submit(1),
                "2": [
                    {"tool_calls": [{"name": "edit_file", "arguments": {"path": "f1.txt", "old_string": "1\n", "new_string": "1\nchecked\n"}}]},
                    {"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}
                ]
            },
            "T-002": {"1": loop_fixture::write_and_submit(2)}
        },
        "evaluator": {"T-001": {"1": [loop_fixture::reject("weak_test")], "2": [accept()]}, "T-002": {"1": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let out = headless_run(harrow_cmd(tmp, &server.base_url()), &plan, &repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let dir = std::fs::read_dir(tmp.join("sessions")).unwrap().next().unwrap().unwrap().path();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    (dir, id)
}

fn rejudge(tmp: &Path, base_url: &str, id: &str, extra: &[&str]) -> Output {
    harrow_cmd(tmp, base_url)
        .env_remove("HARROW_WORKER_MODEL")
        .args(["rejudge", id, "--evaluator-model", "scripted/other"])
        .args(extra)
        .output()
        .unwrap()
}

fn verdict(v: &str, category: Option<&str>, concern: &str) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": v, "rejection_category": category, "concern": concern, "evidence": [], "next_step": if v == "reject" { json!("Do better.") } else { Value::Null }}}]})
}

fn logged_evaluator_prompts(dir: &Path) -> Vec<String> {
    loop_fixture::events_of(dir, "prompt_assembled")
        .into_iter()
        .filter(|p| p["role"] == "evaluator")
        .map(|p| p["content"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_other_judge_is_asked_the_logged_prompts_and_its_differences_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, id) = judged_session(tmp.path());
    let log_before = std::fs::read(dir.join("events.jsonl")).unwrap();
    // The other judge: accepts what was rejected, rejects one accept, agrees on the last.
    let other = json!({"evaluator": {
        "T-001": {"1": [verdict("accept", None, "Fine as it is.")], "2": [verdict("reject", Some("half_finished"), "Half of it.")]},
        "T-002": {"1": [verdict("accept", None, "Good.")]}
    }});
    let (_rt, server) = serve(&other, true);
    let out = rejudge(tmp.path(), &server.base_url(), &id, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("about 3 case(s)"), "{text}");
    let row = |task: &str, attempt: &str| {
        text.lines()
            .find(|l| l.starts_with(task) && l.split_whitespace().nth(1) == Some(attempt))
            .unwrap_or_else(|| panic!("no row {task} {attempt} in\n{text}"))
            .to_owned()
    };
    assert!(
        row("T-001", "1").contains("reject (weak_test)") && row("T-001", "1").contains("DIFFERS")
    );
    assert!(
        row("T-001", "2").contains("reject (half_finished)")
            && row("T-001", "2").ends_with("DIFFERS")
    );
    assert!(!row("T-002", "1").contains("DIFFERS"), "{text}");
    assert!(text.contains("now: Half of it."), "{text}");
    assert!(
        text.contains("3 case(s): 1 agree, 2 differ (1 accept → reject, 1 reject → accept)"),
        "{text}"
    );
    let asked = server.received();
    assert!(asked.iter().all(|r| r.role == "evaluator"), "no worker call");
    let sent: Vec<String> = asked
        .iter()
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent, logged_evaluator_prompts(&dir), "the exact prompts the log holds");
    assert_eq!(asked[0].body["model"], "scripted/other");
    assert_eq!(std::fs::read(dir.join("events.jsonl")).unwrap(), log_before, "nothing written");

    let json_out = rejudge(tmp.path(), &server.base_url(), &id, &["--json", "--task", "T-002"]);
    let report: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(report["cases"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["cases"][0]["agreement"], "agree");
    assert_eq!(report["was_model"], "scripted/worker", "the session's evaluator model");
}

#[test]
fn a_hostile_or_unreadable_answer_is_shown_safely_and_a_dead_endpoint_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (_dir, id) = judged_session(tmp.path());
    let hostile = json!({"evaluator": {
        "T-001": {"1": [verdict("accept", None, "\u{1b}]52;c;cm0gLXJm\u{7}ok\u{1b}[2J")], "2": [{"content": "I think it is fine."}]},
        "T-002": {"1": [verdict("reject", Some("\u{1b}[31mmade_up"), "x")]}
    }});
    let (_rt, server) = serve(&hostile, true);
    let out = rejudge(tmp.path(), &server.base_url(), &id, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert!(text.contains("no submit_verdict call in the reply"), "{text}");
    assert!(text.contains("no verdict to compare"), "{text}");
    assert!(text.contains("rejection_category"), "an unknown category is no verdict: {text}");

    // Nothing listens on a closed port: one line naming the endpoint, no panic (one try, as
    // the configuration given says).
    let config = tmp.path().join("one-try.toml");
    std::fs::write(&config, "[models]\nmax_tries = 1\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = rejudge(
        tmp.path(),
        &format!("http://127.0.0.1:{port}/v1"),
        &id,
        &["--config", config.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&dead.stderr);
    assert_eq!(dead.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")) && !err.contains("panicked"), "{err}");
}

#[test]
fn a_session_without_judged_cases_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let tilth = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth");
    let out = harrow_cmd(tmp.path(), "http://127.0.0.1:9/v1")
        .args(["rejudge", "20261122-042956-344294", "--evaluator-model", "m", "--dir"])
        .arg(&tilth)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to rejudge") && err.contains("no case an evaluator judged"));
}
