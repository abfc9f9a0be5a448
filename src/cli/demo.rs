//! `harrow demo`: the whole product with no key and no network. A bundled dependency-free Rust
//! crate and a three-task plan, worked by the built-in scripted model over a real loopback HTTP
//! endpoint, with real `cargo test` validators. The session is an ordinary one: `show`,
//! `replay`, `watch` and `resume` work on it.

use super::UsageError;
use super::run::{Start, create_session, drive, drive_console};
use crate::brain::client::{BrainConfig, Endpoint, Role};
use crate::brain::scripted::{ScriptedServer, parse_script};
use crate::config::Config;
use crate::hands::HandsConfig;
use crate::hands::validators::ValidatorSpec;
use crate::harness::plan;
use crate::harness::run::RunOptions;
use crate::session::{discover, timestamp};
use color_eyre::eyre::{Result, WrapErr};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The demo's one validator: its repository's tests, offline. A resumed demo session runs this,
/// from the binary, not what its folder recorded.
pub fn validator() -> ValidatorSpec {
    ValidatorSpec {
        name: "tests".into(),
        command: "cargo test --quiet --offline".into(),
        timeout_secs: 300,
    }
}

/// The scripted model's answers, keyed by role, task, attempt and turn.
pub const SCRIPT: &str = include_str!("../../assets/demo/script.json");

/// The interview's turns for `demo --prep`, and the person's answers to it.
const PREP_SCRIPT: &str = include_str!("../../assets/demo/prep.json");
const PREP_ANSWERS: &str = include_str!("../../assets/demo/prep-answers.txt");
const PREP_BRIEF: &str = "A small library that describes a text, for a command-line tool to use.";

/// The demo repository's files, and the plan (kept in the repository, as Tilth keeps its own).
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../assets/demo/repo/Cargo.toml")),
    ("src/lib.rs", include_str!("../../assets/demo/repo/src/lib.rs")),
    ("AGENTS.md", include_str!("../../assets/demo/repo/AGENTS.md")),
    (".gitignore", include_str!("../../assets/demo/repo/gitignore")),
    (".harrow/textstats/overview.md", include_str!("../../assets/demo/plan/overview.md")),
    (
        ".harrow/textstats/T-001-word-count.md",
        include_str!("../../assets/demo/plan/T-001-word-count.md"),
    ),
    (
        ".harrow/textstats/T-002-char-frequencies.md",
        include_str!("../../assets/demo/plan/T-002-char-frequencies.md"),
    ),
    (
        ".harrow/textstats/T-003-longest-word.md",
        include_str!("../../assets/demo/plan/T-003-longest-word.md"),
    ),
];

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one line per significant event instead of opening the console.
    #[arg(long)]
    pub headless: bool,
    /// Drop the scripted model's pauses (they are there so a person can follow along).
    #[arg(long)]
    pub fast: bool,
    /// Begin with the interview that writes the plan (`harrow prep`), then run that plan.
    #[arg(long)]
    pub prep: bool,
}

/// The demo's person in the interview: answers from the bundled list, shown as they are given.
struct Scripted {
    answers: crate::prep::Answers,
    pause: std::time::Duration,
}

impl crate::prep::Person for Scripted {
    fn answer(&mut self, question: &str) -> Option<String> {
        println!("\nprep asks: {}", crate::printable::text(question.trim()));
        std::thread::sleep(self.pause);
        let answer = self.answers.0.pop_front()?;
        println!("you answer: {answer}");
        Some(answer)
    }
}

/// Writes the demo repository and commits it; without `with_plan` the plan is left for the
/// interview to write.
fn make_repo(dir: &Path, with_plan: bool) -> Result<()> {
    for (path, text) in FILES.iter().filter(|(p, _)| with_plan || !p.starts_with(".harrow/")) {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, text)?;
    }
    let repo = git2::Repository::init(dir)?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("harrow", "harrow@localhost")?;
    repo.commit(Some("HEAD"), &sig, &sig, "textstats: an empty library", &tree, &[])?;
    Ok(())
}

