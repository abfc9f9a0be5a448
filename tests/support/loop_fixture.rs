//! A whole run on a real repository against the scripted model server.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use super::support::git;
use harrow::brain::client::{BrainConfig, Endpoint, Role};
use harrow::brain::scripted::{Received, ScriptedServer, parse_script};
use harrow::cli::run::{Start, create_session};
use harrow::hands::HandsConfig;
use harrow::hands::isolation::SandboxMode;
use harrow::hands::validators::ValidatorSpec;
use harrow::harness::plan;
use harrow::harness::run::{Ended, RunOptions};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const KEY: &str = "sk-loop-test-key-never-logged-7319";

/// A repository with one commit and a plan of `tasks` tasks.
pub fn repo_and_plan(tmp: &Path, tasks: usize) -> (PathBuf, PathBuf) {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "# Rules\nKeep files small.\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    let plan = tmp.join("plan");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::write(plan.join("overview.md"), "# Demo\nA tiny feature.\n").unwrap();
    for n in 1..=tasks {
        let text = format!(
            "---\nid: T-00{n}\ntitle: Write file {n}\n---\n## Description\nCreate f{n}.txt.\n\n## Acceptance criteria\n- f{n}.txt exists and says {n}\n"
        );
        std::fs::write(plan.join(format!("T-00{n}-file.md")), text).unwrap();
    }
    (repo, plan)
}

/// Worker turns that write a file, then submit a case for it.
pub fn write_and_submit(n: usize) -> Value {
    json!([
        {"reasoning": format!("SECRET-WORKER-REASONING-{n}"), "content": "I will write the file.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{n}.txt"), "content": format!("{n}\n")}}]},
        {"tool_calls": [{"name": "submit_case", "arguments": case(n)}]}
    ])
}

/// `tasks` tasks that write and submit at once, but the worker's first reply on T-001 takes
/// `delay_ms` (on a server started with delays kept); every verdict accepts.
pub fn slow_first_task(tasks: usize, delay_ms: u64) -> Value {
    let mut worker = serde_json::Map::new();
    for n in 1..=tasks {
        let mut turns = write_and_submit(n);
        if n == 1 {
            turns[0]["delay_ms"] = json!(delay_ms);
        }
        worker.insert(format!("T-{n:03}"), json!({"*": turns}));
    }
    json!({"worker": worker, "evaluator": {"*": {"*": [accept()]}}})
}

pub fn case(n: usize) -> Value {
    json!({"summary": format!("Wrote f{n}.txt."), "ac_coverage": [{"criterion": format!("f{n}.txt exists and says {n}"), "addressed_by": format!("f{n}.txt:1")}]})
}

/// An accept whose witness is the first line of the task's file (`f2.txt` says `2` for
/// T-002): the code witness every task of [`repo_and_plan`] can give.
pub fn accept() -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Meets the criterion.", "evidence": ["f{{task_n}}.txt:1"], "next_step": null, "witnesses": [{"criterion": 1, "code": "f{{task_n}}.txt:1", "quote": "{{task_n}}"}]}}]})
}

/// [`accept`] for a plan whose tasks have up to `criteria` acceptance criteria (the demo's):
/// the task's file witnesses each.
pub fn accept_each(criteria: u64) -> Value {
    let mut v = accept();
    let witnesses: Vec<Value> = (1..=criteria)
        .map(|n| json!({"criterion": n, "code": "f{{task_n}}.txt:1", "quote": "{{task_n}}"}))
        .collect();
    v["tool_calls"][0]["arguments"]["witnesses"] = json!(witnesses);
    v
}

/// An accept whose witness is line 1 of `path`, reading `quote`: for a task whose file is not
/// [`repo_and_plan`]'s.
pub fn accept_quoting(path: &str, quote: &str) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "accept", "rejection_category": null, "concern": "Meets the criterion.", "evidence": [format!("{path}:1")], "next_step": null, "witnesses": [{"criterion": 1, "code": format!("{path}:1"), "quote": quote}]}}]})
}

pub fn reject(category: &str) -> Value {
    json!({"tool_calls": [{"name": "submit_verdict", "arguments": {"verdict": "reject", "rejection_category": category, "concern": "The file lacks a trailing note.", "evidence": ["f1.txt:1"], "next_step": "Append the line 'checked' to the file."}}]})
}

/// The outcome of a run, with everything a test inspects.
pub struct Outcome {
    pub ended: Ended,
    pub dir: PathBuf,
    pub repo: PathBuf,
    pub received: Vec<Received>,
    pub events: Vec<Value>,
}

impl Outcome {
    pub fn kinds(&self) -> Vec<String> {
        self.events.iter().map(|e| e["type"].as_str().unwrap_or("").to_owned()).collect()
    }

