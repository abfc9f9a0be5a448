//! Following a growing `events.jsonl`.
//!
//! The tailer watches the session *folder* (so a log that does not exist yet, or is replaced,
//! is still followed), reads whatever was appended since its offset whenever the folder
//! changes, and delivers complete lines; a partial last line waits for its newline. A file that
//! shrank or was replaced is read again from the start, and the sink is told why. When the
//! platform watcher cannot be set up the tailer polls instead, and says so.

use super::scan::{LineAt, LineSplitter};
use super::wake::{self, Wake};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often to look when the watcher works: a safety net for missed notifications only.
const WATCH_SAFETY_POLL: Duration = Duration::from_millis(500);
/// How often to look when there is no watcher.
const FALLBACK_POLL: Duration = Duration::from_millis(25);

/// What the tailer reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailEvent {
    /// Complete lines, in file order, each with where it sits.
    Lines(Vec<(LineAt, Vec<u8>)>),
    /// The file shrank or was replaced; lines restart from the top.
    Restarted { reason: String },
    /// The watcher could not be used; the tailer polls instead.
    Polling { reason: String },
    /// Reading failed; the tailer keeps trying.
    Error(String),
}

/// A running tailer; stops when dropped.
#[derive(Debug)]
pub struct Tailer {
    wake: Sender<Wake>,
    thread: Option<JoinHandle<()>>,
    // Held for its side effect: dropping it stops the notifications.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Tailer {
    /// Looks for new lines now rather than at the next look or notification.
    pub fn look_now(&self) {
        let _ = self.wake.send(Wake::Changed);
    }
}

impl Drop for Tailer {
    fn drop(&mut self) {
        let _ = self.wake.send(Wake::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Follows `path` from byte `offset` (the start of line `next_line`), calling `sink` on a
/// background thread for everything it finds.
pub fn follow<S>(path: &Path, offset: u64, next_line: u64, sink: S) -> Tailer
where
    S: FnMut(TailEvent) + Send + 'static,
{
    let (wake, wakes) = mpsc::channel();
    let look = match watch_folder(path, wake.clone()) {
        Ok(watcher) => Look::Watched(watcher),
        Err(reason) => Look::Fallback(reason),
    };
    start(path, (offset, next_line), look, (wake, wakes), sink)
}

/// [`follow`] without a watcher, looking every `every`: for a reader that may lag by that
/// much, such as a log printed as a run goes. A run appends several lines per model call, and
/// a watcher wakes for each one (and for every other file of the session folder).
pub fn poll<S>(path: &Path, offset: u64, next_line: u64, every: Duration, sink: S) -> Tailer
where
    S: FnMut(TailEvent) + Send + 'static,
{
    start(path, (offset, next_line), Look::Every(every), mpsc::channel(), sink)
}

/// How a tailer learns that the file may have grown.
enum Look {
    Watched(notify::RecommendedWatcher),
    /// The watcher could not be set up (why); polls often instead.
    Fallback(String),
    Every(Duration),
}

fn start<S>(
    path: &Path,
    (offset, next_line): (u64, u64),
    look: Look,
    (wake, wakes): (Sender<Wake>, mpsc::Receiver<Wake>),
    sink: S,
) -> Tailer
where
    S: FnMut(TailEvent) + Send + 'static,
{
    let (watcher, interval, poll_reason) = match look {
        Look::Watched(w) => (Some(w), WATCH_SAFETY_POLL, None),
        Look::Fallback(reason) => (None, FALLBACK_POLL, Some(reason)),
        Look::Every(every) => (None, every, None),
    };
    let state = Follower {
        path: path.to_path_buf(),
        file: None,
        identity: None,
        splitter: LineSplitter::at(offset, next_line),
        start: (offset, next_line),
        sink,
    };
    let thread = std::thread::Builder::new()
        .name("harrow-tail".into())
        .spawn(move || state.run(&wakes, interval, poll_reason))
        .ok();
    Tailer { wake, thread, _watcher: watcher }
}

fn watch_folder(path: &Path, wake: Sender<Wake>) -> Result<notify::RecommendedWatcher, String> {
    use notify::{RecursiveMode, Watcher};
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(std::ffi::OsStr::to_os_string);
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let relevant = match &res {
            Ok(ev) => {
                ev.paths.is_empty() || ev.paths.iter().any(|p| p.file_name() == name.as_deref())
            }
            Err(_) => true,
        };
        if relevant {
            let _ = wake.send(Wake::Changed);
        }
    })
    .map_err(|e| format!("cannot start a file watcher ({e})"))?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(|e| format!("cannot watch {} ({e})", dir.display()))?;
    Ok(watcher)
}

struct Follower<S> {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    splitter: LineSplitter,
    start: (u64, u64),
    sink: S,
}

impl<S: FnMut(TailEvent)> Follower<S> {
    fn run(
        mut self,
        wakes: &mpsc::Receiver<Wake>,
        interval: Duration,
        poll_reason: Option<String>,
    ) {
        if let Some(reason) = poll_reason {
            (self.sink)(TailEvent::Polling { reason });
        }
        loop {
            if let Err(e) = self.catch_up() {
                (self.sink)(TailEvent::Error(format!("{}: {e}", self.path.display())));
            }
            if !wake::wait(wakes, interval) {
                return;
            }
        }
    }

