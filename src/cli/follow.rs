//! `harrow sessions --follow`: one line per change of any run's state, for scripts and chat
//! bots, and the `[notify] command` that carries a hold to a phone or a channel.

use crate::config::NotifySection;
use crate::session::discover::Root;
use crate::session::fleet::{Change, Fleet, SessionRow};
use crate::session::status::SessionStatus;
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
    pub from: Option<SessionStatus>,
    /// The row's `status` again, under the key `--follow` wrote before every list of runs
    /// read one row type: scripts written then keep working. It goes in a later release.
    pub state: SessionStatus,
    #[serde(flatten)]
    pub row: &'a SessionRow,
}

impl FollowLine<'_> {
    pub fn of(change: &Change) -> FollowLine<'_> {
        FollowLine {
            ts: crate::session::timestamp::now(),
            from: change.from,
            state: change.row.status,
            row: &change.row,
        }
    }
}

/// The change in words: `12:04:31 20261126-… held T-002 (waits for the operator)`.
pub fn sentence(change: &Change) -> String {
    let r = &change.row;
    let task = r.held_task.as_ref().map(|t| format!(" {t}")).unwrap_or_default();
    let why = r.held_reason.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
    let was = change.from.filter(|f| *f != r.status).map(|f| format!(", was {f}"));
    let progress = || {
        let work: Vec<String> =
            r.at_work.iter().map(|w| format!("{} (attempt {})", w.task, w.attempt)).collect();
        let work =
            if work.is_empty() { String::new() } else { format!(", at work {}", work.join(", ")) };
        format!(": {}/{} done{work}", r.tasks_done, r.tasks_total)
    };
    let tail =
        was.unwrap_or_else(|| if change.from.is_some() { progress() } else { String::new() });
    crate::printable::line(&format!("{} {}{task}{why}{tail}", r.id, r.status))
}

/// How many notify programs run at once: a burst of holds is carried out together, and a
/// program that hangs holds one slot until its timeout, never the rest.
const NOTIFY_AT_ONCE: usize = 4;

/// How many notifications wait for a slot at most; past it they are dropped with a notice (a
/// program that hangs every time must not make the queue grow without end).
const NOTIFY_QUEUE: usize = 64;

