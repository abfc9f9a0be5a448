//! The hands on real git repositories in temporary folders: the workspace life cycle, every
//! tool, every escape attempt, the hooks, the validators and secret scrubbing.

// A test whose setup fails should panic there, helpers included; helpers take `json!`
// literals by value because that reads best at the call site.
#![allow(clippy::unwrap_used, clippy::needless_pass_by_value)]

use crate::support;
use crate::tools;

use harrow::hands::hooks::{DenyRule, PostEditLinter};
use harrow::hands::isolation::{Isolation, SandboxMode};
use harrow::hands::session_store::SessionStore;
use harrow::hands::validators::{ValidatorSpec, run_all};
use harrow::hands::workspace::{Review, Workspace, WorkspaceError};
use harrow::hands::{CallOutcome, Hands, HandsConfig};
use harrow::session::event::Scope;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use support::git;

type Events = Vec<(String, Value)>;

/// A source repository with one commit, and a session folder beside it.
struct Fixture {
    tmp: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(src.join("pkg")).unwrap();
        std::fs::write(src.join("README.md"), "# demo\n").unwrap();
        std::fs::write(src.join("pkg/lib.py"), "def add(a, b):\n    return a + b\n").unwrap();
        std::fs::write(src.join(".gitignore"), "build/\n").unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "initial"]);
        Fixture { tmp }
    }

    fn source(&self) -> PathBuf {
        self.tmp.path().join("src")
    }

    fn session(&self) -> PathBuf {
        self.tmp.path().join("sessions/20261122-000000-abcdef")
    }

    fn workspace(&self) -> Workspace {
        Workspace::create(
            &self.source(),
            &self.session().join("workspace"),
            "20261122-000000-abcdef",
        )
        .unwrap()
        .0
    }

    fn hands(&self, config: HandsConfig) -> (Workspace, Hands) {
        let ws = self.workspace();
        let hands = Hands::new(&ws.worktree, Some(&self.session()), config).unwrap();
        (ws, hands)
    }
}

fn scope() -> Scope {
    Scope { task_id: Some("T-001".into()), iter: Some(1), ..Scope::default() }
}

fn call(hands: &Hands, name: &str, args: Value) -> (CallOutcome, Events) {
    let mut events = Events::new();
    let out = hands.call(&scope(), Some("call-1"), name, &args, &mut events).unwrap();
    (out, events)
}

fn ok(hands: &Hands, name: &str, args: Value) -> String {
    let (out, _) = call(hands, name, args.clone());
    assert!(!out.is_error, "{name} {args}: {}", out.output);
    out.output
}

fn err(hands: &Hands, name: &str, args: Value) -> String {
    let (out, _) = call(hands, name, args.clone());
    assert!(out.is_error, "{name} {args} should fail, got: {}", out.output);
    out.output
}

/// What the verdict judged in `a.py`.
const JUDGED: &str = "A = 1\n";

/// Writes the work the verdict judges in `ws`, then changes it after the verdict; gives the
/// judged diff's digest.
fn judged_then_changed(ws: &Workspace, start: &str) -> String {
    std::fs::write(ws.worktree.join("a.py"), JUDGED).unwrap();
    let judged = ws.diff_from(start).unwrap().digest;
    std::fs::write(ws.worktree.join("a.py"), "A = 2  # changed after the verdict\n").unwrap();
    judged
}

#[test]
fn only_the_work_that_was_judged_lands() {
    let f = Fixture::new();
    let id = "20261122-000000-d00d00";
    let (ws, _) = Workspace::create(&f.source(), &f.session().join("workspace"), id).unwrap();
    let start = ws.tip().unwrap();
    let judged = judged_then_changed(&ws, &start);
    let err = ws
        .commit_task("T-001", "A", id, Review::Accepted, Some(&start), Some(&judged))
        .unwrap_err();
    assert!(matches!(err, WorkspaceError::ChangedSinceJudged), "{err}");
    assert_eq!(ws.tip().unwrap(), start, "the branch did not move");
    std::fs::write(ws.worktree.join("a.py"), JUDGED).unwrap();
    let landed = ws.commit_task("T-001", "A", id, Review::Accepted, Some(&start), Some(&judged));
    assert!(landed.unwrap().is_some(), "the judged work lands");
}

/// A lane's task whose session branch moved is merged from its work's tree: the same check
/// holds there, and nothing is committed or moved to take the tree.
#[test]
fn only_the_work_that_was_judged_is_merged_from_its_tree() {
    let f = Fixture::new();
    let id = "20261122-000000-d00d01";
    let (ws, _) = Workspace::create(&f.source(), &f.session().join("workspace"), id).unwrap();
    let start = ws.tip().unwrap();
    assert_eq!(ws.judged_tree(&start, None).unwrap(), None, "no work, no tree");
    let judged = judged_then_changed(&ws, &start);
    let err = ws.judged_tree(&start, Some(&judged)).unwrap_err();
    assert!(matches!(err, WorkspaceError::ChangedSinceJudged), "{err}");
    std::fs::write(ws.worktree.join("a.py"), JUDGED).unwrap();
    let tree = ws.judged_tree(&start, Some(&judged)).unwrap().expect("the judged work's tree");
    assert_eq!(ws.tip().unwrap(), start, "the branch did not move");
    let listed = git(&ws.worktree, &["ls-tree", "--name-only", &tree]);
    assert!(listed.lines().any(|l| l == "a.py"), "{listed}");
}

