//! What only the event loop can do for the app — write to the session folder, change the
//! terminal, start a process — handed back by the app as values, so it stays testable and a
//! failure is reported back to it instead of ending the console.

use crate::session::control::{self, Op};

/// Something only the event loop can do: write to the session folder, change the terminal,
/// start a process. `act` hands these back instead of doing them, so a failure is reported to
/// the app (a notice) and never ends the console.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Append an operator command to the session's control file.
    Send(control::Command),
    /// Capture the mouse, or give it back to the terminal.
    Mouse(bool),
    /// Call the person: the bell and a terminal notification, as configured.
    Notify(String),
    /// Start `harrow resume` on this session in the background, to act on a decision.
    Resume,
    /// Write the session out as Markdown into its folder.
    Export,
    /// Put text on the terminal's clipboard (OSC 52).
    Copy(String),
    /// Read evidence pointer n of this inspector's verdict (a file of the worktree): a job.
    LoadEvidence(Box<super::inspector::Inspector>, usize),
    /// Read a diff (git may take a while): a job, shown when it is read.
    LoadDiff(Box<super::attempt::DiffSource>),
    /// Read what shipping the session would send: a job, shown as the ship offer.
    ShipPreview,
    /// Push the session's branch, and open its pull request when `pr`: a job.
    Ship { pr: bool, partial: bool },
}

/// An operator command as the console sends it.
pub fn command(
    op: Op,
    task: Option<String>,
    reason: Option<String>,
    text: Option<String>,
) -> control::Command {
    control::Command::new(
        op,
        task,
        reason,
        text,
        &crate::session::vocabulary::CommandSource::Console,
    )
}
