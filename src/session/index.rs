//! A byte-offset index over `events.jsonl`: the console keeps 16 bytes per event in memory
//! and fetches an event's full text from disk only when it is shown.

use super::event::{DecodeError, Event};
use super::fact::{Fact, KeptValues};
use super::scan::{LineAt, ScanReport, scan_lines_within};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Where one event sits, and what it is, without its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub offset: u64,
    pub len: u32,
    /// Interned event name; see [`EventIndex::kind_name`].
    pub kind: u16,
    /// Interned task id, 0 for none; see [`EventIndex::task_name`].
    pub task: u16,
}

/// Interns short strings into small ids so index entries stay fixed-size.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<String, u16>,
    names: Vec<String>,
}

impl Interner {
    fn with_empty() -> Interner {
        let mut i = Interner::default();
        i.id("");
        i
    }

    fn id(&mut self, name: &str) -> u16 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        // Past 65 535 distinct names (only a hostile log has that many) new names share the
        // last id rather than growing the entry.
        let id = u16::try_from(self.names.len()).unwrap_or(u16::MAX);
        if id < u16::MAX {
            self.ids.insert(name.to_owned(), id);
            self.names.push(name.to_owned());
        }
        id
    }

    fn name(&self, id: u16) -> &str {
        self.names.get(usize::from(id)).map_or("?", String::as_str)
    }
}

/// The index of one log file.
#[derive(Debug)]
pub struct EventIndex {
    path: PathBuf,
    /// Held open so fetching an event is one positioned read.
    file: Option<File>,
    entries: Vec<IndexEntry>,
    kinds: Interner,
    tasks: Interner,
    report: ScanReport,
}

impl EventIndex {
    /// Indexes the whole file as it is now.
    pub fn build(path: &Path) -> io::Result<EventIndex> {
        EventIndex::build_with(path, |_, _| {})
    }