/// Runs the user's notify program with `line` on its stdin, stopped after its timeout, which
/// starts when the program does and covers writing the line (a program that never reads its
/// stdin cannot hold harrow past it). The program runs in a process group of its own, so what
/// it started is stopped with it. Returns what went wrong, for a notice.
pub fn run_notify(notify: &NotifySection, line: &str) -> Option<String> {
    use std::os::unix::process::CommandExt;
    let (program, args) = notify.command.split_first()?;
    let limit = Duration::from_secs(notify.timeout_seconds.unwrap_or(10));
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Some(format!("the notify command {program} did not start: {e}")),
    };
    let started = Instant::now();
    if let Some(mut stdin) = child.stdin.take() {
        let text = format!("{line}\n");
        // The write ends when the program reads the line, exits or is killed.
        let _ = std::thread::Builder::new()
            .name("harrow-notify-write".into())
            .spawn(move || stdin.write_all(text.as_bytes()));
    }
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return None,
            Ok(Some(status)) => return Some(format!("the notify command {program} {status}")),
            Ok(None) if started.elapsed() >= limit => {
                if let Ok(pid) = i32::try_from(child.id()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
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

/// Notify programs run off the following loop, [`NOTIFY_AT_ONCE`] at a time, each problem
/// said on stderr.
#[derive(Debug)]
pub struct Notifier {
    queue: Option<std::sync::mpsc::SyncSender<String>>,
}

impl Notifier {
    /// Starts the runners; with no command configured, nothing runs.
    pub fn new(notify: &NotifySection) -> Notifier {
        if notify.command.is_empty() {
            return Notifier { queue: None };
        }
        let (send, receive) = std::sync::mpsc::sync_channel::<String>(NOTIFY_QUEUE);
        let receive = std::sync::Arc::new(std::sync::Mutex::new(receive));
        for n in 0..NOTIFY_AT_ONCE {
            let (receive, notify) = (std::sync::Arc::clone(&receive), notify.clone());
            let _ =
                std::thread::Builder::new().name(format!("harrow-notify-{n}")).spawn(move || {
                    loop {
                        let next = receive.lock().map(|r| r.recv());
                        let Ok(Ok(line)) = next else { return };
                        if let Some(problem) = run_notify(&notify, &line) {
                            eprintln!("harrow: {}", crate::printable::line(&problem));
                        }
                    }
                });
        }
        Notifier { queue: Some(send) }
    }

    /// Queues `line` for the notify program.
    pub fn send(&self, line: String) {
        if let Some(queue) = &self.queue
            && queue.try_send(line).is_err()
        {
            eprintln!(
                "harrow: {NOTIFY_QUEUE} notifications wait for the notify command already; this one is dropped"
            );
        }
    }
}

/// Follows every session under `roots` until stdout goes away or the process is stopped.
pub fn follow(roots: Vec<Root>, json: bool, notify: &NotifySection) -> Result<ExitCode> {
    let mut fleet = Fleet::new(roots);
    let notifier = Notifier::new(notify);
    let mut out = std::io::stdout().lock();
    loop {
        let (changes, _) = fleet.refresh();
        for change in &changes {
            let line = crate::printable::json_line(&FollowLine::of(change))?;
            let text = if json { line.clone() } else { sentence(change) };
            if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
                return Ok(ExitCode::SUCCESS);
            }
            if change.calls_a_person() {
                notifier.send(line);
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
    fn a_follow_line_escapes_c1_controls_from_names_and_reasons() {
        let mut row = SessionRow::new("20261126-x\u{9b}2J".into(), "/s".into());
        row.feature = Some("feat\u{9b}".into());
        row.status = SessionStatus::Held;
        row.held_task = Some("T-\u{9b}1".into());
        row.held_reason = Some("why\u{9d}0;title\u{7}".into());
        let change = Change { id: row.id.clone(), from: None, row, appeared: false };
        let line = crate::printable::json_line(&FollowLine::of(&change)).unwrap();
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(line.contains("\\u009b") && line.contains("\\u009d"), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["id"], "20261126-x\u{9b}2J", "still the same JSON");
    }

    /// Whether a process whose command line starts with `cmdline` still runs.
    fn sleeping(cmdline: &[u8]) -> bool {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| c.starts_with(cmdline))
    }

    #[test]
    fn a_notify_program_that_hangs_is_stopped_at_its_timeout_and_said() {
        let said = run_notify(&notify(&["sleep", "37"], 1), "{}").unwrap_or_default();
        assert!(said.contains("took over 1 s and was stopped"), "{said}");
        assert!(!sleeping(b"sleep\x0037\x00"), "the program was killed, not left behind");
    }

    /// A program that never reads its stdin, given a line larger than a pipe holds, is stopped
    /// at its timeout (the write is inside it), and so is everything it started.
    #[test]
    fn the_timeout_covers_writing_the_line_and_ends_what_the_program_started() {
        let big = "x".repeat(200_000);
        let said = run_notify(&notify(&["sh", "-c", "sleep 41; sleep 41"], 1), &big);
        assert!(said.unwrap_or_default().contains("took over 1 s"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while sleeping(b"sleep\x0041\x00") {
            assert!(Instant::now() < deadline, "the program's own children were stopped too");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Notifications run side by side: each of eight programs waits until four have
    /// started, so they can all end only when four run at once.
    #[test]
    fn notifications_run_side_by_side() {
        let tmp = tempfile::tempdir().unwrap();
        let (started, out) = (tmp.path().join("started"), tmp.path().join("seen"));
        let command = format!(
            "echo x >> {s}; until [ $(wc -l < {s}) -ge 4 ]; do sleep 0.02; done; cat >> {o}",
            s = started.display(),
            o = out.display()
        );
        let notifier = Notifier::new(&notify(&["sh", "-c", &command], 120));
        for n in 0..8 {
            notifier.send(format!("{{\"n\":{n}}}"));
        }
        let deadline = Instant::now() + Duration::from_secs(100);
        while std::fs::read_to_string(&out).map_or(0, |t| t.lines().count()) < 8 {
            assert!(Instant::now() < deadline, "four never ran at once");
            std::thread::sleep(Duration::from_millis(20));
        }
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
