//! How far a scrolling view is scrolled, and how the scrolling keys move it: one model for the
//! help, the inspector, the evidence view, the row view and the diff, so `j`, `PgDn` and `G`
//! mean the same everywhere.

use super::keymap::Action;

/// Rows a page key moves.
const PAGE: u16 = 20;

/// The first row shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    pub top: u16,
}

impl Scroll {
    pub fn at(top: u16) -> Scroll {
        Scroll { top }
    }

    /// Moves for a scrolling action over content of `rows` rows (its last row can come to the
    /// top; the renderer keeps the view full). `false` when the action does not scroll.
    pub fn act(&mut self, action: Action, rows: usize) -> bool {
        let last = u16::try_from(rows.saturating_sub(1)).unwrap_or(u16::MAX);
        self.top = match action {
            Action::Down => self.top.saturating_add(1).min(last),
            Action::Up => self.top.saturating_sub(1),
            Action::PageDown => self.top.saturating_add(PAGE).min(last),
            Action::PageUp => self.top.saturating_sub(PAGE),
            Action::Top => 0,
            Action::Bottom => last,
            _ => return false,
        };
        true
    }

    /// The first row to draw so that a view `height` rows tall over `rows` rows stays full.
    pub fn shown_from(self, rows: usize, height: usize) -> u16 {
        let hidden = u16::try_from(rows.saturating_sub(height)).unwrap_or(u16::MAX);
        self.top.min(hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scrolling_key_moves_within_the_content() {
        let mut s = Scroll::default();
        assert!(s.act(Action::Down, 50));
        assert_eq!(s.top, 1);
        s.act(Action::PageDown, 50);
        assert_eq!(s.top, 21);
        s.act(Action::Bottom, 50);
        assert_eq!(s.top, 49);
        s.act(Action::Down, 50);
        assert_eq!(s.top, 49, "never past the last row");
        s.act(Action::PageUp, 50);
        assert_eq!(s.top, 29);
        s.act(Action::Top, 50);
        assert_eq!(s.top, 0);
        s.act(Action::Up, 50);
        assert_eq!(s.top, 0);
        assert!(!s.act(Action::Close, 50), "not a scrolling key");
        assert_eq!(Scroll::at(45).shown_from(50, 10), 40, "the view stays full");
    }
}
