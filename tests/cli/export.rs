//! `harrow export` from the real binary: the demo session in each format, and a Tilth session.
//! The Markdown is a snapshot; the HTML is checked for every verdict and category of the log and
//! for any reference outside the file; no format carries the machine's paths.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{loop_fixture, support};

use std::path::Path;
use std::process::Command;

fn harrow(home: &Path) -> Command {
    support::harrow_in(home)
}

fn export(home: &Path, session: &Path, format: &str) -> String {
    let out = harrow(home)
        .args(["export", session.to_str().unwrap(), "--format", format])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The parts of a demo's export that differ from run to run: its id, commits, times, and the
/// token counts (the scripted model counts the prompt, which names the session's folders).
fn stable(text: &str, id: &str) -> String {
    let text = text.replace(id, "<ID>");
    let sha = regex::Regex::new(r"`[0-9a-f]{7}`").unwrap();
    let time = regex::Regex::new(r"\b\d+(\.\d)?s\b|\b\d+m\d\ds\b").unwrap();
    let tokens = regex::Regex::new(r"\b\d+ tokens").unwrap();
    let text = sha.replace_all(&text, "`<sha>`");
    let text = tokens.replace_all(&text, "<n> tokens");
    time.replace_all(&text, "<time>").into_owned()
}

#[test]
fn the_demo_exports_as_markdown_html_and_json_without_the_machines_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let session = support::demo_session(tmp.path());
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let md = export(tmp.path(), &session, "md");
    let html = export(tmp.path(), &session, "html");
    let json = export(tmp.path(), &session, "json");
    let root = tmp.path().display().to_string();
    for (name, text) in [("md", &md), ("html", &html), ("json", &json)] {
        assert!(!text.contains(&root), "{name} names a path of this machine: {text}");
    }
    insta::assert_snapshot!("demo_export_md", stable(&md, &id));

    let log = support::strict_events(&session);
    let verdicts: Vec<&serde_json::Value> =
        log.iter().filter(|e| e["type"] == "evaluator_verdict").collect();
    assert_eq!(verdicts.len(), 4);
    for v in verdicts {
        let concern = v["payload"]["concern"].as_str().unwrap();
        assert!(html.contains(&concern.replace('\'', "&#39;").replace('"', "&quot;")), "{concern}");
        if let Some(category) = v["payload"]["rejection_category"].as_str() {
            assert!(html.contains(&format!("rejected ({category})")), "{category}");
        }
    }
    for external in ["http://", "https://", "src=", "<script", "<link", "url("] {
        assert!(!html.contains(external), "the page refers outside itself: {external}");
    }
    assert!(html.contains("<details>") && html.starts_with("<!DOCTYPE html>"));

    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tasks = parsed["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    assert_eq!(tasks[1]["attempts"].as_array().unwrap().len(), 2, "T-002 was reworked once");
    assert_eq!(tasks[1]["attempts"][0]["verdict"]["category"], "weak_test");
    assert!(parsed["changes"].as_array().is_some_and(|c| !c.is_empty()), "the diff stat");

    let file = tmp.path().join("out.html");
    let out = harrow(tmp.path())
        .args(["export", &id, "--format", "html", "-o", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), html, "-o writes what stdout would");
    // What it did is its output, on stdout; stderr is for what went wrong.
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("Wrote {}\n", file.display()));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_tilth_session_exports_too() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth/20261122-042843-e02b19");
    let tmp = tempfile::tempdir().unwrap();
    let md = export(tmp.path(), &fixture, "md");
    assert!(md.contains("Written by Tilth"), "{md}");
    for task in ["## T-001", "## T-002", "## T-003", "## T-004"] {
        assert!(md.contains(task), "{task} in {md}");
    }
    assert!(
        md.contains("| T-002 | Implement the `add` subcommand |"),
        "titles from progress.txt: {md}"
    );
    assert!(md.contains("rejected (acceptance_gap)"), "{md}");
}

#[test]
fn a_task_that_failed_shows_why_and_its_rounds_and_html_names_both_models() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = loop_fixture::repo_and_plan(tmp.path(), 1);
    let busy = serde_json::json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]});
    let script =
        serde_json::json!({"worker": {"T-001": {"*": [busy.clone(), busy.clone(), busy]}}});
    let (_rt, server) = loop_fixture::serve(&script, true);
    let cmd = loop_fixture::harrow_cmd(tmp.path(), &server.base_url());
    let mut cmd = loop_fixture::headless_run(cmd, &plan, &repo);
    let out = cmd.args(["--max-iterations", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let session = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let md = export(tmp.path(), &session, "md");
    assert!(md.contains("| T-001 | Write file 1 | failed | 1 |"), "one round, not 0: {md}");
    assert!(md.contains("**failed** · ran out of worker iterations"), "{md}");
    assert!(md.ends_with('\n'), "Markdown ends with a newline");
    let html = export(tmp.path(), &session, "html");
    assert!(html.contains("evaluator <code>"), "the header names the evaluator's model: {html}");
    assert!(html.contains("ran out of worker iterations"), "{html}");
}
