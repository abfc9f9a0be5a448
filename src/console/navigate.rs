//! Moving about the panes: the selection or scroll of the focused pane, by key or by mouse.

use super::app::App;
use super::keymap::Action;
use super::layout::{Areas, Pane};
use std::io;

impl App {
    /// Moves the selection or scroll of the focused pane.
    pub(super) fn move_in_pane(&mut self, action: Action) -> io::Result<()> {
        let s = &mut self.sel;
        let stream = self.player.view.stream(s.filter).len();
        let last_ledger = self.prepared.side.ledger.len().saturating_sub(1);
        match (s.focus, action) {
            (Pane::Plan, Action::Down | Action::Up | Action::Top) => {
                s.plan_follow = false;
                s.ledger_selected = None;
                s.plan_selected = match action {
                    Action::Down => s.plan_selected + 1,
                    Action::Up => s.plan_selected.saturating_sub(1),
                    _ => 0,
                };
            }
            (Pane::Plan, _) => s.plan_follow = true,
            (Pane::Worker, Action::Down) => s.stream_back = s.stream_back.saturating_sub(1),
            (Pane::Worker, Action::Up) => {
                s.stream_back = (s.stream_back + 1).min(stream.saturating_sub(1));
            }
            (Pane::Worker, Action::Top) => s.stream_back = stream.saturating_sub(1),
            (Pane::Worker, _) => {
                s.stream_back = 0;
                if self.live {
                    self.player.apply_until(self.player.total())?;
                }
            }
            (Pane::Ledger, Action::Down) => {
                s.ledger_selected = s
                    .ledger_selected
                    .map(|i| (i + 1).min(last_ledger))
                    .filter(|i| *i < last_ledger);
            }
            (Pane::Ledger, Action::Up) => {
                s.ledger_selected =
                    Some(s.ledger_selected.unwrap_or(last_ledger).saturating_sub(1));
            }
            (Pane::Ledger, Action::Top) => s.ledger_selected = Some(0),
            (Pane::Ledger, _) => s.ledger_selected = None,
            (pane, Action::Down) => s.scroll_by(pane, 1),
            (pane, Action::Up) => s.scroll_by(pane, -1),
            (pane, Action::Top) => s.scroll[pane.index()] = 0,
            (pane, _) => s.scroll[pane.index()] = u16::MAX,
        }
        Ok(())
    }

    /// A mouse event, when the mouse is captured: the wheel scrolls the pane under the
    /// pointer, a click focuses it.
    pub fn mouse_event(
        &mut self,
        m: crossterm::event::MouseEvent,
        area: ratatui::layout::Rect,
    ) -> io::Result<bool> {
        use crossterm::event::{MouseButton, MouseEventKind};
        if self.overlay.is_open() {
            return Ok(false);
        }
        let Some(pane) = Areas::new(area, self.sel.focus, self.sel.zoom).pane_at(m.column, m.row)
        else {
            return Ok(false);
        };
        self.sel.focus = pane;
        let action = match m.kind {
            MouseEventKind::ScrollUp => Action::Up,
            MouseEventKind::ScrollDown => Action::Down,
            MouseEventKind::Down(MouseButton::Left) => return Ok(true),
            _ => return Ok(false),
        };
        for _ in 0..3 {
            self.move_in_pane(action)?;
        }
        Ok(true)
    }
}
