//! The hands' budgets: `glob` and `grep` over a 50,000-file repository (plus 5,000 ignored
//! files they must skip), the harness's own cost per tool call, and the git guard's around
//! each tool call in a repository with 5,000 tags.

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use harrow::hands::git_guard::GitGuard;
use harrow::hands::isolation::SandboxMode;
use harrow::hands::{Hands, HandsConfig};
use harrow::session::event::Scope;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn repo(root: &Path) {
    for d in 0..500 {
        let dir = root.join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let ext = if f % 2 == 0 { "rs" } else { "py" };
            let body = format!(
                "// module {d} file {f}\nfn item_{f}() -> u32 {{ {f} }}\n{}\n",
                "x".repeat(120)
            );
            std::fs::write(dir.join(format!("f{f:03}.{ext}")), body).expect("write");
        }
    }
    std::fs::write(root.join("src/m250/f050.rs"), "fn needle() {}\n").expect("needle");
    let ignored = root.join("target/debug");
    std::fs::create_dir_all(&ignored).expect("mkdir");
    for f in 0..5000 {
        std::fs::write(ignored.join(format!("g{f}.rs")), "fn needle() {}\n").expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("gitignore");
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .expect("git");
    assert!(ok.success());
}

fn hands_benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tmp");
    repo(tmp.path());
    let config = HandsConfig { sandbox: SandboxMode::Off, ..HandsConfig::default() };
    let hands = Hands::new(tmp.path(), None, config).expect("hands");
    let scope = Scope::default();
    let run = |name: &str, args: &Value| {
        let mut sink: Vec<(String, Value)> = Vec::new();
        let out = hands.call(&scope, None, name, args, &mut sink).expect("call");
        assert!(!out.is_error, "{}", out.output);
        out
    };
    assert_eq!(
        run("grep", &json!({"pattern": "fn needle"})).output,
        "src/m250/f050.rs:1: fn needle() {}"
    );

    let mut group = c.benchmark_group("50k_files");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("glob_all_rs", |b| {
        b.iter(|| black_box(run("glob", &json!({"pattern": "**/*.rs", "max_results": 10}))));
    });
    group.bench_function("grep_rare", |b| {
        b.iter(|| black_box(run("grep", &json!({"pattern": "fn needle"}))));
    });
    group.bench_function("grep_rs_only", |b| {
        b.iter(|| black_box(run("grep", &json!({"pattern": "fn needle", "path_glob": "**/*.rs"}))));
    });
    group.finish();

    let small = tmp.path().join("src/m000/f000.rs");
    let mut group = c.benchmark_group("tool_call");
    group.bench_function("read_file_via_hands", |b| {
        b.iter(|| black_box(run("read_file", &json!({"path": "src/m000/f000.rs"}))));
    });
    group.bench_function("read_file_direct", |b| {
        b.iter(|| black_box(std::fs::read_to_string(&small).expect("read")));
    });
    group.finish();

    // What each sandbox adds to one `bash` call (`true`): the process, the confining thread,
    // the Landlock ruleset or the bubblewrap namespaces.
    let mut group = c.benchmark_group("bash_true");
    group.sample_size(30);
    for mode in [SandboxMode::Off, SandboxMode::Landlock, SandboxMode::Bwrap] {
        let config = HandsConfig { sandbox: mode, ..HandsConfig::default() };
        let Ok(hands) = Hands::new(tmp.path(), None, config) else { continue };
        group.bench_function(hands.isolation.kind(), |b| {
            b.iter(|| {
                let mut sink: Vec<(String, Value)> = Vec::new();
                let args = json!({"command": "true"});
                black_box(hands.call(&scope, None, "bash", &args, &mut sink).expect("bash"))
            });
        });
    }
    group.finish();
}

/// Runs git in `dir`, with `input` on its standard input.
fn git(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("input");
    let out = child.wait_with_output().expect("git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The guard's work around one tool call (`before_call`, then `restore`) in a repository with
/// 5,000 packed tags: when the call changed no ref, and when it moved one (which the guard
/// puts back).
fn guard_benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tmp");
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    git(&src, &["init", "-q", "-b", "main"], "");
    git(&src, &["commit", "-q", "--allow-empty", "-m", "one"], "");
    git(&src, &["commit", "-q", "--allow-empty", "-m", "two"], "");
    let head = git(&src, &["rev-parse", "HEAD"], "");
    let first = git(&src, &["rev-parse", "HEAD~1"], "");
    let tags = (0..5000).fold(String::new(), |mut all, n| {
        let _ = writeln!(all, "create refs/tags/t{n} {head}");
        all
    });
    git(&src, &["update-ref", "--stdin"], &tags);
    git(&src, &["pack-refs", "--all"], "");
    git(&src, &["branch", "loose"], "");
    let wt = tmp.path().join("wt");
    git(&src, &["worktree", "add", "-q", "-b", "session/s", wt.to_str().expect("path")], "");
    let mut guard = GitGuard::new(&wt, "session/s").expect("guard");
    // Stamps younger than two seconds are not trusted.
    std::thread::sleep(Duration::from_millis(2100));
    let loose = src.join(".git/refs/heads/loose");
    let mut group = c.benchmark_group("git_guard_5000_tags");
    group.bench_function("tool_call_changed_no_ref", |b| {
        b.iter(|| {
            guard.before_call().expect("before");
            assert!(guard.restore().expect("restore").is_empty());
        });
    });
    group.bench_function("tool_call_moved_a_ref", |b| {
        b.iter(|| {
            guard.before_call().expect("before");
            std::fs::write(&loose, format!("{first}\n")).expect("move");
            assert_eq!(guard.restore().expect("restore").len(), 1);
        });
    });
    group.finish();
}

criterion_group!(benches, hands_benches, guard_benches);
criterion_main!(benches);
