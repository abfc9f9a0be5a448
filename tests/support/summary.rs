//! A session's figures as `harrow show --json` prints them, for the tests that check the end
//! state of a run through the real binary.

use std::path::Path;
use std::process::Command;

/// `harrow show DIR --json`, parsed, once the session's log has passed the strict reading.
pub fn show_json(session: &Path) -> serde_json::Value {
    super::support::strict_events(session);
    let out = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["show", session.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "harrow show: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}
