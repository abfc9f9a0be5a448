//! Local servers with small windows, through the real binary: stand-ins on 127.0.0.1 that
//! behave like llama.cpp — the window enforced with its exact 400 body, no usage in their
//! streams, a reply dropped after its 200, a reply that runs away. Plans whose tasks read and
//! write more than the window holds finish: tool outputs cut to a share of the window, the
//! conversation rebuilt to fit (bulky kept turns cut, each saying how to get the rest back),
//! replies bounded by the window, tokens estimated and said to be.

use crate::loop_fixture;
use crate::support::git;

use harrow::brain::scripted::Options;
use loop_fixture::{
    accept, case, configure_models, events_of, harrow_cmd, headless_ok, headless_run, only_session,
    repo_and_plan, serve_with,
};
use serde_json::{Value, json};
use std::path::Path;

/// `n` files of 12 KB under `data/`, committed.
fn large_files(repo: &Path, n: usize) {
    std::fs::create_dir_all(repo.join("data")).unwrap();
    for i in 1..=n {
        let line = |l: usize| format!("part {i} line {l:03}: {}\n", "lorem ipsum ".repeat(2));
        let text = (1..=300).map(line).collect::<Vec<_>>().concat();
        assert!(text.len() >= 12_000, "{}", text.len());
        std::fs::write(repo.join(format!("data/part{i}.txt")), text).unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "data"]);
}

