//! Slow work started from the console runs on a thread of its own and reports back as
//! messages on the loop's channel, so the screen keeps drawing and answering keys while it
//! runs: exporting a session, the interview's model turns.

use crate::export::Progress;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// What a job reports.
#[derive(Debug)]
pub enum Job {
    /// An export has read this far.
    Exporting(Progress),
    /// An export finished: where it was written, or why not.
    Exported(Result<PathBuf, String>),
    /// An export was asked to stop, and stopped: nothing was written.
    ExportCancelled,
    /// An evidence file was read, or could not be.
    Evidence(Result<super::evidence::Source, String>),
    /// A diff was read, or could not be.
    Diff(Result<super::diff::DiffView, String>),
    /// What shipping would send was read, or could not be.
    ShipPreview(Result<crate::ship::preview::Preview, String>),
    /// It was sent: where it went, or why not.
    Shipped(Result<String, String>),
    /// A resume the fleet started: at work, or why it did not start (`resume.log`'s last
    /// line).
    Resumed { id: String, outcome: Result<(), String> },
    /// The interview's side of `harrow prep` said something.
    Interview(FromInterview),
    /// What became of a copy to the clipboard, in words (tmux asked whether it lets it through).
    Clipboard(String),
}

/// What the interview's thread tells its screen.
#[derive(Debug)]
pub enum FromInterview {
    /// harrow says something (where the session is, what was written).
    Said(String),
    /// The model asks a question: the person writes the answer.
    Asked(String),
    /// The model reads the repository.
    Reading(String),
    /// The drafted plan, as the files it becomes: the person decides.
    Review(String),
    /// The interview is over.
    Ended,
}

/// Where a job's reports go: into the console loop's channel, addressed to the screen that
/// started it.
pub type Report = Arc<dyn Fn(Job) + Send + Sync>;

/// A job at work: what it does, in words, and the command that does it again when it is left
/// unfinished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtWork {
    pub what: String,
    pub again: Option<String>,
}

/// A job kept while it is at work: what it does, the thread it runs on (which names its kind),
/// and the flag that asks it to stop.
#[derive(Debug)]
struct Held {
    job: AtWork,
    name: &'static str,
    cancel: Arc<AtomicBool>,
}

/// The jobs at work across every screen, by id: quitting waits for them, names them, and says
/// what was left when the person does not wait; a job that can stop part way is asked to.
#[derive(Debug, Clone, Default)]
pub struct Running(Arc<Mutex<(u64, BTreeMap<u64, Held>)>>);

impl Running {
    /// Numbers a job and keeps it until [`Running::done`]; the flag it watches to stop.
    fn start(&self, job: AtWork, name: &'static str) -> (u64, Arc<AtomicBool>) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.0 += 1;
        let id = held.0;
        let cancel = Arc::new(AtomicBool::new(false));
        held.1.insert(id, Held { job, name, cancel: Arc::clone(&cancel) });
        (id, cancel)
    }

    fn done(&self, id: u64) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).1.remove(&id);
    }

    /// The jobs at work now, in the order they started.
    pub fn at_work(&self) -> Vec<AtWork> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.1.values().map(|h| h.job.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).1.is_empty()
    }

    /// Asks every job at work on threads named `name` to stop; what they were doing.
    fn cancel(&self, name: &str) -> Vec<String> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let asked = held.1.values().filter(|h| h.name == name);
        asked
            .map(|h| {
                h.cancel.store(true, Ordering::SeqCst);
                h.job.what.clone()
            })
            .collect()
    }
}

/// What a job's work is handed: where its reports go, and whether it was asked to stop.
struct Doing<'a> {
    report: &'a dyn Fn(Job),
    cancel: &'a AtomicBool,
}

impl Doing<'_> {
    fn report(&self, job: Job) {
        (self.report)(job);
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
}

/// Where the console's slow work goes: a thread reporting to the loop, or (for tests without
/// a loop) done in place and reported to the caller at once.
#[derive(Clone)]
pub enum Jobs {
    /// Each job a thread, kept in `running` until it has made its last report, so quitting
    /// can wait for it.
    Spawned {
        report: Report,
        running: Running,
    },
    Inline,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Jobs::Spawned { .. } => "Jobs::Spawned",
            Jobs::Inline => "Jobs::Inline",
        })
    }
}

