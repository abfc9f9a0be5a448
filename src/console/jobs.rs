//! Slow work started from the console runs on a thread of its own and reports back as
//! messages on the loop's channel, so the screen keeps drawing and answering keys while it
//! runs: exporting a session, the interview's model turns.

use super::interview::FromInterview;
use super::screen::Msg;
use crate::export::Progress;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

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

/// Where the console's slow work goes: a thread reporting on the loop's channel, or (for
/// tests without a loop) done in place and reported to the caller at once.
#[derive(Debug, Clone)]
pub enum Jobs {
    Spawned(Sender<Msg>),
    Inline,
}

impl Jobs {
    /// Exports the session in `dir` as Markdown into `export.md` beside its log.
    pub fn export(&self, dir: &Path, id: &str) -> Option<Job> {
        let (dir, id) = (dir.to_owned(), id.to_owned());
        match self {
            Jobs::Inline => Some(Job::Exported(export(&dir, &id, &mut |_| {}))),
            Jobs::Spawned(tx) => {
                let tx = tx.clone();
                let spawned =
                    std::thread::Builder::new().name("harrow-export".into()).spawn(move || {
                        let progress = tx.clone();
                        let result = export(&dir, &id, &mut |p| {
                            let _ = progress.send(Msg::Job(Job::Exporting(p)));
                        });
                        let _ = tx.send(Msg::Job(Job::Exported(result)));
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