    fn restart(&mut self, reason: String) {
        self.splitter = LineSplitter::at(0, 1);
        self.start = (0, 1);
        (self.sink)(TailEvent::Restarted { reason });
    }

    fn catch_up(&mut self) -> io::Result<()> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if self.file.take().is_some() {
                    self.identity = None;
                    self.restart("the log was removed; waiting for a new one".into());
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let identity = Some(file_identity(&meta));
        if self.file.is_some() && self.identity != identity {
            self.file = None;
            self.restart("the log was replaced; reading it from the start".into());
        }
        if self.file.is_none() {
            self.file = Some(crate::safe_io::open_regular(&self.path)?);
            self.identity = identity;
        }
        let read_from = self.splitter.offset() + self.splitter.pending() as u64;
        if meta.len() < read_from {
            self.restart(format!(
                "the log shrank from {read_from} to {} bytes; reading it from the start",
                meta.len()
            ));
        }
        let read_from = self.splitter.offset() + self.splitter.pending() as u64;
        if meta.len() == read_from {
            return Ok(());
        }
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        file.seek(SeekFrom::Start(read_from))?;
        let mut bytes = Vec::new();
        file.take(meta.len() - read_from).read_to_end(&mut bytes)?;
        let lines = self.splitter.feed(&bytes);
        if !lines.is_empty() {
            (self.sink)(TailEvent::Lines(lines));
        }
        Ok(())
    }
}

/// Device and inode: a different pair at the same path means the file was replaced.
#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Without inodes a replacement is only noticed when the new file is shorter.
#[cfg(not(unix))]
fn file_identity(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::mpsc::Receiver;
    use std::time::Instant;

    fn collect(rx: &Receiver<TailEvent>, want_lines: usize) -> (Vec<String>, Vec<TailEvent>) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut lines, mut other) = (Vec::new(), Vec::new());
        while lines.len() < want_lines && Instant::now() < deadline {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(TailEvent::Lines(ls)) => {
                    lines.extend(ls.into_iter().map(|(_, l)| String::from_utf8(l).unwrap()));
                }
                Ok(ev) => other.push(ev),
                Err(_) => {}
            }
        }
        (lines, other)
    }

    #[test]
    fn polling_follows_a_growing_file_without_saying_it_polls() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.jsonl");
        let (tx, rx) = mpsc::channel();
        let tailer = poll(&path, 0, 1, Duration::from_millis(20), move |ev| {
            let _ = tx.send(ev);
        });
        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        assert_eq!(collect(&rx, 1).0, ["one"]);
        f.write_all(b"o\n").unwrap();
        let (lines, other) = collect(&rx, 1);
        assert_eq!(lines, ["two"]);
        assert!(other.is_empty(), "{other:?}");
        drop(tailer);
        // Between looks an hour apart, a stop still ends the tailer: it does not wait for a look.
        let idle = poll(&path, 0, 1, Duration::from_secs(3600), |_| {});
        let (done, ended) = mpsc::channel();
        std::thread::spawn(move || {
            drop(idle);
            let _ = done.send(());
        });
        assert!(ended.recv_timeout(Duration::from_secs(60)).is_ok(), "a stop waited for a look");
    }

    #[test]
    fn follows_a_file_that_appears_grows_shrinks_and_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.jsonl");
        let (tx, rx) = mpsc::channel();
        let _tailer = follow(&path, 0, 1, move |ev| {
            let _ = tx.send(ev);
        });
        std::thread::sleep(Duration::from_millis(50));

        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        let (lines, _) = collect(&rx, 1);
        assert_eq!(lines, ["one"]);
        f.write_all(b"o\nthree\n").unwrap();
        assert_eq!(collect(&rx, 2).0, ["two", "three"]);

        f.set_len(0).unwrap();
        drop(f);
        std::fs::write(&path, "").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"again\n").unwrap();
        let (lines, other) = collect(&rx, 1);
        assert_eq!(lines, ["again"]);
        assert!(other.iter().any(|e| matches!(e, TailEvent::Restarted { .. })), "{other:?}");

        let tmp_path = tmp.path().join("events.jsonl.new");
        std::fs::write(&tmp_path, "fresh\n").unwrap();
        std::fs::rename(&tmp_path, &path).unwrap();
        let (lines, other) = collect(&rx, 1);
        assert_eq!(lines, ["fresh"]);
        assert!(
            other.iter().any(
                |e| matches!(e, TailEvent::Restarted { reason } if reason.contains("replaced"))
            ),
            "{other:?}"
        );
    }

    #[test]
    fn polls_when_the_folder_cannot_be_watched() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("later").join("events.jsonl");
        let (tx, rx) = mpsc::channel();
        let _tailer = follow(&path, 0, 1, move |ev| {
            let _ = tx.send(ev);
        });
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "hello\n").unwrap();
        let (lines, other) = collect(&rx, 1);
        assert_eq!(lines, ["hello"]);
        assert!(matches!(other.first(), Some(TailEvent::Polling { .. })), "{other:?}");
    }
}
