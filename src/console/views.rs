//! What a view over the panes is: a type with its own key table (so its help is that table),
//! its own answer to each action and its own drawing. Views sit on one stack (`Views`, in
//! the modal module), as codex's bottom pane and helix's compositor keep theirs: a
//! view opens another over itself, closes itself, or closes handing what it holds to the view
//! under it (a search's words to the row it searches, a comment to its diff). Esc on the top
//! view shows the one under it as it was.

use super::keymap::{Action, Mode};
use super::outcome::Outcome;
use super::theme::Theme;
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::any::Any;

/// What every view is drawn with.
#[derive(Debug)]
pub struct Paint<'a> {
    pub theme: &'a Theme,
    /// The task the run holds for a decision, if one.
    pub held: Option<&'a str>,
}

/// One view over the panes.
pub trait View: Any + std::fmt::Debug {
    /// The key table in force while this view is on top; its help is that same table.
    fn mode(&self) -> Mode;

    /// Does what an action of its table asks.
    fn act(&mut self, action: Action) -> Step;

    /// A key its table does not bind: typed into the view's text box, when it has one.
    fn typed(&mut self, _key: KeyEvent) {}

    /// Takes what the view over it handed down as it closed.
    fn take(&mut self, _handed: Handed) -> Outcome {
        Outcome::Stay
    }

    /// Whether the view under this one stays on screen around it (a help, a search line, a
    /// comment box over its diff).
    fn shows_below(&self) -> bool {
        false
    }

    fn draw(&self, frame: &mut Frame, area: Rect, paint: &Paint<'_>);
}

/// What the stack does after a view acted.
#[derive(Debug)]
pub enum Step {
    /// The view stays on top; the app is told this.
    Stay(Outcome),
    /// The view closes; the app is told this.
    Close(Outcome),
    /// Another view opens over this one.
    Open(Box<dyn View>),
    /// The view closes and hands this to the view under it.
    Hand(Handed),
    /// Every view closes (a decision was sent, from however deep); the app is told this.
    CloseAll(Outcome),
}

/// What a closing view hands to the one under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handed {
    /// Words to search for.
    Query(String),
    /// A comment typed for the line `at` of a diff.
    Comment { at: String, text: String },
}

impl Handed {
    /// What the panes make of it when no view is under the one that closed.
    pub fn to_panes(self) -> Outcome {
        match self {
            Handed::Query(query) if !query.is_empty() => Outcome::Search(query),
            Handed::Query(_) | Handed::Comment { .. } => Outcome::Stay,
        }
    }
}
