//! The fleet as one of the console's screens: its feed of rows, its help, and the runs it opens.

use super::{Browser, Choice, Entry};
use crate::session::control::Command;
use crate::session::status::SessionStatus;
use ratatui::Frame;

use crate::console::jobs::Job;
use crate::console::theme::Theme;

/// The fleet as a screen of the console's loop: `Enter` opens a run's console over the list,
/// which comes back, cursor in place, when that console closes.
pub struct BrowserScreen {
    list: Browser,
    feed: crate::console::fleet_feed::FleetFeed,
    /// The feed's generation last shown.
    seen: u64,
    look: crate::console::theme::Look,
    /// What is open over the list: its help, the same view as the run console's.
    views: crate::console::modal::Views,
    dirty: bool,
    /// When the screen was last drawn: its ages are true to the second.
    drawn_at: Option<std::time::Instant>,
    /// Whether the terminal's title says how many runs wait, as last written.
    title_waiting: Option<usize>,
}

impl BrowserScreen {
    pub fn new(roots: Vec<crate::session::discover::Root>, searched: String) -> BrowserScreen {
        let mut list = Browser::new(Vec::new(), searched);
        list.loaded = false;
        let look = crate::console::theme::Look::from_user();
        BrowserScreen {
            list,
            feed: crate::console::fleet_feed::FleetFeed::start(roots),
            seen: 0,
            look,
            views: crate::console::modal::Views::default(),
            dirty: true,
            drawn_at: None,
            title_waiting: None,
        }
    }

    fn theme(&self) -> &Theme {
        self.look.current()
    }

    /// Takes what the feed found since the last look: new rows, and a call to the person for
    /// each run that came to need one (once per change) with the title's count kept true.
    fn take_feed(&mut self) {
        let (generation, loaded, rows, changes) = self.feed.with(|f| {
            if f.generation == self.seen {
                return (f.generation, f.loaded, None, Vec::new());
            }
            (f.generation, f.loaded, Some(f.rows.clone()), std::mem::take(&mut f.changes))
        });
        self.seen = generation;
        self.list.loaded = loaded;
        let Some(rows) = rows else { return };
        self.list.refresh(rows);
        self.dirty = true;
        let mut out = std::io::stdout();
        for change in changes.iter().filter(|c| c.calls_a_person()) {
            let what = match (&change.row.held_task, change.row.status) {
                (Some(t), SessionStatus::Held) => format!("{} holds {t}", change.row.id),
                (_, state) => format!("{} {state}", change.row.id),
            };
            let _ =
                std::io::Write::write_all(&mut out, self.look.notify.sequence(&what).as_bytes());
        }
        let waiting = self.list.entries.iter().filter(|e| e.status.needs_person()).count();
        if self.title_waiting != Some(waiting) {
            self.title_waiting = Some(waiting);
            let title = if waiting == 0 {
                "harrow".to_owned()
            } else {
                format!("harrow — {waiting} waiting")
            };
            let _ = crossterm::execute!(out, crossterm::terminal::SetTitle(title));
        }
        let _ = std::io::Write::flush(&mut out);
    }

    /// The console of the chosen run: watching it when a run holds it, else a replay.
    fn open(&mut self, entry: &Entry) -> crate::console::screen::Flow {
        use crate::console::app::App;
        let live = crate::session::lock::is_locked(&entry.dir);
        let opened = if live {
            App::open_live(&entry.dir, &entry.id, self.look.clone())
        } else {
            App::open(&entry.dir, &entry.id, 8.0, self.look.clone())
        };
        match opened {
            Ok(mut app) => {
                app.opened_from = crate::console::app::OpenedFrom::Fleet;
                self.list.notice = None;
                let follow = live.then(|| entry.dir.clone());
                crate::console::screen::Flow::Open(Box::new(
                    crate::console::session_screen::SessionScreen::new(app, follow),
                ))
            }
            Err(e) => {
                self.list.notice = Some(format!("cannot open {}: {e}", entry.dir.display()));
                crate::console::screen::Flow::Stay
            }
        }
    }

    /// An export the fleet started (`E`) read this far, or ended.
    fn exported(&mut self, job: Job) {
        self.list.notice = match job {
            Job::Exporting(p) => Some(format!("exporting … {} %", p.percent())),
            Job::Exported(Ok(path)) => Some(format!("exported to {}", path.display())),
            Job::Exported(Err(err)) => Some(format!("could not export: {err}")),
            Job::ExportCancelled => Some(crate::console::jobs::EXPORT_STOPPED.into()),
            _ => return,
        };
    }

