//! The reply in flight: a small side file (`live.json`) the loop rewrites a few times a second
//! while a model's reply streams in, and removes when the reply is done. The log stays the
//! record of everything finished; this only lets a console — `run`'s or `watch`'s — show the
//! reply arriving. Losing it loses nothing.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often the file is rewritten at most.
pub const EVERY: Duration = Duration::from_millis(250);

/// How much of each text the file keeps: the newest part, which is what the console shows.
const TAIL: usize = 4_000;

/// A reply as far as it has come.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveReply {
    pub role: String,
    pub task: String,
    /// When the request was sent, in milliseconds since the epoch.
    pub started_ms: i64,
    pub chunks: u64,
    /// Characters received so far (text, reasoning and arguments together).
    pub chars: u64,
    pub content: String,
    pub reasoning: String,
    /// Tool calls as they form: name and the newest part of the arguments.
    pub tool_calls: Vec<(String, String)>,
}

/// The newest [`TAIL`] characters of `text`, in time bounded by the tail, not the text: a
/// reply of 16 MB is cut this way several times a second while it streams.
pub fn tail(text: &str) -> String {
    let mut start = text.len().saturating_sub(TAIL * 4);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let window = &text[start..];
    let n = window.chars().count();
    window.chars().skip(n.saturating_sub(TAIL)).collect()
}

/// Writes the reply in flight (keys taken out), replacing the file whole.
pub fn write(dir: &Path, reply: &LiveReply) -> std::io::Result<()> {
    let text = serde_json::to_string(reply).map_err(std::io::Error::from)?;
    let text = crate::keys::scrub(&text);
    let path = super::dir::SessionDir::new(dir).live();
    crate::safe_io::replace_volatile(&path, text.as_bytes())
}

/// The most `live.json` is read to: the reply's tail is a few kilobytes.
const LIVE_LIMIT: u64 = 1 << 20;

/// The reply in flight, if one is.
pub fn read(dir: &Path) -> Option<LiveReply> {
    let text =
        crate::safe_io::read_capped(&super::dir::SessionDir::new(dir).live(), LIVE_LIMIT).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The reply is done: nothing is in flight.
pub fn clear(dir: &Path) {
    let _ = std::fs::remove_file(super::dir::SessionDir::new(dir).live());
}

/// Rewrites the file at most every [`EVERY`], the first time [`EVERY`] after the request: a
/// reply that is done sooner is never written, so a quick reply costs no file made and removed
/// (on some filesystems the costliest part of a model call), and the log shows it a moment
/// later anyway.
#[derive(Debug)]
pub struct Throttle {
    last: Instant,
    wrote: bool,
}

impl Throttle {
    pub fn new() -> Throttle {
        Throttle { last: Instant::now(), wrote: false }
    }

    /// Whether it is time to write again; if so, the clock starts over.
    pub fn due(&mut self) -> bool {
        let due = self.last.elapsed() >= EVERY;
        if due {
            self.last = Instant::now();
            self.wrote = true;
        }
        due
    }

    /// Whether the file was written for this reply (and so must be removed when it is done).
    pub fn wrote(&self) -> bool {
        self.wrote
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_done_sooner_than_the_first_write_is_never_written() {
        let mut quick = Throttle::new();
        assert!(!quick.due(), "not at the first chunk");
        assert!(!quick.wrote());
        let mut slow = Throttle::new();
        std::thread::sleep(EVERY + Duration::from_millis(10));
        assert!(slow.due(), "a reply still arriving after a while is written");
        assert!(!slow.due(), "and then not again at once");
        assert!(slow.wrote());
    }
}
