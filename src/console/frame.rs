//! What one frame shows, prepared from the player before drawing so that rendering does no
//! I/O: the worker rows on screen, the panes about the selected task, the timeline cells and
//! the context strip. The clock and whether a run is alive are passed in, never read here.

use super::describe::{Tone, row, tone};
use super::layout::{Areas, Pane, wrapped_rows};
use super::panes::{case_lines, ledger_row, validator_detail, verdict_lines};
use super::player::Player;
use super::timeline::Cell;
use super::view::{Filter, Trail, WORKER_WAIT};
use crate::session::event::Payload;
use crate::session::state::TaskState;
use ratatui::layout::Rect;

/// One row of a pane: the text and how it reads, decided from the event, not from its words.
pub type Row = (Tone, String);

/// Where the operator is looking: the focused pane and each pane's selection or scroll.
#[derive(Debug, Clone)]
pub struct Selection {
    pub focus: Pane,
    /// The focused pane fills the body.
    pub zoom: bool,
    pub plan_selected: usize,
    /// The plan's selection follows the task at work until the operator picks one.
    pub plan_follow: bool,
    /// Rows scrolled back from the newest; 0 follows the newest.
    pub stream_back: usize,
    /// The worker row the operator moved the cursor to (its event's position); `None`
    /// selects the newest row shown and follows it.
    pub picked: Option<usize>,
    /// The ledger row picked for `Enter`; `None` is the latest.
    pub ledger_selected: Option<usize>,
    /// First line shown, per pane, for the panes that scroll by line.
    pub scroll: [u16; 5],
    /// Which rows the worker stream shows.
    pub filter: Filter,
    /// Rows the worker pane showed last frame.
    pub worker_height: usize,
    /// Whether worker rows carry their time, and how.
    pub row_time: RowTime,
    /// The lane the Worker pane and the plan's selection follow (`None`: every lane).
    pub lane: Option<u64>,
    /// The rows the last search matches, when the stream shows only them (`&`).
    pub only: Option<Vec<usize>>,
}

/// The time a worker row carries: none, the clock's, or how long after the session began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowTime {
    #[default]
    Off,
    /// `14:02:31`, in the machine's time zone.
    Clock,
    /// `+12.4s` (or `+3m05s`, `+1h02m`) since the session's first event.
    Since,
}

impl RowTime {
    /// The next setting, as `T` cycles them.
    pub fn next(self) -> RowTime {
        match self {
            RowTime::Off => RowTime::Clock,
            RowTime::Clock => RowTime::Since,
            RowTime::Since => RowTime::Off,
        }
    }

    /// The row's time as it prefixes the row, from its event's timestamp and the session's
    /// first one; blank when either cannot be read.
    pub fn prefix(self, ts: Option<&str>, start: Option<&str>) -> String {
        let at = ts.and_then(crate::session::timestamp::parse);
        match self {
            RowTime::Off => String::new(),
            RowTime::Clock => at.map_or_else(
                || format!("{:8} ", ""),
                |t| format!("{} ", t.to_zoned(jiff::tz::TimeZone::system()).strftime("%H:%M:%S")),
            ),
            RowTime::Since => {
                let start = start.and_then(crate::session::timestamp::parse);
                match (at, start) {
                    (Some(at), Some(start)) => {
                        let ms = (at.as_millisecond() - start.as_millisecond()).max(0);
                        format!("{:>8} ", since(ms))
                    }
                    _ => format!("{:8} ", ""),
                }
            }
        }
    }
}

