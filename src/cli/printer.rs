//! The headless run's printed log: one line per significant event as the log grows, and
//! after a quiet spell a heartbeat that says what the run waits on.

use super::format::terminal_line;
use crate::console::describe::describe;
use crate::session::event::{Event, EventKind};
use crate::session::fact::{Fact, KeptValues};
use crate::session::state::TaskState;
use crate::session::tail::{self, TailEvent};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a headless run may be silent before it says what it is waiting on.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// What the log said last, for the heartbeat.
#[derive(Debug)]
struct LastSaid {
    /// When the last line came (or the printer started).
    at: Instant,
    /// Its type, role and tool.
    kind: Option<EventKind>,
    role: Option<String>,
    tool: Option<String>,
    /// The task held for a person and why, from its move to `needs_operator` until it
    /// moves on: what a quiet run waits on then.
    held: Option<String>,
}

/// The heartbeat line after `quiet` of silence: the reply streaming in (role, time, size so
/// far), the model being waited on, or the tool at work.
fn heartbeat(dir: &Path, last: &LastSaid, quiet: Duration) -> String {
    let secs = quiet.as_secs();
    if let Some(reply) = crate::session::live::read(dir) {
        let elapsed = (jiff::Timestamp::now().as_millisecond() - reply.started_ms).max(0) / 1000;
        return format!(
            "  … {} on {}: replying for {elapsed} s, {} chars so far",
            reply.role, reply.task, reply.chars
        );
    }
    if let Some(held) = &last.held {
        return format!(
            "  … waiting {secs} s for your decision: {held}; decide with `harrow control` (approve, reject, review, rewind …)"
        );
    }
    match last.kind {
        Some(EventKind::PromptAssembled | EventKind::ModelCall) => format!(
            "  … waiting on the {} model for {secs} s (nothing received yet)",
            last.role.as_deref().unwrap_or("worker")
        ),
        Some(EventKind::ToolCall) => {
            format!("  … {} still running after {secs} s", last.tool.as_deref().unwrap_or("a tool"))
        }
        _ => format!("  … still working ({secs} s since the last event)"),
    }
}

/// How often the printed log looks for new lines: a person reading a terminal does not see the
/// lag, and a run that answers quickly appends lines faster than it is worth waking for each.
/// When the run ends the printer is told to look at once.
const PRINT_EVERY: Duration = Duration::from_millis(200);

/// How often a printer with nothing to print wakes to see whether a heartbeat is due.
const QUIET_LOOK: Duration = Duration::from_secs(1);

/// Prints the session's events as they are appended, on a thread of its own; after
/// [`HEARTBEAT`] of silence, says what the run waits on.
#[derive(Debug)]
pub struct Printer {
    log: PathBuf,
    finished: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Printer {
    /// Starts printing the lines `dir`'s log gains after byte `from`.
    pub fn start(dir: &Path, from: u64) -> Printer {
        let finished = Arc::new(AtomicU64::new(u64::MAX));
        let thread = print_log(dir, from, Arc::clone(&finished));
        Printer { log: crate::session::dir::SessionDir::new(dir).events(), finished, thread }
    }

    /// Returns once every line the log holds now — the run that wrote it is over — is printed.
    pub fn finish(self) {
        let len = std::fs::metadata(&self.log).map_or(0, |m| m.len());
        self.finished.store(len, Ordering::SeqCst);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

fn print_log(dir: &Path, from: u64, finished: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    let path = crate::session::dir::SessionDir::new(dir).events();
    let dir = dir.to_path_buf();
    let delivered = Arc::new(AtomicU64::new(from));
    let seen = Arc::clone(&delivered);
    let last = Arc::new(std::sync::Mutex::new(LastSaid {
        at: Instant::now(),
        kind: None,
        role: None,
        tool: None,
        held: None,
    }));
    let heard = Arc::clone(&last);
    std::thread::spawn(move || {
        let tailer = tail::poll(&path, from, 1, PRINT_EVERY, move |ev| {
            if let TailEvent::Lines(lines) = ev {
                let mut out = super::out::stdout();
                let mut kept = KeptValues::default();
                for (at, line) in lines {
                    if let Some(text) = Event::decode(&line).ok().as_ref().and_then(describe) {
                        let _ = writeln!(out, "{}", terminal_line(&text));
                    }
                    // The sparse read: only the few fields the heartbeat names.
                    if let (Ok(fact), Ok(mut said)) = (Fact::decode(&line, &mut kept), heard.lock())
                    {
                        let p = &fact.payload;
                        let held = if fact.event_kind() == Some(EventKind::TaskState) {
                            let to = p.to.get().map(TaskState::read);
                            (to == Some(TaskState::NeedsOperator)).then(|| {
                                format!(
                                    "{} waits for you: {}",
                                    p.task_id.get().unwrap_or("a task"),
                                    p.reason.get().unwrap_or("held")
                                )
                            })
                        } else {
                            said.held.take()
                        };
                        *said = LastSaid {
                            at: Instant::now(),
                            kind: fact.event_kind(),
                            role: p.role.get().or(p.phase.get()).map(str::to_owned),
                            tool: p.tool.get().map(str::to_owned),
                            held,
                        };
                    }
                    seen.store(at.offset + u64::from(at.len) + 1, Ordering::SeqCst);
                }
                let _ = out.flush();
            }
        });
        let mut beat = Instant::now();
        loop {
            let end = finished.load(Ordering::SeqCst);
            if end != u64::MAX {
                if delivered.load(Ordering::SeqCst) >= end {
                    break;
                }
                tailer.look_now();
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            if let Ok(said) = last.lock()
                && said.at.elapsed() >= HEARTBEAT
                && beat.elapsed() >= HEARTBEAT
            {
                let mut out = super::out::stdout();
                let quiet = said.at.elapsed();
                let _ = writeln!(out, "{}", terminal_line(&heartbeat(&dir, &said, quiet)));
                let _ = out.flush();
                beat = Instant::now();
            }
            std::thread::park_timeout(QUIET_LOOK);
        }
        drop(tailer);
    })
}
