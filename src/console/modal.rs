//! The overlays that cover the panes — help, verdict inspector, evidence view, decision
//! editor, search box, quit prompt — each taking its own keys from its own table and answering
//! with an [`Outcome`] the app acts on. At most one is open at a time (the help can sit over
//! the inspector and goes back to it).

use super::diff::DiffView;
use super::evidence::Source;
use super::inspector::Inspector;
use super::keymap::{Action, Mode, action_for};
use super::row::RowView;
use super::scroll::Scroll;
use crate::session::control::Op;
use crossterm::event::KeyEvent;
use tui_textarea::TextArea;

/// What covers the panes.
#[derive(Debug, Default)]
pub enum Overlay {
    #[default]
    None,
    /// The key table of `of`, scrolled; Esc goes back to `back`.
    Help {
        of: Mode,
        scroll: Scroll,
        back: Box<Overlay>,
    },
    Inspector(Inspector),
    /// Quitting while the run goes on: what to do with the run.
    QuitPrompt,
    /// Typing the reason or note that goes with an operator command.
    Editor(Box<Editor>),
    /// An evidence pointer opened at its file; Esc goes back to the inspector.
    Source(Box<(Source, Inspector)>),
    /// Typing what to search for: the worker stream, or the row open behind it.
    Search(Box<TextArea<'static>>, Box<Overlay>),
    /// A worker stream row in full.
    Row(Box<RowView>),
    /// A decision was written but no run is there to act on it: resume the session?
    ResumeOffer(Op),
    /// The diff of a judged attempt; Esc goes back to what was open before.
    Diff(Box<DiffView>, Box<Overlay>),
}

/// An operator command being written: its reason, guidance or note in a text editor.
#[derive(Debug)]
pub struct Editor {
    pub op: Op,
    pub task: Option<String>,
    pub title: String,
    pub text: TextArea<'static>,
}

/// What a key did in an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled inside the overlay (scrolled, typed), or meant nothing here.
    Stay,
    /// The overlay closed.
    Closed,
    /// Open evidence pointer n of the inspector.
    OpenEvidence(usize),
    /// The editor's command, ready to send.
    Decide { op: Op, task: Option<String>, text: String },
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
}

impl Overlay {
    /// The key table in force while this overlay is open.
    pub fn mode(&self) -> Mode {
        match self {
            Overlay::None => Mode::Main,
            Overlay::Help { .. } => Mode::Help,
            Overlay::Inspector(_) => Mode::Inspector,
            Overlay::QuitPrompt => Mode::QuitPrompt,
            Overlay::Editor(_) => Mode::Editor,
            Overlay::Source(_) => Mode::FileView,
            Overlay::Search(..) => Mode::Search,
            Overlay::Row(_) => Mode::Row,
            Overlay::ResumeOffer(_) => Mode::ResumePrompt,
            Overlay::Diff(..) => Mode::Diff,
        }
    }

    pub fn is_open(&self) -> bool {
        !matches!(self, Overlay::None)
    }

    /// The help over the panes (`back` none) or over an overlay.
    pub fn help(of: Mode, back: Overlay) -> Overlay {
        Overlay::Help { of, scroll: Scroll::default(), back: Box::new(back) }
    }

