//! Helpers shared by the integration tests.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs the real `git` in `dir` with a fixed identity, and returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Holds a session folder harrow wrote to the strict reading: every line of `events.jsonl`
/// has its envelope, no key twice and a payload of its own type; every ledger line has no
/// key twice. Returns the events, decoded.
pub fn strict_events(session: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    // A run still writing may have a line half written: only whole lines are held to it.
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut events = Vec::new();
    for (n, line) in whole.lines().enumerate() {
        if let Err(e) = harrow::session::strict::check_event_line(line.as_bytes()) {
            panic!("events.jsonl line {}: {e}: {line}", n + 1);
        }
        events.push(serde_json::from_str(line).unwrap());
    }
    for entry in std::fs::read_dir(session.join("ledger")).into_iter().flatten().flatten() {
        let ledger = std::fs::read_to_string(entry.path()).unwrap();
        for (n, line) in ledger.lines().enumerate() {
            if let Err(e) = harrow::session::strict::no_duplicate_keys(line.as_bytes()) {
                panic!("{} line {}: {e}", entry.path().display(), n + 1);
            }
        }
    }
    events
}

/// How many processes on the machine are running `sleep SECONDS`: the tests' way of seeing
/// whether a job a tool started is still alive.
pub fn sleepers(seconds: &str) -> usize {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.starts_with(wanted.as_bytes()))
        .count()
}

/// The real binary, with sessions and configuration kept under `home`.
pub fn harrow_in(home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harrow"));
    cmd.env("HARROW_SESSIONS_DIR", home.join("sessions"))
        .env("XDG_CONFIG_HOME", home)
        .env_remove("HARROW_CONFIG");
    cmd
}

/// Runs `harrow demo --headless --fast` with sessions under `home`; returns its session folder.
pub fn demo_session(home: &Path) -> std::path::PathBuf {
    let out = harrow_in(home).args(["demo", "--headless", "--fast"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_dir(home.join("sessions")).unwrap().next().unwrap().unwrap().path()
}

/// The repository `harrow demo` made under `home` (the cached one, or a `--prep` demo's own).
pub fn demo_repo(home: &Path) -> std::path::PathBuf {
    std::fs::read_dir(home.join("demo-repos"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("textstats")))
        .unwrap()
}

/// Whether bytes meant for a terminal or a file hold a control a terminal would obey: ESC,
/// BEL, DEL or a C1 control.
pub fn holds_controls(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| matches!(b, 0x1b | 0x07 | 0x7f))
        || String::from_utf8_lossy(bytes).chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c))
}

/// A child process that is killed when the test lets go of it, passing or failing, so no run
/// outlives its test.
#[derive(Debug)]
pub struct Reaped(pub std::process::Child);

impl Reaped {
    /// Waits for the process to end on its own: its exit status and what it wrote to its
    /// (piped) standard output.
    pub fn finish(&mut self) -> (std::process::ExitStatus, String) {
        let mut out = String::new();
        if let Some(mut stdout) = self.0.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
        }
        (self.0.wait().unwrap(), out)
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for `child` to end, at most `secs`: what it wrote and how it ended. A test proves a
/// thing happened "at once" by giving the thing it must cut short (a sleeping tool, a delayed
/// model reply) a longer time than `secs`, never by timing it: past `secs` the child is killed
/// and the test fails with `what`.
pub fn ends_within(mut child: std::process::Child, secs: u64, what: &str) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits until `ready` holds, at most 60 s; `what` names it when it never does.
pub fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The index of the first line of `log` that holds every one of `needles`: where an event
/// stands in the session's order, for "this came only after that" checks that need no clock.
pub fn first_line(log: &str, needles: &[&str]) -> usize {
    log.lines()
        .position(|l| needles.iter().all(|n| l.contains(n)))
        .unwrap_or_else(|| panic!("no line holds {needles:?}"))
}

/// A self-signed certificate for `localhost` and its key, made with the `openssl` tool, as
/// `dir/NAME.pem` and `dir/NAME.key`.
pub fn self_signed(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    (cert, key)
}
