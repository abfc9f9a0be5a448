//! Render functions: they read the app's prepared state and draw; nothing else.

use super::app::{App, Overlay, Pane, Prepared};
use super::keymap::BINDINGS;
use super::theme::Theme;
use super::timeline::{Cell, Mark};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Clear, List, ListItem, ListState, Paragraph, Sparkline, SparklineBar, Tabs,
    Wrap,
};

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
    /// The tab bar, when the terminal is too small for columns.
    pub tabs: Option<Rect>,
    pub panes: Vec<(Pane, Rect)>,
    /// The context-pressure sparkline, when there is room for it.
    pub context: Option<Rect>,
    pub timeline: Rect,
    pub hints: Rect,
}

impl Areas {
    pub fn new(area: Rect, focus: Pane, zoom: bool) -> Areas {
        let columns = area.width >= COLUMNS_FROM.0 && area.height >= COLUMNS_FROM.1;
        let [status, tabs, body, context, timeline, hints] = Layout::vertical([
            Constraint::Length(1),
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
            let [left, rest] = Layout::horizontal([
                Constraint::Length(if wide { 36 } else { 30 }),
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
pub fn wrapped_rows(lines: &[String], width: u16) -> usize {
    let width = usize::from(width.max(1));
    lines.iter().map(|l| l.chars().count().max(1).div_ceil(width)).sum()
}

/// Draws the whole console.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "terminal too small: {}×{} (the console needs {}×{})",
            area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let theme = app.theme();
    let areas = Areas::new(area, app.focus, app.zoom);
    draw_status(frame, areas.status, app, theme);
    if let Some(tabs) = areas.tabs {
        draw_tabs(frame, tabs, app.focus, theme);
    }
    for (pane, rect) in &areas.panes {
        let focused = *pane == app.focus;
        match pane {
            Pane::Plan => draw_plan(frame, *rect, app, focused, theme),
            Pane::Worker => draw_worker(frame, *rect, app, focused, theme),
            Pane::Exchange => draw_exchange(frame, *rect, app, focused, theme),
            Pane::Validators => draw_validators(frame, *rect, app, focused, theme),
            Pane::Ledger => draw_ledger(frame, *rect, app, focused, theme),
        }
    }
    if let Some(context) = areas.context {
        draw_context(frame, context, app, theme);
    }
    draw_timeline(frame, areas.timeline, app, theme);
    draw_hints(frame, areas.hints, app, theme);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help(top) => draw_help(frame, area, theme, *top),
        Overlay::Inspector(inspector) => draw_inspector(frame, area, inspector),
        Overlay::QuitPrompt => draw_quit_prompt(frame, area),
        Overlay::Editor(editor) => draw_editor(frame, area, editor),
        Overlay::Search(text) => draw_search(frame, area, text),
        Overlay::Source(source) => draw_source(frame, area, &source.0, theme),
    }
}

fn draw_status(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (at, total) = app.position();
    let mode = if app.live {
        app.live_mode()
    } else if app.clock.playing {
        format!("REPLAY {}", app.clock.label())
    } else {
        format!("PAUSED {}", app.clock.label())
    };
    let fold = app.view.fold();
    let done = fold.tasks_done();
    let tasks = fold.planned_tasks().unwrap_or(fold.task_count() as u64);
    let at_task = app
        .view
        .current_task()
        .and_then(|t| fold.task_position(t))
        .and_then(|i| fold.task_line(i))
        .map(|t| format!("  {} attempt {} iter {}", t.id, t.attempts.max(1), t.iterations))
        .unwrap_or_default();
    let waiting = app.prepared.waiting.as_deref().map(|w| format!("  {w}")).unwrap_or_default();
    let (tokens, cost) = fold.tokens_and_cost();
    let tokens = compact(tokens);
    let id = fold.session_id().unwrap_or("");
    let full = format!(
        " {id}  {mode}{waiting}  tasks {done}/{tasks}{at_task}  event {at}/{total}  {tokens} tok  ${cost:.3}"
    );
    let text = if full.chars().count() <= usize::from(area.width) {
        full
    } else {
        format!(
            " {mode}{waiting}  tasks {done}/{tasks}{at_task}  ev {at}/{total}  {tokens} tok  ${cost:.3}"
        )
    };
    frame.render_widget(Paragraph::new(text).style(theme.status()), area);
}

fn draw_tabs(frame: &mut Frame, area: Rect, focus: Pane, theme: &Theme) {
    let titles: Vec<String> = Pane::ALL.iter().map(|p| p.name().to_owned()).collect();
    let selected = Pane::ALL.iter().position(|p| *p == focus);
    let tabs = Tabs::new(titles)
        .select(selected)
        .style(theme.fg(theme.colors.muted))
        .highlight_style(theme.selected())
        .divider("│");
    frame.render_widget(tabs, area);
}

/// `148585` → `148.6k`, `2300000` → `2.30M`: counts that fit a status line.
fn compact(n: i64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.2}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

fn pane_block(title: String, focused: bool, theme: &Theme) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title, theme.fg(theme.colors.title)))
}

fn about(prepared: &Prepared) -> String {
    prepared.task.as_deref().map(|t| format!(" · {t}")).unwrap_or_default()
}

/// Draws only the tasks that fit, around the selected one: a plan of thousands of tasks
/// costs no more per frame than a plan of ten.
fn draw_plan(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let fold = app.view.fold();
    let count = fold.task_count();
    let height = usize::from(area.height.saturating_sub(2)).max(1);
    let selected = app.plan_selected.min(count.saturating_sub(1));
    let top = selected.saturating_sub(height / 2).min(count.saturating_sub(height));
    let title = if app.plan_follow { " Plan " } else { " Plan (G follows the run) " };
    let items: Vec<ListItem> = (top..count.min(top + height))
        .filter_map(|i| fold.task_line(i))
        .map(|t| {
            let mut spans = vec![
                Span::raw(format!("{} ", t.id)),
                Span::styled(t.state.to_owned(), theme.state(t.state)),
            ];
            if t.attempts > 0 {
                spans.push(Span::raw(format!(" ×{}", t.attempts)));
            }
            if let Some(c) = t.last_category {
                spans.push(Span::styled(format!(" {c}"), theme.fg(theme.colors.muted)));
            }
            ListItem::new(Line::from(spans))
        })
        .collect();
    let mut state = ListState::default();
    if count > 0 {
        state.select(Some(selected - top));
    }
    let highlight =
        if focused { theme.selected() } else { Style::default().add_modifier(Modifier::BOLD) };
    let list =
        List::new(items).block(pane_block(title.into(), focused, theme)).highlight_style(highlight);
    frame.render_stateful_widget(list, area, &mut state);
}

fn draw_worker(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let filter = match app.filter {
        super::view::Filter::All => String::new(),
        f => format!(" · {}", f.name()),
    };
    let title = if app.stream_back > 0 {
        format!(" Worker{filter} — {} newer below ↓ (G) ", app.stream_back)
    } else {
        format!(" Worker{filter} ")
    };
    let lines: Vec<Line> = app
        .prepared
        .worker
        .iter()
        .map(|(pos, text)| {
            let style = if app.search.at == Some(*pos) {
                theme.matched()
            } else if text.contains(" verdict: reject") || text.starts_with('✘') {
                theme.fg(theme.colors.bad)
            } else if text.starts_with('✔') {
                theme.fg(theme.colors.ok)
            } else if text.contains("BLOCKED") || text.contains("validators failed") {
                theme.fg(theme.colors.warn)
            } else {
                Style::default()
            };
            Line::styled(text.clone(), style)
        })
        .collect();
    let mut block = pane_block(title, focused, theme);
    if app.tilth {
        block = block.title_bottom(Span::styled(
            " Tilth kept no prose; tool output is its preview ",
            theme.fg(theme.colors.muted),
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_exchange(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let p = &app.prepared;
    let block = pane_block(format!(" Exchange{} — case ⇄ verdict ", about(p)), focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let scroll = (app.scroll_of(Pane::Exchange), 0);
    let text = |lines: &[String]| -> Vec<Line<'static>> {
        lines.iter().map(|l| Line::raw(l.clone())).collect()
    };
    if inner.width >= 70 {
        let [case, verdict] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .spacing(1)
                .areas(inner);
        frame.render_widget(
            Paragraph::new(text(&p.side.case)).wrap(Wrap { trim: false }).scroll(scroll),
            case,
        );
        frame.render_widget(
            Paragraph::new(text(&p.side.verdict)).wrap(Wrap { trim: false }).scroll(scroll),
            verdict,
        );
    } else {
        let mut lines = text(&p.side.case);
        lines.push(Line::raw(""));
        lines.push(Line::styled("Verdict", Style::default().add_modifier(Modifier::BOLD)));
        lines.extend(text(&p.side.verdict));
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).scroll(scroll), inner);
    }
}

fn draw_validators(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let p = &app.prepared;
    let lines: Vec<Line> = p
        .side
        .validators
        .iter()
        .map(|l| {
            let style = if l.starts_with('✗') {
                theme.fg(theme.colors.bad)
            } else if l.starts_with('✓') {
                theme.fg(theme.colors.ok)
            } else {
                Style::default()
            };
            Line::styled(l.clone(), style)
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((app.scroll_of(Pane::Validators), 0))
            .block(pane_block(format!(" Validators{} ", about(p)), focused, theme)),
        area,
    );
}

fn draw_ledger(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let p = &app.prepared;
    let items: Vec<ListItem> = if p.side.ledger.is_empty() {
        vec![ListItem::new("no verdicts or decisions yet")]
    } else {
        p.side
            .ledger
            .iter()
            .map(|(_, l)| {
                let style = if l.contains(". reject") {
                    theme.fg(theme.colors.bad)
                } else if l.contains(". accept") {
                    theme.fg(theme.colors.ok)
                } else {
                    theme.fg(theme.colors.waiting)
                };
                ListItem::new(Line::styled(l.clone(), style))
            })
            .collect()
    };
    let mut state = ListState::default();
    if focused && !p.side.ledger.is_empty() {
        state.select(Some(app.ledger_selected.unwrap_or(p.side.ledger.len() - 1)));
    }
    let list = List::new(items)
        .block(pane_block(format!(" Ledger{} ", about(p)), focused, theme))
        .highlight_style(theme.selected());
    frame.render_stateful_widget(list, area, &mut state);
}

/// The worker's prompt size call by call, newest at the right: context growth within a task
/// and its reset at the next show at a glance; bands alternate colour by task.
fn draw_context(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let calls = &app.prepared.context;
    let last = calls.last().map_or_else(|| "-".to_owned(), |(t, _)| compact(i64::from(*t)));
    let label = " context ";
    let tail = format!(" {last} prompt tokens ");
    let [left, chart, right] = Layout::horizontal([
        Constraint::Length(label.len() as u16),
        Constraint::Min(1),
        Constraint::Length(tail.chars().count() as u16),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(label).style(theme.fg(theme.colors.muted)), left);
    let bars: Vec<SparklineBar> = calls
        .iter()
        .map(|(tokens, band)| {
            SparklineBar::from(u64::from(*tokens)).style(Some(theme.fg(if *band {
                theme.colors.band_a
            } else {
                theme.colors.band_b
            })))
        })
        .collect();
    frame.render_widget(Sparkline::default().data(bars), chart);
    frame.render_widget(Paragraph::new(tail).style(theme.fg(theme.colors.muted)), right);
}

fn draw_timeline(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (at, total) = app.position();
    let percent = (at * 100).checked_div(total).unwrap_or(100);
    let mut spans = vec![Span::raw(" ")];
    spans.extend(app.prepared.timeline.iter().map(|cell| match cell {
        Cell::Band(a) => {
            Span::styled("━", theme.fg(if *a { theme.colors.band_a } else { theme.colors.band_b }))
        }
        Cell::Ahead => Span::styled("┄", theme.fg(theme.colors.muted)),
        Cell::Cursor => {
            Span::styled("▲", theme.fg(theme.colors.focus).add_modifier(Modifier::BOLD))
        }
        Cell::Mark(Mark::Accept) => Span::styled("✓", theme.fg(theme.colors.ok)),
        Cell::Mark(Mark::Reject) => Span::styled("✗", theme.fg(theme.colors.bad)),
        Cell::Mark(Mark::Failure) => Span::styled("!", theme.fg(theme.colors.warn)),
    }));
    spans.push(Span::raw(format!(" {percent:>3}%")));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The most useful keys for the mode, as many whole ones as fit the width.
fn hints(live: bool, width: usize) -> String {
    let keys: &[&str] = if live {
        &[
            "? help",
            "q quit",
            "p pause",
            "Enter inspect",
            "Tab pane",
            "/ search",
            "s step",
            "z zoom",
            "a/r/F decide",
        ]
    } else {
        &[
            "? help",
            "q quit",
            "space play",
            "x failure",
            "Enter inspect",
            "Tab pane",
            "/ search",
            "+/- speed",
            "./, step",
        ]
    };
    let mut line = String::new();
    for key in keys {
        let sep = if line.is_empty() { "" } else { "  " };
        if line.chars().count() + sep.len() + key.chars().count() > width {
            break;
        }
        line.push_str(sep);
        line.push_str(key);
    }
    line
}

fn draw_hints(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (text, style) = match app.notice.as_deref() {
        Some(notice) => (notice.to_owned(), theme.fg(theme.colors.notice)),
        None => (hints(app.live, usize::from(area.width)), theme.fg(theme.colors.muted)),
    };
    frame.render_widget(Paragraph::new(text).style(style), area);
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
    let rect = popup(frame, area, area.width.saturating_sub(4), area.height.saturating_sub(2), 1);
    let lines: Vec<Line> = inspector.lines.iter().map(|l| Line::raw(l.clone())).collect();
    let hint = match inspector.evidence.len() {
        0 => " ↑↓ scroll · Esc closes ".to_owned(),
        1 => " 1 opens the evidence · ↑↓ scroll · Esc closes ".to_owned(),
        n => format!(" 1–{} open evidence · ↑↓ scroll · Esc closes ", n.min(9)),
    };
    let block =
        Block::default().borders(Borders::ALL).title(inspector.title.clone()).title_bottom(hint);
    let rows = wrapped_rows(&inspector.lines, rect.width.saturating_sub(2));
    let top = inspector
        .scroll
        .min(rows.saturating_sub(usize::from(rect.height.saturating_sub(2))) as u16);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top, 0)).block(block),
        rect,
    );
}

fn draw_source(frame: &mut Frame, area: Rect, source: &super::evidence::Source, theme: &Theme) {
    let rect = popup(frame, area, area.width.saturating_sub(4), area.height.saturating_sub(2), 1);
    let lines: Vec<Line> = source
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if Some(i) == source.target {
                Line::styled(l.clone(), theme.matched())
            } else {
                Line::raw(l.clone())
            }
        })
        .collect();
    let top = source.scroll.min(source.lines.len().saturating_sub(1) as u16);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!("{}— {} ", source.title, source.origin))
        .title_bottom(" ↑↓ scroll · Esc back to the verdict ");
    frame.render_widget(Paragraph::new(lines).scroll((top, 0)).block(block), rect);
}

