//! 20-task runs against the scripted model at zero delay, with 10 and with 30 worker
//! iterations per task (each a real `read_file` call): the whole run's time, the marginal cost
//! of one more iteration (model round trip and tool included), and the cost of a task boundary
//! (commit, fsyncs, atomic rewrites). Then the same 10-iteration plan run by the `harrow`
//! binary as its own process with the default settings, against the scripted model in this
//! one: the harness's CPU per model call, start-up included, as the kernel counts it for that
//! process. `cargo bench --bench loop_overhead`

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use harrow::brain::client::{BrainConfig, Endpoint, Role};
use harrow::brain::scripted::{ScriptedServer, parse_script};
use harrow::cli::run::{Start, create_session};
use harrow::hands::HandsConfig;
use harrow::hands::isolation::SandboxMode;
use harrow::harness::plan;
use harrow::harness::run::RunOptions;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Instant;

const TASKS: usize = 20;

fn main() {
    // A short run of Tilth's size (4 tasks, 36 calls), where start-up weighs on every call,
    // then a long one. The kernel's share moves from run to run with what the disk went
    // through just before (a file created costs more right after many were removed), so the
    // short run, the budget's, is run several times and its median given with its range,
    // after what creating a file costs the kernel where the runs are made.
    let (per_file, folder) = creating_a_file();
    println!(
        "creating a file where these runs are made costs {per_file:.1} µs of CPU, nearly all the kernel's (the mean of 150)"
    );
    short_runs(7);
    drop(folder);
    with_history();
    let (cpu, _) = whole_process(TASKS, 10);
    println!(
        "harrow run as a process, {TASKS} tasks × 11 model calls, default settings: {}",
        cpu.line()
    );
    let short = run(10);
    let long = run(30);
    let marginal = (long - short) / (TASKS as f64 * 20.0);
    let per_task = (short - marginal * TASKS as f64 * 10.0) / TASKS as f64;
    println!(
        "20 tasks: {:.2} s with 10 iterations each, {:.2} s with 30; one more iteration costs {:.3} ms (loopback model request + read_file + its events); a task boundary costs {:.1} ms",
        short,
        long,
        marginal * 1000.0,
        per_task * 1000.0
    );
}

/// A repository with one commit and a plan of [`TASKS`] tasks, and the script the model follows
/// for them: a file written, `iterations - 2` files read, a case; every verdict an accept.
fn setup(
    root: &std::path::Path,
    tasks: usize,
    iterations: usize,
) -> (std::path::PathBuf, std::path::PathBuf, serde_json::Value) {
    setup_on(support::repo_with_readme(root), root, tasks, iterations)
}

/// [`setup`] on the repository `repo`, which has a README.
fn setup_on(
    repo: std::path::PathBuf,
    root: &std::path::Path,
    tasks: usize,
    iterations: usize,
) -> (std::path::PathBuf, std::path::PathBuf, serde_json::Value) {
    let plan_dir = root.join("plan");
    std::fs::create_dir_all(&plan_dir).unwrap();
    std::fs::write(plan_dir.join("overview.md"), "# Bench\n").unwrap();
    let mut worker = serde_json::Map::new();
    for t in 1..=tasks {
        std::fs::write(plan_dir.join(format!("T-{t:03}-x.md")), format!("---\nid: T-{t:03}\ntitle: Task {t}\n---\n## Acceptance criteria\n- f{t}.txt exists\n")).unwrap();
        let mut turns = vec![
            json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{t}.txt"), "content": "x\n"}}]}),
        ];
        // Each read a little different: the same call again and again is a loop, which holds.
        for n in 0..iterations - 2 {
            let args = json!({"path": "README.md", "start_line": 1, "end_line": n + 1});
            turns.push(json!({"tool_calls": [{"name": "read_file", "arguments": args}]}));
        }
        turns.push(json!({"tool_calls": [{"name": "submit_case", "arguments": {"summary": "done", "ac_coverage": [{"criterion": "c", "addressed_by": format!("f{t}.txt:1")}]}}]}));
        worker.insert(format!("T-{t:03}"), json!({"1": turns}));
    }
    // Witnessed as the default gate asks: the task's file, as it reads.
    let accept = json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "ok", "evidence": [], "next_step": null, "witnesses": [{"criterion": 1, "code": "f{{task_n}}.txt:1", "quote": "x"}]}}]});
    (repo, plan_dir, json!({"worker": worker, "evaluator": {"*": {"*": [accept]}}}))
}

