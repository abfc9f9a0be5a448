//! The fleet over many sessions, as a whole process: copies of the demo's session (its log,
//! and the summary a run writes) and 5 sessions of 100,000 events whose summary is far behind
//! their log's end, then `harrow sessions --follow --json` until it has written a line for
//! every session. Reports the time to that point (what the fleet view needs before its first
//! full frame; the view itself draws at once and fills in as rows come), how long a change to
//! one session takes to be followed, the CPU the follower spends idle (it polls every folder,
//! as it must on a network filesystem) and the peak memory.
//! `cargo bench --bench fleet` (2,000 sessions; `FLEET_SESSIONS=10000` for more)

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use nix::sys::resource::{UsageWho, getrusage};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const SESSIONS_DEFAULT: usize = 2_000;
const BIG: usize = 5;
const BIG_EVENTS: usize = 100_000;

fn demo_log() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harrow");
    let session = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    std::fs::read_to_string(session.join("events.jsonl")).unwrap()
}

/// A session folder `id` under `root` with `log` as its events and the summary harrow writes
/// for it, folded up to `summary_at` bytes of it.
fn session(root: &Path, id: &str, log: &str, summary_at: usize) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.jsonl"), log).unwrap();
    let head = &log[..summary_at];
    let mut fold = harrow::session::summary::SummaryFold::new(Some(id.to_owned()));
    let mut kept = harrow::session::fact::KeptValues::default();
    for line in head.lines() {
        if let Ok(fact) = harrow::session::fact::Fact::decode(line.as_bytes(), &mut kept) {
            fold.apply(&fact);
        }
    }
    let report = harrow::session::scan::ScanReport {
        lines: head.lines().count() as u64,
        events: head.lines().count() as u64,
        end_offset: summary_at as u64,
        ..Default::default()
    };
    let summary = fold.finish(&report);
    std::fs::write(dir.join("summary.json"), serde_json::to_vec(&summary).unwrap()).unwrap();
}

/// User and system CPU of process `pid` so far, in seconds.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn main() {
    let sessions: usize = std::env::var("FLEET_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(SESSIONS_DEFAULT);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    let log = demo_log();
    for n in 0..sessions - BIG {
        session(&root, &format!("20261126-{:06}-{n:06x}", n % 240_000), &log, log.len());
    }
    // A long run: the demo's start, then 100,000 tool calls, its summary from the start.
    let first = log.lines().next().unwrap();
    let call = log.lines().find(|l| l.contains("\"type\":\"tool_call\"")).unwrap();
    let mut big = String::with_capacity(BIG_EVENTS * (call.len() + 1));
    big.push_str(first);
    big.push('\n');
    for _ in 0..BIG_EVENTS {
        big.push_str(call);
        big.push('\n');
    }
    for n in 0..BIG {
        session(&root, &format!("20261126-999999-big{n:03}"), &big, first.len() + 1);
    }
    let bytes: u64 = walk(&root);
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["sessions", "--follow", "--json", "--dir", root.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", tmp.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..sessions {
        out.next().unwrap().unwrap();
    }
    let first_look = started.elapsed();
    // Idle: nothing changes; what does following cost?
    let before = cpu_of(child.id());
    let idle = std::time::Duration::from_secs(5);
    std::thread::sleep(idle);
    let idle_share = (cpu_of(child.id()) - before) / idle.as_secs_f64();
    // One session changes: it is stopped anew. How long until the follower says so?
    let id = "20261126-000007-000007";
    let stop = r#"{"ts":"2026-11-26T01:00:00.000Z","seq":999999,"type":"stop","payload":{"reason":"interrupted","detail":"bench"}}"#;
    let changed = Instant::now();
    let mut log =
        std::fs::OpenOptions::new().append(true).open(root.join(id).join("events.jsonl")).unwrap();
    writeln!(log, "{stop}").unwrap();
    drop(log);
    loop {
        if out.next().unwrap().unwrap().contains(id) {
            break;
        }
    }
    let follow = changed.elapsed();
    child.kill().unwrap();
    child.wait().unwrap();
    let peak = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as f64 / 1024.0;
    let mut stdout = std::io::stdout();
    writeln!(
        stdout,
        "fleet first look: {sessions} sessions ({BIG} of {BIG_EVENTS} events; {:.0} MB of logs) in {:.0} ms, peak {peak:.1} MB; a change followed in {:.0} ms; idle following costs {:.0} % of a core",
        bytes as f64 / 1e6,
        first_look.as_secs_f64() * 1000.0,
        follow.as_secs_f64() * 1000.0,
        idle_share * 100.0
    )
    .unwrap();
}

fn walk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() { walk(&p) } else { e.metadata().map_or(0, |m| m.len()) }
        })
        .sum()
}
