//! Drawing pieces the console's screens share: a popup box cleared over the panes, the key
//! hints written into a box's bottom border, the colour of a tone.

use super::describe::Tone;
use super::keymap::{Mode, hint_line};
use super::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::widgets::Clear;

/// The mode's hint line, to write into a box's bottom border.
pub fn footer(mode: Mode, width: u16) -> String {
    format!(" {} ", hint_line(mode, false, usize::from(width.saturating_sub(4))))
}

/// A cleared box of at most `width`×`height`, centred across `area` and `top` rows down it.
/// A box that leaves only a gutter (two columns or fewer) at a side clears the gutter too:
/// slivers of the panes' borders and text at an overlay's edges read as a broken screen.
pub fn popup(frame: &mut Frame, area: Rect, width: u16, height: u16, top: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height.saturating_sub(top));
    let rect = Rect { x: area.x + (area.width - width) / 2, y: area.y + top, width, height };
    frame.render_widget(Clear, gutters_with(rect, area));
    rect
}

/// `rect` grown to `area`'s left and right edges where the gap to them is a gutter (the rows
/// above and below stay: the status line and the hints are read with an overlay open).
fn gutters_with(rect: Rect, area: Rect) -> Rect {
    const GUTTER: u16 = 2;
    let left = if rect.x - area.x <= GUTTER { area.x } else { rect.x };
    let right = if area.right() - rect.right() <= GUTTER { area.right() } else { rect.right() };
    Rect { x: left, width: right - left, ..rect }
}

/// Text lines with one of them marked (a search's match, an evidence pointer's line).
pub fn marked_lines(
    lines: &[String],
    marked: Option<usize>,
    theme: &Theme,
) -> Vec<ratatui::text::Line<'static>> {
    use ratatui::text::Line;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if marked == Some(i) {
                Line::styled(l.clone(), theme.matched())
            } else {
                Line::raw(l.clone())
            }
        })
        .collect()
}

/// The colour a tone is drawn in.
pub fn tone_style(tone: Tone, theme: &Theme) -> Style {
    let color: Option<Color> = match tone {
        Tone::Plain => None,
        Tone::Good => Some(theme.colors.ok),
        Tone::Bad => Some(theme.colors.bad),
        Tone::Warn => Some(theme.colors.warn),
        Tone::Waiting => Some(theme.colors.waiting),
    };
    color.map_or_else(Style::default, |c| theme.fg(c))
}
