//! The cursor over a session's log: its index, each event's replay time, the fold with its
//! snapshots, and the clock. Replay and live watching both move it; nothing here knows about
//! panes, keys or the terminal.

use super::view::{Clock, Snapshots, View};
use crate::session::event::{Event, EventKind, Payload};
use crate::session::index::{EventIndex, FetchError};
use crate::session::scan::LineAt;
use std::io;
use std::path::{Path, PathBuf};

/// Idle gaps in a replay are shortened to this.
const MAX_GAP_MS: i64 = 2_000;

/// How much of the log is read before the first frame. The rest is read a piece at a time
/// between frames ([`Player::read_more`]), so a log of any size shows its beginning at once
/// and keys are answered while it is read.
const FIRST_READ: u64 = 24 << 20;

/// How much is read between two frames: a few milliseconds' work.
const READ_PIECE: u64 = 2 << 20;

/// How far ahead of the pieces the kernel is asked to bring the log into its cache, so a piece
/// read on the UI thread does not wait on the disk.
const READ_AHEAD: u64 = 8 * READ_PIECE;

/// A session's log, read once and followed: where the replay stands in it.
#[derive(Debug)]
pub struct Player {
    index: EventIndex,
    /// Replay time of each event, in milliseconds from the first.
    times: Vec<i64>,
    pub view: View,
    snapshots: Snapshots,
    pub clock: Clock,
    /// Whether the session is one Tilth wrote (it recorded less than harrow does).
    pub tilth: bool,
    /// The log's size when it was opened, while not all of it has been read.
    reading: Option<u64>,
    /// Whether events are applied as they are read (watching: the cursor stays at the newest).
    applying: bool,
    /// The time of the latest event read, for the next one's replay time.
    last_ms: i64,
    harrow_format: bool,
}

impl Player {
    /// Why the log no longer holds what was indexed, if it does not (see
    /// [`EventIndex::shrank`]).
    pub fn log_shrank(&self) -> Option<String> {
        self.index.shrank()
    }

    /// Opens the log: reads its beginning — the index, the replay times, where each event
    /// belongs (stream, trails, timeline markers), and the fold with its snapshots — and
    /// leaves the rest to [`Player::read_more`]. With `at_end` the cursor stays at the newest
    /// event read, else it goes back to the start and plays at `speed`.
    pub fn open(events: &Path, id: &str, speed: f64, at_end: bool) -> io::Result<Player> {
        let size = std::fs::metadata(events).map_or(0, |m| m.len());
        let mut player = Player {
            index: EventIndex::build_within(events, 0, |_, _| {})?,
            times: Vec::new(),
            view: View::new(id),
            snapshots: Snapshots::default(),
            clock: Clock::new(speed),
            tilth: true,
            reading: (size > 0).then_some(size),
            applying: true,
            last_ms: 0,
            harrow_format: false,
        };
        player.read_piece(FIRST_READ)?;
        if at_end {
            player.clock.playing = false;
            player.clock.now_ms = player.times.last().map_or(0.0, |t| *t as f64);
        } else {
            player.applying = false;
            player.snapshots.restore(&mut player.view, 0);
            player.advance_to_clock()?;
        }
        Ok(player)
    }

    /// How much of the log has been read, in whole percent, while it is still being read.
    pub fn reading_percent(&self) -> Option<u64> {
        let size = self.reading?;
        let read = self.index.report().end_offset;
        Some((read.saturating_mul(100) / size.max(1)).min(99))
    }

    /// Reads the next piece of a log not yet read whole. Returns whether anything was read.
    pub fn read_more(&mut self) -> io::Result<bool> {
        if self.reading.is_none() {
            return Ok(false);
        }
        let before = self.total();
        self.read_piece(READ_PIECE)?;
        if self.applying {
            self.clock.now_ms = self.times.last().map_or(0.0, |t| *t as f64);
        }
        Ok(self.total() > before || self.reading.is_none())
    }

