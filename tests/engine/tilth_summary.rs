//! The summary fold agrees with Tilth's own `summary.json` on every field Tilth computes.
//!
//! Tilth rewrites `summary.json` at each task boundary and stop; `cleanse` appends an `archived`
//! event afterwards without refreshing it. So each test folds the log as it stood when Tilth
//! wrote its summary: without the trailing `archived` events.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use harrow::session::overview;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth").join(id)
}

/// Our summary of the log as it was when Tilth wrote `summary.json`.
fn ours_at_tilths_last_refresh(id: &str) -> Value {
    let src = fixture(id);
    let text = std::fs::read_to_string(src.join("events.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    while lines.last().is_some_and(|l| l.contains("\"type\": \"archived\"")) {
        lines.pop();
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let o = overview(&dir, id).unwrap();
    serde_json::to_value(&o.summary).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every value Tilth wrote must be in ours at the same path. Key sets must match exactly,
/// except where `extra_ok` says harrow may add keys.
fn agree(tilth: &Value, ours: &Value, path: &str, extra_ok: &dyn Fn(&str) -> bool) {
    match (tilth, ours) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, tv) in t {
                let p = format!("{path}.{k}");
                let ov = o.get(k).unwrap_or_else(|| panic!("{p}: missing from ours"));
                agree(tv, ov, &p, extra_ok);
            }
            if !extra_ok(path) {
                let extra: Vec<&String> = o.keys().filter(|k| !t.contains_key(*k)).collect();
                assert!(extra.is_empty(), "{path}: ours has keys Tilth does not: {extra:?}");
            }
        }
        // Summary v2/v3 gave a task's tokens as one integer: the prompt + completion total.
        (Value::Number(n), Value::Object(o)) if path.ends_with(".tokens") => {
            assert_eq!(Some(n.as_i64().unwrap()), o["total"].as_i64(), "{path}");
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(close(a, b), "{path}: Tilth {a}, ours {b}");
        }
        _ => assert_eq!(tilth, ours, "{path}"),
    }
}

#[test]
fn agrees_with_tilth_0_2_summary_v4() {
    let id = "20261122-042843-e02b19";
    let tilth: Value =
        serde_json::from_slice(&std::fs::read(fixture(id).join("summary.json")).unwrap()).unwrap();
    assert_eq!(tilth["version"], 4);
    let ours = ours_at_tilths_last_refresh(id);
    agree(&tilth, &ours, "", &|path| path.is_empty());
    assert_eq!(ours["harrow"]["status"], "done");
}

#[test]
fn agrees_with_pre_refactor_summary_v2() {
    let id = "20261122-044421-4e1c56";
    let mut tilth: Value =
        serde_json::from_slice(&std::fs::read(fixture(id).join("summary.json")).unwrap()).unwrap();
    assert_eq!(tilth["version"], 2);
    tilth.as_object_mut().unwrap().remove("version");
    let ours = ours_at_tilths_last_refresh(id);
    // v2 lacks the cached/reasoning/cost/by_phase token fields that v4 added.
    agree(&tilth, &ours, "", &|path| path.is_empty() || path == ".tokens");
    assert_eq!(ours["prep_started_at"], "2026-11-22T04:44:21Z");
    assert_eq!(ours["harrow"]["validators"]["runs"], 3);
    assert_eq!(ours["harrow"]["validators"]["failed"], 1);
}

#[test]
fn crashed_session_is_crashed() {
    let id = "20261122-042956-344294";
    let o = overview(&fixture(id), id).unwrap();
    assert_eq!(o.status.as_str(), "crashed");
    assert_eq!(o.summary.stop, None);
    assert_eq!(o.summary.harrow.tasks["T-001"].state.as_str(), "running");
}
