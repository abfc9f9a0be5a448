//! Render functions: they read the app's prepared state and draw; nothing else.

use super::app::App;
use super::chrome::tone_style;
use super::frame::Prepared;
use super::keymap::hint_line;
use super::layout::{Areas, MIN_SIZE, Pane};
use super::theme::Theme;
use super::timeline::{Cell, Mark};
use crate::session::state::TaskState;
use crate::session::timestamp::span;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, List, ListItem, ListState, Paragraph, Sparkline, SparklineBar, Tabs, Wrap,
};

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
    let areas = Areas::new(area, app.sel.focus, app.sel.zoom, !app.prepared.lanes.is_empty());
    draw_status(frame, areas.status, app, theme);
    if let Some(strip) = areas.lanes {
        draw_lanes(frame, strip, app, theme);
    }
    if let Some(tabs) = areas.tabs {
        draw_tabs(frame, tabs, app.sel.focus, theme);
    }
    for (pane, rect) in &areas.panes {
        let focused = *pane == app.sel.focus;
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
    let paint = super::views::Paint { theme, held: app.player.view.held() };
    app.views.draw(frame, area, &paint);
}

fn draw_status(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (at, total) = app.position();
    let clock = &app.player.clock;
    let mode = if app.live {
        app.live_mode()
    } else if clock.playing {
        format!("REPLAY {}", clock.label())
    } else {
        format!("PAUSED {}", clock.label())
    };
    let mode = match app.player.reading_percent() {
        Some(read) => format!("reading the log {read} %  {mode}"),
        None => mode,
    };
    let view = &app.player.view;
    let fold = view.fold();
    let done = fold.tasks_done();
    let tasks = fold.planned_tasks().unwrap_or(fold.task_count() as u64);
    let at_task = view
        .current_task()
        .and_then(|t| fold.task_position(t))
        .and_then(|i| fold.task_line(i))
        .map(|t| format!("  {} attempt {} iter {}", t.id, t.attempts.max(1), t.iterations))
        .unwrap_or_default();
    let waiting = app.prepared.waiting.as_deref().map(|w| format!("  {w}")).unwrap_or_default();
    let (tokens, cost) = fold.tokens_and_cost();
    // Calls that reported no usage make the total unknown, or a floor: never a plain 0.
    let tokens = match (fold.uncounted_calls(), tokens) {
        (0, t) => compact(t),
        (_, 0) => "?".to_owned(),
        (_, t) => format!("{}+?", compact(t)),
    };
    // Counts a server did not give are estimates from characters: said so, never a bare 0.
    let tokens = if fold.estimated_calls() > 0 { format!("~{tokens}") } else { tokens };
    let id = fold.session_id().unwrap_or("");
    // Which sandbox the worker's commands run in; none is never left unsaid.
    let (sandbox, short_sandbox) = match fold.sandbox() {
        Some("off") => ("  NO SANDBOX".to_owned(), "  NO SANDBOX"),
        Some(kind) => (format!("  sandbox {kind}"), ""),
        None => (String::new(), ""),
    };
    // The longest that fits: the sandbox's name is dropped before the session's id, but
    // "NO SANDBOX" never is.
    // A worker that fell back or escalated says which model it talks to now.
    let switched = fold
        .worker_switched_to()
        .map(|m| format!("  worker ⇄ {}", crate::printable::line(m)))
        .unwrap_or_default();
    // With the worker's window known, how full its last request left it.
    let window = match (app.window_now(), app.prepared.context.last()) {
        (Some(w), Some((last, _))) => format!(
            "  ctx {}/{}",
            compact(i64::from(*last)),
            compact(i64::try_from(w).unwrap_or(i64::MAX))
        ),
        _ => String::new(),
    };
    // Calls a server did not count cost nothing harrow knows of: their cost is unknown.
    let cost = match (fold.estimated_calls(), cost) {
        (0, c) => format!("${c:.3}"),
        (_, 0.0) => "$?".to_owned(),
        (_, c) => format!("${c:.3}+?"),
    };
    let tail = format!("{tokens} tok{window}  {cost}{switched}");
    // A held or asking run's line names its task: its attempt and the event count go first,
    // then its key list (the hint line has the keys), so what it waits on, and for how long,
    // stays whole.
    let brief = mode
        .split_once(" — ")
        .filter(|_| mode.starts_with("HELD") || mode.starts_with("ASKS"))
        .map(|(head, _)| head.to_owned());
    let lines = |mode: &str| {
        [
            format!(
                " {id}  {mode}{waiting}  tasks {done}/{tasks}{at_task}  event {at}/{total}  {tail}{sandbox}"
            ),
            format!(
                " {id}  {mode}{waiting}  tasks {done}/{tasks}{at_task}  event {at}/{total}  {tail}{short_sandbox}"
            ),
            format!(
                " {mode}{waiting}  tasks {done}/{tasks}{at_task}  ev {at}/{total}  {tail}{short_sandbox}"
            ),
        ]
    };
    let mut candidates = lines(&mode).to_vec();
    if let Some(brief) = &brief {
        candidates.push(format!(" {mode}{waiting}  tasks {done}/{tasks}  {tail}{short_sandbox}"));
        candidates.extend(lines(brief));
    }
    let mode = brief.unwrap_or(mode);
    let width = usize::from(area.width);
    let text =
        candidates.iter().find(|c| c.chars().count() <= width).cloned().unwrap_or_else(|| {
            // Nothing fits: what the run is doing is cut short, never its tokens and cost.
            let end = format!("  {tail}{short_sandbox}");
            let head = format!(" {mode}{waiting}  tasks {done}/{tasks}{at_task}  ev {at}/{total}");
            let room = width.saturating_sub(end.chars().count());
            let head: String = if head.chars().count() > room {
                head.chars().take(room.saturating_sub(1)).chain(['…']).collect()
            } else {
                head
            };
            format!("{head}{end}")
        });
    frame.render_widget(Paragraph::new(text).style(theme.status()), area);
}