/// The demo's repository: the cached `textstats` while it still holds exactly the bundled
/// files with nothing uncommitted, else a new one (the first time, the cached one). A `--prep`
/// demo commits its plan into its repository, so it always gets a new one.
fn demo_repo(repos: &Path, prep: bool) -> Result<PathBuf> {
    let cached = repos.join("textstats");
    if !prep && holds_the_bundle(&cached) {
        return Ok(cached);
    }
    let repo = if prep || cached.exists() {
        repos.join(format!("textstats-{}", timestamp::new_session_id()))
    } else {
        cached
    };
    std::fs::create_dir_all(&repo).map_err(|e| {
        UsageError(format!(
            "cannot create {}: {e}; point HARROW_SESSIONS_DIR at a folder you can write to",
            repo.display()
        ))
    })?;
    make_repo(&repo, !prep)
        .wrap_err_with(|| format!("cannot create the demo repository in {}", repo.display()))?;
    Ok(repo)
}

/// Whether `dir` is a demo repository as this build bundles it, clean.
fn holds_the_bundle(dir: &Path) -> bool {
    let Ok(repo) = git2::Repository::open(dir) else { return false };
    let Ok(tree) = repo.head().and_then(|h| h.peel_to_tree()) else { return false };
    let same = FILES.iter().all(|(path, text)| {
        tree.get_path(Path::new(path))
            .and_then(|entry| entry.to_object(&repo))
            .is_ok_and(|o| o.as_blob().is_some_and(|b| b.content() == text.as_bytes()))
    });
    same && repo.statuses(None).is_ok_and(|s| s.is_empty())
}

/// The scripted model on a runtime of its own, for as long as the pair lives.
/// The context window the demo's scripted model says it has.
const DEMO_WINDOW: u64 = 16_384;

pub fn start_model(fast: bool) -> Result<(tokio::runtime::Runtime, ScriptedServer)> {
    let broken = |e: String| UsageError(format!("the bundled demo script is broken: {e}"));
    let mut merged: serde_json::Value =
        serde_json::from_str(SCRIPT).map_err(|e| broken(e.to_string()))?;
    let prep: serde_json::Value =
        serde_json::from_str(PREP_SCRIPT).map_err(|e| broken(e.to_string()))?;
    if let (Some(all), Some(extra)) = (merged.as_object_mut(), prep.as_object()) {
        all.extend(extra.clone());
    }
    let script = parse_script(&merged.to_string()).map_err(broken)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    // Answers `/props` as a llama.cpp server with a 16k window would, so the demo shows how
    // full the worker's window is.
    let options = crate::brain::scripted::Options {
        fast,
        props: Some(serde_json::json!({"default_generation_settings": {"n_ctx": DEMO_WINDOW}})),
        ..crate::brain::scripted::Options::default()
    };
    let server = runtime.block_on(ScriptedServer::start_with(script, options))?;
    Ok((runtime, server))
}

/// Every role pointed at the scripted model.
pub fn endpoints(base_url: &str) -> BTreeMap<Role, Endpoint> {
    let at = |model: &str| Endpoint {
        base_url: base_url.to_owned(),
        api_key: None,
        model: model.into(),
    };
    BTreeMap::from([
        (Role::Worker, at("harrow-demo/worker")),
        (Role::Learnings, at("harrow-demo/worker")),
        (Role::Evaluator, at("harrow-demo/evaluator")),
        (Role::Prep, at("harrow-demo/prep")),
    ])
}