#[test]
fn a_task_diff_holds_what_the_worker_committed_itself_and_the_branch_gets_one_commit() {
    let f = Fixture::new();
    let id = "20261122-000000-c0ffee";
    let (ws, _) = Workspace::create(&f.source(), &f.session().join("workspace"), id).unwrap();
    let start = ws.tip().unwrap();
    std::fs::write(ws.worktree.join("a.py"), "A = 1\n").unwrap();
    git(&ws.worktree, &["add", "a.py"]);
    git(&ws.worktree, &["commit", "-qm", "worker's own commit"]);
    std::fs::write(ws.worktree.join("b.py"), "B = 2\n").unwrap();
    let diff = ws.diff_from(&start).unwrap();
    assert_eq!(diff.summary(), "a.py (+1 -0); b.py (+1 -0)", "committed and uncommitted alike");
    let sha = ws
        .commit_task("T-001", "Two files", id, Review::Accepted, Some(&start), Some(&diff.digest))
        .unwrap();
    let log = git(&f.source(), &["log", "--format=%s", &format!("session/{id}")]);
    assert_eq!(log.lines().next(), Some("T-001: Two files"));
    assert_eq!(log.lines().count(), 2, "one commit per accepted task on the base: {log}");
    let parent = git(&f.source(), &["rev-parse", &format!("{}^", sha.unwrap())]);
    assert_eq!(parent.trim(), start);
    let body = git(&f.source(), &["log", "-1", "--format=%B", &format!("session/{id}")]);
    assert!(body.contains("Reviewed-by: harrow evaluator"), "{body}");
}

#[test]
fn keeping_work_under_a_name_met_again_never_moves_the_ref_that_kept_other_work() {
    let f = Fixture::new();
    let id = "20261122-000000-decade";
    let (ws, _) = Workspace::create(&f.source(), &f.session().join("workspace"), id).unwrap();
    let start = ws.tip().unwrap();
    std::fs::write(ws.worktree.join("a.py"), "A = 1\n").unwrap();
    let first = ws.keep("T-001/1-checks-2", &start, "first check").unwrap().oid.to_string();
    std::fs::write(ws.worktree.join("a.py"), "A = 2\n").unwrap();
    let second = ws.keep("T-001/1-checks-2", &start, "the same check after a resume").unwrap();
    let second = second.oid.to_string();
    assert_ne!(first, second);
    let refs = git(
        &f.source(),
        &["for-each-ref", "--format=%(objectname)", &format!("refs/harrow/{id}/")],
    );
    assert!(refs.contains(&first) && refs.contains(&second), "both kept: {refs}");
    let again = ws.keep("T-001/1-checks-2", &start, "the same work again").unwrap();
    assert_ne!(again.oid.to_string(), first, "a new commit object each time");
}

#[test]
fn a_kept_attempt_copied_to_the_session_folder_holds_everything_the_session_made_to_show_it() {
    let f = Fixture::new();
    let id = "20261122-000000-c0ffe1";
    let (ws, _) = Workspace::create(&f.source(), &f.session().join("workspace"), id).unwrap();
    let store = SessionStore::of(&f.session());
    let copy = store.path().to_path_buf();
    let start = ws.tip().unwrap();
    let mut kept = Vec::new();
    for (n, text) in ["A = 1\n", "A = 2\n", "A = 3\n"].iter().enumerate() {
        std::fs::write(ws.worktree.join("a.py"), text).unwrap();
        std::fs::create_dir_all(ws.worktree.join(format!("pkg{n}"))).unwrap();
        std::fs::write(ws.worktree.join(format!("pkg{n}/m.py")), text).unwrap();
        let k = ws.keep(&format!("T-00{n}/1"), &start, "judged").unwrap();
        store.copy_kept_from(&ws, &k).unwrap();
        kept.push(k);
        if n == 1 {
            let diff = ws.diff_from(&start).unwrap();
            ws.commit_task("T-001", "A", id, Review::Accepted, Some(&start), Some(&diff.digest))
                .unwrap();
        }
    }
    let packs = std::fs::read_dir(copy.join("objects/pack")).unwrap().count();
    // The source loses the attempts: the copy must hold every object they made. What they
    // stand on, the session's base, is any clone's (here the source's, after its gc).
    git(&f.source(), &["update-ref", "-d", &kept[2].refname]);
    git(&f.source(), &["reflog", "expire", "--expire=now", "--all"]);
    git(&f.source(), &["gc", "-q", "--prune=now"]);
    let with_base = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&copy)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", f.source().join(".git/objects"))
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    with_base(&["fsck", "--strict", "--no-dangling"]);
    for k in &kept {
        let named = git(&copy, &["rev-parse", &k.refname]);
        assert_eq!(named.trim(), k.oid.to_string(), "{}", k.refname);
    }
    let shown = with_base(&["diff", &start, &kept[2].refname, "--", "a.py", "pkg2/m.py"]);
    assert!(shown.contains("+A = 3") && shown.contains("pkg2/m.py"), "{shown}");
    let again = ws.keep("T-002/1", &start, "judged again, unchanged").unwrap();
    store.copy_kept_from(&ws, &again).unwrap();
    assert_eq!(
        std::fs::read_dir(copy.join("objects/pack")).unwrap().count(),
        packs + 2,
        "a new commit object, one more pack (and its index) with only what the copy lacks"
    );
}

