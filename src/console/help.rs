//! The help overlay: the key table of a mode, each row written from its keys, scrolling when
//! it is taller than the terminal.

use super::chrome::popup;
use super::keymap::{Action, Mode};
use super::outcome::Outcome;
use super::scroll::Scroll;
use super::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// A mode's key table as lines: each binding's keys (right-aligned in `width` columns, in
/// `key_style`) and what it does. Every help there is (this overlay, the fleet's, the
/// interview's) is drawn from these lines, so each says exactly what its table binds.
pub fn key_lines(
    mode: Mode,
    live: Option<bool>,
    width: usize,
    key_style: ratatui::style::Style,
) -> Vec<Line<'static>> {
    listed(mode, live)
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:>width$}  ", b.label()), key_style),
                Span::raw(b.help),
            ])
        })
        .collect()
}

/// The bindings of `mode` a console that is `live` (or a replay) lists; all of them when that
/// is not known (`None`: a table whose keys are the same in both).
fn listed(mode: Mode, live: Option<bool>) -> impl Iterator<Item = &'static super::keymap::Binding> {
    mode.bindings().iter().filter(move |b| live.is_none_or(|live| b.only.listed(live)))
}

/// The keys of one mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpView {
    pub of: Mode,
    /// Whether the console watches a run (or replays one), when the table says different
    /// things for each.
    pub live: Option<bool>,
    pub scroll: Scroll,
}

impl HelpView {
    /// The keys of an overlay's table, the same live and in a replay.
    pub fn new(of: Mode) -> HelpView {
        HelpView { of, live: None, scroll: Scroll::default() }
    }

    /// The keys of the panes, of a console that is `live` or a replay.
    pub fn main(live: bool) -> HelpView {
        HelpView { of: Mode::Main, live: Some(live), scroll: Scroll::default() }
    }

    /// Scrolls the list.
    pub fn act(&mut self, action: Action) -> Outcome {
        if self.scroll.act(action, listed(self.of, self.live).count()) {
            Outcome::Stay
        } else {
            Outcome::Unbound
        }
    }

    /// Draws the list centred over `area`.
    pub fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let rows = listed(self.of, self.live).count() as u16;
        let height = (rows + 2).min(area.height);
        let hidden = rows.saturating_sub(height.saturating_sub(2));
        let top = self.scroll.shown_from(usize::from(rows), usize::from(height.saturating_sub(2)));
        let rect = popup(frame, area, 86, height, (area.height - height) / 2);
        let lines = key_lines(self.of, self.live, 7, theme.fg(theme.colors.focus));
        let title = if hidden == 0 {
            format!(" {} ", self.of.title())
        } else {
            format!(" {} (↑↓ scroll) ", self.of.title())
        };
        frame.render_widget(
            Paragraph::new(lines)
                .scroll((top, 0))
                .block(Block::default().borders(Borders::ALL).title(title)),
            rect,
        );
    }
}

impl super::views::View for HelpView {
    fn mode(&self) -> Mode {
        Mode::Help
    }

    fn act(&mut self, action: Action) -> super::views::Step {
        match action {
            Action::Close => super::views::Step::Close(Outcome::Stay),
            a => super::views::Step::Stay(HelpView::act(self, a)),
        }
    }

    fn shows_below(&self) -> bool {
        true
    }

    fn draw(&self, frame: &mut Frame, area: Rect, paint: &super::views::Paint<'_>) {
        HelpView::draw(self, frame, area, paint.theme);
    }
}