    fn read_piece(&mut self, piece: u64) -> io::Result<()> {
        let Some(size) = self.reading else { return Ok(()) };
        let r = self.index.report();
        // Past a line longer than a piece, however long it is.
        let until = r.end_offset.saturating_add(r.pending_bytes).saturating_add(piece).min(size);
        let Player { index, view, snapshots, times, last_ms, harrow_format, applying, .. } = self;
        index.read_more(until, |pos, f| {
            let ms =
                f.ts.get()
                    .and_then(crate::session::timestamp::parse)
                    .map_or(*last_ms, jiff::Timestamp::as_millisecond);
            let t = times.last().map_or(0, |t| t + (ms - *last_ms).clamp(0, MAX_GAP_MS));
            *last_ms = ms;
            times.push(t);
            *harrow_format |= f.seq.value.is_some();
            view.note(pos, f);
            if *applying {
                view.apply(pos, f);
                snapshots.offer(view);
            }
        })?;
        self.tilth = !self.harrow_format;
        if until >= size {
            self.reading = None;
        } else {
            self.index.read_ahead(READ_AHEAD);
        }
        Ok(())
    }

    /// What was skipped reading the log, said once when it opens.
    pub fn unreadable_notice(&self) -> Option<String> {
        self.index
            .report()
            .unreadable_sentence()
            .map(|u| format!("events.jsonl: {u} skipped; the rest is shown"))
    }

    /// Where a tailer should start so it delivers exactly the lines not yet indexed.
    pub fn tail_start(&self) -> (u64, u64) {
        let r = self.index.report();
        (r.end_offset, r.lines + 1)
    }

    /// Takes lines the tailer delivered. While the cursor is at the newest event it follows;
    /// after a step back or a jump it stays put. Returns whether the log grew.
    pub fn take_lines(&mut self, lines: Vec<(LineAt, Vec<u8>)>) -> io::Result<bool> {
        let following = self.at_end();
        let mut changed = false;
        let Player { index, view, times, .. } = self;
        for (at, line) in lines {
            changed |= index.push_line(at, &line, |pos, fact| {
                view.note(pos, fact);
                times.push(times.last().copied().unwrap_or(0));
            });
        }
        if following {
            self.apply_until(self.total())?;
        }
        Ok(changed)
    }

    pub fn total(&self) -> usize {
        self.index.len()
    }

    pub fn at_end(&self) -> bool {
        self.view.applied() >= self.total()
    }

    /// The cursor and the log's length, for the status line.
    pub fn position(&self) -> (usize, usize) {
        (self.view.applied(), self.total())
    }

    /// Applies events until `target` have been applied, reading the log in large pieces.
    pub fn apply_until(&mut self, target: usize) -> io::Result<()> {
        let Player { index, view, snapshots, .. } = self;
        let start = view.applied();
        index.for_each_in(start..target, |pos, fact| {
            match fact {
                Some(fact) => view.apply(pos, fact),
                None => view.skip(pos),
            }
            snapshots.offer(view);
        })
    }

    /// Applies every event whose replay time has come. Returns whether anything changed.
    fn advance_to_clock(&mut self) -> io::Result<bool> {
        let before = self.view.applied();
        let now = self.clock.now_ms;
        let due = self.times.partition_point(|t| *t as f64 <= now).min(self.total());
        if due > before {
            self.apply_until(due)?;
        }
        if self.at_end() {
            self.clock.playing = false;
        }
        Ok(self.view.applied() != before)
    }

