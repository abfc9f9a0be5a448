//! What a key did in an overlay, for the app to act on: overlays answer with this rather than
//! reaching into the app, so each stays a type of its own.

use crate::session::control::Op;

/// Where a rewind takes its task: an attempt as it was judged, or a turn of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindTo {
    pub attempt: u64,
    pub turn: Option<u64>,
}

/// What a key did in an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled inside the overlay (scrolled, typed).
    Stay,
    /// The overlay has no use for the action: a key its table binds must never land here (a
    /// test walks every table), so this only ever answers a key typed into a text box.
    Unbound,
    /// The overlay closed.
    Closed,
    /// Open evidence pointer n of the inspector.
    OpenEvidence(usize),
    /// The editor's command, ready to send.
    Decide { op: Op, task: Option<String>, text: String, to: Option<RewindTo> },
    /// Search for this.
    Search(String),
    /// Quit, stopping the run first or not.
    Quit { stop: bool },
    /// A one-line answer for the hint line.
    Notice(String),
    /// Start the stopped run again so it acts on the decision.
    Resume,
    /// Open the diff of the verdict at this position, since the attempt before it or not.
    OpenDiff { pos: usize, since_previous: bool },
    /// Put this text on the clipboard.
    Copy(String),
    /// Push the ended run's branch, and open its pull request when `pr`.
    Ship { pr: bool, partial: bool },
}