/// The short run `runs` times: the median of its CPU per model call, and the range.
fn short_runs(runs: usize) {
    // The repositories are made first and run on only once they are older than the guard's
    // settling time (its stamps of a file changed within the last second or two are not
    // trusted, so a repository made the instant before a run has every hook and its config
    // read again at each record): a user's repository is not made the second before harrow
    // starts on it. Each run's folder is removed only after the last run: ext4 without a
    // journal (this machine's disk) passes over every inode removed in the last minutes when
    // it creates a file, so one run's clean-up would be paid by the next run's files.
    let made: Vec<Prepared> =
        (0..runs).map(|_| prepare(tempfile::tempdir().unwrap(), None, 4, 8)).collect();
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let mut folders = Vec::new();
    let mut all: Vec<PerCall> = made
        .into_iter()
        .map(|prepared| {
            let (cpu, folder) = run_prepared(prepared, &[]);
            folders.push(folder);
            cpu
        })
        .collect();
    all.sort_by(|a, b| a.total().total_cmp(&b.total()));
    let (low, median, high) = (all[0].total(), &all[runs / 2], all[runs - 1].total());
    println!(
        "harrow run as a process, 4 tasks × 9 model calls, default settings, median of {runs} runs: {} (range {low:.2}–{high:.2} ms)",
        median.line()
    );
}

/// The CPU time, in microseconds, to create one small file in a new folder of the
/// temporary folder the runs use: what each file a run creates costs there before harrow does
/// anything with it. On ext4 without a journal it grows with how many inodes of the folder's
/// group were removed in the last minutes (the kernel passes over each), from a few
/// microseconds to a millisecond; on a memory file system it is a few. The folder is given
/// back to be removed after the runs, whose files would pay for its removal.
fn creating_a_file() -> (f64, tempfile::TempDir) {
    use nix::sys::resource::{UsageWho, getrusage};
    // The thread's whole CPU time: the kernel charges it exactly, while its split between user
    // space and the kernel is estimated from clock ticks, too coarse for 150 files (a kernel
    // share of 0.0 µs was printed).
    let cpu_us = || {
        let usage = getrusage(UsageWho::RUSAGE_THREAD).unwrap();
        let us = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e6 + t.tv_usec() as f64;
        us(usage.user_time()) + us(usage.system_time())
    };
    let folder = tempfile::tempdir().unwrap();
    let before = cpu_us();
    for n in 0..150 {
        std::fs::write(folder.path().join(format!("f{n}")), "x").unwrap();
    }
    ((cpu_us() - before) / 150.0, folder)
}

/// The short run on a clone of harrow's own repository, whose history (hundreds of commits)
/// is what a session's start may not copy or walk.
fn with_history() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let own = env!("CARGO_MANIFEST_DIR");
    support::git(tmp.path(), &["clone", "-q", "--no-hardlinks", own, repo.to_str().unwrap()]);
    let commits = support::git(&repo, &["rev-list", "--count", "HEAD"]);
    // Its own validators (clippy, the tests) would be measured too. Run once the clone has
    // settled, as the short runs are.
    let prepared = prepare(tmp, Some(repo), 4, 8);
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let (cpu, _) = run_prepared(prepared, &["--no-validators"]);
    println!(
        "the same on a clone of harrow's own repository ({commits} commits), --no-validators: {}",
        cpu.line()
    );
}

