//! The scan that reads, decodes and folds on several threads gives exactly what folding the
//! lines one by one gives: on every fixture (harrow's and Tilth's), on generated logs many
//! blocks long, and on the same logs damaged (torn lines, garbage, blank lines, CRLF, lines
//! spliced together, a last line still being written).

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use harrow::session::fact::{Fact, KeptValues};
use harrow::session::scan::{ScanReport, scan};
use harrow::session::summary::SummaryFold;
use harrow::session::synth::{Dialect, generate};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The summary and what else was found, folding one line after another on this thread.
fn sequential(bytes: &[u8]) -> (Value, ScanReport) {
    let mut fold = SummaryFold::new(None);
    let mut report = ScanReport::default();
    let mut kept = KeptValues::default();
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let complete = if end == 0 { &[][..] } else { &bytes[..end - 1] };
    for (n, raw) in complete.split(|b| *b == b'\n').enumerate().filter(|_| end > 0) {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        report.lines += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            report.blank += 1;
        } else if let Ok(fact) = Fact::decode(line, &mut kept) {
            report.events += 1;
            fold.apply(&fact);
        } else {
            report.note_unreadable(n as u64 + 1);
        }
    }
    report.end_offset = end as u64;
    report.pending_bytes = (bytes.len() - end) as u64;
    (serde_json::to_value(fold.finish(&report)).unwrap(), report)
}

/// The same through the parallel scan of a file holding `bytes`.
fn parallel(bytes: &[u8]) -> (Value, ScanReport) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("events.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let mut fold = SummaryFold::new(None);
    let mut numbers = Vec::new();
    let report = scan(&path, |at, fact| {
        numbers.push(at.number);
        fold.apply(fact);
    })
    .unwrap();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "events arrive in file order");
    (serde_json::to_value(fold.finish(&report)).unwrap(), report)
}

fn same(name: &str, bytes: &[u8]) {
    let (want, want_report) = sequential(bytes);
    let (got, got_report) = parallel(bytes);
    assert_eq!(got_report, want_report, "{name}: what the scan found besides events");
    assert!(got == want, "{name}: the parallel fold differs from the sequential one");
}

fn fixture_logs() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "events.jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The log with damage of every kind a crash or a bad writer leaves, spread through it.
fn damaged(bytes: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match i % 7 {
            1 => out.extend_from_slice(&line[..line.len() / 2]),
            2 => {
                out.extend_from_slice(line);
                out.extend_from_slice(b"\r");
            }
            3 => {
                out.extend_from_slice(&line[..line.len() / 3]);
                out.extend_from_slice(lines[(i + 1) % lines.len()]);
            }
            4 => out.extend_from_slice(b"   \n\xff\xfe not json at all"),
            _ => out.extend_from_slice(line),
        }
        out.push(b'\n');
    }
    out.extend_from_slice(b"{\"type\":\"model_call\",\"payload\":{\"task_id\":");
    out
}

#[test]
fn the_parallel_fold_equals_the_sequential_one_on_every_fixture_and_its_damage() {
    let logs = fixture_logs();
    assert!(logs.iter().any(|p| p.to_string_lossy().contains("/tilth/")));
    assert!(logs.iter().any(|p| p.to_string_lossy().contains("/harrow/")));
    for path in logs {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        same(&name, &bytes);
        same(&format!("{name}, damaged"), &damaged(&bytes));
    }
}

#[test]
fn the_parallel_fold_equals_the_sequential_one_over_many_blocks() {
    for (dialect, seed) in [(Dialect::Harrow, 3), (Dialect::Tilth, 5)] {
        let mut bytes = Vec::new();
        // About 8 MB: eight blocks, so every decoding thread has several turns.
        generate(&mut bytes, 10_000, dialect, seed).unwrap();
        assert!(bytes.len() > 6 << 20, "{} bytes", bytes.len());
        same(&format!("{dialect:?}"), &bytes);
        same(&format!("{dialect:?}, damaged"), &damaged(&bytes));
    }
}
