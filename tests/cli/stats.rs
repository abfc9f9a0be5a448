//! `harrow stats`: the judge's record over many sessions, checked against a fixture of
//! sessions whose figures were worked out by hand (`tests/fixtures/judge`) and Tilth's
//! sessions (figures from a separate reading of their logs), and against hostile folders.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn stats(dirs: &[&Path], json: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harrow"));
    cmd.arg("stats").env_remove("HARROW_SESSIONS_DIR").env("XDG_CONFIG_HOME", "/nonexistent");
    for d in dirs {
        cmd.arg("--dir").arg(d);
    }
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn stats_json(dirs: &[&Path]) -> Value {
    serde_json::from_slice(&stats(dirs, true).stdout).unwrap()
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-4
}

#[test]
fn the_fixture_sessions_give_the_figures_worked_out_by_hand() {
    let all = stats_json(&[&fixtures("judge"), &fixtures("tilth")]);
    assert_eq!(all["sessions"], 5);
    assert_eq!(
        (all["harrow_sessions"].clone(), all["tilth_sessions"].clone()),
        (2.into(), 3.into())
    );
    let t = &all["total"];
    // judge A: reject, accept, reject; judge B: held accept, accept, reject, below-score
    // accept; Tilth: 6 accepts and 3 rejects.
    assert_eq!(t["verdicts"]["accepts"], 4 + 6);
    assert_eq!(t["verdicts"]["rejects"], 3 + 3);
    let categories = &t["verdicts"]["rejection_categories"];
    assert_eq!(categories["scope_creep"], 1);
    assert_eq!(categories["spec_violation"], 1);
    assert_eq!(categories["weak_test"], 1);
    assert_eq!(categories["acceptance_gap"], 2);
    assert_eq!(categories["half_finished"], 1);
    assert_eq!(t["by_harness"], 1, "an empty diff harrow judged is not the evaluator's");
    let overrides = &t["overrides"];
    assert_eq!(overrides["approved_after_reject"], 1, "A's T-002");
    assert_eq!(overrides["rejected_after_accept"], 1, "B's T-001; B's T-003 reject was refused");
    assert_eq!(overrides["force_accepted"], 1, "B's T-002");
    assert_eq!(t["evidence"]["seen"], 2);
    assert_eq!(t["evidence"]["sent_back"], 1);
    assert_eq!(t["evidence"]["held"], 1);
    assert_eq!(t["evidence_checked"], 3, "a second asking is not a first");
    assert_eq!(t["evidence_failed"], 1);
    assert_eq!(t["landed"], 4 + 6);
    assert!(close(&t["cost"], 0.31 + 0.47 + 0.04345 + 0.01188), "{t}");
    assert!(close(&t["rework_cost"], 0.07 + 0.12 + 0.01456), "{t}");
    let rates = &all["rates"];
    assert!(close(&rates["override_rate"], 3.0 / 16.0), "{rates}");
    assert!(close(&rates["evidence_failure_rate"], 1.0 / 3.0), "{rates}");
    assert!(close(&rates["cost_per_landed_task"], (0.78 + 0.05533) / 10.0), "{rates}");
    let per: Vec<&Value> = all["per_session"].as_array().unwrap().iter().collect();
    let b = per.iter().find(|p| p["id"] == "20261120-110000-bbbbbb").unwrap();
    assert_eq!(b["overrides"]["rejected_after_accept"], 1);
    assert!(close(&b["rework_cost"], 0.12), "{b}");
}

#[test]
fn the_table_says_each_figure_in_words() {
    let out = String::from_utf8(stats(&[&fixtures("judge")], false).stdout).unwrap();
    for line in [
        "Sessions   2 (2 harrow, 0 Tilth)",
        "Verdicts   7 by the evaluator: 4 accepted (57 %), 3 rejected",
        "rejected for: scope_creep 1, spec_violation 1, weak_test 1",
        "1 judged by harrow itself (an empty diff)",
        "Overrides  3 of 7 verdicts (43 %): 1 approved after a reject · 1 rejected after an accept · 1 force-accepted",
        "Evidence   1 of 3 accepts failed harrow's check at first (33 %)",
        "Cost       $0.780 for 4 landed task(s): $0.195 a task · $0.190 on rework (24 %)",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}

#[test]
fn a_hostile_log_is_counted_as_far_as_it_reads_and_its_words_never_reach_the_terminal_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("20261121-000000-\u{1b}]0;pwned\u{7}");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        r#"{"ts":"2026-11-21T00:00:01Z","seq":1,"type":"session_start","payload":{"phase":"run"}}"#,
        r#"{"ts":"2026-11-21T00:00:02Z","seq":2,"type":"evaluator_verdict","payload":{"task_id":"T-1","verdict":"reject","rejection_category":"\u001b[31mred\u001b[0m"}}"#,
        r#"{"ts":"2026-11-21T00:00:03Z","seq":3,"type":"evaluator_verdict","payload":{"task_id":"T-1","verdict":"maybe"}}"#,
        r#"{"ts":"2026-11-21T00:00:04Z","seq":4,"type":"operator_action","payload":{"task_id":"T-1","action":{"nested":true}}}"#,
        r#"{"ts":"2026-11-21T00:00:05Z","seq":5,"type":"evaluator_verdict","payload":{"task_id":"T-1","verdict":"accept","evidence_gate":"bogus"}}"#,
        r#"{"ts":"2026-11-21T00:00:06Z","seq":6,"type":"model_call","payload":{"task_id":"T-1","cost":"lots"}}"#,
        r#"{"torn":"#,
    ];
    std::fs::write(dir.join("events.jsonl"), lines.join("\n")).unwrap();
    // A log that is no file: a folder named so, and a FIFO nothing writes (never waited on).
    std::fs::create_dir_all(tmp.path().join("20261121-000001-x/events.jsonl")).unwrap();
    std::fs::create_dir_all(tmp.path().join("20261121-000002-y")).unwrap();
    nix::unistd::mkfifo(
        &tmp.path().join("20261121-000002-y/events.jsonl"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let out = stats(&[tmp.path()], false);
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!text.contains('\u{1b}') && !stderr.contains('\u{1b}'), "{text:?}\n{stderr:?}");
    assert!(text.contains("1 answer(s) that were no verdict"), "{text}");
    assert!(text.contains("2 by the evaluator: 1 accepted (50 %), 1 rejected"), "{text}");
    let s = stats_json(&[tmp.path()]);
    assert_eq!(s["total"]["evidence_checked"], 0, "an unknown gate word is no check: {s}");
}
