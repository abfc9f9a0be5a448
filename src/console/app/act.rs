//! What the panes do with a key: steer a live run, change how the run is shown, move through
//! its log. Overlays take their own keys (see `modal`); `App::act` routes here.

use super::{App, Effect, Mark, command};
use crate::console::keymap::Action;
use crate::console::layout::Pane;
use crate::session::control::Op;
use std::io;

impl App {
    /// The actions that steer a live run: pause, step, a note, a decision on a held task.
    pub(super) fn steer(&mut self, action: Action) {
        match action {
            Action::Pause | Action::Step | Action::Note | Action::Steer if !self.live => {
                self.notice = Some(
                    "pause, step, notes and steers are for a live run; this is a replay".into(),
                );
            }
            Action::Pause | Action::Step | Action::Note | Action::Steer
                if self.ended().is_some() =>
            {
                self.notice = Some(format!(
                    "the run has ended ({}); `harrow resume {}` picks it up",
                    self.ended().unwrap_or_default(),
                    self.id
                ));
            }
            Action::Pause => {
                let op = if self.paused() { Op::Resume } else { Op::Pause };
                self.effects.push(Effect::Send(command(op, None, None, None)));
            }
            Action::Step => self.effects.push(Effect::Send(command(Op::Step, None, None, None))),
            Action::Approve
            | Action::Reject
            | Action::ForceAccept
            | Action::RetryEval
            | Action::Skip
            | Action::FailTask
                if !self.live =>
            {
                self.notice = Some("decisions steer a live run; this is a replay".into());
            }
            Action::Approve | Action::Reject if self.asked_task().is_some() => {
                let op = if action == Action::Approve { Op::Allow } else { Op::Deny };
                self.effects.push(Effect::Send(command(op, self.asked_task(), None, None)));
            }
            Action::Approve => self.open_editor(Op::Approve, "Approve {task} — why?"),
            Action::Reject => {
                self.open_editor(Op::Reject, "Reject {task} — guidance for its next attempt");
            }
            Action::ForceAccept => {
                self.open_editor(Op::ForceAccept, "Accept {task} below the bar — why?");
            }
            Action::Note => self.open_editor(Op::Note, "A note for {task}'s next attempt"),
            Action::Steer => self.open_steer(),
            Action::Rewind if !self.live => {
                self.notice = Some("a rewind is for a live run; this is a replay".into());
            }
            Action::Rewind => self.open_rewind(),
            Action::Skip => self.open_editor(Op::Skip, "Skip {task} — why?"),
            Action::FailTask => self.open_editor(Op::Fail, "Fail {task} — why? (the run stops)"),
            Action::RetryEval => match self.decision_task() {
                Some(task) => {
                    self.effects.push(Effect::Send(command(Op::RetryEval, Some(task), None, None)));
                }
                None => {
                    self.notice = Some(
                        "no task is held for the operator: Tab to the plan and select one first"
                            .into(),
                    );
                }
            },
            _ => {}
        }
    }

    /// The actions that change how the panes show the run, not what they show.
    pub(super) fn change_view(&mut self, action: Action) {
        match action {
            Action::Focus => self.sel.focus = self.sel.focus.after(1),
            Action::FocusBack => self.sel.focus = self.sel.focus.after(Pane::ALL.len() - 1),
            Action::Zoom => self.sel.zoom = !self.sel.zoom,
            Action::Filter => {
                self.sel.filter = self.sel.filter.next();
                self.sel.stream_back = 0;
                self.notice =
                    Some(format!("worker stream: {} (f for the next)", self.sel.filter.name()));
            }
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len().max(1);
                self.notice = Some(format!("theme: {} (t for the next)", self.theme().name));
            }
            Action::RowTime => {
                self.sel.row_time = self.sel.row_time.next();
                self.notice = Some(
                    match self.sel.row_time {
                        super::frame::RowTime::Off => "rows without their time (T for the clock)",
                        super::frame::RowTime::Clock => {
                            "rows show the clock's time (T: since the start)"
                        }
                        super::frame::RowTime::Since => {
                            "rows show the time since the start (T: none)"
                        }
                    }
                    .into(),
                );
            }
            Action::Lane => {
                self.sel.lane = self.player.view.lanes().after(self.sel.lane);
                (self.sel.stream_back, self.sel.picked, self.sel.plan_follow) = (0, None, true);
                self.notice = Some(match self.sel.lane {
                    Some(n) => format!("following lane {n} (L for the next)"),
                    None if self.player.view.lanes().is_empty() => "this run has no lanes".into(),
                    None => "every lane's rows, marked L1, L2 … (L follows one)".into(),
                });
            }
            Action::Mouse => {
                self.mouse = !self.mouse;
                self.effects.push(Effect::Mouse(self.mouse));
                self.notice = Some(if self.mouse {
                    "mouse on: the wheel scrolls, a click focuses (m gives selection back)".into()
                } else {
                    "mouse off: the terminal selects text again".into()
                });
            }
            _ => {}
        }
    }

    /// The actions that move through the log: search, seek, the cursor, the clock, jumps.
    pub(super) fn navigate(&mut self, action: Action) -> io::Result<()> {
        match action {
            Action::Search => {
                self.views.only(crate::console::modal::SearchBox::new(
                    "a tool, a path, a word · Enter searches · Esc cancels",
                    &self.search.query,
                ));
            }
            Action::SearchNext => self.search_again(true)?,
            Action::SearchPrev => self.search_again(false)?,
            Action::OnlyMatches => self.only_matches(),
            Action::Seek(tenths) => match self.player.reading_percent() {
                Some(read) if u64::from(tenths) * 10 > read => {
                    self.pending_seek = Some(tenths);
                    self.notice = Some(format!(
                        "the log is still being read ({read} %): the cursor goes to {tenths}0 % once it is"
                    ));
                }
                _ => {
                    self.player.seek_percent(tenths)?;
                    self.sel.stream_back = 0;
                }
            },
            Action::Down | Action::Up | Action::Top | Action::Bottom => {
                self.move_in_pane(action)?;
            }
            Action::PlayPause => self.player.play_pause()?,
            Action::Faster => self.player.clock.faster(),
            Action::Slower => self.player.clock.slower(),
            Action::StepForward => self.player.step_forward()?,
            Action::StepBack => {
                self.player.step_back()?;
                self.sel.stream_back = 0;
            }
            Action::NextFailure => {
                let found = self.find_mark(true, |m| matches!(m, Mark::Reject | Mark::Failure));
                self.jump(found, "later failure")?;
            }
            Action::PrevFailure => {
                let found = self.find_mark(false, |m| matches!(m, Mark::Reject | Mark::Failure));
                self.jump(found, "earlier failure")?;
            }
            Action::NextVerdict => {
                let found = self.find_mark(true, |m| matches!(m, Mark::Accept | Mark::Reject));
                self.jump(found, "later verdict")?;
            }
            Action::PrevVerdict => {
                let found = self.find_mark(false, |m| matches!(m, Mark::Accept | Mark::Reject));
                self.jump(found, "earlier verdict")?;
            }
            Action::NextTask => {
                let found = self.find_task_start(true);
                self.jump(found, "later task start")?;
            }
            Action::PrevTask => {
                let found = self.find_task_start(false);
                self.jump(found, "earlier task start")?;
            }
            _ => {}
        }
        Ok(())
    }
}
