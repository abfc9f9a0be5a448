//! The Kubernetes manifests under `deploy/kubernetes/` validate against Kubernetes' own
//! schemas (strictly: no field the API does not know), with the `kubernetes-validate` package
//! `.ci/run` installs; and the harrow command the Job runs is one this build accepts.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifests() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// `kubernetes-validate --strict` on `files`: whether it passed, and what it said. `None`
/// when the validator is not installed (outside CI only).
fn validate(files: &[PathBuf]) -> Option<(bool, String)> {
    let out = Command::new("kubernetes-validate").arg("--strict").args(files).output().ok()?;
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Some((out.status.success(), said))
}

#[test]
fn the_manifests_validate_strictly_and_a_broken_one_is_caught() {
    let files = manifests();
    assert!(files.len() >= 2, "{files:?}");
    let Some((passed, said)) = validate(&files) else {
        assert!(std::env::var_os("CI").is_none(), "kubernetes-validate must be installed on CI");
        eprintln!(
            "skipped: kubernetes-validate is not installed (python3 -m pip install kubernetes-validate)"
        );
        return;
    };
    assert!(passed, "{said}");
    for f in &files {
        assert!(said.contains(&format!("{} passed", f.display())), "{said}");
    }

    // The validator can fail: a Job with a restart policy Kubernetes does not have and a
    // field it does not know is refused.
    let tmp = tempfile::tempdir().unwrap();
    let job =
        std::fs::read_to_string(files.iter().find(|f| f.ends_with("harrow-run-job.yaml")).unwrap())
            .unwrap();
    let broken = tmp.path().join("broken.yaml");
    let text = job
        .replace("restartPolicy: Never", "restartPolicy: Sometimes")
        .replace("backoffLimit: 0", "backoffLimit: 0\n  retries: 3");
    assert_ne!(text, job);
    std::fs::write(&broken, text).unwrap();
    let (passed, said) = validate(&[broken]).unwrap();
    assert!(!passed, "{said}");
}

#[test]
fn the_command_the_job_runs_is_one_harrow_accepts() {
    let job = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/harrow-run-job.yaml"),
    )
    .unwrap();
    let line = job.lines().find(|l| l.trim_start().starts_with("exec harrow run ")).unwrap();
    let args: Vec<&str> =
        line[line.find("harrow run ").unwrap() + "harrow ".len()..].split_whitespace().collect();
    assert!(args.contains(&"--headless") && args.contains(&"--push"), "{args:?}");
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(&args)
        .env("HARROW_SESSIONS_DIR", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path())
        .env_remove("HARROW_CONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The plan's path exists only inside the Job: the flags are parsed, then the plan is missed.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/work/repo/.harrow/textstats") && !stderr.contains("unexpected argument"),
        "{stderr}"
    );
}
