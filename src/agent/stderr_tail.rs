//! The last lines of a child's standard error — an ACP agent's, the `ssh` of a push — kept for
//! a failure's message: each made printable and cut short, by a thread that reads the stream to
//! its end whatever the child writes, so a child that floods its stderr is never left blocked
//! on a full pipe and a line longer than [`super::wire::MAX_LINE`] is never held whole.

use super::wire::{self, WireError};
use std::collections::VecDeque;
use std::io::BufReader;
use std::process::ChildStderr;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Lines kept (the last ones).
const LINES: usize = 12;
/// Characters of one line kept.
const LINE_CHARS: usize = 300;

/// A child's stderr, being read.
#[derive(Debug)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl StderrTail {
    /// Starts reading `stderr` on a thread of its own.
    pub fn keep(stderr: ChildStderr) -> StderrTail {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let kept = Arc::clone(&lines);
        let reader = std::thread::Builder::new()
            .name("harrow-child-err".into())
            .spawn(move || read_to_end(stderr, &kept))
            .ok();
        StderrTail { lines, reader }
    }

    /// The last lines read so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    /// The last lines once the stream has ended (the child, and anything it left holding its
    /// stderr, closed it), waiting at most `wait` for that.
    pub fn lines_at_end(&mut self, wait: Duration) -> Vec<String> {
        let until = Instant::now() + wait;
        while self.reader.as_ref().is_some_and(|r| !r.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.reader.as_ref().is_some_and(JoinHandle::is_finished) {
            let _ = self.reader.take().map(JoinHandle::join);
        }
        self.lines()
    }
}

fn read_to_end(stderr: ChildStderr, kept: &Mutex<VecDeque<String>>) {
    let mut input = BufReader::new(stderr);
    loop {
        match wire::read_line(&mut input) {
            Ok(Some(line)) => {
                let text = String::from_utf8_lossy(&line);
                let text: String = text.chars().take(LINE_CHARS).collect();
                let text = crate::printable::line(text.trim());
                if text.is_empty() {
                    continue;
                }
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == LINES {
                    kept.pop_front();
                }
                kept.push_back(text);
            }
            Err(WireError::LineTooLong) => {}
            Ok(None) | Err(_) => return,
        }
    }
}