#[test]
fn a_long_diff_is_cut_file_by_file_and_says_what_it_left_out() {
    let f = Fixture::new();
    let (ws, _) =
        Workspace::create(&f.source(), &f.session().join("workspace"), "20261122-000000-d1ff00")
            .unwrap();
    let lines = |prefix: &str, n: usize| -> String {
        (0..n).map(|i| format!("{prefix}_{i} = {i}")).collect::<Vec<_>>().join("\n") + "\n"
    };
    std::fs::write(ws.worktree.join("big.py"), lines("BIG", 3000)).unwrap();
    std::fs::write(ws.worktree.join("small.py"), "SMALL_MARKER = 1\n").unwrap();
    for n in 0..10 {
        std::fs::write(ws.worktree.join(format!("m{n:02}.py")), lines("MID", 100)).unwrap();
    }
    let diff = ws.diff_from(&ws.tip().unwrap()).unwrap();
    let text = diff.excerpt(20_000);
    assert!(text.chars().count() < 21_000, "{}", text.chars().count());
    assert!(text.contains("+SMALL_MARKER = 1"), "a small file is never pushed out by a big one");
    assert!(text.contains("+MID_99 = 99"), "files that fit are shown whole");
    assert!(text.contains("+BIG_10 = 10") && !text.contains("+BIG_2999"), "the big one is cut");
    assert!(text.contains("[big.py: cut for length, "), "and says so");
    assert!(!text.contains("Left out"), "nothing had to be left out");
    for n in 10..80 {
        std::fs::write(ws.worktree.join(format!("m{n:02}.py")), lines("MID", 100)).unwrap();
    }
    let diff = ws.diff_from(&ws.tip().unwrap()).unwrap();
    let text = diff.excerpt(20_000);
    assert!(text.chars().count() < 24_000, "{}", text.chars().count());
    assert!(text.contains("+SMALL_MARKER = 1"));
    let left_out = text.lines().find(|l| l.starts_with("[Left out for length")).unwrap();
    assert!(left_out.contains("big.py (+3000 -0)"), "the largest go first: {left_out}");
    let shown = text.matches("cut for length").count();
    let named = left_out.matches(".py (+").count();
    assert_eq!(shown + named, 81, "every file but the small one is cut or named");
    let whole = diff.excerpt(usize::MAX);
    assert_eq!(whole, diff.patch(), "with room, nothing is cut");
}

/// Runs `f` on its own thread and gives its answer, or `None` when it is still waiting after
/// 20 s (a FIFO read would wait forever).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).ok()
}

/// Files a worker writes, the FIFO it makes, and whether git reads what is at that path.
type FifoCase<'a> = (&'a [(&'a str, &'a str)], &'a str, bool);

#[test]
fn a_fifo_git_would_read_is_refused_whatever_ignore_files_the_worker_writes() {
    let fifo = |path: &std::path::Path| {
        let _ = std::fs::remove_file(path);
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    };
    // Each case: the files the worker writes, the FIFO it makes, and whether git reads it.
    let cases: [FifoCase<'_>; 4] = [
        (&[(".ignore", "blocker\n"), (".rgignore", "blocker\n")], "blocker", true),
        (&[(".gitignore", "build/\nREADME.md\n")], "README.md", true),
        (&[(".gitignore", "build/\npkg/\n")], "pkg/lib.py", true),
        (&[], "build/out.fifo", false),
    ];
    for (files, made, read_by_git) in cases {
        let f = Fixture::new();
        let ws = f.workspace();
        let start = ws.tip().unwrap();
        for (name, text) in files {
            std::fs::write(ws.worktree.join(name), text).unwrap();
        }
        std::fs::create_dir_all(ws.worktree.join("build")).unwrap();
        fifo(&ws.worktree.join(made));
        let diff = within_20s(move || ws.diff_from(&start).map(|d| d.files.len()))
            .unwrap_or_else(|| panic!("{made}: harrow waited on the FIFO"));
        match diff {
            Err(WorkspaceError::SpecialFile(path, "FIFO")) if read_by_git => {
                assert_eq!(path, made);
            }
            Ok(_) if !read_by_git => {}
            other => panic!("{made} (read by git: {read_by_git}): {other:?}"),
        }
    }
}

