//! The console: a pure fold of events into view state ([`view`], moved by the [`player`]),
//! frames prepared from it ([`frame`]) and drawn by render functions ([`ui`]) in areas the
//! [`layout`] decides; keys go through one table per mode ([`keymap`]) to the panes or the
//! open overlay ([`modal`]), and what only the loop can do comes back as effects.
//!
//! Every screen — a session's console, the session browser, the prep interview — runs in the
//! one loop of [`screen`]: terminal input, tailed lines and finished [`jobs`] arrive on one
//! channel and are applied before a frame is drawn, on the [`schedule`].

pub mod app;
pub(crate) mod attempt;
pub(crate) mod browser;
pub(crate) mod chrome;
mod clipboard;
pub(crate) mod decide;
pub(crate) mod describe;
pub mod diff;
pub mod diff_review;
pub(crate) mod effect;
pub mod evidence;
pub(crate) mod fleet_feed;
pub(crate) mod frame;
pub mod help;
pub mod inspector;
pub(crate) mod interview;
pub mod jobs;
pub mod keymap;
pub(crate) mod lanes;
pub mod layout;
pub mod modal;
pub(crate) mod navigate;
pub mod outcome;
pub(crate) mod panes;
pub(crate) mod player;
pub mod row;
pub(crate) mod schedule;
pub(crate) mod screen;
pub(crate) mod scroll;
pub(crate) mod search;
pub(crate) mod session_screen;
pub(crate) mod ship_offer;
pub(crate) mod shipping;
pub(crate) mod status;
pub mod theme;
pub(crate) mod timeline;
pub mod ui;
pub mod view;
pub mod views;

use crate::session::control;
use app::{App, Effect};
use jobs::{Job, Jobs};
use screen::Console;
use session_screen::SessionScreen;
use std::io::Write as _;
use std::path::Path;

/// Runs the console on the real terminal until the operator quits; with `follow`, the session
/// folder's log is tailed and new events appear as they are appended. The terminal is restored
/// on return, on error and on panic.
pub fn run(app: App, follow: Option<&Path>) -> color_eyre::Result<()> {
    let mut console = Console::open()?;
    console.run(Box::new(SessionScreen::new(app, follow.map(Path::to_path_buf))))?;
    Ok(())
}

/// The session browser: lists what `load` finds, opens the chosen session (watching it when a
/// run holds it, replaying it otherwise) and comes back to the list when that console quits.
pub fn browse(
    roots: Vec<crate::session::discover::Root>,
    searched: String,
) -> color_eyre::Result<()> {
    let mut console = Console::open()?;
    console.run(Box::new(browser::BrowserScreen::new(roots, searched)))?;
    Ok(())
}

/// Carries out what the app asked for and tells it how that went: a failure is a notice on
/// screen, never the end of the console. Slow work (the export) goes to `jobs`.
pub fn perform(app: &mut App, effects: Vec<Effect>, jobs: &Jobs) {
    for effect in effects {
        match effect {
            Effect::Send(cmd) => {
                let result = control::send(app.dir.root(), &cmd);
                app.sent(&cmd, result);
            }
            Effect::Mouse(on) => {
                let result = if on {
                    crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture)
                } else {
                    crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture)
                };
                if let Err(e) = result {
                    app.notice = Some(format!("the terminal refused the mouse setting: {e}"));
                }
            }
            Effect::Notify(text) => {
                let mut out = std::io::stdout();
                let _ = out.write_all(app.notification(&text).as_bytes());
                let _ = out.flush();
            }
            Effect::Resume => {
                app.notice = Some(format!("starting `harrow resume {}` …", app.id));
                if let Some(Job::Resumed { outcome, .. }) =
                    jobs.resume(app.dir.root(), &app.id, false)
                {
                    app.resumed(outcome);
                }
            }
            Effect::Copy(text) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(&text);
                let mut out = std::io::stdout();
                let _ = write!(out, "\x1b]52;c;{encoded}\x07");
                let _ = out.flush();
                if let Some(Job::Clipboard(said)) = jobs.clipboard(text) {
                    app.notice = Some(said);
                }
            }
            Effect::LoadEvidence(inspector, n) => {
                if let Some(Job::Evidence(result)) = jobs.evidence(*inspector, n) {
                    app.evidence_loaded(result);
                }
            }
            Effect::LoadDiff(source) => {
                if let Some(Job::Diff(result)) = jobs.diff(*source) {
                    app.diff_loaded(result);
                }
            }
            Effect::ShipPreview => {
                if let Some(Job::ShipPreview(result)) = jobs.ship_preview(app.dir.root(), &app.id) {
                    app.ship_previewed(result);
                }
            }
            Effect::Ship { pr, partial } => {
                app.views.clear();
                app.notice = Some(
                    if pr { "pushing, then opening the pull request…" } else { "pushing…" }.into(),
                );
                if let Some(Job::Shipped(result)) = jobs.ship(app.dir.root(), &app.id, pr, partial)
                {
                    app.shipped(result);
                }
            }
            Effect::Export => {
                // `E` again while an export is at work stops it.
                if let Some(stopping) = jobs.cancel_export() {
                    app.notice = Some(stopping);
                } else {
                    app.notice = Some("exporting the session…".into());
                    if let Some(Job::Exported(result)) = jobs.export(app.dir.root(), &app.id) {
                        app.exported(result);
                    }
                }
            }
        }
    }
}

/// Starts `harrow resume ID --headless` in the background (with `--trust-recorded` when the
/// person said so), its output kept in the session folder; the console goes on watching the
/// log it appends to.
fn start_resume(dir: &Path, id: &str, trust: bool) -> std::io::Result<std::process::Child> {
    let exe = std::env::current_exe()?;
    let log = crate::safe_io::create(&crate::session::dir::SessionDir::new(dir).resume_log())?;
    let mut resume = std::process::Command::new(exe);
    resume
        .args(["resume", id, "--headless", "--wait-for-operator"])
        .args(trust.then_some(crate::session::TRUST_RECORDED))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let keys = crate::keys::hand_to(&mut resume)?;
    let child = resume.spawn()?;
    drop(keys);
    Ok(child)
}

/// How long a resume started from the fleet is watched for a refusal before it counts as
/// started: a refusal (a held lock, settings the session records that the person never
/// configured) comes within milliseconds.
const RESUME_SETTLES: std::time::Duration = std::time::Duration::from_millis(1500);

/// Starts a resume and tells how it went: at work, or its own one-line reason for not starting
/// (from `resume.log`). The process is waited for on this thread (a job's), never the screen's.
fn resume_and_watch(dir: &Path, id: &str, trust: bool) -> Result<(), String> {
    let mut child = start_resume(dir, id, trust).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(_)) => {
                let log = crate::session::dir::SessionDir::new(dir).resume_log();
                let text = crate::safe_io::read_text_capped(&log, 1 << 20).unwrap_or_default();
                let last =
                    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("it stopped");
                return Err(crate::printable::line(last.trim_start_matches("harrow: ")));
            }
            Ok(None) if started.elapsed() < RESUME_SETTLES => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = std::thread::Builder::new()
                    .name("harrow-resumed".into())
                    .spawn(move || child.wait());
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}