/// The lane strip: each lane's task, attempt, iteration, state and time; the lane the panes
/// follow is marked.
fn draw_lanes(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut spans = vec![Span::styled(
        if app.sel.lane.is_none() { " all lanes ▸ " } else { " lanes " },
        theme.fg(theme.colors.muted),
    )];
    for cell in &app.prepared.lanes {
        let time =
            cell.for_ms.map(|ms| format!(" {}", span(ms.unsigned_abs()))).unwrap_or_default();
        let label =
            format!(" L{} {} #{} it{} ", cell.number, cell.task, cell.attempt, cell.iteration);
        let picked = app.sel.lane == Some(cell.number);
        let style = if picked { theme.selected() } else { Style::default() };
        let label = if picked { format!("▸{}", label.trim_start()) } else { label };
        spans.push(Span::styled(label, style));
        spans.push(Span::styled(cell.state.to_string(), theme.state(&cell.state)));
        spans.push(Span::styled(format!("{time} │"), theme.fg(theme.colors.muted)));
    }
    spans.push(Span::styled(" L follows a lane", theme.fg(theme.colors.muted)));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
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
pub(super) fn compact(n: i64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.2}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// The style of a row's tone.
fn pane_block(title: String, focused: bool, theme: &Theme) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title, theme.fg(theme.colors.title)))
}

/// The selected task's figures, each a title segment: how much of the window is left, time,
/// tokens, cost, tool calls, validator runs.
fn task_stats(app: &App) -> Vec<String> {
    let fold = app.player.view.fold();
    let line = app.prepared.task.as_deref().and_then(|t| fold.task_line(fold.task_position(t)?));
    let Some(t) = line.filter(|t| t.state != TaskState::Pending) else { return Vec::new() };
    let mut out = Vec::new();
    // For the task at work, with the window known: how much of it its last request left.
    // First, so a narrow pane's title still has it.
    if let (Some(w), Some((last, _))) = (app.window_now(), app.prepared.context.last())
        && app.player.view.current_task() == Some(t.id)
    {
        let used = (u64::from(*last) * 100 / w.max(1)).min(100);
        out.push(format!(" · {} % of window left", 100 - used));
    }
    if let Some(ms) = t.elapsed_ms {
        out.push(format!(" · {}", span(ms)));
    }
    out.push(format!(" · {} tok", compact(t.tokens)));
    out.push(format!(" · ${:.3}", t.cost));
    out.push(format!(" · {} tool calls", t.tool_calls));
    out.push(format!(" · {} validator runs", t.validator_runs));
    out
}

