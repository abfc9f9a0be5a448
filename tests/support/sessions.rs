//! The sessions the console tests open: a Tilth session and a demo session harrow wrote, kept
//! in `tests/fixtures/`, and the command line that runs the binary against a scripted model.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const SESSION: &str = "20261122-042843-e02b19";

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tilth").join(SESSION)
}

/// A session harrow wrote: the demo, run once with `--fast` and kept.
pub const HARROW_SESSION: &str = "20261122-080615-535d09";

pub fn harrow_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harrow").join(HARROW_SESSION)
}

/// A session an ACP agent worked (the scripted agent of `tests/fixtures/acp`, one task, run
/// once through the binary and kept).
pub const AGENT_SESSION: &str = "agent-run";

pub fn agent_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harrow-agent").join(AGENT_SESSION)
}

/// A session with a best-of task (three attempts at once, two accepted, the evaluator's
/// choice landing) and an ordinary one, run once through the binary and kept.
pub const BEST_OF_SESSION: &str = "best-of-run";

pub fn best_of_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/harrow-best-of")
        .join(BEST_OF_SESSION)
}

/// The shell command that runs the binary with `args` against a scripted model at `base_url`,
/// with sessions and configuration under `home` and no model settings of the machine's.
pub fn scripted_console(home: &Path, base_url: &str, args: &str) -> String {
    format!(
        "env -u HARROW_CONFIG -u HARROW_EVALUATOR_BASE_URL -u HARROW_EVALUATOR_MODEL \
         HARROW_BASE_URL={base_url} HARROW_WORKER_MODEL=scripted/worker \
         HARROW_API_KEY=sk-console-test HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} {} {args}",
        home.join("sessions").display(),
        home.display(),
        env!("CARGO_BIN_EXE_harrow")
    )
}
