//! Lanes against one lane, as a whole process: a plan of 12 tasks in 3 independent chains of
//! 4, a scripted model that answers every call after 300 ms, `harrow run --lanes 1` then
//! `--lanes 3`. Reports each run's wall time, the harness's CPU per model call (the whole
//! `harrow` process, start-up included) and its peak memory, and checks that both runs gave
//! every task the same verdicts and ended with the same tree. Two shapes of task: the smallest
//! (a file written, a case, a verdict: 3 calls), where what a lane costs once per task weighs
//! most on each call, and the shape `loop_overhead` measures (8 files read besides: 11 calls).
//! `cargo bench --bench lanes`

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use harrow::brain::scripted::{ScriptedServer, parse_script};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Instant;
use support::{git, harrow_run, measured, repo_with_readme};

const CHAINS: usize = 3;
const PER_CHAIN: usize = 4;
const DELAY_MS: u64 = 300;

/// What one run measured.
struct Measured {
    wall_s: f64,
    cpu_s: f64,
    /// The part of `cpu_s` spent in harrow's own code and libraries, not the kernel.
    user_s: f64,
    max_rss_mb: f64,
    model_calls: usize,
    verdicts: Vec<(String, String)>,
    tree: String,
}

/// Set in the copy of this bench that measures one run: how many lanes it runs with.
const ONE_RUN: &str = "HARROW_LANES_BENCH_RUN";
/// Set with [`ONE_RUN`]: how many files each task reads between writing and submitting.
const READS: &str = "HARROW_LANES_BENCH_READS";

/// The shapes of task measured: files read per task, and how to say it.
const SHAPES: [(usize, &str); 2] = [
    (0, "tasks of 3 calls (a file written, a case, a verdict)"),
    (8, "tasks of 11 calls (8 files read besides, as in loop_overhead)"),
];

fn main() {
    if let Ok(lanes) = std::env::var(ONE_RUN) {
        let reads = std::env::var(READS).map_or(0, |r| r.parse().unwrap());
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let script = parse_script(&script(reads).to_string()).unwrap();
        let server = runtime.block_on(ScriptedServer::start(script, false)).unwrap();
        let m = run(&server.base_url(), lanes.parse().unwrap());
        println!(
            "{}",
            json!([m.wall_s, m.cpu_s, m.user_s, m.max_rss_mb, m.model_calls, m.verdicts, m.tree])
        );
        return;
    }
    for (reads, shape) in SHAPES {
        compare(reads, shape);
    }
}

/// Runs the plan with one lane and with three, alternating, and prints what they measured.
fn compare(reads: usize, shape: &str) {
    // Each run is measured in a copy of this process of its own, so the peak memory of its
    // children is that run's `harrow` alone.
    let measure = |lanes: u64| {
        let out = Command::new(std::env::current_exe().unwrap())
            .env(ONE_RUN, lanes.to_string())
            .env(READS, reads.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.trim().lines().last().unwrap()).unwrap();
        Measured {
            wall_s: v[0].as_f64().unwrap(),
            cpu_s: v[1].as_f64().unwrap(),
            user_s: v[2].as_f64().unwrap(),
            max_rss_mb: v[3].as_f64().unwrap(),
            model_calls: usize::try_from(v[4].as_u64().unwrap()).unwrap(),
            verdicts: serde_json::from_value(v[5].clone()).unwrap(),
            tree: v[6].as_str().unwrap().to_owned(),
        }
    };
    // The kernel's share of a run (ext4 finding inodes for git's lock files) swings from run
    // to run, so the runs alternate and each figure is the median of its runs.
    let (mut ones, mut threes) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ones.push(measure(1));
        threes.push(measure(3));
    }
    for m in ones.iter().chain(&threes) {
        assert_eq!(m.verdicts, ones[0].verdicts, "the same verdicts per task");
        assert_eq!(m.tree, ones[0].tree, "the same final tree");
    }
    let (one, three) = (Summary::of(&ones), Summary::of(&threes));
    println!("{shape}:");
    for (lanes, m) in [(1, &one), (3, &three)] {
        println!(
            "--lanes {lanes} (median of {ROUNDS}): {:.2} s wall, {:.2} ms harness CPU per model call (range {:.2}–{:.2}; {:.2} ms of it in user space; {} calls), peak {:.1} MB",
            m.wall_s,
            m.cpu_ms_per_call,
            m.cpu_range.0,
            m.cpu_range.1,
            m.user_ms_per_call,
            m.model_calls,
            m.max_rss_mb
        );
    }
    println!(
        "--lanes 3 takes {:.2}× the wall time of --lanes 1 and {:.2}× its CPU per model call; memory {:+.1} MB per extra lane; same verdicts and tree",
        three.wall_s / one.wall_s,
        three.cpu_ms_per_call / one.cpu_ms_per_call,
        (three.max_rss_mb - one.max_rss_mb) / 2.0
    );
}

