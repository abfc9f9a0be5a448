//! `harrow replay ID|DIR`: a finished (or growing) session in the console, on a virtual clock.

use super::SessionArg;
use super::format::terminal_line;
use crate::console::app::App;
use crate::console::describe::describe;
use crate::session::event::Event;
use crate::session::index::EventIndex;
use color_eyre::eyre::{Result, WrapErr};
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// Playback speed: 0.5 to 64 (events keep their relative timing, idle gaps shortened), or
    /// `max` for as fast as the screen draws.
    #[arg(long, default_value_t = 8.0, value_name = "X", value_parser = speed)]
    pub speed: f64,
    /// Print the replayed event lines instead of opening the console.
    #[arg(long)]
    pub headless: bool,
}

/// `harrow watch [ID|DIR]`: attach to a session and see its events as they are appended.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// A session id, a unique prefix of one, or a session folder's path (default: the newest
    /// running session, else the newest).
    #[arg(value_name = "ID|DIR", add = clap_complete::ArgValueCompleter::new(super::install::session_ids))]
    pub session: Option<String>,
    #[command(flatten)]
    pub dirs: super::DirArgs,
}

/// Watches a session: the console, or with `headless` its events printed as they come until
/// the run holding it ends.
pub fn watch(args: &WatchArgs, headless: bool) -> Result<ExitCode> {
    let roots = super::session_roots(&args.dirs.dirs)?;
    let found = if let Some(q) = &args.session {
        crate::session::discover::resolve(q, &roots)
            .map_err(|e| super::UsageError(e.to_string()))?
    } else {
        let all = crate::session::discover::list(&roots);
        let running = all.iter().find(|f| crate::session::lock::is_locked(&f.dir)).cloned();
        running.or_else(|| all.first().cloned()).ok_or_else(|| {
            super::UsageError("no session to watch; start one with `harrow run`".into())
        })?
    };
    if headless {
        let printer = super::printer::Printer::start(&found.dir, 0);
        while crate::session::lock::is_locked(&found.dir) {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        printer.finish();
        return Ok(ExitCode::SUCCESS);
    }
    let app = App::open_live(&found.dir, &found.id, crate::console::theme::Look::from_user())
        .wrap_err_with(|| format!("cannot open {}", found.dir.display()))?;
    crate::console::run(app, Some(&found.dir))?;
    Ok(ExitCode::SUCCESS)
}

pub fn replay(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    if args.headless {
        let mut index =
            EventIndex::build(&crate::session::dir::SessionDir::new(&found.dir).events())?;
        let mut out = super::out::stdout();
        for i in 0..index.len() {
            if let Some(line) = index.fetch(i).ok().as_ref().and_then(|e: &Event| describe(e)) {
                writeln!(out, "{}", terminal_line(&line))?;
            }
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let app =
        App::open(&found.dir, &found.id, args.speed, crate::console::theme::Look::from_user())
            .wrap_err_with(|| format!("cannot open {}", found.dir.display()))?;
    crate::console::run(app, None)?;
    Ok(ExitCode::SUCCESS)
}

/// A replay speed from the command line: 0.5 to 64, or `max`, as the help says.
fn speed(text: &str) -> Result<f64, String> {
    if text.trim().eq_ignore_ascii_case("max") {
        return Ok(f64::INFINITY);
    }
    match text.trim().parse::<f64>() {
        Ok(x) if (0.5..=64.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "'{text}' is not a speed harrow replays at: give 0.5 to 64, or max (8 is the default)"
        )),
    }
}
