//! The Kubernetes manifests under `deploy/kubernetes/` validate against Kubernetes' own
//! schemas (strictly: no field the API does not know), with the `kubernetes-validate` package
//! `.ci/run` installs; and the harrow command the Job runs is one this build accepts.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::tools;
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
    tools::require_kubernetes_validate();
    let (passed, said) = validate(&files).expect("kubernetes-validate runs");
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

/// The arguments after `exec harrow` in the Job `file`, the shell's variables put in as the
/// Job's `env` sets them.
fn job_command(file: &str, verb: &str) -> Vec<String> {
    let job = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes").join(file),
    )
    .unwrap();
    let value = |name: &str| {
        let at = job.find(&format!("- name: {name}\n")).unwrap();
        let line = job[at..].lines().nth(1).unwrap();
        line.trim().trim_start_matches("value:").trim().to_owned()
    };
    let start = format!("exec harrow {verb} ");
    let line = job.lines().find(|l| l.trim_start().starts_with(&start)).unwrap();
    line[line.find("harrow ").unwrap() + "harrow ".len()..]
        .split_whitespace()
        .map(|a| match a.trim_matches('"').strip_prefix('$') {
            Some(var) => value(var),
            None => a.to_owned(),
        })
        .collect()
}

/// `harrow ARGS` with nothing of this machine's: its exit status and what it said.
fn harrow(args: &[String]) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(args)
        .env("HARROW_SESSIONS_DIR", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path())
        .env("XDG_DATA_HOME", tmp.path())
        .env_remove("HARROW_CONFIG")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_command_the_job_runs_is_one_harrow_accepts() {
    let args = job_command("harrow-run-job.yaml", "run");
    assert!(
        args.iter().any(|a| a == "--headless") && args.iter().any(|a| a == "--push"),
        "{args:?}"
    );
    let (code, stderr) = harrow(&args);
    // The plan's path exists only inside the Job: the flags are parsed, then the plan is missed.
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("/work/repo/.harrow/textstats") && !stderr.contains("unexpected argument"),
        "{stderr}"
    );
}

#[test]
fn the_resume_job_runs_a_resume_harrow_accepts_by_the_fleets_short_id_from_an_address() {
    let args = job_command("harrow-resume-job.yaml", "resume");
    assert_eq!(args[1], "ec3b62", "{args:?}");
    let repo = args.iter().position(|a| a == "--repo").unwrap();
    assert!(args[repo + 1].starts_with("https://"), "{args:?}");
    assert!(args.iter().any(|a| a == "--pr"), "{args:?}");
    let (code, stderr) = harrow(&args);
    // The session lives only on the share: the flags are parsed, then the id is looked up.
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no session matches 'ec3b62'"), "{stderr}");
}
