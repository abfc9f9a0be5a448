//! The `git` command line for unit tests that set up real repositories: what a user or a
//! worker's shell would run against them.

use std::path::Path;
use std::process::Command;

/// Runs `git ARGS` in `dir` with a test identity and gives what it printed; a failure fails
/// the test with git's own words.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