    pub fn of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).map(|e| &e["payload"]).collect()
    }

    pub fn requests(&self, role: &str) -> Vec<&Received> {
        self.received.iter().filter(|r| r.role == role).collect()
    }
}

/// Options for one test run.
pub struct Setup {
    pub tasks: usize,
    pub script: Value,
    pub validators: Vec<ValidatorSpec>,
    pub opts: RunOptions,
    /// Point the evaluator at a port nobody listens on.
    pub dead_evaluator: bool,
    /// Changes the repository and plan before the run (the repository is committed after).
    pub prepare: Option<fn(&Path, &Path)>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            tasks: 1,
            script: json!({}),
            validators: Vec::new(),
            opts: RunOptions::default(),
            dead_evaluator: false,
            prepare: None,
        }
    }
}

pub fn validator(name: &str, command: &str) -> ValidatorSpec {
    ValidatorSpec { name: name.into(), command: command.into(), timeout_secs: 30 }
}

/// Runs a whole session and collects what happened.
pub fn run(tmp: &Path, setup: Setup) -> Outcome {
    let (repo, plan_dir) = repo_and_plan(tmp, setup.tasks);
    if let Some(prepare) = setup.prepare {
        prepare(&repo, &plan_dir);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "prepare", "--allow-empty"]);
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let server = ScriptedServer::start(parse_script(&setup.script.to_string()).unwrap(), true)
            .await
            .unwrap();
        let endpoint = |model: &str, url: String| Endpoint {
            base_url: url,
            api_key: Some(KEY.into()),
            model: model.into(),
        };
        let evaluator_url = if setup.dead_evaluator {
            "http://127.0.0.1:9/v1".to_owned()
        } else {
            server.base_url()
        };
        let mut brain = BrainConfig::new(BTreeMap::from([
            (Role::Worker, endpoint("scripted/worker", server.base_url())),
            (Role::Learnings, endpoint("scripted/worker", server.base_url())),
            (Role::Evaluator, endpoint("scripted/evaluator", evaluator_url)),
        ]));
        brain.backoff_base = Duration::from_millis(5);
        let start = Start {
            plan: plan::load(&plan_dir).unwrap(),
            repo: repo.clone(),
            hands: HandsConfig { sandbox: SandboxMode::Off, ..HandsConfig::default() },
            validators: Some(setup.validators),
            brain,
            opts: setup.opts,
            sessions_dir: tmp.join("sessions"),
            work_root: None,
            windows: Vec::new(),
            demo: None,
        };
        let mut run = create_session(start).unwrap();
        let dir = run.facts().dir.clone();
        let ended = run.run().await.unwrap();
        drop(run);
        let events = super::support::strict_events(&dir);
        Outcome { ended, dir, repo, received: server.received(), events }
    })
}

/// Serves a script on a runtime of its own, for tests that run the binary; both live as long
/// as the returned pair. `fast` drops the script's delays.
pub fn serve(script: &Value, fast: bool) -> (tokio::runtime::Runtime, ScriptedServer) {
    let options = harrow::brain::scripted::Options { fast, ..Default::default() };
    serve_with(script, options)
}

/// [`serve`] with the server's other behaviour (a window it states or enforces, no usage…).
pub fn serve_with(
    script: &Value,
    options: harrow::brain::scripted::Options,
) -> (tokio::runtime::Runtime, ScriptedServer) {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime
        .block_on(ScriptedServer::start_with(parse_script(&script.to_string()).unwrap(), options))
        .unwrap();
    (runtime, server)
}

/// Writes `text` as the configuration harrow reads under `tmp` (`XDG_CONFIG_HOME`).
pub fn configure_models(tmp: &Path, text: &str) {
    std::fs::create_dir_all(tmp.join("harrow")).unwrap();
    std::fs::write(tmp.join("harrow/config.toml"), text).unwrap();
}

/// The one session folder under `tmp/sessions`.
pub fn only_session(tmp: &Path) -> PathBuf {
    std::fs::read_dir(tmp.join("sessions")).unwrap().next().unwrap().unwrap().path()
}