/// Task `t`'s worker: reads every data file, writes its file, submits.
fn reads_then_writes(t: usize, files: usize) -> Vec<Value> {
    let mut turns: Vec<Value> = (1..=files)
        .map(|i| json!({"tool_calls": [{"name": "read_file", "arguments": {"path": format!("data/part{i}.txt")}}]}))
        .collect();
    turns.push(json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{t}.txt"), "content": format!("{t}\n")}}]}));
    turns.push(json!({"tool_calls": [{"name": "submit_case", "arguments": case(t)}]}));
    turns
}

/// The scenario: three tasks, each reading four 12 KB files, behind a window of
/// 30,000 characters (7,500 tokens as the stand-in counts them) that the server names only
/// in its 400. T-002's first reply runs away; T-003's first reply is dropped after its 200.
#[test]
fn three_tasks_reading_large_files_behind_a_thirty_thousand_character_window_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    large_files(&repo, 4);
    let mut worker = serde_json::Map::new();
    for t in 1..=3 {
        let mut turns = reads_then_writes(t, 4);
        match t {
            2 => turns.insert(0, json!({"misbehave": "runaway", "chunk_delay_ms": 1})),
            3 => turns[0] = json!({"misbehave": "dropped", "again": turns[0].clone()}),
            _ => {}
        }
        worker.insert(format!("T-00{t}"), json!({"*": turns}));
    }
    let script = json!({"worker": worker, "evaluator": {"*": {"*": [accept()]}}});
    let options = Options { fast: true, window: Some(7_500), no_usage: true, ..Options::default() };
    let (_rt, server) = serve_with(&script, options);
    // Without a bound, the runaway would run to this limit: the test would take two minutes.
    configure_models(tmp.path(), "[models]\nmax_reply_secs = 120\n");
    let stdout = headless_ok(tmp.path(), &server.base_url(), &plan, &repo);
    let dir = only_session(tmp.path());
    assert_eq!(events_of(&dir, "task_done").len(), 3, "{stdout}");

    // Compactions kept every task inside the window; only the first met the server's 400.
    let compacted = events_of(&dir, "context_compacted");
    for t in 1..=3 {
        let id = format!("T-00{t}");
        assert!(compacted.iter().any(|c| c["task_id"] == id.as_str()), "{id} was compacted");
    }
    assert!(compacted.iter().all(|c| c["window"] == 7_500), "{compacted:?}");
    assert!(compacted.iter().any(|c| c["cut"].as_array().is_some_and(|c| !c.is_empty())));
    let summary = compacted[0]["summary"].as_str().unwrap();
    assert!(summary.contains("was compacted to fit"), "the rebuilt message is logged: {summary}");
    let calls = events_of(&dir, "model_call");
    let refused: Vec<&Value> =
        calls.iter().filter(|c| c["error_class"] == "context_exceeded").collect();
    assert!(refused.iter().all(|c| c["task_id"] == "T-001"), "{refused:?}");
    assert!(refused.len() <= 1, "{refused:?}");

    // Later tasks know the window from the start: their reads are cut to a share of it.
    let results = events_of(&dir, "tool_result");
    let read = results.iter().find(|r| r["task_id"] == "T-002" && r["tool"] == "read_file");
    let read = read.unwrap()["output"].as_str().unwrap().to_owned();
    assert!(
        read.contains("cut to fit the model's context window") && read.contains("start_line"),
        "{read}"
    );
    assert!(read.len() < 8_000, "{}", read.len());

    // The runaway ended at the cap the window gives, and the task went on.
    let worker_calls: Vec<&Value> = calls.iter().filter(|c| c["role"] == "worker").collect();
    let runaway = worker_calls.iter().find(|c| c["task_id"] == "T-002").unwrap();
    assert_eq!(runaway["finish_reason"], "length", "{runaway}");
    let sent = server.received();
    let capped = sent.iter().find(|r| r.role == "worker" && r.task == "T-002").unwrap();
    assert_eq!(capped.body["max_tokens"], 1_875, "a quarter of the learned window");

    // The dropped reply was named and asked again.
    let dropped = worker_calls.iter().find(|c| c["task_id"] == "T-003").unwrap();
    assert_eq!(dropped["error_class"], "dropped", "{dropped}");

    // No usage from the server: every call's tokens are estimates, and `show` says so.
    assert!(calls.iter().filter(|c| c["health"] == "ok").all(|c| c["tokens_estimated"] == true));
    let show = harrow_cmd(tmp.path(), &server.base_url())
        .args(["show", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.lines().any(|l| l.starts_with("Tokens    ~")), "{show}");
}

/// Turns that each write a file of `size` characters, `n` of them, then a case for task 1.
fn writes(n: usize, size: usize) -> Vec<Value> {
    let mut turns: Vec<Value> = (0..n)
        .map(|i| {
            let content = format!("// file {i}\n{}\n", "z".repeat(size));
            json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("w{i}.txt"), "content": content}}]})
        })
        .collect();
    turns.push(json!({"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}));
    turns
}

/// One task with a spec of `lines` lines (some 75 characters each, as a real task's are) in a
/// window the server states at `/props` and enforces: it finishes, compacted, never refused.
fn one_task_in(window: u64, lines: usize, turns: &[Value]) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let line = |n: usize| format!("- w{n}.txt follows the house style: a header, then the body.\n");
    let spec = (1..=lines).map(line).collect::<Vec<_>>().concat();
    let task = format!(
        "---\nid: T-001\ntitle: Write the files\n---\n## Description\nCreate f1.txt and the w files.\n{spec}\n## Acceptance criteria\n- f1.txt exists and says 1\n"
    );
    std::fs::write(plan.join("T-001-file.md"), task).unwrap();
    let accept = loop_fixture::accept_quoting("w0.txt", "// file 0");
    let script = json!({"worker": {"T-001": {"*": turns}}, "evaluator": {"*": {"*": [accept]}}});
    let props = json!({"default_generation_settings": {"n_ctx": window}});
    let options = Options {
        fast: true,
        window: Some(window),
        props: Some(props),
        no_usage: true,
        ..Options::default()
    };
    let (_rt, server) = serve_with(&script, options);
    let stdout = headless_ok(tmp.path(), &server.base_url(), &plan, &repo);
    let dir = only_session(tmp.path());
    assert_eq!(events_of(&dir, "task_done").len(), 1, "{stdout}");
    let calls = events_of(&dir, "model_call");
    assert!(calls.iter().all(|c| c["error_class"] != "context_exceeded"), "never refused");
    events_of(&dir, "context_compacted")
}

#[test]
fn a_task_with_small_turns_keeps_going_in_a_two_thousand_token_window() {
    let compacted = one_task_in(2_048, 50, &writes(20, 300));
    assert!(!compacted.is_empty(), "the premise: the window was filled");
}

#[test]
fn a_task_writing_three_kilobyte_files_keeps_going_in_a_3500_token_window() {
    let compacted = one_task_in(3_500, 60, &writes(6, 3_000));
    assert!(!compacted.is_empty(), "the premise: the window was filled");
}

/// A window learned from a server's 400 is recorded with the compaction it made, so a run
/// resumed after a stop knows it from its first request: its replies are bounded by it, its
/// reads cut to it, and it never meets the refusal again.
#[test]
fn a_window_learned_from_a_refusal_is_known_to_the_resumed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    large_files(&repo, 4);
    let mut second = reads_then_writes(2, 2);
    // T-002's first request meets a server that is down once: the run stops there.
    second[0]["http_status"] = json!(503);
    second[0]["times"] = json!(1);
    let script = json!({
        "worker": {"T-001": {"*": reads_then_writes(1, 4)}, "T-002": {"*": second}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let options = Options { fast: true, window: Some(7_500), no_usage: true, ..Options::default() };
    let (_rt, server) = serve_with(&script, options);
    configure_models(tmp.path(), "[models]\nmax_tries = 1\nretry_base_ms = 10\n");
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the premise: the run stopped at T-002: {stdout}");
    let dir = only_session(tmp.path());
    assert_eq!(events_of(&dir, "task_done").len(), 1, "{stdout}");
    let learned = events_of(&dir, "context_compacted");
    assert!(learned.iter().any(|c| c["trigger"] == "server" && c["window"] == 7_500));

    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let resumed = harrow_cmd(tmp.path(), &server.base_url())
        .args(["resume", &id, "--headless", "--no-validators"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{said}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(events_of(&dir, "task_done").len(), 2, "{said}");
    let refused = events_of(&dir, "model_call")
        .into_iter()
        .filter(|c| c["error_class"] == "context_exceeded" && c["task_id"] == "T-002")
        .count();
    assert_eq!(refused, 0, "the resumed run fits to the learned window");
    let asked: Vec<_> = (server.received().into_iter())
        .filter(|r| r.role == "worker" && r.task == "T-002")
        .collect();
    let last = asked.last().unwrap();
    assert_eq!(last.body["max_tokens"], 1_875, "its replies bounded by the learned window");
    let read = events_of(&dir, "tool_result")
        .into_iter()
        .find(|r| r["task_id"] == "T-002" && r["tool"] == "read_file")
        .unwrap();
    assert!(read["output"].as_str().unwrap().contains("cut to fit the model's context window"));
}
