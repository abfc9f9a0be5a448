//! The console over one session as a [`Screen`]: replayed, or watched as its log grows. Frames
//! follow the [`Schedule`]; an I/O error while reading the session is a notice, never the end
//! of the console.

use super::app::App;
use super::jobs::Job;
use super::schedule::Schedule;
use super::screen::{Cx, Flow, Msg, Screen};
use crate::session::tail::{self, TailEvent};
use crossterm::event::{Event as TermEvent, KeyEventKind};
use ratatui::Frame;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often playback looks whether the log was cut back under it (a stat).
const SHRINK_CHECK: Duration = Duration::from_millis(250);

/// The console over one session.
pub struct SessionScreen {
    pub app: App,
    /// The session folder to tail, when watching a log that may grow.
    follow: Option<PathBuf>,
    tailer: Option<tail::Tailer>,
    schedule: Schedule,
    shrink_checked: Instant,
}

impl SessionScreen {
    /// Starts following the log once it has been read whole: the tailer delivers what is
    /// appended after that.
    fn follow_when_read(&mut self, cx: &Cx) {
        let Some(dir) = &self.follow else { return };
        if self.tailer.is_some() || self.app.player.reading_percent().is_some() {
            return;
        }
        let (offset, line) = self.app.tail_start();
        let tx = cx.tx.clone();
        let events = crate::session::dir::SessionDir::new(dir).events();
        self.tailer = Some(tail::follow(&events, offset, line, move |ev| {
            let _ = tx.send(Msg::Tail(ev));
        }));
    }

    pub fn new(app: App, follow: Option<PathBuf>) -> SessionScreen {
        let now = Instant::now();
        SessionScreen {
            app,
            follow,
            tailer: None,
            schedule: Schedule::new(now),
            shrink_checked: now,
        }
    }

    fn perform(&mut self, cx: &Cx) {
        let effects = self.app.take_effects();
        super::perform(&mut self.app, effects, &cx.jobs());
    }

    /// A log cut back or removed under the console is said on screen, not discovered later as
    /// a stale picture (a live log that is replaced is reloaded by the tailer).
    fn check_shrink(&mut self) {
        if self.app.player.clock.playing && self.shrink_checked.elapsed() < SHRINK_CHECK {
            return;
        }
        self.shrink_checked = Instant::now();
        if let Some(why) = self.app.player.log_shrank() {
            let notice =
                format!("{why}; showing what was read — reopen the session to see it as it is now");
            if self.app.notice.as_deref() != Some(notice.as_str()) {
                self.app.player.clock.playing = false;
                self.app.notice = Some(notice);
                self.schedule.changed();
            }
        }
    }
}

/// The result of reading the session for the screen. A failure — the log truncated or removed
/// under a replay, a file gone — becomes a notice on the screen and stops playback; the
/// console stays up with what it has shown.
pub fn kept_up<T>(result: std::io::Result<T>, app: &mut App) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            app.player.clock.playing = false;
            app.notice = Some(format!(
                "the session's log could not be read ({e}); it may have been truncated or removed — showing what was read"
            ));
            None
        }
    }
}

impl Screen for SessionScreen {
    fn open(&mut self, cx: &Cx) {
        self.follow_when_read(cx);
        self.perform(cx);
    }

    fn due(&self, now: Instant) -> bool {
        self.schedule.should_draw(now)
    }

    fn draw(&mut self, frame: &mut Frame) {
        self.app.prepare(frame.area());
        super::ui::draw(frame, &self.app);
    }

    fn drawn(&mut self, now: Instant) {
        self.schedule.drawn(now);
    }

    fn wait(&self, now: Instant) -> Option<Duration> {
        let app = &self.app;
        if app.player.reading_percent().is_some() {
            // The rest of the log is read between frames and keys, without a pause.
            return Some(Duration::ZERO);
        }
        self.schedule.wait(now, app.player.clock.playing, app.counting(), app.watching_a_run())
    }

    fn on(&mut self, msg: Msg, cx: &Cx) -> Flow {
        let app = &mut self.app;
        match msg {
            Msg::Term(TermEvent::Key(key)) if key.kind == KeyEventKind::Press => {
                self.schedule.pressed();
                let effects = kept_up(app.key(key), app).unwrap_or_default();
                super::perform(app, effects, &cx.jobs());
            }
            Msg::Term(TermEvent::Mouse(m)) => {
                if kept_up(app.mouse_event(m, cx.size.into()), app).unwrap_or(true) {
                    self.schedule.pressed();
                }
            }
            Msg::Term(TermEvent::Resize(..)) => self.schedule.changed(),
            Msg::Term(_) | Msg::Job(Job::Interview(_)) | Msg::For(..) => {}
            Msg::Tail(TailEvent::Lines(lines)) => {
                if kept_up(app.take_lines(lines), app).unwrap_or(true) {
                    self.schedule.changed();
                }
                self.perform(cx);
            }
            Msg::Tail(TailEvent::Restarted { .. }) => {
                kept_up(app.reload(), app);
                self.schedule.changed();
            }
            Msg::Tail(TailEvent::Polling { reason } | TailEvent::Error(reason)) => {
                app.notice = Some(reason);
                self.schedule.changed();
            }
            Msg::Job(Job::Exporting(progress)) => {
                app.exporting(progress);
                self.schedule.changed();
            }
            Msg::Job(Job::Evidence(result)) => {
                app.evidence_loaded(result);
                self.schedule.changed();
            }
            Msg::Job(Job::Diff(result)) => {
                app.diff_loaded(result);
                self.schedule.changed();
            }
            Msg::Job(Job::ShipPreview(result)) => {
                app.ship_previewed(result);
                self.schedule.changed();
            }
            Msg::Job(Job::Shipped(result)) => {
                app.shipped(result);
                self.schedule.changed();
            }
            Msg::Job(Job::Exported(result)) => {
                app.exported(result);
                self.schedule.changed();
            }
            Msg::Job(Job::ExportCancelled) => {
                app.notice = Some(super::jobs::EXPORT_STOPPED.into());
                self.schedule.changed();
            }
            Msg::Job(Job::Resumed { outcome, .. }) => {
                app.resumed(outcome);
                self.schedule.changed();
            }
            Msg::Job(Job::Clipboard(said)) => {
                app.notice = Some(said);
                self.schedule.changed();
            }
            Msg::InputGone => app.quit = true,
        }
        if self.app.quit { Flow::Close } else { Flow::Stay }
    }

    fn turn(&mut self, now: Instant, cx: &Cx) -> Flow {
        if self.app.player.reading_percent().is_some() {
            if kept_up(self.app.read_more(), &mut self.app).unwrap_or(true) {
                self.schedule.changed();
            }
            self.follow_when_read(cx);
        }
        if let Some(ms) = self.schedule.tick(now, self.app.player.clock.playing)
            && kept_up(self.app.tick(ms), &mut self.app).unwrap_or(true)
        {
            self.schedule.changed();
        }
        self.schedule.count(now, self.app.counting());
        self.check_shrink();
        if self.app.watching_a_run() && self.app.liveness_changed() {
            self.schedule.changed();
        }
        if self.app.quit { Flow::Close } else { Flow::Stay }
    }

    fn close(&mut self) {
        self.tailer = None;
        if self.app.mouse {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        }
    }
}

impl std::fmt::Debug for SessionScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionScreen").field("follow", &self.follow).finish_non_exhaustive()
    }
}