#[test]
fn workspace_life_cycle_never_touches_the_source_tree() {
    let f = Fixture::new();
    std::fs::write(f.source().join("README.md"), "# dirty\n").unwrap();
    let (ws, notices) =
        Workspace::create(&f.source(), &f.session().join("workspace"), "20261122-000000-abcdef")
            .unwrap();
    assert!(notices.iter().any(|n| n.contains("uncommitted changes")), "{notices:?}");
    assert_eq!(ws.branch, "session/20261122-000000-abcdef");
    assert_eq!(std::fs::read_to_string(ws.worktree.join("README.md")).unwrap(), "# demo\n");
    assert!(git(&f.source(), &["branch", "--list"]).contains("session/20261122-000000-abcdef"));

    std::fs::write(ws.worktree.join("pkg/new.py"), "X = 1\n").unwrap();
    std::fs::remove_file(ws.worktree.join("README.md")).unwrap();
    let start = ws.tip().unwrap();
    assert_eq!(start, ws.base);
    let diff = ws.diff_from(&start).unwrap();
    assert_eq!(diff.summary(), "README.md (+0 -1); pkg/new.py (+1 -0)");
    assert!(diff.patch().contains("+X = 1"));
    let sha = ws
        .commit_task(
            "T-001",
            "Add new",
            "20261122-000000-abcdef",
            Review::Accepted,
            Some(&start),
            None,
        )
        .unwrap()
        .unwrap();
    assert_eq!(ws.tip().unwrap(), sha);
    assert!(ws.diff_from(&sha).unwrap().is_empty(), "the next task starts with no change");
    assert_eq!(
        ws.diff_from(&start).unwrap().digest,
        diff.digest,
        "the digest names the diff it was computed from"
    );
    assert_eq!(
        ws.commit_task("T-002", "Nothing", "20261122-000000-abcdef", Review::Accepted, None, None)
            .unwrap(),
        None,
        "nothing new to commit"
    );
    assert_eq!(ws.earlier_files().unwrap(), ["README.md", "pkg/new.py"]);
    let log = git(&f.source(), &["log", "--format=%an|%s", "session/20261122-000000-abcdef"]);
    assert!(log.starts_with("harrow|T-001: Add new\n"), "{log}");
    assert_eq!(ws.head().unwrap(), sha);

    assert_eq!(std::fs::read_to_string(f.source().join("README.md")).unwrap(), "# dirty\n");
    assert!(!f.source().join("pkg/new.py").exists());
    let status = git(&f.source(), &["status", "--porcelain"]);
    assert_eq!(status.trim(), "M README.md", "the source gained nothing but a branch");

    assert!(matches!(
        Workspace::create(&f.source(), &f.tmp.path().join("other"), "20261122-000000-abcdef"),
        Err(WorkspaceError::BranchExists(..))
    ));
    assert!(matches!(
        Workspace::create(&f.source(), &ws.worktree, "20261122-000000-ffffff"),
        Err(WorkspaceError::WorktreeExists(_))
    ));

    assert!(
        Workspace::remove_worktree(Some(&f.source()), &ws.worktree, ws.worktree.parent().unwrap())
            .unwrap()
    );
    assert!(!ws.worktree.exists());
    assert!(git(&f.source(), &["worktree", "list"]).lines().count() == 1);
    assert!(
        git(&f.source(), &["branch", "--list"]).contains("session/"),
        "cleanse keeps the branch"
    );
    assert!(Workspace::delete_branch(&f.source(), &ws.branch).unwrap());
    assert!(!git(&f.source(), &["branch", "--list"]).contains("session/"));
}

#[test]
fn workspace_errors_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let e = Workspace::create(&plain, &tmp.path().join("w"), "x").unwrap_err();
    assert!(matches!(e, WorkspaceError::NotARepo(_)), "{e}");
    assert!(e.to_string().contains("git init"));
    git(&plain, &["init", "-q"]);
    let e = Workspace::create(&plain, &tmp.path().join("w"), "x").unwrap_err();
    assert!(matches!(e, WorkspaceError::NoCommits(_)), "{e}");

    let f = Fixture::new();
    let head = git(&f.source(), &["rev-parse", "HEAD"]);
    git(&f.source(), &["checkout", "-q", head.trim()]);
    let (_, notices) = Workspace::create(&f.source(), &f.tmp.path().join("w"), "y").unwrap();
    assert!(notices.iter().any(|n| n.contains("detached")), "{notices:?}");
}