    /// Moves replay time on by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) -> io::Result<bool> {
        self.clock.tick(real_ms);
        self.advance_to_clock()
    }

    /// Folds again up to `target` events from the nearest snapshot before it: how a replay
    /// goes back.
    pub fn seek(&mut self, target: usize) -> io::Result<()> {
        self.snapshots.restore(&mut self.view, target);
        self.apply_until(target.min(self.total()))?;
        self.clock.now_ms =
            target.checked_sub(1).and_then(|i| self.times.get(i)).map_or(0.0, |t| *t as f64);
        Ok(())
    }

    /// Moves the cursor so the event at `pos` is the last applied, and pauses there.
    pub fn goto(&mut self, pos: usize) -> io::Result<()> {
        let target = (pos + 1).min(self.total());
        let applied = self.view.applied();
        if target >= applied && self.snapshots.nearest(target) <= applied {
            self.apply_until(target)?;
        } else {
            self.seek(target)?;
        }
        self.clock.playing = false;
        self.clock.now_ms = self.times.get(pos).map_or(self.clock.now_ms, |t| *t as f64);
        Ok(())
    }

    /// Moves the cursor so `tenths`×10 % of the log is replayed.
    pub fn seek_percent(&mut self, tenths: u8) -> io::Result<()> {
        let total = self.total();
        if total > 0 {
            self.goto((total * usize::from(tenths) / 10).min(total - 1))?;
        }
        Ok(())
    }

    /// One event forward, paused.
    pub fn step_forward(&mut self) -> io::Result<()> {
        self.clock.playing = false;
        self.apply_until(self.view.applied() + 1)?;
        if let Some(t) = self.view.applied().checked_sub(1).and_then(|i| self.times.get(i)) {
            self.clock.now_ms = *t as f64;
        }
        Ok(())
    }

    /// One event back, paused.
    pub fn step_back(&mut self) -> io::Result<()> {
        self.clock.playing = false;
        self.seek(self.view.applied().saturating_sub(1))
    }

    /// Plays from the start when at the end, else toggles playing.
    pub fn play_pause(&mut self) -> io::Result<()> {
        if self.at_end() {
            self.seek(0)?;
        }
        self.clock.playing = !self.clock.playing;
        Ok(())
    }

    /// The first event of `kind` from `start` on (forward) or at or before it (backward),
    /// from the index alone.
    pub fn find_kind(&self, start: usize, forward: bool, kind: EventKind) -> Option<usize> {
        let is = |p: &usize| self.index.kind_at(*p) == Some(kind);
        if forward {
            (start..self.total()).find(is)
        } else {
            (0..=start.min(self.total().checked_sub(1)?)).rev().find(is)
        }
    }

    /// The kind of the event at `pos`, from the index alone.
    pub fn kind_at(&self, pos: usize) -> Option<EventKind> {
        self.index.kind_at(pos)
    }

    /// The whole stream as `filter` keeps it, beside the index to read its events from: a
    /// search walks the one while fetching from the other, with no copy of the stream.
    pub fn stream_and_index(&mut self, filter: super::view::Filter) -> (&[usize], &mut EventIndex) {
        let Player { view, index, .. } = self;
        (view.whole_stream(filter), index)
    }

    /// Reads and decodes the event at `pos`.
    pub fn fetch(&mut self, pos: usize) -> Result<Event, FetchError> {
        self.index.fetch(pos)
    }

    /// The task the event at `pos` belongs to, as the index interned it.
    pub fn task_of(&self, pos: usize) -> Option<&str> {
        let entry = self.index.entries().get(pos)?;
        Some(self.index.task_name(entry.task)).filter(|t| !t.is_empty())
    }

    /// The timeline strip's cells at `width`, banded by task.
    pub fn timeline_cells(
        &mut self,
        width: usize,
        lane: Option<u64>,
    ) -> Vec<super::timeline::Cell> {
        let entries = self.index.entries();
        let applied = self.view.applied();
        self.view.timeline_mut().cells(entries.len(), applied, width, lane, |p| entries[p].task)
    }

    /// The session's first `session_start`: where it ran, on what.
    pub fn session_start(&mut self) -> Option<crate::session::event::SessionStart> {
        let first = (0..self.total().min(64))
            .find(|p| self.index.kind_at(*p) == Some(EventKind::SessionStart))?;
        match self.index.fetch(first).ok()?.payload {
            Payload::SessionStart(s) => Some(s),
            _ => None,
        }
    }

    /// The worktree the session's first `session_start` names.
    pub fn worktree(&mut self) -> Option<PathBuf> {
        self.session_start()?.worktree.map(PathBuf::from)
    }

    /// The sha of the commit that followed the verdict at `pos`, if the next thing that
    /// happened to its task was a commit.
    pub fn commit_after(&mut self, pos: usize) -> Option<String> {
        let task = self.index.entries().get(pos)?.task;
        for p in pos + 1..self.total() {
            if self.index.entries()[p].task != task {
                continue;
            }
            match self.index.kind_at(p) {
                Some(EventKind::Commit) => {
                    return match self.index.fetch(p).ok()?.payload {
                        Payload::Commit(c) => c.sha,
                        _ => None,
                    };
                }
                Some(EventKind::Verdict | EventKind::JudgeVerdict | EventKind::TaskState) => {
                    return None;
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ms: i64, n: u64) -> String {
        let ts = jiff::Timestamp::from_millisecond(ms).unwrap_or_else(|e| panic!("{e}"));
        format!(
            r#"{{"ts":"{ts}","seq":{n},"type":"tool_call","payload":{{"task_id":"T-1","tool":"read_file"}}}}"#
        )
    }

    #[test]
    fn idle_gaps_are_compressed() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = tmp.path().join("events.jsonl");
        let text: Vec<String> =
            [1000, 1000, 3000, 3_600_000].iter().zip(1..).map(|(ms, n)| line(*ms, n)).collect();
        std::fs::write(&log, text.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
        let p = Player::open(&log, "s", 1.0, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.times, [0, 0, 2000, 4000]);
    }

    #[test]
    fn a_log_larger_than_the_first_read_is_shown_at_once_and_read_whole_between_frames() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = tmp.path().join("events.jsonl");
        let mut bytes = Vec::new();
        crate::session::synth::generate(
            &mut bytes,
            40_000,
            crate::session::synth::Dialect::Harrow,
            9,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes.len() as u64 > FIRST_READ + 4 * READ_PIECE, "{} bytes", bytes.len());
        std::fs::write(&log, &bytes).unwrap_or_else(|e| panic!("{e}"));
        let whole = EventIndex::build(&log).unwrap_or_else(|e| panic!("{e}"));
        for at_end in [true, false] {
            let mut p = Player::open(&log, "s", 1.0, at_end).unwrap_or_else(|e| panic!("{e}"));
            let first = p.total();
            assert!(p.reading_percent().is_some_and(|r| r < 100), "still reading");
            assert!(first > 0 && first < whole.len(), "the beginning is there: {first}");
            let mut pieces = 0;
            while p.reading_percent().is_some() {
                p.read_more().unwrap_or_else(|e| panic!("{e}"));
                pieces += 1;
            }
            assert!(pieces > 4, "read a piece at a time ({pieces} pieces)");
            assert_eq!(p.total(), whole.len(), "every event, once");
            assert_eq!(p.tail_start(), (whole.report().end_offset, whole.report().lines + 1));
            assert!(p.times.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(p.times.len(), p.total());
            if at_end {
                assert!(p.at_end(), "watching, the cursor stays at the newest event");
            } else {
                assert!(p.view.applied() <= 1, "a replay still stands at its start");
            }
            let mut once = Player::open(&log, "s", 1.0, true).unwrap_or_else(|e| panic!("{e}"));
            while once.read_more().unwrap_or_else(|e| panic!("{e}")) {}
            p.seek(p.total()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.view.fold().tasks_done(), once.view.fold().tasks_done());
            assert_eq!(p.view.fold().task_count(), once.view.fold().task_count());
        }
    }
}