    fn send(&mut self, dir: &std::path::Path, cmd: &Command) {
        let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.list.notice = Some(match crate::session::control::send(dir, cmd) {
            Err(e) => format!("could not write to {}: {e}", dir.display()),
            Ok(()) if crate::session::lock::is_locked(dir) => {
                format!("{} sent to {id}", cmd.op.as_str())
            }
            Ok(()) => format!(
                "{} written for {id}; it applies when the run goes on (R resumes it)",
                cmd.op.as_str()
            ),
        });
    }
}

/// How often the fleet is drawn again with nothing new: its ages read in seconds.
const AGES_MOVE: std::time::Duration = std::time::Duration::from_secs(1);

impl crate::console::screen::Screen for BrowserScreen {
    fn due(&self, now: std::time::Instant) -> bool {
        // The ages (LAST EVENT, "5 s ago") move with the clock: drawn again every second.
        self.dirty || self.drawn_at.is_none_or(|at| now.duration_since(at) >= AGES_MOVE)
    }

    fn draw(&mut self, frame: &mut Frame) {
        self.list.covered_by = self.views.is_open().then(|| self.views.mode());
        self.list.draw(frame, self.theme(), jiff::Timestamp::now());
        let paint = crate::console::views::Paint { theme: self.theme(), held: None };
        self.views.draw(frame, frame.area(), &paint);
    }

    fn drawn(&mut self, now: std::time::Instant) {
        self.dirty = false;
        self.drawn_at = Some(now);
    }

    fn wait(&self, _now: std::time::Instant) -> Option<std::time::Duration> {
        // The feed is looked at this often: a row is true within half a second of its event.
        Some(std::time::Duration::from_millis(200))
    }

    fn on(
        &mut self,
        msg: crate::console::screen::Msg,
        cx: &crate::console::screen::Cx,
    ) -> crate::console::screen::Flow {
        use crate::console::keymap::{Action, Mode, action_for};
        use crate::console::screen::{Flow, Msg};
        use crossterm::event::{Event, KeyEventKind};
        self.dirty = true;
        match msg {
            Msg::Term(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                if self.views.is_open() {
                    self.views.key(key);
                    return Flow::Stay;
                }
                if self.list.prompt.is_none()
                    && matches!(action_for(Mode::Browser, &key), Some(Action::Help))
                {
                    self.views.open(crate::console::help::HelpView::new(Mode::Browser));
                    return Flow::Stay;
                }
                self.list.notice = None;
                match self.list.key(key) {
                    Choice::Stay => Flow::Stay,
                    Choice::Quit => Flow::Close,
                    Choice::Open(e) => self.open(&e),
                    Choice::Send(dir, cmd) => {
                        self.send(&dir, &cmd);
                        Flow::Stay
                    }
                    Choice::Resume(e, trust) => {
                        self.list.notice = Some(format!("starting {} …", e.id));
                        if let Some(job) = cx.jobs().resume(&e.dir, &e.id, trust) {
                            self.list.resumed(job);
                        }
                        Flow::Stay
                    }
                    Choice::Export(e) => {
                        // `E` again while an export is at work stops it.
                        if let Some(stopping) = cx.jobs().cancel_export() {
                            self.list.notice = Some(stopping);
                            return Flow::Stay;
                        }
                        self.list.notice = Some(format!("exporting {} …", e.id));
                        if let Some(job) = cx.jobs().export(&e.dir, &e.id) {
                            self.exported(job);
                        }
                        Flow::Stay
                    }
                }
            }
            Msg::Job(job @ Job::Resumed { .. }) => {
                self.list.resumed(job);
                Flow::Stay
            }
            Msg::Job(job @ (Job::Exporting(_) | Job::Exported(_) | Job::ExportCancelled)) => {
                self.exported(job);
                Flow::Stay
            }
            Msg::InputGone => Flow::Close,
            _ => Flow::Stay,
        }
    }

    fn turn(
        &mut self,
        _now: std::time::Instant,
        _cx: &crate::console::screen::Cx,
    ) -> crate::console::screen::Flow {
        self.take_feed();
        crate::console::screen::Flow::Stay
    }

    fn back(&mut self, _cx: &crate::console::screen::Cx) {
        self.seen = 0;
        self.take_feed();
        self.dirty = true;
    }
}

impl std::fmt::Debug for BrowserScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserScreen").field("list", &self.list).finish_non_exhaustive()
    }
}