/// How many runs of each are measured.
const ROUNDS: usize = 5;

/// The medians of several runs of one setting.
struct Summary {
    wall_s: f64,
    cpu_ms_per_call: f64,
    cpu_range: (f64, f64),
    user_ms_per_call: f64,
    max_rss_mb: f64,
    model_calls: usize,
}

impl Summary {
    fn of(runs: &[Measured]) -> Summary {
        let median = |f: &dyn Fn(&Measured) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let per_call = |m: &Measured| m.cpu_s * 1000.0 / m.model_calls as f64;
        let all: Vec<f64> = runs.iter().map(per_call).collect();
        Summary {
            wall_s: median(&|m| m.wall_s),
            cpu_ms_per_call: median(&per_call),
            cpu_range: (
                all.iter().copied().fold(f64::INFINITY, f64::min),
                all.iter().copied().fold(0.0, f64::max),
            ),
            user_ms_per_call: median(&|m| m.user_s * 1000.0 / m.model_calls as f64),
            max_rss_mb: median(&|m| m.max_rss_mb),
            model_calls: runs[0].model_calls,
        }
    }
}

/// Task `n` of the plan: the first of a chain depends on nothing, the others on the one before.
fn depends(n: usize) -> String {
    if (n - 1).is_multiple_of(PER_CHAIN) { "[]".into() } else { format!("[T-{:03}]", n - 1) }
}

/// The model's script: each task writes its file, reads `reads` files, submits its case; every
/// verdict is an accept.
fn script(reads: usize) -> Value {
    let mut worker = serde_json::Map::new();
    for n in 1..=CHAINS * PER_CHAIN {
        let case = json!({"summary": format!("Wrote f{n}.txt."), "ac_coverage": [{"criterion": format!("f{n}.txt exists"), "addressed_by": format!("f{n}.txt:1")}]});
        let write = json!({"delay_ms": DELAY_MS, "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]});
        // Each read a little different, as in loop_overhead: the same call again and again is
        // a loop, which holds the task.
        let read = |n: usize| json!({"delay_ms": DELAY_MS, "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md", "start_line": 1, "end_line": n + 1}}]});
        let submit = json!({"delay_ms": DELAY_MS, "tool_calls": [{"name": "submit_case", "arguments": case}]});
        let turns: Vec<Value> = std::iter::once(write)
            .chain((0..reads).map(read))
            .chain(std::iter::once(submit))
            .collect();
        worker.insert(format!("T-{n:03}"), json!({"*": turns}));
    }
    // Witnessed as the default gate asks: the task's file, as it reads.
    let accept = json!({"delay_ms": DELAY_MS, "tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Meets it.", "evidence": ["f{{task_n}}.txt:1"], "next_step": null, "witnesses": [{"criterion": 1, "code": "f{{task_n}}.txt:1", "quote": "{{task_n}}"}]}}]});
    json!({"worker": worker, "evaluator": {"*": {"*": [accept]}}})
}

fn run(base_url: &str, lanes: u64) -> Measured {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo_with_readme(tmp.path());
    let plan = tmp.path().join("plan");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::write(plan.join("overview.md"), "# Lanes bench\n").unwrap();
    for n in 1..=CHAINS * PER_CHAIN {
        let text = format!(
            "---\nid: T-{n:03}\ntitle: Write file {n}\ndepends_on: {}\n---\n## Description\nCreate f{n}.txt.\n\n## Acceptance criteria\n- f{n}.txt exists\n",
            depends(n)
        );
        std::fs::write(plan.join(format!("T-{n:03}.md")), text).unwrap();
    }
    let started = Instant::now();
    let (out, cpu) = measured(
        harrow_run(tmp.path(), base_url, &plan, &repo)
            .args(["--headless", "--no-validators", "--no-preflight"])
            .args(["--lanes", &lanes.to_string()]),
    );
    let wall_s = started.elapsed().as_secs_f64();
    if !out.status.success() {
        let kept = tmp.keep();
        panic!(
            "the run failed (its folders are kept in {}): {}{}",
            kept.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (cpu_s, user_s, max_rss_mb) = (cpu.user_s + cpu.kernel_s, cpu.user_s, cpu.max_rss_mb);
    let session = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let log = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    let events: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let model_calls = events.iter().filter(|e| e["type"] == "model_call").count();
    let mut verdicts: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "evaluator_verdict")
        .map(|e| {
            let p = &e["payload"];
            (p["task_id"].as_str().unwrap().to_owned(), p["verdict"].as_str().unwrap().to_owned())
        })
        .collect();
    verdicts.sort();
    let tree = git(&repo, &["rev-parse", &format!("session/{id}^{{tree}}")]);
    Measured { wall_s, cpu_s, user_s, max_rss_mb, model_calls, verdicts, tree }
}