pub fn demo(args: &Args) -> Result<ExitCode> {
    let sessions_dir = discover::harrow_sessions_dir().ok_or_else(|| {
        UsageError("cannot find a data folder for sessions; set HARROW_SESSIONS_DIR".into())
    })?;
    let repos = sessions_dir
        .parent()
        .map_or_else(|| PathBuf::from("harrow-demo"), |p| p.join("demo-repos"));
    let repo = demo_repo(&repos, args.prep)?;
    let (config, _) = Config::load(None).map_err(|e| UsageError(e.to_string()))?;
    let (_runtime, server) = start_model(args.fast)?;
    if args.prep {
        println!("demo repository: {} — first, the interview that writes its plan", repo.display());
        let brain =
            crate::brain::client::Brain::new(BrainConfig::new(endpoints(&server.base_url())))
                .map_err(|e| UsageError(e.to_string()))?;
        let pause = if args.fast {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_millis(1200)
        };
        let mut person = Scripted { answers: crate::prep::Answers::parse(PREP_ANSWERS), pause };
        let how = super::prep::How { accept: true, ask: false, allow_dirty: false, branch: None };
        super::prep::interview(
            &repo,
            "textstats",
            Some(PREP_BRIEF),
            &mut person,
            &brain,
            &config,
            &how,
        )?;
        std::thread::sleep(pause * 2);
    }
    let tests = validator();
    // Every demo run builds into one folder beside the repositories, so its build is made
    // once and not again in each new worktree.
    let hands =
        HandsConfig { build_dir: Some(repos.join("target")), ..config.hands.to_hands_config() };
    let brain_config = BrainConfig::new(endpoints(&server.base_url()));
    let windows = super::run::StartQuestions::new(&brain_config, false, false)?.windows();
    let worker_window = (windows.iter())
        .find(|(r, _)| *r == crate::brain::client::Role::Worker)
        .map(|(_, w)| w.tokens);
    let start = Start {
        plan: plan::load(&repo.join(".harrow/textstats")).map_err(|e| UsageError(e.to_string()))?,
        repo: repo.clone(),
        hands,
        validators: Some(vec![tests]),
        brain: brain_config.clone(),
        // T-002 and T-003 depend only on T-001: after it, they are worked side by side.
        opts: RunOptions { lanes: 2, worker_window, ..RunOptions::default() },
        sessions_dir,
        work_root: config.run.work_root(),
        windows,
        demo: Some(serde_json::json!({"fast": args.fast})),
    };
    println!("demo repository: {}", repo.display());
    let run = create_session(start)?;
    let (dir, id) = (run.facts().dir.clone(), run.facts().id.clone());
    let code = if args.headless { drive(run, 0) } else { drive_console(run) }?;
    if let Some(why) = off_script(&dir) {
        eprintln!(
            "harrow demo: the demo's script did not expect this: {why} — see `harrow show {id}`"
        );
    }
    Ok(code)
}

/// Why a demo run left its script, when it did: the scripted model had no answer for where
/// the run went, and the likeliest cause is the last thing that failed.
fn off_script(dir: &Path) -> Option<String> {
    use crate::session::event::{Event, Payload};
    let text = std::fs::read_to_string(crate::session::dir::SessionDir::new(dir).events()).ok()?;
    let events: Vec<Event> =
        text.lines().filter_map(|l| Event::decode(l.as_bytes()).ok()).collect();
    let error = events.iter().rev().find_map(|e| match &e.payload {
        Payload::Stop(stop) => Some(stop.error.clone().unwrap_or_default()),
        _ => None,
    })?;
    if !error.contains("script did not expect") {
        return None;
    }
    let failed = events.iter().rev().find_map(|e| match &e.payload {
        Payload::ValidatorRun(run) if run.passed == Some(false) => {
            run.results.as_ref()?.iter().find(|r| !r.passed).cloned()
        }
        _ => None,
    });
    Some(match failed {
        Some(r) => {
            let output = r.output.unwrap_or_default();
            let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!(
                "validators failed (`{}`, exit {}: {first}); check the build works here (a sandbox, CARGO_TARGET_DIR, an offline registry)",
                r.command.as_deref().unwrap_or("?"),
                r.exit_code.map_or_else(|| "none".into(), |c| c.to_string()),
            )
        }
        None => "the run went another way than the script".to_owned(),
    })
}
