//! Scale-out as a user meets it, on one machine playing two: each "machine" its own `HOME`,
//! configuration and data folder, one sessions folder shared between them. The first runs a
//! plan from its clone and is stopped with SIGTERM mid-task, as Kubernetes stops a pod; the
//! second finds the run by the short id the fleet shows (through its `[sessions] dirs`),
//! resumes it to the end in a clone of its own — or, when it has none and the first clone is
//! gone, in one harrow makes from the project's address — and opens the pull request on a
//! scripted forge.

use crate::{forge, git_http, loop_fixture, support};

use loop_fixture::{repo_and_plan, serve, write_and_submit};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::git;

const GIT_TOKEN: &str = "canary-scale-git-token-5150";
const FORGE_TOKEN: &str = "canary-scale-forge-token-8088";

/// The project on a smart-HTTP server (`acme/widgets`, token [`GIT_TOKEN`]) with its plan
/// committed under `.harrow/demo`, the shared sessions folder, and a forge that opens pull
/// request 12.
struct World {
    tmp: tempfile::TempDir,
    _git: git_http::GitHttp,
    url: String,
    bare: PathBuf,
    forge: forge::Forge,
    /// Each machine keeps worktrees and builds on its own disk (`HARROW_WORK_DIR`), as a Job
    /// does in its `emptyDir`.
    work_dirs: bool,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let (seed, plan) = repo_and_plan(tmp.path(), 2);
        let inside = seed.join(".harrow/demo");
        std::fs::create_dir_all(&inside).unwrap();
        for f in std::fs::read_dir(&plan).unwrap().flatten() {
            std::fs::copy(f.path(), inside.join(f.file_name())).unwrap();
        }
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-qm", "the plan"]);
        let root = tmp.path().join("srv");
        let server = git_http::GitHttp::start(&root, GIT_TOKEN);
        let bare = git_http::bare_with_main(&root, "acme/widgets.git", &seed);
        let forge = forge::Forge::start(vec![(
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (
                201,
                r#"{"html_url":"https://github.example/acme/widgets/pull/12","number":12}"#.into(),
            ),
        )]);
        let url = server.url("acme/widgets.git");
        World { tmp, _git: server, url, bare, forge, work_dirs: false }
    }

    fn share(&self) -> PathBuf {
        self.tmp.path().join("share")
    }

    /// A clone of the project on `machine`, its `origin` the project's address.
    fn clone_on(&self, machine: &str) -> PathBuf {
        let clone = self.tmp.path().join(machine).join("clone");
        git(
            self.tmp.path(),
            &["clone", "-q", self.bare.to_str().unwrap(), clone.to_str().unwrap()],
        );
        git(&clone, &["remote", "set-url", "origin", &self.url]);
        clone
    }

    /// The binary as `machine` runs it: its own home, configuration and data folder, the
    /// model at `model`, no tokens of the test's machine. The first machine writes its
    /// sessions to the share; the second lists the share in `[sessions] dirs`.
    fn harrow(&self, machine: &str, model: &str) -> Command {
        let home = self.tmp.path().join(machine);
        let config = home.join(".config");
        std::fs::create_dir_all(config.join("harrow")).unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_harrow"));
        c.env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("HARROW_BASE_URL", model)
            .env("HARROW_WORKER_MODEL", "scripted/worker")
            .env("HARROW_API_KEY", "sk-binary-test")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HARROW_GIT_TOKEN", GIT_TOKEN)
            .env("GITHUB_TOKEN", FORGE_TOKEN)
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("HARROW_CONFIG")
            .env_remove("HARROW_EVALUATOR_BASE_URL")
            .env_remove("HARROW_EVALUATOR_MODEL");
        if self.work_dirs {
            c.env("HARROW_WORK_DIR", home.join("work"));
        } else {
            c.env_remove("HARROW_WORK_DIR");
        }
        if machine == "first" {
            c.env("HARROW_SESSIONS_DIR", self.share());
        } else {
            c.env_remove("HARROW_SESSIONS_DIR");
            let text = format!(
                "[sessions]\ndirs = [{:?}]\n\n[forge]\nkind = \"github\"\napi_url = \"{}\"\n",
                self.share().display(),
                self.forge.url("/api/v3")
            );
            std::fs::write(config.join("harrow/config.toml"), text).unwrap();
        }
        c
    }

    /// The first machine runs the plan from its clone; T-002's first reply takes 20 s, and
    /// SIGTERM comes while it is awaited. Returns the session folder.
    fn first_run_stopped_mid_task(&self, clone: &Path) -> PathBuf {
        let mut slow = write_and_submit(2);
        slow[0]["delay_ms"] = json!(20_000);
        let script = json!({
            "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"1": slow}},
            "evaluator": {"*": {"*": [loop_fixture::accept_each(3)]}}
        });
        let (_rt, server) = serve(&script, false);
        let plan = clone.join(".harrow/demo");
        let mut child = self
            .harrow("first", &server.base_url())
            .args(["run", plan.to_str().unwrap(), "--repo", clone.to_str().unwrap()])
            .args(["--headless", "--no-validators"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let dir = loop_fixture::session_when_log_has(&self.share(), "\"T-002\"");
        std::thread::sleep(Duration::from_millis(500));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(143), "a graceful stop");
        dir
    }

    /// A run stopped mid-task on the first machine, whose clone is then gone, and a clone of
    /// the project on the second: the session folder, and that clone.
    fn stopped_and_moved_on(&self) -> (PathBuf, PathBuf) {
        let first = self.clone_on("first");
        let dir = self.first_run_stopped_mid_task(&first);
        std::fs::remove_dir_all(&first).unwrap();
        (dir, self.clone_on("second"))
    }

    /// The second machine resumes the session by the id's end, as the fleet shows it, to
    /// the end, and opens the pull request.
    fn second_resumes(&self, dir: &Path, repo: &str) -> Output {
        let script = json!({
            "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
            "evaluator": {"*": {"*": [loop_fixture::accept_each(3)]}}
        });
        let (_rt, server) = serve(&script, true);
        let short = &id_of(dir)[id_of(dir).len() - 6..];
        self.harrow("second", &server.base_url())
            .args(["resume", short, "--repo", repo, "--headless", "--pr"])
            .output()
            .unwrap()
    }

    /// The pull request was opened for the session branch, which the project's server holds
    /// with both tasks' commits; nothing holds a token.
    fn assert_shipped(&self, dir: &Path, out: &Output) {
        let (stdout, stderr) = text(out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert_eq!(
            stdout.lines().last(),
            Some("https://github.example/acme/widgets/pull/12"),
            "{stdout}"
        );
        let branch = format!("session/{}", id_of(dir));
        let subjects = git(&self.bare, &["log", "--format=%s", &branch]);
        let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
        assert_eq!(ours, ["T-002: Write file 2", "T-001: Write file 1"], "one commit per task");
        let requests = self.forge.requests();
        let open = requests.iter().find(|r| r.path.ends_with("/pulls")).unwrap();
        assert_eq!(open.body["head"], branch.as_str());
        assert_eq!(open.headers["authorization"], format!("Bearer {FORGE_TOKEN}"));
        let everything = loop_fixture::all_text(dir) + &stdout + &stderr;
        for token in [GIT_TOKEN, FORGE_TOKEN] {
            assert!(!everything.contains(token), "{token} leaked");
        }
    }
}

fn id_of(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn resume_event(dir: &Path) -> Value {
    let events = support::strict_events(dir);
    let resume = events.iter().rev().find(|e| e["type"] == "session_resume");
    resume.unwrap()["payload"].clone()
}

#[test]
fn a_run_stopped_by_sigterm_is_resumed_on_a_second_machine_in_its_own_clone_and_shipped() {
    let w = World::new();
    let first = w.clone_on("first");
    let dir = w.first_run_stopped_mid_task(&first);
    let second = w.clone_on("second");
    let out = w.second_resumes(&dir, second.to_str().unwrap());
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains(&format!("goes on in {}", second.display())), "{stdout}\n{stderr}");
    // What it says of the interrupted task's files is what the resume does with them: it starts
    // again from the last commit, its uncommitted edits discarded (and logged as such).
    assert!(!stdout.contains("kept its files"), "{stdout}");
    assert!(
        stdout.contains(
            "an interrupted task starts again from its last judged attempt, else the last commit"
        ),
        "{stdout}"
    );
    let resumed = resume_event(&dir);
    assert!(resumed["plan"].as_str().unwrap().ends_with("from the last commit"), "{resumed}");
    w.assert_shipped(&dir, &out);
    let resumed = resume_event(&dir);
    assert_eq!(resumed["moved_from"], json!(first.display().to_string() + "/"));
    assert!(resumed["source"].as_str().unwrap().starts_with(second.to_str().unwrap()));
    // The branch is in the second clone too, and the first clone kept only what it had.
    let branch = format!("session/{}", id_of(&dir));
    assert_eq!(git(&second, &["rev-parse", &branch]), git(&w.bare, &["rev-parse", &branch]));
    let first_has = git(&first, &["log", "--format=%s", &branch]);
    assert!(!first_has.contains("T-002"), "{first_has}");
}

#[test]
fn with_the_first_clone_gone_and_none_on_the_second_machine_the_run_is_resumed_from_the_address() {
    let w = World { work_dirs: true, ..World::new() };
    let first = w.clone_on("first");
    let dir = w.first_run_stopped_mid_task(&first);
    let first_work = w.tmp.path().join("first/work").join(id_of(&dir));
    assert!(
        first_work.join("workspace/.git").is_file(),
        "the worktree on the first machine's disk"
    );
    assert!(!dir.join("workspace").exists(), "no worktree, no builds on the share");
    // The whole first machine goes: its clone and its disk.
    std::fs::remove_dir_all(w.tmp.path().join("first")).unwrap();
    let short = &id_of(&dir)[id_of(&dir).len() - 6..];
    let mut resume = w.harrow("second", "http://127.0.0.1:9/v1");
    let refused = resume.args(["resume", short, "--headless"]).output().unwrap();
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("pass --repo with a clone of the project"), "{stderr}");
    // The project's server names a default branch it lacks (a rename half done): the clone
    // takes `main`, never failing on libgit2's leftover words.
    git(&w.bare, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    let out = w.second_resumes(&dir, &w.url);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("Cloning http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("the session's copy"), "the plan came from the session: {stdout}");
    w.assert_shipped(&dir, &out);
    let worktree = w.tmp.path().join("second/work").join(id_of(&dir)).join("workspace");
    let clone = w.tmp.path().join("second/.local/share/harrow/clones").join(id_of(&dir));
    let common = git(&worktree, &["rev-parse", "--git-common-dir"]);
    assert_eq!(
        PathBuf::from(common.trim()).canonicalize().unwrap(),
        clone.join(".git").canonicalize().unwrap(),
        "the worktree was made on the second machine's disk, of the clone harrow made"
    );
    assert_eq!(git(&clone, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
}

#[test]
fn a_stopped_run_whose_clone_is_gone_is_pushed_partial_from_another_clone_and_a_foreign_folder_only_when_trusted()
 {
    let w = World::new();
    let (dir, second) = w.stopped_and_moved_on();
    let short = &id_of(&dir)[id_of(&dir).len() - 6..];
    let push = |extra: &[&str]| {
        let mut c = w.harrow("second", "http://127.0.0.1:9/v1");
        c.args(["push", short, "--partial"]).args(extra).output().unwrap()
    };
    let refused = push(&[]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("pass --repo with another clone"), "{stderr}");
    // A folder others may write: its branch is taken only when the operator says so.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let refused = push(&["--repo", second.to_str().unwrap()]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("writable by others") && stderr.contains("--trust-recorded"),
        "{stderr}"
    );
    assert!(git(&second, &["branch", "--list", "session/*"]).trim().is_empty(), "nothing brought");
    let out = push(&["--repo", second.to_str().unwrap(), "--trust-recorded"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let branch = format!("session/{}", id_of(&dir));
    let subjects = git(&w.bare, &["log", "--format=%s", &branch]);
    let ours: Vec<&str> = subjects.lines().filter(|l| l.starts_with("T-")).collect();
    assert_eq!(ours, ["T-001: Write file 1"], "what was accepted before the stop");
}

/// A commit added to the session branch in the folder's `attempts.git` — the work nobody
/// judged — and a kept attempt's ref moved onto it are refused by `push --partial`, `resume
/// --repo` and `pr` from another clone, the commit named; nothing reaches the remote or the
/// clone. The folder's git copy is a cache of what the log landed and kept, never its
/// authority, whoever wrote it.
#[test]
fn a_commit_planted_in_the_folders_git_copy_is_refused_by_every_verb_that_brings_it() {
    let w = World::new();
    let (dir, second) = w.stopped_and_moved_on();
    let id = id_of(&dir);
    let short = &id[id.len() - 6..];
    let copy = dir.join("attempts.git");
    let in_copy = |args: &[&str]| {
        let mut all = vec!["--git-dir", copy.to_str().unwrap()];
        all.extend_from_slice(args);
        git(&dir, &all).trim().to_owned()
    };
    let branch = format!("refs/heads/session/{id}");
    let landed = in_copy(&["rev-parse", &branch]);
    let planted = in_copy(&[
        "commit-tree",
        &format!("{landed}^{{tree}}"),
        "-p",
        &landed,
        "-m",
        "T-002: planted, never judged",
    ]);
    let verbs: [(&str, Vec<&str>); 3] = [
        ("push --partial", vec!["push", short, "--partial"]),
        ("pr --partial", vec!["pr", short, "--partial"]),
        ("resume", vec!["resume", short, "--headless"]),
    ];
    let kept =
        in_copy(&["for-each-ref", "--format=%(refname)", &format!("refs/harrow/{id}/T-001/")]);
    let kept = kept.lines().next().expect("T-001's judged attempt is kept").to_owned();
    for (forgery, set) in
        [("a planted commit", branch.as_str()), ("a moved kept ref", kept.as_str())]
    {
        let before = in_copy(&["rev-parse", set]);
        in_copy(&["update-ref", set, &planted]);
        for (verb, args) in &verbs {
            let mut c = w.harrow("second", "http://127.0.0.1:9/v1");
            let out = c.args(args).args(["--repo", second.to_str().unwrap()]).output().unwrap();
            let (stdout, stderr) = text(&out);
            assert_ne!(out.status.code(), Some(0), "{forgery}, {verb}: {stdout}{stderr}");
            assert_eq!(stderr.trim().lines().count(), 1, "{forgery}, {verb}: one line: {stderr}");
            assert!(
                stderr.contains(&planted[..12]) && stderr.contains("never"),
                "{forgery}, {verb}: names the commit: {stderr}"
            );
            let brought = git(
                &second,
                &[
                    "for-each-ref",
                    "--format=%(refname)",
                    "refs/heads/session/",
                    &format!("refs/harrow/{id}/"),
                ],
            );
            assert!(
                brought.trim().is_empty(),
                "{forgery}, {verb}: nothing reached the clone: {brought}"
            );
            let pushed =
                git(&w.bare, &["for-each-ref", "--format=%(refname)", "refs/heads/session/"]);
            assert!(
                pushed.trim().is_empty(),
                "{forgery}, {verb}: nothing reached the remote: {pushed}"
            );
        }
        in_copy(&["update-ref", set, &before]);
    }
    assert!(w.forge.requests().is_empty(), "no pull request was asked for");
    // A group-writable folder the operator says they trust is still held to its log.
    let mode = std::fs::metadata(&dir).unwrap().permissions();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
    in_copy(&["update-ref", &branch, &planted]);
    let mut c = w.harrow("second", "http://127.0.0.1:9/v1");
    let out = c
        .args(["push", short, "--partial", "--trust-recorded", "--repo", second.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "trusted, still refused: {stderr}");
    assert!(stderr.contains(&planted[..12]), "{stderr}");
    in_copy(&["update-ref", &branch, &landed]);
    std::fs::set_permissions(&dir, mode).unwrap();
    // Put back as the log has it, the same folder ships.
    let mut c = w.harrow("second", "http://127.0.0.1:9/v1");
    let out =
        c.args(["push", short, "--partial", "--repo", second.to_str().unwrap()]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
}

/// A folder its group may write (a team share, a Kubernetes `fsGroup` volume), or whose git
/// copy alone others may write, is someone else's record: `push --repo` and `resume --repo`
/// ask for `--trust-recorded` and bring nothing without it.
#[test]
fn a_folder_its_group_may_write_or_with_a_writable_git_copy_asks_for_trust() {
    let w = World::new();
    let (dir, second) = w.stopped_and_moved_on();
    let short = &id_of(&dir)[id_of(&dir).len() - 6..];
    let copy = dir.join("attempts.git");
    for (path, mode, said) in
        [(&dir, 0o775, "writable by its group"), (&copy, 0o777, "writable by others")]
    {
        let before = std::fs::metadata(path).unwrap().permissions();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        for verb in [vec!["push", short, "--partial"], vec!["resume", short, "--headless"]] {
            let mut c = w.harrow("second", "http://127.0.0.1:9/v1");
            let out = c.args(&verb).args(["--repo", second.to_str().unwrap()]).output().unwrap();
            let (_, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(2), "{verb:?}: {stderr}");
            assert!(stderr.contains(said) && stderr.contains("--trust-recorded"), "{stderr}");
            let brought = git(&second, &["branch", "--list", "session/*"]);
            assert!(brought.trim().is_empty(), "{verb:?}: nothing brought");
        }
        std::fs::set_permissions(path, before).unwrap();
    }
}
