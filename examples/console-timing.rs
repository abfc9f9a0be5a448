//! Times the console on a session folder, the way a person meets it: open to first frame (as
//! `watch` does: every event read applied), the rest of the log read a piece at a time with a
//! frame after each piece (the slowest piece is the longest a key can wait), one frame at
//! 200×60, and a seek back to 10 %. Run it under `/usr/bin/time -v` for the peak RSS:
//! `cargo run --release --example console-timing -- DIR`.

use harrow::console::app::App;
use harrow::console::keymap::Action;
use harrow::console::ui::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn frame(app: &mut App, terminal: &mut Terminal<TestBackend>) {
    app.prepare(Rect::new(0, 0, 200, 60));
    let Ok(_) = terminal.draw(|f| draw(f, app));
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: console-timing SESSION_DIR");
        return ExitCode::from(2);
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("console-timing: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &std::path::Path) -> std::io::Result<()> {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(200, 60));
    let start = Instant::now();
    let mut app = App::open_live(dir, "timing", harrow::console::theme::Look::built_in(true))?;
    frame(&mut app, &mut terminal);
    let first = start.elapsed();
    let (mut slowest, mut pieces) = (std::time::Duration::ZERO, 0);
    while app.player.reading_percent().is_some() {
        let piece = Instant::now();
        app.read_more()?;
        frame(&mut app, &mut terminal);
        slowest = slowest.max(piece.elapsed());
        pieces += 1;
    }
    let whole = start.elapsed();
    let frames = 200;
    let start = Instant::now();
    for _ in 0..frames {
        frame(&mut app, &mut terminal);
    }
    let per_frame = start.elapsed() / frames;
    let start = Instant::now();
    app.act(Action::Seek(1)).map_err(std::io::Error::other)?;
    frame(&mut app, &mut terminal);
    let seek = start.elapsed();
    let (at, total) = app.position();
    println!(
        "events {total}: first frame {first:.2?}, read whole {whole:.2?} ({pieces} pieces, the slowest with its frame {slowest:.2?}), frame at 200×60 {per_frame:.2?}, seek back to 10 % (event {at}) {seek:.2?}"
    );
    Ok(())
}