    /// Indexes the whole file, handing each indexed event to `f` with its position on the way,
    /// so a reader that also needs every event reads the file once.
    pub fn build_with(path: &Path, f: impl FnMut(usize, &Fact<'_>)) -> io::Result<EventIndex> {
        EventIndex::build_within(path, u64::MAX, f)
    }

    /// [`EventIndex::build_with`] over the lines that end before byte `until`; the rest is
    /// read later with [`EventIndex::read_more`].
    pub fn build_within(
        path: &Path,
        until: u64,
        f: impl FnMut(usize, &Fact<'_>),
    ) -> io::Result<EventIndex> {
        let mut index = EventIndex {
            path: path.to_path_buf(),
            file: crate::safe_io::open_regular(path).ok(),
            entries: Vec::new(),
            kinds: Interner::default(),
            tasks: Interner::with_empty(),
            report: ScanReport::default(),
        };
        index.read_more(until, f)?;
        Ok(index)
    }

    /// Asks the kernel to start reading the next `len` bytes after those indexed into its
    /// cache now, so the next [`EventIndex::read_more`] — done between a console's frames —
    /// finds them there instead of waiting on the disk. Only a hint: nothing fails without it.
    pub fn read_ahead(&self, len: u64) {
        use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
        let (Some(file), Ok(from), Ok(len)) =
            (self.file.as_ref(), i64::try_from(self.report.end_offset), i64::try_from(len))
        else {
            return;
        };
        let _ = posix_fadvise(file, from, len, PosixFadviseAdvice::POSIX_FADV_WILLNEED);
    }

    /// Indexes the lines after those indexed so far that end before byte `until`, handing each
    /// event to `f` with its position.
    pub fn read_more(&mut self, until: u64, mut f: impl FnMut(usize, &Fact<'_>)) -> io::Result<()> {
        let (from, line) = (self.report.end_offset, self.report.lines + 1);
        let mut entries = std::mem::take(&mut self.entries);
        let path = self.path.clone();
        let scanned = scan_lines_within(&path, from, line, until, |at, _, fact| {
            f(entries.len(), fact);
            entries.push(self.entry(at, fact));
        });
        self.entries = entries;
        let more = match scanned {
            Err(e) if e.kind() == io::ErrorKind::NotFound => ScanReport::default(),
            other => other?,
        };
        self.report.extend(more);
        Ok(())
    }

    fn entry(&mut self, at: LineAt, fact: &Fact<'_>) -> IndexEntry {
        IndexEntry {
            offset: at.offset,
            len: at.len,
            kind: self.kinds.id(fact.kind()),
            task: self.tasks.id(fact.payload.task_id.get().unwrap_or("")),
        }
    }

    /// Adds a line the tailer delivered, handing the event to `f` with its position (as
    /// [`EventIndex::build_with`] does). Returns false for blank or unreadable lines, which are
    /// counted in the report instead.
    pub fn push_line(&mut self, at: LineAt, line: &[u8], f: impl FnOnce(usize, &Fact<'_>)) -> bool {
        self.report.lines += 1;
        self.report.end_offset = at.offset + u64::from(at.len) + 1;
        if super::scan::LineSplitter::is_blank(line) {
            self.report.blank += 1;
            return false;
        }
        if let Ok(fact) = Fact::decode(line, &mut KeptValues::default()) {
            f(self.entries.len(), &fact);
            let entry = self.entry(at, &fact);
            self.entries.push(entry);
            self.report.events += 1;
            true
        } else {
            self.report.note_unreadable(at.number);
            false
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    pub fn report(&self) -> &ScanReport {
        &self.report
    }

    /// The kind of the entry at `i`, when this build knows its name.
    pub fn kind_at(&self, i: usize) -> Option<crate::session::event::EventKind> {
        let id = self.entries.get(i)?.kind;
        crate::session::event::EventKind::from_name(self.kind_name(id))
    }

    pub fn kind_name(&self, id: u16) -> &str {
        self.kinds.name(id)
    }

    pub fn task_name(&self, id: u16) -> &str {
        self.tasks.name(id)
    }

    /// Whether the file is shorter than what was indexed (truncated or replaced under us), or
    /// gone: the reason, in words.
    pub fn shrank(&self) -> Option<String> {
        let indexed = self.entries.last().map_or(0, |e| e.offset + u64::from(e.len));
        match std::fs::metadata(&self.path) {
            Err(e) => Some(format!("the session's log cannot be read ({e})")),
            Ok(m) if m.len() < indexed => Some(format!(
                "the session's log shrank from {indexed} to {} bytes under the console",
                m.len()
            )),
            Ok(_) => None,
        }
    }

    /// Reads and decodes event `i` from disk.
    pub fn fetch(&mut self, i: usize) -> Result<Event, FetchError> {
        let entry = *self.entries.get(i).ok_or(FetchError::OutOfRange(i))?;
        let bytes = self.read_raw(&entry)?;
        Ok(Event::decode(&bytes)?)
    }

    /// Hands the events at positions `range` to `f`, reading the file in large contiguous
    /// pieces rather than one read per event: how a replay re-folds after a seek.
    pub fn for_each_in(
        &mut self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(usize, Option<&Fact<'_>>),
    ) -> io::Result<()> {
        const PIECE: u64 = 8 << 20;
        let end = range.end.min(self.entries.len());
        let mut pos = range.start;
        let mut buf = Vec::new();
        let mut kept = KeptValues::default();
        while pos < end {
            let first = self.entries[pos];
            let mut last = pos;
            while last + 1 < end
                && self.entries[last + 1].offset + u64::from(self.entries[last + 1].len)
                    - first.offset
                    <= PIECE
            {
                last += 1;
            }
            let stop = self.entries[last].offset + u64::from(self.entries[last].len);
            buf.resize((stop - first.offset) as usize, 0);
            if self.file.is_none() {
                self.file = Some(crate::safe_io::open_regular(&self.path)?);
            }
            let Some(file) = self.file.as_ref() else { return Err(io::ErrorKind::NotFound.into()) };
            read_exact_at(file, &mut buf, first.offset)?;
            for p in pos..=last {
                let e = self.entries[p];
                let at = (e.offset - first.offset) as usize;
                f(p, Fact::decode(&buf[at..at + e.len as usize], &mut kept).ok().as_ref());
            }
            pos = last + 1;
        }
        Ok(())
    }

    /// The raw line of an entry, for showing an event exactly as written.
    pub fn read_raw(&mut self, entry: &IndexEntry) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; entry.len as usize];
        if self.file.is_none() {
            self.file = Some(crate::safe_io::open_regular(&self.path)?);
        }
        let Some(file) = self.file.as_ref() else { return Err(io::ErrorKind::NotFound.into()) };
        read_exact_at(file, &mut buf, entry.offset)?;
        Ok(buf)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// Why an indexed event could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("no event {0} in the index")]
    OutOfRange(usize),
    #[error("cannot read the log: {0} (was the session folder removed or rewritten?)")]
    Io(#[from] io::Error),
    #[error("the log changed under the index: {0}")]
    Decode(#[from] DecodeError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::Payload;

    #[test]
    fn fetches_lazily_and_grows_from_tailed_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"context_reset\",\"payload\":{\"task_id\":\"T-001\"}}\nnot json\n{\"type\":\"stop\",\"payload\":{\"reason\":\"all_done\"}}\n",
        )
        .unwrap();
        let mut index = EventIndex::build(&path).unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(index.report().unreadable, vec![2]);
        let e = index.entries()[0];
        assert_eq!((index.kind_name(e.kind), index.task_name(e.task)), ("context_reset", "T-001"));
        assert_eq!(index.task_name(index.entries()[1].task), "");
        assert!(matches!(index.fetch(1).unwrap().payload, Payload::Stop(_)));
        assert!(matches!(index.fetch(2), Err(FetchError::OutOfRange(2))));

        let line = b"{\"type\":\"commit\",\"payload\":{\"task_id\":\"T-001\",\"sha\":\"abc\"}}";
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut f, &[&line[..], b"\n"].concat()).unwrap();
        let offset = index.report().end_offset;
        assert!(index.push_line(
            LineAt { number: 4, offset, len: line.len() as u32 },
            line,
            |pos, fact| {
                assert_eq!((pos, fact.kind()), (2, "commit"));
            }
        ));
        assert!(matches!(index.fetch(2).unwrap().payload, Payload::Commit(_)));
    }
}
