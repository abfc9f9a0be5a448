//! Where everything goes at one terminal size: the status line, the panes (columns on a large
//! terminal, tabs on a small one), the context strip, the timeline and the hint line. Drawing,
//! frame preparation and mouse clicks all ask here, so they always agree.

use ratatui::layout::{Constraint, Layout, Rect};

/// A pane of the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Plan,
    Worker,
    Exchange,
    Validators,
    Ledger,
}

impl Pane {
    /// The order `Tab` moves focus in, and the order of the tabs on small terminals.
    pub const ALL: [Pane; 5] =
        [Pane::Plan, Pane::Worker, Pane::Exchange, Pane::Validators, Pane::Ledger];

    pub fn name(self) -> &'static str {
        match self {
            Pane::Plan => "Plan",
            Pane::Worker => "Worker",
            Pane::Exchange => "Exchange",
            Pane::Validators => "Validators",
            Pane::Ledger => "Ledger",
        }
    }

    pub fn index(self) -> usize {
        Pane::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    #[must_use]
    pub fn after(self, step: usize) -> Pane {
        Pane::ALL[(self.index() + step) % Pane::ALL.len()]
    }
}

/// The smallest terminal the console draws in.
pub const MIN_SIZE: (u16, u16) = (40, 12);

/// Below this width or height the panes become tabs, one at a time; from 160 columns the
/// Exchange and Validators get a column of their own, below that they sit under the Worker.
const COLUMNS_FROM: (u16, u16) = (120, 30);

/// Where everything goes at one terminal size: computed the same way for drawing, for
/// [`App::prepare`] and for mouse clicks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Areas {
    pub status: Rect,
    /// The lane strip, in a run with lanes.
    pub lanes: Option<Rect>,
    /// The tab bar, when the terminal is too small for columns.
    pub tabs: Option<Rect>,
    pub panes: Vec<(Pane, Rect)>,
    /// The context-pressure sparkline, when there is room for it.
    pub context: Option<Rect>,
    pub timeline: Rect,
    pub hints: Rect,
}

impl Areas {
    pub fn new(area: Rect, focus: Pane, zoom: bool, lanes: bool) -> Areas {
        let columns = area.width >= COLUMNS_FROM.0 && area.height >= COLUMNS_FROM.1;
        let [status, strip, tabs, body, context, timeline, hints] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(u16::from(lanes)),
            Constraint::Length(u16::from(!columns)),
            Constraint::Min(3),
            Constraint::Length(u16::from(columns)),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let panes = if zoom || !columns {
            vec![(focus, body)]
        } else {
            let wide = area.width >= 160;
            // The Plan and Ledger column grows with the terminal (a quarter of it, 30 to 60
            // columns), so task titles are not cut where there is room for them.
            let [left, rest] = Layout::horizontal([
                Constraint::Length((area.width / 4).clamp(30, 60)),
                Constraint::Min(30),
            ])
            .areas(body);
            let [plan, ledger] =
                Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(left);
            let (worker, exchange, validators) = if wide {
                let [worker, right] =
                    Layout::horizontal([Constraint::Min(30), Constraint::Percentage(43)])
                        .areas(rest);
                let [exchange, validators] =
                    Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)])
                        .areas(right);
                (worker, exchange, validators)
            } else {
                let [worker, below] =
                    Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                        .areas(rest);
                let [exchange, validators] =
                    Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                        .areas(below);
                (worker, exchange, validators)
            };
            vec![
                (Pane::Plan, plan),
                (Pane::Worker, worker),
                (Pane::Exchange, exchange),
                (Pane::Validators, validators),
                (Pane::Ledger, ledger),
            ]
        };
        Areas {
            status,
            lanes: lanes.then_some(strip),
            tabs: (!columns).then_some(tabs),
            panes,
            context: columns.then_some(context),
            timeline,
            hints,
        }
    }

    pub fn rect(&self, pane: Pane) -> Option<Rect> {
        self.panes.iter().find(|(p, _)| *p == pane).map(|(_, r)| *r)
    }

    /// Text rows inside a pane's border (0 when the pane is not on screen).
    pub fn inner_height(&self, pane: Pane) -> usize {
        self.rect(pane).map_or(0, |r| usize::from(r.height.saturating_sub(2)))
    }

    /// The pane under a screen cell, for mouse clicks and the wheel.
    pub fn pane_at(&self, column: u16, row: u16) -> Option<Pane> {
        self.panes
            .iter()
            .find(|(_, r)| r.contains(ratatui::layout::Position { x: column, y: row }))
            .map(|(p, _)| *p)
    }
}

/// How many screen rows `lines` take when wrapped at `width` columns.
pub fn wrapped_rows<'a>(lines: impl IntoIterator<Item = &'a str>, width: u16) -> usize {
    let width = usize::from(width.max(1));
    lines.into_iter().map(|l| l.chars().count().max(1).div_ceil(width)).sum()
}
