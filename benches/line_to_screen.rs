//! Appended line to drawn frame: a line written to a watched session's log, through the
//! tailer, the fold and a full 200×60 frame. Appends 1,000 lines to a 100k-event session, one
//! every 5 ms with bursts, and prints the percentiles. `cargo bench --bench line_to_screen`

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use harrow::console::app::App;
use harrow::console::theme::Look;
use harrow::console::ui::draw;
use harrow::session::synth::{Dialect, write_session};
use harrow::session::tail::{TailEvent, follow};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_session(dir.path(), 100_000, Dialect::Harrow, 5).expect("generate");
    let mut app = App::open_live(dir.path(), "bench", Look::built_in(true)).expect("open");
    // The console reads a large log a piece at a time between frames; the bench reads it whole.
    while app.player.reading_percent().is_some() {
        app.read_more().expect("read");
    }
    let (tx, rx) = mpsc::channel();
    let (offset, line) = app.tail_start();
    let _tailer = follow(&path, offset, line, move |ev| {
        let _ = tx.send(ev);
    });
    let total = 1_000;
    let (sent_tx, sent_rx) = mpsc::channel::<Instant>();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
        for i in 0..total {
            let line = format!(
                "{{\"ts\":\"2026-11-22T09:00:00.000Z\",\"seq\":{},\"type\":\"tool_call\",\"payload\":{{\"task_id\":\"T-999\",\"iter\":1,\"tool\":\"bash\",\"args\":{{\"command\":\"echo {i}\"}}}}}}\n",
                200_000 + i
            );
            sent_tx.send(Instant::now()).unwrap();
            file.write_all(line.as_bytes()).expect("append");
            if i % 100 < 80 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut sent = Vec::with_capacity(total);
    let mut latencies = Vec::with_capacity(total);
    while latencies.len() < total {
        let ev = rx.recv_timeout(Duration::from_secs(5)).expect("the tailer delivers");
        let TailEvent::Lines(lines) = ev else { continue };
        let n = lines.len();
        app.take_lines(lines).unwrap();
        app.prepare(Rect::new(0, 0, 200, 60));
        terminal.draw(|f| draw(f, &app)).unwrap();
        let drawn = Instant::now();
        sent.extend(sent_rx.try_iter());
        for _ in 0..n {
            let at = sent[latencies.len()];
            latencies.push(drawn.duration_since(at));
        }
    }
    writer.join().unwrap();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "appended line to drawn 200×60 frame over {total} lines on a 100k-event session: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        latencies[latencies.len() - 1]
    );
}
