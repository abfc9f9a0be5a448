//! Export time against the session's size: twice the tasks must cost about twice the time,
//! never four times (an export that walked every task for every task did). Measured here,
//! not asserted in a test: a timed test fails on a loaded machine.
//!
//! `cargo bench --bench export`: compare the two sizes' times (the ratio is the figure).

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harrow::export::{Format, render};
use std::hint::black_box;
use std::path::Path;

/// A session of `tasks` tasks, each with a start, a case, a verdict and a commit.
fn many_tasks(dir: &Path, tasks: usize) {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).expect("write the session");
    let file = std::fs::File::create(dir.join("events.jsonl")).expect("write the session");
    let mut out = std::io::BufWriter::new(file);
    let mut seq = 0;
    let mut line = |out: &mut std::io::BufWriter<std::fs::File>, kind: &str, payload: String| {
        seq += 1;
        writeln!(
            out,
            r#"{{"ts":"2026-11-26T10:00:00.000Z","seq":{seq},"type":"{kind}","payload":{payload}}}"#
        )
        .expect("write the session");
    };
    line(&mut out, "session_start", r#"{"feature":"many","phase":"run"}"#.into());
    for n in 0..tasks {
        let t = format!("T-{n:05}");
        line(&mut out, "context_reset", format!(r#"{{"task_id":"{t}"}}"#));
        line(
            &mut out,
            "tool_call",
            format!(
                r#"{{"task_id":"{t}","attempt":1,"tool":"submit_case","args":{{"summary":"Did {t}.","ac_coverage":[]}}}}"#
            ),
        );
        line(
            &mut out,
            "evaluator_verdict",
            format!(
                r#"{{"task_id":"{t}","attempt":1,"verdict":"accept","concern":"Fine.","evidence":[],"next_step":null}}"#
            ),
        );
        line(&mut out, "commit", format!(r#"{{"task_id":"{t}","sha":"{n:040x}"}}"#));
    }
    out.flush().expect("write the session");
}

fn export_benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("export_md");
    group.sample_size(10);
    for tasks in [8_000_usize, 16_000] {
        let dir = tmp.path().join(tasks.to_string());
        many_tasks(&dir, tasks);
        group.throughput(Throughput::Elements(tasks as u64));
        group.bench_function(format!("{tasks}_tasks"), |b| {
            b.iter(|| black_box(render(&dir, "many", Format::Md).expect("export").len()));
        });
    }
    group.finish();
}

criterion_group!(benches, export_benches);
criterion_main!(benches);
