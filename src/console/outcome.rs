//! What a key did in a view over the panes, for the app to act on: views answer with this
//! rather than reaching into the app, so each stays a type of its own.

use crate::session::control::Op;

/// Where a rewind takes its task: an attempt as it was judged, or a turn of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindTo {
    pub attempt: u64,
    pub turn: Option<u64>,
}

/// What a command carries beyond its words: where a rewind goes, or a review's comments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Detail {
    #[default]
    None,
    Rewind(RewindTo),
    Review(ReviewDraft),
}

/// A review being written: the comments made in the diff view, and its verdict — a
/// rejection category, or none to accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewDraft {
    pub comments: Vec<crate::session::event::ReviewedLine>,
    pub category: Option<crate::session::state::Category>,
}

impl ReviewDraft {
    /// The next verdict, for Tab: each category in turn, then accept, then round again.
    pub fn next_verdict(&mut self) {
        let all = crate::session::state::Category::ALL;
        let at = self.category.as_ref().and_then(|c| all.iter().position(|k| k == c));
        self.category = match at {
            None => all.first().cloned(),
            Some(i) => all.get(i + 1).cloned(),
        };
    }

    /// The review editor's title: the task, the verdict Tab turns, how many comments.
    pub fn title(&self, task: &str) -> String {
        format!(
            "Review {}: {} · {} comment(s) · Tab: another verdict",
            crate::printable::line(task),
            self.verdict(),
            self.comments.len()
        )
    }

    /// The verdict in words, for the editor's title.
    pub fn verdict(&self) -> String {
        match &self.category {
            Some(c) => format!("reject ({})", c.as_str()),
            None => "accept, with the comments".into(),
        }
    }
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
    Decide { op: Op, task: Option<String>, text: String, detail: Detail },
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
