//! The bytes the console writes to a terminal, read back by a terminal emulator (the `vt100`
//! crate) in process: what a person's terminal would do with them, without tmux. Model text
//! full of escape sequences must reach the screen as visible text and never as a command to
//! the terminal (a new window title, a cleared screen, a moved cursor, a clipboard write).

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use harrow::console::app::App;
use harrow::console::theme::Look;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

/// What a hostile model says: a title change, a clipboard write, a screen clear, a cursor jump
/// and a fake prompt — each a terminal command if it reached the terminal raw.
const HOSTILE: &str = "done\u{1b}]0;pwned-title\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\u{1b}[1;1HFAKE PROMPT$ \u{9b}31mred";

fn hostile_session(dir: &std::path::Path) {
    let content = serde_json::to_string(HOSTILE).unwrap();
    let lines = [
        r#"{"ts":"2026-11-24T10:00:00.000Z","seq":1,"type":"session_start","payload":{"session_id":"s","feature":"evil","task_count":1,"plan_tasks":[{"id":"T-001","title":"evil"}]}}"#.to_owned(),
        r#"{"ts":"2026-11-24T10:00:01.000Z","seq":2,"type":"task_state","payload":{"task_id":"T-001","from":"pending","to":"running"}}"#.to_owned(),
        format!(
            r#"{{"ts":"2026-11-24T10:00:02.000Z","seq":3,"type":"assistant_message","payload":{{"task_id":"T-001","iter":1,"attempt":1,"role":"worker","content":{content},"reasoning":{content}}}}}"#
        ),
    ];
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
}

/// What the bytes asked of the terminal beyond drawing: every such request is recorded.
#[derive(Debug, Default)]
struct Asked {
    requests: Vec<String>,
}

impl vt100::Callbacks for Asked {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.requests.push("bell".into());
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.requests.push(format!("title {}", String::from_utf8_lossy(title)));
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.requests.push(format!("icon {}", String::from_utf8_lossy(name)));
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _ty: &[u8], data: &[u8]) {
        self.requests.push(format!("clipboard {}", String::from_utf8_lossy(data)));
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        self.requests.push(format!("osc {params:?}"));
    }
}

/// Draws `app` through crossterm into bytes, as on a real terminal of `w`×`h`, and returns
/// what a terminal emulator makes of them.
fn emulated(app: &mut App, w: u16, h: u16) -> vt100::Parser<Asked> {
    let area = Rect::new(0, 0, w, h);
    app.prepare(area);
    emulate(area, |f| harrow::console::ui::draw(f, app))
}

fn emulate(area: Rect, draw: impl FnOnce(&mut ratatui::Frame)) -> vt100::Parser<Asked> {
    let (w, h) = (area.width, area.height);
    let mut bytes = Vec::new();
    {
        let backend = CrosstermBackend::new(&mut bytes);
        let mut terminal =
            Terminal::with_options(backend, TerminalOptions { viewport: Viewport::Fixed(area) })
                .unwrap();
        terminal.draw(draw).unwrap();
    }
    let mut parser = vt100::Parser::new_with_callbacks(h, w, 0, Asked::default());
    parser.process(&bytes);
    parser
}

/// The check can see an attack: the same text written raw does command the terminal.
#[test]
fn the_emulator_sees_raw_escapes_command_the_terminal() {
    let mut parser = vt100::Parser::new_with_callbacks(5, 80, 0, Asked::default());
    parser.process(HOSTILE.as_bytes());
    let asked = &parser.callbacks().requests;
    assert!(
        asked.iter().any(|r| r.starts_with("title pwned"))
            && asked.iter().any(|r| r.starts_with("clipboard")),
        "raw escapes must be seen: {asked:?}"
    );
    assert!(parser.screen().contents().starts_with("FAKE PROMPT"), "the cursor jump is seen");
}

#[test]
fn model_text_full_of_escapes_is_shown_as_text_and_commands_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    hostile_session(tmp.path());
    let mut app = App::open(tmp.path(), "s", f64::INFINITY, Look::built_in(true)).unwrap();
    while !app.at_end() {
        app.tick(10_000.0).unwrap();
    }
    let parser = emulated(&mut app, 160, 45);
    let screen = parser.screen();
    let text = screen.contents();
    assert!(
        parser.callbacks().requests.is_empty(),
        "the terminal was asked for: {:?}",
        parser.callbacks().requests
    );
    assert!(text.contains("done"), "the reply is on screen: {text}");
    assert!(
        text.contains("\\e]0;pwned-title") || text.contains("pwned-title"),
        "the sequence shows as text: {text}"
    );
    assert!(text.contains(" Plan "), "nothing cleared the screen the console drew: {text}");
    for row in text.lines() {
        assert!(!row.starts_with("FAKE PROMPT"), "no cursor jump put text at the top left: {row}");
    }
    let (fg, _) = colours_of(screen, "red");
    assert_ne!(fg, vt100::Color::Idx(1), "the C1 colour sequence did not colour the text");
}

/// The colours of the first cell where `needle` begins on screen.
fn colours_of(screen: &vt100::Screen, needle: &str) -> (vt100::Color, vt100::Color) {
    let (rows, cols) = screen.size();
    for row in 0..rows {
        let line: String = screen.contents_between(row, 0, row, cols);
        if let Some(col) = line.find(needle) {
            let col = u16::try_from(line[..col].chars().count()).unwrap();
            let cell = screen.cell(row, col).unwrap();
            return (cell.fgcolor(), cell.bgcolor());
        }
    }
    (vt100::Color::Default, vt100::Color::Default)
}

/// A terminal that hangs up without a SIGHUP reaching harrow (its window closed; harrow not
/// the session's leader): the console ends instead of spinning on a dead terminal for ever.
#[test]
fn a_console_whose_terminal_hangs_up_ends_instead_of_spinning() {
    use std::os::fd::OwnedFd;
    let size = nix::pty::Winsize { ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    // The terminal's other end stays with the test alone, so dropping it hangs the terminal up.
    nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
        .unwrap();
    let tilth = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tilth/20261122-042843-e02b19");
    let slave: OwnedFd = pty.slave;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harrow"))
        .arg("replay")
        .arg(&tilth)
        .args(["--speed", "64"])
        .stdin(std::process::Stdio::from(slave.try_clone().unwrap()))
        .stdout(std::process::Stdio::from(slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::null())
        .env("TERM", "xterm")
        .spawn()
        .unwrap();
    drop(slave);
    // The premise: the console is up and has drawn its panes. Then the terminal is closed.
    let flags = nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let nonblocking = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_SETFL(nonblocking)).unwrap();
    let mut parser = vt100::Parser::new(30, 100, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut buf = [0u8; 8192];
    while !parser.screen().contents().contains("Plan") {
        assert!(std::time::Instant::now() < deadline, "the console never drew its panes");
        assert!(child.try_wait().unwrap().is_none(), "the console ended before it drew");
        match nix::unistd::read(&pty.master, &mut buf) {
            Ok(n) if n > 0 => parser.process(&buf[..n]),
            _ => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    drop(pty.master);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the console went on after its terminal hung up");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.code().is_some(), "it ended by itself, not by a signal: {status:?}");
}