/// Milliseconds since the start, short: `+12.4s`, `+3m05s`, `+1h02m`.
fn since(ms: i64) -> String {
    let secs = ms / 1000;
    if secs < 60 {
        format!("+{}.{}s", secs, (ms % 1000) / 100)
    } else if secs < 3600 {
        format!("+{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("+{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            focus: Pane::Worker,
            zoom: false,
            plan_selected: 0,
            plan_follow: true,
            stream_back: 0,
            only: None,
            picked: None,
            ledger_selected: None,
            scroll: [0; 5],
            filter: Filter::All,
            worker_height: 0,
            row_time: RowTime::Off,
            lane: None,
        }
    }
}

impl Selection {
    /// Moves a scrolling pane's view by `delta` lines.
    pub fn scroll_by(&mut self, pane: Pane, delta: i16) {
        let s = &mut self.scroll[pane.index()];
        *s = s.saturating_add_signed(delta);
    }

    /// How far a pane that scrolls by line is scrolled.
    pub fn scroll_of(&self, pane: Pane) -> u16 {
        self.scroll[pane.index()]
    }
}

/// What the frame is drawn at: the wall clock and whether a run holds the session.
#[derive(Debug, Clone, Copy)]
pub struct Moment {
    pub now_ms: i64,
    pub run_alive: bool,
}

/// What the panes draw.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The worker stream's rows on screen, with the position of each row's event.
    pub worker: Vec<(usize, Row)>,
    /// The task the Exchange, Validators and Ledger panes are about.
    pub task: Option<String>,
    pub side: SidePanes,
    /// What `side` was made from: while it stays the same, so does the text.
    side_key: Option<SideKey>,
    pub timeline: Vec<Cell>,
    /// The newest worker prompt sizes that fit the sparkline, with each call's task band.
    pub context: Vec<(u32, bool)>,
    /// A run holds the session now, so a wait it is in can be counted in seconds.
    pub run_alive: bool,
    /// What the run waits on, with the seconds so far while a run holds the session.
    pub waiting: Option<String>,
    /// The model's reply in flight, while one streams in and the cursor is at the newest.
    pub live: Option<crate::session::live::LiveReply>,
    /// The time setting the worker rows were made with.
    row_time: RowTime,
    /// The lane the worker rows were made for.
    lane: Option<u64>,
    /// How many turns could be rewound to when the worker rows were made: a turn's mark
    /// comes after its rows.
    checkpoints: usize,
    /// Each lane's task, in a run with lanes: the lane strip.
    pub lanes: Vec<LaneCell>,
}

/// One lane in the lane strip.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneCell {
    pub number: u64,
    pub task: String,
    pub attempt: u64,
    pub iteration: u64,
    pub state: TaskState,
    /// How long the lane has had its task (to the run's newest event, or to now while a run
    /// holds the session), in milliseconds.
    pub for_ms: Option<i64>,
}

/// The text of the panes about the selected task.
#[derive(Debug, Default)]
pub struct SidePanes {
    pub case: Vec<String>,
    pub verdict: Vec<String>,
    pub validators: Vec<Row>,
    /// The task's ledger rows, with the position of each row's event.
    pub ledger: Vec<(usize, Row)>,
}

/// The task and the newest positions of its trail: what the side panes are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SideKey {
    task: Option<String>,
    case: Option<usize>,
    verdict: Option<usize>,
    validators: Option<usize>,
    ledger: Option<usize>,
    unreviewed: bool,
    /// The worker models the task moved to: a switch after its case changes what it says.
    models: usize,
}

/// Prepares a frame at this terminal size. What did not change since `previous` is kept
/// rather than read again: worker rows by their event, the side panes while the selected
/// task's trail stays the same.
pub fn prepare(
    player: &mut Player,
    sel: &mut Selection,
    mut previous: Prepared,
    area: Rect,
    at: Moment,
) -> Prepared {
    let areas = Areas::new(area, sel.focus, sel.zoom, !player.view.lanes().is_empty());
    let fold = player.view.fold();
    let followed = match sel.lane {
        Some(n) => player.view.lanes().get(n).map(|m| m.task.as_str()),
        None => player.view.current_task(),
    };
    if sel.plan_follow
        && let Some(i) = followed.and_then(|c| fold.task_position(c))
    {
        sel.plan_selected = i;
    }
    let lanes = lane_cells(player, at);
    sel.plan_selected = sel.plan_selected.min(fold.task_count().saturating_sub(1));
    let line = fold.task_line(sel.plan_selected);
    let task = line.as_ref().map(|t| t.id.to_owned());
    let models = line.as_ref().map_or(0, |t| t.worker_models.len());
    let unreviewed = line.is_some_and(|t| t.state == TaskState::DoneUnreviewed);
    if task != previous.task {
        sel.ledger_selected = None;
        sel.scroll[Pane::Exchange.index()] = 0;
        sel.scroll[Pane::Validators.index()] = 0;
    }
    if previous.row_time != sel.row_time
        || previous.lane != sel.lane
        || previous.checkpoints != player.view.checkpoint_count()
    {
        previous.worker.clear();
    }
    let worker = worker_rows(player, sel, areas.inner_height(Pane::Worker), &mut previous.worker);
    let trail = task.as_deref().and_then(|t| player.view.trail(t)).unwrap_or_default();
    let key = SideKey {
        task: task.clone(),
        case: trail.cases.last().copied(),
        verdict: trail.verdicts.last().copied(),
        validators: trail.validators.last().copied(),
        ledger: trail.ledger.last().copied(),
        unreviewed,
        models,
    };
    let side = if previous.side_key.as_ref() == Some(&key) {
        previous.side
    } else {
        side_panes(player, &trail, unreviewed)
    };
    clamp_scroll(sel, &areas, &side);
    let width = usize::from(areas.timeline.width.saturating_sub(8));
    let timeline = player.timeline_cells(width, sel.lane);
    let room = areas.context.map_or(0, |r| usize::from(r.width.saturating_sub(30)));
    let pressure = player.view.pressure();
    let context = pressure[pressure.len().saturating_sub(room)..]
        .iter()
        .map(|p| (p.prompt_tokens, p.band))
        .collect();
    let waiting = player.view.waiting().filter(|w| at.run_alive || w.what != WORKER_WAIT);
    let waiting = waiting.map(|w| match (at.run_alive, w.since_ms) {
        (true, Some(since)) => format!("{} {} s", w.what, (at.now_ms - since).max(0) / 1000),
        _ => w.what.clone(),
    });
    Prepared {
        worker,
        task,
        side,
        side_key: Some(key),
        timeline,
        context,
        run_alive: at.run_alive,
        waiting,
        live: None,
        row_time: sel.row_time,
        lane: sel.lane,
        checkpoints: player.view.checkpoint_count(),
        lanes,
    }
}

