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
pub fn popup(frame: &mut Frame, area: Rect, width: u16, height: u16, top: u16) -> Rect {
    let width = width.min(area.width);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + top,
        width,
        height: height.min(area.height),
    };
    frame.render_widget(Clear, rect);
    rect
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
