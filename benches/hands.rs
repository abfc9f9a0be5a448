//! The hands' budgets: `glob` and `grep` over a 50,000-file repository (plus 5,000 ignored
//! files they must skip), and the harness's own cost per tool call.

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use harrow::hands::isolation::SandboxMode;
use harrow::hands::{Hands, HandsConfig};
use harrow::session::event::Scope;
use serde_json::{Value, json};
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

criterion_group!(benches, hands_benches);
criterion_main!(benches);