/// The lane strip: each lane's task with its attempt, iteration and state, and how long the
/// lane has had it.
fn lane_cells(player: &Player, at: Moment) -> Vec<LaneCell> {
    let view = &player.view;
    let fold = view.fold();
    let newest = fold
        .last_ts()
        .and_then(crate::session::timestamp::parse)
        .map(jiff::Timestamp::as_millisecond);
    let now = if at.run_alive { Some(at.now_ms) } else { newest };
    view.lanes()
        .iter()
        .filter_map(|(number, mark)| {
            let line = fold.task_position(&mark.task).and_then(|i| fold.task_line(i))?;
            // A task that ended keeps the time it took; one at work counts on.
            let end = if line.state.is_settled() { mark.last_ms } else { now };
            Some(LaneCell {
                number,
                task: mark.task.clone(),
                attempt: line.attempts.max(1),
                iteration: line.iterations,
                state: line.state,
                for_ms: end.zip(mark.since_ms).map(|(end, since)| (end - since).max(0)),
            })
        })
        .collect()
}

/// The worker stream's rows up to the cursor, as the pane shows them: the search's rows when
/// it shows only those (`&`), else the filter's in the lane followed.
pub fn shown_rows<'a>(
    view: &'a super::view::View,
    only: Option<&'a Vec<usize>>,
    filter: Filter,
    lane: Option<u64>,
) -> &'a [usize] {
    match only {
        Some(rows) => &rows[..rows.partition_point(|p| *p < view.applied())],
        None => view.stream_in(filter, lane),
    }
}

/// The worker stream's rows that fit in `height` lines, taking each from `previous` when
/// the last frame already showed it.
fn worker_rows(
    player: &mut Player,
    sel: &mut Selection,
    height: usize,
    previous: &mut [(usize, Row)],
) -> Vec<(usize, Row)> {
    sel.worker_height = height;
    let stream = shown_rows(&player.view, sel.only.as_ref(), sel.filter, sel.lane);
    // With every lane's rows together, each row says which lane it came from.
    let marked = sel.lane.is_none() && !player.view.lanes().is_empty();
    // The picked row stays on screen, and stays picked, however many rows arrive.
    if let Some(pos) = sel.picked {
        let i = stream.partition_point(|p| *p < pos);
        let end = stream.len().saturating_sub(sel.stream_back);
        if i < end.saturating_sub(height) {
            sel.stream_back = stream.len().saturating_sub(i + height.max(1));
        } else if i >= end {
            sel.stream_back = stream.len().saturating_sub(i + 1);
        }
    }
    sel.stream_back = sel.stream_back.min(stream.len().saturating_sub(height));
    let end = stream.len().saturating_sub(sel.stream_back);
    let positions = stream[end.saturating_sub(height)..end].to_vec();
    let timed = sel.row_time;
    // The session's first timestamp: read only when a row not drawn before needs it.
    let fresh = |pos: &usize| previous.binary_search_by_key(pos, |(p, _)| *p).is_err();
    let start = (timed == RowTime::Since && positions.iter().any(fresh))
        .then(|| player.fetch(0).ok().and_then(|e| e.ts))
        .flatten();
    positions
        .into_iter()
        .map(|pos| match previous.binary_search_by_key(&pos, |(p, _)| *p) {
            Ok(i) => (pos, std::mem::take(&mut previous[i].1)),
            Err(_) => match player.fetch(pos) {
                Ok(event) => {
                    let time = timed.prefix(event.ts.as_deref(), start.as_deref());
                    let lane = match event.lane {
                        Some(n) if marked && n > 0 => format!("L{n} "),
                        _ if marked => "   ".to_owned(),
                        _ => String::new(),
                    };
                    let text = with_attempt(&player.view, &event, row(&event));
                    let text = marked_turn(&player.view, &event, text);
                    (pos, (tone(&event), format!("{time}{lane}{text}")))
                }
                Err(e) => (pos, (Tone::Warn, format!("  (event {pos} cannot be read: {e})"))),
            },
        })
        .collect()
}