impl Jobs {
    /// Runs `work` (described by `job`) on a thread named `name` that reports what it
    /// returns; inline, returns it. A thread that cannot be started is reported as `failed`
    /// says.
    fn run(
        &self,
        (name, job): (&'static str, AtWork),
        work: impl FnOnce(&Doing<'_>) -> Job + Send + 'static,
        failed: impl FnOnce(String) -> Job,
    ) -> Option<Job> {
        match self {
            Jobs::Inline => Some(work(&Doing { report: &|_| {}, cancel: &AtomicBool::new(false) })),
            Jobs::Spawned { report, running } => {
                let (report, left) = (report.clone(), running.clone());
                let (id, cancel) = running.start(job, name);
                let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
                    let last =
                        work(&Doing { report: &|progress| report(progress), cancel: &cancel });
                    left.done(id);
                    report(last);
                });
                spawned.err().map(|e| {
                    running.done(id);
                    failed(e.to_string())
                })
            }
        }
    }

    /// Exports the session in `dir` as Markdown into `export.md` beside its log, reporting
    /// how far it has read.
    pub fn export(&self, dir: &Path, id: &str) -> Option<Job> {
        let (dir, id) = (dir.to_owned(), id.to_owned());
        let job = at_work(format!("exporting {id}"), Some(format!("harrow export {id}")));
        self.run(
            (EXPORT, job),
            move |doing| {
                let mut progress = |p| {
                    doing.report(Job::Exporting(p));
                    if doing.cancelled() {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                };
                match export(&dir, &id, &mut progress) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted && doing.cancelled() => {
                        Job::ExportCancelled
                    }
                    result => Job::Exported(result.map_err(|e| e.to_string())),
                }
            },
            |e| Job::Exported(Err(format!("cannot start the export: {e}"))),
        )
    }

    /// Asks the exports at work to stop (they stop at their next mebibyte of the log, and
    /// write nothing); the words for what is being stopped, when there was one — in the fleet
    /// the export `E` stops may be another session's than the one selected.
    pub fn cancel_export(&self) -> Option<String> {
        let stopped = match self {
            Jobs::Spawned { running, .. } => running.cancel(EXPORT),
            Jobs::Inline => Vec::new(),
        };
        (!stopped.is_empty()).then(|| format!("stopping: {}…", stopped.join(", ")))
    }

    /// Reads the file an evidence pointer names.
    pub fn evidence(&self, inspector: super::inspector::Inspector, n: usize) -> Option<Job> {
        self.run(
            ("harrow-evidence", at_work("reading an evidence file".into(), None)),
            move |_| Job::Evidence(super::inspector::open_evidence(&inspector, n)),
            |e| Job::Evidence(Err(format!("cannot open the evidence: {e}"))),
        )
    }

    /// Reads a diff (git can take a while on a big repository).
    pub fn diff(&self, source: super::attempt::DiffSource) -> Option<Job> {
        self.run(
            ("harrow-diff", at_work("reading a diff".into(), None)),
            move |_| Job::Diff(source.load()),
            |e| Job::Diff(Err(format!("cannot read the diff: {e}"))),
        )
    }
}

impl Jobs {
    /// Resumes the session in `dir` in the background and reports whether it started.
    pub fn resume(&self, dir: &Path, id: &str, trust: bool) -> Option<Job> {
        let (dir, id) = (dir.to_owned(), id.to_owned());
        let who = id.clone();
        let job = at_work(format!("starting {id} again"), Some(format!("harrow resume {id}")));
        self.run(
            ("harrow-resume", job),
            move |_| Job::Resumed { outcome: super::resume_and_watch(&dir, &id, trust), id },
            move |e| Job::Resumed { id: who, outcome: Err(format!("cannot start: {e}")) },
        )
    }

    /// Puts `text` (already sent to the terminal as OSC 52) where this machine keeps copies
    /// — tmux's paste buffer, or a clipboard program — and says where it went.
    pub fn clipboard(&self, text: String) -> Option<Job> {
        let lines = text.lines().count();
        self.run(
            ("harrow-clipboard", at_work("copying to the clipboard".into(), None)),
            move |_| Job::Clipboard(super::clipboard::deliver(&text)),
            move |_| Job::Clipboard(super::clipboard::report(lines, None, None)),
        )
    }