/// A pane's title of `head` and as many of `segments`, in order, as fit whole in a pane
/// `width` wide; the first (the window's figure, which the status line also has) is passed
/// over when it alone does not fit. A figure cut short can say the opposite of what it means
/// ("96 % of the windo" for 96 % left).
fn title_that_fits(head: &str, segments: &[String], width: u16) -> String {
    let room = usize::from(width).saturating_sub(2);
    let mut title = head.to_owned();
    for (n, segment) in segments.iter().enumerate() {
        if title.chars().count() + segment.chars().count() <= room {
            title.push_str(segment);
        } else if n > 0 {
            break;
        }
    }
    if title.chars().count() < room {
        title.push(' ');
    }
    title
}

fn about(prepared: &Prepared) -> String {
    prepared.task.as_deref().map(|t| format!(" · {t}")).unwrap_or_default()
}

/// Draws only the tasks that fit, around the selected one: a plan of thousands of tasks
/// costs no more per frame than a plan of ten.
fn draw_plan(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let fold = app.player.view.fold();
    let count = fold.task_count();
    let height = usize::from(area.height.saturating_sub(2)).max(1);
    let selected = app.sel.plan_selected.min(count.saturating_sub(1));
    let top = selected.saturating_sub(height / 2).min(count.saturating_sub(height));
    let title = if app.sel.plan_follow { " Plan " } else { " Plan (G follows the run) " };
    let mut depths = std::collections::HashMap::new();
    let items: Vec<ListItem> = (top..count.min(top + height))
        .filter_map(|i| fold.task_line(i))
        .map(|t| {
            let depth = plan_depth(fold, t.id, 4, &mut depths);
            let indent =
                if depth == 0 { String::new() } else { format!("{}└ ", "  ".repeat(depth - 1)) };
            let mut spans = vec![
                Span::styled(indent, theme.fg(theme.colors.muted)),
                Span::raw(format!("{} ", t.id)),
                Span::styled(t.state.to_string(), theme.state(&t.state)),
            ];
            if let Some(lane) = t.lane {
                spans.push(Span::styled(format!(" L{lane}"), theme.fg(theme.colors.muted)));
            }
            // What it depends on comes before the figures, so a narrow pane still shows it.
            if !t.depends_on.is_empty() {
                let on = t.depends_on.join(",");
                let said = if t.state == TaskState::Blocked { " waits on " } else { " ←" };
                spans.push(Span::styled(format!("{said}{on}"), theme.fg(theme.colors.muted)));
            }
            if t.attempts > 0 {
                spans.push(Span::raw(format!(" ×{}", t.attempts)));
            }
            if let Some(c) = t.last_category {
                spans.push(Span::styled(format!(" {c}"), theme.fg(theme.colors.muted)));
            }
            if let Some(ms) = t.elapsed_ms.filter(|_| t.state != TaskState::Pending) {
                spans.push(Span::styled(format!(" {}", span(ms)), theme.fg(theme.colors.muted)));
            }
            if t.cost > 0.0 {
                spans.push(Span::styled(format!(" ${:.3}", t.cost), theme.fg(theme.colors.muted)));
            }
            if let Some(title) = t.title.filter(|t| !t.is_empty()) {
                spans.push(Span::raw(format!("  {title}")));
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

/// How deep a task sits in the plan's graph: 0 for a task that depends on nothing, else one
/// more than the deepest task it depends on, at most `cap` (4 from the top, so a long chain
/// stays readable and a cycle in a hostile log ends). Worked out only for the tasks on screen,
/// each answer kept in `known` for the frame (by task and cap, so however a hostile plan fans
/// out each is worked out once): a plan of thousands of tasks costs a frame no more than one
/// of ten.
fn plan_depth<'f>(
    fold: &'f crate::session::summary::SummaryFold,
    task: &'f str,
    cap: usize,
    known: &mut std::collections::HashMap<(&'f str, usize), usize>,
) -> usize {
    if let Some(&d) = known.get(&(task, cap)) {
        return d;
    }
    let deps = fold.task_position(task).and_then(|i| fold.task_brief(i)).map(|b| b.depends_on);
    let depth = match deps {
        Some(deps) if !deps.is_empty() && cap > 0 => deps
            .iter()
            .map(|d| {
                let known_dep = fold.task_position(d).is_some();
                if known_dep { plan_depth(fold, d, cap - 1, known) + 1 } else { 1 }
            })
            .max()
            .unwrap_or(0)
            .min(4),
        Some(deps) if !deps.is_empty() => 1,
        _ => 0,
    };
    known.insert((task, cap), depth);
    depth
}

fn draw_worker(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let only = match &app.sel.only {
        Some(_) => format!(" · only “{}”", crate::printable::line(&app.search.query)),
        None => String::new(),
    };
    let filter = match app.sel.filter {
        super::view::Filter::All => only,
        f => format!(" · {}{only}", f.name()),
    };
    let newer = app.rows_newer_than_selected();
    let title = if newer > 0 {
        format!(" Worker{filter} — {newer} newer below ↓ (G) ")
    } else {
        format!(" Worker{filter} ")
    };
    // Focused, the newest row on screen is the selected one: Enter opens it in full.
    let selected = focused.then(|| app.selected_row()).flatten();
    let lines: Vec<Line> = app
        .prepared
        .worker
        .iter()
        .map(|(pos, (tone, text))| {
            let style = if app.search.at == Some(*pos) {
                theme.matched()
            } else if selected == Some(*pos) {
                tone_style(*tone, theme).add_modifier(Modifier::REVERSED)
            } else {
                tone_style(*tone, theme)
            };
            Line::styled(text.clone(), style)
        })
        .collect();
    let lines = with_live_reply(lines, app.prepared.live.as_ref(), area, theme);
    let mut block = pane_block(title, focused, theme);
    if app.player.tilth {
        block = block.title_bottom(Span::styled(
            " Tilth kept no prose; tool output is its preview ",
            theme.fg(theme.colors.muted),
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The Worker pane's rows with the reply in flight below them: a heading with its size and
/// age, then the newest lines of its reasoning, text and forming tool calls, as many as the
/// pane has room for (the oldest rows give way).
fn with_live_reply(
    mut lines: Vec<Line<'static>>,
    live: Option<&crate::session::live::LiveReply>,
    area: Rect,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let Some(live) = live else { return lines };
    let height = usize::from(area.height.saturating_sub(2));
    let width = usize::from(area.width.saturating_sub(4)).max(10);
    let secs = (jiff::Timestamp::now().as_millisecond() - live.started_ms).max(0) / 1000;
    let style = theme.fg(theme.colors.waiting);
    let mut extra = vec![Line::styled(
        format!(
            "▌ the {} is writing · ~{} tokens so far · {secs} s",
            live.role,
            live.chars.div_ceil(4)
        ),
        style.add_modifier(Modifier::BOLD),
    )];
    let mut text_lines = |label: &str, text: &str, keep: usize| {
        let rows: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .flat_map(|l| {
                let chars: Vec<char> = l.chars().collect();
                chars.chunks(width).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>()
            })
            .collect();
        for row in &rows[rows.len().saturating_sub(keep)..] {
            extra.push(Line::styled(format!("▌ {label}{row}"), style));
        }
    };
    text_lines("(thinking) ", &live.reasoning, 2);
    text_lines("", &live.content, 4);
    for (name, args) in &live.tool_calls {
        let args: String = args.chars().rev().take(width.saturating_sub(name.len() + 4)).collect();
        let args: String = args.chars().rev().collect();
        extra.push(Line::styled(format!("▌ → {name} {args}"), style));
    }
    let room = height.saturating_sub(extra.len());
    let drop = lines.len().saturating_sub(room);
    lines.drain(..drop);
    lines.extend(extra);
    lines
}

fn draw_exchange(frame: &mut Frame, area: Rect, app: &App, focused: bool, theme: &Theme) {
    let p = &app.prepared;
    let head = format!(" Exchange{} — case ⇄ verdict", about(p));
    let block = pane_block(title_that_fits(&head, &task_stats(app), area.width), focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let scroll = (app.sel.scroll_of(Pane::Exchange), 0);
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
        .map(|(tone, l)| Line::styled(l.clone(), tone_style(*tone, theme)))
        .collect();
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((app.sel.scroll_of(Pane::Validators), 0))
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
            .map(|(_, (tone, l))| ListItem::new(Line::styled(l.clone(), tone_style(*tone, theme))))
            .collect()
    };
    let mut state = ListState::default();
    if focused && !p.side.ledger.is_empty() {
        state.select(Some(app.sel.ledger_selected.unwrap_or(p.side.ledger.len() - 1)));
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
    // The bars show the growth call by call; with the window known, the tail says how full
    // the last request left it.
    let tail = match (app.window_now(), calls.last()) {
        (Some(w), Some((t, _))) => format!(
            " {last} / {} prompt tokens ({} %) ",
            compact(i64::try_from(w).unwrap_or(i64::MAX)),
            u64::from(*t) * 100 / w.max(1)
        ),
        (Some(w), None) => {
            format!(" - / {} prompt tokens ", compact(i64::try_from(w).unwrap_or(i64::MAX)))
        }
        (None, _) => format!(" {last} prompt tokens "),
    };
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

/// A live run paused at a task boundary, still there to resume.
fn resumable(app: &App) -> bool {
    app.live && app.paused() && app.ended().is_none()
}

fn draw_hints(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (text, style) = match app.notice.as_deref() {
        Some(notice) => (notice.to_owned(), theme.fg(theme.colors.notice)),
        // An editor's border says its keys in its own words: not said a second time here.
        None if app.views.mode() == super::keymap::Mode::Editor => {
            (String::new(), theme.fg(theme.colors.muted))
        }
        // While the run is paused, the key that pauses is the key that resumes.
        None => (
            hint_line(app.views.mode(), app.live, usize::from(area.width)).replacen(
                "p pause",
                if resumable(app) { "p resume" } else { "p pause" },
                1,
            ),
            theme.fg(theme.colors.muted),
        ),
    };
    frame.render_widget(Paragraph::new(text).style(style), area);
}

#[cfg(test)]
mod tests {
    use super::{plan_depth, title_that_fits};
    use crate::session::fact::Fact;
    use crate::session::summary::SummaryFold;

    fn fold_of(tasks: &[(&str, &[&str])]) -> SummaryFold {
        let plan: Vec<_> = tasks
            .iter()
            .map(|(id, deps)| serde_json::json!({"id": id, "title": id, "depends_on": deps}))
            .collect();
        let line =
            serde_json::json!({"type": "session_start", "seq": 1, "payload": {"plan_tasks": plan}})
                .to_string();
        let mut fold = SummaryFold::new(None);
        fold.apply(
            &Fact::decode(line.as_bytes(), &mut crate::session::fact::KeptValues::default())
                .unwrap_or_else(|e| panic!("{e}")),
        );
        fold
    }

    #[test]
    fn depth_is_the_longest_chain_above_capped_at_four_and_a_cycle_ends() {
        let fold = fold_of(&[
            ("A", &[]),
            ("B", &["A"]),
            ("C", &["B", "A"]),
            ("D", &["C"]),
            ("E", &["D"]),
            ("F", &["E"]),
            ("X", &["Y"]),
            ("Y", &["X"]),
            ("Z", &["gone"]),
        ]);
        let mut known = std::collections::HashMap::new();
        let depths: Vec<usize> = ["F", "A", "B", "C", "D", "E", "X", "Y", "Z"]
            .iter()
            .map(|t| plan_depth(&fold, t, 4, &mut known))
            .collect();
        assert_eq!(depths, [4, 0, 1, 2, 3, 4, 4, 4, 1]);
    }

    #[test]
    fn a_title_holds_whole_figures_only_and_passes_over_the_window_that_does_not_fit() {
        let figures: Vec<String> = [" · 96 % of window left", " · 3s", " · 16.2k tok", " · $0.005"]
            .map(String::from)
            .into();
        let head = " Exchange · T-004 — case ⇄ verdict";
        let wide = title_that_fits(head, &figures, 120);
        assert_eq!(wide, format!("{head} · 96 % of window left · 3s · 16.2k tok · $0.005 "));
        // 35 + 22 does not fit in 52: the window's figure goes, the rest in order, whole.
        let narrow = title_that_fits(head, &figures, 54);
        assert_eq!(narrow, format!("{head} · 3s · 16.2k tok "));
        // A figure that fits only cut short is left out, never cut: the text ends at a figure.
        for width in 36..=70 {
            let title = title_that_fits(head, &figures, width);
            assert!(title.chars().count() <= usize::from(width) - 2, "{width}: {title}");
            let body = title.trim_end();
            assert!(
                body == head || figures.iter().any(|f| body.ends_with(f.as_str())),
                "{width}: {title}"
            );
        }
    }
}