/// A row of a best-of task's attempt, named with its attempt (`T-003·2 #4`): the attempts
/// work at once and their rows interleave.
fn with_attempt(
    view: &super::view::View,
    event: &crate::session::event::Event,
    text: String,
) -> String {
    let Some(scope) = event.payload.scope() else { return text };
    let (Some(task), Some(attempt)) = (scope.task_id.as_deref(), scope.attempt) else {
        return text;
    };
    if attempt == 0 || !view.fold().side_by_side(task) {
        return text;
    }
    text.replacen(&format!("{task} #"), &format!("{task}·{attempt} #"), 1)
}

/// A row of a worker turn that can be rewound to, with its turn number marked `#3◆`.
fn marked_turn(
    view: &super::view::View,
    event: &crate::session::event::Event,
    text: String,
) -> String {
    let Some(scope) = event.payload.scope() else { return text };
    let (Some(task), Some(attempt), Some(turn)) =
        (scope.task_id.as_deref(), scope.attempt, scope.iter)
    else {
        return text;
    };
    if turn == 0 || !view.checkpoint(task, attempt, turn) {
        return text;
    }
    let number = format!(" #{turn} ");
    text.replacen(&number, &format!(" #{turn}◆ "), 1)
}

/// The Exchange, Validators and Ledger text for a task's trail. `unreviewed`: the task was
/// accepted with review switched off, so no verdict is coming.
fn side_panes(player: &mut Player, trail: &Trail, unreviewed: bool) -> SidePanes {
    let mut fetch = |pos: Option<&usize>| pos.and_then(|p| player.fetch(*p).ok());
    let case_event = fetch(trail.cases.last());
    let verdict_event = fetch(trail.verdicts.last());
    let validators_event = fetch(trail.validators.last());
    let decision = fetch(trail.ledger.last().filter(|p| trail.verdicts.last() < Some(*p)));
    let mut case = match case_event.as_ref().map(|e| &e.payload) {
        Some(Payload::ToolCall(c)) => {
            case_lines(c.args.as_ref().unwrap_or(&serde_json::Value::Null))
        }
        _ => vec!["no case submitted yet".into()],
    };
    // A case made by another worker model than the run's own (a fallback, an escalation)
    // says which.
    if let Some(event) = &case_event {
        let scope = event.payload.scope();
        let attempt = scope.and_then(|s| s.attempt).unwrap_or(1);
        let fold = player.view.fold();
        let line = scope
            .and_then(|s| s.task_id.as_deref())
            .and_then(|t| fold.task_line(fold.task_position(t)?));
        let made_by = line.and_then(|l| {
            l.worker_models.iter().rev().find(|(from, _)| *from <= attempt).map(|(_, m)| m.clone())
        });
        if let Some(model) = made_by {
            case.insert(0, format!("Made by {} (a switch: see ⇄)", crate::printable::line(&model)));
        }
    }
    let awaiting = trail.cases.last() > trail.verdicts.last();
    // A case whose validators failed is never judged: it went back to the worker.
    let checks_failed = awaiting
        && trail.validators.last() > trail.cases.last()
        && matches!(
            validators_event.as_ref().map(|e| &e.payload),
            Some(Payload::ValidatorRun(run)) if run.passed == Some(false)
        );
    let pending = if checks_failed {
        "not judged: its validators failed, so it went back to the worker"
    } else {
        "no verdict on this case yet"
    };
    let mut verdict = match verdict_event.as_ref().map(|e| &e.payload) {
        Some(Payload::Verdict(v)) if !awaiting => verdict_lines(v),
        Some(Payload::Verdict(v)) => {
            let mut lines = vec![format!("{pending}; the last verdict was:")];
            lines.extend(verdict_lines(v));
            lines
        }
        _ if unreviewed => vec!["not reviewed: the run had review switched off (--no-eval)".into()],
        _ if awaiting => vec![pending.into()],
        _ => vec!["no verdict yet".into()],
    };
    if let Some(Payload::OperatorAction(a)) = decision.as_ref().map(|e| &e.payload) {
        let said = format!(
            "OPERATOR: {} — {}",
            a.action.as_deref().unwrap_or("?"),
            a.reason.as_deref().or(a.note.as_deref()).unwrap_or("")
        );
        verdict.splice(0..0, [said, String::new()]);
    }
    let validators = match validators_event.as_ref().map(|e| &e.payload) {
        Some(Payload::ValidatorRun(run)) => {
            let passed = run.passed == Some(true);
            let mut lines = vec![(
                Tone::Plain,
                format!(
                    "run {} on this task: {}",
                    trail.validators.len(),
                    if passed { "passed" } else { "FAILED" }
                ),
            )];
            lines.extend(validator_detail(run));
            lines
        }
        _ if player.tilth => {
            vec![(Tone::Plain, "Tilth recorded no validator run for this task".into())]
        }
        _ => vec![(Tone::Plain, "no validator run yet".into())],
    };
    // A rewind's or a review's own row says what the operator asked; the command's receipt
    // would say it twice.
    let events: Vec<(usize, crate::session::event::Event)> = (trail.ledger.iter())
        .filter_map(|p| Some((*p, player.fetch(*p).ok()?)))
        .filter(|(_, e)| {
            let receipt = |op: crate::session::control::Op| Some(op.as_str());
            !matches!(&e.payload, Payload::OperatorAction(a)
                if [receipt(crate::session::control::Op::Rewind), receipt(crate::session::control::Op::Review)]
                    .contains(&a.action.as_deref()))
        })
        .collect();
    // The attempts a later rewind set aside, to mark where they were judged.
    let rewound: Vec<u64> = (events.iter())
        .filter_map(|(_, e)| match &e.payload {
            Payload::TaskRewound(r) => r.rewound.clone(),
            _ => None,
        })
        .flatten()
        .collect();
    let mut counted = 0;
    let mut ledger = Vec::new();
    for (p, e) in &events {
        if matches!(e.payload, Payload::Verdict(_) | Payload::JudgeVerdict(_)) {
            counted += 1;
        }
        let attempt = e.payload.scope().and_then(|s| s.attempt).filter(|a| *a > 0);
        let attempt = attempt.unwrap_or(counted);
        ledger.push((*p, ledger_row(e, attempt, rewound.contains(&attempt))));
        ledger.extend(super::panes::review_comment_rows(e).into_iter().map(|row| (*p, row)));
    }
    SidePanes { case, verdict, validators, ledger }
}

