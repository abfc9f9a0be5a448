//! `harrow sessions --follow`: one line per change of any run's state, for scripts and chat
//! bots, and the `[notify] command` that carries a hold to a phone or a channel.

use crate::config::NotifySection;
use crate::session::discover::Root;
use crate::session::fleet::{Change, Fleet, FleetRow, RunState};
use color_eyre::eyre::Result;
use serde::Serialize;
use std::io::Write;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How often the session folders are looked at again: a change reaches the output within
/// this (a network filesystem sends no notifications, so the fleet polls).
pub const POLL: Duration = Duration::from_millis(250);

/// One line of `--follow --json`.
#[derive(Debug, Serialize)]
pub struct FollowLine<'a> {
    pub ts: String,
    /// The state before, absent for a run seen for the first time.
    pub from: Option<RunState>,
    #[serde(flatten)]
    pub row: &'a FleetRow,
}

impl FollowLine<'_> {
    pub fn of(change: &Change) -> FollowLine<'_> {
        FollowLine { ts: crate::session::timestamp::now(), from: change.from, row: &change.row }
    }
}

/// The change in words: `12:04:31 20261126-… held T-002 (waits for the operator)`.
pub fn sentence(change: &Change) -> String {
    let r = &change.row;
    let task = r.held_task.as_ref().map(|t| format!(" {t}")).unwrap_or_default();
    let why = r.held_reason.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
    let was = change.from.map(|f| format!(", was {f}")).unwrap_or_default();
    crate::printable::line(&format!("{} {}{task}{why}{was}", r.id, r.state))
}

/// Runs the user's notify program with `line` on its stdin, stopped after its timeout.
/// Returns what went wrong, for a notice.
pub fn run_notify(notify: &NotifySection, line: &str) -> Option<String> {
    let (program, args) = notify.command.split_first()?;
    let limit = Duration::from_secs(notify.timeout_seconds.unwrap_or(10));
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Some(format!("the notify command {program} did not start: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = writeln!(stdin, "{line}");
    }
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return None,
            Ok(Some(status)) => return Some(format!("the notify command {program} {status}")),
            Ok(None) if started.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Some(format!(
                    "the notify command {program} took over {} s and was stopped",
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Some(format!("the notify command {program}: {e}")),
        }
    }
}

/// Follows every session under `roots` until stdout goes away or the process is stopped.
pub fn follow(roots: Vec<Root>, json: bool, notify: &NotifySection) -> Result<ExitCode> {
    let mut fleet = Fleet::new(roots);
    let mut out = std::io::stdout().lock();
    loop {
        let (changes, _) = fleet.refresh();
        for change in &changes {
            let line = serde_json::to_string(&FollowLine::of(change))?;
            let text = if json { line.clone() } else { sentence(change) };
            if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
                return Ok(ExitCode::SUCCESS);
            }
            if change.calls_a_person()
                && let Some(problem) = run_notify(notify, &line)
            {
                eprintln!("harrow: {problem}");
            }
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notify(command: &[&str], secs: u64) -> NotifySection {
        NotifySection {
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            timeout_seconds: Some(secs),
        }
    }

    #[test]
    fn a_notify_program_that_hangs_is_stopped_at_its_timeout_and_said() {
        let started = Instant::now();
        let said = run_notify(&notify(&["sleep", "37"], 1), "{}").unwrap_or_default();
        assert!(said.contains("took over 1 s and was stopped"), "{said}");
        assert!(started.elapsed() < Duration::from_secs(10), "bounded: {:?}", started.elapsed());
        let sleeping = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| c.starts_with(b"sleep\x0037\x00"));
        assert!(!sleeping, "the program was killed, not left behind");
    }

    #[test]
    fn a_notify_program_that_fails_or_is_missing_is_a_notice() {
        let failed = run_notify(&notify(&["false"], 5), "{}").unwrap_or_default();
        assert!(failed.contains("the notify command false exit status: 1"), "{failed}");
        let missing = run_notify(&notify(&["/nonexistent/notify-me"], 5), "{}").unwrap_or_default();
        assert!(missing.contains("did not start"), "{missing}");
        assert_eq!(run_notify(&notify(&["cat"], 5), "{\"id\":1}"), None);
        assert_eq!(run_notify(&NotifySection::default(), "{}"), None, "no command, nothing run");
    }
}