fn draw_editor(frame: &mut Frame, area: Rect, editor: &super::app::Editor) {
    let rect = popup(frame, area, 80, 5, area.height / 3);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", editor.title))
        .title_bottom(" Enter sends · Esc cancels ");
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(&editor.text, inner);
}

fn draw_search(frame: &mut Frame, area: Rect, text: &tui_textarea::TextArea<'static>) {
    let rect = popup(frame, area, 70, 3, area.height.saturating_sub(5));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Search the worker stream ")
        .title_bottom(" Enter searches · Esc cancels ");
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(text, inner);
}

fn draw_quit_prompt(frame: &mut Frame, area: Rect) {
    let lines = vec![
        Line::raw("The run is still going."),
        Line::raw(""),
        Line::raw("  y    stop it at the next task boundary (resumable)"),
        Line::raw("  n    leave it running here, printing its events"),
        Line::raw("  Esc  stay in the console"),
    ];
    let rect = popup(frame, area, 58, 7, area.height / 3);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Quit ")),
        rect,
    );
}

/// The key list; when it is taller than the terminal it scrolls with the arrow keys from `top`.
fn draw_help(frame: &mut Frame, area: Rect, theme: &Theme, top: u16) {
    let rows = BINDINGS.len() as u16;
    let height = (rows + 2).min(area.height);
    let hidden = rows.saturating_sub(height.saturating_sub(2));
    let top = top.min(hidden);
    let rect = popup(frame, area, 86, height, (area.height - height) / 2);
    let lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:>7}  ", b.label), theme.fg(theme.colors.focus)),
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
        rect,
    );
}