fn lines(text: &[String]) -> impl Iterator<Item = &str> {
    text.iter().map(String::as_str)
}

/// Keeps the Exchange and Validators scrolled no further than their text goes.
fn clamp_scroll(sel: &mut Selection, areas: &Areas, side: &SidePanes) {
    let clamp = |rows: usize, rect: Rect| {
        u16::try_from(rows.saturating_sub(usize::from(rect.height.saturating_sub(2))))
            .unwrap_or(u16::MAX)
    };
    if let Some(r) = areas.rect(Pane::Exchange) {
        let w = r.width.saturating_sub(2);
        let rows = if w >= 70 {
            wrapped_rows(lines(&side.case), w / 2).max(wrapped_rows(lines(&side.verdict), w / 2))
        } else {
            wrapped_rows(lines(&side.case), w) + 2 + wrapped_rows(lines(&side.verdict), w)
        };
        let s = &mut sel.scroll[Pane::Exchange.index()];
        *s = (*s).min(clamp(rows, r));
    }
    if let Some(r) = areas.rect(Pane::Validators) {
        let rows = wrapped_rows(
            side.validators.iter().map(|(_, l)| l.as_str()),
            r.width.saturating_sub(2),
        );
        let s = &mut sel.scroll[Pane::Validators.index()];
        *s = (*s).min(clamp(rows, r));
    }
}
