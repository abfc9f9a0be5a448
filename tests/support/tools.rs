//! The programs some tests drive besides harrow (bubblewrap, sshd, ruff and pytest,
//! kubernetes-validate, man), each checked the way its test uses it. `.ci/run` installs and
//! checks every one before the tests run; where one is missing or does not work the test
//! that needs it fails, naming the program and how to get it — a missing tool never reads as
//! a pass, and nothing is skipped.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// Fails the test unless `works`, naming `what` and how to get it.
fn require(works: bool, what: &str, install: &str) {
    assert!(
        works,
        "this test needs {what}, which is missing or does not work here: {install} (`bash .ci/run` installs it)"
    );
}

/// Whether `program ARGS` runs and exits 0, its output unread.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether bubblewrap can make the sandbox harrow asks of it (namespaces for the network,
/// IPC and processes), not merely print its version.
pub fn bwrap_works() -> bool {
    runs(
        "bwrap",
        &["--ro-bind", "/", "/", "--unshare-net", "--unshare-ipc", "--unshare-pid", "true"],
    )
}

/// Bubblewrap that can make a sandbox.
pub fn require_bwrap() {
    require(
        bwrap_works(),
        "bubblewrap that can make a sandbox (user namespaces allowed)",
        "apt-get install bubblewrap",
    );
}

/// pytest and ruff, as the gate's validators run them (`python3 -m pytest`, `ruff`).
pub fn require_pytest_and_ruff() {
    require(
        runs("python3", &["-m", "pytest", "--version"]) && runs("ruff", &["--version"]),
        "pytest and ruff on PATH",
        "python3 -m pip install pytest ruff, in a virtual environment on PATH",
    );
}

/// The OpenSSH server, which the SSH push test starts on 127.0.0.1.
pub fn require_sshd(path: &str) {
    require(
        std::path::Path::new(path).is_file(),
        &format!("the OpenSSH server at {path}"),
        "apt-get install openssh-server",
    );
}

/// kubernetes-validate, which carries Kubernetes' own schemas.
pub fn require_kubernetes_validate() {
    require(
        runs("kubernetes-validate", &["--version"]),
        "kubernetes-validate on PATH",
        "python3 -m pip install kubernetes-validate, in a virtual environment on PATH",
    );
}

/// man(1), to render the manual pages.
pub fn require_man() {
    require(runs("man", &["--version"]), "man(1)", "apt-get install man-db");
}

/// python3 itself.
pub fn require_python3() {
    require(runs("python3", &["--version"]), "python3", "apt-get install python3");
}

/// Codex's ACP adapter as `.ci/run` installs it (pinned, from npm, in CI's cache folder), or
/// where `$HARROW_TEST_CODEX_ACP` says: its path.
pub fn require_codex_acp() -> std::path::PathBuf {
    let path = std::env::var_os("HARROW_TEST_CODEX_ACP").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || {
                    std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache")
                },
                std::path::PathBuf::from,
            );
            cache.join("harrow-ci/npm/node_modules/.bin/codex-acp")
        },
        std::path::PathBuf::from,
    );
    require(
        runs(path.to_str().unwrap_or(""), &["--help"]),
        "Codex's ACP adapter, @zed-industries/codex-acp 0.16.0",
        "npm install --prefix ~/.cache/harrow-ci/npm @zed-industries/codex-acp@0.16.0",
    );
    path
}