/// [`headless_run`] against `base_url`, which must succeed: its standard output.
pub fn headless_ok(tmp: &Path, base_url: &str, plan: &Path, repo: &Path) -> String {
    let out = headless_run(harrow_cmd(tmp, base_url), plan, repo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// `harrow run PLAN --repo REPO --headless --no-validators` on `cmd`: how the binary's tests
/// start a run.
pub fn headless_run(
    mut cmd: std::process::Command,
    plan: &Path,
    repo: &Path,
) -> std::process::Command {
    cmd.args([
        "run",
        plan.to_str().unwrap(),
        "--repo",
        repo.to_str().unwrap(),
        "--headless",
        "--no-validators",
    ]);
    cmd
}

/// The first session folder under `sessions` once its log holds `needle`: a run started in
/// the background has got that far. Fails the test after 30 s.
pub fn session_when_log_has(sessions: &Path, needle: &str) -> PathBuf {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(Ok(entry)) = std::fs::read_dir(sessions).ok().and_then(|mut d| d.next())
            && std::fs::read_to_string(entry.path().join("events.jsonl"))
                .is_ok_and(|t| t.contains(needle))
        {
            return entry.path();
        }
        assert!(std::time::Instant::now() < deadline, "no session's log holds {needle}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The real binary, pointed at a model endpoint, with sessions and configuration kept inside
/// the test's folder.
pub fn harrow_cmd(tmp: &Path, base_url: &str) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harrow"));
    c.env("HARROW_BASE_URL", base_url)
        .env("HARROW_WORKER_MODEL", "scripted/worker")
        .env("HARROW_API_KEY", "sk-binary-test")
        .env("HARROW_SESSIONS_DIR", tmp.join("sessions"))
        .env("XDG_CONFIG_HOME", tmp)
        .env_remove("HARROW_CONFIG")
        .env_remove("HARROW_EVALUATOR_BASE_URL")
        .env_remove("HARROW_EVALUATOR_MODEL");
    c
}

/// Every file under a folder, as text, for "this never appears anywhere" checks.
pub fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in walk(dir) {
        if let Ok(t) = std::fs::read_to_string(&entry) {
            out.push_str(&t);
        }
    }
    out
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

/// Two tasks whose evaluator refuses the key once on T-001 (held for a person, not retried)
/// and accepts T-002.
pub fn first_of_two_refused_once() -> Value {
    let refused = json!({"http_status": 401, "times": 1, "tool_calls": accept()["tool_calls"]});
    json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-001": {"1": [refused]}, "T-002": {"1": [accept()]}}
    })
}

/// Two tasks whose evaluator answers only T-002: with the evaluator out of reach at first,
/// T-001 is held for the operator.
pub fn first_of_two_held() -> Value {
    json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-002": {"1": [accept()]}}
    })
}

/// Gives task `n` of a plan from [`repo_and_plan`] its `depends_on` list: the plan becomes a
/// graph.
pub fn depends(plan: &Path, n: usize, deps: &str) {
    let file = plan.join(format!("T-00{n}-file.md"));
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replacen(
        "---\n## Description",
        &format!("depends_on: {deps}\n---\n## Description"),
        1,
    );
    std::fs::write(&file, text).unwrap();
}

/// The payloads of a session's events of `kind`, its log held to the strict decoder.
pub fn events_of(dir: &Path, kind: &str) -> Vec<Value> {
    super::support::strict_events(dir)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["payload"].clone())
        .collect()
}

/// Waits, up to a minute, until a session's log holds an event of `kind`.
pub fn until_logged(dir: &Path, kind: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(dir.join("events.jsonl"))
        .map_or(true, |t| !t.contains(&format!("\"type\":\"{kind}\"")))
    {
        assert!(std::time::Instant::now() < deadline, "no {kind} was logged");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The real binary running `plan` on `repo` headless with `args` against `base_url`, once its
/// log says a task waits for the operator: the running child (reaped if the test fails), its
/// session folder and id.
pub fn held_run(
    tmp: &Path,
    base_url: &str,
    (plan, repo): (&Path, &Path),
    args: &[&str],
    stdout: std::process::Stdio,
) -> (super::support::Reaped, PathBuf, String) {
    let child = super::support::Reaped(
        headless_run(harrow_cmd(tmp, base_url), plan, repo)
            .args(args)
            .stdout(stdout)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = session_when_log_has(&tmp.join("sessions"), "context_reset");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    until_logged(&dir, "operator_wait");
    (child, dir, id)
}

/// One task worked through the real binary, headless and without validators, its worker
/// answering `turns` and its evaluator accepting (the server's delays dropped): how the run
/// ended, and the server, to read what it was sent.
pub fn one_task_run(
    tmp: &Path,
    turns: &[Value],
) -> (std::process::Output, (tokio::runtime::Runtime, ScriptedServer)) {
    let (repo, plan) = repo_and_plan(tmp, 1);
    let script =
        json!({"worker": {"T-001": {"1": turns}}, "evaluator": {"T-001": {"1": [accept()]}}});
    let served = serve(&script, true);
    // The worker's side is what these runs are about: the evaluator's word is taken.
    let out = headless_run(harrow_cmd(tmp, &served.1.base_url()), &plan, &repo)
        .args(["--evidence", "off"])
        .output()
        .unwrap();
    (out, served)
}