#[test]
fn every_tool_works() {
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    assert_eq!(
        ok(&h, "read_file", json!({"path": "pkg/lib.py"})),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(
        ok(&h, "read_file", json!({"path": "pkg/lib.py", "start_line": 2, "end_line": 2})),
        "    return a + b\n\n[lines 2-2 of 2]"
    );
    assert!(
        ok(&h, "write_file", json!({"path": "pkg/deep/new.py", "content": "A = 1\nA = 1\n"}))
            .contains("wrote 12 bytes")
    );
    assert!(
        err(
            &h,
            "edit_file",
            json!({"path": "pkg/deep/new.py", "old_string": "A = 1", "new_string": "B"})
        )
        .contains("occurs 2 times (lines 1, 2)")
    );
    assert!(
        err(
            &h,
            "edit_file",
            json!({"path": "pkg/deep/new.py", "old_string": "Z", "new_string": "B"})
        )
        .contains("not found")
    );
    assert!(
        ok(
            &h,
            "edit_file",
            json!({"path": "pkg/lib.py", "old_string": "a + b", "new_string": "a - b"})
        )
        .contains("line 2")
    );
    assert!(ok(&h, "read_file", json!({"path": "pkg/lib.py"})).contains("a - b"));
    std::fs::create_dir_all(h.jail.root().join("build")).unwrap();
    std::fs::write(h.jail.root().join("build/out.py"), "ignored = True\n").unwrap();
    assert_eq!(ok(&h, "glob", json!({"pattern": "**/*.py"})), "pkg/deep/new.py\npkg/lib.py");
    assert_eq!(ok(&h, "glob", json!({"pattern": "*.md"})), "README.md");
    assert_eq!(ok(&h, "glob", json!({"pattern": "*.nothing"})), "(no matches)");
    assert_eq!(
        ok(&h, "grep", json!({"pattern": "a - b|ignored"})),
        "pkg/lib.py:2:     return a - b"
    );
    assert_eq!(
        ok(&h, "grep", json!({"pattern": "A = 1", "max_matches": 1})),
        "pkg/deep/new.py:1: A = 1\n... [stopped at 1 matches]"
    );
    assert_eq!(
        ok(&h, "grep", json!({"pattern": "DEF", "ignore_case": true, "path_glob": "pkg/*.py"})),
        "pkg/lib.py:1: def add(a, b):"
    );
    let listing = ok(&h, "list_dir", json!({}));
    assert!(
        listing.contains("pkg/")
            && listing.contains("README.md  (7 bytes)")
            && !listing.contains(".git\n"),
        "{listing}"
    );
    assert_eq!(ok(&h, "bash", json!({"command": "echo hi; exit 0"})), "hi\n[exit 0]");
    assert!(ok(&h, "bash", json!({"command": "echo no >&2; exit 4"})).ends_with("no\n[exit 4]"));
    assert!(
        ok(&h, "bash", json!({"command": "pwd"})).starts_with(&h.jail.root().display().to_string())
    );
    let big = ok(&h, "bash", json!({"command": "yes 0123456789 | head -c 20000"}));
    assert!(big.contains("[truncated, 20000 chars total]"), "{}", &big[big.len() - 80..]);
    let slow =
        err(&h, "bash", json!({"command": "(sleep 30.71 &); sleep 20.71", "timeout_seconds": 1}));
    assert!(slow.contains("timed out after 1 s"), "{slow}");
    assert_eq!(
        support::sleepers("30.71") + support::sleepers("20.71"),
        0,
        "the timeout stops everything the command started"
    );
}

#[test]
fn bad_calls_get_precise_errors() {
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    let (out, events) = call(&h, "rm_everything", json!({}));
    assert!(
        out.output.starts_with("ERROR: unknown tool 'rm_everything'. Available: bash, read_file"),
        "{}",
        out.output
    );
    assert_eq!(
        events.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["tool_call", "tool_result"],
        "no hook for an unknown tool"
    );
    assert!(err(&h, "read_file", json!("pkg/lib.py")).contains("arguments must be a JSON object"));
    assert!(err(&h, "read_file", json!({})).contains("missing required argument 'path'"));
    assert!(
        err(&h, "read_file", json!({"path": 3})).contains("'path' must be a string, got a number")
    );
    assert!(
        err(&h, "read_file", json!({"path": "pkg/lib.py", "start_line": 0}))
            .contains("'start_line' must be a whole number from 1")
    );
    assert!(err(&h, "read_file", json!({"path": "pkg"})).contains("is a directory; use list_dir"));
    assert!(err(&h, "read_file", json!({"path": "missing.txt"})).contains("no such file"));
    std::fs::write(h.jail.root().join("blob.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    assert!(
        err(&h, "read_file", json!({"path": "blob.bin"})).contains("is a binary file (6 bytes)")
    );
    assert!(err(&h, "grep", json!({"pattern": "("})).contains("not a valid regex"));
}

#[test]
fn escape_attempts_are_refused() {
    let f = Fixture::new();
    let (ws, h) = f.hands(HandsConfig::default());
    let outside = f.tmp.path().join("secret.txt");
    std::fs::write(&outside, "top secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.worktree.join("link-out")).unwrap();
    std::os::unix::fs::symlink(f.tmp.path(), ws.worktree.join("dir-out")).unwrap();
    std::os::unix::fs::symlink("pkg/lib.py", ws.worktree.join("link-in")).unwrap();
    let table: &[(&str, Value)] = &[
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("read_file", json!({"path": "pkg/../../secret.txt"})),
        ("read_file", json!({"path": "link-out"})),
        ("read_file", json!({"path": "dir-out/secret.txt"})),
        ("read_file", json!({"path": ".git"})),
        ("read_file", json!({"path": "./.git/HEAD"})),
        ("write_file", json!({"path": "../escaped.txt", "content": "x"})),
        ("write_file", json!({"path": "dir-out/escaped.txt", "content": "x"})),
        ("write_file", json!({"path": "link-out", "content": "overwritten"})),
        ("edit_file", json!({"path": "link-out", "old_string": "top", "new_string": "no"})),
        ("list_dir", json!({"path": ".."})),
        ("list_dir", json!({"path": "dir-out"})),
        ("glob", json!({"pattern": "../*"})),
        ("glob", json!({"pattern": "/etc/*"})),
        ("grep", json!({"pattern": "secret", "path_glob": "../*.txt"})),
        ("grep", json!({"pattern": "secret", "path_glob": "**/../../*"})),
    ];
    for (tool, args) in table {
        let message = err(&h, tool, args.clone());
        assert!(
            message.contains("escapes the workspace")
                || message.contains(".git cannot be read or changed"),
            "{tool} {args}: {message}"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "top secret\n");
    assert!(!f.tmp.path().join("escaped.txt").exists());
    assert_eq!(
        ok(&h, "grep", json!({"pattern": "secret"})),
        "(no matches)",
        "grep neither follows nor reads links out"
    );
    assert!(
        !ok(&h, "glob", json!({"pattern": "**/*"})).contains("secret.txt"),
        "glob does not descend a symlinked folder"
    );
    assert_eq!(
        ok(&h, "read_file", json!({"path": "link-in"})),
        "def add(a, b):\n    return a + b\n",
        "a link that stays inside is fine"
    );
    let abs_inside = ws.worktree.join("README.md");
    assert_eq!(ok(&h, "read_file", json!({"path": abs_inside.display().to_string()})), "# demo\n");
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_refused() {
    let f = Fixture::new();
    let (ws, h) = f.hands(HandsConfig::default());
    let outside = f.tmp.path().join("secret.txt");
    std::fs::write(&outside, "top secret\n").unwrap();
    let checked = h.jail.check("pkg/lib.py").unwrap();
    std::fs::remove_file(ws.worktree.join("pkg/lib.py")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.worktree.join("pkg/lib.py")).unwrap();
    assert!(h.jail.open_read(&checked).is_err());
    assert!(h.jail.open_write(&checked).is_err());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "top secret\n");

    let dir_checked = h.jail.check("pkg/sub/new.py").unwrap();
    std::os::unix::fs::symlink(f.tmp.path(), ws.worktree.join("pkg/sub")).unwrap();
    assert!(
        h.jail.open_write(&dir_checked).is_err(),
        "a folder swapped for a link out is caught too"
    );
    assert!(!f.tmp.path().join("new.py").exists());
}

#[test]
fn pre_tool_blocks_are_logged_and_post_edit_lints() {
    let f = Fixture::new();
    let config = HandsConfig {
        deny: vec![DenyRule {
            label: "no publishing".into(),
            pattern: r"\bnpm\s+publish\b".into(),
        }],
        post_edit: vec![PostEditLinter {
            ext: "py".into(),
            command: "! grep -n print {file}".into(),
            timeout_secs: 10,
        }],
        ..HandsConfig::default()
    };
    let (_ws, h) = f.hands(config);
    let (out, events) = call(&h, "bash", json!({"command": "git reset --hard HEAD"}));
    assert!(
        out.blocked && out.output.starts_with("BLOCKED by pre_tool hook (git reset --hard)"),
        "{}",
        out.output
    );
    let kinds: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(kinds, ["tool_call", "hook_run", "pre_tool_block"]);
    assert_eq!(events[1].1["outcome"], "block");
    assert_eq!(events[2].1["task_id"], "T-001");
    assert!(call(&h, "bash", json!({"command": "npm publish"})).0.blocked);

    let (out, events) = call(&h, "write_file", json!({"path": "a.py", "content": "print(1)\n"}));
    assert!(
        out.output.contains("[post_edit] ! found issues in a.py:\n1:print(1)"),
        "{}",
        out.output
    );
    let hooks: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.0 == "hook_run")
        .map(|e| (e.1["hook"].as_str().unwrap(), e.1["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(hooks, [("pre_tool", "allow"), ("post_edit", "warned")]);
    let (out, events) = call(&h, "write_file", json!({"path": "a.py", "content": "x = 1\n"}));
    assert_eq!(out.output, "wrote 6 bytes to a.py", "a clean lint is silent to the worker");
    assert!(events.iter().any(|e| e.0 == "hook_run" && e.1["outcome"] == "silent"));
    let (_, events) = call(&h, "write_file", json!({"path": "notes.md", "content": "print(1)\n"}));
    assert_eq!(events.iter().filter(|e| e.0 == "hook_run").count(), 1, "no linter for .md");
}

#[test]
fn validators_pass_fail_and_time_out() {
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    let v = |name: &str, command: &str, timeout_secs| ValidatorSpec {
        name: name.into(),
        command: command.into(),
        timeout_secs,
    };
    let mut events = Events::new();
    let green = run_all(
        &[v("lint", "true", 10), v("tests", "echo {tests}", 10)],
        &h,
        &["tests/test_t001.py".into()],
        &scope(),
        Some("0123abcd"),
        false,
        &mut events,
    )
    .unwrap();
    assert!(green.passed && green.report.is_none());
    assert_eq!(green.results[1].output.as_deref(), Some("tests/test_t001.py\n"));
    assert_eq!(events[0].0, "validator_run");
    assert_eq!(events[0].1["passed"], true);
    assert_eq!(events[0].1["attempt_commit"], "0123abcd", "the checked work is named");

    let failing = "printf 'running 2 tests\\ntest add ... ok\\ntest list::shows ... FAILED\\n\\nfailures:\\nthread panicked at src/lib.rs:9:5\\n'; exit 101";
    let mut events = Events::new();
    let red = run_all(
        &[v("tests", failing, 10), v("slow", "sleep 30.72", 1)],
        &h,
        &[],
        &scope(),
        None,
        false,
        &mut events,
    )
    .unwrap();
    assert!(!red.passed);
    assert_eq!(support::sleepers("30.72"), 0, "a hanging validator is killed at its timeout");
    assert_eq!(red.results[1].timed_out, Some(true), "{:?}", red.results[1]);
    let report = red.report.unwrap();
    assert!(report.contains("## tests failed: `") && report.contains("(exit 101,"), "{report}");
    assert!(report.contains("Failing: list::shows"), "{report}");
    assert!(report.contains("test list::shows ... FAILED"), "{report}");
    assert!(report.contains("## slow timed out after 1 s and was killed"), "{report}");
    let results = &events[0].1["results"];
    assert_eq!(results[0]["exit_code"], 101);
    assert_eq!(results[1]["timed_out"], true);
    assert!(results[0]["duration_ms"].as_u64().is_some());
    assert_eq!(events[0].1["passed"], false);
}

#[test]
fn tool_calls_are_written_to_the_session_log() {
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    let mut writer =
        harrow::session::writer::SessionWriter::create(&f.tmp.path().join("log")).unwrap();
    h.call(&scope(), Some("c1"), "read_file", &json!({"path": "README.md"}), &mut writer).unwrap();
    drop(writer);
    let text = std::fs::read_to_string(f.tmp.path().join("log/events.jsonl")).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["tool_call", "hook_run", "tool_result"]);
    let result: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(result["payload"]["output"], "# demo\n");
    assert_eq!(result["payload"]["result_chars"], 7);
    assert_eq!(result["payload"]["call_id"], "c1");
}

/// Runs inside a child test process whose environment holds keys (see the test below).
#[test]
fn bash_env_has_no_secrets_inner() {
    if std::env::var_os("HARROW_SECRET_PROBE").is_none() {
        return;
    }
    assert_eq!(
        std::env::var("OPENAI_API_KEY").as_deref(),
        Ok("sk-probe-1"),
        "the probe process does hold the key"
    );
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    let env = ok(&h, "bash", json!({"command": "env"}));
    for secret in ["sk-probe-1", "sk-probe-2", "ghp-probe-3", "probe-4"] {
        assert!(!env.contains(secret), "bash saw {secret}:\n{env}");
    }
    assert!(env.contains("PATH="), "the rest of the environment is kept");
}

#[test]
fn secrets_never_reach_bash() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hands::bash_env_has_no_secrets_inner",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HARROW_SECRET_PROBE", "1")
        .env("OPENAI_API_KEY", "sk-probe-1")
        .env("HARROW_EVALUATOR_API_KEY", "sk-probe-2")
        .env("GITHUB_TOKEN", "ghp-probe-3")
        .env("HARROW_API_KEY", "probe-4")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a sandboxed `bash` must not do, in either sandbox: see the session's harness files,
/// write outside the worktree (a folder beside the session, `/tmp`), or make a Unix socket.
fn assert_sandbox_holds(f: &Fixture, h: &Hands) {
    std::fs::write(f.session().join("events.jsonl"), "{}\n").unwrap();
    let beside = f.tmp.path().join("beside");
    std::fs::create_dir_all(&beside).unwrap();
    let command = format!(
        "ls ..; cat ../events.jsonl; touch ../y {b}/z /tmp/harrow-sandbox-probe-{pid} 2>&1; \
         python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; \
         echo tmp=$TMPDIR; touch \"$TMPDIR/ok\" && echo private-tmp-writable; git status --short",
        b = beside.display(),
        pid = std::process::id()
    );
    let out = ok(h, "bash", json!({ "command": command }));
    assert!(!out.lines().any(|l| l == "events.jsonl"), "harness files are hidden: {out}");
    assert!(!out.contains("{}"), "harness files cannot be read: {out}");
    assert!(!f.session().join("y").exists(), "{out}");
    assert!(!beside.join("z").exists(), "{out}");
    assert!(
        !std::path::Path::new(&format!("/tmp/harrow-sandbox-probe-{}", std::process::id()))
            .exists(),
        "{out}"
    );
    assert!(out.contains("PermissionError"), "no Unix socket can be made: {out}");
    assert!(out.contains("private-tmp-writable"), "{out}");
    assert!(out.contains("[exit 0]"), "git still works in the sandbox: {out}");
}

#[test]
fn bubblewrap_is_chosen_first_and_holds() {
    tools::require_bwrap();
    let f = Fixture::new();
    let (_ws, h) = f.hands(HandsConfig::default());
    match &h.isolation {
        Isolation::Bwrap { .. } => {
            assert!(h.isolation.describe().contains("no network"));
            assert_eq!(h.isolation.kind(), "bubblewrap");
            assert_sandbox_holds(&f, &h);
        }
        other => panic!("bubblewrap works here, yet it was not chosen: {other:?}"),
    }
}

#[test]
fn landlock_holds_where_bubblewrap_is_not_used() {
    let f = Fixture::new();
    let (_ws, h) =
        f.hands(HandsConfig { sandbox: SandboxMode::Landlock, ..HandsConfig::default() });
    assert_eq!(h.isolation.kind(), "landlock");
    assert!(h.isolation.describe().contains("Landlock"), "{}", h.isolation.describe());
    assert_sandbox_holds(&f, &h);
}

#[test]
fn off_is_stated() {
    let f = Fixture::new();
    let (_ws, off) = f.hands(HandsConfig { sandbox: SandboxMode::Off, ..HandsConfig::default() });
    assert!(off.isolation.describe().contains("without a sandbox (switched off"));
    assert_eq!(off.isolation.kind(), "off");
}

#[test]
fn a_folder_swapped_for_a_link_after_the_check_cannot_empty_a_file_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("worktree");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside\n").unwrap();
    std::fs::write(outside.join("f.txt"), "OUTSIDE\n").unwrap();
    let jail = harrow::hands::confine::Jail::new(&root).unwrap();
    let checked = jail.check("d/f.txt").unwrap();
    // The race, played out in order: the check passed, then the folder became a link out.
    std::fs::rename(root.join("d"), root.join("d.orig")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    assert!(jail.open_write(&checked).is_err(), "the open is refused");
    assert!(jail.open_read(&checked).is_err());
    assert_eq!(std::fs::read_to_string(outside.join("f.txt")).unwrap(), "OUTSIDE\n", "not emptied");
    let fresh = jail.check("d/new.txt");
    assert!(fresh.is_err(), "and a new check sees the link");
    assert!(!outside.join("new.txt").exists());
}

/// With a work folder on local disk (`[run] work_dir`), the worktree is outside the session's
/// folder: the sandbox hides that folder all the same, by its own path.
#[test]
fn a_worktree_in_a_work_folder_cannot_see_the_sessions_files_either() {
    let f = Fixture::new();
    let worktree = f.tmp.path().join("work/20261122-000000-abcdef/workspace");
    let (ws, _) = Workspace::create(&f.source(), &worktree, "20261122-000000-abcdef").unwrap();
    std::fs::create_dir_all(f.session()).unwrap();
    std::fs::write(f.session().join("events.jsonl"), "the-sessions-own-log\n").unwrap();
    let session = f.session().display().to_string();
    for sandbox in [SandboxMode::Auto, SandboxMode::Landlock] {
        let h = Hands::new(
            &ws.worktree,
            Some(&f.session()),
            HandsConfig { sandbox, ..HandsConfig::default() },
        )
        .unwrap();
        let command = format!("cat {session}/events.jsonl 2>&1; ls {session} 2>&1; echo done");
        let out = ok(&h, "bash", json!({ "command": command }));
        assert!(out.contains("done"), "{out}");
        assert!(
            !out.contains("the-sessions-own-log") && !out.contains("events.jsonl\n"),
            "{sandbox:?}: {out}"
        );
    }
}