    /// Reads what shipping the session would send.
    pub fn ship_preview(&self, dir: &Path, id: &str) -> Option<Job> {
        let found = crate::session::discover::Found::at(dir, id);
        let job = at_work(format!("reading what shipping {id} would send"), None);
        self.run(
            ("harrow-ship", job),
            move |_| {
                Job::ShipPreview(forge_config().and_then(|forge| {
                    crate::ship::preview::preview(&found, &forge).map_err(|e| e.to_string())
                }))
            },
            |e| Job::ShipPreview(Err(format!("cannot read the session: {e}"))),
        )
    }

    /// Pushes the session's branch, and opens its pull request when `pr`.
    pub fn ship(&self, dir: &Path, id: &str, pr: bool, partial: bool) -> Option<Job> {
        let found = crate::session::discover::Found::at(dir, id);
        let (verb, what) =
            if pr { ("pr", "opening a pull request for") } else { ("push", "pushing") };
        let job = at_work(format!("{what} {id}"), Some(format!("harrow {verb} {id}")));
        self.run(
            ("harrow-ship", job),
            move |_| {
                Job::Shipped(
                    forge_config()
                        .and_then(|forge| crate::ship::ship_and_say(&found, pr, partial, forge)),
                )
            },
            |e| Job::Shipped(Err(format!("cannot start: {e}"))),
        )
    }
}

fn at_work(what: String, again: Option<String>) -> AtWork {
    AtWork { what, again }
}

/// The configuration's `[forge]`; a configuration that does not parse is said, not ignored.
fn forge_config() -> Result<crate::config::ForgeSection, String> {
    crate::config::Config::load(None).map(|(c, _)| c.forge).map_err(|e| e.to_string())
}

/// What the console says of an export stopped part way.
pub const EXPORT_STOPPED: &str = "export stopped: nothing was written";

/// The thread an export runs on, which names its kind for [`Jobs::cancel_export`].
const EXPORT: &str = "harrow-export";

fn export(
    dir: &Path,
    id: &str,
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
) -> std::io::Result<PathBuf> {
    let path = crate::session::dir::SessionDir::new(dir).export_md();
    crate::export::render_reporting(dir, id, crate::export::Format::Md, progress)
        .and_then(|text| crate::session::atomic::write_atomic(&path, text.as_bytes()))
        .map(|()| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn an_export_asked_to_stop_reads_no_further_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let line = |seq: u32, kind: &str, payload: &str| {
            format!(
                "{{\"ts\":\"2026-11-29T12:00:00.000Z\",\"seq\":{seq},\"type\":\"{kind}\",\"payload\":{payload}}}\n"
            )
        };
        // About 3 MiB: the export reports (and looks at its flag) after each mebibyte.
        let mut log = line(1, "session_start", "{}");
        let output = "x".repeat(1000);
        for seq in 2..3000 {
            let payload =
                format!("{{\"task_id\":\"T-001\",\"tool\":\"read_file\",\"output\":\"{output}\"}}");
            log.push_str(&line(seq, "tool_result", &payload));
        }
        std::fs::write(dir.path().join("events.jsonl"), log).unwrap();
        let (said, heard) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        let wait = Mutex::new(wait);
        // Each report of progress waits for the test's word: the stop is asked while the
        // export is between two mebibytes, whatever the machine's pace.
        let report: Report = Arc::new(move |job| {
            let progress = matches!(job, Job::Exporting(_));
            let _ = said.send(job);
            if progress {
                let _ = wait.lock().unwrap_or_else(PoisonError::into_inner).recv();
            }
        });
        let jobs = Jobs::Spawned { report, running: Running::default() };
        assert_eq!(jobs.cancel_export(), None, "no export at work yet");
        assert!(jobs.export(dir.path(), "s").is_none());
        assert!(matches!(heard.recv().unwrap(), Job::Exporting(p) if p.read < p.total));
        assert_eq!(jobs.cancel_export().as_deref(), Some("stopping: exporting s…"));
        go.send(()).unwrap();
        let last = heard.recv().unwrap();
        assert!(matches!(last, Job::ExportCancelled), "{last:?}");
        assert!(!crate::session::dir::SessionDir::new(dir.path()).export_md().exists());
        drop((go, jobs));
        assert!(heard.recv().is_err(), "nothing more from a stopped export");
    }
}
