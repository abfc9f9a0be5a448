//! Appended line to delivered line: how long the tailer takes to hand a new event to its sink.
//! Appends 2,000 lines, one every 2 ms (plus bursts of 20), and prints the percentiles.
//! `cargo bench --bench tail_latency`

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use harrow::session::tail::{TailEvent, follow};
use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("events.jsonl");
    let (tx, rx) = mpsc::channel::<(usize, Instant)>();
    let mut seen = 0usize;
    let _tailer = follow(&path, 0, 1, move |ev| {
        if let TailEvent::Lines(lines) = ev {
            let now = Instant::now();
            for _ in lines {
                let _ = tx.send((seen, now));
                seen += 1;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("open");
    let line = format!(
        "{{\"ts\":\"2026-11-22T04:28:43.123Z\",\"seq\":1,\"type\":\"tool_result\",\"payload\":{{\"result_preview\":\"{}\"}}}}\n",
        "x".repeat(700)
    );
    let total = 2_000;
    let mut sent = Vec::with_capacity(total);
    for i in 0..total {
        sent.push(Instant::now());
        file.write_all(line.as_bytes()).expect("append");
        if i % 100 < 80 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let mut latencies: Vec<Duration> = Vec::with_capacity(total);
    while latencies.len() < total {
        let (i, at) = rx.recv_timeout(Duration::from_secs(5)).expect("every line is delivered");
        latencies.push(at.duration_since(sent[i]));
    }
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "tail latency over {total} appended lines: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        latencies[latencies.len() - 1]
    );
}
