//! Moving about the panes: the selection or scroll of the focused pane, by key or by mouse.

use super::app::App;
use super::frame::shown_rows;
use super::inspector;
use super::keymap::Action;
use super::layout::{Areas, Pane};
use super::search;
use crate::session::event::EventKind;
use std::io;

impl App {
    /// Moves the selection or scroll of the focused pane.
    pub(super) fn move_in_pane(&mut self, action: Action) -> io::Result<()> {
        let s = &mut self.sel;
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
            (Pane::Worker, Action::Down | Action::Up | Action::Top) => {
                let rows = shown_rows(&self.player.view, s.only.as_ref(), s.filter, s.lane);
                let at = match s.picked {
                    Some(pos) => rows.partition_point(|p| *p < pos),
                    None => rows.len().saturating_sub(1 + s.stream_back),
                };
                let to = match action {
                    Action::Down => at + 1,
                    Action::Up => at.saturating_sub(1),
                    _ => 0,
                };
                // Down past the newest row follows the stream again.
                s.picked = (to < rows.len() && !(to + 1 == rows.len() && action == Action::Down))
                    .then(|| rows.get(to).copied())
                    .flatten();
                if s.picked.is_none() {
                    s.stream_back = 0;
                }
            }
            (Pane::Worker, _) => {
                s.stream_back = 0;
                s.picked = None;
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

    /// Opens the Worker pane's selected row in full (see [`App::selected_row`]); a verdict
    /// opens in the inspector.
    pub(super) fn open_row(&mut self) {
        let Some(pos) = self.selected_row() else {
            self.notice = Some("the worker stream is empty here".into());
            return;
        };
        let opened = if matches!(self.player.kind_at(pos), Some(EventKind::Verdict)) {
            inspector::open_at(&mut self.player, pos).map(|i| self.views.only(i))
        } else {
            super::row::open(&mut self.player, pos).map(|r| self.views.only(r))
        };
        match opened {
            Ok(()) => {}
            Err(why) => self.notice = Some(why),
        }
    }

    /// The Worker pane's selected row: the row the cursor was moved to, else the search's
    /// match while it is on screen, else the newest row shown.
    pub fn selected_row(&self) -> Option<usize> {
        let rows = &self.prepared.worker;
        let sel = &self.sel;
        let stream = shown_rows(&self.player.view, sel.only.as_ref(), sel.filter, sel.lane);
        let newest = stream.len().checked_sub(1 + self.sel.stream_back).map(|i| stream[i]);
        self.sel
            .picked
            .or_else(|| self.search.at.filter(|at| rows.iter().any(|(p, _)| p == at)))
            .or(newest)
    }

    /// How many worker rows are newer than the selected one: 0 while following the newest.
    pub fn rows_newer_than_selected(&self) -> usize {
        let sel = &self.sel;
        let stream = shown_rows(&self.player.view, sel.only.as_ref(), sel.filter, sel.lane);
        match self.sel.picked {
            Some(pos) => stream.len().saturating_sub(stream.partition_point(|p| *p <= pos)),
            None => self.sel.stream_back,
        }
    }

    /// The verdict on the attempt the picked worker row belongs to (`d` on a row).
    pub(super) fn verdict_of_picked_row(&mut self) -> Result<usize, String> {
        let pos = self.sel.picked.ok_or("no row is picked")?;
        let event = self.player.fetch(pos).map_err(|e| e.to_string())?;
        let task = event.task_id().ok_or("that row belongs to no task")?.to_owned();
        let attempt = event.payload.scope().and_then(|s| s.attempt).unwrap_or(1);
        let verdicts =
            self.player.view.trail(&task).map(|t| t.verdicts.clone()).unwrap_or_default();
        for v in verdicts {
            let judged = self.player.fetch(v).ok().and_then(|e| e.payload.scope()?.attempt);
            if judged.unwrap_or(1) == attempt {
                return Ok(v);
            }
        }
        Err(format!("{task} attempt {attempt} has no verdict yet"))
    }

    /// A mouse event, when the mouse is captured: the wheel scrolls the pane under the
    /// pointer, a click focuses it.
    pub fn mouse_event(
        &mut self,
        m: crossterm::event::MouseEvent,
        area: ratatui::layout::Rect,
    ) -> io::Result<bool> {
        use crossterm::event::{MouseButton, MouseEventKind};
        if self.views.is_open() {
            return Ok(false);
        }
        let Some(pane) =
            Areas::new(area, self.sel.focus, self.sel.zoom, !self.prepared.lanes.is_empty())
                .pane_at(m.column, m.row)
        else {
            return Ok(false);
        };
        self.sel.focus = pane;
        if pane == Pane::Worker {
            // The wheel scrolls the stream itself; the selection is then the newest row shown.
            let sel = &self.sel;
            let rows = shown_rows(&self.player.view, sel.only.as_ref(), sel.filter, sel.lane).len();
            self.sel.picked = None;
            self.sel.stream_back = match m.kind {
                MouseEventKind::ScrollUp => (self.sel.stream_back + 3).min(rows.saturating_sub(1)),
                MouseEventKind::ScrollDown => self.sel.stream_back.saturating_sub(3),
                _ => return Ok(matches!(m.kind, MouseEventKind::Down(MouseButton::Left))),
            };
            return Ok(true);
        }
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

/// Finding a word in the worker stream.
impl App {
    /// Searches for `query` from `start`, and shows the row it lands on in the worker pane.
    pub(super) fn search_from(
        &mut self,
        query: &str,
        start: usize,
        forward: bool,
    ) -> io::Result<()> {
        query.clone_into(&mut self.search.query);
        let Some((pos, wrapped)) =
            search::find(&mut self.player, self.sel.filter, query, start, forward)
        else {
            self.notice = Some(format!("no row contains “{query}”"));
            return Ok(());
        };
        if pos >= self.player.view.applied() {
            self.goto(pos)?;
        }
        self.search.at = Some(pos);
        self.sel.focus = Pane::Worker;
        let stream = self.player.view.stream(self.sel.filter);
        let from_newest = stream.len().saturating_sub(stream.partition_point(|p| *p < pos) + 1);
        self.sel.stream_back = from_newest.saturating_sub(self.sel.worker_height / 2);
        let rank = self.search.rank(&mut self.player, self.sel.filter, pos);
        let rank = rank.map(|r| format!(" {r}")).unwrap_or_default();
        self.notice = Some(match wrapped {
            Some(end) => format!("“{query}”{rank}: wrapped to the {end}; n next, N previous"),
            None => format!("“{query}”{rank}: n next, N previous"),
        });
        Ok(())
    }

    /// Repeats the last search from the row it landed on.
    pub(super) fn search_again(&mut self, forward: bool) -> io::Result<()> {
        if self.search.query.is_empty() {
            self.notice = Some("nothing to repeat: / searches first".into());
            return Ok(());
        }
        let query = self.search.query.clone();
        let from = self.search.at.or_else(|| self.prepared.worker.last().map(|(p, _)| *p));
        let start = search::next_start(from, self.player.total(), forward);
        self.search_from(&query, start, forward)
    }
}

/// The stream narrowed to the search's rows.
impl App {
    /// `&`: only the rows the last search matches, or every row again.
    pub(super) fn only_matches(&mut self) {
        if self.sel.only.take().is_some() {
            self.notice = Some("every row again".into());
            return;
        }
        let Some(rows) = self.search.matches(&mut self.player, self.sel.filter) else {
            self.notice = Some("search first (/), then & shows only the rows it finds".into());
            return;
        };
        let (n, s) = (rows.len(), if rows.len() == 1 { "" } else { "s" });
        self.notice = Some(format!(
            "only the {n} row{s} with “{}” (& shows every row again)",
            self.search.query
        ));
        self.sel.only = Some(rows);
        self.sel.stream_back = 0;
        self.sel.picked = None;
    }
}
