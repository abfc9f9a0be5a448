//! The Kubernetes manifests under `deploy/kubernetes/` validate against Kubernetes' own
//! schemas (strictly: no field the API does not know), with the `kubernetes-validate` package
//! `.ci/run` installs; and the harrow command the Job runs is one this build accepts.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{git_http, support, tools};
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

/// The manifests as `kubernetes-validate` can take them: a Job named by `generateName` (the
/// API server gives it a name of its own) is validated as a copy with that name, since the tool
/// reads `metadata.name` to report on it.
fn as_validated(files: &[PathBuf], into: &Path) -> Vec<PathBuf> {
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            if !text.contains("\n  generateName: ") {
                return f.clone();
            }
            let copy = into.join(f.file_name().unwrap());
            std::fs::write(&copy, text.replace("\n  generateName: ", "\n  name: ")).unwrap();
            copy
        })
        .collect()
}

#[test]
fn the_manifests_validate_strictly_and_a_broken_one_is_caught() {
    let files = manifests();
    assert!(files.len() >= 2, "{files:?}");
    tools::require_kubernetes_validate();
    let named = tempfile::tempdir().unwrap();
    let checked = as_validated(&files, named.path());
    let (passed, said) = validate(&checked).expect("kubernetes-validate runs");
    assert!(passed, "{said}");
    for f in &checked {
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
    assert!(args.iter().any(|a| a == "--trust-recorded"), "the share is group-writable: {args:?}");
    let (code, stderr) = harrow(&args);
    // The session lives only on the share: the flags are parsed, then the id is looked up.
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no session matches 'ec3b62'"), "{stderr}");
}

/// The run Job's checkout, played here as its init container would run it: its script from
/// the manifest, the Secret's mounted file and `/work` put at folders of the test's, against a
/// repository served by the real `git http-backend` behind the token. The clone succeeds with
/// the token as `x-access-token`'s password, and the token is in the argument list of no
/// process the script starts (each `git` is recorded as it is started).
#[test]
fn the_checkout_gives_git_the_token_through_a_credential_helper_never_an_argument() {
    const TOKEN: &str = "ghs_JobCheckoutToken_0451";
    let tmp = tempfile::tempdir().unwrap();
    let job = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/harrow-run-job.yaml"),
    )
    .unwrap();
    let init = &job[job.find("- name: checkout").unwrap()
        ..job.find("containers:\n        - name: run").unwrap()];
    assert!(!init.contains("HARROW_GIT_TOKEN"), "the checkout has no token in its environment");
    let script: Vec<&str> = init
        .lines()
        .skip_while(|l| l.trim() != "- >-")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("env:"))
        .map(str::trim)
        .collect();
    let secret = tmp.path().join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("token"), TOKEN).unwrap();
    let work = tmp.path().join("work");
    let script = script
        .join(" ")
        .replace("/var/run/secrets/harrow-git", secret.to_str().unwrap())
        .replace("/work/", &format!("{}/", work.display()));

    let source = tmp.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    support::git(&source, &["init", "-q", "-b", "main"]);
    std::fs::write(source.join("README.md"), "# textstats\n").unwrap();
    support::git(&source, &["add", "-A"]);
    support::git(&source, &["commit", "-qm", "init"]);
    let served = tmp.path().join("served");
    git_http::bare_with_main(&served, "team/textstats.git", &source);
    let server = git_http::GitHttp::start(&served, TOKEN);

    // Every `git` the script starts is recorded with its arguments, then run.
    let shims = tmp.path().join("bin");
    std::fs::create_dir_all(&shims).unwrap();
    let real = String::from_utf8(
        Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout,
    )
    .unwrap();
    let argv_log = tmp.path().join("argv.log");
    let shim = shims.join("git");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {}\nexec {} \"$@\"\n",
            argv_log.display(),
            real.trim()
        ),
    )
    .unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&shim, executable).unwrap();
    let path = format!("{}:{}", shims.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("/bin/sh")
        .args(["-c", &script])
        .env("REPO_URL", server.url("team/textstats.git"))
        .env("PATH", path)
        .env("HOME", tmp.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .unwrap();
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script}\n{said}");
    assert_eq!(std::fs::read_to_string(work.join("repo/README.md")).unwrap(), "# textstats\n");
    let authorized = server.seen().iter().any(|s| {
        s.credentials.as_deref() == Some(&format!("x-access-token:{TOKEN}")) && s.status == 200
    });
    assert!(authorized, "the token reached the server: {:?}", server.seen());
    let argv = std::fs::read_to_string(&argv_log).unwrap();
    assert!(!argv.is_empty(), "the premise: git's arguments were recorded");
    let basic = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("x-access-token:{TOKEN}"),
    );
    for form in [TOKEN, basic.as_str()] {
        assert!(!argv.contains(form), "the token was in git's arguments: {argv}");
    }
    let config = std::fs::read_to_string(work.join("repo/.git/config")).unwrap();
    assert!(!config.contains(TOKEN), "the token is kept in the clone: {config}");
}

/// A second resume of the same run, within the first one's TTL, must not collide with it: the
/// resume Job is named by the API server (`generateName`), never by a fixed name. Both Jobs
/// read the configuration from the `ConfigMap` through `HARROW_CONFIG`, which names the file
/// the `ConfigMap`'s mount holds.
#[test]
fn every_resume_job_gets_a_name_of_its_own_and_both_jobs_read_the_config_map() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let resume = std::fs::read_to_string(dir.join("harrow-resume-job.yaml")).unwrap();
    let metadata =
        &resume[resume.find("\nmetadata:\n").unwrap()..resume.find("\nspec:\n").unwrap()];
    assert!(metadata.contains("\n  generateName: harrow-resume-"), "{metadata}");
    assert!(!metadata.contains("\n  name: "), "a fixed name collides: {metadata}");
    let config = std::fs::read_to_string(dir.join("harrow-config.yaml")).unwrap();
    assert!(config.contains("kind: ConfigMap") && config.contains("  name: harrow-config\n"));
    let toml: String = config.lines().skip_while(|l| l.trim() != "config.toml: |").skip(1).fold(
        String::new(),
        |mut out, l| {
            out.push_str(l.strip_prefix("    ").unwrap_or(l));
            out.push('\n');
            out
        },
    );
    assert!(toml.contains("[forge]"), "{config}");
    harrow::config::Config::parse(&toml).unwrap();
    for job in ["harrow-run-job.yaml", "harrow-resume-job.yaml"] {
        let text = std::fs::read_to_string(dir.join(job)).unwrap();
        assert!(
            text.contains("- name: HARROW_CONFIG\n              value: /etc/harrow/config.toml"),
            "{job}"
        );
        assert!(text.contains("mountPath: /etc/harrow"), "{job}");
        assert!(text.contains("configMap:\n            name: harrow-config"), "{job}");
    }
}
