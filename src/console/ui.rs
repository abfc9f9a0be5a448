//! Render functions: they read the app's prepared state and draw; nothing else.

use super::app::{App, Overlay, Pane};
use super::keymap::BINDINGS;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

/// The smallest terminal the console draws in.
pub const MIN_SIZE: (u16, u16) = (40, 12);

/// Colours, or none at all when `NO_COLOR` is set.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    color: bool,
}

impl Palette {
    pub fn from_env() -> Palette {
        Palette { color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) }
    }

    fn fg(self, c: Color) -> Style {
        if self.color { Style::default().fg(c) } else { Style::default() }
    }

    fn state(self, state: &str) -> Style {
        match state {
            "done" => self.fg(Color::Green),
            "done_below_bar" => self.fg(Color::Yellow),
            "failed" => self.fg(Color::Red),
            "needs_operator" => self.fg(Color::Magenta),
            _ => self.fg(Color::Cyan),
        }
    }
}

/// The rows the stream pane has room for at this terminal size.
pub fn stream_height(area: Rect) -> usize {
    usize::from(area.height.saturating_sub(4))
}

/// Draws the whole console.
pub fn draw(frame: &mut Frame, app: &mut App, palette: Palette) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "terminal too small: {}×{} (the console needs {}×{})",
            area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let [status, body, hints] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)])
            .areas(area);
    draw_status(frame, status, app, palette);
    let plan_width = if area.width >= 100 { 34 } else { 24 };
    let [plan, stream] =
        Layout::horizontal([Constraint::Length(plan_width), Constraint::Min(10)]).areas(body);
    draw_plan(frame, plan, app, palette);
    draw_stream(frame, stream, app, palette);
    let hint =
        "? help  q quit  space play  +/- speed  ./, step  x failure  {} verdicts  Enter inspect";
    let (text, style) = app
        .notice
        .as_deref()
        .map_or((hint, palette.fg(Color::DarkGray)), |n| (n, palette.fg(Color::Yellow)));
    frame.render_widget(Paragraph::new(text).style(style), hints);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help(top) => draw_help(frame, area, palette, *top),
        Overlay::Inspector(inspector) => draw_inspector(frame, area, inspector),
        Overlay::QuitPrompt => draw_quit_prompt(frame, area),
        Overlay::Editor(editor) => draw_editor(frame, area, editor),
    }
}

fn draw_status(frame: &mut Frame, area: Rect, app: &mut App, palette: Palette) {
    let (at, total) = app.position();
    let mode = if app.live {
        app.live_mode()
    } else if app.clock.playing {
        format!("REPLAY {}", app.clock.label())
    } else {
        format!("PAUSED {}", app.clock.label())
    };
    let s = app.view.summary();
    let done = s.harrow.tasks_done;
    let tasks = s.harrow.task_count.unwrap_or(s.harrow.tasks.len() as u64);
    let text = format!(
        " {}  {}  tasks {done}/{tasks}  event {at}/{total}  {} tok  ${:.3}",
        s.session_id.as_deref().unwrap_or(""),
        mode,
        compact(s.tokens.all.total.max(s.tokens.all.prompt + s.tokens.all.eval)),
        s.tokens.all.cost
    );
    let style = if palette.color {
        Style::default().bg(Color::Blue).fg(Color::White)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    };
    frame.render_widget(Paragraph::new(text).style(style), area);
}

/// `148585` → `148.6k`, `2300000` → `2.30M`: counts that fit a status line.
fn compact(n: i64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.2}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

fn focused_block(title: &str, focused: bool, palette: Palette) -> Block<'static> {
    let style = if focused { palette.fg(Color::Yellow) } else { Style::default() };
    Block::default().borders(Borders::ALL).border_style(style).title(title.to_owned())
}

fn draw_plan(frame: &mut Frame, area: Rect, app: &mut App, palette: Palette) {
    let focused = app.focus == Pane::Plan;
    let selected = app.plan_selected;
    let s = app.view.summary();
    let items: Vec<ListItem> = s
        .harrow
        .tasks
        .iter()
        .map(|(id, d)| {
            let t = s.tasks.get(id);
            let verdicts = t.map_or(String::new(), |t| {
                format!(" {}✓{}✗", t.evaluator.accepts, t.evaluator.rejects)
            });
            ListItem::new(Line::from(vec![
                Span::raw(format!("{id} ")),
                Span::styled(d.state.clone(), palette.state(&d.state)),
                Span::raw(verdicts),
            ]))
        })
        .collect();
    let mut state = ListState::default();
    if focused {
        state.select(Some(selected));
    }
    let list = List::new(items)
        .block(focused_block(" Plan ", focused, palette))
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    frame.render_stateful_widget(list, area, &mut state);
}

fn draw_stream(frame: &mut Frame, area: Rect, app: &App, palette: Palette) {
    let focused = app.focus == Pane::Stream;
    let title = if app.stream_back > 0 {
        format!(" Events — {} newer below ↓ (G) ", app.stream_back)
    } else {
        " Events ".to_owned()
    };
    let lines: Vec<Line> = app.rows.iter().map(|r| Line::raw(r.clone())).collect();
    frame.render_widget(Paragraph::new(lines).block(focused_block(&title, focused, palette)), area);
}

/// A cleared box of at most `width`×`height`, centred across `area` and `top` rows down it.
fn popup(frame: &mut Frame, area: Rect, width: u16, height: u16, top: u16) -> Rect {
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

fn draw_inspector(frame: &mut Frame, area: Rect, inspector: &super::inspector::Inspector) {
    let popup = Rect {
        x: area.x + 2,
        y: area.y + 1,
        width: area.width.saturating_sub(4),
        height: area.height.saturating_sub(2),
    };
    let lines: Vec<Line> = inspector.lines.iter().map(|l| Line::raw(l.clone())).collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .title(inspector.title.clone())
        .title_bottom(" Esc closes ");
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), popup);
}

fn draw_editor(frame: &mut Frame, area: Rect, editor: &super::app::Editor) {
    let popup = popup(frame, area, 80, 5, area.height / 3);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", editor.title))
        .title_bottom(" Enter sends · Esc cancels ");
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    frame.render_widget(&editor.text, inner);
}

fn draw_quit_prompt(frame: &mut Frame, area: Rect) {
    let lines = vec![
        Line::raw("The run is still going."),
        Line::raw(""),
        Line::raw("  y    stop it at the next task boundary (resumable)"),
        Line::raw("  n    leave it running here, printing its events"),
        Line::raw("  Esc  stay in the console"),
    ];
    let popup = popup(frame, area, 58, 7, area.height / 3);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Quit ")),
        popup,
    );
}

/// The key list; when it is taller than the terminal it scrolls with the arrow keys from `top`.
fn draw_help(frame: &mut Frame, area: Rect, palette: Palette, top: u16) {
    let rows = BINDINGS.len() as u16;
    let height = (rows + 2).min(area.height);
    let hidden = rows.saturating_sub(height.saturating_sub(2));
    let top = top.min(hidden);
    let popup = popup(frame, area, 86, height, (area.height - height) / 2);
    let lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:>7}  ", b.label), palette.fg(Color::Yellow)),
                Span::raw(b.help),
            ])
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines).scroll((top, 0)).block(
            Block::default().borders(Borders::ALL).title(if hidden == 0 {
                " Keys "
            } else {
                " Keys (↑↓ scroll) "
            }),
        ),
        popup,
    );
}
