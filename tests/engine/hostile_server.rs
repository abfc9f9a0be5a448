//! A hostile or broken model server, against the real binary: a reply that never ends, tool-call
//! indices that climb without end, a server that answers 503 every time, and one that stops
//! sending in the middle of a reply. Each must end within its bound, with memory bounded, every
//! try logged as its own event, and the run stopped so it can be resumed.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use loop_fixture::{harrow_cmd, headless_run, repo_and_plan, serve};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The resident memory of a process, in bytes (0 once it is gone).
fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

struct Seen {
    /// Each line printed, in order.
    lines: Vec<String>,
    peak_rss: u64,
    code: Option<i32>,
    events: Vec<Value>,
}

/// Runs one task against `turn` (the worker's only answer) with `config`, watching memory.
fn run_against(turn: &Value, config: &str) -> Seen {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let (_rt, server) = serve(&json!({"worker": {"T-001": {"1": [turn]}}}), false);
    let file = tmp.path().join("harrow.toml");
    std::fs::write(&file, config).unwrap();
    let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
    cmd.arg("--config").arg(&file).stdout(Stdio::piped()).stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<_>>()
    });
    let mut peak_rss = 0;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        peak_rss = peak_rss.max(rss(pid));
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let session = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap();
            let log = std::fs::read_to_string(session.path().join("events.jsonl"));
            panic!("the run did not end in 60 s; its log:\n{}", log.unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let lines = reader.join().unwrap();
    eprintln!("peak RSS of harrow: {} MB", peak_rss / MB);
    let session = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    Seen { lines, peak_rss, code, events: support::strict_events(&session) }
}

fn failed_calls(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "model_call" && e["payload"]["health"] != "ok").collect()
}

fn last_stop(events: &[Value]) -> &Value {
    events.iter().rev().find(|e| e["type"] == "stop").unwrap()
}

const MB: u64 = 1024 * 1024;

#[test]
fn a_reply_that_never_ends_is_cut_at_16_mb_with_memory_bounded() {
    let seen = run_against(&json!({"misbehave": "endless_text"}), "");
    assert!(seen.peak_rss < 100 * MB, "peak RSS {} MB", seen.peak_rss / MB);
    let failed = failed_calls(&seen.events);
    assert_eq!(failed.len(), 1, "cut, not asked again");
    let detail = failed[0]["payload"]["health_detail"].as_str().unwrap();
    assert!(detail.contains("was cut: it passed 16 MB"), "{detail}");
    assert_eq!(last_stop(&seen.events)["payload"]["reason"], "provider_failure");
    assert_eq!(seen.code, Some(1));
    let last = seen.lines.last().unwrap();
    assert!(last.contains("harrow resume"), "{last}");
}

#[test]
fn tool_call_indices_that_climb_end_the_reply_with_memory_bounded() {
    let seen = run_against(&json!({"misbehave": "climbing_indices"}), "");
    assert!(seen.peak_rss < 100 * MB, "peak RSS {} MB", seen.peak_rss / MB);
    let failed = failed_calls(&seen.events);
    assert_eq!(failed.len(), 1);
    let detail = failed[0]["payload"]["health_detail"].as_str().unwrap();
    assert!(detail.contains("past the limit of 128 calls"), "{detail}");
    assert!(detail.contains("[models] max_tool_calls"), "names its own limit: {detail}");
    let lower =
        run_against(&json!({"misbehave": "climbing_indices"}), "[models]\nmax_tool_calls = 8\n");
    let detail =
        failed_calls(&lower.events)[0]["payload"]["health_detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("past the limit of 8 calls"), "the setting governs it: {detail}");
}

#[test]
fn a_503_tried_four_times_is_four_events_with_growing_gaps() {
    let config = "[models]\nmax_tries = 4\nretry_base_ms = 200\n";
    let seen = run_against(&json!({"http_status": 503}), config);
    let failed = failed_calls(&seen.events);
    assert_eq!(failed.len(), 4, "{failed:?}");
    let waits: Vec<f64> = failed[..3]
        .iter()
        .map(|e| e["payload"]["retry_backoff_seconds"].as_f64().unwrap())
        .collect();
    assert!(waits[0] < waits[1] && waits[1] < waits[2], "{waits:?}");
    assert!(failed[3]["payload"]["retry_backoff_seconds"].is_null());
    for e in &failed {
        assert_eq!(e["payload"]["http_status"], 503);
        let detail = e["payload"]["health_detail"].as_str().unwrap();
        assert!(
            detail.contains("answered 503") && !detail.contains("cannot be reached"),
            "{detail}"
        );
    }
    let printed = &seen.lines;
    assert_eq!(
        printed.iter().filter(|l| l.contains("call failed (503)")).count(),
        4,
        "each try is printed: {printed:?}"
    );
    assert_eq!(last_stop(&seen.events)["payload"]["reason"], "provider_failure");
}

#[test]
fn a_stream_that_stops_is_reported_as_it_stalls_and_the_run_stops_resumably() {
    let config = "[models]\nread_timeout_secs = 1\nmax_tries = 2\nretry_base_ms = 3000\n";
    let seen = run_against(&json!({"content": "never finished", "stall_after_chunks": 2}), config);
    let stalls: Vec<usize> = (seen.lines.iter().enumerate())
        .filter(|(_, l)| l.contains("worker reply") && l.contains("stopped sending for 1 s"))
        .map(|(at, _)| at)
        .collect();
    let stopped = seen.lines.iter().position(|l| l.starts_with("■ stopped")).unwrap();
    // Each try's stall is reported as it happens: the first before the wait for the next try
    // (it says so), the second before the run gives up.
    assert_eq!(stalls.len(), 2, "{:?}", seen.lines);
    assert!(seen.lines[stalls[0]].contains("retrying in"), "{}", seen.lines[stalls[0]]);
    assert!(stalls[1] < stopped, "{:?}", seen.lines);
    let failed = failed_calls(&seen.events);
    assert_eq!(failed.len(), 2);
    assert_eq!(last_stop(&seen.events)["payload"]["reason"], "provider_failure");
    assert!(seen.lines.last().unwrap().contains("harrow resume"));
}
