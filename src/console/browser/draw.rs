//! The fleet's list drawn: the table of runs, its title and the preview of the selected one.

use super::{Browser, Entry, Purpose, age};
use crate::session::control::Op;
use crate::session::state::TaskState;
use crate::session::status::SessionStatus;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState, Wrap};

use crate::console::theme::Theme;

impl Browser {
    /// The list's title: how many runs, and how many wait for a person.
    pub fn title(&self, shown: usize) -> String {
        use std::fmt::Write as _;
        let waiting = self.entries.iter().filter(|e| e.status.needs_person()).count();
        let runs = if shown == 1 { "run" } else { "runs" };
        let mut t = format!(" Fleet: {shown} {runs}{}", self.show.name());
        if !self.filter.is_empty() {
            let _ = write!(t, " matching \"{}\"", crate::printable::line(&self.filter));
        }
        if waiting > 0 {
            let _ = write!(t, " — {waiting} waiting");
        }
        if !self.loaded {
            t.push_str(" (reading…)");
        }
        t.push(' ');
        t
    }

    pub fn draw(&self, frame: &mut Frame, theme: &Theme, now: jiff::Timestamp) {
        // Filtered and sorted once per frame.
        let rows = self.visible();
        let at = self.cursor_in(&rows);
        let area = frame.area();
        let [body, hints] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
        let wide = body.width >= 120;
        let [list, preview] = if wide {
            Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(body)
        } else {
            // Below the list on a narrow screen; on a short one the list keeps room for three
            // runs and the preview gets what is left, up to its nine rows.
            let preview = if body.height >= 18 { 9 } else { body.height.saturating_sub(6).min(9) };
            Layout::vertical([Constraint::Min(0), Constraint::Length(preview)]).areas(body)
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(self.title(rows.len()));
        if rows.is_empty() {
            let text = if self.entries.is_empty() {
                vec![
                    Line::raw(format!("No sessions in {}.", self.searched)),
                    Line::raw(""),
                    Line::raw("Try `harrow demo`: it needs no key and no network."),
                ]
            } else {
                vec![Line::raw("No run matches; 0 shows every run, Esc on / clears the filter.")]
            };
            frame.render_widget(Paragraph::new(text).block(block), list);
        } else {
            let table_rows = rows.iter().map(|e| {
                let state = match (&e.held_task, e.status) {
                    (Some(t), SessionStatus::Held) => format!("held {}", crate::printable::line(t)),
                    (_, s) => s.to_string(),
                };
                let work = match e.at_work.as_slice() {
                    [] => "-".to_owned(),
                    [one] => format!("{} it{}", crate::printable::line(&one.task), one.iter),
                    many => format!("{} lanes", many.len()),
                };
                // The id's end first: what `harrow resume`, `show`, `control` take, kept
                // whole when a narrow column cuts the feature's name.
                let short = &e.id[e.id.len().saturating_sub(6)..];
                let name =
                    e.feature.as_ref().map_or_else(|| e.id.clone(), |f| format!("{short} {f}"));
                Row::new(vec![
                    crate::printable::line(&name),
                    state,
                    if e.prep {
                        "prep".into()
                    } else {
                        format!("{}/{}", e.tasks_done, e.tasks_total)
                    },
                    work,
                    crate::console::ui::compact(i64::try_from(e.tokens).unwrap_or(i64::MAX)),
                    if e.cost == 0.0 { "$0".into() } else { format!("${:.2}", e.cost) },
                    age(e.last_event_at.as_deref(), now),
                    crate::printable::line(e.host.as_deref().unwrap_or("-")),
                ])
                .style(theme.state(&match e.status {
                    SessionStatus::Done => TaskState::Done,
                    SessionStatus::Failed | SessionStatus::Crashed => TaskState::Failed,
                    SessionStatus::Held | SessionStatus::Silent => TaskState::NeedsOperator,
                    SessionStatus::Running | SessionStatus::Paused => TaskState::Running,
                    SessionStatus::Stopped | SessionStatus::Empty => TaskState::Pending,
                }))
            });
            let table = Table::new(
                table_rows,
                [
                    Constraint::Min(12),
                    Constraint::Length(14),
                    Constraint::Length(6),
                    Constraint::Length(12),
                    Constraint::Length(7),
                    Constraint::Length(7),
                    Constraint::Length(11),
                    Constraint::Length(10),
                ],
            )
            .header(Row::new([
                "RUN",
                "STATE",
                "TASKS",
                "AT WORK",
                "TOKENS",
                "COST",
                "LAST EVENT",
                "HOST",
            ]))
            .row_highlight_style(theme.selected())
            .block(block);
            let mut state = TableState::default().with_selected(Some(at));
            frame.render_stateful_widget(table, list, &mut state);
        }
        Browser::draw_preview(frame, theme, preview, rows.get(at).copied());
        let offer = self
            .offer
            .as_ref()
            .map(|id| format!("resume {id} in the background? y resumes · any other key does not"))
            .or_else(|| {
                self.trust_offer.as_ref().map(|_| {
                    format!(
                        "Y resumes it trusting what its folder records · any other key does not — {}",
                        self.notice.as_deref().unwrap_or("")
                    )
                })
            });
        let hint = match (&self.prompt, offer.as_ref().or(self.notice.as_ref())) {
            (Some(p), _) => {
                let label = prompt_label(&p.purpose);
                let keys = match p.purpose {
                    Purpose::Refused(_) => "Enter or Esc closes",
                    _ => "Enter sends · Esc drops",
                };
                Paragraph::new(format!("{label}: {}▏  {keys}", crate::printable::line(&p.text)))
                    .style(theme.fg(theme.colors.focus))
            }
            (None, Some(notice)) => {
                Paragraph::new(crate::printable::line(notice)).style(theme.fg(theme.colors.notice))
            }
            (None, None) => Paragraph::new(crate::console::keymap::hint_line(
                self.covered_by.unwrap_or(crate::console::keymap::Mode::Browser),
                false,
                usize::from(hints.width),
            ))
            .style(theme.fg(theme.colors.muted)),
        };
        frame.render_widget(hint, hints);
    }

    /// The selected run in more words: where it runs, what it waits on, its latest rows.
    fn draw_preview(
        frame: &mut Frame,
        theme: &Theme,
        area: ratatui::layout::Rect,
        selected: Option<&Entry>,
    ) {
        let block = Block::default().borders(Borders::ALL).border_style(theme.border(false));
        let Some(e) = selected else {
            frame.render_widget(block.title(" Preview "), area);
            return;
        };
        let clean = |s: &str| crate::printable::line(s);
        let mut lines = vec![Line::raw(format!("{} · {}", clean(&e.id), e.status))];
        if let Some(repo) = &e.repo {
            lines.push(Line::raw(format!("repo {}", clean(repo))));
        }
        if let Some(host) = &e.host {
            lines.push(Line::raw(format!("on {}", clean(host))));
        }
        if let Some(why) = &e.foreign {
            lines.push(Line::styled(
                format!(
                    "folder {}: its record is data; a resume trusts none of its settings",
                    clean(why)
                ),
                theme.fg(theme.colors.notice),
            ));
        }
        if let Some(url) = &e.pull_request {
            lines.push(Line::raw(format!("pull request {}", clean(url))));
        }
        if let Some(t) = &e.held_task {
            lines.push(Line::styled(
                format!(
                    "waits: {} — {}",
                    clean(t),
                    clean(e.held_reason.as_deref().unwrap_or("a decision"))
                ),
                theme.fg(theme.colors.notice),
            ));
            if let Some(v) = &e.held_verdict {
                lines.push(Line::raw(format!("last verdict: {}", clean(v))));
            }
        }
        for w in &e.at_work {
            let lane = w.lane.filter(|l| *l > 0).map(|l| format!("L{l} ")).unwrap_or_default();
            lines.push(Line::raw(format!("{lane}{} #{} it{}", clean(&w.task), w.attempt, w.iter)));
        }
        lines.push(Line::raw(""));
        lines.extend(e.recent.iter().rev().map(|r| Line::raw(clean(r))));
        let title = format!(" {} ", clean(e.feature.as_deref().unwrap_or("Preview")));
        frame.render_widget(
            Paragraph::new(lines).block(block.title(title)).wrap(Wrap { trim: false }),
            area,
        );
    }
}

/// What the line being typed is for, in words, at the start of the bottom line.
fn prompt_label(purpose: &Purpose) -> String {
    match purpose {
        Purpose::Filter => "filter".to_owned(),
        Purpose::Decide { op, task, .. } => match op {
            Op::Reject => format!("reject {task}, guidance for its next attempt"),
            op => format!("{} {task}, reason", op.as_str()),
        },
        Purpose::Note { task, .. } => {
            format!("note for {}", task.as_deref().unwrap_or("the next task"))
        }
        Purpose::Words { op: Op::Steer, task, .. } => {
            format!("steer {task}: words its worker reads before its next request")
        }
        Purpose::Words { task, .. } => {
            format!("queue for {task}'s next attempt")
        }
        Purpose::Rewind { task, .. } => {
            format!("rewind {task} to attempt K or turn tN, then why (2 the parser was right)")
        }
        Purpose::Refused(why) => format!("{why} — what you type is not sent"),
    }
}