/// A run's CPU per model call, in user space and in the kernel, in milliseconds.
struct PerCall {
    user: f64,
    kernel: f64,
}

impl PerCall {
    fn total(&self) -> f64 {
        self.user + self.kernel
    }

    fn line(&self) -> String {
        format!(
            "{:.2} ms of CPU per model call ({:.2} ms in user space, {:.2} ms in the kernel), start-up included",
            self.total(),
            self.user,
            self.kernel
        )
    }
}

/// Runs the plan with the `harrow` binary, default settings, and gives its CPU per model
/// call: every cost of the process (start-up, loading, the sandbox's probe, git, the session's
/// files) divided among the calls it made; and the run's folder, removed when dropped.
fn whole_process(tasks: usize, iterations: usize) -> (PerCall, tempfile::TempDir) {
    run_prepared(prepare(tempfile::tempdir().unwrap(), None, tasks, iterations), &[])
}

/// A run's folder with its repository, plan and the script the model follows, ready to run.
struct Prepared {
    tmp: tempfile::TempDir,
    repo: std::path::PathBuf,
    plan_dir: std::path::PathBuf,
    script: serde_json::Value,
    calls: usize,
}

/// Makes a run's repository (on `repo` when given, else a new one with a README) and plan in
/// `tmp`.
fn prepare(
    tmp: tempfile::TempDir,
    repo: Option<std::path::PathBuf>,
    tasks: usize,
    iterations: usize,
) -> Prepared {
    let (repo, plan_dir, script) = match repo {
        Some(repo) => setup_on(repo, tmp.path(), tasks, iterations),
        None => setup(tmp.path(), tasks, iterations),
    };
    Prepared { tmp, repo, plan_dir, script, calls: tasks * (iterations + 1) }
}

/// Runs a prepared plan with the `harrow` binary and `flags`: its CPU per model call, and
/// the run's folder, removed when dropped.
fn run_prepared(prepared: Prepared, flags: &[&str]) -> (PerCall, tempfile::TempDir) {
    let Prepared { tmp, repo, plan_dir, script, calls } = prepared;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime
        .block_on(ScriptedServer::start(parse_script(&script.to_string()).unwrap(), true))
        .unwrap();
    let (out, cpu) = support::measured(
        support::harrow_run(tmp.path(), &server.base_url(), &plan_dir, &repo)
            .arg("--headless")
            .args(flags),
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.received().len(), calls);
    let per_call = |s: f64| s * 1000.0 / calls as f64;
    (PerCall { user: per_call(cpu.user_s), kernel: per_call(cpu.kernel_s) }, tmp)
}

/// Runs the whole session and returns its wall time in seconds.
fn run(iterations: usize) -> f64 {
    let tmp = tempfile::tempdir().expect("tmp");
    let (repo, plan_dir, script) = setup(tmp.path(), TASKS, iterations);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move {
        let server =
            ScriptedServer::start(parse_script(&script.to_string()).unwrap(), true).await.unwrap();
        let endpoint =
            Endpoint { base_url: server.base_url(), api_key: None, model: "scripted".into() };
        let brain = BrainConfig::new(BTreeMap::from([
            (Role::Worker, endpoint.clone()),
            (Role::Evaluator, endpoint),
        ]));
        let start = Start {
            plan: plan::load(&plan_dir).unwrap(),
            repo: repo.clone(),
            hands: HandsConfig { sandbox: SandboxMode::Off, ..HandsConfig::default() },
            validators: Some(Vec::new()),
            brain,
            opts: RunOptions::default(),
            sessions_dir: tmp.path().join("sessions"),
            work_root: None,
            windows: Vec::new(),
            demo: None,
        };
        let mut run = create_session(start).unwrap();
        let started = Instant::now();
        let ended = run.run().await.unwrap();
        let elapsed = started.elapsed();
        assert!(ended.success(), "{ended:?}");
        assert_eq!(server.received().len(), TASKS * (iterations + 1));
        elapsed.as_secs_f64()
    })
}