    /// A text box with a placeholder, and text already in it.
    pub fn text_box(placeholder: &str, text: &str) -> TextArea<'static> {
        let mut area = TextArea::default();
        area.set_placeholder_text(placeholder);
        if !text.is_empty() {
            area.insert_str(text);
        }
        area
    }

    /// Takes a key: its action by the mode's table, or, in a text box, the key typed.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(action) = action_for(self.mode(), &key) {
            self.act(action)
        } else {
            match self {
                Overlay::Editor(editor) => {
                    editor.text.input(key);
                }
                Overlay::Search(text, _) => {
                    text.input(key);
                }
                _ => {}
            }
            Outcome::Stay
        }
    }

    /// Does what an action of its mode asks. The overlay may replace itself (close, go back).
    pub fn act(&mut self, action: Action) -> Outcome {
        match (std::mem::take(self), Some(action)) {
            (Overlay::None, _) => Outcome::Stay,
            (Overlay::Help { back, .. } | Overlay::Diff(_, back), Some(Action::Close))
            | (Overlay::Search(_, back), Some(Action::Cancel)) => {
                *self = *back;
                Outcome::Stay
            }
            (Overlay::Help { of, mut scroll, back }, Some(a)) => {
                scroll.act(a, of.bindings().len());
                *self = Overlay::Help { of, scroll, back };
                Outcome::Stay
            }
            (Overlay::Inspector(i), Some(Action::Evidence(n))) => {
                *self = Overlay::Inspector(i);
                Outcome::OpenEvidence(usize::from(n))
            }
            (Overlay::Inspector(i), Some(a @ (Action::Diff | Action::DiffSincePrevious))) => {
                let pos = i.pos;
                *self = Overlay::Inspector(i);
                Outcome::OpenDiff { pos, since_previous: a == Action::DiffSincePrevious }
            }
            (Overlay::Diff(view, back), Some(Action::Help)) => {
                *self = Overlay::help(Mode::Diff, Overlay::Diff(view, back));
                Outcome::Stay
            }
            (Overlay::Diff(mut view, back), Some(a)) => {
                let rows = view.lines.len();
                match a {
                    _ if view.scroll.act(a, rows) => {}
                    Action::NextFile => view.to_file(true),
                    Action::PrevFile => view.to_file(false),
                    Action::Right => view.column = view.column.saturating_add(8),
                    Action::Left => view.column = view.column.saturating_sub(8),
                    _ => {}
                }
                *self = Overlay::Diff(view, back);
                Outcome::Stay
            }
            (Overlay::Inspector(i), Some(Action::Help)) => {
                *self = Overlay::help(Mode::Inspector, Overlay::Inspector(i));
                Outcome::Stay
            }
            (Overlay::Inspector(mut i), Some(a @ (Action::Down | Action::Up))) => {
                i.scroll.act(a, usize::MAX);
                *self = Overlay::Inspector(i);
                Outcome::Stay
            }
            (Overlay::Source(mut s), Some(a @ (Action::Down | Action::Up))) => {
                let rows = s.0.lines.len();
                s.0.scroll.act(a, rows);
                *self = Overlay::Source(s);
                Outcome::Stay
            }
            (Overlay::Source(s), Some(Action::Close)) => {
                *self = Overlay::Inspector(s.1);
                Outcome::Stay
            }
            (Overlay::Row(row), Some(Action::Search)) => {
                let text = Overlay::text_box("a word · Enter finds · Esc cancels", &row.query);
                *self = Overlay::Search(Box::new(text), Box::new(Overlay::Row(row)));
                Outcome::Stay
            }
            (Overlay::Row(row), Some(Action::Help)) => {
                *self = Overlay::help(Mode::Row, Overlay::Row(row));
                Outcome::Stay
            }
            (Overlay::Row(row), Some(Action::Copy)) => {
                let text = row.text();
                *self = Overlay::Row(row);
                Outcome::Copy(text)
            }
            (Overlay::Row(mut row), Some(a @ (Action::SearchNext | Action::SearchPrev))) => {
                let query = row.query.clone();
                let found = !query.is_empty() && row.find(&query, a == Action::SearchNext);
                *self = Overlay::Row(row);
                if found {
                    Outcome::Stay
                } else {
                    Outcome::Notice("nothing to find: / searches this row first".into())
                }
            }
            (Overlay::Row(mut row), Some(a)) if a != Action::Close => {
                let rows = row.lines.len();
                row.scroll.act(a, rows);
                *self = Overlay::Row(row);
                Outcome::Stay
            }
            (
                Overlay::Inspector(_) | Overlay::Row(_) | Overlay::QuitPrompt,
                Some(Action::Close | Action::Cancel),
            )
            | (Overlay::Editor(_), Some(Action::Cancel)) => Outcome::Closed,
            (Overlay::ResumeOffer(_), Some(Action::Submit)) => Outcome::Resume,
            (Overlay::ResumeOffer(op), Some(Action::Cancel)) => Outcome::Notice(format!(
                "{} waits in the control file; `harrow resume` applies it",
                op.as_str()
            )),
            (Overlay::QuitPrompt, Some(Action::StopAndQuit)) => Outcome::Quit { stop: true },
            (Overlay::QuitPrompt, Some(Action::LeaveRunning)) => Outcome::Quit { stop: false },
            (Overlay::Editor(editor), Some(Action::Submit)) => {
                let text = editor.text.lines().join(" ").trim().to_owned();
                if text.is_empty() {
                    *self = Overlay::Editor(editor);
                    return Outcome::Notice("type the reason (or note) first; Esc cancels".into());
                }
                Outcome::Decide { op: editor.op, task: editor.task, text }
            }
            (Overlay::Search(text, back), Some(Action::Submit)) => {
                let query = text.lines().join(" ").trim().to_owned();
                match *back {
                    Overlay::Row(mut row) => {
                        let found = query.is_empty() || row.find(&query, true);
                        *self = Overlay::Row(row);
                        if found {
                            Outcome::Stay
                        } else {
                            Outcome::Notice(format!("no line of this row contains “{query}”"))
                        }
                    }
                    back => {
                        *self = back;
                        if query.is_empty() { Outcome::Stay } else { Outcome::Search(query) }
                    }
                }
            }
            (other, _) => {
                *self = other;
                Outcome::Stay
            }
        }
    }
}
