//! Slow work started from the console runs on a thread of its own and reports back as
//! messages on the loop's channel, so the screen keeps drawing and answering keys while it
//! runs: exporting a session, the interview's model turns.

use crate::export::Progress;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a job reports.
#[derive(Debug)]
pub enum Job {
    /// An export has read this far.
    Exporting(Progress),
    /// An export finished: where it was written, or why not.
    Exported(Result<PathBuf, String>),
    /// The interview's side of `harrow prep` said something.
    Interview(FromInterview),
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

/// Where a job's reports go: into the console loop's channel.
pub type Report = Arc<dyn Fn(Job) + Send + Sync>;

/// Where the console's slow work goes: a thread reporting to the loop, or (for tests without
/// a loop) done in place and reported to the caller at once.
#[derive(Clone)]
pub enum Jobs {
    Spawned(Report),
    Inline,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Jobs::Spawned(_) => "Jobs::Spawned",
            Jobs::Inline => "Jobs::Inline",
        })
    }
}

impl Jobs {
    /// Exports the session in `dir` as Markdown into `export.md` beside its log.
    pub fn export(&self, dir: &Path, id: &str) -> Option<Job> {
        let (dir, id) = (dir.to_owned(), id.to_owned());
        match self {
            Jobs::Inline => Some(Job::Exported(export(&dir, &id, &mut |_| {}))),
            Jobs::Spawned(report) => {
                let report = report.clone();
                let spawned =
                    std::thread::Builder::new().name("harrow-export".into()).spawn(move || {
                        let result = export(&dir, &id, &mut |p| report(Job::Exporting(p)));
                        report(Job::Exported(result));
                    });
                match spawned {
                    Ok(_) => None,
                    Err(e) => Some(Job::Exported(Err(format!("cannot start the export: {e}")))),
                }
            }
        }
    }
}

fn export(dir: &Path, id: &str, progress: &mut dyn FnMut(Progress)) -> Result<PathBuf, String> {
    let path = dir.join("export.md");
    crate::export::render_reporting(dir, id, crate::export::Format::Md, progress)
        .and_then(|text| crate::session::atomic::write_atomic(&path, text.as_bytes()))
        .map(|()| path)
        .map_err(|e| e.to_string())
}
